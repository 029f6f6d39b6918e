//===- RuntimeCalls.h - building calls into libSpmdRuntime ------*- C++ -*-===//
//
// What the lowerings to runtime calls share (convert-spmd-to-runtime,
// spmd-lower-attention, spmd-trace-regions, spmd-gpu-trace-sources): a call
// of a runtime function, declared private in the module on first use; a
// buffer's address as the i64 the C ABI takes, and a memref over an
// address the runtime returned; a constant C string; the
// name a trace gives the code of a location.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_CONVERSION_RUNTIMECALLS_H
#define SPMD_CONVERSION_RUNTIMECALLS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringMap.h"

namespace mlir::spmd {

/// A call of runtime function `name` at the builder's insertion point; the
/// function is declared (private, with these argument and result types) at
/// the end of `module` unless it already is.
func::CallOp callRuntime(OpBuilder &b, ModuleOp module, Location loc,
                         StringRef name, ValueRange args,
                         TypeRange results = {});

/// The aligned address of `memref` as an i64.
Value bufferAddress(OpBuilder &b, Location loc, Value memref);

/// A memref of `type` (static shape, identity layout) over the address
/// `address` (an i64 a runtime function returned): the descriptor built in
/// the LLVM dialect's layout and cast to the memref type (the cast folds
/// away when the rest is lowered to LLVM). A runtime function returning a
/// memref would need the C interface, whose wrapper the lowerings to LLVM
/// do not generate for declarations.
Value memRefAtAddress(OpBuilder &b, Location loc, MemRefType type,
                      Value address);

/// The address (!llvm.ptr) of a NUL-terminated constant copy of `text`,
/// an internal global named `symbol` made at the start of `module` unless
/// it exists.
Value stringConstant(OpBuilder &b, ModuleOp module, Location loc,
                     StringRef text, StringRef symbol);

/// Constant C strings of one module, one internal global per distinct text,
/// named `<prefix><n>`.
class StringConstants {
public:
  explicit StringConstants(StringRef prefix) : prefix(prefix.str()) {}
  /// The address (!llvm.ptr) of `text`'s global, made on first use.
  Value get(OpBuilder &b, ModuleOp module, Location loc, StringRef text);

private:
  std::string prefix;
  llvm::StringMap<std::string> symbols;
};

/// "user.py:LINE|module.py:LINE" for the innermost frame of the user's code
/// and the innermost torch.nn module frame of `loc` (callsite locations list
/// the innermost frame first; PyTorch's, torch-mlir's and the bridge's own
/// frames are not the user's); empty when there is no user frame.
std::string traceRegionName(Location loc);

} // namespace mlir::spmd

#endif // SPMD_CONVERSION_RUNTIMECALLS_H
