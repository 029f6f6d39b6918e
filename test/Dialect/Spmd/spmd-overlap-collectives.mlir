// RUN: spmd-opt %s --spmd-overlap-collectives | FileCheck %s

spmd.mesh @dp(shape = 2)

// The gradient's all-reduce starts right after the gradient is computed and
// is waited for just before its first use; the independent matmul in
// between overlaps it. Unused or nested collectives are left alone.
// CHECK-LABEL: func.func @grads
// CHECK: %[[G:.*]] = linalg.matmul
// CHECK-NEXT: %[[F:.*]] = spmd.all_reduce %[[G]] on @dp axes = [0] sum : tensor<4x4xf32> -> !spmd.future<tensor<4x4xf32>>
// CHECK-NEXT: %[[H:.*]] = linalg.matmul
// CHECK-NEXT: %[[R:.*]] = spmd.wait %[[F]] : !spmd.future<tensor<4x4xf32>>
// CHECK-NEXT: %[[S:.*]] = arith.addf %[[R]], %[[H]]
func.func @grads(%x: tensor<4x4xf32>, %y: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x4xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
  %g = linalg.matmul ins(%x, %y : tensor<4x4xf32>, tensor<4x4xf32>) outs(%z : tensor<4x4xf32>) -> tensor<4x4xf32>
  %h = linalg.matmul ins(%y, %y : tensor<4x4xf32>, tensor<4x4xf32>) outs(%z : tensor<4x4xf32>) -> tensor<4x4xf32>
  %r = spmd.all_reduce %g on @dp axes = [0] sum : tensor<4x4xf32> -> tensor<4x4xf32>
  %s = arith.addf %r, %h : tensor<4x4xf32>
  return %s : tensor<4x4xf32>
}

// Coalesced collectives stay one op; an argument's collective starts at
// function entry.
// CHECK-LABEL: func.func @coalesced
// CHECK-NEXT: %[[F:.*]]:2 = spmd.all_gather %arg0, %arg1 on @dp axes = [0] gather_dim = 0 : tensor<2x4xf32>, tensor<2xf32> -> !spmd.future<tensor<4x4xf32>>, !spmd.future<tensor<4xf32>>
// CHECK: arith.mulf
// CHECK: %[[R:.*]]:2 = spmd.wait %[[F]]#0, %[[F]]#1
func.func @coalesced(%a: tensor<2x4xf32>, %b: tensor<2xf32>, %c: tensor<3xf32>) -> (tensor<4x4xf32>, tensor<4xf32>, tensor<3xf32>) {
  %m = arith.mulf %c, %c : tensor<3xf32>
  %r:2 = spmd.all_gather %a, %b on @dp axes = [0] gather_dim = 0 : tensor<2x4xf32>, tensor<2xf32> -> tensor<4x4xf32>, tensor<4xf32>
  return %r#0, %r#1, %m : tensor<4x4xf32>, tensor<4xf32>, tensor<3xf32>
}
