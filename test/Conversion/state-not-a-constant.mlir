// RUN: spmd-opt %s --spmd-lower-to-cpu | FileCheck %s
// Regression: one-shot bufferization reuses any global with the same initial
// value and alignment for a tensor constant, constant or not. A zero-valued
// state must never stand in for the zero constant below (it did: the step
// counter was read as `0.0`, and every step's ReLU backward changed with it).
// The zero is also returned, so that it stays a constant tensor after
// spmd-fuse-elementwise folds it into the select's body.
spmd.mesh @m(shape = 1)
spmd.state @"step" : tensor<f32> role = optimizer_state

// The state itself is the runtime's buffer (spmd-state-in-runtime-memory).
// CHECK-NOT: llvm.mlir.global {{.*}}@step(
// CHECK: llvm.mlir.global private constant @[[ZERO:[_a-z0-9]+]](0.000000e+00 : f32)
// CHECK-NOT: llvm.mlir.global {{.*}}@step(
// CHECK-LABEL: llvm.func @select_zero
// CHECK-DAG: llvm.call @spmdStateAddress
// CHECK-DAG: llvm.mlir.addressof @[[ZERO]] : !llvm.ptr
func.func @select_zero(%mask: tensor<4xi1>, %x: tensor<4xf32>) -> (tensor<4xf32>, tensor<f32>) {
  %s = spmd.load @"step" : tensor<f32>
  %one = arith.constant dense<1.0> : tensor<f32>
  %s1 = arith.addf %s, %one : tensor<f32>
  spmd.store %s1 to @"step" : tensor<f32>
  %zero = arith.constant dense<0.0> : tensor<f32>
  %e = tensor.empty() : tensor<4xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%mask, %zero, %x : tensor<4xi1>, tensor<f32>, tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%m: i1, %z: f32, %v: f32, %o: f32):
    %y = arith.select %m, %z, %v : f32
    linalg.yield %y : f32
  } -> tensor<4xf32>
  return %r, %zero : tensor<4xf32>, tensor<f32>
}
