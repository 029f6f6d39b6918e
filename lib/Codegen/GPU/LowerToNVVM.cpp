//===- LowerToNVVM.cpp - the spmd-lower-to-nvvm pipeline ------------------===//
//
// A local program (after spmd-distribute) to host code in the LLVM dialect
// that launches embedded cubins: decomposition and runtime calls as on the
// CPU, bufferization, buffers on the device (spmd-gpu-memory), f32 matmuls
// through cuBLAS (spmdGpuSgemm), every other linalg op a tiled parallel loop
// mapped to blocks x threads and outlined into a kernel, kernels to NVVM and
// to cubins with the CUDA toolkit's ptxas (gpu-module-to-binary), host code
// through gpu-to-llvm. Collectives call the runtime ABI, which
// libSpmdGpuRuntime implements on NCCL.
//
//===----------------------------------------------------------------------===//

#include "Spmd/Codegen/GPU/Passes.h"
#include "Spmd/Codegen/Passes.h"
#include "Spmd/Conversion/Passes.h"
#include "Spmd/Conversion/RuntimeCalls.h"
#include "Spmd/Dialect/Spmd/Transforms/Passes.h"

#include "mlir/Conversion/AffineToStandard/AffineToStandard.h"
#include "mlir/Conversion/GPUCommon/GPUCommonPass.h"
#include "mlir/Conversion/GPUToNVVM/GPUToNVVMPass.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Conversion/SCFToGPU/SCFToGPUPass.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/SCF/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

namespace {

struct LowerToNVVMOptions : public PassPipelineOptions<LowerToNVVMOptions> {
  PassOptions::Option<std::string> chip{*this, "chip",
                                        llvm::cl::desc("GPU architecture"),
                                        llvm::cl::init("sm_90")};
  // MLIR 22's default PTX ISA is too old for sm_90: name it explicitly.
  PassOptions::Option<std::string> features{
      *this, "features", llvm::cl::desc("PTX features (e.g. +ptx86)"),
      llvm::cl::init("+ptx86")};
  PassOptions::Option<unsigned> optLevel{
      *this, "opt-level", llvm::cl::desc("kernel optimization level"),
      llvm::cl::init(3)};
  PassOptions::Option<int64_t> blockSize{
      *this, "block-size",
      llvm::cl::desc("threads per block along the innermost parallel loop"),
      llvm::cl::init(256)};
  PassOptions::Option<std::string> toolkit{
      *this, "cuda-toolkit",
      llvm::cl::desc("CUDA toolkit with ptxas (default: MLIR's search, "
                     "e.g. /usr/local/cuda)"),
      llvm::cl::init("")};
  PassOptions::Option<bool> rowKernels{
      *this, "row-kernels",
      llvm::cl::desc("chains of row reductions and elementwise ops as one "
                     "kernel of a warp per row (spmd-gpu-row-kernels)"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> fuseKernels{
      *this, "fuse-kernels",
      llvm::cl::desc("fuse the parallel loops that become kernels "
                     "(spmd-gpu-fuse-kernels): fewer launches"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> groupGemms{
      *this, "group-gemms",
      llvm::cl::desc("two independent f32 GEMMs in one cuBLAS call "
                     "(spmd-gpu-group-gemms): fewer launches"),
      llvm::cl::init(true)};
};

/// Reports an invalid pipeline option on the module (a pipeline builder
/// cannot fail by itself) and fails the pipeline.
struct InvalidOptionPass
    : public PassWrapper<InvalidOptionPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(InvalidOptionPass)
  InvalidOptionPass(std::string pipeline, std::string message)
      : pipeline(std::move(pipeline)), message(std::move(message)) {}
  StringRef getArgument() const override {
    return "spmd-gpu-lowering-invalid-option";
  }
  void runOnOperation() override {
    getOperation().emitError(pipeline + ": ") << message;
    signalPassFailure();
  }
  std::string pipeline, message;
};

} // namespace

void mlir::spmd::buildGpuLowering(OpPassManager &pm,
                                  const GpuLoweringOptions &options,
                                  const GpuKernelTarget &target,
                                  StringRef pipeline) {
  // NVIDIA GPUs run at most 1024 threads per block.
  if (options.blockSize < 1 || options.blockSize > 1024) {
    pm.addPass(std::make_unique<InvalidOptionPass>(
        pipeline.str(),
        "block-size=" + std::to_string(options.blockSize) +
            " is not a number of threads a block can have (1 to 1024)"));
    return;
  }
  // Attention: the runtime's fused kernels (head dimensions up to 128);
  // others as linalg (the scores materialized).
  spmd::SpmdLowerAttentionPassOptions attention;
  attention.gpu = true;
  pm.addPass(spmd::createSpmdLowerAttentionPass(attention));
  pm.addNestedPass<func::FuncOp>(spmd::createSpmdDecomposeAttentionPass());
  // As on the CPU, up to buffers; a bias add alone after its GEMM as the
  // GEMM's beta = 1; elementwise ops a GEMM needs computed
  // again in the column and full reductions that read them (one launch for
  // both); optimizer state updated in place (its
  // buffers' frees, now at other points of the program stream, are reused at
  // once by the device cache: same stream); every op its own output buffer
  // (no write-after-read between ops that could share a launch).
  spmd::buildLowerToBuffers(pm, [](OpPassManager &pm) {
    pm.addNestedPass<func::FuncOp>(spmd::createSpmdGpuBiasIntoGemmsPass());
    pm.addNestedPass<func::FuncOp>(
        spmd::createSpmdGpuRecomputeIntoReductionsPass());
    pm.addNestedPass<func::FuncOp>(spmd::createSpmdFuseElementwisePass());
    pm.addNestedPass<func::FuncOp>(spmd::createSpmdUpdateStateInPlacePass());
    pm.addNestedPass<func::FuncOp>(spmd::createSpmdGpuFreshOutputsPass());
  });
  // Device buffers; matmuls to cuBLAS; the rest to kernels.
  spmd::ConvertLinalgToBlasPassOptions blas;
  blas.function =
      spmd::runtimeFunctionName(spmd::RuntimeFunction::spmdGpuSgemm).str();
  // A batched matmul (attention's q @ k^T, att @ v and their gradients) is
  // one cuBLAS strided-batched GEMM, not a loop of calls.
  blas.batched = true;
  blas.batchedFunction = spmd::runtimeFunctionName(
                             spmd::RuntimeFunction::spmdGpuSgemmStridedBatched)
                             .str();
  // Autocast's bf16 matmuls (f32 accumulation) through cublasGemmEx.
  blas.bf16Function =
      spmd::runtimeFunctionName(spmd::RuntimeFunction::spmdGpuGemmBf16).str();
  blas.bf16BatchedFunction =
      spmd::runtimeFunctionName(
          spmd::RuntimeFunction::spmdGpuGemmBf16StridedBatched)
          .str();
  pm.addPass(spmd::createConvertLinalgToBlasPass(blas));
  // Scalars the host would read back from the device (optimizer step
  // counters) computed in the kernels that use them.
  pm.addNestedPass<func::FuncOp>(spmd::createSpmdGpuScalarsIntoKernelsPass());
  pm.addPass(spmd::createSpmdGpuMemoryPass());
  if (options.rowKernels)
    pm.addNestedPass<func::FuncOp>(spmd::createSpmdGpuRowKernelsPass());
  pm.addNestedPass<func::FuncOp>(spmd::createSpmdGpuSerialKernelsPass());
  pm.addNestedPass<func::FuncOp>(spmd::createSpmdGpuParallelLoopsOuterPass());
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToParallelLoopsPass());
  if (options.fuseKernels)
    pm.addNestedPass<func::FuncOp>(spmd::createSpmdGpuFuseKernelsPass());
  // A linear layer's two backward GEMMs in one cuBLAS call.
  if (options.groupGemms)
    pm.addPass(spmd::createSpmdGpuGroupGemmsPass());
  pm.addNestedPass<func::FuncOp>(createParallelLoopTilingPass(
      {options.blockSize}, /*noMinMaxBounds=*/true));
  pm.addNestedPass<func::FuncOp>(createGpuMapParallelLoopsPass());
  pm.addNestedPass<func::FuncOp>(createConvertParallelLoopToGpuPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createGpuKernelOutliningPass());
  pm.addPass(spmd::createSpmdVerifyGpuHostCodePass());
  pm.addPass(spmd::createSpmdGpuTraceSourcesPass());
  if (target.afterOutlining)
    target.afterOutlining(pm);
  // Allocations, copies, launches, cuBLAS and NCCL ordered on one stream;
  // the host waits only where it reads device memory and at the end.
  pm.addPass(spmd::createSpmdGpuStreamOrderPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createSCFToControlFlowPass());
  if (target.beforeHostToLLVM)
    target.beforeHostToLLVM(pm);
  // Host: everything to LLVM, launches, allocations and copies through
  // gpu-to-llvm.
  spmd::buildHostToLLVM(pm, [](OpPassManager &hostPm) {
    hostPm.addPass(createGpuToLLVMConversionPass());
  });
  if (target.atEnd)
    target.atEnd(pm);
}

namespace {

void buildLowerToNVVM(OpPassManager &pm, const LowerToNVVMOptions &options) {
  spmd::GpuLoweringOptions lowering;
  lowering.blockSize = options.blockSize;
  lowering.rowKernels = options.rowKernels;
  lowering.fuseKernels = options.fuseKernels;
  lowering.groupGemms = options.groupGemms;
  spmd::GpuKernelTarget target;
  // Kernels: NVVM, then cubins.
  target.beforeHostToLLVM = [&options](OpPassManager &pm) {
    GpuNVVMAttachTargetOptions nvvm;
    nvvm.chip = options.chip;
    nvvm.features = options.features;
    nvvm.optLevel = options.optLevel;
    pm.addPass(createGpuNVVMAttachTarget(nvvm));
    pm.addNestedPass<gpu::GPUModuleOp>(spmd::createSpmdGpuPowiExponentsPass());
    pm.addNestedPass<gpu::GPUModuleOp>(createConvertGpuOpsToNVVMOps());
    pm.addNestedPass<gpu::GPUModuleOp>(createReconcileUnrealizedCastsPass());
  };
  target.atEnd = [&options](OpPassManager &pm) {
    GpuModuleToBinaryPassOptions binary;
    binary.compilationTarget = "bin";
    binary.toolkitPath = options.toolkit;
    pm.addPass(createGpuModuleToBinaryPass(binary));
  };
  spmd::buildGpuLowering(pm, lowering, target, "spmd-lower-to-nvvm");
}

} // namespace

void mlir::spmd::registerLowerToNVVMPipeline() {
  PassPipelineRegistration<LowerToNVVMOptions>(
      "spmd-lower-to-nvvm",
      "Lowers a local spmd program for NVIDIA GPUs: decompose, runtime calls "
      "(NCCL through libSpmdGpuRuntime), bufferize, device buffers, f32 "
      "matmuls to cuBLAS, other linalg to tiled kernels, NVVM, cubins "
      "(ptxas), host code to LLVM",
      buildLowerToNVVM);
}
