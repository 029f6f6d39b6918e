//===- LowerToEmulator.cpp - the spmd-lower-to-emulator pipeline ----------===//
//
// spmd-lower-to-nvvm with the GPU emulator as the kernel target: the same
// host code (launches, copies, cuBLAS and NCCL calls, stream order), kernels
// compiled for the host (spmd-gpu-kernels-to-host) and given the entries the
// emulated driver launches (spmd-gpu-emulator-entries).
//
//===----------------------------------------------------------------------===//

#include "Passes.h"

#include "Spmd/Codegen/GPU/Passes.h"

#include "mlir/Conversion/MathToFuncs/MathToFuncs.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"
#include "mlir/Pass/PassRegistry.h"

using namespace mlir;

namespace {

struct LowerToEmulatorOptions
    : public PassPipelineOptions<LowerToEmulatorOptions> {
  PassOptions::Option<int64_t> blockSize{
      *this, "block-size",
      llvm::cl::desc("threads per block along the innermost parallel loop"),
      llvm::cl::init(256)};
  PassOptions::Option<bool> rowKernels{
      *this, "row-kernels",
      llvm::cl::desc("spmd-gpu-row-kernels (as spmd-lower-to-nvvm)"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> fuseKernels{
      *this, "fuse-kernels",
      llvm::cl::desc("spmd-gpu-fuse-kernels (as spmd-lower-to-nvvm)"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> groupGemms{
      *this, "group-gemms",
      llvm::cl::desc("spmd-gpu-group-gemms (as spmd-lower-to-nvvm)"),
      llvm::cl::init(true)};
};

void buildLowerToEmulator(OpPassManager &pm,
                          const LowerToEmulatorOptions &options) {
  spmd::GpuLoweringOptions lowering;
  lowering.blockSize = options.blockSize;
  lowering.rowKernels = options.rowKernels;
  lowering.fuseKernels = options.fuseKernels;
  lowering.groupGemms = options.groupGemms;
  spmd::GpuKernelTarget target;
  target.afterOutlining = [](OpPassManager &pm) {
    pm.addPass(spmd::test::createSpmdGpuKernelsToHostPass());
    // The NVVM lowering handles math.fpowi/ipowi; on the host, LLVM's powi
    // takes only an i32 exponent (torch-mlir's `x ** 2` has an i64 one), so
    // they become the square-and-multiply functions convert-math-to-funcs
    // generates.
    pm.addPass(createConvertMathToFuncs());
  };
  target.atEnd = [](OpPassManager &pm) {
    pm.addPass(spmd::test::createSpmdGpuEmulatorEntriesPass());
  };
  spmd::buildGpuLowering(pm, lowering, target, "spmd-lower-to-emulator");
}

} // namespace

void mlir::spmd::test::registerGpuEmulator() {
  registerSpmdGpuEmulatorPasses();
  PassPipelineRegistration<LowerToEmulatorOptions>(
      "spmd-lower-to-emulator",
      "Test support: spmd-lower-to-nvvm with the kernels compiled for the "
      "host, to run against the GPU emulator (build/lib/gpu-emulator: CUDA "
      "driver, NCCL and cuBLAS on the CPU); the host code is the same",
      buildLowerToEmulator);
}
