// RUN: not spmd-opt %s 2>&1 | FileCheck %s
// CHECK: duplicate_symbol.mlir:6:1: error: redefinition of symbol named 'dp'

spmd.mesh @dp(shape = 4)
// A mesh and a state share the symbol namespace.
spmd.state @dp : tensor<4xf32> role = param
