//===- GroupGemms.cpp - independent GEMMs in one cuBLAS call --------------===//
//
// A step's f32 GEMMs are one cuBLAS call each, a third to a half of its
// launches; a linear layer's backward issues two that share an operand and
// nothing else (dX = dY W, dW = dY^T X), a batched matmul's backward two
// batched ones. This pass makes each such pair one call of
// spmdGpuSgemmPair / spmdGpuSgemmStridedBatchedPair
// (cublasSgemmGroupedBatched, two groups): the later GEMM moves up to the
// earlier one with the operations that compute its operands, past operations
// that touch nothing it touches (Footprint.h). Each GEMM is computed as before.
//
//===----------------------------------------------------------------------===//

#include "Footprint.h"
#include "Spmd/Codegen/GPU/Passes.h"
#include "Spmd/Conversion/RuntimeCalls.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace mlir::spmd {
#define GEN_PASS_DEF_SPMDGPUGROUPGEMMSPASS
#include "Spmd/Codegen/GPU/Passes.h.inc"
} // namespace mlir::spmd

using namespace mlir;

using spmd::conflict;
using spmd::Footprint;
using spmd::footprintOf;

namespace {

/// How far past a GEMM its partner may be (operations that touch memory);
/// bounds the pass's cost on long straight-line steps.
constexpr int kWindow = 32;

/// The f32 GEMM calls that pair up (GpuRuntimeFunctions.def): the callee
/// and the pair's callee.
struct GemmKind {
  spmd::RuntimeFunction callee;
  spmd::RuntimeFunction pair;
};
constexpr GemmKind kKinds[] = {
    {spmd::RuntimeFunction::spmdGpuSgemm,
     spmd::RuntimeFunction::spmdGpuSgemmPair},
    {spmd::RuntimeFunction::spmdGpuSgemmStridedBatched,
     spmd::RuntimeFunction::spmdGpuSgemmStridedBatchedPair}};

/// The kind of GEMM `op` calls, if it is one that pairs up.
const GemmKind *gemmKind(Operation *op) {
  for (const GemmKind &kind : kKinds)
    if (spmd::isRuntimeCall(op, kind.callee))
      return &kind;
  return nullptr;
}

/// The operations `second` needs moved up to run right after `first`
/// (what computes its operands), when nothing else between them writes
/// what it reads or touches what it writes; null otherwise.
std::optional<SmallVector<Operation *>>
movesUpTo(func::CallOp first, func::CallOp second,
          const Footprint &secondFootprint, ArrayRef<Operation *> between) {
  std::optional<SmallVector<Operation *>> defs =
      spmd::definitionsAfter(first, second);
  if (!defs)
    return std::nullopt;
  for (Operation *op : between)
    if (!llvm::is_contained(*defs, op) &&
        conflict(footprintOf(op), secondFootprint))
      return std::nullopt;
  return defs;
}

/// The first GEMM of `first`'s kind after it in its block that can run
/// beside it, with the operations to move up with it.
std::optional<std::pair<func::CallOp, SmallVector<Operation *>>>
partnerOf(func::CallOp first, const GemmKind &kind) {
  Footprint firstFootprint = footprintOf(first);
  if (firstFootprint.opaque)
    return std::nullopt;
  SmallVector<Operation *> between;
  int touching = 0;
  for (Operation *op = first->getNextNode(); op && touching < kWindow;
       op = op->getNextNode()) {
    Footprint f = footprintOf(op);
    if (gemmKind(op) == &kind && !conflict(firstFootprint, f)) {
      auto second = cast<func::CallOp>(op);
      if (auto defs = movesUpTo(first, second, f, between))
        return std::make_pair(second, std::move(*defs));
    }
    // Nothing moves past an operation whose effects are unknown.
    if (f.opaque)
      return std::nullopt;
    if (f.touchesMemory())
      ++touching;
    between.push_back(op);
  }
  return std::nullopt;
}

/// `first` and `second` as one call of their kind's pair where `first`
/// was, after the operations `second` uses (`defs`, moved up).
Operation *pairUp(ModuleOp module, const GemmKind &kind, func::CallOp first,
                  func::CallOp second, ArrayRef<Operation *> defs) {
  Operation *after = first;
  for (Operation *def : defs) {
    def->moveAfter(after);
    after = def;
  }
  OpBuilder b(first);
  b.setInsertionPointAfter(after);
  SmallVector<Value> operands(first.getOperands());
  llvm::append_range(operands, second.getOperands());
  Location loc = b.getFusedLoc({first.getLoc(), second.getLoc()});
  Operation *pair = spmd::callRuntime(b, module, loc, kind.pair, operands);
  first.erase();
  second.erase();
  return pair;
}

struct SpmdGpuGroupGemmsPass
    : public spmd::impl::SpmdGpuGroupGemmsPassBase<SpmdGpuGroupGemmsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<Block *> blocks;
    for (auto fn : module.getOps<func::FuncOp>())
      fn.walk([&](Block *block) { blocks.push_back(block); });
    for (Block *block : blocks) {
      Operation *op = block->empty() ? nullptr : &block->front();
      while (op) {
        Operation *next = op->getNextNode();
        if (const GemmKind *kind = gemmKind(op)) {
          auto first = cast<func::CallOp>(op);
          // The search goes on after the pair (a third GEMM starts the
          // next one).
          if (auto partner = partnerOf(first, *kind))
            next = pairUp(module, *kind, first, partner->first, partner->second)
                       ->getNextNode();
        }
        op = next;
      }
    }
  }
};

} // namespace
