//===- SpmdAttrs.cpp - spmd placements and specs --------------------------===//

#include "Spmd/Dialect/Spmd/IR/SpmdOps.h"

#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::spmd;

#include "Spmd/Dialect/Spmd/IR/SpmdAttrInterfaces.cpp.inc"
#include "Spmd/Dialect/Spmd/IR/SpmdEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "Spmd/Dialect/Spmd/IR/SpmdAttrs.cpp.inc"

void SpmdDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "Spmd/Dialect/Spmd/IR/SpmdAttrs.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// ShardAttr
//===----------------------------------------------------------------------===//

LogicalResult ShardAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                int64_t dim) {
  // shard_c1
  if (dim < 0)
    return emitError() << "shard dimension must be non-negative, found " << dim;
  return success();
}

//===----------------------------------------------------------------------===//
// SpecAttr
//===----------------------------------------------------------------------===//

// Placements inside a spec drop the `#spmd.` prefix: `[shard<0>, replicate]`.
Attribute SpecAttr::parse(AsmParser &parser, Type) {
  FlatSymbolRefAttr mesh;
  SmallVector<PlacementAttr> placements;
  if (parser.parseLess() || parser.parseAttribute(mesh) || parser.parseComma())
    return {};
  auto parsePlacement = [&]() -> ParseResult {
    SMLoc loc = parser.getCurrentLocation();
    StringRef mnemonic;
    Attribute attr;
    OptionalParseResult result =
        generatedAttributeParser(parser, &mnemonic, Type(), attr);
    if (!result.has_value())
      return parser.emitError(loc)
             << "expected a placement (replicate, shard<dim> or "
                "partial<kind>), found '"
             << mnemonic << "'";
    if (failed(*result))
      return failure();
    auto placement = dyn_cast<PlacementAttr>(attr);
    if (!placement)
      return parser.emitError(loc)
             << "expected a placement (replicate, shard<dim> or "
                "partial<kind>), found "
             << attr;
    placements.push_back(placement);
    return success();
  };
  if (parser.parseCommaSeparatedList(AsmParser::Delimiter::Square,
                                     parsePlacement) ||
      parser.parseGreater())
    return {};
  return SpecAttr::get(parser.getContext(), mesh, placements);
}

void SpecAttr::print(AsmPrinter &printer) const {
  printer << "<" << getMesh() << ", [";
  llvm::interleaveComma(getPlacements(), printer, [&](PlacementAttr p) {
    (void)generatedAttributePrinter(p, printer);
  });
  printer << "]>";
}

LogicalResult
SpecAttr::verifyAgainst(function_ref<InFlightDiagnostic()> emitError,
                        Operation *from, Type type) const {
  // spec_c1
  auto mesh = SymbolTable::lookupNearestSymbolFrom<MeshOp>(from, getMesh());
  if (!mesh)
    return emitError() << "spec refers to " << getMesh()
                       << ", which is not an 'spmd.mesh'";
  // spec_c2
  if (static_cast<int64_t>(getPlacements().size()) != mesh.getRank())
    return emitError() << "spec has " << getPlacements().size()
                       << " placements but mesh " << getMesh() << " has "
                       << mesh.getRank() << " axes";
  // spec_c3
  auto tensorType = dyn_cast<RankedTensorType>(type);
  if (!tensorType)
    return emitError() << "a spec describes a ranked tensor, found " << type;
  for (auto [axis, placement] : llvm::enumerate(getPlacements())) {
    // spec_c4
    if (auto shard = dyn_cast<ShardAttr>(placement)) {
      if (shard.getDim() >= tensorType.getRank())
        return emitError() << "mesh axis " << axis << " shards dimension "
                           << shard.getDim() << " of " << type << ", which has "
                           << tensorType.getRank() << " dimensions";
    }
    // spec_c5
    if (auto partial = dyn_cast<PartialAttr>(placement)) {
      if (partial.getKind() == ReductionKind::Avg &&
          !isa<FloatType>(tensorType.getElementType()))
        return emitError() << "partial<avg> needs a float element type, found "
                           << tensorType.getElementType();
    }
  }
  return success();
}

//===----------------------------------------------------------------------===//
// StrategyAttr
//===----------------------------------------------------------------------===//

LogicalResult StrategyAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                   unsigned numAxes,
                                   ArrayRef<AxisChoice> choices) {
  if (numAxes == 0 || choices.empty() || choices.size() % numAxes != 0)
    return emitError() << "a strategy has one or more factor groups, each "
                          "with one choice per mesh axis";
  for (const AxisChoice &choice : choices)
    if (choice.kind == AxisChoice::Factor && choice.factor < 0)
      return emitError() << "a strategy's factor must be non-negative, found "
                         << choice.factor;
  return success();
}

// `#spmd.strategy<[factor<0>, replicate], [partial<sum, 0>, replicate]>`.
Attribute StrategyAttr::parse(AsmParser &parser, Type) {
  SmallVector<AxisChoice> choices;
  std::optional<size_t> numAxes;
  auto parseChoice = [&]() -> ParseResult {
    SMLoc loc = parser.getCurrentLocation();
    StringRef keyword;
    if (parser.parseKeyword(&keyword))
      return failure();
    if (keyword == "replicate") {
      choices.push_back(AxisChoice::replicate());
      return success();
    }
    if (keyword == "factor") {
      int64_t factor;
      if (parser.parseLess() || parser.parseInteger(factor) ||
          parser.parseGreater())
        return failure();
      choices.push_back(AxisChoice::sharding(factor));
      return success();
    }
    if (keyword == "partial") {
      StringRef kindName;
      unsigned set = 0;
      if (parser.parseLess() || parser.parseKeyword(&kindName) ||
          parser.parseComma() || parser.parseInteger(set) ||
          parser.parseGreater())
        return failure();
      std::optional<ReductionKind> kind = symbolizeReductionKind(kindName);
      if (!kind)
        return parser.emitError(loc)
               << "unknown reduction kind '" << kindName << "'";
      choices.push_back(AxisChoice::partial(*kind, set));
      return success();
    }
    return parser.emitError(loc) << "expected a choice (replicate, factor<f> "
                                    "or partial<kind, set>), found '"
                                 << keyword << "'";
  };
  auto parseGroup = [&]() -> ParseResult {
    SMLoc loc = parser.getCurrentLocation();
    size_t before = choices.size();
    if (parser.parseCommaSeparatedList(AsmParser::Delimiter::Square,
                                       parseChoice))
      return failure();
    size_t axes = choices.size() - before;
    if (numAxes && *numAxes != axes)
      return parser.emitError(loc)
             << "every factor group has one choice per mesh axis: expected "
             << *numAxes << ", found " << axes;
    numAxes = axes;
    return success();
  };
  if (parser.parseLess() || parser.parseCommaSeparatedList(parseGroup) ||
      parser.parseGreater())
    return {};
  return getChecked([&] { return parser.emitError(parser.getNameLoc()); },
                    parser.getContext(), static_cast<unsigned>(*numAxes),
                    choices);
}

void StrategyAttr::print(AsmPrinter &printer) const {
  printer << "<";
  for (unsigned g = 0; g < getNumGroups(); ++g) {
    printer << (g ? ", [" : "[");
    for (unsigned a = 0; a < getNumAxes(); ++a) {
      const AxisChoice &c = getChoice(g, a);
      printer << (a ? ", " : "");
      switch (c.kind) {
      case AxisChoice::Replicate:
        printer << "replicate";
        break;
      case AxisChoice::Factor:
        printer << "factor<" << c.factor << ">";
        break;
      case AxisChoice::Partial:
        printer << "partial<" << stringifyReductionKind(c.partialKind) << ", "
                << c.linearSet << ">";
        break;
      }
    }
    printer << "]";
  }
  printer << ">";
}
