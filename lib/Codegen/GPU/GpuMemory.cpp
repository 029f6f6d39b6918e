//===- GpuMemory.cpp - put a bufferized local program's buffers on the GPU ===//
//
// After bufferization, on host functions: allocations become `gpu.alloc`
// (device memory) and deallocations `gpu.dealloc`; copies between
// contiguous buffers of one shape become `gpu.memcpy`, other copies a
// `linalg.copy` (a kernel later); a constant global becomes the runtime's
// device copy of it (uploaded on first use, then kept), state the runtime's
// device buffer of that name. Function arguments are device buffers (the
// caller's contract).
//
//===----------------------------------------------------------------------===//

#include "Spmd/Codegen/GPU/Passes.h"
#include "Spmd/Conversion/RuntimeCalls.h"
#include "Spmd/Dialect/Spmd/IR/SpmdDialect.h"
#include "Spmd/Runtime/SpmdRuntime.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/Builders.h"

namespace mlir::spmd {
#define GEN_PASS_DEF_SPMDGPUMEMORYPASS
#include "Spmd/Codegen/GPU/Passes.h.inc"
} // namespace mlir::spmd

using namespace mlir;

namespace {

bool isIdentityContiguous(MemRefType type) {
  return type.getLayout().isIdentity() && type.hasStaticShape();
}

/// A memref of `type` over the device address `address`, marked with the
/// runtime buffer it is (for spmd-gpu-fuse-kernels' aliasing).
Value deviceMemRef(OpBuilder &b, Location loc, MemRefType type, Value address,
                   StringRef identity) {
  Value memref = spmd::memRefAtAddress(b, loc, type, address);
  memref.getDefiningOp()->setAttr(spmd::SpmdDialect::getGpuBufferAttrName(),
                                  b.getStringAttr(identity));
  return memref;
}

/// The runtime's device buffer for the state `get` names, as a memref:
/// `spmdGpuStateAddress(name, bytes, dtype)` (zero-filled when first made)
/// returns its address.
FailureOr<Value> stateBuffer(OpBuilder &b, memref::GetGlobalOp get,
                             ModuleOp module) {
  Location loc = get.getLoc();
  MemRefType type = get.getType();
  Type element = type.getElementType();
  int32_t code;
  if (element.isF32())
    code = SPMD_F32;
  else if (element.isF64())
    code = SPMD_F64;
  else if (element.isInteger(32))
    code = SPMD_I32;
  else if (element.isInteger(64))
    code = SPMD_I64;
  else
    return get.emitError("spmd-gpu-memory: state of element type ")
           << element << " (supported: f32, f64, i32, i64)";
  // The name as a NUL-terminated string constant.
  Value name =
      spmd::stringConstant(b, module, loc, get.getName(),
                           ("__spmd_gpu_state_name_" + get.getName()).str());
  // i1 is a byte in memory, as torch.bool.
  int64_t bytes =
      type.getNumElements() * ((element.getIntOrFloatBitWidth() + 7) / 8);
  Value size = arith::ConstantIntOp::create(b, loc, bytes, 64);
  Value dtype = arith::ConstantIntOp::create(b, loc, code, 32);
  Value address = spmd::callRuntime(b, module, loc,
                                    spmd::RuntimeFunction::spmdGpuStateAddress,
                                    {name, size, dtype})
                      .getResult(0);
  return deviceMemRef(b, loc, type, address, ("state:" + get.getName()).str());
}

/// The runtime's device copy of the constant global `get` reads:
/// `spmdGpuConstantAddress(host, bytes)` uploads it on the first call and
/// returns the same device buffer after, so a step does not copy its
/// constants to the device again each time it runs.
Value constantBuffer(OpBuilder &b, memref::GetGlobalOp get, ModuleOp module) {
  Location loc = get.getLoc();
  MemRefType type = get.getType();
  Type i64 = b.getI64Type();
  auto host = memref::GetGlobalOp::create(b, loc, type, get.getNameAttr());
  Value hostIndex =
      memref::ExtractAlignedPointerAsIndexOp::create(b, loc, host.getResult());
  Value hostAddress = arith::IndexCastOp::create(b, loc, i64, hostIndex);
  int64_t bytes =
      type.getNumElements() * ((type.getElementTypeBitWidth() + 7) / 8);
  Value size = arith::ConstantIntOp::create(b, loc, bytes, 64);
  Value address =
      spmd::callRuntime(b, module, loc,
                        spmd::RuntimeFunction::spmdGpuConstantAddress,
                        {hostAddress, size})
          .getResult(0);
  return deviceMemRef(b, loc, type, address,
                      ("constant:" + get.getName()).str());
}

struct SpmdGpuMemoryPass
    : public spmd::impl::SpmdGpuMemoryPassBase<SpmdGpuMemoryPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    bool failed = false;
    for (auto func : module.getOps<func::FuncOp>()) {
      if (func.isExternal())
        continue;
      if (mlir::failed(convert(func, module)))
        failed = true;
    }
    if (failed)
      signalPassFailure();
  }

  LogicalResult convert(func::FuncOp func, ModuleOp module) {
    SmallVector<Operation *> work;
    func.walk([&](Operation *op) {
      if (isa<memref::AllocOp, memref::AllocaOp, memref::DeallocOp,
              memref::CopyOp, memref::GetGlobalOp>(op))
        work.push_back(op);
    });
    OpBuilder b(func.getContext());
    for (Operation *op : work) {
      b.setInsertionPoint(op);
      Location loc = op->getLoc();
      if (isa<memref::AllocOp, memref::AllocaOp>(op)) {
        auto type = cast<MemRefType>(op->getResult(0).getType());
        auto alloc =
            gpu::AllocOp::create(b, loc, type, /*asyncToken=*/Type(),
                                 ValueRange{}, op->getOperands(), ValueRange{});
        op->getResult(0).replaceAllUsesWith(alloc.getMemref());
        op->erase();
        continue;
      }
      if (auto dealloc = dyn_cast<memref::DeallocOp>(op)) {
        gpu::DeallocOp::create(b, loc, /*asyncToken=*/Type(), ValueRange{},
                               dealloc.getMemref());
        op->erase();
        continue;
      }
      if (auto copy = dyn_cast<memref::CopyOp>(op)) {
        auto from = cast<MemRefType>(copy.getSource().getType());
        auto to = cast<MemRefType>(copy.getTarget().getType());
        if (from == to && isIdentityContiguous(from))
          gpu::MemcpyOp::create(b, loc, /*asyncToken=*/Type(), ValueRange{},
                                copy.getTarget(), copy.getSource());
        else
          linalg::CopyOp::create(b, loc, copy.getSource(), copy.getTarget());
        op->erase();
        continue;
      }
      auto get = cast<memref::GetGlobalOp>(op);
      auto global = SymbolTable::lookupNearestSymbolFrom<memref::GlobalOp>(
          get, get.getNameAttr());
      if (!global)
        return get.emitError("spmd-gpu-memory: unknown global @")
               << get.getName();
      auto type = get.getType();
      if (!global.getConstant()) {
        // State: the runtime's device buffer of that name.
        if (!isIdentityContiguous(type))
          return get.emitError("spmd-gpu-memory: state @")
                 << get.getName() << " with a non-identity layout";
        FailureOr<Value> buffer = stateBuffer(b, get, module);
        if (failed(buffer))
          return failure();
        get.getResult().replaceAllUsesWith(*buffer);
        get.erase();
        continue;
      }
      if (!isIdentityContiguous(type))
        return get.emitError("spmd-gpu-memory: constant global with a "
                             "non-identity layout");
      // Looked up once, at function entry (uses in loops share it).
      b.setInsertionPointToStart(&func.getBody().front());
      get.getResult().replaceAllUsesWith(constantBuffer(b, get, module));
      get.erase();
    }
    // Scalars read or written on the host (`tensor.extract` of an optimizer
    // step counter, ...) go through a host copy of the 0-d buffer.
    SmallVector<Operation *> scalars;
    func.walk([&](Operation *op) {
      if (isa<memref::LoadOp, memref::StoreOp>(op) &&
          !op->getParentOfType<linalg::LinalgOp>())
        scalars.push_back(op);
    });
    for (Operation *op : scalars) {
      Value device = isa<memref::LoadOp>(op)
                         ? cast<memref::LoadOp>(op).getMemref()
                         : cast<memref::StoreOp>(op).getMemref();
      auto type = cast<MemRefType>(device.getType());
      if (type.getRank() != 0)
        continue; // left to spmd-verify-gpu-host-code
      b.setInsertionPoint(op);
      Location loc = op->getLoc();
      Value host = memref::AllocaOp::create(b, loc, type);
      if (isa<memref::LoadOp>(op)) {
        gpu::MemcpyOp::create(b, loc, Type(), ValueRange{}, host, device);
        op->setOperand(0, host);
      } else {
        op->setOperand(1, host);
        b.setInsertionPointAfter(op);
        gpu::MemcpyOp::create(b, loc, Type(), ValueRange{}, device, host);
      }
      op->setAttr(spmd::SpmdDialect::getHostCopyAttrName(), b.getUnitAttr());
    }
    return success();
  }
};

} // namespace
