//===- StateInRuntimeMemory.cpp - state in buffers the runtime allocates --===//
//
// spmd-state-in-runtime-memory: every state global (a `memref.global`
// marked `spmd.state_dtype`) becomes the runtime's buffer of that name,
// looked up once per function at its entry (`spmdStateAddress`), so that no
// parameter or optimizer moment lives in the shared object's `.bss` (where
// the default code model cannot reach past ~2 GiB).
//
//===----------------------------------------------------------------------===//

#include "Spmd/Conversion/Passes.h"
#include "Spmd/Conversion/RuntimeCalls.h"
#include "Spmd/Dialect/Spmd/IR/SpmdDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "llvm/ADT/MapVector.h"

namespace mlir::spmd {
#define GEN_PASS_DEF_SPMDSTATEINRUNTIMEMEMORYPASS
#include "Spmd/Conversion/Passes.h.inc"
} // namespace mlir::spmd

using namespace mlir;

namespace {

struct StateInRuntimeMemory
    : spmd::impl::SpmdStateInRuntimeMemoryPassBase<StateInRuntimeMemory> {
  void runOnOperation() override;
};

/// The bytes of `type` in memory (i1 is a byte, as torch.bool).
int64_t byteSize(MemRefType type) {
  return type.getNumElements() *
         ((type.getElementType().getIntOrFloatBitWidth() + 7) / 8);
}

void StateInRuntimeMemory::runOnOperation() {
  ModuleOp module = getOperation();
  StringRef attrName = spmd::SpmdDialect::getStateDtypeAttrName();
  llvm::MapVector<StringAttr, memref::GlobalOp> states;
  for (auto global : module.getOps<memref::GlobalOp>())
    if (global->hasAttr(attrName))
      states[global.getSymNameAttr()] = global;
  if (states.empty())
    return;
  // Every use must be a get_global of the whole buffer.
  bool ok = true;
  for (auto [name, global] : states) {
    MemRefType type = global.getType();
    if (!type.getLayout().isIdentity() || !type.hasStaticShape()) {
      global.emitError("spmd-state-in-runtime-memory: state @")
          << name.getValue() << " has a non-identity layout or dynamic shape";
      ok = false;
    }
  }
  // One walk over every symbol use of the module (a walk per state was
  // quadratic: 4 s of GPT-2's 6 s lowering).
  if (std::optional<SymbolTable::UseRange> uses =
          SymbolTable::getSymbolUses(&module.getBodyRegion()))
    for (const SymbolTable::SymbolUse &use : *uses) {
      StringAttr name = use.getSymbolRef().getRootReference();
      if (!states.count(name) || isa<memref::GetGlobalOp>(use.getUser()))
        continue;
      use.getUser()->emitError("spmd-state-in-runtime-memory: state @")
          << name.getValue() << " is used other than by memref.get_global";
      ok = false;
    }
  if (!ok)
    return signalPassFailure();

  OpBuilder b(module.getContext());
  SymbolTable symbols(module);
  spmd::StringConstants names("__spmd_state_lookup_", &symbols);
  for (auto fn : module.getOps<func::FuncOp>()) {
    if (fn.isExternal())
      continue;
    SmallVector<memref::GetGlobalOp> gets;
    fn.walk([&](memref::GetGlobalOp get) {
      if (states.count(get.getNameAttr().getAttr()))
        gets.push_back(get);
    });
    // One lookup per state per function, at its entry, in the order of
    // first use (spmd_register_state's order is the registration order).
    // All are made before any get_global is erased: the entry's first op
    // may be one, and the insertion point is just before it.
    llvm::DenseMap<StringAttr, Value> buffers;
    b.setInsertionPointToStart(&fn.getBody().front());
    for (memref::GetGlobalOp get : gets) {
      StringAttr name = get.getNameAttr().getAttr();
      Value &buffer = buffers[name];
      if (buffer)
        continue;
      memref::GlobalOp global = states.lookup(name);
      Location loc = global.getLoc();
      MemRefType type = global.getType();
      auto code = cast<IntegerAttr>(global->getAttr(attrName));
      Value text = names.get(b, module, loc, name.getValue());
      Value bytes = arith::ConstantIntOp::create(b, loc, byteSize(type), 64);
      Value dtype = arith::ConstantIntOp::create(b, loc, code.getInt(), 32);
      Value address = spmd::callRuntime(b, module, loc,
                                        spmd::RuntimeFunction::spmdStateAddress,
                                        {text, bytes, dtype}, &symbols)
                          .getResult(0);
      buffer = spmd::memRefAtAddress(b, loc, type, address);
    }
    for (memref::GetGlobalOp get : gets) {
      get.getResult().replaceAllUsesWith(
          buffers.lookup(get.getNameAttr().getAttr()));
      get.erase();
    }
  }
  for (auto [name, global] : states)
    global.erase();
}

} // namespace
