//===- SerialKernels.cpp - linalg ops without parallel loops on the GPU ---===//
//
// A linalg op on buffers whose loops are all reductions (a full sum) or that
// has no loops (0-d fills and arithmetic) would lower to host loops over
// device memory. Each is wrapped in a one-iteration `scf.parallel`, which the
// GPU mapping turns into a one-thread kernel: correct, and cheap for the
// scalars it is mostly used for (loss, step counters). Large full
// reductions deserve a tree reduction; see the README's limits.
//
//===----------------------------------------------------------------------===//

#include "Spmd/Conversion/GPU/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"

namespace mlir::spmd {
#define GEN_PASS_DEF_SPMDGPUSERIALKERNELSPASS
#include "Spmd/Conversion/GPU/Passes.h.inc"
} // namespace mlir::spmd

using namespace mlir;

namespace {

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
