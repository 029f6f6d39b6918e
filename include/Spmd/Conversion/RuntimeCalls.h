//===- RuntimeCalls.h - building calls into libSpmdRuntime ------*- C++ -*-===//
//
// What the lowerings to runtime calls share (convert-spmd-to-runtime,
// spmd-lower-attention, spmd-trace-regions): a call of a runtime function,
// declared private in the module on first use; a buffer's address as the
// i64 the C ABI takes; a constant C string.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_CONVERSION_RUNTIMECALLS_H
#define SPMD_CONVERSION_RUNTIMECALLS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir::spmd {

/// A call of runtime function `name` at the builder's insertion point; the
/// function is declared (private, with these argument and result types) at
/// the end of `module` unless it already is.
func::CallOp callRuntime(OpBuilder &b, ModuleOp module, Location loc,
                         StringRef name, ValueRange args,
                         TypeRange results = {});

/// The aligned address of `memref` as an i64.
Value bufferAddress(OpBuilder &b, Location loc, Value memref);

/// The address (!llvm.ptr) of a NUL-terminated constant copy of `text`,
/// an internal global named `symbol` made at the start of `module` unless
/// it exists.
Value stringConstant(OpBuilder &b, ModuleOp module, Location loc,
                     StringRef text, StringRef symbol);

} // namespace mlir::spmd

#endif // SPMD_CONVERSION_RUNTIMECALLS_H
