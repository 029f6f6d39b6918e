//===- RowKernels.cpp - a warp per row: reductions with their neighbours --===//
//
// Softmax, LayerNorm and cross-entropy are chains of linalg ops over the
// same rows: elementwise, a row reduction, elementwise reading the reduced
// value, another reduction... Lowered one op at a time, each is a kernel,
// and each reduction runs one thread per row with a serial loop over it
// (neighbouring threads reading addresses a row apart). This pass gives such
// a chain one kernel with one warp per row: the 32 lanes stride over the
// row (neighbouring lanes, neighbouring elements), each reduction combines
// the lanes' partial results with a butterfly of `gpu.shuffle xor` (every
// lane ends with the row's value, kept in a register for the ops after),
// and lane 0 stores it.
//
//===----------------------------------------------------------------------===//

#include "Footprint.h"
#include "Spmd/Codegen/FullReduction.h"
#include "Spmd/Codegen/GPU/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::spmd {
#define GEN_PASS_DEF_SPMDGPUROWKERNELSPASS
#include "Spmd/Codegen/GPU/Passes.h.inc"
} // namespace mlir::spmd

using namespace mlir;
using spmd::mayAlias;
using spmd::rootOf;

namespace {

constexpr int64_t kWarp = 32;

/// A linalg.generic on static buffers over loops (rows..., column) that is
/// elementwise (all parallel) or reduces the column (last loop) with a
/// one-op f32 combiner; indexing maps of loop dimensions and constants only.
struct RowOp {
  linalg::GenericOp op;
  bool reduction = false;
  /// Elementwise over the rows only (the column loop of one iteration):
  /// every lane computes it, lane 0 stores.
  bool perRow = false;
  /// For a reduction: the combiner op, the value it combines into the
  /// accumulator, and its identity.
  Operation *combiner = nullptr;
  Value element;
  TypedAttr identity;
  /// A linalg.fill of the reduction's output just before it: the initial
  /// value, and the fill is dropped.
  linalg::FillOp fill;
};

bool simpleMap(AffineMap map) {
  if (map.getNumSymbols() != 0)
    return false;
  for (AffineExpr e : map.getResults()) {
    if (isa<AffineDimExpr>(e))
      continue;
    auto c = dyn_cast<AffineConstantExpr>(e);
    if (!c || c.getValue() != 0)
      return false;
  }
  return true;
}

/// Whether `map` names each loop dimension once, in order (so that each
/// iteration writes its own element).
bool coversLoops(AffineMap map) {
  unsigned next = 0;
  for (AffineExpr e : map.getResults())
    if (auto d = dyn_cast<AffineDimExpr>(e)) {
      if (d.getPosition() != next)
        return false;
      ++next;
    }
  return next == map.getNumDims();
}

std::optional<RowOp> asRowOp(Operation *operation) {
  auto op = dyn_cast<linalg::GenericOp>(operation);
  if (!op || !op.hasPureBufferSemantics() || op.getNumLoops() == 0)
    return std::nullopt;
  for (Value v : op->getOperands()) {
    auto type = dyn_cast<MemRefType>(v.getType());
    if (!type || !type.hasStaticShape())
      return std::nullopt;
  }
  for (AffineMap map : op.getIndexingMapsArray())
    if (!simpleMap(map))
      return std::nullopt;
  // Rows and a column: a reduction of everything is spmd-gpu-serial-kernels'
  // (strided stages over the whole buffer, not one warp).
  unsigned n = op.getNumLoops();
  if (n < 2)
    return std::nullopt;
  auto iterators = op.getIteratorTypesArray();
  for (unsigned d = 0; d + 1 < n; ++d)
    if (iterators[d] != utils::IteratorType::parallel)
      return std::nullopt;
  // Nothing in the body but arithmetic, linalg.index, loads (a gather's;
  // any element of the buffer, for the group's checks) and index checks.
  for (Operation &inner : op.getRegion().front().without_terminator())
    if (!isa<linalg::IndexOp, memref::LoadOp, cf::AssertOp>(inner) &&
        !isMemoryEffectFree(&inner))
      return std::nullopt;
  RowOp row;
  row.op = op;
  if (iterators[n - 1] == utils::IteratorType::parallel) {
    for (OpOperand &init : op.getDpsInitsMutable())
      if (!coversLoops(op.getMatchingIndexingMap(&init)))
        return std::nullopt;
    row.perRow = op.getStaticLoopRanges().back() == 1;
    // Every lane computes an op over the rows and lane 0 stores it: one
    // that reads what it writes (in place) would race with that store.
    if (row.perRow)
      for (OpOperand &init : op.getDpsInitsMutable()) {
        if (op.payloadUsesValueFromOperand(&init))
          return std::nullopt;
        for (OpOperand *in : op.getDpsInputOperands())
          if (mayAlias(rootOf(in->get()), rootOf(init.get())))
            return std::nullopt;
      }
    return row;
  }
  // A reduction of the column: one f32 or f64 output of the rows.
  if (op.getNumDpsInits() != 1)
    return std::nullopt;
  OpOperand &init = op.getDpsInitsMutable()[0];
  AffineMap outMap = op.getMatchingIndexingMap(&init);
  if (outMap.isFunctionOfDim(n - 1) ||
      outMap.getNumResults() -
              llvm::count_if(outMap.getResults(),
                             llvm::IsaPred<AffineConstantExpr>) !=
          n - 1)
    return std::nullopt;
  Block &body = op.getRegion().front();
  BlockArgument acc = op.getMatchingBlockArgument(&init);
  if (!(acc.getType().isF32() || acc.getType().isF64()) || !acc.hasOneUse())
    return std::nullopt;
  Operation *combiner = *acc.getUsers().begin();
  if (combiner->getNumOperands() != 2 || combiner->getNumResults() != 1 ||
      !combiner->getResult(0).hasOneUse() ||
      body.getTerminator()->getOperand(0) != combiner->getResult(0))
    return std::nullopt;
  TypedAttr identity = spmd::combinerIdentity(combiner, acc.getType());
  if (!identity)
    return std::nullopt;
  Value element = combiner->getOperand(0) == acc ? combiner->getOperand(1)
                                                 : combiner->getOperand(0);
  if (element == acc)
    return std::nullopt;
  row.reduction = true;
  row.combiner = combiner;
  row.element = element;
  row.identity = identity;
  return row;
}

/// Which element of a buffer an access names, for the group: `row` when it
/// depends on the row only (then `key` holds, per result, the row loop it
/// reads or -1 for index 0), else the column access's map.
struct Access {
  Value buffer;
  AffineMap map;
  bool write;
  bool row;
  SmallVector<int64_t> key;
  /// A row access naming element `row` of its root in row-major order (an
  /// identity-layout view holding one element per row: a 24-element
  /// reduction result and its 24x1 expand_shape, or a 4x6x1 one), so that
  /// views of one buffer in different shapes name the same row's element.
  bool linear = false;
};

/// Whether `map` (a row access of an op over `ranges`) names element `r` of
/// `buffer`, `r` the row-major index of the op's row loops: an identity
/// layout with one element per row, the row loops in order in the results,
/// the other results constant dimensions of size 1.
bool rowMajorRow(Value buffer, AffineMap map, ArrayRef<int64_t> ranges) {
  auto type = dyn_cast<MemRefType>(buffer.getType());
  if (!type || !type.hasStaticShape() || !type.getLayout().isIdentity())
    return false;
  unsigned column = ranges.size() - 1;
  int64_t rows = 1;
  for (unsigned d = 0; d < column; ++d)
    rows *= ranges[d];
  if (type.getNumElements() != rows)
    return false;
  int next = 0;
  for (auto [e, size] : llvm::zip(map.getResults(), type.getShape())) {
    auto d = dyn_cast<AffineDimExpr>(e);
    if (!d || d.getPosition() == column) {
      if (size != 1)
        return false;
      continue;
    }
    // Row loops of one iteration may appear anywhere (index 0 either way).
    if (ranges[d.getPosition()] == 1 && size == 1)
      continue;
    if (int(d.getPosition()) < next || size != ranges[d.getPosition()])
      return false;
    // Every row loop of more than one iteration, in order.
    for (int skipped = next; skipped < int(d.getPosition()); ++skipped)
      if (ranges[skipped] != 1)
        return false;
    next = d.getPosition() + 1;
  }
  for (unsigned d = next; d < column; ++d)
    if (ranges[d] != 1)
      return false;
  return true;
}

Access accessOf(linalg::GenericOp op, OpOperand &operand, bool write) {
  AffineMap map = op.getMatchingIndexingMap(&operand);
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  unsigned column = ranges.size() - 1;
  Access access{operand.get(), map, write, true, {}};
  for (AffineExpr e : map.getResults()) {
    auto d = dyn_cast<AffineDimExpr>(e);
    if (!d || (d.getPosition() == column && ranges[column] == 1)) {
      access.key.push_back(-1);
      continue;
    }
    if (d.getPosition() == column) {
      access.row = false;
      access.key.clear();
      return access;
    }
    access.key.push_back(d.getPosition());
  }
  access.linear = rowMajorRow(access.buffer, map, ranges);
  return access;
}

SmallVector<Access> accessesOf(const RowOp &row) {
  SmallVector<Access> out;
  linalg::GenericOp op = row.op;
  for (OpOperand *in : op.getDpsInputOperands())
    out.push_back(accessOf(op, *in, false));
  for (OpOperand &init : op.getDpsInitsMutable()) {
    if (op.payloadUsesValueFromOperand(&init) && !row.reduction)
      out.push_back(accessOf(op, init, false));
    out.push_back(accessOf(op, init, true));
  }
  // A load in the body may read any element: no map, so that a member
  // writing an aliasing buffer keeps it out of the group.
  op.getRegion().walk([&](memref::LoadOp load) {
    out.push_back({load.getMemRef(), AffineMap(), false, false, {}});
  });
  return out;
}

/// Whether two column accesses name the same element for the same row and
/// column of the kernel: identity maps over views of one buffer that cover
/// the same elements in row-major order (a 24x8 result and its 4x6x8
/// expand_shape), rows and columns agreeing as the group requires.
bool sameRowMajorElements(const Access &x, const Access &y) {
  auto identity = [](const Access &a) {
    auto type = dyn_cast<MemRefType>(a.buffer.getType());
    return a.map && a.map.isIdentity() && type && type.getLayout().isIdentity();
  };
  if (!identity(x) || !identity(y) ||
      !spmd::sameRoot(rootOf(x.buffer), rootOf(y.buffer)))
    return false;
  auto ex = spmd::staticExtent(x.buffer), ey = spmd::staticExtent(y.buffer);
  return ex && ey && *ex == *ey;
}

/// Whether `next` can join `group` (already legal): what it touches that
/// a member wrote, or writes what a member touched, is the same element in
/// the same lane (same buffer and map, naming the column), or a row value a
/// member computed (every lane holds it in a register) read after.
bool canJoin(ArrayRef<RowOp> group, const RowOp &next) {
  for (const RowOp &member : group)
    for (const Access &x : accessesOf(member))
      for (const Access &y : accessesOf(next)) {
        if (!(x.write || y.write) ||
            !mayAlias(rootOf(x.buffer), rootOf(y.buffer)))
          continue;
        if (!x.row && !y.row && sameRowMajorElements(x, y))
          continue;
        // One row's value through two views: a member computed it (every
        // lane holds it), the newcomer reads it.
        if (x.linear && y.linear &&
            spmd::sameRoot(rootOf(x.buffer), rootOf(y.buffer))) {
          if (!x.write || y.write)
            return false;
          continue;
        }
        if (x.buffer != y.buffer || x.row != y.row)
          return false;
        if (!x.row) {
          if (x.map != y.map)
            return false;
          continue;
        }
        if (x.key != y.key || !x.write || y.write)
          return false;
      }
  return true;
}

/// The indices of `map` at loop values `ivs`.
SmallVector<Value> indicesAt(OpBuilder &b, Location loc, AffineMap map,
                             ArrayRef<Value> ivs) {
  SmallVector<Value> indices;
  for (AffineExpr e : map.getResults())
    if (auto d = dyn_cast<AffineDimExpr>(e))
      indices.push_back(ivs[d.getPosition()]);
    else
      indices.push_back(arith::ConstantIndexOp::create(b, loc, 0));
  return indices;
}

/// Row values computed in the kernel, by buffer and row key: every lane
/// holds them.
using RegisterKey = std::pair<const void *, SmallVector<int64_t>>;
using Registers = std::map<RegisterKey, Value>;

RegisterKey registerKey(const Access &a) {
  // A row-major row element is the same register whichever view names it.
  if (a.linear)
    return {rootOf(a.buffer).key, {-2}};
  return {a.buffer.getAsOpaquePointer(), a.key};
}

/// Maps the member's block arguments to loaded values (or registers) and
/// clones its body except what `skip` names; returns the mapping.
IRMapping emitBody(OpBuilder &b, Location loc, const RowOp &row,
                   ArrayRef<Value> ivs, const Registers &registers,
                   Operation *skip) {
  linalg::GenericOp op = row.op;
  IRMapping map;
  for (OpOperand &operand : op->getOpOperands()) {
    bool isInit = op.isDpsInit(&operand);
    if (isInit && (row.reduction || !op.payloadUsesValueFromOperand(&operand)))
      continue;
    AffineMap m = op.getMatchingIndexingMap(&operand);
    Access access = accessOf(op, operand, false);
    Value value;
    auto it =
        access.row ? registers.find(registerKey(access)) : registers.end();
    if (it != registers.end())
      value = it->second;
    else
      value = memref::LoadOp::create(b, loc, operand.get(),
                                     indicesAt(b, loc, m, ivs));
    map.map(op.getMatchingBlockArgument(&operand), value);
  }
  for (Operation &inner : op.getRegion().front().without_terminator()) {
    if (&inner == skip)
      continue;
    if (auto index = dyn_cast<linalg::IndexOp>(inner)) {
      map.map(index.getResult(), ivs[index.getDim()]);
      continue;
    }
    b.clone(inner, map);
  }
  return map;
}

/// The reduction's combiner applied to an element and an accumulator.
Value combine(OpBuilder &b, const RowOp &row, Value element, Value acc) {
  IRMapping map;
  for (Value operand : row.combiner->getOperands())
    map.map(operand, operand == row.element ? element : acc);
  return b.clone(*row.combiner, map)->getResult(0);
}

/// Stores the member's yielded values (computed with `map`) at `ivs`;
/// returns them by output.
SmallVector<Value> storeResults(OpBuilder &b, Location loc,
                                linalg::GenericOp op, const IRMapping &map,
                                ArrayRef<Value> ivs) {
  auto yield = cast<linalg::YieldOp>(op.getRegion().front().getTerminator());
  SmallVector<Value> results;
  for (auto [init, value] :
       llvm::zip(op.getDpsInitsMutable(), yield.getOperands())) {
    Value result = map.lookupOrDefault(value);
    memref::StoreOp::create(
        b, loc, result, init.get(),
        indicesAt(b, loc, op.getMatchingIndexingMap(&init), ivs));
    results.push_back(result);
  }
  return results;
}

/// `value` from lane `lane ^ offset` of the warp. An f64 travels as two
/// 32-bit shuffles (its halves), which every GPU has.
Value shuffleXor(OpBuilder &b, Location loc, Value value, int32_t offset) {
  auto shuffle = [&](Value v) {
    return gpu::ShuffleOp::create(b, loc, v, offset, kWarp,
                                  gpu::ShuffleMode::XOR)
        .getShuffleResult();
  };
  if (!value.getType().isF64())
    return shuffle(value);
  Type i32 = b.getI32Type(), i64 = b.getI64Type();
  Value bits = arith::BitcastOp::create(b, loc, i64, value);
  Value c32 = arith::ConstantIntOp::create(b, loc, i64, 32);
  Value low = shuffle(arith::TruncIOp::create(b, loc, i32, bits));
  Value high = shuffle(arith::TruncIOp::create(
      b, loc, i32, arith::ShRUIOp::create(b, loc, bits, c32)));
  Value joined = arith::OrIOp::create(
      b, loc, arith::ExtUIOp::create(b, loc, i64, low),
      arith::ShLIOp::create(b, loc, arith::ExtUIOp::create(b, loc, i64, high),
                            c32));
  return arith::BitcastOp::create(b, loc, value.getType(), joined);
}

/// The group as one kernel of a warp per row, where the last member was.
gpu::LaunchOp emitKernel(MutableArrayRef<RowOp> group) {
  linalg::GenericOp last = group.back().op;
  OpBuilder b(last);
  SmallVector<Location> locs;
  for (RowOp &row : group)
    locs.push_back(row.op.getLoc());
  Location loc = b.getFusedLoc(locs);
  SmallVector<int64_t> ranges = last.getStaticLoopRanges();
  int64_t columns = 1;
  for (RowOp &row : group)
    columns = std::max(columns, row.op.getStaticLoopRanges().back());
  int64_t rows = 1;
  for (unsigned d = 0; d + 1 < ranges.size(); ++d)
    rows *= ranges[d];
  auto index = [&](OpBuilder &nb, int64_t v) -> Value {
    return arith::ConstantIndexOp::create(nb, loc, v);
  };
  Value one = index(b, 1);
  auto launch = gpu::LaunchOp::create(b, loc, index(b, rows), one, one,
                                      index(b, kWarp), one, one);
  Block &body = launch.getBody().front();
  OpBuilder kb = OpBuilder::atBlockBegin(&body);
  Value block = launch.getBlockIds().x;
  Value lane = launch.getThreadIds().x;
  // Each member's row loop indices, delinearized from the block id (the
  // members' row loops may differ in shape, not in their product).
  auto rowIvsOf = [&](linalg::GenericOp op) {
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    SmallVector<Value> ivs(ranges.size() - 1);
    Value rest = block;
    for (int d = int(ranges.size()) - 2; d >= 0; --d) {
      if (d == 0) {
        ivs[d] = rest;
        break;
      }
      ivs[d] = arith::RemUIOp::create(kb, loc, rest, index(kb, ranges[d]));
      rest = arith::DivUIOp::create(kb, loc, rest, index(kb, ranges[d]));
    }
    return ivs;
  };
  Value zero = index(kb, 0), warp = index(kb, kWarp),
        width = index(kb, columns);
  // Whether this is lane 0 (which stores a row's values), at `kb`.
  auto laneZero = [&]() -> Value {
    return arith::CmpIOp::create(kb, loc, arith::CmpIPredicate::eq, lane, zero);
  };
  Registers registers;
  for (RowOp &row : group) {
    linalg::GenericOp op = row.op;
    SmallVector<Value> rowIvs = rowIvsOf(op);
    if (row.perRow) {
      // Once per row, in every lane (lane 0 stores): later members read
      // the values from registers.
      SmallVector<Value> ivs(rowIvs);
      ivs.push_back(zero);
      IRMapping map = emitBody(kb, loc, row, ivs, registers, nullptr);
      auto ifOp = scf::IfOp::create(kb, loc, laneZero(), /*withElse=*/false);
      OpBuilder ib = ifOp.getThenBodyBuilder();
      for (auto [init, result] : llvm::zip(op.getDpsInitsMutable(),
                                           storeResults(ib, loc, op, map, ivs)))
        registers[registerKey(accessOf(op, init, true))] = result;
      continue;
    }
    if (!row.reduction) {
      // Each lane its columns: lane, lane + 32, ...
      auto loop = scf::ForOp::create(kb, loc, lane, width, warp);
      OpBuilder lb = OpBuilder::atBlockBegin(loop.getBody());
      SmallVector<Value> ivs(rowIvs);
      ivs.push_back(loop.getInductionVar());
      storeResults(lb, loc, op, emitBody(lb, loc, row, ivs, registers, nullptr),
                   ivs);
      continue;
    }
    OpOperand &init = op.getDpsInitsMutable()[0];
    AffineMap outMap = op.getMatchingIndexingMap(&init);
    SmallVector<Value> rowOnly(rowIvs);
    rowOnly.push_back(zero);
    // The initial value, read before the butterfly (whose shuffles every
    // lane reaches before lane 0 stores the result).
    Value initial =
        row.fill ? row.fill.getInputs()[0]
                 : memref::LoadOp::create(kb, loc, init.get(),
                                          indicesAt(kb, loc, outMap, rowOnly))
                       .getResult();
    Value identity = arith::ConstantOp::create(kb, loc, row.identity);
    auto loop =
        scf::ForOp::create(kb, loc, lane, width, warp, ValueRange{identity});
    {
      OpBuilder lb = OpBuilder::atBlockBegin(loop.getBody());
      SmallVector<Value> ivs(rowIvs);
      ivs.push_back(loop.getInductionVar());
      IRMapping map = emitBody(lb, loc, row, ivs, registers, row.combiner);
      Value next = combine(lb, row, map.lookupOrDefault(row.element),
                           loop.getRegionIterArgs()[0]);
      scf::YieldOp::create(lb, loc, next);
    }
    // The lanes' partial results combined by a butterfly: every lane ends
    // with the whole row's.
    Value partial = loop.getResult(0);
    for (int32_t offset = kWarp / 2; offset >= 1; offset /= 2)
      partial = combine(kb, row, shuffleXor(kb, loc, partial, offset), partial);
    Value result = combine(kb, row, partial, initial);
    auto ifOp = scf::IfOp::create(kb, loc, laneZero(), /*withElse=*/false);
    {
      OpBuilder ib = ifOp.getThenBodyBuilder();
      memref::StoreOp::create(ib, loc, result, init.get(),
                              indicesAt(ib, loc, outMap, rowOnly));
    }
    registers[registerKey(accessOf(op, init, true))] = result;
  }
  gpu::TerminatorOp::create(kb, loc);
  for (RowOp &row : group) {
    if (row.fill)
      row.fill->erase();
    row.op->erase();
  }
  return launch;
}

/// Finds the chains of row ops of one loop shape with at least one
/// reduction and makes each one kernel. The kernel runs where the group's
/// last member was, so the members move down past what lies between them:
/// ops that touch nothing they touch stay where they are; ops that do (a
/// loss summing the rows a member wrote, and what reads that sum) move down
/// after the kernel, in order, when nothing they pass (later members
/// included) touches what they touch.
void formKernels(Block &block) {
  SmallVector<Operation *> ops;
  for (Operation &op : block)
    ops.push_back(&op);
  SmallVector<RowOp> group;
  spmd::Footprint groupFootprint;
  // Ops between members that go after the kernel, in order.
  SmallVector<Operation *> deferred;
  spmd::Footprint deferredFootprint;
  // The group's number of rows, and its column count (0 while only ops
  // over the rows joined).
  int64_t shape = 0;
  int64_t columns = 0;
  // A fill seen since the group's last member, which the next reduction of
  // its buffer may take in.
  linalg::FillOp pendingFill;
  auto flush = [&]() {
    if (llvm::any_of(group, [](const RowOp &r) { return r.reduction; })) {
      Operation *after = emitKernel(group);
      for (Operation *op : deferred)
        if (op->isBeforeInBlock(after)) {
          op->moveAfter(after);
          after = op;
        }
    }
    group.clear();
    groupFootprint = spmd::Footprint();
    deferred.clear();
    deferredFootprint = spmd::Footprint();
    pendingFill = nullptr;
  };
  // Whether the group's members may move down past `op` (it stays), or
  // `op` may move down with them (after the kernel); else the group ends.
  auto pass = [&](Operation *op) {
    if (group.empty())
      return;
    spmd::Footprint f = spmd::footprintOf(op);
    if (f.opaque)
      return flush();
    if (!spmd::conflict(f, groupFootprint) &&
        !spmd::conflict(f, deferredFootprint))
      return;
    // After the kernel, and after the ops deferred before it (its regions
    // go with it; a result would be used before it is defined).
    if (op->getNumResults() != 0)
      return flush();
    deferred.push_back(op);
    deferredFootprint.add(f);
  };
  // A pending fill that no reduction takes in: a fill like any other op.
  auto passPendingFill = [&]() {
    if (!pendingFill)
      return;
    linalg::FillOp previous = pendingFill;
    pendingFill = nullptr;
    pass(previous);
  };
  for (Operation *op : ops) {
    if (auto fill = dyn_cast<linalg::FillOp>(op)) {
      passPendingFill();
      if (fill.hasPureBufferSemantics() &&
          (fill.getInputs()[0].getType().isF32() ||
           fill.getInputs()[0].getType().isF64()))
        pendingFill = fill;
      else
        pass(fill);
      continue;
    }
    std::optional<RowOp> row = asRowOp(op);
    if (!row) {
      if (spmd::onlyAllocates(op))
        continue;
      passPendingFill();
      pass(op);
      continue;
    }
    spmd::Footprint rowFootprint = spmd::footprintOf(op);
    if (spmd::conflict(rowFootprint, deferredFootprint)) {
      linalg::FillOp keep = pendingFill;
      flush();
      pendingFill = keep;
    }
    SmallVector<int64_t> ranges = row->op.getStaticLoopRanges();
    if (row->reduction && pendingFill &&
        pendingFill.getOutputs()[0] == row->op.getDpsInits()[0]) {
      row->fill = pendingFill;
      pendingFill = nullptr;
    }
    // The rows must agree; the columns too, except for ops over the rows
    // only (a column loop of one iteration).
    int64_t rows = 1;
    for (int64_t r : ArrayRef<int64_t>(ranges).drop_back())
      rows *= r;
    int64_t width = row->perRow ? 0 : ranges.back();
    bool fits =
        rows == shape && (width == 0 || columns == 0 || width == columns);
    if (pendingFill || (!group.empty() && (!fits || !canJoin(group, *row)))) {
      linalg::FillOp keep = row->fill;
      flush();
      row->fill = keep;
    }
    if (group.empty()) {
      shape = rows;
      columns = 0;
    }
    if (width != 0)
      columns = width;
    groupFootprint.add(rowFootprint);
    if (row->fill)
      groupFootprint.add(spmd::footprintOf(row->fill));
    group.push_back(*row);
  }
  flush();
}

struct SpmdGpuRowKernelsPass
    : public spmd::impl::SpmdGpuRowKernelsPassBase<SpmdGpuRowKernelsPass> {
  void runOnOperation() override {
    for (Block &block : getOperation().getBody())
      formKernels(block);
  }
};

} // namespace
