// RUN: spmd-opt %s --spmd-distribute --split-input-file | FileCheck %s

// spmd.optimization_barrier has its input's placement: a batch-sharded
// activation recomputed through a barrier stays sharded, with no
// collective, and the barrier gets the local type.
// CHECK-LABEL: func.func @sharded
// CHECK-SAME: (%[[X:.*]]: tensor<2x8xf32> {spmd.spec = #spmd.spec<@dp, [shard<0>]>})
// CHECK-NOT: spmd.all_
// CHECK: %[[B:.*]] = spmd.optimization_barrier %[[X]] : tensor<2x8xf32>
// CHECK: math.exp %[[B]] : tensor<2x8xf32>
// CHECK-NOT: spmd.all_
// CHECK: return
spmd.mesh @dp(shape = 4)
func.func @sharded(%x: tensor<8x8xf32> {spmd.spec = #spmd.spec<@dp, [shard<0>]>}) -> tensor<8x8xf32> {
  %b = spmd.optimization_barrier %x : tensor<8x8xf32>
  %e = math.exp %b : tensor<8x8xf32>
  return %e : tensor<8x8xf32>
}

// -----

// A partial sum passes through (the identity is linear): the reduction
// happens once, after it, as the reduce-scatter the result needs.
// CHECK-LABEL: func.func @partial
// CHECK: linalg.matmul
// CHECK-NOT: spmd.all_reduce
// CHECK: spmd.optimization_barrier %{{.*}} : tensor<8x8xf32>
// CHECK: spmd.reduce_scatter %{{.*}} sum scatter_dim = 0 : tensor<8x8xf32> -> tensor<2x8xf32>
// CHECK: math.exp
spmd.mesh @dp(shape = 4)
func.func @partial(%a: tensor<8x16xf32> {spmd.spec = #spmd.spec<@dp, [shard<1>]>}, %w: tensor<16x8xf32> {spmd.spec = #spmd.spec<@dp, [shard<0>]>}) -> tensor<8x8xf32> {
  %z = tensor.empty() : tensor<8x8xf32>
  %c = arith.constant 0.0 : f32
  %f = linalg.fill ins(%c : f32) outs(%z : tensor<8x8xf32>) -> tensor<8x8xf32>
  %m = linalg.matmul ins(%a, %w : tensor<8x16xf32>, tensor<16x8xf32>) outs(%f : tensor<8x8xf32>) -> tensor<8x8xf32>
  %b = spmd.optimization_barrier %m : tensor<8x8xf32>
  %e = math.exp %b : tensor<8x8xf32>
  return %e : tensor<8x8xf32>
}
