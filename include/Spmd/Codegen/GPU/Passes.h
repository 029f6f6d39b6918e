//===- Passes.h - spmd GPU conversion passes --------------------*- C++ -*-===//

#ifndef SPMD_CODEGEN_GPU_PASSES_H
#define SPMD_CODEGEN_GPU_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"

#include <functional>

namespace mlir::spmd {

#define GEN_PASS_DECL
#include "Spmd/Codegen/GPU/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "Spmd/Codegen/GPU/Passes.h.inc"

/// Registers `spmd-lower-to-nvvm{chip features opt-level block-size
/// cuda-toolkit row-kernels fuse-kernels group-gemms}`: a local program to host
/// code in the LLVM dialect with embedded cubins, collectives on NCCL through
/// libSpmdGpuRuntime.
void registerLowerToNVVMPipeline();

/// The GPU lowering's choices that do not depend on where kernels run.
struct GpuLoweringOptions {
  /// Threads per block along the innermost parallel loop (1 to 1024).
  int64_t blockSize = 256;
  /// spmd-gpu-row-kernels.
  bool rowKernels = true;
  /// spmd-gpu-fuse-kernels.
  bool fuseKernels = true;
  /// spmd-gpu-group-gemms.
  bool groupGemms = true;
};

/// How outlined kernels are compiled, as the points where the lowering calls
/// out: spmd-lower-to-nvvm's are NVVM and cubins; the GPU emulator's (test
/// support, test/lib/GpuEmulator) compile them for the host. The host code is
/// the same for every target.
struct GpuKernelTarget {
  /// Right after kernel outlining and the host-code checks.
  std::function<void(OpPassManager &)> afterOutlining;
  /// After stream ordering and control flow, before the host code goes to
  /// the LLVM dialect.
  std::function<void(OpPassManager &)> beforeHostToLLVM;
  /// Last, on the LLVM dialect.
  std::function<void(OpPassManager &)> atEnd;
};

/// The GPU lowering of a local program (spmd-lower-to-nvvm's passes) with
/// `target`'s kernel compilation; an invalid option adds a pass that fails
/// on the module, naming `pipeline`.
void buildGpuLowering(OpPassManager &pm, const GpuLoweringOptions &options,
                      const GpuKernelTarget &target, StringRef pipeline);

} // namespace mlir::spmd

#endif // SPMD_CODEGEN_GPU_PASSES_H
