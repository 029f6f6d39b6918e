// RUN: not spmd-opt %s 2>&1 | FileCheck %s
// CHECK: truncated_spec.mlir:4:59: error: unbalanced '[' character in pretty dialect name

func.func private @f(tensor<4xf32> {spmd.spec = #spmd.spec<@m, [shard<0>
