//===- PowiExponents.cpp - i32 exponents for math.fpowi in kernels --------===//
//
// torch-mlir imports `x ** 2` as math.fpowi with an i64 exponent. The NVVM
// lowering maps math.fpowi to libdevice's __nv_powif(float, int) without
// looking at the exponent's width, declaring it (f32, i64) -> f32: an ABI
// mismatch that computes garbage on a real GPU (the MSE loss of the first
// H200 run; the emulator compiles kernels for the host and never calls
// libdevice). Here every wider exponent becomes an i32 one, saturated with
// its parity kept (x^n for |n| >= 2^31 is already 0, inf or +-1 in f32).
//
//===----------------------------------------------------------------------===//

#include "Spmd/Codegen/GPU/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/Builders.h"

#include <cstdint>

namespace mlir::spmd {
#define GEN_PASS_DEF_SPMDGPUPOWIEXPONENTSPASS
#include "Spmd/Codegen/GPU/Passes.h.inc"
} // namespace mlir::spmd

using namespace mlir;

namespace {

/// `n` (a wider signless integer) as an i32 with the same sign and parity,
/// saturated to [INT32_MIN, INT32_MAX - 1 + parity].
Value saturatedExponent(OpBuilder &b, Location loc, Value n) {
  Type wide = n.getType();
  auto constant = [&](int64_t v) {
    return arith::ConstantOp::create(b, loc, b.getIntegerAttr(wide, v));
  };
  Value parity = arith::AndIOp::create(b, loc, n, constant(1));
  Value hi = arith::AddIOp::create(b, loc, constant(INT32_MAX - 1), parity);
  Value lo = arith::AddIOp::create(b, loc, constant(INT32_MIN), parity);
  Value clamped =
      arith::MinSIOp::create(b, loc, arith::MaxSIOp::create(b, loc, n, lo), hi);
  return arith::TruncIOp::create(b, loc, b.getI32Type(), clamped);
}

struct SpmdGpuPowiExponentsPass
    : public spmd::impl::SpmdGpuPowiExponentsPassBase<
          SpmdGpuPowiExponentsPass> {
  void runOnOperation() override {
    SmallVector<math::FPowIOp> wide;
    getOperation()->walk([&](math::FPowIOp op) {
      if (getElementTypeOrSelf(op.getRhs().getType()).getIntOrFloatBitWidth() >
          32)
        wide.push_back(op);
    });
    for (math::FPowIOp op : wide) {
      if (isa<ShapedType>(op.getRhs().getType())) {
        op.emitError("spmd-gpu-powi-exponents: vector exponents are not "
                     "supported");
        return signalPassFailure();
      }
      OpBuilder b(op);
      Value exponent = saturatedExponent(b, op.getLoc(), op.getRhs());
      op.getRhsMutable().assign(exponent);
    }
  }
};

} // namespace
