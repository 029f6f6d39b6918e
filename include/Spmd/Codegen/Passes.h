//===- Passes.h - spmd code generation passes -------------------*- C++ -*-===//
//
// The code generation passes of Passes.td: the CPU lowering's, several of
// them shared with the GPU lowering.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_CODEGEN_PASSES_H
#define SPMD_CODEGEN_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::spmd {

#define GEN_PASS_DECL
#include "Spmd/Codegen/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "Spmd/Codegen/Passes.h.inc"

} // namespace mlir::spmd

#endif // SPMD_CODEGEN_PASSES_H
