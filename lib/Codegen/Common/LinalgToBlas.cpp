//===- LinalgToBlas.cpp - f32 (batched) matmuls on buffers to sgemm calls -===//

#include "Spmd/Codegen/Passes.h"
#include "Spmd/Conversion/RuntimeCalls.h"
#include "Spmd/Dialect/Spmd/Transforms/MatmulMaps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Matchers.h"

namespace mlir::spmd {
#define GEN_PASS_DEF_CONVERTLINALGTOBLASPASS
#include "Spmd/Codegen/Passes.h.inc"
} // namespace mlir::spmd

using namespace mlir;
using mlir::spmd::callRuntime;
using mlir::spmd::lookupRuntimeFunction;
using mlir::spmd::RuntimeFunction;

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
    SmallVector<linalg::LinalgOp> matmuls;
    module.walk([&](linalg::LinalgOp op) {
      if (isa<linalg::MatmulOp>(op) ||
          (batched && isa<linalg::BatchMatmulOp>(op)))
        matmuls.push_back(op);
    });
    for (linalg::LinalgOp op : matmuls)
      convert(op, module);
  }

  /// A buffer of `rank` dimensions whose rows are contiguous (inner
  /// stride 1): BLAS takes each matrix as a pointer and a leading
  /// dimension.
  static bool isRowContiguous(Value v, int64_t rank) {
    auto type = dyn_cast<MemRefType>(v.getType());
    if (!type || type.getRank() != rank)
      return false;
    if (type.getLayout().isIdentity())
      return true;
    SmallVector<int64_t> strides;
    int64_t offset;
    return succeeded(type.getStridesAndOffset(strides, offset)) &&
           strides.back() == 1;
  }

  /// Which operands the indexing maps transpose, for maps over (m, n, k),
  /// or (b, m, n, k) with `batched`; failure for other contractions.
  static FailureOr<std::pair<bool, bool>> transposes(linalg::LinalgOp op,
                                                     bool batched) {
    auto maps = op.getIndexingMapsArray();
    for (bool transA : {false, true})
      for (bool transB : {false, true})
        if (!(transA && transB) &&
            ArrayRef<AffineMap>(maps) ==
                ArrayRef<AffineMap>(
                    spmd::matmulMaps(op.getContext(), batched, transA, transB)))
          return std::make_pair(transA, transB);
    return failure();
  }

  static Type element(Value v) {
    return cast<MemRefType>(v.getType()).getElementType();
  }

  /// A matmul this pass turns into a GEMM call: its form, and the zero fill
  /// of its output right before it (beta = 0), if any.
  struct Gemm {
    bool batched, bf16, transA, transB;
    int64_t rank;
    linalg::FillOp zeroFill;
  };

  /// `op` as a GEMM call computes it, or nothing when no call can: row-
  /// contiguous buffers, f32 throughout or (with bf16-function) bf16
  /// operands accumulated into f32, a plain multiply-add body, maps that at
  /// most transpose one operand.
  std::optional<Gemm> match(linalg::LinalgOp op) {
    bool batched = isa<linalg::BatchMatmulOp>(op);
    int64_t rank = batched ? 3 : 2;
    if (!op.hasPureBufferSemantics() || op.getNumDpsInputs() != 2 ||
        !isRowContiguous(op.getDpsInputs()[0], rank) ||
        !isRowContiguous(op.getDpsInputs()[1], rank) ||
        !isRowContiguous(op.getDpsInits()[0], rank))
      return std::nullopt;
    Type ta = element(op.getDpsInputs()[0]), tb = element(op.getDpsInputs()[1]),
         tc = element(op.getDpsInits()[0]);
    bool bf16 = ta.isBF16() && tb.isBF16() && tc.isF32();
    if (!(ta.isF32() && tb.isF32() && tc.isF32()) && !bf16)
      return std::nullopt;
    if (bf16 &&
        (bf16Function.empty() || (batched && bf16BatchedFunction.empty())))
      return std::nullopt;
    // Plain multiply-add bodies only (no casts between element types).
    if (auto matmul = dyn_cast<linalg::MatmulOp>(op.getOperation()))
      if (matmul.getCast() != linalg::TypeFn::cast_signed)
        return std::nullopt;
    FailureOr<std::pair<bool, bool>> trans = transposes(op, batched);
    if (failed(trans))
      return std::nullopt;
    Gemm gemm{batched, bf16, trans->first, trans->second, rank, {}};
    if (auto fill = dyn_cast_or_null<linalg::FillOp>(op->getPrevNode()))
      if (fill.hasPureBufferSemantics() &&
          fill.getOutputs()[0] == op.getDpsInits()[0] &&
          matchPattern(fill.getInputs()[0], m_AnyZeroFloat()))
        gemm.zeroFill = fill;
    return gemm;
  }

  void convert(linalg::LinalgOp op, ModuleOp module) {
    if (std::optional<Gemm> gemm = match(op))
      emit(op, module, *gemm);
  }

  /// The GEMM call (one, strided-batched, or a loop of calls) in place of
  /// `op` (and its zero fill).
  void emit(linalg::LinalgOp op, ModuleOp module, const Gemm &gemm) {
    bool batched = gemm.batched, transA = gemm.transA;
    int64_t rank = gemm.rank;
    OpBuilder b(op);
    Location loc = op.getLoc();
    Value a = op.getDpsInputs()[0], bm = op.getDpsInputs()[1],
          c = op.getDpsInits()[0];
    auto i32 = [&](Value index) {
      return arith::IndexCastOp::create(b, loc, b.getI32Type(), index)
          .getResult();
    };
    auto dim = [&](Value v, int64_t d) {
      return i32(memref::DimOp::create(b, loc, v, d));
    };
    auto constI32 = [&](int64_t v) {
      return arith::ConstantIntOp::create(b, loc, b.getI32Type(), v)
          .getResult();
    };
    // Each matrix from its layout: the aligned base address, the element
    // offset of the first matrix, the batch stride and the row stride (a
    // slice of columns has a row stride larger than its width).
    struct Matrix {
      Value base, offset, batchStride, lead, bytes;
    };
    auto matrix = [&](Value v) {
      auto meta = memref::ExtractStridedMetadataOp::create(b, loc, v);
      Value base = memref::ExtractAlignedPointerAsIndexOp::create(
          b, loc, meta.getBaseBuffer());
      auto strides = meta.getStrides();
      int64_t width = element(v).getIntOrFloatBitWidth() / 8;
      return Matrix{base, meta.getOffset(), batched ? strides[0] : Value(),
                    i32(strides[rank - 2]),
                    arith::ConstantIndexOp::create(b, loc, width)};
    };
    auto address = [&](const Matrix &x, Value batch) {
      Value offset = x.offset;
      if (batch)
        offset = arith::AddIOp::create(
            b, loc, offset,
            arith::MulIOp::create(b, loc, batch, x.batchStride));
      Value bytes = arith::MulIOp::create(b, loc, offset, x.bytes);
      Value address = arith::AddIOp::create(b, loc, x.base, bytes);
      return arith::IndexCastOp::create(b, loc, b.getI64Type(), address)
          .getResult();
    };
    Value M = dim(c, rank - 2), N = dim(c, rank - 1);
    Value K = transA ? dim(a, rank - 2) : dim(a, rank - 1);
    Matrix ma = matrix(a), mb = matrix(bm), mc = matrix(c);
    Value one = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(1.0f));
    Value beta = arith::ConstantOp::create(
        b, loc, b.getF32FloatAttr(gemm.zeroFill ? 0.0f : 1.0f));
    Value rowMajor = constI32(kRowMajor);
    Value opA = constI32(transA ? kTrans : kNoTrans);
    Value opB = constI32(gemm.transB ? kTrans : kNoTrans);
    StringRef name = gemm.bf16 ? StringRef(bf16Function) : StringRef(function);
    StringRef batchedName =
        gemm.bf16 ? StringRef(bf16BatchedFunction) : StringRef(batchedFunction);
    auto emitCall = [&](StringRef callee, ValueRange args) {
      callGemm(b, module, loc, callee, args);
    };
    auto call = [&](Value batch) {
      SmallVector<Value> args{rowMajor,
                              opA,
                              opB,
                              M,
                              N,
                              K,
                              one,
                              address(ma, batch),
                              ma.lead,
                              address(mb, batch),
                              mb.lead,
                              beta,
                              address(mc, batch),
                              mc.lead};
      emitCall(name, args);
    };
    auto i64 = [&](Value index) {
      return arith::IndexCastOp::create(b, loc, b.getI64Type(), index)
          .getResult();
    };
    if (batched && !batchedName.empty()) {
      // One strided-batched GEMM: each matrix after the first is its batch
      // stride further on.
      Value zero = arith::ConstantIndexOp::create(b, loc, 0);
      SmallVector<Value> args{rowMajor,
                              opA,
                              opB,
                              M,
                              N,
                              K,
                              one,
                              address(ma, zero),
                              ma.lead,
                              i64(ma.batchStride),
                              address(mb, zero),
                              mb.lead,
                              i64(mb.batchStride),
                              beta,
                              address(mc, zero),
                              mc.lead,
                              i64(mc.batchStride),
                              dim(c, 0)};
      emitCall(batchedName, args);
    } else if (batched) {
      // One GEMM per matrix of the batch.
      Value zero = arith::ConstantIndexOp::create(b, loc, 0);
      Value step = arith::ConstantIndexOp::create(b, loc, 1);
      Value count = memref::DimOp::create(b, loc, c, 0);
      auto loop = scf::ForOp::create(b, loc, zero, count, step);
      b.setInsertionPointToStart(loop.getBody());
      call(loop.getInductionVar());
    } else {
      call(Value());
    }
    op->erase();
    if (linalg::FillOp fill = gemm.zeroFill)
      fill.erase();
  }

  /// A call of `callee`: a runtime function (spmdSgemm, spmdGpuSgemm, ...)
  /// as the runtime's call table types it; another (cblas_sgemm) declared
  /// with the arguments' types.
  static void callGemm(OpBuilder &b, ModuleOp module, Location loc,
                       StringRef callee, ValueRange args) {
    if (std::optional<RuntimeFunction> fn = lookupRuntimeFunction(callee)) {
      callRuntime(b, module, loc, *fn, args);
      return;
    }
    if (!module.lookupSymbol<func::FuncOp>(callee)) {
      OpBuilder mb = OpBuilder::atBlockEnd(module.getBody());
      auto decl = func::FuncOp::create(
          mb, module.getLoc(), callee,
          mb.getFunctionType(ValueRange(args).getTypes(), {}));
      decl.setPrivate();
    }
    func::CallOp::create(b, loc, callee, TypeRange{}, args);
  }
};

} // namespace
