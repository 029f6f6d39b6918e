//===- Passes.h - spmd transformation passes --------------------*- C++ -*-===//

#ifndef SPMD_DIALECT_SPMD_TRANSFORMS_PASSES_H
#define SPMD_DIALECT_SPMD_TRANSFORMS_PASSES_H

#include "Spmd/Dialect/Spmd/Transforms/Placement.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::spmd {

#define GEN_PASS_DECL
#include "Spmd/Dialect/Spmd/Transforms/Passes.h.inc"

/// The phases of spmd-distribute, one per pass; spmd-distribute runs them in
/// order without a verifier run or a pass-manager round trip in between.
/// Each reports its errors at the ops at fault. Given a rule cache, the first
/// two share the sharding rules they compute (the ops must be unchanged in
/// between).
LogicalResult propagatePlacements(ModuleOp module,
                                  ShardingRuleCache *rules = nullptr);
LogicalResult expandToLocal(ModuleOp module,
                            ShardingRuleCache *rules = nullptr);
void dedupCollectives(Operation *root);
/// spmd-fold-splat-reductions' rewrite (spmd-distribute runs it first).
void foldSplatReductions(Operation *root);
/// spmd-erase-dead-results' rewrite (spmd-distribute runs it before that).
void eraseDeadResults(Operation *root);

/// Whether `op` is an `spmd.all_gather` of a parameter: its input is an
/// `spmd.load` of a `param` state (through the pads and slices of uneven
/// chunks). spmd-regather-parameters repeats these; spmd-overlap-collectives
/// can limit how early they start.
bool isParameterGather(Operation *op);

#define GEN_PASS_REGISTRATION
#include "Spmd/Dialect/Spmd/Transforms/Passes.h.inc"

} // namespace mlir::spmd

#endif // SPMD_DIALECT_SPMD_TRANSFORMS_PASSES_H
