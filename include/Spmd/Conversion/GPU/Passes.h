//===- Passes.h - spmd GPU conversion passes --------------------*- C++ -*-===//

#ifndef SPMD_CONVERSION_GPU_PASSES_H
#define SPMD_CONVERSION_GPU_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Pass/Pass.h"

namespace mlir::spmd {

#define GEN_PASS_DECL
#include "Spmd/Conversion/GPU/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "Spmd/Conversion/GPU/Passes.h.inc"

/// Registers `spmd-lower-to-nvvm{chip features opt-level block-size
/// cuda-toolkit emulate row-kernels fuse-kernels}`: a local program to host
/// code in the LLVM dialect with embedded cubins (or, with emulate, kernels
/// compiled for the host), collectives on NCCL through libSpmdGpuRuntime.
void registerLowerToNVVMPipeline();

} // namespace mlir::spmd

#endif // SPMD_CONVERSION_GPU_PASSES_H
