//===- BucketCollectives.cpp - few large collectives, not many small ------===//
//
// After spmd-overlap-collectives every gradient's all-reduce starts as soon
// as the gradient exists: one collective call (a launch, a network round
// trip) per parameter. DDP puts gradients in buckets of ~25 MiB and reduces
// each bucket once; this pass does the same to the program: independent
// asynchronous collectives of one kind, mesh, axes, reduction and element
// type — all-reduces, and FSDP's reduce-scatters and all-gathers on
// dimension 0 — in the order they start, are concatenated by a byte budget,
// run once, and the results cut back out.
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

/// An asynchronous collective of one static tensor whose future one wait in
/// the same block reads: an all_reduce, a reduce_scatter on dimension 0 or
/// an all_gather on dimension 0 (FSDP's gradients and parameters: each
/// rank's chunk is one contiguous run of the row-major buffer).
struct Member {
  Operation *start;
  WaitOp wait;
  RankedTensorType type;   // the input
  RankedTensorType result; // the waited value
  int64_t bytes;
};

std::optional<Member> asMember(Operation *op) {
  if (auto scatter = dyn_cast<ReduceScatterOp>(op)) {
    if (scatter.getScatterDim() != 0)
      return std::nullopt;
  } else if (auto gather = dyn_cast<AllGatherOp>(op)) {
    if (gather.getGatherDim() != 0)
      return std::nullopt;
  } else if (!isa<AllReduceOp>(op)) {
    return std::nullopt;
  }
  if (op->getNumOperands() != 1 || op->getNumResults() != 1)
    return std::nullopt;
  auto future = dyn_cast<FutureType>(op->getResult(0).getType());
  auto type = dyn_cast<RankedTensorType>(op->getOperand(0).getType());
  if (!future || !type || !type.hasStaticShape() ||
      !type.getElementType().isIntOrFloat())
    return std::nullopt;
  auto result = dyn_cast<RankedTensorType>(future.getValueType());
  if (!result || !result.hasStaticShape())
    return std::nullopt;
  Value handle = op->getResult(0);
  if (!handle.hasOneUse())
    return std::nullopt;
  auto wait = dyn_cast<WaitOp>(*handle.getUsers().begin());
  if (!wait || wait->getBlock() != op->getBlock() ||
      wait.getFutures().size() != 1)
    return std::nullopt;
  int64_t bytes =
      type.getNumElements() * ((type.getElementTypeBitWidth() + 7) / 8);
  return Member{op, wait, type, result, bytes};
}

/// Which collectives may share a bucket.
struct Key {
  OperationName name;
  StringRef mesh;
  SmallVector<int64_t> axes;
  std::optional<ReductionKind> kind;
  Type element;
  bool operator==(const Key &o) const {
    return name == o.name && mesh == o.mesh && axes == o.axes &&
           kind == o.kind && element == o.element;
  }
};

/// `fn` applied to `op` as the collective it is (a Member's start).
template <typename Fn> auto onCollective(Operation *op, Fn fn) {
  if (auto reduce = dyn_cast<AllReduceOp>(op))
    return fn(reduce);
  if (auto scatter = dyn_cast<ReduceScatterOp>(op))
    return fn(scatter);
  return fn(cast<AllGatherOp>(op));
}

Key keyOf(const Member &m) {
  Operation *op = m.start;
  std::optional<ReductionKind> kind;
  if (auto reduce = dyn_cast<AllReduceOp>(op))
    kind = reduce.getKind();
  if (auto scatter = dyn_cast<ReduceScatterOp>(op))
    kind = scatter.getKind();
  return onCollective(op, [&](auto c) {
    return Key{op->getName(), c.getMesh(), SmallVector<int64_t>(c.getAxes()),
               kind, m.type.getElementType()};
  });
}

/// `v` of static type `from` as the same elements, row-major, in `to`.
Value reshape(OpBuilder &b, Location loc, Value v, RankedTensorType from,
              RankedTensorType to) {
  if (from.getShape() == to.getShape())
    return v;
  auto flat =
      RankedTensorType::get({from.getNumElements()}, from.getElementType());
  auto all = [](int64_t rank) {
    ReassociationIndices dims;
    for (int64_t d = 0; d < rank; ++d)
      dims.push_back(d);
    return SmallVector<ReassociationIndices>(rank ? 1 : 0, dims);
  };
  if (from.getRank() != 1)
    v = from.getRank() == 0
            ? tensor::ExpandShapeOp::create(b, loc, flat, v, all(0)).getResult()
            : tensor::CollapseShapeOp::create(b, loc, flat, v,
                                              all(from.getRank()))
                  .getResult();
  if (to.getRank() == 1)
    return v;
  if (to.getRank() == 0)
    return tensor::CollapseShapeOp::create(b, loc, to, v, all(0));
  return tensor::ExpandShapeOp::create(b, loc, to, v, all(to.getRank()));
}

/// One collective of the members' inputs, concatenated, where the last one
/// started; its wait where the first member was waited for, each member's
/// result cut back out of it. All-reduces concatenate flat inputs. A
/// reduce_scatter or all_gather over n ranks lays each member out as
/// [n, m] (rank r's chunk in row r) and concatenates along dimension 1, so
/// one collective on dimension 0 moves every member's chunk to its rank.
void emitBucket(MutableArrayRef<Member> members) {
  Operation *last = members.back().start;
  OpBuilder b(last);
  Location loc = last->getLoc();
  MLIRContext *ctx = b.getContext();
  Type element = members.front().type.getElementType();
  // Rows of the concatenated input and of the collective's result.
  int64_t inRows = 1, outRows = 1;
  if (isa<ReduceScatterOp>(last))
    inRows = members.front().type.getDimSize(0) /
             members.front().result.getDimSize(0);
  if (isa<AllGatherOp>(last))
    outRows = members.front().result.getDimSize(0) /
              members.front().type.getDimSize(0);
  // All-reduces concatenate flat vectors; the others [rows, columns].
  bool flat = isa<AllReduceOp>(last);
  auto shaped = [&](int64_t rows, int64_t columns) {
    return flat ? RankedTensorType::get({columns}, element)
                : RankedTensorType::get({rows, columns}, element);
  };
  auto layout = [&](const Member &m, int64_t rows) {
    return shaped(rows, m.type.getNumElements() / inRows);
  };
  auto index = [&](int64_t v) -> OpFoldResult { return b.getIndexAttr(v); };
  // Offsets, sizes and strides of columns [offset, offset + n) of all rows.
  auto columnsOf = [&](int64_t rows, int64_t offset, int64_t n) {
    using Mixed = SmallVector<OpFoldResult>;
    if (flat)
      return std::make_tuple(Mixed{index(offset)}, Mixed{index(n)},
                             Mixed{index(1)});
    return std::make_tuple(Mixed{index(0), index(offset)},
                           Mixed{index(rows), index(n)},
                           Mixed{index(1), index(1)});
  };
  int64_t columns = 0;
  for (Member &m : members)
    columns += m.type.getNumElements() / inRows;
  RankedTensorType inType = shaped(inRows, columns);
  RankedTensorType outType = shaped(outRows, columns);
  Value concat = tensor::EmptyOp::create(b, loc, inType.getShape(), element);
  int64_t offset = 0;
  for (Member &m : members) {
    RankedTensorType pieceType = layout(m, inRows);
    int64_t n = pieceType.getShape().back();
    Value piece = reshape(b, loc, m.start->getOperand(0), m.type, pieceType);
    auto [offsets, sizes, strides] = columnsOf(inRows, offset, n);
    concat = tensor::InsertSliceOp::create(b, loc, piece, concat, offsets,
                                           sizes, strides);
    offset += n;
  }
  FlatSymbolRefAttr mesh =
      onCollective(last, [](auto c) { return c.getMeshAttr(); });
  ArrayRef<int64_t> axes =
      onCollective(last, [](auto c) { return c.getAxes(); });
  Type futureType = FutureType::get(ctx, outType);
  Value future;
  if (auto reduce = dyn_cast<AllReduceOp>(last))
    future = AllReduceOp::create(b, loc, futureType, concat, mesh, axes,
                                 reduce.getKind())
                 .getResult(0);
  else if (auto scatter = dyn_cast<ReduceScatterOp>(last))
    future = ReduceScatterOp::create(b, loc, futureType, concat, mesh, axes,
                                     scatter.getKind(), /*scatterDim=*/0)
                 .getResult(0);
  else
    future = AllGatherOp::create(b, loc, futureType, concat, mesh, axes,
                                 /*gatherDim=*/0)
                 .getResult(0);
  // The first wait of the members.
  WaitOp first = members.front().wait;
  for (Member &m : members)
    if (m.wait->isBeforeInBlock(first))
      first = m.wait;
  b.setInsertionPoint(first);
  Value done = WaitOp::create(b, loc, TypeRange{outType}, ValueRange{future})
                   .getResult(0);
  offset = 0;
  for (Member &m : members) {
    RankedTensorType pieceType = layout(m, outRows);
    int64_t n = pieceType.getShape().back();
    auto [offsets, sizes, strides] = columnsOf(outRows, offset, n);
    Value piece = tensor::ExtractSliceOp::create(b, loc, pieceType, done,
                                                 offsets, sizes, strides);
    offset += n;
    m.wait.getResult(0).replaceAllUsesWith(
        reshape(b, loc, piece, pieceType, m.result));
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
      std::optional<Member> member = asMember(&op);
      if (!member)
        continue;
      Operation *start = &op;
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
        return start->isBeforeInBlock(m.wait);
      });
      if (!bucket.members.empty() && !waitsAfter)
        close(bucket);
      // A reduce_scatter or all_gather of the full budget or more runs
      // alone: its [n, m] stripes in a bucket are no contiguous run of it,
      // so bucketing it costs a copy of its whole size on each side (a
      // gradient cannot be computed into its slot, a gathered parameter is
      // cut back out), for a call it saves.
      // The open bucket stays open for the smaller ones after it.
      if (!isa<AllReduceOp>(start) && member->bytes >= int64_t(bucketBytes))
        continue;
      // As DDP's buckets: a member joins, and the bucket closes once it
      // holds the budget or more (so a bucket can pass its budget by its
      // last member; with budgets below the gradients' sizes, DDP's call
      // count). A bucket closed just now: the next one has the full budget.
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
