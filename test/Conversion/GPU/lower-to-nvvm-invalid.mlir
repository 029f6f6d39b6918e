// RUN: spmd-gpu-opt %s --spmd-lower-to-nvvm -split-input-file -verify-diagnostics

// State stays on the CPU path for now.
spmd.mesh @m(shape = 1)
// expected-error @+1 {{spmd-gpu-memory: mutable global @w (spmd.state) is not supported on the GPU yet}}
spmd.state @"w" : tensor<4xf32> role = param
func.func @state() -> tensor<4xf32> {
  // expected-error @+1 {{spmd-gpu-memory: mutable global @w (spmd.state) is not supported on the GPU yet}}
  %w = spmd.load @"w" : tensor<4xf32>
  return %w : tensor<4xf32>
}

// -----

// A scalar read out of a tensor on the host would dereference device memory.
func.func @scalar(%x: tensor<4xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{spmd-lower-to-nvvm: host code reads or writes device memory here}}
  %v = tensor.extract %x[%c0] : tensor<4xf32>
  return %v : f32
}
