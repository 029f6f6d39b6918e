// RUN: spmd-opt %s --spmd-fold-transpose-into-matmul --canonicalize | FileCheck %s

// CHECK-DAG: #[[MK:.*]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-DAG: #[[NK:.*]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// CHECK-DAG: #[[MN:.*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-DAG: #[[KM:.*]] = affine_map<(d0, d1, d2) -> (d2, d0)>
// CHECK-DAG: #[[KN:.*]] = affine_map<(d0, d1, d2) -> (d2, d1)>

// CHECK-LABEL: func.func @linear
// CHECK-NOT: linalg.transpose
// CHECK: linalg.matmul indexing_maps = [#[[MK]], #[[NK]], #[[MN]]] ins(%arg0, %arg1 : tensor<4x8xf32>, tensor<16x8xf32>)
func.func @linear(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>) -> tensor<4x16xf32> {
  %zero = arith.constant 0.0 : f32
  %et = tensor.empty() : tensor<8x16xf32>
  %t = linalg.transpose ins(%w : tensor<16x8xf32>) outs(%et : tensor<8x16xf32>) permutation = [1, 0]
  %e = tensor.empty() : tensor<4x16xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  %y = linalg.matmul ins(%x, %t : tensor<4x8xf32>, tensor<8x16xf32>) outs(%z : tensor<4x16xf32>) -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// The weight gradient x^T @ dy: the left operand.
// CHECK-LABEL: func.func @weight_grad
// CHECK-NOT: linalg.transpose
// CHECK: linalg.matmul indexing_maps = [#[[KM]], #[[KN]], #[[MN]]] ins(%arg0, %arg1 : tensor<4x8xf32>, tensor<4x16xf32>)
func.func @weight_grad(%x: tensor<4x8xf32>, %dy: tensor<4x16xf32>) -> tensor<8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %et = tensor.empty() : tensor<8x4xf32>
  %t = linalg.transpose ins(%x : tensor<4x8xf32>) outs(%et : tensor<8x4xf32>) permutation = [1, 0]
  %e = tensor.empty() : tensor<8x16xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<8x16xf32>) -> tensor<8x16xf32>
  %y = linalg.matmul ins(%t, %dy : tensor<8x4xf32>, tensor<4x16xf32>) outs(%z : tensor<8x16xf32>) -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}

// A transpose used elsewhere too stays (its other use needs it); a matmul
// with its own maps is left alone.
// CHECK-LABEL: func.func @shared
// CHECK: linalg.transpose
// CHECK: linalg.matmul indexing_maps = [#[[MK]], #[[NK]], #[[MN]]]
func.func @shared(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>) -> (tensor<4x16xf32>, tensor<8x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %et = tensor.empty() : tensor<8x16xf32>
  %t = linalg.transpose ins(%w : tensor<16x8xf32>) outs(%et : tensor<8x16xf32>) permutation = [1, 0]
  %e = tensor.empty() : tensor<4x16xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  %y = linalg.matmul ins(%x, %t : tensor<4x8xf32>, tensor<8x16xf32>) outs(%z : tensor<4x16xf32>) -> tensor<4x16xf32>
  return %y, %t : tensor<4x16xf32>, tensor<8x16xf32>
}
