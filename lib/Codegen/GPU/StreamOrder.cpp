//===- StreamOrder.cpp - a program's device work on one stream ------------===//
//
// Replaces upstream gpu-async-region in spmd-lower-to-nvvm. That pass makes
// the host wait for the device before every call it does not know (each
// cuBLAS matmul and collective: dozens of waits per step). Here the host code
// runs between spmdGpuProgramBegin/End, where the runtime orders its own
// work (cuBLAS, NCCL through events) on the program stream that every
// kernel, copy, allocation and free is enqueued on, in program order. The
// host waits only before it touches memory itself (a host copy of device
// data, a call the runtime does not order) and at the program's end.
//
//===----------------------------------------------------------------------===//

#include "Spmd/Codegen/GPU/Passes.h"
#include "Spmd/Conversion/RuntimeCalls.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::spmd {
#define GEN_PASS_DEF_SPMDGPUSTREAMORDERPASS
#include "Spmd/Codegen/GPU/Passes.h.inc"
} // namespace mlir::spmd

using namespace mlir;

namespace {

/// Runtime functions that order their device work on the program stream
/// inside a program (SpmdGpuRuntime.h), or touch no device memory.
bool isStreamOrdered(StringRef callee) {
  using RF = spmd::RuntimeFunction;
  std::optional<RF> fn = spmd::lookupRuntimeFunction(callee);
  if (!fn)
    return false;
  switch (*fn) {
  case RF::spmdGpuSgemm:
  case RF::spmdGpuSgemmPair:
  case RF::spmdGpuSgemmStridedBatchedPair:
  case RF::spmdGpuSgemmStridedBatched:
  case RF::spmdGpuGemmBf16:
  case RF::spmdGpuGemmBf16StridedBatched:
  case RF::spmdAllReduceStart:
  case RF::spmdBroadcastStart:
  case RF::spmdAllGatherStart:
  case RF::spmdReduceScatterStart:
  case RF::spmdAllToAll4Start:
  case RF::spmdWait:
  case RF::spmdAllReduce:
  case RF::spmdBroadcast:
  case RF::spmdAllGather:
  case RF::spmdReduceScatter:
  case RF::spmdAllToAll4:
  case RF::spmdGroupStart:
  case RF::spmdGroupEnd:
  case RF::spmdGpuStateAddress:
  case RF::spmdGpuConstantAddress:
  case RF::spmdAxisIndex:
  case RF::spmdProgramCheck:
  case RF::spmdWorldRank:
  case RF::spmdWorldSize:
  case RF::spmdTraceBegin:
  case RF::spmdTraceEnd:
  case RF::spmdGpuTraceSource:
  case RF::spmdGpuAttentionForward:
  case RF::spmdGpuAttentionBackward:
    return true;
  default:
    return false;
  }
}

/// Whether the host may run `op` without waiting for the device.
bool needsNoWait(Operation *op) {
  if (auto call = dyn_cast<func::CallOp>(op))
    return isStreamOrdered(call.getCallee());
  if (isMemoryEffectFree(op))
    return true;
  // Host stack buffers come and go without touching device memory.
  return isa<memref::AllocaOp>(op);
}

class StreamOrder {
public:
  explicit StreamOrder(gpu::AsyncTokenType tokenType) : tokenType(tokenType) {}

  /// Orders the GPU ops of `block` on one token chain; returns the last
  /// token (null when the host has waited for everything).
  LogicalResult orderBlock(Block &block) {
    Value current;
    for (Operation &op : llvm::make_early_inc_range(block)) {
      if (auto async = dyn_cast<gpu::AsyncOpInterface>(op)) {
        if (isa<gpu::WaitOp>(op))
          return op.emitError("spmd-gpu-stream-order: the host code already "
                              "has gpu.wait ops (run it instead of "
                              "gpu-async-region, once)");
        if (async.getAsyncToken())
          return op.emitError("spmd-gpu-stream-order: the host code already "
                              "has asynchronous GPU ops");
        current = makeAsync(&op, current);
        continue;
      }
      if (op.hasTrait<OpTrait::IsTerminator>()) {
        wait(&op, current);
        current = nullptr;
        continue;
      }
      if (op.getNumRegions() != 0) {
        // Control flow on the host (a loop launching a kernel per step):
        // each of its blocks is ordered on its own, after a wait.
        wait(&op, current);
        current = nullptr;
        for (Region &region : op.getRegions())
          for (Block &inner : region)
            if (failed(orderBlock(inner)))
              return failure();
        continue;
      }
      if (!needsNoWait(&op)) {
        wait(&op, current);
        current = nullptr;
      }
    }
    return success();
  }

private:
  /// `op` as its async form, after `current` (a new chain when null).
  Value makeAsync(Operation *op, Value current) {
    OpBuilder b(op);
    if (!current)
      current = gpu::WaitOp::create(b, op->getLoc(), tokenType, ValueRange{})
                    .getAsyncToken();
    cast<gpu::AsyncOpInterface>(op).addAsyncDependency(current);
    // The same op with a token result after its own.
    SmallVector<Type> resultTypes(op->getResultTypes());
    resultTypes.push_back(tokenType);
    Operation *async = Operation::create(
        op->getLoc(), op->getName(), resultTypes, op->getOperands(),
        op->getDiscardableAttrDictionary(), op->getPropertiesStorage(),
        op->getSuccessors(), op->getNumRegions());
    b.insert(async);
    for (auto [from, to] : llvm::zip(op->getRegions(), async->getRegions()))
      to.takeBody(from);
    op->replaceAllUsesWith(async->getResults().drop_back());
    op->erase();
    return async->getResults().back();
  }

  /// The host waits for `current` before `op`.
  void wait(Operation *op, Value current) {
    if (!current)
      return;
    OpBuilder b(op);
    gpu::WaitOp::create(b, op->getLoc(), Type(), ValueRange{current});
  }

  gpu::AsyncTokenType tokenType;
};

bool hasGpuOps(func::FuncOp func) {
  return func
      .walk([](gpu::AsyncOpInterface) { return WalkResult::interrupt(); })
      .wasInterrupted();
}

struct SpmdGpuStreamOrderPass
    : public spmd::impl::SpmdGpuStreamOrderPassBase<SpmdGpuStreamOrderPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    StreamOrder order(gpu::AsyncTokenType::get(&getContext()));
    SmallVector<func::FuncOp> funcs;
    for (auto func : module.getOps<func::FuncOp>())
      if (!func.isExternal() && hasGpuOps(func))
        funcs.push_back(func);
    for (func::FuncOp func : funcs) {
      if (failed(order.orderBlock(func.getBody().front())))
        return signalPassFailure();
      for (Block &block : llvm::drop_begin(func.getBody()))
        if (failed(order.orderBlock(block)))
          return signalPassFailure();
      // The runtime orders its calls on the program stream in between.
      OpBuilder b = OpBuilder::atBlockBegin(&func.getBody().front());
      spmd::callRuntime(b, module, func.getLoc(),
                        spmd::RuntimeFunction::spmdGpuProgramBegin, {});
      func.walk([&](func::ReturnOp ret) {
        b.setInsertionPoint(ret);
        spmd::callRuntime(b, module, ret.getLoc(),
                          spmd::RuntimeFunction::spmdGpuProgramEnd, {});
      });
    }
  }
};

} // namespace
