//===- BlockedReductions.cpp - large full reductions in blocks ------------===//
//
// A sequential f32 sum of millions of terms loses digits (each addition
// rounds to the accumulator's ulp); summing blocks of consecutive elements
// into partial results, then the partial results, bounds the error by the
// block size plus the number of blocks (spmd-blocked-full-reductions).
//
//===----------------------------------------------------------------------===//

#include "Spmd/Codegen/FullReduction.h"
#include "Spmd/Codegen/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

namespace mlir::spmd {
#define GEN_PASS_DEF_SPMDBLOCKEDFULLREDUCTIONSPASS
#include "Spmd/Codegen/Passes.h.inc"
} // namespace mlir::spmd

using namespace mlir;

namespace {

void splitIntoBlocks(spmd::FullReduction r, int64_t block) {
  OpBuilder b(r.op);
  Location loc = r.op.getLoc();
  auto input = cast<MemRefType>(r.input.getType());
  Type element = input.getElementType();
  Value current = r.flatInput(b);
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value width = arith::ConstantIndexOp::create(b, loc, block);
  Value identity = arith::ConstantOp::create(b, loc, r.identity);
  SmallVector<Value> partials;
  int64_t n = r.numElements;
  while (n > block) {
    int64_t count = (n + block - 1) / block;
    Value partial =
        memref::AllocOp::create(b, loc, MemRefType::get({count}, element));
    partials.push_back(partial);
    Value size = arith::ConstantIndexOp::create(b, loc, n);
    Value blocks = arith::ConstantIndexOp::create(b, loc, count);
    Value from = current;
    scf::ForOp::create(
        b, loc, zero, blocks, one, ValueRange{},
        [&](OpBuilder &ob, Location l, Value p, ValueRange) {
          Value begin = arith::MulIOp::create(ob, l, p, width);
          Value next = arith::AddIOp::create(ob, l, begin, width);
          Value end = arith::MinSIOp::create(ob, l, next, size);
          auto sum = scf::ForOp::create(
              ob, l, begin, end, one, ValueRange{identity},
              [&](OpBuilder &ib, Location il, Value i, ValueRange acc) {
                Value v = memref::LoadOp::create(ib, il, from, ValueRange{i});
                scf::YieldOp::create(ib, il, r.combine(ib, v, acc[0]));
              });
          memref::StoreOp::create(ob, l, sum.getResult(0), partial,
                                  ValueRange{p});
          scf::YieldOp::create(ob, l);
        });
    current = partial;
    n = count;
  }
  // The last partial results into the accumulator, in order.
  Value last = arith::ConstantIndexOp::create(b, loc, n);
  Value start = memref::LoadOp::create(b, loc, r.init, ValueRange{});
  auto total = scf::ForOp::create(
      b, loc, zero, last, one, ValueRange{start},
      [&](OpBuilder &ib, Location il, Value i, ValueRange acc) {
        Value v = memref::LoadOp::create(ib, il, current, ValueRange{i});
        scf::YieldOp::create(ib, il, r.combine(ib, v, acc[0]));
      });
  memref::StoreOp::create(b, loc, total.getResult(0), r.init, ValueRange{});
  for (Value partial : partials)
    memref::DeallocOp::create(b, loc, partial);
  r.op.erase();
}

struct SpmdBlockedFullReductionsPass
    : public spmd::impl::SpmdBlockedFullReductionsPassBase<
          SpmdBlockedFullReductionsPass> {
  using SpmdBlockedFullReductionsPassBase::SpmdBlockedFullReductionsPassBase;

  void runOnOperation() override {
    if (block < 1) {
      getOperation().emitError("spmd-blocked-full-reductions: block must be "
                               "at least 1");
      return signalPassFailure();
    }
    SmallVector<spmd::FullReduction> reductions;
    getOperation().walk([&](linalg::ReduceOp op) {
      if (!op.hasPureBufferSemantics())
        return;
      if (std::optional<spmd::FullReduction> r = spmd::matchFullReduction(op))
        if (r->numElements > block)
          reductions.push_back(*r);
    });
    for (spmd::FullReduction &r : reductions)
      splitIntoBlocks(r, block);
  }
};

} // namespace
