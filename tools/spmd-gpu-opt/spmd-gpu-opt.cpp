//===- spmd-gpu-opt.cpp - spmd-opt plus the GPU lowering ------------------===//
//
// Everything spmd-opt registers, plus spmd-lower-to-nvvm and the dialects and
// targets it needs, and (test support, as mlir-opt registers upstream's test
// passes) the GPU emulator's spmd-lower-to-emulator. A separate driver so
// that spmd-opt stays small and fast to start (it does not link LLVM's GPU
// code generators).
//
//===----------------------------------------------------------------------===//

#include "GpuEmulator/Passes.h"
#include "Spmd/InitAll.h"
#include "Spmd/InitAllGpu.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  mlir::spmd::registerAllDialects(registry);
  mlir::spmd::registerGpuDialects(registry);
  mlir::spmd::registerAllPasses();
  mlir::spmd::registerGpuPasses();
  mlir::spmd::test::registerGpuEmulator();
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "spmd GPU optimizer driver: spmd-opt + spmd-lower-to-nvvm\n",
      registry));
}
