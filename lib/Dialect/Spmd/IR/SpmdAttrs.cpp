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
