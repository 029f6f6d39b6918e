//===- Footprint.h - what an op of the GPU host code touches ----*- C++ -*-===//
//
// What spmd-gpu-fuse-kernels and spmd-gpu-row-kernels know of the memory an
// operation of a bufferized GPU host function reads and writes, to move
// kernels past it: loads and stores by element, other ops by their memory
// effects, and the runtime's device calls (cuBLAS GEMMs, attention,
// collectives) by the buffers whose addresses they are given. Everything
// else is opaque: nothing moves past it.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_LIB_CONVERSION_GPU_FOOTPRINT_H
#define SPMD_LIB_CONVERSION_GPU_FOOTPRINT_H

#include "BufferRoots.h"
#include "Spmd/Conversion/RuntimeCalls.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringMap.h"

#include <optional>

namespace mlir::spmd {

/// One read or write of a buffer; `indexed` for a memref.load/store (whose
/// indices say which element), otherwise the whole buffer.
struct BufferAccess {
  Value buffer;
  Root root;
  SmallVector<Value> indices;
  bool write;
  bool indexed;
};

/// What an operation (with its regions) does to memory; `opaque` when some
/// effect is unknown (calls) or not on a buffer.
struct Footprint {
  SmallVector<BufferAccess> accesses;
  bool opaque = false;

  bool touchesMemory() const { return opaque || !accesses.empty(); }

  void add(const Footprint &other) {
    opaque |= other.opaque;
    accesses.append(other.accesses.begin(), other.accesses.end());
  }
};

/// Runtime functions whose only device memory effects are on the buffers
/// whose addresses they take (SpmdGpuRuntime.h, SpmdRuntime.h; each is
/// ordered on the program stream), with the positions of the addresses
/// they write (a GEMM's C, attention's outputs, a collective's output); the
/// others they read. Null for any other function.
inline const SmallVector<unsigned> *writtenAddresses(StringRef callee) {
  using RF = spmd::RuntimeFunction;
  static const llvm::StringMap<SmallVector<unsigned>> functions = [] {
    llvm::StringMap<SmallVector<unsigned>> map;
    auto add = [&](RF fn, SmallVector<unsigned> written) {
      map[spmd::runtimeFunctionName(fn)] = std::move(written);
    };
    add(RF::spmdGpuSgemm, {12});
    add(RF::spmdGpuSgemmPair, {12, 26});
    add(RF::spmdGpuSgemmStridedBatchedPair, {14, 32});
    add(RF::spmdGpuGemmBf16, {12});
    add(RF::spmdGpuSgemmStridedBatched, {14});
    add(RF::spmdGpuGemmBf16StridedBatched, {14});
    add(RF::spmdGpuAttentionForward, {4, 5});
    add(RF::spmdGpuAttentionBackward, {7, 8, 9});
    add(RF::spmdAllReduceStart, {1});
    add(RF::spmdBroadcastStart, {1});
    add(RF::spmdAllGatherStart, {1});
    add(RF::spmdReduceScatterStart, {1});
    add(RF::spmdAllToAll4Start, {1});
    return map;
  }();
  auto it = functions.find(callee);
  return it == functions.end() ? nullptr : &it->second;
}

/// Whether `op` looks up a runtime buffer's device address
/// (spmdGpuStateAddress, spmdGpuConstantAddress: the buffer made and filled
/// on the first call, the same address after): it touches none of the
/// program's buffers, and may run earlier.
inline bool isAddressLookup(Operation *op) {
  return spmd::isRuntimeCall(op, spmd::RuntimeFunction::spmdGpuStateAddress) ||
         spmd::isRuntimeCall(op, spmd::RuntimeFunction::spmdGpuConstantAddress);
}

/// Whether `op` touches no memory, or only allocates a fresh buffer: what
/// kernels may move past, and with the loops whose operands it defines.
inline bool onlyAllocates(Operation *op) {
  if (isMemoryEffectFree(op))
    return true;
  auto effects = dyn_cast<MemoryEffectOpInterface>(op);
  if (!effects || op->getNumRegions() != 0)
    return false;
  SmallVector<MemoryEffects::EffectInstance> instances;
  effects.getEffects(instances);
  return llvm::all_of(instances, [](MemoryEffects::EffectInstance &e) {
    return isa<MemoryEffects::Allocate>(e.getEffect());
  });
}

/// Whether `op`, computing a value a moved op (a loop, a GEMM call) uses,
/// may move up with it: it touches no memory, allocates a buffer, or looks
/// up a runtime buffer.
inline bool movableDefinition(Operation *op) {
  return onlyAllocates(op) || isAddressLookup(op);
}

/// The operations of `op`'s block between `first` and `op` that compute
/// values `op` (or an op nested in it) uses, transitively, in block order;
/// null when one of them may not move up (movableDefinition).
inline std::optional<SmallVector<Operation *>>
definitionsAfter(Operation *first, Operation *op) {
  SetVector<Operation *> defs;
  SmallVector<Value> work;
  op->walk([&](Operation *inner) {
    for (Value operand : inner->getOperands())
      work.push_back(operand);
  });
  while (!work.empty()) {
    Operation *def = work.pop_back_val().getDefiningOp();
    if (!def || def->getBlock() != op->getBlock() ||
        !first->isBeforeInBlock(def) || def == op || defs.contains(def))
      continue;
    if (!movableDefinition(def))
      return std::nullopt;
    defs.insert(def);
    llvm::append_range(work, def->getOperands());
  }
  SmallVector<Operation *> ordered(defs.begin(), defs.end());
  llvm::sort(ordered,
             [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  return ordered;
}

/// Whether `value` is a number the host computed from constants and
/// buffers' layouts (a view's offset and strides, as a call's size or
/// stride arguments), not an address.
inline bool layoutNumber(Value value) {
  if (matchPattern(value, m_Constant()))
    return true;
  Operation *def = value.getDefiningOp();
  if (!def)
    return false;
  if (isa<memref::ExtractStridedMetadataOp>(def))
    return value != def->getResult(0);
  if (isa<arith::IndexCastOp, arith::MulIOp, arith::AddIOp>(def))
    return llvm::all_of(def->getOperands(), layoutNumber);
  return false;
}

/// The buffer (view) whose elements start at address `value`: an i64 or
/// index made by memref.extract_aligned_pointer_as_index (through index
/// casts and extract_strided_metadata's base), plus the view's offset in
/// bytes; null for anything else.
inline Value addressedBuffer(Value value) {
  while (auto cast = value.getDefiningOp<arith::IndexCastOp>())
    value = cast.getIn();
  if (auto add = value.getDefiningOp<arith::AddIOp>()) {
    for (auto [base, offset] : {std::pair(add.getLhs(), add.getRhs()),
                                std::pair(add.getRhs(), add.getLhs())})
      if (layoutNumber(offset))
        if (Value buffer = addressedBuffer(base))
          return buffer;
    return nullptr;
  }
  auto pointer = value.getDefiningOp<memref::ExtractAlignedPointerAsIndexOp>();
  if (!pointer)
    return nullptr;
  Value buffer = pointer.getSource();
  if (auto metadata = buffer.getDefiningOp<memref::ExtractStridedMetadataOp>())
    buffer = metadata.getSource();
  return buffer;
}

/// A runtime call's footprint: the buffers it is given, whole; opaque
/// unless the callee is known and every other operand a constant or a
/// layout's number (sizes, strides, flags, scalars) or, for spmdWait, a
/// collective's handle (the wait finishes that collective's writes).
inline Footprint callFootprint(func::CallOp call) {
  Footprint f;
  StringRef callee = call.getCallee();
  if (isAddressLookup(call))
    return f;
  if (spmd::isRuntimeCall(call, spmd::RuntimeFunction::spmdWait)) {
    auto start = call.getOperand(0).getDefiningOp<func::CallOp>();
    if (start && writtenAddresses(start.getCallee()))
      return callFootprint(start);
    f.opaque = true;
    return f;
  }
  const SmallVector<unsigned> *written = writtenAddresses(callee);
  if (!written) {
    f.opaque = true;
    return f;
  }
  for (auto [position, operand] : llvm::enumerate(call.getOperands())) {
    if (Value buffer = addressedBuffer(operand)) {
      f.accesses.push_back({buffer,
                            rootOf(buffer),
                            {},
                            llvm::is_contained(*written, position),
                            false});
      continue;
    }
    if (!layoutNumber(operand)) {
      f.opaque = true;
      return f;
    }
  }
  return f;
}

inline Footprint footprintOf(Operation *root) {
  Footprint f;
  auto add = [&](Value buffer, ValueRange indices, bool write, bool indexed) {
    f.accesses.push_back({buffer, rootOf(buffer),
                          SmallVector<Value>(indices.begin(), indices.end()),
                          write, indexed});
  };
  root->walk([&](Operation *op) {
    if (f.opaque)
      return WalkResult::interrupt();
    if (auto load = dyn_cast<memref::LoadOp>(op)) {
      add(load.getMemRef(), load.getIndices(), false, true);
      return WalkResult::advance();
    }
    if (auto store = dyn_cast<memref::StoreOp>(op)) {
      add(store.getMemRef(), store.getIndices(), true, true);
      return WalkResult::advance();
    }
    if (auto call = dyn_cast<func::CallOp>(op)) {
      f.add(callFootprint(call));
      return WalkResult::advance();
    }
    // An index check (a gather's bounds) only decides whether the program
    // stops: running it earlier or later in a fused kernel is the same
    // program (its modelled write of a global resource is not a buffer's).
    if (isa<cf::AssertOp>(op))
      return WalkResult::advance();
    // The walk has visited the regions already; an op with effects of its
    // own on top of its body's (linalg on buffers: its operands) says so.
    auto effects = dyn_cast<MemoryEffectOpInterface>(op);
    if (!effects && op->hasTrait<OpTrait::HasRecursiveMemoryEffects>())
      return WalkResult::advance();
    if (!effects) {
      f.opaque = true;
      return WalkResult::interrupt();
    }
    SmallVector<MemoryEffects::EffectInstance> instances;
    effects.getEffects(instances);
    for (MemoryEffects::EffectInstance &instance : instances) {
      // A fresh allocation touches nothing anyone else can see.
      if (isa<MemoryEffects::Allocate>(instance.getEffect()))
        continue;
      Value value = instance.getValue();
      if (!value || !isa<BaseMemRefType>(value.getType())) {
        f.opaque = true;
        return WalkResult::interrupt();
      }
      add(value, {}, !isa<MemoryEffects::Read>(instance.getEffect()), false);
    }
    return WalkResult::advance();
  });
  return f;
}

/// Whether one of the two writes what the other touches.
inline bool conflict(const Footprint &a, const Footprint &b) {
  if (a.opaque || b.opaque)
    return true;
  for (const BufferAccess &x : a.accesses)
    for (const BufferAccess &y : b.accesses)
      if ((x.write || y.write) && mayAlias(x.root, y.root) &&
          (!sameRoot(x.root, y.root) || mayOverlap(x.buffer, y.buffer)))
        return true;
  return false;
}

} // namespace mlir::spmd

#endif // SPMD_LIB_CONVERSION_GPU_FOOTPRINT_H
