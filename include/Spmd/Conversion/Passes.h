//===- Passes.h - spmd conversion passes ------------------------*- C++ -*-===//

#ifndef SPMD_CONVERSION_PASSES_H
#define SPMD_CONVERSION_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"

namespace mlir::spmd {

#define GEN_PASS_DECL
#include "Spmd/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "Spmd/Conversion/Passes.h.inc"

/// Registers `spmd-lower-to-cpu`: optimizer/foreach decomposition,
/// convert-spmd-to-runtime, one-shot bufferization, buffer deallocation,
/// linalg to loops, and conversion of everything to the LLVM dialect.
void registerLowerToCPUPipeline();

/// The common front of the CPU and GPU lowerings: optimizer/foreach
/// decomposition, transposes folded into matmuls, convert-spmd-to-runtime,
/// elementwise fusion, `beforeBufferize` (the CPU lowering's one-hot
/// scatters, state updated in place), one-shot bufferization (identity layouts
/// at function boundaries), buffer deallocation, bufferization ops to
/// memref.
void buildLowerToBuffers(
    OpPassManager &pm,
    llvm::function_ref<void(OpPassManager &)> beforeBufferize = nullptr);

/// The back shared by the CPU and GPU lowerings: host code on buffers (no
/// affine, scf already in cf) to the LLVM dialect — strided metadata, math
/// (LLVM intrinsics, else libm), arith, index, `beforeMemRef` (the GPU
/// lowering's gpu-to-llvm), memref, cf, func, then a cleanup. With
/// `runtimeAllocator`, memref.alloc/dealloc call libSpmdRuntime's caching
/// allocator (`_mlir_memref_to_llvm_alloc` / `_free`) instead of malloc.
void buildHostToLLVM(
    OpPassManager &pm,
    llvm::function_ref<void(OpPassManager &)> beforeMemRef = nullptr,
    bool runtimeAllocator = false);

} // namespace mlir::spmd

#endif // SPMD_CONVERSION_PASSES_H
