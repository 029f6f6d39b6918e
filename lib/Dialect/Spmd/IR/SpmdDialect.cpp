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

/// Checks `strategy` on `op` against the op's sharding rule.
static LogicalResult verifyStrategy(Operation *op, StrategyAttr strategy) {
  auto emitError = [&]() {
    return op->emitOpError()
           << "'" << SpmdDialect::getStrategyAttrName() << "': ";
  };
  ShardingRule rule = ShardingRule::getOrFallback(op);
  // strategy_c1
  if (strategy.getNumGroups() != rule.numGroups)
    return emitError() << "the op's sharding rule has " << rule.numGroups
                       << " factor group(s), the strategy "
                       << strategy.getNumGroups();
  for (unsigned g = 0; g < strategy.getNumGroups(); ++g) {
    for (unsigned a = 0; a < strategy.getNumAxes(); ++a) {
      const AxisChoice &c = strategy.getChoice(g, a);
      // strategy_c2
      if (c.kind == AxisChoice::Factor &&
          (c.factor >= static_cast<int64_t>(rule.factors.size()) ||
           rule.factors[c.factor].group != g))
        return emitError() << "group " << g << " shards factor " << c.factor
                           << " on mesh axis " << a
                           << ", which is not a factor of that group (the "
                              "rule has "
                           << rule.factors.size() << " factors)";
      // strategy_c3
      if (c.kind == AxisChoice::Partial &&
          c.linearSet >= rule.linearSets.size())
        return emitError() << "mesh axis " << a << " passes a partial through "
                           << "linear set " << c.linearSet << ", but the rule "
                           << "has " << rule.linearSets.size();
    }
  }
  // strategy_c4
  if (!op->hasAttr(SpmdDialect::getResultSpecsAttrName()))
    return emitError() << "an op with a strategy also has '"
                       << SpmdDialect::getResultSpecsAttrName() << "'";
  return success();
}

/// Checks `specs` (spmd.result_specs) on `op`.
static LogicalResult verifyResultSpecs(Operation *op, Attribute value) {
  auto emitError = [&]() {
    return op->emitOpError()
           << "'" << SpmdDialect::getResultSpecsAttrName() << "': ";
  };
  // result_specs_c1
  auto specs = dyn_cast<ArrayAttr>(value);
  if (!specs || specs.size() != op->getNumResults())
    return emitError() << "expected an array of " << op->getNumResults()
                       << " entries (one per result), found " << value;
  // result_specs_c2
  for (auto [r, spec] : llvm::enumerate(specs)) {
    bool tensor = isa<RankedTensorType>(op->getResult(r).getType());
    if (tensor ? !isa<SpecAttr>(spec) : !isa<UnitAttr>(spec))
      return emitError() << "result #" << r << " needs "
                         << (tensor ? "a #spmd.spec" : "a unit attribute")
                         << ", found " << spec;
  }
  return success();
}

LogicalResult SpmdDialect::verifyOperationAttribute(Operation *op,
                                                    NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  Attribute value = attr.getValue();
  if (name == getStrategyAttrName()) {
    auto strategy = dyn_cast<StrategyAttr>(value);
    if (!strategy)
      return op->emitOpError()
             << "'" << name << "' must be a #spmd.strategy, found " << value;
    return verifyStrategy(op, strategy);
  }
  if (name == getResultSpecsAttrName())
    return verifyResultSpecs(op, value);
  // mesh_attr_c1
  if (name == getMeshAttrName()) {
    if (!isa<FunctionOpInterface>(op) || !isa<FlatSymbolRefAttr>(value))
      return op->emitOpError()
             << "'" << name << "' is a function's mesh (a symbol reference)";
    return success();
  }
  if (name == getGpuBufferAttrName()) {
    if (!isa<StringAttr>(value))
      return op->emitOpError() << "'" << name << "' must be a string";
    return success();
  }
  if (name == getStateDtypeAttrName()) {
    auto code = dyn_cast<IntegerAttr>(value);
    if (op->getName().getStringRef() != "memref.global" || !code ||
        !code.getType().isInteger(32))
      return op->emitOpError()
             << "'" << name
             << "' is a state global's element type code (an i32 on a "
                "memref.global)";
    return success();
  }
  if (name == getHostCopyAttrName()) {
    if (!isa<UnitAttr>(value))
      return op->emitOpError() << "'" << name << "' must be a unit attribute";
    return success();
  }
  // op_attr_c1
  return op->emitOpError() << "unknown attribute '" << name
                           << "' (the spmd dialect defines '"
                           << getStrategyAttrName() << "', '"
                           << getResultSpecsAttrName() << "', '"
                           << getMeshAttrName() << "', '"
                           << getGpuBufferAttrName() << "', '"
                           << getStateDtypeAttrName() << "' and '"
                           << getHostCopyAttrName() << "' on operations)";
}
