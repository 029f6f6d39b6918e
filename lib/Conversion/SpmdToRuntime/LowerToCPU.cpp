//===- LowerToCPU.cpp - the spmd-lower-to-cpu pipeline --------------------===//

#include "Spmd/Codegen/Passes.h"
#include "Spmd/Conversion/Passes.h"
#include "Spmd/Conversion/RuntimeCalls.h"
#include "Spmd/Dialect/Spmd/Transforms/Passes.h"

#include "mlir/Conversion/AffineToStandard/AffineToStandard.h"
#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/BufferizationToMemRef/BufferizationToMemRef.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVMPass.h"
#include "mlir/Conversion/IndexToLLVM/IndexToLLVM.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/MathToLibm/MathToLibm.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/OneShotAnalysis.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void mlir::spmd::buildLowerToBuffers(
    OpPassManager &pm,
    llvm::function_ref<void(OpPassManager &)> beforeBufferize) {
  pm.addNestedPass<func::FuncOp>(spmd::createSpmdDecomposeOptimizersPass());
  pm.addNestedPass<func::FuncOp>(spmd::createSpmdDecomposeForeachPass());
  pm.addNestedPass<func::FuncOp>(spmd::createSpmdFoldTransposeIntoMatmulPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(spmd::createConvertSpmdToRuntimePass());
  pm.addNestedPass<func::FuncOp>(createConvertElementwiseToLinalgPass());
  pm.addNestedPass<func::FuncOp>(spmd::createSpmdFuseElementwisePass());
  if (beforeBufferize)
    beforeBufferize(pm);
  pm.addNestedPass<func::FuncOp>(
      spmd::createSpmdRemoveOptimizationBarriersPass());
  // Last uses of large tensors first: a lower transient peak.
  pm.addNestedPass<func::FuncOp>(spmd::createSpmdScheduleForMemoryPass());
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  // Before deallocation is placed: a gradient is computed in its bucket.
  pm.addNestedPass<func::FuncOp>(spmd::createSpmdElideBufferCopiesPass());
  bufferization::BufferDeallocationPipelineOptions dealloc;
  bufferization::buildBufferDeallocationPipeline(pm, dealloc);
  pm.addPass(createConvertBufferizationToMemRefPass());
}

void mlir::spmd::buildHostToLLVM(
    OpPassManager &pm, llvm::function_ref<void(OpPassManager &)> beforeMemRef,
    bool runtimeAllocator) {
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  // 16-bit floats (torch.autocast): math and arithmetic on them run in f32,
  // rounded after every op as eager does, and bf16 conversions become
  // integer code, because LLVM would otherwise call __truncsfbf2, which
  // libgcc before GCC 13 lacks (CPUs without AVX512-BF16 need it).
  math::MathExtendToSupportedTypesOptions mathTypes;
  pm.addPass(math::createMathExtendToSupportedTypes(mathTypes));
  pm.addPass(spmd::createSpmdPolynomialMathPass());
  arith::ArithEmulateUnsupportedFloatsOptions halfTypes;
  halfTypes.sourceTypeStrs = {"bf16", "f16"};
  pm.addPass(arith::createArithEmulateUnsupportedFloats(halfTypes));
  pm.addPass(spmd::createSpmdLegalizeHalfConversionsPass());
  arith::ArithExpandOpsPassOptions expand;
  expand.includeBf16 = true;
  pm.addPass(arith::createArithExpandOpsPass(expand));
  pm.addPass(createConvertMathToLLVMPass());
  // What LLVM has no intrinsic for and no approximation above took.
  pm.addPass(createConvertMathToLibmPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  if (beforeMemRef)
    beforeMemRef(pm);
  FinalizeMemRefToLLVMConversionPassOptions memref;
  memref.useGenericFunctions = runtimeAllocator;
  pm.addPass(createFinalizeMemRefToLLVMConversionPass(memref));
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(spmd::createSpmdBf16BitsInMemoryPass());
}

namespace {
struct LowerToCPUOptions : public PassPipelineOptions<LowerToCPUOptions> {
  PassOptions::Option<unsigned> reportMemoryPeak{
      *this, "report-memory-peak",
      llvm::cl::desc("remark the N largest buffers live at each step's "
                     "planned memory peak (spmd-plan-memory{report-peak})"),
      llvm::cl::init(0)};
};
} // namespace

void mlir::spmd::registerLowerToCPUPipeline() {
  PassPipelineRegistration<LowerToCPUOptions>(
      "spmd-lower-to-cpu",
      "Lowers a local spmd program to the LLVM dialect for the CPU: "
      "decompose optimizers and foreach, convert-spmd-to-runtime, fusion, "
      "attention to flash kernels, one-hot matmuls as row scatters, state "
      "updated in place, one-shot bufferization, weight gradients computed "
      "into their buckets, buffer deallocation, f32 matmuls to spmdSgemm "
      "(cblas_sgemm), "
      "large full reductions in blocks, loop nests outlined, trace regions of "
      "the user's source lines, state in runtime buffers, other linalg to "
      "loops, to LLVM",
      [](OpPassManager &pm, const LowerToCPUOptions &options) {
        spmd::buildLowerToBuffers(pm, [](OpPassManager &pm) {
          pm.addPass(spmd::createSpmdLowerAttentionPass());
          pm.addNestedPass<func::FuncOp>(
              spmd::createSpmdScatterOneHotContractionsPass());
          pm.addNestedPass<func::FuncOp>(
              spmd::createSpmdUpdateStateInPlacePass());
        });
        // Freed after their last use, not at the end of the step (not on
        // the GPU path yet: a free between two kernels keeps
        // spmd-gpu-fuse-kernels from fusing them).
        pm.addNestedPass<func::FuncOp>(spmd::createSpmdFreeAfterLastUsePass());
        // Collective inputs nothing writes before the wait are read in
        // place by the runtime (no copy at the start).
        pm.addNestedPass<func::FuncOp>(
            spmd::createSpmdCollectiveInputsInPlacePass());
        // The step's transient peak, ahead of time (spmd.memory_stats).
        spmd::SpmdPlanMemoryPassOptions plan;
        plan.reportPeak = options.reportMemoryPeak;
        pm.addPass(spmd::createSpmdPlanMemoryPass(plan));
        // libSpmdRuntime's spmdSgemm: OpenBLAS, or the BLAS the process
        // hands over (Sgemm.cpp).
        spmd::ConvertLinalgToBlasPassOptions blas;
        blas.function =
            spmd::runtimeFunctionName(spmd::RuntimeFunction::spmdSgemm).str();
        pm.addPass(spmd::createConvertLinalgToBlasPass(blas));
        pm.addNestedPass<func::FuncOp>(
            spmd::createSpmdBlockedFullReductionsPass());
        pm.addNestedPass<func::FuncOp>(
            spmd::createSpmdReassociableReductionsPass());
        pm.addPass(spmd::createSpmdOutlineLoopNestsPass());
        // Named regions of the user's source lines for step traces.
        pm.addPass(spmd::createSpmdTraceRegionsPass());
        // Parameters and optimizer state in the runtime's buffers, not in
        // the library's globals (no size limit from the code model).
        pm.addPass(spmd::createSpmdStateInRuntimeMemoryPass());
        pm.addNestedPass<func::FuncOp>(createConvertLinalgToLoopsPass());
        pm.addPass(createLowerAffinePass());
        pm.addPass(createSCFToControlFlowPass());
        // Buffers from libSpmdRuntime's cache (HostAllocator.cpp): no
        // malloc, mmap or page faults per step.
        spmd::buildHostToLLVM(pm, nullptr, /*runtimeAllocator=*/true);
      });
}
