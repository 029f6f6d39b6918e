//===- FuseKernels.cpp - fewer, larger GPU kernels ------------------------===//
//
// Every top-level `scf.parallel` of a host function becomes one kernel
// launch. Linalg fusion on tensors leaves many of them apart: a fill and the
// reduction that accumulates into it, elementwise ops whose results have
// several users, and the optimizer's per-parameter updates, which are
// independent of each other. This pass fuses them on buffers, just before the
// GPU mapping: vertically (a loop moved into the start of a later loop over
// the same elements, when each thread only reads back what it wrote itself,
// also through reshapes), horizontally (independent loops as one loop over
// the concatenation of their iteration spaces), by moving a loop up to
// join an earlier one it is independent of, and by giving loops independent
// of a row kernel that kernel's launch (blocks after its rows). Loops move
// only past what
// touches none of their buffers (Footprint.h: the runtime's GEMMs,
// attention and collectives touch the buffers they are given). None of it
// changes any element's arithmetic.
//
//===----------------------------------------------------------------------===//

#include "Footprint.h"
#include "Spmd/Codegen/GPU/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace mlir::spmd {
#define GEN_PASS_DEF_SPMDGPUFUSEKERNELSPASS
#include "Spmd/Codegen/GPU/Passes.h.inc"
} // namespace mlir::spmd

using namespace mlir;

using spmd::BufferAccess;
using spmd::conflict;
using spmd::Footprint;
using spmd::footprintOf;
using spmd::mayAlias;
using spmd::mayOverlap;

namespace {

/// How far back a loop looks for a producer to take in (operations that
/// touch memory: loops, calls, allocations; views and constants are not
/// counted); bounds the pass's cost on long straight-line steps.
constexpr int kVerticalWindow = 128;

/// A loop the pass may fuse: no results, no nested parallel loop, constant
/// bounds and steps, at least one iteration, memory effects all known.
struct Loop {
  scf::ParallelOp op;
  SmallVector<int64_t> lower, upper, step;
  Footprint footprint;

  int64_t trips(unsigned d) const {
    return llvm::divideCeil(upper[d] - lower[d], step[d]);
  }
  int64_t iterations() const {
    int64_t n = 1;
    for (unsigned d = 0; d < lower.size(); ++d)
      n *= trips(d);
    return n;
  }
  /// The dimensions of more than one iteration.
  SmallVector<unsigned> wideDims() const {
    SmallVector<unsigned> dims;
    for (unsigned d = 0; d < lower.size(); ++d)
      if (trips(d) != 1)
        dims.push_back(d);
    return dims;
  }
};

std::optional<Loop> asLoop(Operation *op) {
  auto loop = dyn_cast<scf::ParallelOp>(op);
  if (!loop || loop.getNumResults() != 0 || loop.getInitVals().size() != 0)
    return std::nullopt;
  Loop result{loop, {}, {}, {}, {}};
  for (auto [lb, ub, st] :
       llvm::zip(loop.getLowerBound(), loop.getUpperBound(), loop.getStep())) {
    std::optional<int64_t> l = getConstantIntValue(lb);
    std::optional<int64_t> u = getConstantIntValue(ub);
    std::optional<int64_t> s = getConstantIntValue(st);
    if (!l || !u || !s || *s <= 0 || *u <= *l)
      return std::nullopt;
    result.lower.push_back(*l);
    result.upper.push_back(*u);
    result.step.push_back(*s);
  }
  bool nested = false;
  loop.getBody()->walk([&](scf::ParallelOp) { nested = true; });
  if (nested)
    return std::nullopt;
  result.footprint = footprintOf(loop);
  if (result.footprint.opaque)
    return std::nullopt;
  return result;
}

/// Which element an index of an access inside `loop` names: the iteration
/// of wide dimension `slot`, or a constant.
struct IndexKey {
  bool wide;
  int64_t value;
  bool operator==(const IndexKey &o) const {
    return wide == o.wide && value == o.value;
  }
};

std::optional<IndexKey> keyOf(Value index, const Loop &loop) {
  if (auto arg = dyn_cast<BlockArgument>(index);
      arg &&
      arg.getOwner()->getParentOp() == static_cast<Operation *>(loop.op)) {
    unsigned d = arg.getArgNumber();
    if (loop.trips(d) == 1)
      return IndexKey{false, loop.lower[d]};
    SmallVector<unsigned> wide = loop.wideDims();
    return IndexKey{true, llvm::find(wide, d) - wide.begin()};
  }
  if (std::optional<int64_t> c = getConstantIntValue(index))
    return IndexKey{false, *c};
  return std::nullopt;
}

/// Whether `loop` runs from 0 in steps of 1 in every dimension.
bool unitSteps(const Loop &loop) {
  for (unsigned d = 0; d < loop.lower.size(); ++d)
    if (loop.lower[d] != 0 || loop.step[d] != 1)
      return false;
  return true;
}

/// Whether `access` (in `loop`, from 0 in steps of 1) names element `i` of
/// its buffer's root in row-major order at the loop's `i`th iteration (its
/// wide dimensions row-major): an identity-layout view with one element per
/// iteration, indexed by the wide dimensions in order, size-1 dimensions by
/// 0. So a 16x8 loop storing a gradient and a 128 loop copying its
/// collapse_shape into a bucket meet at the same element.
bool denseAccess(const BufferAccess &access, const Loop &loop) {
  auto type = dyn_cast<MemRefType>(access.buffer.getType());
  if (!access.indexed || !type || !type.hasStaticShape() ||
      !type.getLayout().isIdentity() ||
      type.getNumElements() != loop.iterations())
    return false;
  SmallVector<unsigned> wide = loop.wideDims();
  unsigned next = 0;
  for (auto [index, size] : llvm::zip(access.indices, type.getShape())) {
    std::optional<IndexKey> key = keyOf(index, loop);
    if (!key)
      return false;
    if (!key->wide) {
      if (size != 1)
        return false;
      continue;
    }
    if (key->value != next || size != loop.trips(wide[next]))
      return false;
    ++next;
  }
  return next == wide.size();
}

/// Whether every conflicting pair of accesses of the two loops is a
/// load/store of one memref at the same element (`linear`: of views of one
/// buffer, both dense, and at least one such pair: independent loops of
/// different shapes are left to horizontal fusion), keyed by the loops' wide
/// dimensions.
bool sameElements(const Loop &producer, const Loop &consumer, bool linear) {
  bool shared = false;
  for (const BufferAccess &x : producer.footprint.accesses)
    for (const BufferAccess &y : consumer.footprint.accesses) {
      if (!(x.write || y.write) || !mayAlias(x.root, y.root))
        continue;
      // Disjoint slices of one buffer (two gradients' places in a bucket)
      // are not shared.
      if (spmd::sameRoot(x.root, y.root) && !mayOverlap(x.buffer, y.buffer))
        continue;
      shared = true;
      if (linear) {
        if (!spmd::sameRoot(x.root, y.root) || !denseAccess(x, producer) ||
            !denseAccess(y, consumer))
          return false;
        continue;
      }
      if (!x.indexed || !y.indexed || x.buffer != y.buffer ||
          x.indices.size() != y.indices.size())
        return false;
      for (auto [i, j] : llvm::zip(x.indices, y.indices)) {
        std::optional<IndexKey> ki = keyOf(i, producer);
        std::optional<IndexKey> kj = keyOf(j, consumer);
        if (!ki || !kj || !(*ki == *kj))
          return false;
      }
    }
  return shared || !linear;
}

/// Whether the two loops have the same wide iteration space.
bool sameSpace(const Loop &producer, const Loop &consumer) {
  SmallVector<unsigned> pw = producer.wideDims(), cw = consumer.wideDims();
  if (pw.size() != cw.size())
    return false;
  for (auto [p, c] : llvm::zip(pw, cw))
    if (producer.lower[p] != consumer.lower[c] ||
        producer.upper[p] != consumer.upper[c] ||
        producer.step[p] != consumer.step[c])
      return false;
  return true;
}

/// How `producer`'s body can run at the start of each iteration of
/// `consumer`, each thread only reading back what it wrote itself: over the
/// same wide iteration space, or over the same number of iterations when
/// everything they share is dense (the producer's induction variables then
/// delinearized from the consumer's iteration).
enum class Vertical { None, SameSpace, Linear };

Vertical canFuseVertically(const Loop &producer, const Loop &consumer) {
  if (sameSpace(producer, consumer) &&
      sameElements(producer, consumer, /*linear=*/false))
    return Vertical::SameSpace;
  // Over the same space too when the elements they share are named through
  // different views of one buffer (a 1x16 column sum and the 16-element
  // collapse_shape of it that is copied into a bucket).
  if (producer.iterations() == consumer.iterations() && unitSteps(producer) &&
      unitSteps(consumer) && sameElements(producer, consumer, /*linear=*/true))
    return Vertical::Linear;
  return Vertical::None;
}

/// Clones `producer`'s body at the start of `consumer`'s, its wide induction
/// variables replaced by the consumer's (or, `Linear`, by the consumer's
/// iteration delinearized over the producer's wide dimensions) and the
/// others by their only value.
void fuseVertically(Loop &producer, Loop &consumer, Vertical how) {
  Block *body = consumer.op.getBody();
  OpBuilder b(body, body->begin());
  Location loc = producer.op.getLoc();
  SmallVector<unsigned> pw = producer.wideDims(), cw = consumer.wideDims();
  auto index = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  SmallVector<Value> wideIvs(pw.size());
  if (how == Vertical::SameSpace) {
    for (unsigned k = 0; k < pw.size(); ++k)
      wideIvs[k] = consumer.op.getInductionVars()[cw[k]];
  } else {
    Value linear;
    for (unsigned c : cw) {
      Value iv = consumer.op.getInductionVars()[c];
      linear = linear ? arith::AddIOp::create(
                            b, loc,
                            arith::MulIOp::create(b, loc, linear,
                                                  index(consumer.trips(c))),
                            iv)
                      : iv;
    }
    for (int k = int(pw.size()) - 1; k >= 0; --k) {
      if (k == 0) {
        wideIvs[k] = linear;
        break;
      }
      Value trips = index(producer.trips(pw[k]));
      wideIvs[k] = arith::RemUIOp::create(b, loc, linear, trips);
      linear = arith::DivUIOp::create(b, loc, linear, trips);
    }
  }
  IRMapping map;
  for (unsigned d = 0; d < producer.lower.size(); ++d) {
    Value iv = producer.op.getInductionVars()[d];
    auto it = llvm::find(pw, d);
    if (it != pw.end())
      map.map(iv, wideIvs[it - pw.begin()]);
    else
      map.map(iv, index(producer.lower[d]));
  }
  for (Operation &op : producer.op.getBody()->without_terminator())
    b.clone(op, map);
  producer.op->erase();
  consumer.footprint = footprintOf(consumer.op);
}

/// The members' bodies as one 1-D loop over the sum of their iteration
/// counts, placed where the last member was.
scf::ParallelOp fuseHorizontally(MutableArrayRef<Loop> members) {
  scf::ParallelOp last = members.back().op;
  OpBuilder b(last);
  SmallVector<Location> locs;
  SmallVector<int64_t> ends;
  int64_t total = 0;
  for (Loop &member : members) {
    locs.push_back(member.op.getLoc());
    total += member.iterations();
    ends.push_back(total);
  }
  Location loc = b.getFusedLoc(locs);
  auto index = [&](OpBuilder &nb, int64_t v) -> Value {
    return arith::ConstantIndexOp::create(nb, loc, v);
  };
  // Member k's body for linear index `i` (ends[k - 1] <= i < ends[k]).
  auto emitMember = [&](OpBuilder &nb, Value i, unsigned k) {
    Loop &member = members[k];
    int64_t start = k == 0 ? 0 : ends[k - 1];
    Value rest =
        start == 0 ? i : arith::SubIOp::create(nb, loc, i, index(nb, start));
    IRMapping map;
    unsigned rank = member.lower.size();
    for (int d = rank - 1; d >= 0; --d) {
      int64_t n = member.trips(d);
      Value position;
      if (n == 1) {
        position = index(nb, 0);
      } else if (d == 0) {
        position = rest;
      } else {
        position = arith::RemUIOp::create(nb, loc, rest, index(nb, n));
        rest = arith::DivUIOp::create(nb, loc, rest, index(nb, n));
      }
      Value iv = position;
      if (member.step[d] != 1)
        iv = arith::MulIOp::create(nb, loc, iv, index(nb, member.step[d]));
      if (member.lower[d] != 0)
        iv = arith::AddIOp::create(nb, loc, iv, index(nb, member.lower[d]));
      map.map(member.op.getInductionVars()[d], iv);
    }
    for (Operation &op : member.op.getBody()->without_terminator())
      nb.clone(op, map);
  };
  // A balanced tree of scf.if on the linear index picks the member.
  std::function<void(OpBuilder &, Value, unsigned, unsigned)> dispatch =
      [&](OpBuilder &nb, Value i, unsigned lo, unsigned hi) {
        if (hi - lo == 1)
          return emitMember(nb, i, lo);
        unsigned mid = (lo + hi) / 2;
        Value first = arith::CmpIOp::create(nb, loc, arith::CmpIPredicate::ult,
                                            i, index(nb, ends[mid - 1]));
        scf::IfOp::create(
            nb, loc, first,
            [&](OpBuilder &tb, Location) {
              dispatch(tb, i, lo, mid);
              scf::YieldOp::create(tb, loc);
            },
            [&](OpBuilder &eb, Location) {
              dispatch(eb, i, mid, hi);
              scf::YieldOp::create(eb, loc);
            });
      };
  auto fused = scf::ParallelOp::create(
      b, loc, ValueRange{index(b, 0)}, ValueRange{index(b, total)},
      ValueRange{index(b, 1)}, [&](OpBuilder &nb, Location, ValueRange ivs) {
        dispatch(nb, ivs.front(), 0, members.size());
      });
  for (Loop &member : members)
    member.op->erase();
  return fused;
}

/// Moves each loop into the nearest earlier loop that can start it, when
/// nothing in between touches what the earlier one touches.
void fuseBlockVertically(Block &block) {
  SmallVector<Operation *> ops;
  for (Operation &op : block)
    ops.push_back(&op);
  DenseMap<Operation *, Loop> loops;
  for (Operation *op : ops)
    if (std::optional<Loop> loop = asLoop(op))
      loops.try_emplace(op, std::move(*loop));
  DenseSet<Operation *> erased;
  for (unsigned k = 0; k < ops.size(); ++k) {
    auto consumer = loops.find(ops[k]);
    if (consumer == loops.end())
      continue;
    Footprint between;
    int seen = 0;
    for (int j = int(k) - 1; j >= 0 && seen < kVerticalWindow; --j) {
      if (erased.contains(ops[j]))
        continue;
      if (!isMemoryEffectFree(ops[j]))
        ++seen;
      auto producer = loops.find(ops[j]);
      Vertical how = producer != loops.end() &&
                             !conflict(producer->second.footprint, between)
                         ? canFuseVertically(producer->second, consumer->second)
                         : Vertical::None;
      if (how != Vertical::None) {
        fuseVertically(producer->second, consumer->second, how);
        erased.insert(ops[j]);
        loops.erase(producer);
        // The consumer may now take in an earlier producer too.
        between = Footprint();
        seen = 0;
        j = int(k);
        continue;
      }
      Footprint f = producer != loops.end() ? producer->second.footprint
                                            : footprintOf(ops[j]);
      if (f.opaque)
        break;
      between.add(f);
    }
  }
}

/// Groups consecutive independent loops and fuses each group into one.
void fuseBlockHorizontally(Block &block) {
  SmallVector<Operation *> ops;
  for (Operation &op : block)
    ops.push_back(&op);
  SmallVector<Loop, 8> group;
  Footprint groupFootprint;
  auto flush = [&]() {
    if (group.size() > 1)
      fuseHorizontally(group);
    group.clear();
    groupFootprint = Footprint();
  };
  for (Operation *op : ops) {
    if (std::optional<Loop> loop = asLoop(op)) {
      if (conflict(groupFootprint, loop->footprint))
        flush();
      groupFootprint.add(loop->footprint);
      group.push_back(std::move(*loop));
      continue;
    }
    Footprint f = footprintOf(op);
    if (f.touchesMemory() && conflict(groupFootprint, f))
      flush();
  }
  flush();
}

/// Moves a loop up to join the earliest loop it can run next to (a count
/// of the targets, which only reads an input, into the step's first
/// kernel; the optimizer's step counters likewise), when nothing in between
/// touches what it touches; the values it uses (buffers, their views,
/// constants) move with it.
void joinEarlierLoops(Block &block) {
  DenseMap<Operation *, Footprint> footprints;
  auto footprint = [&](Operation *op) -> const Footprint & {
    auto it = footprints.find(op);
    if (it == footprints.end())
      it = footprints.try_emplace(op, footprintOf(op)).first;
    return it->second;
  };
  // Loops before `resume` have been tried and stay where they are: what
  // lies before them has not changed.
  Operation *resume = &block.front();
  while (resume) {
    SmallVector<Operation *> ops;
    for (Operation &op : block)
      ops.push_back(&op);
    unsigned k = llvm::find(ops, resume) - ops.begin();
    resume = nullptr;
    for (; k < ops.size() && !resume; ++k) {
      std::optional<Loop> loop = asLoop(ops[k]);
      if (!loop)
        continue;
      // The earliest loop the upward scan passes.
      Operation *target = nullptr;
      for (int j = int(k) - 1; j >= 0; --j) {
        Operation *op = ops[j];
        const Footprint &f = footprint(op);
        if (f.opaque || conflict(f, loop->footprint))
          break;
        bool uses = llvm::any_of(op->getResults(), [&](Value v) {
          return llvm::any_of(v.getUsers(), [&](Operation *user) {
            return loop->op->isAncestor(user);
          });
        });
        if (uses && !spmd::movableDefinition(op))
          break;
        if (isa<scf::ParallelOp>(op))
          target = op;
      }
      std::optional<Loop> earlier = target ? asLoop(target) : std::nullopt;
      if (!earlier)
        continue;
      std::optional<SmallVector<Operation *>> defs =
          spmd::definitionsAfter(target, loop->op);
      if (!defs)
        continue;
      Operation *after = target;
      for (Operation *def : *defs) {
        def->moveAfter(after);
        after = def;
      }
      loop->op->moveAfter(after);
      // One loop where the moved one now is (after the values it uses).
      SmallVector<Loop, 2> pair = {std::move(*earlier), std::move(*loop)};
      footprints.erase(pair[0].op);
      footprints.erase(pair[1].op);
      resume = fuseHorizontally(pair);
    }
  }
}

/// A row kernel (spmd-gpu-row-kernels: R blocks of one warp, block b
/// computing row b) whose launch does not depend on its grid's size.
std::optional<std::pair<int64_t, int64_t>>
rowKernelShape(gpu::LaunchOp launch) {
  if (!launch.getAsyncDependencies().empty() || launch.getAsyncToken() ||
      launch.getClusterSizeOperandValues() ||
      launch.getDynamicSharedMemorySize())
    return std::nullopt;
  gpu::KernelDim3 grid = launch.getGridSizeOperandValues();
  gpu::KernelDim3 threads = launch.getBlockSizeOperandValues();
  std::optional<int64_t> rows = getConstantIntValue(grid.x);
  std::optional<int64_t> width = getConstantIntValue(threads.x);
  for (Value one : {grid.y, grid.z, threads.y, threads.z})
    if (getConstantIntValue(one) != 1)
      return std::nullopt;
  if (!rows || !width || *rows < 1 || *width < 1)
    return std::nullopt;
  // Its only writes are stores (which the added blocks skip). An index
  // check (a gather's bounds: its modelled write is no buffer's) holds in
  // the added blocks too, which check the last row's indices again.
  bool otherWrites = false;
  launch.getBody().walk([&](Operation *op) {
    auto effects = dyn_cast<MemoryEffectOpInterface>(op);
    if (effects && !isa<memref::StoreOp, cf::AssertOp>(op) &&
        effects.hasEffect<MemoryEffects::Write>())
      otherWrites = true;
  });
  if (otherWrites)
    return std::nullopt;
  gpu::KernelDim3 size = launch.getGridSize();
  gpu::KernelDim3 blockIds = launch.getBlockIds();
  for (Value v : {size.x, size.y, size.z, blockIds.y, blockIds.z})
    if (!v.use_empty())
      return std::nullopt;
  return std::make_pair(*rows, *width);
}

/// Runs `loop` (one dimension, from 0 in steps of 1) in the blocks added
/// after `launch`'s rows: block rows + k, thread t runs iteration
/// k * width + t. The row part stays straight-line code for every block
/// (its warp shuffles may not sit in a branch: the emulator runs a kernel
/// phase by phase between them): the added blocks compute the last row
/// again with their stores skipped.
void appendLoopBlocks(gpu::LaunchOp launch, int64_t rows, int64_t width,
                      Loop &loop) {
  Location loc = loop.op.getLoc();
  int64_t iterations = loop.iterations();
  OpBuilder b(launch);
  launch.getGridSizeXMutable().assign(arith::ConstantIndexOp::create(
      b, loc, rows + llvm::divideCeil(iterations, width)));
  Block &body = launch.getBody().front();
  auto index = [&](OpBuilder &nb, int64_t v) -> Value {
    return arith::ConstantIndexOp::create(nb, loc, v);
  };
  SmallVector<memref::StoreOp> stores;
  body.walk([&](memref::StoreOp store) { stores.push_back(store); });
  OpBuilder kb = OpBuilder::atBlockBegin(&body);
  Value block = launch.getBlockIds().x, thread = launch.getThreadIds().x;
  auto rowBlock = arith::MinUIOp::create(kb, loc, block, index(kb, rows - 1));
  block.replaceAllUsesExcept(rowBlock, rowBlock);
  Value isRow = arith::CmpIOp::create(kb, loc, arith::CmpIPredicate::ult, block,
                                      index(kb, rows));
  for (memref::StoreOp store : stores) {
    OpBuilder sb(store);
    auto guard = scf::IfOp::create(sb, loc, isRow, /*withElseRegion=*/false);
    store->moveBefore(guard.thenBlock()->getTerminator());
  }
  OpBuilder eb(body.getTerminator());
  Value isLoop = arith::CmpIOp::create(eb, loc, arith::CmpIPredicate::uge,
                                       block, index(eb, rows));
  auto choice = scf::IfOp::create(eb, loc, isLoop, /*withElseRegion=*/false);
  OpBuilder lb(choice.thenBlock()->getTerminator());
  Value i = arith::AddIOp::create(
      lb, loc,
      arith::MulIOp::create(
          lb, loc, arith::SubIOp::create(lb, loc, block, index(lb, rows)),
          index(lb, width)),
      thread);
  Value inRange = arith::CmpIOp::create(lb, loc, arith::CmpIPredicate::ult, i,
                                        index(lb, iterations));
  auto guard = scf::IfOp::create(lb, loc, inRange, /*withElseRegion=*/false);
  OpBuilder gb(guard.thenBlock()->getTerminator());
  IRMapping map;
  map.map(loop.op.getInductionVars().front(), i);
  for (Operation &op : loop.op.getBody()->without_terminator())
    gb.clone(op, map);
  loop.op->erase();
}

/// The nearest loop before (`before`) or after `launch` that may join it:
/// independent of the kernel and of the loops already `chosen`, and nothing
/// between it and the kernel touches what it touches (after the kernel,
/// its definitions there can move up too). Loops already chosen are passed.
std::optional<Loop> joiningNeighbour(gpu::LaunchOp launch,
                                     const Footprint &kernel,
                                     const Footprint &chosen,
                                     const DenseSet<Operation *> &taken,
                                     bool before) {
  Footprint between;
  int seen = 0;
  for (Operation *op = before ? launch->getPrevNode() : launch->getNextNode();
       op && seen < kVerticalWindow;
       op = before ? op->getPrevNode() : op->getNextNode()) {
    if (taken.contains(op))
      continue;
    std::optional<Loop> loop = asLoop(op);
    if (loop && !conflict(kernel, loop->footprint) &&
        !conflict(chosen, loop->footprint) &&
        !conflict(between, loop->footprint) &&
        (before || spmd::definitionsAfter(launch, op)))
      return loop;
    Footprint f = loop ? loop->footprint : footprintOf(op);
    if (f.opaque)
      return std::nullopt;
    if (f.touchesMemory())
      ++seen;
    between.add(f);
  }
  return std::nullopt;
}

/// Loops near a row kernel that are independent of it (a bias gradient's
/// column sum beside LayerNorm's backward, the optimizer's step counters)
/// join its launch as blocks after the rows: one kernel instead of several.
/// A loop moves to the kernel only past what touches none of its buffers;
/// its definitions after the kernel move up with it. A kernel takes loops
/// once (`extended`).
void loopsIntoRowKernels(Block &block, DenseSet<Operation *> &extended) {
  SmallVector<gpu::LaunchOp> launches;
  for (Operation &op : block)
    if (auto launch = dyn_cast<gpu::LaunchOp>(op))
      launches.push_back(launch);
  for (gpu::LaunchOp launch : launches) {
    std::optional<std::pair<int64_t, int64_t>> shape = rowKernelShape(launch);
    if (!shape || extended.contains(launch))
      continue;
    Footprint kernel = footprintOf(launch);
    if (kernel.opaque)
      continue;
    // Gather the loops next to the kernel, then run them as one.
    SmallVector<Loop, 4> chosen;
    Footprint chosenFootprint;
    DenseSet<Operation *> taken;
    while (true) {
      bool before = true;
      std::optional<Loop> loop =
          joiningNeighbour(launch, kernel, chosenFootprint, taken, before);
      if (!loop) {
        before = false;
        loop = joiningNeighbour(launch, kernel, chosenFootprint, taken, before);
      }
      if (!loop)
        break;
      if (before) {
        loop->op->moveBefore(launch);
      } else {
        std::optional<SmallVector<Operation *>> defs =
            spmd::definitionsAfter(launch, loop->op);
        for (Operation *def : *defs)
          def->moveBefore(launch);
        loop->op->moveAfter(launch);
      }
      taken.insert(loop->op);
      chosenFootprint.add(loop->footprint);
      chosen.push_back(std::move(*loop));
    }
    if (chosen.empty())
      continue;
    // In block order: the one loop is made where the last was, after
    // every value the loops use.
    llvm::sort(chosen, [](const Loop &x, const Loop &y) {
      return x.op->isBeforeInBlock(y.op);
    });
    std::optional<Loop> flat = asLoop(fuseHorizontally(chosen));
    if (!flat)
      continue;
    appendLoopBlocks(launch, shape->first, shape->second, *flat);
    extended.insert(launch);
  }
}

struct SpmdGpuFuseKernelsPass
    : public spmd::impl::SpmdGpuFuseKernelsPassBase<SpmdGpuFuseKernelsPass> {
  void runOnOperation() override {
    for (Block &block : getOperation().getBody()) {
      fuseBlockVertically(block);
      DenseSet<Operation *> extended;
      loopsIntoRowKernels(block, extended);
      joinEarlierLoops(block);
      fuseBlockHorizontally(block);
      loopsIntoRowKernels(block, extended);
    }
  }
};

} // namespace
