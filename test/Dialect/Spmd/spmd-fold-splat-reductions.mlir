// RUN: spmd-opt %s --split-input-file --spmd-fold-splat-reductions | FileCheck %s

// A sum over the rows of a splat into a zero fill: init + c * rows, in
// double and rounded once (1/3 summed 6 times is 2 here, as in exact
// arithmetic).
// CHECK-LABEL: func.func @rows
// CHECK-NOT: linalg.generic
// CHECK: %[[C:.*]] = arith.constant dense<2.000000e+00> : tensor<1x10xf32>
// CHECK-NEXT: return %[[C]]
#rows = affine_map<(d0, d1) -> (d0, d1)>
#cols = affine_map<(d0, d1) -> (0, d1)>
func.func @rows() -> tensor<1x10xf32> {
  %zero = arith.constant 0.0 : f32
  %third = arith.constant dense<0.333333343> : tensor<6x10xf32>
  %e = tensor.empty() : tensor<1x10xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<1x10xf32>) -> tensor<1x10xf32>
  %s = linalg.generic {indexing_maps = [#rows, #cols], iterator_types = ["reduction", "parallel"]}
      ins(%third : tensor<6x10xf32>) outs(%z : tensor<1x10xf32>) {
  ^bb0(%in: f32, %out: f32):
    %a = arith.addf %out, %in : f32
    linalg.yield %a : f32
  } -> tensor<1x10xf32>
  return %s : tensor<1x10xf32>
}

// -----

// A full reduction of a fill into a splat init of 1.5: 1.5 + 2 * 12.
// CHECK-LABEL: func.func @full
// CHECK-NOT: linalg.generic
// CHECK: %[[C:.*]] = arith.constant dense<2.550000e+01> : tensor<f32>
// CHECK-NEXT: return %[[C]]
#all = affine_map<(d0, d1) -> (d0, d1)>
#none = affine_map<(d0, d1) -> ()>
func.func @full() -> tensor<f32> {
  %two = arith.constant 2.0 : f32
  %e = tensor.empty() : tensor<3x4xf32>
  %f = linalg.fill ins(%two : f32) outs(%e : tensor<3x4xf32>) -> tensor<3x4xf32>
  %init = arith.constant dense<1.5> : tensor<f32>
  %s = linalg.generic {indexing_maps = [#all, #none], iterator_types = ["reduction", "reduction"]}
      ins(%f : tensor<3x4xf32>) outs(%init : tensor<f32>) {
  ^bb0(%in: f32, %out: f32):
    %a = arith.addf %in, %out : f32
    linalg.yield %a : f32
  } -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// Not folded: an input that is not a splat, a body that is not a sum, a
// parallel-only generic.
// CHECK-LABEL: func.func @kept
// CHECK-COUNT-3: linalg.generic
#rows = affine_map<(d0, d1) -> (d0, d1)>
#cols = affine_map<(d0, d1) -> (0, d1)>
func.func @kept(%x: tensor<6x10xf32>) -> (tensor<1x10xf32>, tensor<1x10xf32>, tensor<6x10xf32>) {
  %zero = arith.constant 0.0 : f32
  %ones = arith.constant dense<1.0> : tensor<6x10xf32>
  %e = tensor.empty() : tensor<1x10xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<1x10xf32>) -> tensor<1x10xf32>
  %a = linalg.generic {indexing_maps = [#rows, #cols], iterator_types = ["reduction", "parallel"]}
      ins(%x : tensor<6x10xf32>) outs(%z : tensor<1x10xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  } -> tensor<1x10xf32>
  %b = linalg.generic {indexing_maps = [#rows, #cols], iterator_types = ["reduction", "parallel"]}
      ins(%ones : tensor<6x10xf32>) outs(%z : tensor<1x10xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.maximumf %in, %out : f32
    linalg.yield %s : f32
  } -> tensor<1x10xf32>
  %e2 = tensor.empty() : tensor<6x10xf32>
  %c = linalg.generic {indexing_maps = [#rows, #rows], iterator_types = ["parallel", "parallel"]}
      ins(%ones : tensor<6x10xf32>) outs(%e2 : tensor<6x10xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  } -> tensor<6x10xf32>
  return %a, %b, %c : tensor<1x10xf32>, tensor<1x10xf32>, tensor<6x10xf32>
}
