// RUN: not spmd-opt %s 2>&1 | FileCheck %s
// CHECK: truncated_op.mlir:5:74: error: expected ']'

spmd.mesh @m(shape = 4)
func.func @f(%x: tensor<4xf32>) { %0 = spmd.all_reduce %x on @m axes = [0
