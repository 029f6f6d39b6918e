// RUN: not spmd-opt %s 2>&1 | FileCheck %s
// CHECK: integer_overflow.mlir:4:22: error: invalid dimension

spmd.mesh @m(shape = 99999999999999999999999)
