// RUN: not spmd-opt %s 2>&1 | FileCheck %s
// CHECK: bad_placement.mlir:5:73: error: expected one of [sum, avg, max, min, prod] for reduction kind, got: mean

spmd.mesh @m(shape = 4)
func.func private @f(tensor<4xf32> {spmd.spec = #spmd.spec<@m, [partial<mean>]>})
