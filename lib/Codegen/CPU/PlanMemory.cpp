//===- PlanMemory.cpp - the transient memory a step will use, ahead of time
//===//
//
// spmd-plan-memory: walks each public function's buffers in program order
// (after spmd-free-after-last-use placed their frees) and records, as an
// exported constant `__spmd_memory_plan_<function>`, the most bytes live at
// once and what they are at that point: activations (and other
// intermediates), whole gradients (inputs of a reducing collective) and
// communication buffers (outputs of a collective). The runtime's allocator
// counts the same buffers at run time (spmd.memory_stats).
//
//===----------------------------------------------------------------------===//

#include "Spmd/Codegen/Passes.h"
#include "Spmd/Runtime/HostBlockSize.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Interfaces/DataLayoutInterfaces.h"

#include "llvm/Support/Format.h"

namespace mlir::spmd {
#define GEN_PASS_DEF_SPMDPLANMEMORYPASS
#include "Spmd/Codegen/Passes.h.inc"
} // namespace mlir::spmd

using namespace mlir;

namespace {

struct PlanMemory : mlir::spmd::impl::SpmdPlanMemoryPassBase<PlanMemory> {
  using Base::Base;
  void runOnOperation() override;
};

/// What a transient buffer is for.
enum Category { Activations = 0, Gradients = 1, Communication = 2 };

/// A constant upper bound of the index `size`: a constant, or a min with
/// one (fully_shard's uneven chunk: `minsi(maxsi(n - r * part, 0), part)`),
/// through casts and maxes of bounded values.
std::optional<int64_t> upperBound(Value size, unsigned depth = 0) {
  if (depth > 8)
    return std::nullopt;
  if (std::optional<int64_t> c = getConstantIntValue(size))
    return c;
  Operation *def = size.getDefiningOp();
  if (!def)
    return std::nullopt;
  if (isa<arith::IndexCastOp, arith::IndexCastUIOp>(def))
    return upperBound(def->getOperand(0), depth + 1);
  auto both =
      [&]() -> std::pair<std::optional<int64_t>, std::optional<int64_t>> {
    return {upperBound(def->getOperand(0), depth + 1),
            upperBound(def->getOperand(1), depth + 1)};
  };
  if (isa<arith::MinSIOp, arith::MinUIOp>(def)) {
    auto [a, b] = both();
    if (a && b)
      return std::min(*a, *b);
    return a ? a : b;
  }
  if (isa<arith::MaxSIOp, arith::MaxUIOp>(def)) {
    auto [a, b] = both();
    if (a && b)
      return std::max(*a, *b);
  }
  return std::nullopt;
}

/// The bytes the runtime's allocator hands out for `alloc` (its block
/// size: HostBlockSize.h): a dynamic size at its constant upper bound
/// (`upperBound`), 0 where it has none. Element sizes come from the data
/// layout (an `index` is 64 bits on the CPU path).
int64_t allocatedBytes(memref::AllocOp alloc, const DataLayout &layout) {
  MemRefType type = alloc.getType();
  int64_t elements = 1;
  unsigned dynamic = 0;
  for (int64_t dim : type.getShape()) {
    if (!ShapedType::isDynamic(dim)) {
      elements *= dim;
      continue;
    }
    std::optional<int64_t> bound =
        upperBound(alloc.getDynamicSizes()[dynamic++]);
    if (!bound || *bound < 0)
      return 0;
    elements *= *bound;
  }
  int64_t bytes =
      elements * static_cast<int64_t>(
                     layout.getTypeSize(type.getElementType()).getFixedValue());
  return static_cast<int64_t>(::spmd::runtime::hostBlockBytes(
      static_cast<uint64_t>(bytes), alloc.getAlignment().value_or(64)));
}

/// Whether `callee` is a collective of the runtime, and whether it reduces.
bool isCollective(StringRef callee, bool &reduces) {
  reduces = callee.contains("AllReduce") || callee.contains("ReduceScatter");
  return reduces || callee.contains("AllGather") ||
         callee.contains("AllToAll") || callee.contains("Broadcast");
}

/// The category of `alloc`'s buffer: its address (through views and
/// integer casts) passed to a collective as the input (operand 0) of a
/// reducing one makes it a gradient, as the output (operand 1) a
/// communication buffer.
Category categoryOf(memref::AllocOp alloc) {
  SmallVector<Value> work{alloc.getResult()};
  llvm::SmallPtrSet<Value, 8> seen;
  Category category = Activations;
  while (!work.empty()) {
    Value v = work.pop_back_val();
    if (!seen.insert(v).second)
      continue;
    for (OpOperand &use : v.getUses()) {
      Operation *user = use.getOwner();
      if (auto call = dyn_cast<func::CallOp>(user)) {
        bool reduces = false;
        if (!isCollective(call.getCallee(), reduces))
          continue;
        if (use.getOperandNumber() == 1)
          return Communication;
        if (use.getOperandNumber() == 0 && reduces)
          category = Gradients;
        continue;
      }
      if (isa<memref::ExtractAlignedPointerAsIndexOp, arith::IndexCastOp,
              ViewLikeOpInterface>(user))
        llvm::append_range(work, user->getResults());
    }
  }
  return category;
}

/// The plan of one function: the peak and its split by category.
struct Plan {
  Plan(const DataLayout &layout, bool keepPeakBuffers)
      : layout(layout), keepPeakBuffers(keepPeakBuffers) {}

  /// A live buffer: its bytes, category and allocation order.
  struct Buffer {
    int64_t bytes;
    Category category;
    unsigned order;
  };

  const DataLayout &layout;
  bool keepPeakBuffers;
  int64_t live = 0, peak = 0;
  unsigned allocations = 0;
  std::array<int64_t, 3> byCategory{}, atPeak{};
  llvm::DenseMap<Value, Buffer> buffers;
  /// The buffers live at the peak (with `keepPeakBuffers`).
  SmallVector<std::pair<Value, Buffer>> peakBuffers;

  void allocate(memref::AllocOp alloc) {
    int64_t bytes = allocatedBytes(alloc, layout);
    Category c = categoryOf(alloc);
    buffers[alloc.getResult()] = {bytes, c, allocations++};
    live += bytes;
    byCategory[c] += bytes;
    if (live > peak) {
      peak = live;
      atPeak = byCategory;
      if (keepPeakBuffers)
        peakBuffers.assign(buffers.begin(), buffers.end());
    }
  }

  void free(memref::DeallocOp dealloc) {
    auto it = buffers.find(dealloc.getMemref());
    if (it == buffers.end())
      return;
    live -= it->second.bytes;
    byCategory[it->second.category] -= it->second.bytes;
    buffers.erase(it);
  }

  /// Every alloc and dealloc of `region` in program order (nested regions
  /// depth first: a loop's body is counted once, as one iteration).
  void walk(Region &region) {
    region.walk<WalkOrder::PreOrder>([&](Operation *op) {
      if (auto alloc = dyn_cast<memref::AllocOp>(op))
        allocate(alloc);
      else if (auto dealloc = dyn_cast<memref::DeallocOp>(op))
        free(dealloc);
    });
  }

  /// A remark on `fn` naming the `count` largest buffers live at the peak.
  void report(func::FuncOp fn, unsigned count) {
    llvm::sort(peakBuffers, [](const auto &a, const auto &b) {
      return std::make_pair(-a.second.bytes, a.second.order) <
             std::make_pair(-b.second.bytes, b.second.order);
    });
    static constexpr const char *kNames[] = {"activation", "whole gradient",
                                             "communication"};
    std::string text;
    llvm::raw_string_ostream os(text);
    // KiB below a MiB, so that small programs read as more than zeros.
    auto size = [](int64_t bytes) {
      return bytes < 1048576 ? llvm::format("%.1f KiB", bytes / 1024.0)
                             : llvm::format("%.1f MiB", bytes / 1048576.0);
    };
    os << "transient peak " << size(peak) << " in " << peakBuffers.size()
       << " buffers; largest:";
    for (const auto &entry : ArrayRef(peakBuffers).take_front(count)) {
      const Buffer &buffer = entry.second;
      os << "\n  " << size(buffer.bytes) << " " << kNames[buffer.category]
         << " " << entry.first.getType() << " at " << entry.first.getLoc();
    }
    emitRemark(fn.getLoc(), text);
  }
};

void PlanMemory::runOnOperation() {
  ModuleOp module = getOperation();
  OpBuilder b(module.getContext());
  b.setInsertionPointToEnd(module.getBody());
  DataLayout layout(module);
  for (auto fn : llvm::to_vector(module.getOps<func::FuncOp>())) {
    if (fn.isExternal() || fn.isPrivate())
      continue;
    Plan plan(layout, reportPeak > 0);
    plan.walk(fn.getBody());
    if (reportPeak > 0)
      plan.report(fn, reportPeak);
    // {peak, activations, gradients, communication} at the peak.
    SmallVector<int64_t> values{plan.peak, plan.atPeak[Activations],
                                plan.atPeak[Gradients],
                                plan.atPeak[Communication]};
    auto type = LLVM::LLVMArrayType::get(b.getI64Type(), values.size());
    auto global = LLVM::GlobalOp::create(
        b, fn.getLoc(), type, /*isConstant=*/true, LLVM::Linkage::External,
        ("__spmd_memory_plan_" + fn.getSymName()).str(),
        b.getI64TensorAttr(values));
    (void)global;
  }
}

} // namespace
