//===- OutlineLoopNests.cpp - one function per linalg op on buffers -------===//
//
// spmd-outline-loop-nests: every linalg op on buffers moves into a private,
// no_inline function of its own, shared by the ops that differ only in
// their operands, so that LLVM optimizes many small functions (the
// repeated layers of a model once) instead of one giant train step.
//
//===----------------------------------------------------------------------===//

#include "Spmd/Codegen/Passes.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/StringMap.h"

namespace mlir::spmd {
#define GEN_PASS_DEF_SPMDOUTLINELOOPNESTSPASS
#include "Spmd/Codegen/Passes.h.inc"
} // namespace mlir::spmd

using namespace mlir;

namespace {

/// The values `op`'s regions read from above it, split into constants (to
/// clone) and the rest (to pass).
void capturedValues(Operation *op, SmallVectorImpl<Operation *> &constants,
                    llvm::SetVector<Value> &passed) {
  llvm::SetVector<Value> above;
  getUsedValuesDefinedAbove(op->getRegions(), above);
  for (Value v : above) {
    Operation *def = v.getDefiningOp();
    if (def && def->hasTrait<OpTrait::ConstantLike>())
      constants.push_back(def);
    else
      passed.insert(v);
  }
}

/// A private function holding a clone of `op` over its arguments.
func::FuncOp outline(OpBuilder &moduleBuilder, Operation *op,
                     ArrayRef<Operation *> constants, ArrayRef<Value> args,
                     StringRef name) {
  SmallVector<Type> types;
  for (Value v : args)
    types.push_back(v.getType());
  Location loc = op->getLoc();
  auto fn = func::FuncOp::create(moduleBuilder, loc, name,
                                 moduleBuilder.getFunctionType(types, {}));
  fn.setPrivate();
  // Internal to the program's library (several programs share one process)
  // and never inlined back into the step.
  fn->setAttr("llvm.linkage",
              LLVM::LinkageAttr::get(moduleBuilder.getContext(),
                                     LLVM::linkage::Linkage::Internal));
  fn->setAttr("passthrough", moduleBuilder.getArrayAttr(
                                 moduleBuilder.getStringAttr("noinline")));
  Block *body = fn.addEntryBlock();
  OpBuilder b = OpBuilder::atBlockBegin(body);
  IRMapping mapping;
  for (auto [v, arg] : llvm::zip(args, body->getArguments()))
    mapping.map(v, arg);
  for (Operation *c : constants)
    b.clone(*c, mapping);
  b.clone(*op, mapping);
  func::ReturnOp::create(b, loc);
  return fn;
}

/// What makes two outlined functions the same: the op and its constants,
/// printed over block arguments, and the argument types.
std::string key(func::FuncOp fn) {
  std::string text;
  llvm::raw_string_ostream os(text);
  for (Type t : fn.getArgumentTypes())
    os << t << ";";
  OpPrintingFlags flags;
  flags.printGenericOpForm().useLocalScope();
  for (Operation &op : fn.getBody().front())
    op.print(os, flags);
  return text;
}

/// A memref.copy between strided layouts as a linalg.copy: LLVM lowers it
/// otherwise to the runtime's memrefCopy, which walks the elements one by
/// one through their strides. Contiguous copies stay (a memcpy).
void stridedCopiesToLinalg(ModuleOp module) {
  SmallVector<memref::CopyOp> copies;
  module.walk([&](memref::CopyOp copy) {
    auto from = dyn_cast<MemRefType>(copy.getSource().getType());
    auto to = dyn_cast<MemRefType>(copy.getTarget().getType());
    if (from && to &&
        (!from.getLayout().isIdentity() || !to.getLayout().isIdentity()))
      copies.push_back(copy);
  });
  for (memref::CopyOp copy : copies) {
    OpBuilder b(copy);
    linalg::CopyOp::create(b, copy.getLoc(), copy.getSource(),
                           copy.getTarget());
    copy.erase();
  }
}

struct SpmdOutlineLoopNestsPass
    : spmd::impl::SpmdOutlineLoopNestsPassBase<SpmdOutlineLoopNestsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    stridedCopiesToLinalg(module);
    SymbolTable symbols(module);
    SmallVector<linalg::LinalgOp> ops;
    for (auto fn : module.getOps<func::FuncOp>())
      fn.walk([&](linalg::LinalgOp op) {
        if (op.hasPureBufferSemantics())
          ops.push_back(op);
      });

    llvm::StringMap<func::FuncOp> outlined;
    OpBuilder moduleBuilder = OpBuilder::atBlockEnd(module.getBody());
    for (linalg::LinalgOp op : ops) {
      SmallVector<Operation *> constants;
      // One argument per distinct value: an op reading and writing one
      // buffer gets it once.
      llvm::SetVector<Value> passed(llvm::from_range, op->getOperands());
      capturedValues(op, constants, passed);
      ArrayRef<Value> args = passed.getArrayRef();
      std::string name = ("__spmd_" + op->getName().stripDialect() + "_" +
                          Twine(outlined.size()))
                             .str();
      func::FuncOp fn = outline(moduleBuilder, op, constants, args, name);
      auto [it, added] = outlined.try_emplace(key(fn), fn);
      if (added)
        symbols.insert(fn);
      else
        fn.erase();
      OpBuilder b(op);
      func::CallOp::create(b, op->getLoc(), it->second, args);
      op->erase();
    }
  }
};

} // namespace
