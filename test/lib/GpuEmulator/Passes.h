//===- Passes.h - the GPU emulator's compilation ----------------*- C++ -*-===//
//
// Test support (see Passes.td): spmd-gpu-kernels-to-host,
// spmd-gpu-emulator-entries and the spmd-lower-to-emulator pipeline, which
// spmd-gpu-opt registers next to the compiler's own.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_TEST_GPUEMULATOR_PASSES_H
#define SPMD_TEST_GPUEMULATOR_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Pass/Pass.h"

namespace mlir::spmd::test {

#define GEN_PASS_DECL
#include "GpuEmulator/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "GpuEmulator/Passes.h.inc"

/// Registers the emulator's passes and `spmd-lower-to-emulator{block-size
/// row-kernels fuse-kernels}`: spmd-lower-to-nvvm's host code with the
/// kernels compiled for the host, to run against test/lib/GpuEmulator/Device.
void registerGpuEmulator();

} // namespace mlir::spmd::test

#endif // SPMD_TEST_GPUEMULATOR_PASSES_H
