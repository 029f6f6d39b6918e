//===- RuntimeCalls.h - building calls into libSpmdRuntime ------*- C++ -*-===//
//
// What the lowerings to runtime calls share (convert-spmd-to-runtime,
// spmd-lower-attention, spmd-trace-regions, the GPU codegen passes): the
// runtime's functions as a typed table generated from
// Spmd/Runtime/RuntimeFunctions.def and GpuRuntimeFunctions.def (the one
// list of the ABI, which the C headers and the Python bridge read too); a
// call of one, declared private in the module on first use; a
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
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/StringMap.h"

#include <optional>

namespace mlir::spmd {

/// The runtime's functions (libSpmdRuntime's, then libSpmdGpuRuntime's own),
/// named as in C.
enum class RuntimeFunction : unsigned {
#define SPMD_RUNTIME_FUNCTION(Name, Result, Params) Name,
#include "Spmd/Runtime/RuntimeFunctions.def"
#define SPMD_RUNTIME_FUNCTION(Name, Result, Params) Name,
#include "Spmd/Runtime/GpuRuntimeFunctions.def"
};

/// The C name of `fn`.
StringRef runtimeFunctionName(RuntimeFunction fn);

/// The MLIR type of `fn`'s calls: i32, i64, f32, f64 as in C; strings,
/// callbacks and pointers !llvm.ptr; size_t i64; void results none.
FunctionType runtimeFunctionType(MLIRContext *ctx, RuntimeFunction fn);

/// The runtime function `name` names, if it is one.
std::optional<RuntimeFunction> lookupRuntimeFunction(StringRef name);

/// Whether `op` is a func.call of `fn`.
bool isRuntimeCall(Operation *op, RuntimeFunction fn);

/// A call of `fn` at the builder's insertion point, with the table's result
/// types; `fn` is declared (private) at the end of `module` unless it
/// already is. Arguments of other types than the table's are a bug of the
/// caller: it fails with a message naming the function and the argument.
/// `symbols` (the module's table), when given, makes the look-up constant
/// time: a pass that emits many calls passes it (without, each call scans
/// the module).
func::CallOp callRuntime(OpBuilder &b, ModuleOp module, Location loc,
                         RuntimeFunction fn, ValueRange args,
                         SymbolTable *symbols = nullptr);

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
/// it exists (looked up in `symbols` when given, as callRuntime).
Value stringConstant(OpBuilder &b, ModuleOp module, Location loc,
                     StringRef text, StringRef symbol,
                     SymbolTable *symbols = nullptr);

/// Constant C strings of one module, one internal global per distinct text,
/// named `<prefix><n>` (looked up in `table` when given).
class StringConstants {
public:
  explicit StringConstants(StringRef prefix, SymbolTable *table = nullptr)
      : prefix(prefix.str()), table(table) {}
  /// The address (!llvm.ptr) of `text`'s global, made on first use.
  Value get(OpBuilder &b, ModuleOp module, Location loc, StringRef text);

private:
  std::string prefix;
  SymbolTable *table;
  llvm::StringMap<std::string> symbols;
};

/// "user.py:LINE|module.py:LINE" for the innermost frame of the user's code
/// and the innermost torch.nn module frame of `loc` (callsite locations list
/// the innermost frame first; PyTorch's, torch-mlir's and the bridge's own
/// frames are not the user's); empty when there is no user frame.
std::string traceRegionName(Location loc);

} // namespace mlir::spmd

#endif // SPMD_CONVERSION_RUNTIMECALLS_H
