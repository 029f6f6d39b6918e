// RUN: not spmd-opt %s 2>&1 | FileCheck %s
// CHECK: unknown_state.mlir:5:8: error: 'spmd.load' op @fc.bias does not name an 'spmd.state'

func.func @f() -> tensor<4xf32> {
  %0 = spmd.load @"fc.bias" : tensor<4xf32>
  return %0 : tensor<4xf32>
}
