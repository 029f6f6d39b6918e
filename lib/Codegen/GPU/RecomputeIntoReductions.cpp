//===- RecomputeIntoReductions.cpp - elementwise ops again in reductions --===//
//
// An elementwise op whose result a GEMM needs (the MSE loss's difference,
// ReLU's or GELU's backward) is also read by a column or full reduction (a
// bias gradient, the loss sum). Reading the stored result, the reduction
// waits for the elementwise kernel: two launches. Computing the elementwise
// op again inside the reduction, from its inputs, makes the two independent,
// so spmd-gpu-fuse-kernels runs them in one launch.
//
//===----------------------------------------------------------------------===//

#include "Spmd/Codegen/GPU/Passes.h"

#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::spmd {
#define GEN_PASS_DEF_SPMDGPURECOMPUTEINTOREDUCTIONSPASS
#include "Spmd/Codegen/GPU/Passes.h.inc"
} // namespace mlir::spmd

using namespace mlir;

namespace {

/// At most this many ops (without the yield) in a reduction's body after
/// recomputing producers in it: a chain of elementwise ops is recomputed
/// once, not without bound.
constexpr size_t kMaxBodyOps = 48;

size_t bodyOps(linalg::GenericOp generic) {
  return generic.getBody()->getOperations().size() - 1;
}

/// A reduction that is not a row reduction: every loop reduces (a loss's
/// sum), or a parallel loop follows a reduction (a bias gradient summing
/// over the rows). Row reductions (last loop reducing) are
/// spmd-gpu-row-kernels' chains, which run their elementwise neighbours in
/// the same kernel already. Contractions stay GEMMs.
bool isRecomputingReduction(linalg::GenericOp generic) {
  if (!generic.hasPureTensorSemantics() ||
      generic.getNumReductionLoops() == 0 ||
      linalg::isaContractionOpInterface(generic))
    return false;
  SmallVector<utils::IteratorType> iterators = generic.getIteratorTypesArray();
  bool rowReduction = iterators.back() == utils::IteratorType::reduction &&
                      generic.getNumParallelLoops() != 0;
  return !rowReduction;
}

/// An elementwise generic read by the reduction through a permutation (each
/// element once) that others read too: it stays for them, and the
/// reduction computes its own copy. Ops with regions, gathers (an
/// embedding's rows: scattered reads, and its bounds checks, once more) and
/// ops that read their init (a state updated in place) are not recomputed.
bool isRecomputable(OpOperand &operand) {
  auto producer = operand.get().getDefiningOp<linalg::GenericOp>();
  auto consumer = cast<linalg::GenericOp>(operand.getOwner());
  if (!producer || producer->getResult(0).hasOneUse() ||
      !producer.hasPureTensorSemantics() || producer->getNumResults() != 1 ||
      producer.getNumDpsInputs() == 0 ||
      producer.getNumLoops() != producer.getNumParallelLoops() ||
      producer.payloadUsesValueFromOperand(producer.getDpsInitOperand(0)) ||
      !consumer.isDpsInput(&operand) ||
      !consumer.getMatchingIndexingMap(&operand).isPermutation() ||
      !linalg::areElementwiseOpsFusable(&operand))
    return false;
  if (bodyOps(producer) + bodyOps(consumer) > kMaxBodyOps)
    return false;
  return llvm::all_of(
      producer.getBody()->without_terminator(), [](Operation &op) {
        return op.getNumRegions() == 0 && !isa<tensor::ExtractOp>(op);
      });
}

/// Computes the producer of `operand` again inside its consumer: a clone of
/// the producer (with its own tensor.empty) fused into the consumer, which
/// is replaced. Returns the fused op, or null when fusion failed (nothing
/// changed).
linalg::GenericOp recompute(RewriterBase &rewriter, OpOperand &operand) {
  auto producer = operand.get().getDefiningOp<linalg::GenericOp>();
  auto consumer = cast<linalg::GenericOp>(operand.getOwner());
  Value original = operand.get();
  rewriter.setInsertionPoint(consumer);
  IRMapping mapping;
  Value init = producer.getDpsInits()[0];
  Operation *empty = nullptr;
  if (auto emptyOp = init.getDefiningOp<tensor::EmptyOp>()) {
    empty = rewriter.clone(*emptyOp);
    mapping.map(init, empty->getResult(0));
  }
  Operation *copy = rewriter.clone(*producer, mapping);
  rewriter.modifyOpInPlace(consumer, [&] { operand.set(copy->getResult(0)); });
  FailureOr<linalg::ElementwiseOpFusionResult> fused =
      linalg::fuseElementwiseOps(rewriter, &operand);
  if (failed(fused)) {
    rewriter.modifyOpInPlace(consumer, [&] { operand.set(original); });
    rewriter.eraseOp(copy);
    if (empty)
      rewriter.eraseOp(empty);
    return nullptr;
  }
  for (auto [from, to] : fused->replacements)
    rewriter.replaceAllUsesWith(from, to);
  rewriter.eraseOp(consumer);
  rewriter.eraseOp(copy);
  if (empty && empty->use_empty())
    rewriter.eraseOp(empty);
  return cast<linalg::GenericOp>(fused->fusedOp);
}

struct SpmdGpuRecomputeIntoReductionsPass
    : public spmd::impl::SpmdGpuRecomputeIntoReductionsPassBase<
          SpmdGpuRecomputeIntoReductionsPass> {
  void runOnOperation() override {
    SmallVector<linalg::GenericOp> worklist;
    getOperation()->walk([&](linalg::GenericOp generic) {
      if (isRecomputingReduction(generic))
        worklist.push_back(generic);
    });
    IRRewriter rewriter(&getContext());
    // A fused reduction reads the producer's inputs, which may be
    // recomputable elementwise ops in turn: go on with it until none is.
    while (!worklist.empty()) {
      linalg::GenericOp reduction = worklist.pop_back_val();
      for (OpOperand *operand : reduction.getDpsInputOperands()) {
        if (!isRecomputable(*operand))
          continue;
        if (linalg::GenericOp fused = recompute(rewriter, *operand)) {
          worklist.push_back(fused);
          break;
        }
      }
    }
  }
};

} // namespace
