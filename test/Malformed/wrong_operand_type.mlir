// RUN: not spmd-opt %s 2>&1 | FileCheck %s
// CHECK: wrong_operand_type.mlir:6:{{[0-9]+}}: error: 'spmd.all_reduce' op operand #0 must be variadic of ranked tensor of any type values, but got 'f32'

spmd.mesh @m(shape = 4)
func.func @f(%x: f32) {
  %1 = spmd.all_reduce %x on @m axes = [0] sum : f32 -> f32
  return
}
