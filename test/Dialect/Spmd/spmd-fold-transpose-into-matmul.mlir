// RUN: spmd-opt %s --spmd-fold-transpose-into-matmul --canonicalize | FileCheck %s

// CHECK-DAG: #[[MK:.*]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-DAG: #[[NK:.*]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// CHECK-DAG: #[[MN:.*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-DAG: #[[BMK:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
// CHECK-DAG: #[[BNK:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>
// CHECK-DAG: #[[BMN:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
// CHECK-DAG: #[[BKM:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d3, d1)>
// CHECK-DAG: #[[BKN:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>
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

// Attention's q @ k^T: a batched matmul reading k through a transposed map
// (the strided-batched GEMM takes the transposition flag), and p^T @ dy in
// the backward: the left operand.
// CHECK-LABEL: func.func @scores
// CHECK-NOT: linalg.transpose
// CHECK: linalg.batch_matmul indexing_maps = [#[[BMK]], #[[BNK]], #[[BMN]]] ins(%arg0, %arg1 : tensor<2x6x8xf32>, tensor<2x5x8xf32>)
// CHECK: linalg.batch_matmul indexing_maps = [#[[BKM]], #[[BKN]], #[[BMN]]] ins(%arg0, %arg2 : tensor<2x6x8xf32>, tensor<2x6x3xf32>)
func.func @scores(%q: tensor<2x6x8xf32>, %k: tensor<2x5x8xf32>, %dy: tensor<2x6x3xf32>)
    -> (tensor<2x6x5xf32>, tensor<2x8x3xf32>) {
  %zero = arith.constant 0.0 : f32
  %et = tensor.empty() : tensor<2x8x5xf32>
  %kt = linalg.transpose ins(%k : tensor<2x5x8xf32>) outs(%et : tensor<2x8x5xf32>) permutation = [0, 2, 1]
  %e = tensor.empty() : tensor<2x6x5xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<2x6x5xf32>) -> tensor<2x6x5xf32>
  %s = linalg.batch_matmul ins(%q, %kt : tensor<2x6x8xf32>, tensor<2x8x5xf32>) outs(%z : tensor<2x6x5xf32>) -> tensor<2x6x5xf32>
  %eq = tensor.empty() : tensor<2x8x6xf32>
  %qt = linalg.transpose ins(%q : tensor<2x6x8xf32>) outs(%eq : tensor<2x8x6xf32>) permutation = [0, 2, 1]
  %e2 = tensor.empty() : tensor<2x8x3xf32>
  %z2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<2x8x3xf32>) -> tensor<2x8x3xf32>
  %g = linalg.batch_matmul ins(%qt, %dy : tensor<2x8x6xf32>, tensor<2x6x3xf32>) outs(%z2 : tensor<2x8x3xf32>) -> tensor<2x8x3xf32>
  return %s, %g : tensor<2x6x5xf32>, tensor<2x8x3xf32>
}
