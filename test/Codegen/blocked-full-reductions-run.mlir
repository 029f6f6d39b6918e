// RUN: spmd-opt %s --spmd-lower-to-cpu > %t.mlir
// RUN: %mpirun 1 %run-mpi %t.mlir | FileCheck %s
// REQUIRES: mpi
// The sum of 1024 x 1024 copies of f32 0.1 (exactly 104857.6015625 in
// float64) through spmd-lower-to-cpu: summed in blocks of 1024, 104856.125
// (1.4e-5 off); one sequential f32 loop would give 105891.84 (1e-2 off).
// CHECK: [104856]
func.func private @printMemrefF32(tensor<*xf32>) attributes {llvm.emit_c_interface}
func.func @main() {
  %tenth = arith.constant 0.1 : f32
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1024x1024xf32>
  %x = linalg.fill ins(%tenth : f32) outs(%e : tensor<1024x1024xf32>) -> tensor<1024x1024xf32>
  %e0 = tensor.empty() : tensor<f32>
  %z = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %s = linalg.reduce ins(%x : tensor<1024x1024xf32>) outs(%z : tensor<f32>) dimensions = [0, 1]
    (%in: f32, %a: f32) {
      %r = arith.addf %in, %a : f32
      linalg.yield %r : f32
    }
  %u = tensor.cast %s : tensor<f32> to tensor<*xf32>
  call @printMemrefF32(%u) : (tensor<*xf32>) -> ()
  return
}
