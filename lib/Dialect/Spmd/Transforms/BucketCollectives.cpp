//===- BucketCollectives.cpp - few large all-reduces, not many small ------===//
//
// After spmd-overlap-collectives every gradient's all-reduce starts as soon
// as the gradient exists: one collective call (a launch, a network round
// trip) per parameter. DDP puts gradients in buckets of ~25 MiB and reduces
// each bucket once; this pass does the same to the program: independent
// asynchronous all-reduces of one mesh, axes, kind and element type, in the
// order their inputs become ready, are concatenated into a flat tensor by a
// byte budget, reduced once, and the results cut back out.
//
//===----------------------------------------------------------------------===//

#include "Spmd/Dialect/Spmd/IR/SpmdOps.h"
#include "Spmd/Dialect/Spmd/Transforms/Passes.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"

namespace mlir::spmd {
#define GEN_PASS_DEF_SPMDBUCKETCOLLECTIVESPASS
#include "Spmd/Dialect/Spmd/Transforms/Passes.h.inc"
} // namespace mlir::spmd

using namespace mlir;
using namespace mlir::spmd;

namespace {

/// An asynchronous all_reduce of one static tensor whose future one wait in
/// the same block reads.
struct Member {
  AllReduceOp start;
  WaitOp wait;
  RankedTensorType type;
  int64_t bytes;
};

std::optional<Member> asMember(AllReduceOp op) {
  if (op.getInputs().size() != 1 || op->getNumResults() != 1 ||
      !isa<FutureType>(op->getResult(0).getType()))
    return std::nullopt;
  auto type = dyn_cast<RankedTensorType>(op.getInputs()[0].getType());
  if (!type || !type.hasStaticShape() || !type.getElementType().isIntOrFloat())
    return std::nullopt;
  Value future = op->getResult(0);
  if (!future.hasOneUse())
    return std::nullopt;
  auto wait = dyn_cast<WaitOp>(*future.getUsers().begin());
  if (!wait || wait->getBlock() != op->getBlock() ||
      wait.getFutures().size() != 1)
    return std::nullopt;
  int64_t bytes =
      type.getNumElements() * ((type.getElementTypeBitWidth() + 7) / 8);
  return Member{op, wait, type, bytes};
}

/// Which all-reduces may share a bucket.
struct Key {
  StringRef mesh;
  SmallVector<int64_t> axes;
  ReductionKind kind;
  Type element;
  bool operator==(const Key &o) const {
    return mesh == o.mesh && axes == o.axes && kind == o.kind &&
           element == o.element;
  }
};

Key keyOf(const Member &m) {
  AllReduceOp op = m.start;
  return {op.getMesh(), SmallVector<int64_t>(op.getAxes()), op.getKind(),
          m.type.getElementType()};
}

/// One all-reduce of the members' inputs, flattened and concatenated, where
/// the last one started; its wait where the first member was waited for,
/// each member's result cut back out of it.
void emitBucket(MutableArrayRef<Member> members) {
  AllReduceOp last = members.back().start;
  OpBuilder b(last);
  Location loc = last.getLoc();
  Type element = members.front().type.getElementType();
  int64_t total = 0;
  for (Member &m : members)
    total += m.type.getNumElements();
  auto flatType = RankedTensorType::get({total}, element);
  auto flatOf = [&](OpBuilder &ob, Value v, RankedTensorType type) -> Value {
    auto oneD = RankedTensorType::get({type.getNumElements()}, element);
    if (type.getRank() == 1)
      return v;
    if (type.getRank() == 0)
      return tensor::ExpandShapeOp::create(ob, loc, oneD, v,
                                           ArrayRef<ReassociationIndices>{});
    ReassociationIndices all;
    for (int64_t d = 0; d < type.getRank(); ++d)
      all.push_back(d);
    return tensor::CollapseShapeOp::create(ob, loc, oneD, v,
                                           ArrayRef<ReassociationIndices>{all});
  };
  Value flat = tensor::EmptyOp::create(b, loc, flatType.getShape(), element);
  int64_t offset = 0;
  for (Member &m : members) {
    Value piece = flatOf(b, m.start.getInputs()[0], m.type);
    int64_t n = m.type.getNumElements();
    flat = tensor::InsertSliceOp::create(
        b, loc, piece, flat, ArrayRef<OpFoldResult>{b.getIndexAttr(offset)},
        ArrayRef<OpFoldResult>{b.getIndexAttr(n)},
        ArrayRef<OpFoldResult>{b.getIndexAttr(1)});
    offset += n;
  }
  Value future =
      AllReduceOp::create(b, loc,
                          TypeRange{FutureType::get(b.getContext(), flatType)},
                          ValueRange{flat}, last.getMeshAttr(),
                          last.getAxesAttr(), last.getKindAttr())
          .getResult(0);
  // The first wait of the members.
  WaitOp first = members.front().wait;
  for (Member &m : members)
    if (m.wait->isBeforeInBlock(first))
      first = m.wait;
  b.setInsertionPoint(first);
  Value reduced =
      WaitOp::create(b, loc, TypeRange{flatType}, ValueRange{future})
          .getResult(0);
  offset = 0;
  for (Member &m : members) {
    int64_t n = m.type.getNumElements();
    auto oneD = RankedTensorType::get({n}, element);
    Value piece = tensor::ExtractSliceOp::create(
        b, loc, oneD, reduced, ArrayRef<OpFoldResult>{b.getIndexAttr(offset)},
        ArrayRef<OpFoldResult>{b.getIndexAttr(n)},
        ArrayRef<OpFoldResult>{b.getIndexAttr(1)});
    offset += n;
    Value result = piece;
    if (m.type.getRank() == 0) {
      result = tensor::CollapseShapeOp::create(
          b, loc, m.type, piece, ArrayRef<ReassociationIndices>{});
    } else if (m.type.getRank() > 1) {
      ReassociationIndices all;
      for (int64_t d = 0; d < m.type.getRank(); ++d)
        all.push_back(d);
      result = tensor::ExpandShapeOp::create(
          b, loc, m.type, piece, ArrayRef<ReassociationIndices>{all});
    }
    m.wait.getResult(0).replaceAllUsesWith(result);
  }
  for (Member &m : members) {
    m.wait->erase();
    m.start->erase();
  }
}

struct SpmdBucketCollectivesPass
    : public spmd::impl::SpmdBucketCollectivesPassBase<
          SpmdBucketCollectivesPass> {
  using SpmdBucketCollectivesPassBase::SpmdBucketCollectivesPassBase;

  void runOnOperation() override {
    if (bucketBytes <= 0)
      return;
    getOperation().walk([&](Block *block) { bucketBlock(*block); });
  }

  void bucketBlock(Block &block) {
    struct Open {
      Key key;
      SmallVector<Member> members;
      int64_t bytes = 0;
      // Its first bucket gets the small budget, as DDP's.
      bool firstOfKey = true;
    };
    SmallVector<Open> open;
    SmallVector<SmallVector<Member>> ready;
    auto close = [&](Open &bucket) {
      if (bucket.members.size() > 1)
        ready.push_back(bucket.members);
      bucket.members.clear();
      bucket.bytes = 0;
      bucket.firstOfKey = false;
    };
    for (Operation &op : block) {
      auto reduce = dyn_cast<AllReduceOp>(op);
      if (!reduce)
        continue;
      std::optional<Member> member = asMember(reduce);
      if (!member)
        continue;
      Key key = keyOf(*member);
      auto it = llvm::find_if(open, [&](Open &o) { return o.key == key; });
      if (it == open.end()) {
        open.push_back(Open{key, {}, 0, true});
        it = open.end() - 1;
      }
      Open &bucket = *it;
      auto budget = [&]() -> int64_t {
        return bucket.firstOfKey ? int64_t(firstBucketBytes)
                                 : int64_t(bucketBytes);
      };
      // The bucket starts where its last member would: every member's
      // result must still be unused there (no cycle).
      bool waitsAfter = llvm::all_of(bucket.members, [&](Member &m) {
        return reduce->isBeforeInBlock(m.wait);
      });
      if (!bucket.members.empty() &&
          (!waitsAfter || bucket.bytes + member->bytes > budget()))
        close(bucket);
      // (A bucket closed just now: the next one has the full budget.)
      bucket.members.push_back(*member);
      bucket.bytes += member->bytes;
      if (bucket.bytes >= budget())
        close(bucket);
    }
    for (Open &bucket : open)
      close(bucket);
    for (SmallVector<Member> &members : ready)
      emitBucket(members);
  }
};

} // namespace
