// RUN: spmd-opt %s --spmd-propagate | FileCheck %s --check-prefix=PROP
// RUN: spmd-opt %s --spmd-distribute | FileCheck %s
// RUN: spmd-opt %s --spmd-distribute --spmd-lower-to-cpu | FileCheck %s --check-prefix=LLVM

// The README's worked example, kept true.
// PROP: linalg.matmul {{.*}}spmd.result_specs = [#spmd.spec<@dp, [partial<sum>]>]
// CHECK: func.func @step(%arg0: tensor<8x8xf32> {spmd.spec = #spmd.spec<@dp, [shard<0>]>}, %arg1: tensor<8x4xf32>
// CHECK: %[[R:.*]] = spmd.all_reduce %{{.*}} on @dp axes = [0] sum : tensor<4x8xf32> -> tensor<4x8xf32>
// CHECK-NEXT: spmd.sgd params [%{{.*}}] grads [%[[R]]] {lr = 1.000000e-01 : f64} : tensor<4x8xf32>
// CHECK-NOT: spmd.all_
// LLVM: llvm.call @spmdAllReduce

spmd.mesh @dp(shape = 2)
spmd.state @w : tensor<4x8xf32> role = param
func.func @step(%x: tensor<16x8xf32> {spmd.spec = #spmd.spec<@dp, [shard<0>]>},
                %dy: tensor<16x4xf32> {spmd.spec = #spmd.spec<@dp, [shard<0>]>}) {
  %w = spmd.load @w : tensor<4x8xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  // dw = dy^T @ x: a contraction over the sharded batch
  %dw = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (k, m)>,
                                       affine_map<(m, n, k) -> (k, n)>,
                                       affine_map<(m, n, k) -> (m, n)>]
      ins(%dy, %x : tensor<16x4xf32>, tensor<16x8xf32>)
      outs(%acc : tensor<4x8xf32>) -> tensor<4x8xf32>
  %w1 = spmd.sgd params [%w] grads [%dw] {lr = 0.1 : f64} : tensor<4x8xf32>
  spmd.store %w1 to @w : tensor<4x8xf32>
  return
}
