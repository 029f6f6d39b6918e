//===- InitAll.h - register what spmd tools use -----------------*- C++ -*-===//

#ifndef SPMD_INITALL_H
#define SPMD_INITALL_H

#include "Spmd/Codegen/Passes.h"
#include "Spmd/Conversion/Passes.h"
#include "Spmd/Dialect/Spmd/IR/SpmdDialect.h"
#include "Spmd/Dialect/Spmd/Transforms/Passes.h"
#include "Spmd/Dialect/Spmd/Transforms/ShardingRules.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Transforms/FuncBufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/Extensions/InlinerExtension.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

namespace mlir::spmd {

/// The dialects of the programs spmd compiles, plus its own. `cf` is there
/// for the `cf.assert` bounds checks torch-mlir emits; the func inliner
/// extension lets `inline` fold the Python bridge's wrapper into one function.
inline void registerAllDialects(DialectRegistry &registry) {
  registry.insert<SpmdDialect, arith::ArithDialect,
                  bufferization::BufferizationDialect, cf::ControlFlowDialect,
                  func::FuncDialect, linalg::LinalgDialect, LLVM::LLVMDialect,
                  math::MathDialect, memref::MemRefDialect, scf::SCFDialect,
                  tensor::TensorDialect>();
  func::registerInlinerExtension(registry);
  registerShardingRuleModels(registry);
  // What the CPU lowering bufferizes.
  arith::registerBufferizableOpInterfaceExternalModels(registry);
  bufferization::func_ext::registerBufferizableOpInterfaceExternalModels(
      registry);
  linalg::registerBufferizableOpInterfaceExternalModels(registry);
  scf::registerBufferizableOpInterfaceExternalModels(registry);
  tensor::registerBufferizableOpInterfaceExternalModels(registry);
}

/// The generic transforms (canonicalize, cse, ...) and spmd's own passes.
inline void registerAllPasses() {
  registerTransformsPasses();
  registerSpmdPasses();
  registerSpmdConversionPasses();
  registerSpmdCodegenPasses();
  registerLowerToCPUPipeline();
}

} // namespace mlir::spmd

#endif // SPMD_INITALL_H
