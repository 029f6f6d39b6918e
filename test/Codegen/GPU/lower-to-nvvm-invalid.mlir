// RUN: spmd-gpu-opt %s --spmd-lower-to-nvvm -split-input-file -verify-diagnostics

// A scalar read out of a tensor on the host would dereference device memory.
func.func @scalar(%x: tensor<4xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{spmd-lower-to-nvvm: host code reads or writes device memory here}}
  %v = tensor.extract %x[%c0] : tensor<4xf32>
  return %v : f32
}
