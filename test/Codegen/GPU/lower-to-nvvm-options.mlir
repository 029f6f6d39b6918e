// RUN: not spmd-gpu-opt %s --spmd-lower-to-nvvm="block-size=2048" 2>&1 | FileCheck %s
// RUN: not spmd-gpu-opt %s --spmd-lower-to-nvvm="block-size=0" 2>&1 | FileCheck %s --check-prefix=ZERO
// The emulator's pipeline (test support) shares the lowering and its checks.
// RUN: not spmd-gpu-opt %s --spmd-lower-to-emulator="block-size=4096" 2>&1 | FileCheck %s --check-prefix=EMULATOR
// EMULATOR: error: spmd-lower-to-emulator: block-size=4096 is not a number of threads a block can have (1 to 1024)

// A block of more than 1024 threads cannot be launched on an NVIDIA GPU.
// CHECK: error: spmd-lower-to-nvvm: block-size=2048 is not a number of threads a block can have (1 to 1024)
// ZERO: error: spmd-lower-to-nvvm: block-size=0 is not a number of threads
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
