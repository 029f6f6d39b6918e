//===- SerialKernels.cpp - linalg ops without parallel loops on the GPU ---===//
//
// A linalg op on buffers whose loops are all reductions (a full sum) or that
// has no loops (0-d fills and arithmetic) would lower to host loops over
// device memory. Each is wrapped in a one-iteration `scf.parallel`, which the
// GPU mapping turns into a one-thread kernel: correct, and cheap for the
// scalars it is mostly used for (loss, step counters). A full
// `linalg.reduce` of a 2-d or larger buffer with an add/mul/max/min
// combiner is first split: one thread per leading index reduces its row,
// and one thread combines the partial results.
//
//===----------------------------------------------------------------------===//

#include "Spmd/Conversion/GPU/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
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

/// A full reduction of an N-d buffer (N >= 2) to a scalar with a simple
/// float combiner, in two kernels: one thread per leading index reduces its
/// row into a partial buffer (initialized with the combiner's identity),
/// then one thread combines the partials into the original accumulator.
LogicalResult splitFullReduction(linalg::ReduceOp op) {
  if (op.getInputs().size() != 1 || op.getInits().size() != 1)
    return failure();
  auto input = dyn_cast<MemRefType>(op.getInputs()[0].getType());
  auto init = dyn_cast<MemRefType>(op.getInits()[0].getType());
  if (!input || !init || init.getRank() != 0 || input.getRank() < 2 ||
      input.isDynamicDim(0))
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
  auto partialType =
      MemRefType::get({input.getDimSize(0)}, init.getElementType());
  Value partial = gpu::AllocOp::create(b, loc, partialType, Type(),
                                       ValueRange{}, ValueRange{}, ValueRange{})
                      .getMemref();
  Value id = arith::ConstantOp::create(b, loc, identity);
  linalg::FillOp::create(b, loc, id, partial);
  SmallVector<int64_t> inner;
  for (int64_t d = 1; d < input.getRank(); ++d)
    inner.push_back(d);
  auto cloneBody = [&](OpBuilder &nb, Location l, ValueRange args) {
    IRMapping map;
    map.map(body.getArgument(0), args[0]);
    map.map(body.getArgument(1), args[1]);
    Operation *c = nb.clone(*combine, map);
    linalg::YieldOp::create(nb, l, c->getResults());
  };
  linalg::ReduceOp::create(b, loc, op.getInputs()[0], partial, inner,
                           cloneBody);
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  auto serial = scf::ParallelOp::create(b, loc, ValueRange{zero},
                                        ValueRange{one}, ValueRange{one});
  OpBuilder inside = OpBuilder::atBlockBegin(serial.getBody());
  linalg::ReduceOp::create(inside, loc, partial, op.getInits()[0],
                           ArrayRef<int64_t>{0}, cloneBody);
  b.setInsertionPointAfter(serial);
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
