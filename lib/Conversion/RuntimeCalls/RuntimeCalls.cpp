//===- RuntimeCalls.cpp - building calls into libSpmdRuntime --------------===//

#include "Spmd/Conversion/RuntimeCalls.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "llvm/Support/Path.h"

using namespace mlir;
using spmd::RuntimeFunction;

namespace {

/// The type names of RuntimeFunctions.def.
enum class AbiType {
  Void,
  I32,
  I64,
  F32,
  F64,
  Str,
  I64Ptr,
  Size,
  VoidPtr,
  StoreSet,
  StoreGet,
  StoreWait,
  RegionHook
};

struct FunctionInfo {
  StringLiteral name;
  AbiType result;
  std::vector<AbiType> params;
};

#define SPMD_UNPAREN(...) __VA_ARGS__

const std::vector<FunctionInfo> &functionTable() {
  static const std::vector<FunctionInfo> table = {
#define SPMD_ARG(Type, name) AbiType::Type
#define SPMD_NO_ARGS
#define SPMD_RUNTIME_FUNCTION(Name, Result, Params)                            \
  {#Name, AbiType::Result, {SPMD_UNPAREN Params}},
#include "Spmd/Runtime/RuntimeFunctions.def"
#define SPMD_ARG(Type, name) AbiType::Type
#define SPMD_NO_ARGS
#define SPMD_RUNTIME_FUNCTION(Name, Result, Params)                            \
  {#Name, AbiType::Result, {SPMD_UNPAREN Params}},
#include "Spmd/Runtime/GpuRuntimeFunctions.def"
  };
  return table;
}

const FunctionInfo &info(RuntimeFunction fn) {
  return functionTable()[static_cast<unsigned>(fn)];
}

Type mlirType(MLIRContext *ctx, AbiType type) {
  Builder b(ctx);
  switch (type) {
  case AbiType::Void:
    return {};
  case AbiType::I32:
    return b.getI32Type();
  case AbiType::I64:
  case AbiType::Size:
    return b.getI64Type();
  case AbiType::F32:
    return b.getF32Type();
  case AbiType::F64:
    return b.getF64Type();
  case AbiType::Str:
  case AbiType::I64Ptr:
  case AbiType::VoidPtr:
  case AbiType::StoreSet:
  case AbiType::StoreGet:
  case AbiType::StoreWait:
  case AbiType::RegionHook:
    return LLVM::LLVMPointerType::get(ctx);
  }
  llvm_unreachable("unknown ABI type");
}

} // namespace

StringRef mlir::spmd::runtimeFunctionName(RuntimeFunction fn) {
  return info(fn).name;
}

FunctionType mlir::spmd::runtimeFunctionType(MLIRContext *ctx,
                                             RuntimeFunction fn) {
  const FunctionInfo &f = info(fn);
  SmallVector<Type> params;
  for (AbiType p : f.params)
    params.push_back(mlirType(ctx, p));
  SmallVector<Type> results;
  if (Type result = mlirType(ctx, f.result))
    results.push_back(result);
  return FunctionType::get(ctx, params, results);
}

std::optional<RuntimeFunction>
mlir::spmd::lookupRuntimeFunction(StringRef name) {
  static const llvm::StringMap<RuntimeFunction> byName = [] {
    llvm::StringMap<RuntimeFunction> map;
    for (auto [i, f] : llvm::enumerate(functionTable()))
      map[f.name] = static_cast<RuntimeFunction>(i);
    return map;
  }();
  auto it = byName.find(name);
  if (it == byName.end())
    return std::nullopt;
  return it->second;
}

bool mlir::spmd::isRuntimeCall(Operation *op, RuntimeFunction fn) {
  auto call = dyn_cast_or_null<func::CallOp>(op);
  return call && call.getCallee() == runtimeFunctionName(fn);
}

func::CallOp mlir::spmd::callRuntime(OpBuilder &b, ModuleOp module,
                                     Location loc, RuntimeFunction fn,
                                     ValueRange args, SymbolTable *symbols) {
  StringRef name = runtimeFunctionName(fn);
  FunctionType type = runtimeFunctionType(b.getContext(), fn);
  if (TypeRange(args.getTypes()) != type.getInputs()) {
    std::string message;
    llvm::raw_string_ostream os(message);
    os << "spmd: a call of runtime function " << name << " with arguments (";
    llvm::interleaveComma(args.getTypes(), os);
    os << "), where RuntimeFunctions.def says " << type;
    llvm::report_fatal_error(StringRef(message));
  }
  Operation *existing =
      symbols ? symbols->lookup(name) : module.lookupSymbol<func::FuncOp>(name);
  if (!existing) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToEnd(module.getBody());
    auto decl = func::FuncOp::create(b, module.getLoc(), name, type);
    decl.setPrivate();
    if (symbols)
      symbols->insert(decl);
  }
  return func::CallOp::create(b, loc, name, type.getResults(), args);
}

Value mlir::spmd::bufferAddress(OpBuilder &b, Location loc, Value memref) {
  Value index = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, memref);
  return arith::IndexCastOp::create(b, loc, b.getI64Type(), index);
}

Value mlir::spmd::memRefAtAddress(OpBuilder &b, Location loc, MemRefType type,
                                  Value address) {
  MLIRContext *ctx = b.getContext();
  auto ptrType = LLVM::LLVMPointerType::get(ctx);
  Type i64 = b.getI64Type();
  Value ptr = LLVM::IntToPtrOp::create(b, loc, ptrType, address);
  // {allocated, aligned, offset, sizes[rank], strides[rank]}.
  int64_t rank = type.getRank();
  SmallVector<Type> fields{ptrType, ptrType, i64};
  if (rank > 0) {
    fields.push_back(LLVM::LLVMArrayType::get(i64, rank));
    fields.push_back(LLVM::LLVMArrayType::get(i64, rank));
  }
  auto descType = LLVM::LLVMStructType::getLiteral(ctx, fields);
  Value desc = LLVM::UndefOp::create(b, loc, descType);
  desc = LLVM::InsertValueOp::create(b, loc, desc, ptr, ArrayRef<int64_t>{0});
  desc = LLVM::InsertValueOp::create(b, loc, desc, ptr, ArrayRef<int64_t>{1});
  auto constant = [&](int64_t v) {
    return LLVM::ConstantOp::create(b, loc, i64, b.getI64IntegerAttr(v));
  };
  desc = LLVM::InsertValueOp::create(b, loc, desc, constant(0),
                                     ArrayRef<int64_t>{2});
  int64_t stride = 1;
  for (int64_t d = rank - 1; d >= 0; --d) {
    desc = LLVM::InsertValueOp::create(
        b, loc, desc, constant(type.getDimSize(d)), ArrayRef<int64_t>{3, d});
    desc = LLVM::InsertValueOp::create(b, loc, desc, constant(stride),
                                       ArrayRef<int64_t>{4, d});
    stride *= type.getDimSize(d);
  }
  return UnrealizedConversionCastOp::create(b, loc, TypeRange{type},
                                            ValueRange{desc})
      .getResult(0);
}

Value mlir::spmd::stringConstant(OpBuilder &b, ModuleOp module, Location loc,
                                 StringRef text, StringRef symbol,
                                 SymbolTable *symbols) {
  if (!(symbols ? symbols->lookup(symbol) : module.lookupSymbol(symbol))) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(module.getBody());
    std::string bytes = text.str();
    bytes.push_back('\0');
    auto global = LLVM::GlobalOp::create(
        b, loc, LLVM::LLVMArrayType::get(b.getI8Type(), bytes.size()),
        /*isConstant=*/true, LLVM::Linkage::Internal, symbol,
        b.getStringAttr(bytes));
    if (symbols)
      symbols->insert(global, module.getBody()->begin());
  }
  return LLVM::AddressOfOp::create(
      b, loc, LLVM::LLVMPointerType::get(module.getContext()), symbol);
}

Value mlir::spmd::StringConstants::get(OpBuilder &b, ModuleOp module,
                                       Location loc, StringRef text) {
  auto it =
      symbols.try_emplace(text, (prefix + Twine(symbols.size())).str()).first;
  return stringConstant(b, module, loc, text, it->second, table);
}

/// Frames of PyTorch's own code, torch-mlir's, the bridge's (python/spmd/
/// api.py and _*.py) and the compiler's files.
static bool isLibraryFrame(StringRef file) {
  StringRef base = llvm::sys::path::filename(file);
  bool bridge =
      llvm::sys::path::filename(llvm::sys::path::parent_path(file)) == "spmd" &&
      (base.starts_with("_") || base == "api.py");
  return bridge || file.contains("/torch/") || file.contains("/torch_mlir/") ||
         file.starts_with("<") || file.ends_with(".mlir");
}

std::string mlir::spmd::traceRegionName(Location loc) {
  std::string user, module;
  loc->walk([&](Location inner) {
    auto file = dyn_cast<FileLineColLoc>(inner);
    if (!file)
      return WalkResult::advance();
    StringRef name = file.getFilename().getValue();
    std::string at = (name + ":" + Twine(file.getLine())).str();
    if (module.empty() && user.empty() && name.contains("/torch/nn/modules/"))
      module = at;
    if (user.empty() && !isLibraryFrame(name))
      user = at;
    return WalkResult::advance();
  });
  if (user.empty())
    return {};
  return module.empty() ? user : user + "|" + module;
}
