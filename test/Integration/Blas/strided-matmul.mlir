// REQUIRES: mpi
// Matmuls through cblas_sgemm on a slice of columns (row stride 4, width 2)
// and a transposed operand, against values computed by hand.
// RUN: spmd-opt %s --spmd-lower-to-cpu > %t.mlir
// RUN: %mpirun 1 %run-mpi %t.mlir | FileCheck %s

func.func private @printMemrefF32(tensor<*xf32> {bufferization.access = "read"}) attributes {llvm.emit_c_interface}

func.func @main() {
  %x = arith.constant dense<[[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]]> : tensor<2x4xf32>
  %w = arith.constant dense<[[1.0, 0.0, 2.0], [0.0, 1.0, 3.0]]> : tensor<2x3xf32>
  // Columns 1..2 of x: [[2, 3], [6, 7]]; times w.
  %s = tensor.extract_slice %x[0, 1] [2, 2] [1, 1] : tensor<2x4xf32> to tensor<2x2xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x3xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<2x3xf32>) -> tensor<2x3xf32>
  %y = linalg.matmul ins(%s, %w : tensor<2x2xf32>, tensor<2x3xf32>) outs(%z : tensor<2x3xf32>) -> tensor<2x3xf32>
  %u = tensor.cast %y : tensor<2x3xf32> to tensor<*xf32>
  // CHECK: [2,   3,   13],
  // CHECK: [6,   7,   33]
  func.call @printMemrefF32(%u) : (tensor<*xf32>) -> ()
  // x @ x^T (transposed B), accumulated onto ones.
  %one = arith.constant 1.0 : f32
  %e2 = tensor.empty() : tensor<2x2xf32>
  %o = linalg.fill ins(%one : f32) outs(%e2 : tensor<2x2xf32>) -> tensor<2x2xf32>
  %g = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%x, %x : tensor<2x4xf32>, tensor<2x4xf32>) outs(%o : tensor<2x2xf32>) -> tensor<2x2xf32>
  %ug = tensor.cast %g : tensor<2x2xf32> to tensor<*xf32>
  // CHECK: [31,   71],
  // CHECK: [71,   175]
  func.call @printMemrefF32(%ug) : (tensor<*xf32>) -> ()
  return
}
