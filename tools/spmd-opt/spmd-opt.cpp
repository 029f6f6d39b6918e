//===- spmd-opt.cpp - the spmd pass driver --------------------------------===//
//
// Registers only what the project uses: the spmd dialect, the upstream
// dialects of the programs it compiles, and the generic transforms.
//
//===----------------------------------------------------------------------===//

#include "Spmd/InitAll.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  mlir::spmd::registerAllDialects(registry);
  mlir::spmd::registerAllPasses();
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "spmd optimizer driver: SPMD train-step compiler\n",
      registry));
}
