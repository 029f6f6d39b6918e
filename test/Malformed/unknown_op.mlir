// RUN: not spmd-opt %s 2>&1 | FileCheck %s
// CHECK: unknown_op.mlir:6:8: error: custom op 'spmd.allreduce' is unknown

spmd.mesh @m(shape = 4)
func.func @f(%x: tensor<4xf32>) {
  %0 = spmd.allreduce %x on @m axes = [0] sum : tensor<4xf32> -> tensor<4xf32>
  return
}
