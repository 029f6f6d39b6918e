// RUN: spmd-gpu-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(spmd-gpu-fresh-outputs))' | FileCheck %s

#id = affine_map<(d0) -> (d0)>
#all = affine_map<(d0) -> ()>

// The MSE pattern: a difference, its sum of squares, and the gradient
// over the difference, all three ops on one (CSE-merged) tensor.empty:
// the gradient gets its own (so bufferization does not compute it in place
// over the difference the sum reads); the first user keeps the original,
// and an input use is left alone.
// CHECK-LABEL: func.func @mse
// CHECK: %[[E:.*]] = tensor.empty() : tensor<4xf32>
// CHECK: %[[D:.*]] = linalg.generic {{.*}} ins(%arg0, %arg1 : tensor<4xf32>, tensor<4xf32>) outs(%[[E]] : tensor<4xf32>)
// CHECK: linalg.generic {{.*}} ins(%[[D]] : tensor<4xf32>) outs(%{{.*}} : tensor<f32>)
// CHECK: %[[E2:.*]] = tensor.empty() : tensor<4xf32>
// CHECK-NEXT: %[[G:.*]] = linalg.generic {{.*}} ins(%[[D]], %[[E]] : tensor<4xf32>, tensor<4xf32>) outs(%[[E2]] : tensor<4xf32>)
// CHECK-NOT: tensor.empty() : tensor<4xf32>
func.func @mse(%x: tensor<4xf32>, %y: tensor<4xf32>, %acc: tensor<f32>) -> (tensor<f32>, tensor<4xf32>) {
  %e = tensor.empty() : tensor<4xf32>
  %d = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]} ins(%x, %y : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.subf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %l = linalg.generic {indexing_maps = [#id, #all], iterator_types = ["reduction"]} ins(%d : tensor<4xf32>) outs(%acc : tensor<f32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.mulf %a, %a : f32
    %s = arith.addf %m, %o : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  %g = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]} ins(%d, %e : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%a: f32, %unused: f32, %o: f32):
    %s = arith.addf %a, %a : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  return %l, %g : tensor<f32>, tensor<4xf32>
}
