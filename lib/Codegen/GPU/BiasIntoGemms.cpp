//===- BiasIntoGemms.cpp - a bias add as the GEMM's beta = 1 --------------===//
//
// A linear layer's bias add that nothing else joins (QKV's, read next by
// attention, a runtime call) is a kernel of its own between the GEMM and
// its reader. Here the GEMM accumulates into the bias broadcast over its
// output instead (cuBLAS's beta = 1): the broadcast reads only the bias,
// so spmd-gpu-fuse-kernels moves it into an earlier launch, and the add's
// kernel is gone.
//
//===----------------------------------------------------------------------===//

#include "Spmd/Codegen/GPU/Passes.h"
#include "Spmd/Codegen/MatmulAccumulation.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"

namespace mlir::spmd {
#define GEN_PASS_DEF_SPMDGPUBIASINTOGEMMSPASS
#include "Spmd/Codegen/GPU/Passes.h.inc"
} // namespace mlir::spmd

using namespace mlir;

namespace {

/// `generic` adds its two inputs of f32, element by element, into an init
/// it does not read, and yields the sum: nothing else to compute.
bool isPlainF32Add(linalg::GenericOp generic) {
  return spmd::addsItsInputs(generic) &&
         generic.getMatchingIndexingMap(generic.getDpsInitOperand(0))
             .isIdentity() &&
         generic.getBody()->front().getResult(0).getType().isF32();
}

/// The matmul whose product `value` is, directly or through one
/// expand_shape (a linear layer's rows viewed as batch x sequence), computed
/// into a zero fill and read nowhere else; and the expand_shape.
std::pair<linalg::MatmulOp, tensor::ExpandShapeOp> productOf(Value value) {
  auto expand = value.getDefiningOp<tensor::ExpandShapeOp>();
  if (expand) {
    if (!value.hasOneUse())
      return {};
    value = expand.getSrc();
  }
  linalg::MatmulOp matmul = spmd::zeroStartedMatmul(value);
  if (!matmul || !cast<ShapedType>(value.getType()).getElementType().isF32())
    return {};
  return {matmul, expand};
}

/// `map` (over the add's loops) as a map over the matmul's two loops (rows,
/// columns), when every dimension it reads is the only one of its
/// expand_shape group: the bias, (b, l, n) -> (n), is (m, n) -> (n).
std::optional<AffineMap> overProduct(AffineMap map,
                                     tensor::ExpandShapeOp expand) {
  if (!expand)
    return map;
  SmallVector<ReassociationIndices> groups = expand.getReassociationIndices();
  DenseMap<unsigned, unsigned> groupOf;
  for (auto [g, dims] : llvm::enumerate(groups))
    if (dims.size() == 1)
      groupOf[dims.front()] = g;
  SmallVector<AffineExpr> results;
  for (AffineExpr e : map.getResults()) {
    auto dim = dyn_cast<AffineDimExpr>(e);
    if (!dim || !groupOf.count(dim.getPosition()))
      return std::nullopt;
    results.push_back(
        getAffineDimExpr(groupOf[dim.getPosition()], map.getContext()));
  }
  return AffineMap::get(groups.size(), 0, results, map.getContext());
}

/// Rewrites `add` (a plain add of a matmul's product and another tensor
/// read through a broadcast, read by no linalg op) into the matmul accumulating
/// into that tensor broadcast over its output. Returns whether it did.
bool biasIntoGemm(linalg::GenericOp add) {
  // A linalg reader can take the add into its own kernel (the row kernel
  // of a LayerNorm after the layer): only adds read by other ops (views
  // for attention, a runtime call) are a kernel of their own.
  if (llvm::any_of(add->getUsers(),
                   [](Operation *user) { return isa<linalg::LinalgOp>(user); }))
    return false;
  for (unsigned k : {0u, 1u}) {
    OpOperand *productOperand = add.getDpsInputOperand(k);
    OpOperand *biasOperand = add.getDpsInputOperand(1 - k);
    if (!add.getMatchingIndexingMap(productOperand).isIdentity())
      continue;
    auto [matmul, expand] = productOf(productOperand->get());
    if (!matmul)
      continue;
    AffineMap biasMap = add.getMatchingIndexingMap(biasOperand);
    // A tensor of the product's own shape is spmd-fuse-elementwise's case
    // (the matmul accumulates into it, no broadcast).
    if (biasMap.isIdentity())
      continue;
    std::optional<AffineMap> map = overProduct(biasMap, expand);
    Value bias = biasOperand->get();
    if (!map || !spmd::availableAt(bias, matmul))
      continue;
    OpBuilder b(matmul);
    Location loc = add.getLoc();
    Value product = matmul->getResult(0);
    auto type = cast<RankedTensorType>(product.getType());
    Value empty =
        tensor::EmptyOp::create(b, loc, type.getShape(), type.getElementType());
    MLIRContext *ctx = b.getContext();
    SmallVector<utils::IteratorType> parallel(type.getRank(),
                                              utils::IteratorType::parallel);
    auto broadcast = linalg::GenericOp::create(
        b, loc, TypeRange{type}, ValueRange{bias}, ValueRange{empty},
        ArrayRef<AffineMap>{
            *map, AffineMap::getMultiDimIdentityMap(type.getRank(), ctx)},
        parallel, [](OpBuilder &nb, Location nloc, ValueRange args) {
          linalg::YieldOp::create(nb, nloc, args[0]);
        });
    auto fill = matmul.getDpsInits()[0].getDefiningOp<linalg::FillOp>();
    matmul.getDpsInitsMutable()[0].assign(broadcast->getResult(0));
    if (fill->use_empty()) {
      Operation *init = fill.getOutputs()[0].getDefiningOp();
      fill->erase();
      if (isa_and_present<tensor::EmptyOp>(init) && init->use_empty())
        init->erase();
    }
    add->replaceAllUsesWith(ValueRange{productOperand->get()});
    add->erase();
    return true;
  }
  return false;
}

struct SpmdGpuBiasIntoGemmsPass
    : public spmd::impl::SpmdGpuBiasIntoGemmsPassBase<
          SpmdGpuBiasIntoGemmsPass> {
  void runOnOperation() override {
    SmallVector<linalg::GenericOp> adds;
    getOperation()->walk([&](linalg::GenericOp generic) {
      if (isPlainF32Add(generic))
        adds.push_back(generic);
    });
    for (linalg::GenericOp add : adds)
      biasIntoGemm(add);
  }
};

} // namespace
