//===- ReportCollectives.cpp - what a local program communicates ----------===//
//
// spmd-report-collectives: prints, as JSON lines, the meshes, the state and
// every collective of a local program (after spmd-distribute) with its
// kind, group, bytes and the state it feeds (the parameter whose gradient
// it reduces, the output it produces). spmd.explain reads it.
//
//===----------------------------------------------------------------------===//

#include "Spmd/Dialect/Spmd/IR/SpmdOps.h"
#include "Spmd/Dialect/Spmd/Transforms/Passes.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include "llvm/ADT/SetVector.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir::spmd {
#define GEN_PASS_DEF_SPMDREPORTCOLLECTIVESPASS
#include "Spmd/Dialect/Spmd/Transforms/Passes.h.inc"
} // namespace mlir::spmd

using namespace mlir;
using namespace mlir::spmd;

namespace {

std::string str(Type type) {
  std::string s;
  llvm::raw_string_ostream os(s);
  type.print(os);
  return s;
}

/// Bytes of a ranked tensor with a static shape (0 if dynamic).
int64_t bytesOf(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !tensor.hasStaticShape())
    return 0;
  return tensor.getNumElements() * ((tensor.getElementTypeBitWidth() + 7) / 8);
}

/// The state a value loaded by spmd.load comes from.
std::optional<StringRef> loadedState(Value value) {
  if (auto load = value.getDefiningOp<LoadOp>())
    return load.getState();
  return std::nullopt;
}

/// The states the results of `op` reach: through any op, up to the
/// optimizer that takes them as gradient i (parameter i's state) or the
/// store that writes them.
llvm::SetVector<StringRef> feeds(ValueRange values) {
  llvm::SetVector<StringRef> states;
  llvm::SmallPtrSet<Operation *, 32> seen;
  SmallVector<Value> work(values.begin(), values.end());
  auto optimizer = [&](OpOperand &use, OperandRange params,
                       OperandRange grads) {
    unsigned first = grads.getBeginOperandIndex();
    unsigned n = use.getOperandNumber();
    if (n >= first && n < first + grads.size())
      if (std::optional<StringRef> state = loadedState(params[n - first]))
        states.insert(*state);
  };
  while (!work.empty()) {
    Value value = work.pop_back_val();
    for (OpOperand &use : value.getUses()) {
      Operation *user = use.getOwner();
      if (auto sgd = dyn_cast<SGDOp>(user)) {
        optimizer(use, sgd.getParams(), sgd.getGrads());
        continue;
      }
      if (auto adam = dyn_cast<AdamOp>(user)) {
        optimizer(use, adam.getParams(), adam.getGrads());
        continue;
      }
      if (auto store = dyn_cast<StoreOp>(user)) {
        states.insert(store.getState());
        continue;
      }
      if (!seen.insert(user).second)
        continue;
      // Through the op, and out of a region it is nested in.
      llvm::append_range(work, user->getResults());
      for (Operation *parent = user->getParentOp();
           parent && !isa<func::FuncOp>(parent); parent = parent->getParentOp())
        if (seen.insert(parent).second)
          llvm::append_range(work, parent->getResults());
    }
  }
  return states;
}

struct ReportCollectives
    : spmd::impl::SpmdReportCollectivesPassBase<ReportCollectives> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    llvm::raw_ostream &os = llvm::outs();
    auto emit = [&](llvm::json::Object object) {
      os << llvm::json::Value(std::move(object)) << "\n";
    };
    module.walk([&](MeshOp mesh) {
      emit(llvm::json::Object{{"kind", "mesh"},
                              {"name", mesh.getSymName()},
                              {"shape", llvm::json::Array(mesh.getShape())}});
    });
    module.walk([&](StateOp state) {
      emit(llvm::json::Object{{"kind", "state"},
                              {"name", state.getSymName()},
                              {"role", stringifyStateRole(state.getRole())},
                              {"type", str(state.getTensorType())},
                              {"bytes", bytesOf(state.getTensorType())}});
    });
    module.walk([&](Operation *op) {
      auto collective = dyn_cast<CollectiveOpInterface>(op);
      if (!collective)
        return;
      llvm::json::Object entry{{"kind", "collective"},
                               {"op", op->getName().stripDialect()}};
      if (auto reduce = dyn_cast<AllReduceOp>(op))
        entry["reduction"] = stringifyReductionKind(reduce.getKind());
      if (auto scatter = dyn_cast<ReduceScatterOp>(op))
        entry["reduction"] = stringifyReductionKind(scatter.getKind());
      auto mesh = op->getAttrOfType<FlatSymbolRefAttr>("mesh");
      auto axes = op->getAttrOfType<DenseI64ArrayAttr>("axes");
      entry["mesh"] = mesh ? mesh.getValue().str() : "";
      entry["axes"] =
          llvm::json::Array(axes ? axes.asArrayRef() : ArrayRef<int64_t>());
      llvm::json::Array types;
      int64_t bytes = 0;
      for (Value input : op->getOperands()) {
        types.push_back(str(input.getType()));
        bytes += bytesOf(input.getType());
      }
      entry["types"] = std::move(types);
      entry["bytes"] = bytes;
      entry["async"] = llvm::any_of(op->getResultTypes(), [](Type type) {
        return isa<FutureType>(type);
      });
      llvm::json::Array fed;
      for (StringRef state : feeds(op->getResults()))
        fed.push_back(state.str());
      entry["feeds"] = std::move(fed);
      // A bucket (spmd-bucket-collectives): the wait's result only cut
      // into pieces; each piece's size and what it reaches.
      if (op->getNumResults() == 1 && op->getResult(0).hasOneUse())
        if (auto wait = dyn_cast<WaitOp>(*op->getResult(0).user_begin());
            wait && wait->getNumResults() == 1 &&
            !wait->getResult(0).use_empty() &&
            llvm::all_of(wait->getResult(0).getUsers(),
                         llvm::IsaPred<tensor::ExtractSliceOp>)) {
          llvm::json::Array pieces;
          for (Operation *user : wait->getResult(0).getUsers()) {
            auto slice = cast<tensor::ExtractSliceOp>(user);
            llvm::json::Array pieceFeeds;
            for (StringRef state : feeds(slice->getResults()))
              pieceFeeds.push_back(state.str());
            pieces.push_back(
                llvm::json::Object{{"bytes", bytesOf(slice.getType())},
                                   {"feeds", std::move(pieceFeeds)}});
          }
          entry["pieces"] = std::move(pieces);
        }
      emit(std::move(entry));
    });
  }
};

} // namespace
