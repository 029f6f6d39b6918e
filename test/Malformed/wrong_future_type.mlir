// RUN: not spmd-opt %s 2>&1 | FileCheck %s
// CHECK: wrong_future_type.mlir:5:39: error: invalid kind of type specified: expected builtin.tensor

// A future carries a ranked tensor.
func.func private @f(%x: !spmd.future<f32>)
