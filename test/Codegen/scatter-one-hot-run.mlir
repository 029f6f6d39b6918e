// RUN: spmd-opt %s --spmd-lower-to-cpu > %t.mlir
// RUN: FileCheck %s --check-prefix=IR < %t.mlir
// RUN: %mpirun 1 %run-mpi %t.mlir | FileCheck %s
// REQUIRES: mpi
// An embedding gradient through spmd-lower-to-cpu: the one-hot matmul of
// ids [0, 3, 9, 3, -1, 12, 7, 3] (two out of range, ignored as the one-hot
// ignores them) with rows g[t] = [t + 1, 10 (t + 1)], added to 0.5, runs
// as a row scatter (no GEMM): row 3 = 0.5 + g[1] + g[3] + g[7], rows
// without a token stay 0.5.
// IR-NOT: cblas_sgemm
// CHECK: [1.5,   10.5]
// CHECK-NEXT: [0.5,   0.5]
// CHECK-NEXT: [0.5,   0.5]
// CHECK-NEXT: [14.5,   140.5]
// CHECK-NEXT: [0.5,   0.5]
// CHECK-NEXT: [0.5,   0.5]
// CHECK-NEXT: [0.5,   0.5]
// CHECK-NEXT: [7.5,   70.5]
// CHECK-NEXT: [0.5,   0.5]
// CHECK-NEXT: [3.5,   30.5]
func.func private @printMemrefF32(tensor<*xf32>) attributes {llvm.emit_c_interface}
func.func @main() {
  %ids = arith.constant dense<[[0], [3], [9], [3], [-1], [12], [7], [3]]> : tensor<8x1xi64>
  %g = arith.constant dense<[[1.0, 10.0], [2.0, 20.0], [3.0, 30.0], [4.0, 40.0],
                             [5.0, 50.0], [6.0, 60.0], [7.0, 70.0], [8.0, 80.0]]> : tensor<8x2xf32>
  %half = arith.constant 0.5 : f32
  %ec = tensor.empty() : tensor<10x2xf32>
  %c = linalg.fill ins(%half : f32) outs(%ec : tensor<10x2xf32>) -> tensor<10x2xf32>
  %e = tensor.empty() : tensor<8x10xf32>
  %oh = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, 0)>, affine_map<(d0, d1) -> (d0, d1)>],
                        iterator_types = ["parallel", "parallel"]}
      ins(%ids : tensor<8x1xi64>) outs(%e : tensor<8x10xf32>) {
  ^bb0(%a: i64, %out: f32):
    %i = linalg.index 1 : index
    %v = arith.index_cast %i : index to i64
    %eq = arith.cmpi eq, %a, %v : i64
    %f = arith.uitofp %eq : i1 to f32
    linalg.yield %f : f32
  } -> tensor<8x10xf32>
  %r = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (k, m)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%oh, %g : tensor<8x10xf32>, tensor<8x2xf32>) outs(%c : tensor<10x2xf32>) -> tensor<10x2xf32>
  %u = tensor.cast %r : tensor<10x2xf32> to tensor<*xf32>
  call @printMemrefF32(%u) : (tensor<*xf32>) -> ()
  return
}
