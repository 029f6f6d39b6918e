//===- FuseElementwise.cpp - elementwise producers into their consumers ---===//
//
// spmd-fuse-elementwise: on tensors, before bufferization, an elementwise
// linalg.generic whose only user is another linalg.generic is computed
// inside that user's loop nest, so the intermediate tensor is never
// written to memory; a generator (an iota) and a cheap elementwise op (one
// input, two arith ops) are recomputed in each user, and an elementwise op
// read only through an expand_shape is computed in the expanded shape; an
// add of a matmul's product to another tensor becomes the matmul
// accumulating into it. Shared by the CPU and GPU lowerings.
//
//===----------------------------------------------------------------------===//

#include "Spmd/Codegen/MatmulAccumulation.h"
#include "Spmd/Codegen/Passes.h"
#include "Spmd/Codegen/TensorBuffers.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::spmd {
#define GEN_PASS_DEF_SPMDFUSEELEMENTWISEPASS
#include "Spmd/Codegen/Passes.h.inc"
} // namespace mlir::spmd

using namespace mlir;

namespace {

/// A generic that reads nothing and computes from its indices with a few
/// arith ops and index maps (torch.arange's iota, a position id): recomputing
/// it wherever it is read costs no memory traffic, unlike storing and loading
/// it. So does one that yields an element of a tensor at indices computed so
/// (the position table's rows at those ids, with the gather's bounds
/// checks): its readers load the table's element instead of the copy's. A
/// body with anything else (sinusoidal position encodings' exp and sin, an
/// element used for more than the yield) is not recomputed for every element
/// of a broadcast.
bool isGenerator(Operation *op) {
  auto generic = dyn_cast_if_present<linalg::GenericOp>(op);
  if (!generic || generic.getNumDpsInputs() != 0 ||
      generic.getNumDpsInits() != 1 || !generic.hasPureTensorSemantics())
    return false;
  Operation *yield = generic.getBody()->getTerminator();
  return llvm::all_of(generic.getBody()->getOperations(), [&](Operation &op) {
    if (auto extract = dyn_cast<tensor::ExtractOp>(op))
      return llvm::all_of(extract->getUsers(),
                          [&](Operation *user) { return user == yield; });
    return isa<linalg::IndexOp, linalg::YieldOp, affine::AffineApplyOp,
               cf::AssertOp>(op) ||
           isa<arith::ArithDialect>(op.getDialect());
  });
}

/// An elementwise generic cheap enough to compute again wherever it is
/// read: one input, read once per element, and at most two arith ops that
/// do not read the init (a comparison with ignore_index, a negation, a
/// cast). Its readers then load the input instead of the result, the same
/// traffic, and the result is never written.
bool isCheapElementwise(linalg::GenericOp generic) {
  if (!generic.hasPureTensorSemantics() || generic->getNumResults() != 1 ||
      generic.getNumDpsInputs() != 1 ||
      generic.getNumLoops() != generic.getNumParallelLoops() ||
      !generic.getMatchingIndexingMap(generic.getDpsInputOperand(0))
           .isPermutation() ||
      !generic.getMatchingIndexingMap(generic.getDpsInitOperand(0))
           .isPermutation() ||
      generic.payloadUsesValueFromOperand(generic.getDpsInitOperand(0)))
    return false;
  Block *body = generic.getBody();
  if (body->getOperations().size() > 3) // two ops and the yield
    return false;
  return llvm::all_of(body->without_terminator(), [](Operation &op) {
    return isa<arith::ArithDialect>(op.getDialect());
  });
}

/// An elementwise generic large to hold and cheap to recompute: its inputs
/// are at most 1/32 of its result's bytes (a column of targets broadcast
/// over the vocabulary) and its body is at most 16 arith, index and
/// affine.apply ops (the
/// loss's one-hot mask of the targets; the loss's gradient before the
/// softmax's, once that mask is fused into it). Each reader computes its
/// own, so a [tokens, vocabulary] tensor of it is never stored.
bool isRecomputableBroadcast(linalg::GenericOp generic) {
  if (!generic.hasPureTensorSemantics() || generic->getNumResults() != 1 ||
      generic.getNumLoops() != generic.getNumParallelLoops() ||
      !generic.getMatchingIndexingMap(generic.getDpsInitOperand(0))
           .isPermutation() ||
      generic.payloadUsesValueFromOperand(generic.getDpsInitOperand(0)))
    return false;
  int64_t result = spmd::staticTensorBytes(generic->getResult(0).getType());
  int64_t inputs = 0;
  for (Value input : generic.getDpsInputs()) {
    if (!isa<RankedTensorType>(input.getType())) {
      inputs += 8;
      continue;
    }
    int64_t bytes = spmd::staticTensorBytes(input.getType());
    if (bytes == 0)
      return false;
    inputs += bytes;
  }
  Block *body = generic.getBody();
  if (result == 0 || inputs * 32 > result ||
      body->getOperations().size() > 17) // 16 ops and the yield
    return false;
  return llvm::all_of(body->without_terminator(), [](Operation &op) {
    return isa<linalg::IndexOp, affine::AffineApplyOp>(op) ||
           isa<arith::ArithDialect>(op.getDialect());
  });
}

/// A producer whose value is also read after `fused`'s consumer (an
/// optimizer's new moment: stored into its state, and read by the
/// parameter's update) is computed in the consumer's loop nest, and the
/// fused op yields it as one more result (upstream's preserved producer
/// results), so it is written once and never read back: AdamW's update
/// makes one pass over parameter, gradient and moments instead of three
/// (40 -> 28 bytes per element). Only into an all-parallel consumer that
/// reads it once per iteration (each element computed once), and only when
/// every other reader comes after the consumer in its block (the fused op
/// takes the consumer's place, so the readers can read its result). Not
/// for a producer or into a consumer that is recomputed in its readers (a
/// cheap elementwise op, a recomputable broadcast: GELU's x * x, LayerNorm
/// backward's `dy * gamma` scaled by N): fused, it would be stored as one
/// more result.
bool fusesKeepingOtherReaders(OpOperand *fused) {
  auto producer = fused->get().getDefiningOp<linalg::GenericOp>();
  auto consumer = dyn_cast<linalg::GenericOp>(fused->getOwner());
  if (!producer || !consumer || producer->getBlock() != consumer->getBlock() ||
      producer->hasOneUse() || isGenerator(producer) ||
      isCheapElementwise(producer) || isRecomputableBroadcast(producer) ||
      isCheapElementwise(consumer) || isRecomputableBroadcast(consumer) ||
      consumer.getNumLoops() != consumer.getNumParallelLoops() ||
      !consumer.getMatchingIndexingMap(fused).isPermutation() ||
      !linalg::areElementwiseOpsFusable(fused))
    return false;
  Block *block = consumer->getBlock();
  for (Value result : producer->getResults())
    for (Operation *user : result.getUsers()) {
      if (user == consumer.getOperation())
        continue;
      Operation *ancestor = block->findAncestorOpInBlock(*user);
      if (!ancestor || !consumer->isBeforeInBlock(ancestor))
        return false;
    }
  return true;
}

/// fusesKeepingOtherReaders's fusion. Upstream's pattern keeps a producer
/// with other users (it cannot know they come later) and so computes its
/// value twice; here every use of it reads the fused op's result.
struct FuseKeepingOtherReaders : OpRewritePattern<linalg::GenericOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(linalg::GenericOp consumer,
                                PatternRewriter &rewriter) const override {
    for (OpOperand *fused : consumer.getDpsInputOperands()) {
      if (!fusesKeepingOtherReaders(fused))
        continue;
      auto producer = fused->get().getDefiningOp<linalg::GenericOp>();
      FailureOr<linalg::ElementwiseOpFusionResult> result =
          linalg::fuseElementwiseOps(rewriter, fused);
      if (failed(result))
        continue;
      for (auto [original, replacement] : result->replacements)
        rewriter.replaceAllUsesWith(original, replacement);
      rewriter.eraseOp(consumer);
      if (producer->use_empty())
        rewriter.eraseOp(producer);
      return success();
    }
    return failure();
  }
};

/// Fuse when the producer's value has no other user (nothing is computed
/// twice) and the consumer reads it once per iteration of its own loops
/// (a permutation: a broadcast operand would be recomputed for every
/// element it is broadcast to), or through a broadcast when the producer is
/// cheap. A generator fuses into every consumer, broadcast or not. (A
/// producer with other readers: FuseKeepingOtherReaders.)
bool worthFusing(OpOperand *fused) {
  Operation *producer = fused->get().getDefiningOp();
  if (!producer)
    return false;
  auto consumer = dyn_cast<linalg::LinalgOp>(fused->getOwner());
  if (!consumer)
    return false;
  if (isGenerator(producer))
    return true;
  if (!producer->hasOneUse())
    return false;
  // A cheap op is recomputed for every element it is broadcast to: a few
  // arith ops on a value the consumer loads anyway.
  auto generic = dyn_cast<linalg::GenericOp>(producer);
  return consumer.getMatchingIndexingMap(fused).isPermutation() ||
         (generic && isCheapElementwise(generic));
}

/// An elementwise generic (all loops parallel) whose value is only read
/// through one expand_shape and whose inputs are not elementwise generics
/// themselves: a bias added to a matmul's rows (B*L x N) before the model
/// views them as B x L x N. (Inside a chain of generics, expanding one op
/// would split the chain into two shapes that no longer fuse: the Philox
/// rounds of dropout's random numbers.)
bool isElementwiseBeforeReshape(Operation *op) {
  auto generic = dyn_cast_if_present<linalg::GenericOp>(op);
  return generic && generic.hasPureTensorSemantics() &&
         generic->getNumResults() == 1 && generic->hasOneUse() &&
         generic.getNumLoops() == generic.getNumParallelLoops() &&
         llvm::none_of(generic.getDpsInputs(), [](Value input) {
           return isa_and_present<linalg::GenericOp>(input.getDefiningOp());
         });
}

/// A generator reshaped before its use (torch.arange(C) viewed as 1 x C
/// to compare with a column of targets) is generated in the reshaped shape
/// instead, so that it fuses into the user (upstream's fold of a reshape
/// into its producer by expanding the producer's loops; its index ops are
/// rewritten to the same values). So is an elementwise op read only
/// through the reshape: computed in the shape its readers use, it shares
/// their iteration space (one loop nest, one GPU kernel, with GELU after a
/// bias add) instead of being a loop nest of its own shape. Other reshapes
/// stay.
bool expandProducer(OpOperand *fused) {
  auto expand = dyn_cast<tensor::ExpandShapeOp>(fused->getOwner());
  if (!expand)
    return false;
  Operation *producer = expand.getSrc().getDefiningOp();
  return isGenerator(producer) || isElementwiseBeforeReshape(producer);
}

/// A cheap elementwise generic (isCheapElementwise) read by several
/// generics is cloned for each of them, so that each fuses its own copy:
/// the value the loss reads twice (which targets are not ignore_index: the
/// count of the mean, and the sum) is no loop nest, no GPU kernel and no
/// buffer of its own. A producer with any other reader stays as it is.
bool cheapProducersPerUser(Operation *root) {
  SmallVector<linalg::GenericOp> producers;
  root->walk([&](linalg::GenericOp generic) {
    if (generic->getNumResults() != 1 || generic->getResult(0).hasOneUse())
      return;
    bool cheap = isCheapElementwise(generic);
    // A recomputable broadcast only where each reader fuses it (reads it
    // once per iteration, and has loop bounds without it: not a reduction
    // it alone spans): a clone that stays would be one more tensor.
    if (!cheap && !isRecomputableBroadcast(generic))
      return;
    bool everyUseFuses =
        llvm::all_of(generic->getResult(0).getUses(), [&](OpOperand &use) {
          auto consumer = dyn_cast<linalg::GenericOp>(use.getOwner());
          return consumer && consumer.isDpsInput(&use) &&
                 (cheap ||
                  (consumer.getMatchingIndexingMap(&use).isPermutation() &&
                   linalg::areElementwiseOpsFusable(&use)));
        });
    if (everyUseFuses)
      producers.push_back(generic);
  });
  // A generator read by several ops (torch.arange's positions: gathered in
  // the forward, compared with themselves through two reshapes for the
  // position embedding's gradient) likewise: each reader, or reshape,
  // generates its own, and none is stored.
  root->walk([&](linalg::GenericOp generic) {
    Value result = generic->getResult(0);
    if (isGenerator(generic) && !result.use_empty() && !result.hasOneUse())
      producers.push_back(generic);
  });
  for (linalg::GenericOp producer : producers) {
    SmallVector<OpOperand *> uses;
    for (OpOperand &use : producer->getResult(0).getUses())
      uses.push_back(&use);
    OpBuilder b(producer);
    for (OpOperand *use : llvm::drop_begin(uses)) {
      IRMapping mapping;
      Value init = producer.getDpsInits()[0];
      if (auto empty = init.getDefiningOp<tensor::EmptyOp>())
        mapping.map(init, b.clone(*empty)->getResult(0));
      use->set(b.clone(*producer, mapping)->getResult(0));
    }
  }
  return !producers.empty();
}

/// A fill that is the init of several ops (CSE merges the zero fills of
/// every reduction and matmul of a shape into one) is cloned for each, with
/// its own tensor.empty. Shared, bufferization would copy the one filled
/// buffer into every user's output; cloned, each output is filled in
/// place, and a zero fill right before a matmul becomes BLAS's beta = 0.
void fillPerUser(Operation *root) {
  SmallVector<linalg::FillOp> fills;
  root->walk([&](linalg::FillOp fill) {
    if (fill.hasPureTensorSemantics() && !fill->getResult(0).hasOneUse())
      fills.push_back(fill);
  });
  for (linalg::FillOp fill : fills) {
    SmallVector<OpOperand *> uses;
    for (OpOperand &use : fill->getResult(0).getUses())
      uses.push_back(&use);
    for (OpOperand *use : uses) {
      auto user = dyn_cast<DestinationStyleOpInterface>(use->getOwner());
      if (!user || !user.isDpsInit(use))
        continue;
      OpBuilder b(user);
      IRMapping mapping;
      Value dest = fill.getOutputs()[0];
      if (auto empty = dest.getDefiningOp<tensor::EmptyOp>())
        mapping.map(dest, b.clone(*empty)->getResult(0));
      use->set(b.clone(*fill, mapping)->getResult(0));
    }
    if (fill->use_empty())
      fill->erase();
  }
}

/// Whether `generic` adds its two inputs, element by element, of one shape
/// and element type, into an init it does not read.
bool isPlainAdd(linalg::GenericOp generic) {
  if (!spmd::addsItsInputs(generic) ||
      !llvm::all_of(generic.getIndexingMapsArray(),
                    [](AffineMap map) { return map.isIdentity(); }))
    return false;
  Type type = generic->getResult(0).getType();
  return generic.getDpsInputs()[0].getType() == type &&
         generic.getDpsInputs()[1].getType() == type;
}

/// A matmul of a zero-filled output whose only reader adds it to another
/// tensor read nowhere else (a tied weight's two gradients: the LM head's
/// and the embedding's one-hot contraction) accumulates into that tensor
/// instead: BLAS's beta = 1, the CPU's one-hot scatter adding its rows into
/// it. No loop nest or kernel for the add, and when the other tensor is a
/// GEMM's output too, spmd-elide-buffer-copies computes both into the
/// gradient's bucket. The sum's terms are added in another order (the
/// product's partial sums onto the other tensor, instead of the finished
/// product plus it): float32 rounding, nothing else.
void accumulateIntoMatmuls(Operation *root) {
  SmallVector<linalg::GenericOp> adds;
  root->walk([&](linalg::GenericOp generic) {
    if (isPlainAdd(generic))
      adds.push_back(generic);
  });
  for (linalg::GenericOp add : adds) {
    for (unsigned k : {1u, 0u}) {
      Value product = add.getDpsInputs()[k];
      Value other = add.getDpsInputs()[1 - k];
      linalg::MatmulOp matmul = spmd::zeroStartedMatmul(product);
      // The other term must exist where the matmul runs.
      if (!matmul || !other.hasOneUse() ||
          matmul->getBlock() != add->getBlock() ||
          !spmd::availableAt(other, matmul))
        continue;
      Operation *fill = matmul.getDpsInits()[0].getDefiningOp();
      matmul.getDpsInitsMutable()[0].assign(other);
      add->replaceAllUsesWith(matmul->getResults());
      add->erase();
      if (fill->use_empty())
        fill->erase();
      break;
    }
  }
}

struct SpmdFuseElementwisePass
    : spmd::impl::SpmdFuseElementwisePassBase<SpmdFuseElementwisePass> {
  void runOnOperation() override {
    fillPerUser(getOperation());
    accumulateIntoMatmuls(getOperation());
    // A producer fused into a recomputable broadcast can make it one (the
    // loss's mask into its gradient): clone and fuse again, a few rounds.
    bool cloned = cheapProducersPerUser(getOperation());
    for (int round = 0; round < 4; ++round) {
      RewritePatternSet patterns(&getContext());
      linalg::populateElementwiseOpsFusionPatterns(patterns, worthFusing);
      linalg::populateFoldReshapeOpsByExpansionPatterns(patterns,
                                                        expandProducer);
      if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
        return signalPassFailure();
      if (!cloned || !(cloned = cheapProducersPerUser(getOperation())))
        break;
    }
    // Then producers with later readers, once the cheap ones are cloned
    // into their readers (before, GELU's x * x -- two operands of one value
    // until fusion's canonicalization merges them -- would be stored).
    RewritePatternSet patterns(&getContext());
    linalg::populateElementwiseOpsFusionPatterns(patterns, worthFusing);
    patterns.add<FuseKeepingOtherReaders>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
