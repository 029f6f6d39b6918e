//===- SerialKernels.cpp - linalg ops without parallel loops on the GPU ---===//
//
// A linalg op on buffers whose loops are all reductions (a full sum) or that
// has no loops (0-d fills and arithmetic) would lower to host loops over
// device memory. Each is wrapped in a one-iteration `scf.parallel`, which the
// GPU mapping turns into a one-thread kernel: correct, and cheap for the
// scalars it is mostly used for (loss, step counters). A full
// `linalg.reduce` of more than 64 contiguous elements with an add/mul/max/
// min combiner becomes parallel stages instead, each thread combining 64
// elements strided by the thread count (coalesced reads), until one thread
// combines the last partial results.
//
//===----------------------------------------------------------------------===//

#include "Spmd/Codegen/FullReduction.h"
#include "Spmd/Codegen/GPU/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

namespace mlir::spmd {
#define GEN_PASS_DEF_SPMDGPUSERIALKERNELSPASS
#include "Spmd/Codegen/GPU/Passes.h.inc"
} // namespace mlir::spmd

using namespace mlir;

namespace {

/// Elements each thread of a stage of a full reduction combines.
constexpr int64_t kStageWidth = 64;

/// A full reduction of a contiguous buffer to a scalar with a simple float
/// combiner, as parallel stages: over the flattened input of n elements,
/// thread p of ceil(n / 64) combines elements p, p + P, p + 2P, ... (so
/// neighbouring threads read neighbouring elements) into a partial buffer,
/// and so on over the partials until at most 64 are left, which one thread
/// combines into the original accumulator. Deterministic; the order differs
/// from a sequential loop (float results by rounding).
LogicalResult splitFullReduction(linalg::ReduceOp op) {
  std::optional<spmd::FullReduction> reduction = spmd::matchFullReduction(op);
  if (!reduction || reduction->numElements <= kStageWidth)
    return failure();
  OpBuilder b(op);
  Location loc = op.getLoc();
  auto input = cast<MemRefType>(reduction->input.getType());
  Type element = input.getElementType();
  auto combineWith = [&](OpBuilder &nb, Value value, Value acc) {
    return reduction->combine(nb, value, acc);
  };
  Value current = reduction->flatInput(b);
  int64_t n = reduction->numElements;
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value id = arith::ConstantOp::create(b, loc, reduction->identity);
  SmallVector<Value> partials;
  while (n > kStageWidth) {
    int64_t threads = (n + kStageWidth - 1) / kStageWidth;
    Value partial =
        gpu::AllocOp::create(b, loc, MemRefType::get({threads}, element),
                             Type(), ValueRange{}, ValueRange{}, ValueRange{})
            .getMemref();
    partials.push_back(partial);
    Value count = arith::ConstantIndexOp::create(b, loc, n);
    Value stride = arith::ConstantIndexOp::create(b, loc, threads);
    auto stage = scf::ParallelOp::create(b, loc, ValueRange{zero},
                                         ValueRange{stride}, ValueRange{one});
    OpBuilder in = OpBuilder::atBlockBegin(stage.getBody());
    Value p = stage.getInductionVars()[0];
    auto loop = scf::ForOp::create(
        in, loc, p, count, stride, ValueRange{id},
        [&](OpBuilder &lb, Location l, Value i, ValueRange acc) {
          Value v = memref::LoadOp::create(lb, l, current, ValueRange{i});
          scf::YieldOp::create(lb, l, combineWith(lb, v, acc[0]));
        });
    memref::StoreOp::create(in, loc, loop.getResult(0), partial, ValueRange{p});
    current = partial;
    n = threads;
  }
  // The last partials into the accumulator, by one thread.
  auto serial = scf::ParallelOp::create(b, loc, ValueRange{zero},
                                        ValueRange{one}, ValueRange{one});
  OpBuilder inside = OpBuilder::atBlockBegin(serial.getBody());
  linalg::ReduceOp::create(
      inside, loc, current, reduction->init, ArrayRef<int64_t>{0},
      [&](OpBuilder &nb, Location l, ValueRange args) {
        linalg::YieldOp::create(nb, l, combineWith(nb, args[0], args[1]));
      });
  b.setInsertionPointAfter(serial);
  for (Value partial : partials)
    gpu::DeallocOp::create(b, loc, Type(), ValueRange{}, partial);
  op.erase();
  return success();
}

struct SpmdGpuSerialKernelsPass
    : public spmd::impl::SpmdGpuSerialKernelsPassBase<
          SpmdGpuSerialKernelsPass> {
  void runOnOperation() override {
    SmallVector<linalg::LinalgOp> serial;
    getOperation().walk([&](linalg::LinalgOp op) {
      if (!op.hasPureBufferSemantics() ||
          op->getParentOfType<scf::ParallelOp>())
        return;
      if (op.getNumParallelLoops() == 0)
        serial.push_back(op);
    });
    for (linalg::LinalgOp op : serial) {
      if (auto reduce = dyn_cast<linalg::ReduceOp>(op.getOperation()))
        if (succeeded(splitFullReduction(reduce)))
          continue;
      OpBuilder b(op);
      Location loc = op.getLoc();
      Value zero = arith::ConstantIndexOp::create(b, loc, 0);
      Value one = arith::ConstantIndexOp::create(b, loc, 1);
      auto loop = scf::ParallelOp::create(b, loc, ValueRange{zero},
                                          ValueRange{one}, ValueRange{one});
      op->moveBefore(loop.getBody()->getTerminator());
    }
  }
};

} // namespace
