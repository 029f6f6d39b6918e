//===- SpmdDialect.cpp - spmd dialect -------------------------------------===//

#include "Spmd/Dialect/Spmd/IR/SpmdOps.h"

#include "mlir/IR/DialectImplementation.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Transforms/InliningUtils.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::spmd;

#include "Spmd/Dialect/Spmd/IR/SpmdDialect.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "Spmd/Dialect/Spmd/IR/SpmdTypes.cpp.inc"

namespace {

/// Every spmd op may be inlined: none has regions, and what they refer to
/// (meshes, states) are module symbols, the same in caller and callee. The
/// bridge's traced step is a callee that `inline` folds into the wrapper
/// (with spmd.attention in it, among others).
struct SpmdInlinerInterface : public DialectInlinerInterface {
  using DialectInlinerInterface::DialectInlinerInterface;
  bool isLegalToInline(Operation *, Region *, bool, IRMapping &) const final {
    return true;
  }
};

} // namespace

void SpmdDialect::initialize() {
  addInterfaces<SpmdInlinerInterface>();
  registerAttributes();
  addTypes<
#define GET_TYPEDEF_LIST
#include "Spmd/Dialect/Spmd/IR/SpmdTypes.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "Spmd/Dialect/Spmd/IR/SpmdOps.cpp.inc"
      >();
}

/// Checks an `spmd.*` attribute on argument or result `index` of `op`, whose
/// type is `type`.
static LogicalResult verifyValueAttribute(Operation *op, StringRef what,
                                          unsigned index, Type type,
                                          NamedAttribute attr) {
  auto emitError = [&]() {
    return op->emitOpError() << what << " #" << index << ": ";
  };
  // func_spec_c1
  if (attr.getName() != SpmdDialect::getSpecAttrName())
    return emitError() << "unknown attribute '" << attr.getName().getValue()
                       << "' (the spmd dialect defines '"
                       << SpmdDialect::getSpecAttrName() << "')";
  // func_spec_c2
  auto spec = dyn_cast<SpecAttr>(attr.getValue());
  if (!spec)
    return emitError() << "'" << SpmdDialect::getSpecAttrName()
                       << "' must be a #spmd.spec, found " << attr.getValue();
  return spec.verifyAgainst(emitError, op, type);
}

/// The types of the arguments (or results) of a region-holding op, from its
/// function signature when it has one, so declarations are checked too.
static Type getValueType(Operation *op, unsigned regionIndex, unsigned index,
                         bool isResult) {
  if (auto fn = dyn_cast<FunctionOpInterface>(op)) {
    ArrayRef<Type> types =
        isResult ? fn.getResultTypes() : fn.getArgumentTypes();
    return index < types.size() ? types[index] : Type();
  }
  if (isResult || regionIndex >= op->getNumRegions() ||
      op->getRegion(regionIndex).empty())
    return {};
  Block &entry = op->getRegion(regionIndex).front();
  return index < entry.getNumArguments() ? entry.getArgument(index).getType()
                                         : Type();
}

LogicalResult SpmdDialect::verifyRegionArgAttribute(Operation *op,
                                                    unsigned regionIndex,
                                                    unsigned argIndex,
                                                    NamedAttribute attr) {
  return verifyValueAttribute(
      op, "argument", argIndex,
      getValueType(op, regionIndex, argIndex, /*isResult=*/false), attr);
}

LogicalResult SpmdDialect::verifyRegionResultAttribute(Operation *op,
                                                       unsigned regionIndex,
                                                       unsigned resultIndex,
                                                       NamedAttribute attr) {
  return verifyValueAttribute(
      op, "result", resultIndex,
      getValueType(op, regionIndex, resultIndex, /*isResult=*/true), attr);
}
