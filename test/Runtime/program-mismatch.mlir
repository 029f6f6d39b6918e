// REQUIRES: mpi
// Ranks that were given different programs (here one reduces the loss with
// max, the other with sum) must not finish silently: on the program's first
// call every rank compares a hash of it, and the job ends with an error.
// The same program on both ranks passes the check and runs.
// RUN: sed s/KIND/addf/ %s | spmd-opt --spmd-distribute --spmd-lower-to-cpu > %t.sum.mlir
// RUN: sed s/KIND/maximumf/ %s | spmd-opt --spmd-distribute --spmd-lower-to-cpu > %t.max.mlir
// RUN: %mpirun 2 %run-mpi %t.sum.mlir | FileCheck %s --check-prefix=SAME
// RUN: not %mpirun 1 %run-mpi %t.sum.mlir : -np 1 %run-mpi %t.max.mlir 2>&1 | FileCheck %s --check-prefix=DIFF
// SAME: 6
// SAME-NOT: spmd runtime
// DIFF: spmd runtime: rank {{[01]}}: spmdProgramCheck: the ranks run different programs: this rank's 'step' has hash {{[0-9a-f]+}} and another rank's differs

spmd.mesh @dp(shape = 2)

func.func @step(%x: tensor<4xf32>)
    -> (tensor<f32> {spmd.spec = #spmd.spec<@dp, [replicate]>}) {
  %a = spmd.redistribute %x to <@dp, [shard<0>]> : tensor<4xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<f32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %s = linalg.reduce ins(%a : tensor<4xf32>) outs(%acc : tensor<f32>) dimensions = [0]
    (%in: f32, %init: f32) {
      %r = arith.KIND %in, %init : f32
      linalg.yield %r : f32
    }
  return %s : tensor<f32>
}

func.func private @printF32(f32)
func.func private @printNewline()
func.func private @spmdWorldRank() -> i32

func.func @main() {
  %rank = func.call @spmdWorldRank() : () -> i32
  %x = arith.constant dense<[1.0, 2.0, 3.0, 0.0]> : tensor<4xf32>
  %s = func.call @step(%x) : (tensor<4xf32>) -> tensor<f32>
  %v = tensor.extract %s[] : tensor<f32>
  %c0 = arith.constant 0 : i32
  %first = arith.cmpi eq, %rank, %c0 : i32
  scf.if %first {
    func.call @printF32(%v) : (f32) -> ()
    func.call @printNewline() : () -> ()
  }
  return
}
