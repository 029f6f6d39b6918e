//===- LinalgToBlas.cpp - f32 matmuls on buffers to an sgemm call ---------===//

#include "Spmd/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Matchers.h"

namespace mlir::spmd {
#define GEN_PASS_DEF_CONVERTLINALGTOBLASPASS
#include "Spmd/Conversion/Passes.h.inc"
} // namespace mlir::spmd

using namespace mlir;

namespace {

// CBLAS enum values.
constexpr int kRowMajor = 101, kNoTrans = 111, kTrans = 112;

struct ConvertLinalgToBlasPass
    : public spmd::impl::ConvertLinalgToBlasPassBase<ConvertLinalgToBlasPass> {
  using ConvertLinalgToBlasPassBase::ConvertLinalgToBlasPassBase;

  // A module pass: it declares cblas_sgemm in the module, which function
  // passes running in parallel must not do.
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<linalg::MatmulOp> matmuls;
    module.walk([&](linalg::MatmulOp op) { matmuls.push_back(op); });
    for (linalg::MatmulOp op : matmuls)
      convert(op, module);
  }

  /// A 2-D f32 buffer whose rows are contiguous (inner stride 1): BLAS
  /// takes it as a pointer and a leading dimension.
  static bool isRowContiguousF32(Value v) {
    auto type = dyn_cast<MemRefType>(v.getType());
    if (!type || !type.getElementType().isF32() || type.getRank() != 2)
      return false;
    if (type.getLayout().isIdentity())
      return true;
    SmallVector<int64_t> strides;
    int64_t offset;
    return succeeded(type.getStridesAndOffset(strides, offset)) &&
           strides[1] == 1;
  }

  void convert(linalg::MatmulOp op, ModuleOp module) {
    if (!op.hasPureBufferSemantics() || op.getInputs().size() != 2 ||
        !isRowContiguousF32(op.getInputs()[0]) ||
        !isRowContiguousF32(op.getInputs()[1]) ||
        !isRowContiguousF32(op.getOutputs()[0]))
      return;
    MLIRContext *ctx = op.getContext();
    AffineExpr m, n, k;
    bindDims(ctx, m, n, k);
    auto maps = op.getIndexingMapsArray();
    auto is = [&](ArrayRef<AffineExpr> a, ArrayRef<AffineExpr> b) {
      return maps[0] == AffineMap::get(3, 0, a, ctx) &&
             maps[1] == AffineMap::get(3, 0, b, ctx) &&
             maps[2] == AffineMap::get(3, 0, {m, n}, ctx);
    };
    bool transA = false, transB = false;
    if (is({m, k}, {k, n})) {
    } else if (is({m, k}, {n, k})) {
      transB = true;
    } else if (is({k, m}, {k, n})) {
      transA = true;
    } else {
      return;
    }

    // A zero fill of the output right before the matmul is beta = 0.
    linalg::FillOp zeroFill;
    if (auto fill = dyn_cast_or_null<linalg::FillOp>(op->getPrevNode()))
      if (fill.hasPureBufferSemantics() &&
          fill.getOutputs()[0] == op.getOutputs()[0] &&
          matchPattern(fill.getInputs()[0], m_AnyZeroFloat()))
        zeroFill = fill;

    OpBuilder b(op);
    Location loc = op.getLoc();
    Value a = op.getInputs()[0], bm = op.getInputs()[1], c = op.getOutputs()[0];
    auto i32 = [&](Value index) {
      return arith::IndexCastOp::create(b, loc, b.getI32Type(), index)
          .getResult();
    };
    auto dim = [&](Value v, int64_t d) {
      return i32(memref::DimOp::create(b, loc, v, d));
    };
    // Address of element (0, 0) and the row stride, from the layout.
    SmallVector<Value> lead;
    auto ptr = [&](Value v) {
      auto meta = memref::ExtractStridedMetadataOp::create(b, loc, v);
      Value base = memref::ExtractAlignedPointerAsIndexOp::create(
          b, loc, meta.getBaseBuffer());
      Value bytes = arith::MulIOp::create(
          b, loc, meta.getOffset(), arith::ConstantIndexOp::create(b, loc, 4));
      Value address = arith::AddIOp::create(b, loc, base, bytes);
      lead.push_back(i32(meta.getStrides()[0]));
      return arith::IndexCastOp::create(b, loc, b.getI64Type(), address)
          .getResult();
    };
    auto constI32 = [&](int64_t v) {
      return arith::ConstantIntOp::create(b, loc, b.getI32Type(), v)
          .getResult();
    };
    Value M = dim(c, 0), N = dim(c, 1);
    Value K = transA ? dim(a, 0) : dim(a, 1);
    // Leading dimensions are the row strides of the layouts (a slice of
    // columns has a row stride larger than its width).
    Value pa = ptr(a), pb = ptr(bm), pc = ptr(c);
    Value lda = lead[0], ldb = lead[1], ldc = lead[2];
    Value one = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(1.0f));
    Value beta = arith::ConstantOp::create(
        b, loc, b.getF32FloatAttr(zeroFill ? 0.0f : 1.0f));
    SmallVector<Value> args{constI32(kRowMajor),
                            constI32(transA ? kTrans : kNoTrans),
                            constI32(transB ? kTrans : kNoTrans),
                            M,
                            N,
                            K,
                            one,
                            pa,
                            lda,
                            pb,
                            ldb,
                            beta,
                            pc,
                            ldc};
    StringRef name = function;
    if (!module.lookupSymbol<func::FuncOp>(name)) {
      OpBuilder mb = OpBuilder::atBlockEnd(module.getBody());
      auto decl = func::FuncOp::create(
          mb, module.getLoc(), name,
          mb.getFunctionType(ValueRange(args).getTypes(), {}));
      decl.setPrivate();
    }
    func::CallOp::create(b, loc, name, TypeRange{}, args);
    op.erase();
    if (zeroFill)
      zeroFill.erase();
  }
};

} // namespace
