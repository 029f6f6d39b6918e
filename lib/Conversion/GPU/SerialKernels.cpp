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

#include "Spmd/Conversion/GPU/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

namespace mlir::spmd {
#define GEN_PASS_DEF_SPMDGPUSERIALKERNELSPASS
#include "Spmd/Conversion/GPU/Passes.h.inc"
} // namespace mlir::spmd

using namespace mlir;

namespace {

/// The identity of the combiner `op` of a reduction, if it is one of
/// add/mul/max/min on floats.
TypedAttr identityOf(Operation *op, Type type) {
  auto ft = dyn_cast<FloatType>(type);
  if (!ft)
    return {};
  const llvm::fltSemantics &sem = ft.getFloatSemantics();
  if (isa<arith::AddFOp>(op))
    return FloatAttr::get(ft, 0.0);
  if (isa<arith::MulFOp>(op))
    return FloatAttr::get(ft, 1.0);
  if (isa<arith::MaximumFOp, arith::MaxNumFOp>(op))
    return FloatAttr::get(ft, APFloat::getInf(sem, /*Negative=*/true));
  if (isa<arith::MinimumFOp, arith::MinNumFOp>(op))
    return FloatAttr::get(ft, APFloat::getInf(sem, /*Negative=*/false));
  return {};
}

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
  if (op.getInputs().size() != 1 || op.getInits().size() != 1)
    return failure();
  auto input = dyn_cast<MemRefType>(op.getInputs()[0].getType());
  auto init = dyn_cast<MemRefType>(op.getInits()[0].getType());
  if (!input || !init || init.getRank() != 0 || !input.hasStaticShape() ||
      !input.getLayout().isIdentity() ||
      input.getElementType() != init.getElementType() ||
      input.getNumElements() <= kStageWidth)
    return failure();
  Block &body = op.getCombiner().front();
  if (body.getOperations().size() != 2)
    return failure();
  Operation *combine = &body.front();
  if (combine->getNumOperands() != 2 ||
      !llvm::is_contained(combine->getOperands(), body.getArgument(0)) ||
      !llvm::is_contained(combine->getOperands(), body.getArgument(1)))
    return failure();
  TypedAttr identity = identityOf(combine, init.getElementType());
  if (!identity)
    return failure();

  OpBuilder b(op);
  Location loc = op.getLoc();
  Type element = init.getElementType();
  // The combiner applied to (element, accumulator).
  auto combineWith = [&](OpBuilder &nb, Value value, Value acc) {
    IRMapping map;
    map.map(body.getArgument(0), value);
    map.map(body.getArgument(1), acc);
    return nb.clone(*combine, map)->getResult(0);
  };
  Value current = op.getInputs()[0];
  int64_t n = input.getNumElements();
  if (input.getRank() != 1) {
    ReassociationIndices all;
    for (int64_t d = 0; d < input.getRank(); ++d)
      all.push_back(d);
    current = memref::CollapseShapeOp::create(
        b, loc, current, ArrayRef<ReassociationIndices>{all});
  }
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value id = arith::ConstantOp::create(b, loc, identity);
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
      inside, loc, current, op.getInits()[0], ArrayRef<int64_t>{0},
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
