//===- SpmdOps.cpp - spmd operations --------------------------------------===//
//
// Each check is tagged with the label of the constraint it enforces in
// docs/Spmd.md (`// all_gather_c3`); the invalid tests carry the same names.
//
//===----------------------------------------------------------------------===//

#include "Spmd/Dialect/Spmd/IR/SpmdOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallSet.h"

#include <cmath>
#include <cstdio>
#include <limits>

using namespace mlir;
using namespace mlir::spmd;

#include "Spmd/Dialect/Spmd/IR/SpmdOpInterfaces.cpp.inc"

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

MeshOp mlir::spmd::lookupMesh(Operation *from, FlatSymbolRefAttr mesh,
                              SymbolTableCollection *symbolTable) {
  Operation *found = symbolTable
                         ? symbolTable->lookupNearestSymbolFrom(from, mesh)
                         : SymbolTable::lookupNearestSymbolFrom(from, mesh);
  auto meshOp = dyn_cast_or_null<MeshOp>(found);
  if (!meshOp)
    from->emitOpError() << mesh << " does not name an 'spmd.mesh'";
  return meshOp;
}

std::optional<int64_t> mlir::spmd::getGroupSize(CollectiveOpInterface op) {
  auto mesh = SymbolTable::lookupNearestSymbolFrom<MeshOp>(op.getOperation(),
                                                           op.getMeshAttr());
  if (!mesh)
    return std::nullopt;
  ArrayRef<int64_t> axes = op.getAxes();
  if (llvm::any_of(axes,
                   [&](int64_t a) { return a < 0 || a >= mesh.getRank(); }))
    return std::nullopt;
  return mesh.getGroupSize(axes);
}

/// The tensor a collective result carries: the result type itself, or the
/// type inside its future.
static RankedTensorType getCarriedType(Type type) {
  if (auto future = dyn_cast<FutureType>(type))
    return future.getValueType();
  return dyn_cast<RankedTensorType>(type);
}

static bool isFloatTensor(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && isa<FloatType>(tensor.getElementType());
}

/// Dimension sizes agree unless one is dynamic.
static bool compatibleDim(int64_t a, int64_t b) {
  return ShapedType::isDynamic(a) || ShapedType::isDynamic(b) || a == b;
}

//===----------------------------------------------------------------------===//
// Custom directives
//===----------------------------------------------------------------------===//

static ParseResult parseMeshShape(OpAsmParser &parser,
                                  DenseI64ArrayAttr &shape) {
  SmallVector<int64_t> dims;
  if (parser.parseDimensionList(dims, /*allowDynamic=*/false,
                                /*withTrailingX=*/false))
    return failure();
  shape = parser.getBuilder().getDenseI64ArrayAttr(dims);
  return success();
}

static void printMeshShape(OpAsmPrinter &printer, Operation *,
                           DenseI64ArrayAttr shape) {
  llvm::interleave(shape.asArrayRef(), printer, "x");
}

/// Foreach types: the types of the first list, then those of the scalars.
/// Every other tensor list has the types of the first.
static ParseResult
parseForeachTypesImpl(OpAsmParser &parser,
                      ArrayRef<SmallVectorImpl<Type> *> lists,
                      SmallVectorImpl<Type> *scalars) {
  SmallVector<Type> types;
  SMLoc loc = parser.getCurrentLocation();
  if (parser.parseTypeList(types))
    return failure();
  for (Type type : types) {
    if (isa<TensorType>(type)) {
      if (scalars && !scalars->empty())
        return parser.emitError(loc)
               << "tensor types must come before the scalar types";
      for (SmallVectorImpl<Type> *list : lists)
        list->push_back(type);
    } else if (scalars) {
      scalars->push_back(type);
    } else {
      return parser.emitError(loc) << "expected tensor types, found " << type;
    }
  }
  return success();
}

static ParseResult parseForeachTypes(OpAsmParser &parser,
                                     SmallVectorImpl<Type> &self) {
  return parseForeachTypesImpl(parser, {&self}, nullptr);
}
static ParseResult parseForeachTypes(OpAsmParser &parser,
                                     SmallVectorImpl<Type> &self,
                                     SmallVectorImpl<Type> &scalars) {
  return parseForeachTypesImpl(parser, {&self}, &scalars);
}
static ParseResult parseForeachListTypes(OpAsmParser &parser,
                                         SmallVectorImpl<Type> &self,
                                         SmallVectorImpl<Type> &other) {
  return parseForeachTypesImpl(parser, {&self, &other}, nullptr);
}
static ParseResult parseForeachTypes(OpAsmParser &parser,
                                     SmallVectorImpl<Type> &self,
                                     SmallVectorImpl<Type> &other,
                                     SmallVectorImpl<Type> &scalars) {
  return parseForeachTypesImpl(parser, {&self, &other}, &scalars);
}
static ParseResult parseForeachTypes(OpAsmParser &parser,
                                     SmallVectorImpl<Type> &self,
                                     SmallVectorImpl<Type> &tensor1,
                                     SmallVectorImpl<Type> &tensor2,
                                     SmallVectorImpl<Type> &scalars) {
  return parseForeachTypesImpl(parser, {&self, &tensor1, &tensor2}, &scalars);
}

static void printForeachTypesImpl(OpAsmPrinter &printer, TypeRange self,
                                  TypeRange scalars) {
  llvm::interleaveComma(llvm::concat<const Type>(self, scalars), printer);
}
static void printForeachTypes(OpAsmPrinter &printer, Operation *,
                              TypeRange self) {
  printForeachTypesImpl(printer, self, {});
}
static void printForeachTypes(OpAsmPrinter &printer, Operation *,
                              TypeRange self, TypeRange scalars) {
  printForeachTypesImpl(printer, self, scalars);
}
static void printForeachListTypes(OpAsmPrinter &printer, Operation *,
                                  TypeRange self, TypeRange) {
  printForeachTypesImpl(printer, self, {});
}
static void printForeachTypes(OpAsmPrinter &printer, Operation *,
                              TypeRange self, TypeRange, TypeRange scalars) {
  printForeachTypesImpl(printer, self, scalars);
}
static void printForeachTypes(OpAsmPrinter &printer, Operation *,
                              TypeRange self, TypeRange, TypeRange,
                              TypeRange scalars) {
  printForeachTypesImpl(printer, self, scalars);
}

static Type getStepType(OpAsmParser &parser) {
  return RankedTensorType::get({}, parser.getBuilder().getF32Type());
}

static ParseResult
parseSGDTypes(OpAsmParser &parser, SmallVectorImpl<Type> &params,
              SmallVectorImpl<Type> &grads,
              ArrayRef<OpAsmParser::UnresolvedOperand> buffers,
              SmallVectorImpl<Type> &bufferTypes,
              std::optional<OpAsmParser::UnresolvedOperand> step,
              Type &stepType) {
  if (parser.parseTypeList(params))
    return failure();
  grads.append(params.begin(), params.end());
  if (!buffers.empty())
    bufferTypes.append(params.begin(), params.end());
  if (step)
    stepType = getStepType(parser);
  return success();
}

static void printSGDTypes(OpAsmPrinter &printer, Operation *, TypeRange params,
                          TypeRange, OperandRange, TypeRange, Value, Type) {
  llvm::interleaveComma(params, printer);
}

static ParseResult
parseAdamTypes(OpAsmParser &parser, SmallVectorImpl<Type> &params,
               SmallVectorImpl<Type> &grads, SmallVectorImpl<Type> &expAvgs,
               SmallVectorImpl<Type> &expAvgSqs,
               ArrayRef<OpAsmParser::UnresolvedOperand> maxExpAvgSqs,
               SmallVectorImpl<Type> &maxExpAvgSqTypes,
               ArrayRef<OpAsmParser::UnresolvedOperand> steps,
               SmallVectorImpl<Type> &stepTypes) {
  if (parser.parseTypeList(params))
    return failure();
  grads.append(params.begin(), params.end());
  expAvgs.append(params.begin(), params.end());
  expAvgSqs.append(params.begin(), params.end());
  if (!maxExpAvgSqs.empty())
    maxExpAvgSqTypes.append(params.begin(), params.end());
  stepTypes.append(steps.size(), getStepType(parser));
  return success();
}

static void printAdamTypes(OpAsmPrinter &printer, Operation *, TypeRange params,
                           TypeRange, TypeRange, TypeRange, OperandRange,
                           TypeRange, OperandRange, TypeRange) {
  llvm::interleaveComma(params, printer);
}

/// `hyperparams(lr = %a, momentum = %b)`: run-time float options of an
/// optimizer, each a `tensor<f64>`; nothing when there are none.
static ParseResult
parseHyperparams(OpAsmParser &parser,
                 SmallVectorImpl<OpAsmParser::UnresolvedOperand> &values,
                 SmallVectorImpl<Type> &types, ArrayAttr &names) {
  if (failed(parser.parseOptionalKeyword("hyperparams")))
    return success();
  SmallVector<Attribute> nameList;
  Type f64Tensor = RankedTensorType::get({}, parser.getBuilder().getF64Type());
  auto parseOne = [&]() -> ParseResult {
    std::string name;
    OpAsmParser::UnresolvedOperand value;
    if (parser.parseKeywordOrString(&name) || parser.parseEqual() ||
        parser.parseOperand(value))
      return failure();
    nameList.push_back(parser.getBuilder().getStringAttr(name));
    values.push_back(value);
    types.push_back(f64Tensor);
    return success();
  };
  if (parser.parseCommaSeparatedList(AsmParser::Delimiter::Paren, parseOne))
    return failure();
  names = parser.getBuilder().getArrayAttr(nameList);
  return success();
}

static void printHyperparams(OpAsmPrinter &printer, Operation *,
                             OperandRange values, TypeRange, ArrayAttr names) {
  if (values.empty() || !names)
    return;
  printer << "hyperparams(";
  llvm::interleaveComma(llvm::zip(names, values), printer, [&](auto pair) {
    printer << cast<StringAttr>(std::get<0>(pair)).getValue() << " = "
            << std::get<1>(pair);
  });
  printer << ")";
}

/// The operand named `name` in `hyperparams(...)`, or null.
static Value lookupHyperparam(ArrayAttr names, OperandRange values,
                              StringRef name) {
  if (!names)
    return {};
  for (auto [n, v] : llvm::zip(names, values))
    if (cast<StringAttr>(n).getValue() == name)
      return v;
  return {};
}

//===----------------------------------------------------------------------===//
// MeshOp
//===----------------------------------------------------------------------===//

int64_t MeshOp::getGroupSize(ArrayRef<int64_t> axes) {
  int64_t size = 1;
  for (int64_t axis : axes)
    size *= getShape()[axis];
  return size;
}

LogicalResult MeshOp::verify() {
  // mesh_c1
  if (getShape().empty())
    return emitOpError("needs at least one axis");
  // mesh_c2
  for (auto [axis, size] : llvm::enumerate(getShape()))
    if (size < 1)
      return emitOpError() << "axis " << axis
                           << " must have a static size of at least 1, found "
                           << (ShapedType::isDynamic(size)
                                   ? "?"
                                   : std::to_string(size));
  // mesh_c5: ranks are numbered with MPI's `int`.
  // Checked before each product (sizes are >= 1 here): an axis may be
  // as large as int64_t allows.
  int64_t ranks = 1;
  for (int64_t size : getShape()) {
    if (size > std::numeric_limits<int32_t>::max() / ranks)
      return emitOpError() << "has more than "
                           << std::numeric_limits<int32_t>::max() << " ranks";
    ranks *= size;
  }
  if (std::optional<ArrayAttr> names = getAxisNames()) {
    // mesh_c3
    if (static_cast<int64_t>(names->size()) != getRank())
      return emitOpError() << "has " << getRank() << " axes but "
                           << names->size() << " axis names";
    // mesh_c4
    llvm::SmallSet<StringRef, 4> seen;
    for (auto name : names->getAsValueRange<StringAttr>()) {
      if (name.empty())
        return emitOpError("axis names must not be empty");
      if (!seen.insert(name).second)
        return emitOpError() << "axis name \"" << name << "\" appears twice";
    }
  }
  return success();
}

//===----------------------------------------------------------------------===//
// AnnotateOp / RedistributeOp
//===----------------------------------------------------------------------===//

template <typename OpTy> static LogicalResult verifySpecUses(OpTy op) {
  return op.getSpec().verifyAgainst([&]() { return op.emitOpError(); },
                                    op.getOperation(), op.getInput().getType());
}

LogicalResult AnnotateOp::verifySymbolUses(SymbolTableCollection &) {
  return verifySpecUses(*this);
}

LogicalResult RedistributeOp::verifySymbolUses(SymbolTableCollection &) {
  return verifySpecUses(*this);
}

OpFoldResult RedistributeOp::fold(FoldAdaptor) {
  // The input already has this spec when it comes straight from an
  // annotate or redistribute to the same spec.
  Operation *def = getInput().getDefiningOp();
  if (auto annotate = dyn_cast_or_null<AnnotateOp>(def))
    if (annotate.getSpec() == getSpec())
      return getInput();
  if (auto redistribute = dyn_cast_or_null<RedistributeOp>(def))
    if (redistribute.getSpec() == getSpec())
      return getInput();
  return {};
}

void RedistributeOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                                 MLIRContext *) {
  // A redistribute keeps the global value, so only the last of a chain
  // matters: redistribute(redistribute(x, A), B) -> redistribute(x, B).
  results.add(+[](RedistributeOp op, PatternRewriter &rewriter) {
    auto inner = op.getInput().getDefiningOp<RedistributeOp>();
    if (!inner)
      return failure();
    rewriter.modifyOpInPlace(
        op, [&] { op.getInputMutable().assign(inner.getInput()); });
    return success();
  });
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

/// Checks shared by every collective. `checkPair` checks input `i` against
/// the tensor its result carries.
static LogicalResult verifyCollective(
    CollectiveOpInterface op,
    function_ref<LogicalResult(RankedTensorType, RankedTensorType)> checkPair) {
  Operation *operation = op.getOperation();
  // collective_c1
  if (op.getInputs().empty())
    return operation->emitOpError("needs at least one input");
  // collective_c2
  if (operation->getNumResults() != op.getInputs().size())
    return operation->emitOpError()
           << "has " << op.getInputs().size() << " inputs but "
           << operation->getNumResults() << " results";
  // collective_c3
  bool async = isa<FutureType>(operation->getResult(0).getType());
  for (auto [i, type] : llvm::enumerate(operation->getResultTypes())) {
    if (isa<FutureType>(type) != async || !getCarriedType(type))
      return operation->emitOpError()
             << "results must be all ranked tensors or all futures; result #"
             << i << " is " << type;
  }
  // collective_c4
  llvm::SmallSet<int64_t, 4> seen;
  for (int64_t axis : op.getAxes()) {
    if (axis < 0)
      return operation->emitOpError()
             << "mesh axes must be non-negative, found " << axis;
    if (!seen.insert(axis).second)
      return operation->emitOpError()
             << "mesh axis " << axis << " appears twice";
  }
  for (auto [input, result] :
       llvm::zip(op.getInputs(), operation->getResults())) {
    auto inType = cast<RankedTensorType>(input.getType());
    auto outType = getCarriedType(result.getType());
    if (inType.getElementType() != outType.getElementType())
      return operation->emitOpError()
             << "result element type " << outType.getElementType()
             << " differs from input element type " << inType.getElementType();
    if (failed(checkPair(inType, outType)))
      return failure();
  }
  return success();
}

/// Mesh checks shared by every collective; returns the group size.
static FailureOr<int64_t>
verifyCollectiveMesh(CollectiveOpInterface op,
                     SymbolTableCollection &symbolTable) {
  Operation *operation = op.getOperation();
  // collective_c5
  MeshOp mesh = lookupMesh(operation, op.getMeshAttr(), &symbolTable);
  if (!mesh)
    return failure();
  // collective_c6
  for (int64_t axis : op.getAxes())
    if (axis >= mesh.getRank()) {
      InFlightDiagnostic diag =
          operation->emitOpError()
          << "mesh axis " << axis << " is out of range for mesh "
          << op.getMeshAttr() << " with " << mesh.getRank() << " axes";
      diag.attachNote(mesh.getLoc()) << "mesh declared here";
      return diag;
    }
  return mesh.getGroupSize(op.getAxes());
}

/// Checks each input/result pair against the group size.
static LogicalResult verifyCollectiveGroup(
    CollectiveOpInterface op, SymbolTableCollection &symbolTable,
    function_ref<LogicalResult(RankedTensorType, RankedTensorType, int64_t)>
        checkPair) {
  FailureOr<int64_t> groupSize = verifyCollectiveMesh(op, symbolTable);
  if (failed(groupSize))
    return failure();
  for (auto [input, result] :
       llvm::zip(op.getInputs(), op.getOperation()->getResults()))
    if (failed(checkPair(cast<RankedTensorType>(input.getType()),
                         getCarriedType(result.getType()), *groupSize)))
      return failure();
  return success();
}

/// Folds a synchronous collective over a group of one rank to its inputs.
static LogicalResult foldTrivialCollective(CollectiveOpInterface op,
                                           SmallVectorImpl<OpFoldResult> &out) {
  if (op.isAsync())
    return failure();
  std::optional<int64_t> groupSize = getGroupSize(op);
  if (!groupSize || *groupSize != 1)
    return failure();
  for (auto [input, result] :
       llvm::zip(op.getInputs(), op.getOperation()->getResults()))
    if (input.getType() != result.getType())
      return failure();
  llvm::append_range(out, op.getInputs());
  return success();
}

static LogicalResult checkSameType(Operation *op, RankedTensorType in,
                                   RankedTensorType out) {
  if (in != out)
    return op->emitOpError()
           << "result type " << out << " differs from input type " << in;
  return success();
}

static LogicalResult checkDim(Operation *op, StringRef name, int64_t dim,
                              RankedTensorType type) {
  if (dim < 0 || dim >= type.getRank())
    return op->emitOpError()
           << name << " " << dim << " is out of range for " << type;
  return success();
}

/// Checks that `out` has the rank of `in` and the same size in every
/// dimension but `skipA` and `skipB`.
static LogicalResult checkOtherDims(Operation *op, RankedTensorType in,
                                    RankedTensorType out, int64_t skipA,
                                    int64_t skipB) {
  if (in.getRank() != out.getRank())
    return op->emitOpError() << "result rank " << out.getRank()
                             << " differs from input rank " << in.getRank();
  for (int64_t d = 0; d < in.getRank(); ++d)
    if (d != skipA && d != skipB &&
        !compatibleDim(in.getDimSize(d), out.getDimSize(d)))
      return op->emitOpError()
             << "result dimension " << d << " (" << out.getDimSize(d)
             << ") differs from input dimension " << d << " ("
             << in.getDimSize(d) << ")";
  return success();
}

/// Checks that `out` is `in` with dimension `dim` scaled by `num / den`, all
/// other dimensions equal.
static LogicalResult checkScaledDim(Operation *op, RankedTensorType in,
                                    RankedTensorType out, int64_t dim,
                                    int64_t num, int64_t den) {
  if (failed(checkOtherDims(op, in, out, dim, dim)))
    return failure();
  int64_t inSize = in.getDimSize(dim), outSize = out.getDimSize(dim);
  if (ShapedType::isDynamic(inSize) || ShapedType::isDynamic(outSize))
    return success();
  if (inSize * num % den != 0)
    return op->emitOpError()
           << "input dimension " << dim << " (" << inSize
           << ") is not divisible by the group size (" << den << ")";
  if (outSize != inSize * num / den)
    return op->emitOpError()
           << "result dimension " << dim << " should be " << inSize * num / den
           << " for input dimension " << inSize << " and a group of "
           << std::max(num, den) << " ranks, found " << outSize;
  return success();
}

// all_reduce

LogicalResult AllReduceOp::verify() {
  // all_reduce_c2
  if (getKind() == ReductionKind::Avg)
    for (Value input : getInputs())
      if (!isFloatTensor(input.getType()))
        return emitOpError()
               << "avg needs float element types, found " << input.getType();
  // all_reduce_c1
  return verifyCollective(*this,
                          [&](RankedTensorType in, RankedTensorType out) {
                            return checkSameType(*this, in, out);
                          });
}

LogicalResult AllReduceOp::verifySymbolUses(SymbolTableCollection &table) {
  return verifyCollectiveMesh(*this, table);
}

LogicalResult AllReduceOp::fold(FoldAdaptor,
                                SmallVectorImpl<OpFoldResult> &results) {
  return foldTrivialCollective(*this, results);
}

// all_gather

LogicalResult AllGatherOp::verify() {
  return verifyCollective(*this, [&](RankedTensorType in,
                                     RankedTensorType out) {
    // all_gather_c1
    if (failed(checkDim(*this, "gather_dim", getGatherDimAttr().getInt(), in)))
      return failure();
    // all_gather_c2
    int64_t dim = getGatherDimAttr().getInt();
    return checkOtherDims(*this, in, out, dim, dim);
  });
}

LogicalResult AllGatherOp::verifySymbolUses(SymbolTableCollection &table) {
  // all_gather_c3
  return verifyCollectiveGroup(
      *this, table, [&](RankedTensorType in, RankedTensorType out, int64_t n) {
        return checkScaledDim(*this, in, out, getGatherDimAttr().getInt(), n,
                              1);
      });
}

LogicalResult AllGatherOp::fold(FoldAdaptor,
                                SmallVectorImpl<OpFoldResult> &results) {
  return foldTrivialCollective(*this, results);
}

// reduce_scatter

LogicalResult ReduceScatterOp::verify() {
  // reduce_scatter_c4
  if (getKind() == ReductionKind::Avg)
    for (Value input : getInputs())
      if (!isFloatTensor(input.getType()))
        return emitOpError()
               << "avg needs float element types, found " << input.getType();
  return verifyCollective(
      *this, [&](RankedTensorType in, RankedTensorType out) {
        // reduce_scatter_c1
        if (failed(checkDim(*this, "scatter_dim", getScatterDimAttr().getInt(),
                            in)))
          return failure();
        // reduce_scatter_c2
        int64_t dim = getScatterDimAttr().getInt();
        return checkOtherDims(*this, in, out, dim, dim);
      });
}

LogicalResult ReduceScatterOp::verifySymbolUses(SymbolTableCollection &table) {
  // reduce_scatter_c3
  return verifyCollectiveGroup(
      *this, table, [&](RankedTensorType in, RankedTensorType out, int64_t n) {
        return checkScaledDim(*this, in, out, getScatterDimAttr().getInt(), 1,
                              n);
      });
}

LogicalResult ReduceScatterOp::fold(FoldAdaptor,
                                    SmallVectorImpl<OpFoldResult> &results) {
  return foldTrivialCollective(*this, results);
}

// all_to_all

LogicalResult AllToAllOp::verify() {
  return verifyCollective(
      *this, [&](RankedTensorType in, RankedTensorType out) -> LogicalResult {
        // all_to_all_c1
        if (failed(
                checkDim(*this, "split_dim", getSplitDimAttr().getInt(), in)) ||
            failed(
                checkDim(*this, "concat_dim", getConcatDimAttr().getInt(), in)))
          return failure();
        // all_to_all_c2
        return checkOtherDims(*this, in, out, getSplitDimAttr().getInt(),
                              getConcatDimAttr().getInt());
      });
}

LogicalResult AllToAllOp::verifySymbolUses(SymbolTableCollection &table) {
  // all_to_all_c3
  return verifyCollectiveGroup(
      *this, table,
      [&](RankedTensorType in, RankedTensorType out,
          int64_t n) -> LogicalResult {
        int64_t split = getSplitDimAttr().getInt(),
                concat = getConcatDimAttr().getInt();
        if (split == concat)
          return checkScaledDim(*this, in, out, split, n, n);
        SmallVector<int64_t> shape(in.getShape());
        if (!ShapedType::isDynamic(shape[split])) {
          if (shape[split] % n != 0)
            return emitOpError()
                   << "input dimension " << split << " (" << shape[split]
                   << ") is not divisible by the group size (" << n << ")";
          shape[split] /= n;
        }
        if (!ShapedType::isDynamic(shape[concat]))
          shape[concat] *= n;
        for (int64_t d : {split, concat})
          if (!compatibleDim(shape[d], out.getDimSize(d)))
            return emitOpError() << "result dimension " << d << " should be "
                                 << shape[d] << " for a group of " << n
                                 << " ranks, found " << out.getDimSize(d);
        return success();
      });
}

LogicalResult AllToAllOp::fold(FoldAdaptor,
                               SmallVectorImpl<OpFoldResult> &results) {
  return foldTrivialCollective(*this, results);
}

// broadcast

LogicalResult BroadcastOp::verify() {
  // broadcast_c1
  if (getRootAttr().getInt() < 0)
    return emitOpError() << "root must be non-negative, found "
                         << getRootAttr().getInt();
  return verifyCollective(*this,
                          [&](RankedTensorType in, RankedTensorType out) {
                            // broadcast_c2
                            return checkSameType(*this, in, out);
                          });
}

LogicalResult BroadcastOp::verifySymbolUses(SymbolTableCollection &table) {
  FailureOr<int64_t> groupSize = verifyCollectiveMesh(*this, table);
  if (failed(groupSize))
    return failure();
  // broadcast_c3
  if (getRootAttr().getInt() >= *groupSize)
    return emitOpError() << "root " << getRootAttr().getInt()
                         << " is out of range for a group of " << *groupSize
                         << " ranks";
  return success();
}

LogicalResult BroadcastOp::fold(FoldAdaptor,
                                SmallVectorImpl<OpFoldResult> &results) {
  return foldTrivialCollective(*this, results);
}

//===----------------------------------------------------------------------===//
// WaitOp
//===----------------------------------------------------------------------===//

LogicalResult WaitOp::inferReturnTypes(MLIRContext *,
                                       std::optional<Location> location,
                                       ValueRange operands, DictionaryAttr,
                                       OpaqueProperties, RegionRange,
                                       SmallVectorImpl<Type> &inferred) {
  for (auto [i, operand] : llvm::enumerate(operands)) {
    auto future = dyn_cast<FutureType>(operand.getType());
    if (!future)
      return emitOptionalError(location, "'spmd.wait' op operand #", i,
                               " must be a future, found ", operand.getType());
    inferred.push_back(future.getValueType());
  }
  return success();
}

LogicalResult WaitOp::verify() {
  // wait_c1
  if (getFutures().empty())
    return emitOpError("needs at least one future");
  return success();
}

void WaitOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                         MLIRContext *) {
  // Waiting on a collective over a group of one rank yields its input; the
  // other futures keep a (smaller) wait.
  results.add(+[](WaitOp op, PatternRewriter &rewriter) {
    SmallVector<Value> replacements(op->getNumResults());
    SmallVector<Value> pending;
    for (auto [i, future] : llvm::enumerate(op.getFutures())) {
      auto collective = future.getDefiningOp<CollectiveOpInterface>();
      std::optional<int64_t> groupSize =
          collective ? getGroupSize(collective) : std::nullopt;
      if (groupSize && *groupSize == 1) {
        Value input =
            collective.getInputs()[cast<OpResult>(future).getResultNumber()];
        if (input.getType() == op.getResult(i).getType()) {
          replacements[i] = input;
          continue;
        }
      }
      pending.push_back(future);
    }
    if (pending.size() == op.getFutures().size())
      return failure();
    if (!pending.empty()) {
      auto rest = WaitOp::create(rewriter, op.getLoc(), pending);
      auto next = rest.getResults().begin();
      for (Value &replacement : replacements)
        if (!replacement)
          replacement = *next++;
    }
    rewriter.replaceOp(op, replacements);
    return success();
  });
}

//===----------------------------------------------------------------------===//
// Foreach ops
//===----------------------------------------------------------------------===//

static LogicalResult verifyForeach(Operation *op, ArrayRef<OperandRange> lists,
                                   OperandRange scalars, bool scalarRequired) {
  OperandRange self = lists.front();
  // foreach_c1
  if (self.empty())
    return op->emitOpError("needs at least one tensor in each list");
  for (auto [i, list] : llvm::enumerate(lists.drop_front()))
    if (list.size() != self.size())
      return op->emitOpError()
             << "tensor list #" << i + 1 << " has " << list.size()
             << " entries, expected " << self.size();
  // foreach_c2
  for (auto [i, value] : llvm::enumerate(self)) {
    if (!isFloatTensor(value.getType()))
      return op->emitOpError()
             << "entry #" << i << " must be a float tensor, found "
             << value.getType();
    for (auto [l, list] : llvm::enumerate(lists.drop_front()))
      if (list[i].getType() != value.getType())
        return op->emitOpError()
               << "entry #" << i << " of tensor list #" << l + 1 << " has type "
               << list[i].getType() << ", expected " << value.getType();
  }
  // foreach_c3
  if (scalars.empty() ? scalarRequired
                      : scalars.size() != 1 && scalars.size() != self.size())
    return op->emitOpError()
           << "needs " << (scalarRequired ? "" : "no, ") << "one shared or "
           << self.size() << " per-entry scalars, found " << scalars.size();
  return success();
}

#define SPMD_FOREACH_OP(OpTy, scalarRequired)                                  \
  LogicalResult OpTy::verify() {                                               \
    return verifyForeach(getOperation(), getTensorLists(),                     \
                         getScalarOperands(), scalarRequired);                 \
  }                                                                            \
  LogicalResult OpTy::inferReturnTypes(                                        \
      MLIRContext *, std::optional<Location>, ValueRange operands,             \
      DictionaryAttr attributes, OpaqueProperties properties,                  \
      RegionRange regions, SmallVectorImpl<Type> &inferred) {                  \
    OpTy::Adaptor adaptor(operands, attributes, properties, regions);          \
    llvm::append_range(inferred, adaptor.getSelf().getTypes());                \
    return success();                                                          \
  }

SPMD_FOREACH_OP(ForeachNegOp, false)
SPMD_FOREACH_OP(ForeachSqrtOp, false)
SPMD_FOREACH_OP(ForeachAddOp, false)
SPMD_FOREACH_OP(ForeachMulOp, false)
SPMD_FOREACH_OP(ForeachDivOp, false)
SPMD_FOREACH_OP(ForeachMaximumOp, false)
SPMD_FOREACH_OP(ForeachLerpOp, true)
SPMD_FOREACH_OP(ForeachAddScalarOp, true)
SPMD_FOREACH_OP(ForeachMulScalarOp, true)
SPMD_FOREACH_OP(ForeachDivScalarOp, true)
SPMD_FOREACH_OP(ForeachAddcmulOp, false)
SPMD_FOREACH_OP(ForeachAddcdivOp, false)

#undef SPMD_FOREACH_OP

//===----------------------------------------------------------------------===//
// Optimizer ops
//===----------------------------------------------------------------------===//

/// Checks that `list` (named `name`) has one entry per parameter, each of the
/// parameter's type.
static LogicalResult verifyParamList(Operation *op, StringRef name,
                                     OperandRange params, OperandRange list) {
  if (list.size() != params.size())
    return op->emitOpError() << "has " << params.size() << " params but "
                             << list.size() << " " << name;
  for (auto [i, pair] : llvm::enumerate(llvm::zip(params, list))) {
    auto [param, value] = pair;
    if (param.getType() != value.getType())
      return op->emitOpError()
             << name << " #" << i << " has type " << value.getType()
             << ", expected " << param.getType() << " (the type of param #" << i
             << ")";
  }
  return success();
}

static LogicalResult verifyParams(Operation *op, OperandRange params) {
  if (params.empty())
    return op->emitOpError("needs at least one param");
  for (auto [i, param] : llvm::enumerate(params))
    if (!isFloatTensor(param.getType()))
      return op->emitOpError()
             << "param #" << i << " must be a float tensor, found "
             << param.getType();
  return success();
}

/// Checks a hyper-parameter against `[lo, hi)` (or `[lo, inf)` without `hi`),
/// with torch's wording.
static LogicalResult verifyHyper(Operation *op, StringRef name, APFloat value,
                                 double lo, std::optional<double> hi = {}) {
  double v = value.convertToDouble();
  if (std::isfinite(v) && v >= lo && (!hi || v < *hi))
    return success();
  auto str = [](double d) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%g", d);
    return std::string(buf);
  };
  InFlightDiagnostic diag = op->emitOpError()
                            << "invalid " << name << " " << str(v)
                            << ": expected a finite value";
  if (std::isfinite(lo))
    diag << " >= " << str(lo);
  if (hi)
    diag << " and < " << str(*hi);
  return diag;
}

/// Checks the run-time float options (sgd_c5 / adam_c4): one name per
/// value, each a float option of the op, given once, and not also set as an
/// attribute (a default-valued one must keep its default); `lr` is given
/// one way or the other.
struct FloatOption {
  StringRef name;
  /// The attribute's default; nullopt for an optional attribute (lr).
  std::optional<double> defaultValue;
};

static LogicalResult verifyHyperparams(Operation *op, ArrayAttr names,
                                       OperandRange values,
                                       ArrayRef<FloatOption> known) {
  size_t count = names ? names.size() : 0;
  if (count != values.size())
    return op->emitOpError() << "has " << values.size() << " hyperparams but "
                             << count << " hyperparam_names";
  llvm::SmallDenseSet<StringRef> seen;
  for (Attribute attr : names ? names.getValue() : ArrayRef<Attribute>()) {
    StringRef name = cast<StringAttr>(attr).getValue();
    const FloatOption *option = llvm::find_if(
        known, [&](const FloatOption &o) { return o.name == name; });
    if (option == known.end()) {
      InFlightDiagnostic diag = op->emitOpError()
                                << "has no float option '" << name
                                << "' to take at run time (expected one of: ";
      llvm::interleaveComma(known, diag,
                            [&](const FloatOption &o) { diag << o.name; });
      return diag << ")";
    }
    if (!seen.insert(name).second)
      return op->emitOpError() << "takes hyperparam '" << name << "' twice";
    auto set = dyn_cast_or_null<FloatAttr>(op->getAttr(name));
    if (set && (!option->defaultValue ||
                set.getValueAsDouble() != *option->defaultValue))
      return op->emitOpError()
             << "takes '" << name << "' both as an attribute and at run time";
  }
  if (!op->getAttr("lr") && !seen.contains("lr"))
    return op->emitOpError("needs lr, as an attribute or a hyperparam");
  return success();
}

/// The attribute of `name` unless the option is a run-time value.
static std::optional<APFloat> staticHyper(Operation *op, ArrayAttr names,
                                          OperandRange values, StringRef name) {
  if (lookupHyperparam(names, values, name))
    return std::nullopt;
  auto attr = dyn_cast_or_null<FloatAttr>(op->getAttr(name));
  if (!attr)
    return std::nullopt;
  return attr.getValue();
}

/// verifyHyper for an option that may be a run-time value (then checked by
/// the host, as torch checks it at construction).
static LogicalResult verifyStaticHyper(Operation *op, ArrayAttr names,
                                       OperandRange values, StringRef name,
                                       double lo,
                                       std::optional<double> hi = {}) {
  std::optional<APFloat> value = staticHyper(op, names, values, name);
  return value ? verifyHyper(op, name, *value, lo, hi) : success();
}

Value SGDOp::getHyperparam(StringRef name) {
  return lookupHyperparam(getHyperparamNamesAttr(), getHyperparams(), name);
}

Value AdamOp::getHyperparam(StringRef name) {
  return lookupHyperparam(getHyperparamNamesAttr(), getHyperparams(), name);
}

LogicalResult SGDOp::verify() {
  Operation *op = getOperation();
  // sgd_c1
  if (failed(verifyParams(op, getParams())) ||
      failed(verifyParamList(op, "grads", getParams(), getGrads())))
    return failure();
  // sgd_c5
  ArrayAttr names = getHyperparamNamesAttr();
  OperandRange values = getHyperparams();
  if (failed(verifyHyperparams(op, names, values,
                               {{"lr", std::nullopt},
                                {"momentum", 0.0},
                                {"dampening", 0.0},
                                {"weight_decay", 0.0}})))
    return failure();
  // sgd_c2
  if (failed(verifyStaticHyper(op, names, values, "lr", 0.0)) ||
      failed(verifyStaticHyper(op, names, values, "momentum", 0.0)) ||
      failed(verifyStaticHyper(op, names, values, "dampening", -INFINITY)) ||
      failed(verifyStaticHyper(op, names, values, "weight_decay", 0.0)))
    return failure();
  // sgd_c3: a run-time momentum is on; dampening must be a known zero.
  bool runtimeMomentum = bool(getHyperparam("momentum"));
  double momentum = runtimeMomentum ? 1.0 : getMomentum().convertToDouble();
  if (getNesterov() && (momentum <= 0.0 || getHyperparam("dampening") ||
                        getDampening().convertToDouble() != 0.0))
    return emitOpError("nesterov momentum needs a momentum and zero dampening");
  // sgd_c4
  if (momentum != 0.0) {
    if (!getStep())
      return emitOpError("with momentum needs a step counter");
    if (failed(verifyParamList(op, "momentum_buffers", getParams(),
                               getMomentumBuffers())))
      return failure();
  } else if (!getMomentumBuffers().empty() || getStep()) {
    return emitOpError(
        "without momentum takes neither momentum_buffers nor a step counter");
  }
  return success();
}

LogicalResult SGDOp::inferReturnTypes(MLIRContext *, std::optional<Location>,
                                      ValueRange operands,
                                      DictionaryAttr attributes,
                                      OpaqueProperties properties,
                                      RegionRange regions,
                                      SmallVectorImpl<Type> &inferred) {
  SGDOp::Adaptor adaptor(operands, attributes, properties, regions);
  llvm::append_range(inferred, adaptor.getParams().getTypes());
  llvm::append_range(inferred, adaptor.getMomentumBuffers().getTypes());
  if (adaptor.getStep())
    inferred.push_back(adaptor.getStep().getType());
  return success();
}

ResultRange SGDOp::getNewParams() {
  return getResults().take_front(getParams().size());
}
ResultRange SGDOp::getNewMomentumBuffers() {
  return getResults().slice(getParams().size(), getMomentumBuffers().size());
}
Value SGDOp::getNewStep() { return getStep() ? getResults().back() : Value(); }

LogicalResult AdamOp::verify() {
  Operation *op = getOperation();
  // adam_c1
  if (failed(verifyParams(op, getParams())) ||
      failed(verifyParamList(op, "grads", getParams(), getGrads())) ||
      failed(verifyParamList(op, "exp_avgs", getParams(), getExpAvgs())) ||
      failed(verifyParamList(op, "exp_avg_sqs", getParams(), getExpAvgSqs())))
    return failure();
  if (getSteps().size() != getParams().size())
    return emitOpError() << "has " << getParams().size() << " params but "
                         << getSteps().size() << " steps";
  // adam_c4
  ArrayAttr names = getHyperparamNamesAttr();
  OperandRange values = getHyperparams();
  if (failed(verifyHyperparams(op, names, values,
                               {{"lr", std::nullopt},
                                {"beta1", 0.9},
                                {"beta2", 0.999},
                                {"eps", 1.0e-8},
                                {"weight_decay", 0.0}})))
    return failure();
  // adam_c2
  if (failed(verifyStaticHyper(op, names, values, "lr", 0.0)) ||
      failed(verifyStaticHyper(op, names, values, "eps", 0.0)) ||
      failed(verifyStaticHyper(op, names, values, "beta1", 0.0, 1.0)) ||
      failed(verifyStaticHyper(op, names, values, "beta2", 0.0, 1.0)) ||
      failed(verifyStaticHyper(op, names, values, "weight_decay", 0.0)))
    return failure();
  // adam_c3
  if (getAmsgrad())
    return verifyParamList(op, "max_exp_avg_sqs", getParams(),
                           getMaxExpAvgSqs());
  if (!getMaxExpAvgSqs().empty())
    return emitOpError("takes max_exp_avg_sqs only with amsgrad");
  return success();
}

LogicalResult AdamOp::inferReturnTypes(MLIRContext *, std::optional<Location>,
                                       ValueRange operands,
                                       DictionaryAttr attributes,
                                       OpaqueProperties properties,
                                       RegionRange regions,
                                       SmallVectorImpl<Type> &inferred) {
  AdamOp::Adaptor adaptor(operands, attributes, properties, regions);
  llvm::append_range(inferred, adaptor.getParams().getTypes());
  llvm::append_range(inferred, adaptor.getExpAvgs().getTypes());
  llvm::append_range(inferred, adaptor.getExpAvgSqs().getTypes());
  llvm::append_range(inferred, adaptor.getMaxExpAvgSqs().getTypes());
  llvm::append_range(inferred, adaptor.getSteps().getTypes());
  return success();
}

ResultRange AdamOp::getNewParams() {
  return getResults().take_front(getParams().size());
}
ResultRange AdamOp::getNewExpAvgs() {
  return getResults().slice(getParams().size(), getExpAvgs().size());
}
ResultRange AdamOp::getNewExpAvgSqs() {
  return getResults().slice(getParams().size() + getExpAvgs().size(),
                            getExpAvgSqs().size());
}
ResultRange AdamOp::getNewMaxExpAvgSqs() {
  return getResults().slice(getParams().size() + getExpAvgs().size() +
                                getExpAvgSqs().size(),
                            getMaxExpAvgSqs().size());
}
ResultRange AdamOp::getNewSteps() {
  return getResults().take_back(getSteps().size());
}

//===----------------------------------------------------------------------===//
// State ops
//===----------------------------------------------------------------------===//

LogicalResult StateOp::verify() {
  // state_c1
  if (!getTensorType().hasStaticShape())
    return emitOpError() << "needs a static shape, found " << getType();
  return success();
}

LogicalResult StateOp::verifySymbolUses(SymbolTableCollection &) {
  // state_c2
  if (std::optional<SpecAttr> spec = getSpec())
    return spec->verifyAgainst([&]() { return emitOpError(); }, *this,
                               getType());
  return success();
}

/// Resolves the state a load or store names and checks its type.
static LogicalResult verifyStateAccess(Operation *op, FlatSymbolRefAttr name,
                                       Type type,
                                       SymbolTableCollection &symbolTable) {
  // load_c1, store_c1
  auto state =
      dyn_cast_or_null<StateOp>(symbolTable.lookupNearestSymbolFrom(op, name));
  if (!state)
    return op->emitOpError() << name << " does not name an 'spmd.state'";
  // load_c2, store_c2
  if (state.getType() != type) {
    InFlightDiagnostic diag = op->emitOpError()
                              << "type " << type
                              << " differs from the type of state " << name
                              << " (" << state.getType() << ")";
    diag.attachNote(state.getLoc()) << "state declared here";
    return diag;
  }
  return success();
}

LogicalResult LoadOp::verifySymbolUses(SymbolTableCollection &table) {
  return verifyStateAccess(*this, getStateAttr(), getType(), table);
}

LogicalResult StoreOp::verifySymbolUses(SymbolTableCollection &table) {
  return verifyStateAccess(*this, getStateAttr(), getValue().getType(), table);
}

#define GET_OP_CLASSES
#include "Spmd/Dialect/Spmd/IR/SpmdOps.cpp.inc"

//===----------------------------------------------------------------------===//
// Rank-local ops
//===----------------------------------------------------------------------===//

/// Resolves `mesh` and checks `axes` against it (unique, in range).
static FailureOr<int64_t> verifyMeshAxes(Operation *op, FlatSymbolRefAttr name,
                                         ArrayRef<int64_t> axes,
                                         SymbolTableCollection &table) {
  MeshOp mesh = lookupMesh(op, name, &table);
  if (!mesh)
    return failure();
  llvm::SmallSet<int64_t, 4> seen;
  for (int64_t axis : axes)
    if (axis < 0 || axis >= mesh.getRank() || !seen.insert(axis).second)
      return op->emitOpError() << "mesh axes must be unique and in [0, "
                               << mesh.getRank() << "), found " << axis;
  return mesh.getGroupSize(axes);
}

LogicalResult AxisIndexOp::verifySymbolUses(SymbolTableCollection &table) {
  // axis_index_c1
  return verifyMeshAxes(*this, getMeshAttr(), getAxes(), table);
}

LogicalResult LocalSliceOp::verify() {
  // local_slice_c1
  auto in = getInput().getType(), out = getResult().getType();
  if (failed(checkDim(*this, "dim", getDimAttr().getInt(), in)))
    return failure();
  int64_t dim = getDimAttr().getInt();
  return checkOtherDims(*this, in, out, dim, dim);
}

LogicalResult LocalSliceOp::verifySymbolUses(SymbolTableCollection &table) {
  // local_slice_c2
  FailureOr<int64_t> n = verifyMeshAxes(*this, getMeshAttr(), getAxes(), table);
  if (failed(n))
    return failure();
  int64_t dim = getDimAttr().getInt();
  int64_t size = getInput().getType().getDimSize(dim);
  int64_t got = getResult().getType().getDimSize(dim);
  if (ShapedType::isDynamic(size))
    return success();
  int64_t expected = size % *n == 0 ? size / *n : ShapedType::kDynamic;
  if (got != expected)
    return emitOpError() << "result dimension " << dim << " should be "
                         << (ShapedType::isDynamic(expected)
                                 ? std::string("dynamic (uneven chunks)")
                                 : std::to_string(expected))
                         << " for size " << size << " over " << *n << " ranks";
  return success();
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

/// The constraints spmd.attention and spmd.attention_grad share, given the
/// forward's operands and the types of its results.
static LogicalResult
verifyAttention(Operation *op, RankedTensorType query, RankedTensorType key,
                RankedTensorType value, Value mask, double scale, bool causal,
                RankedTensorType out, RankedTensorType lse) {
  auto dims = [](RankedTensorType t) { return t.getShape(); };
  ArrayRef<int64_t> q = dims(query), k = dims(key), v = dims(value);
  // attention_c1
  if (!compatibleDim(q[0], k[0]) || !compatibleDim(q[0], v[0]) ||
      !compatibleDim(q[1], k[1]) || !compatibleDim(q[1], v[1]))
    return op->emitOpError("query, key and value need the same batch and "
                           "head dimensions (B x H x ...), got ")
           << query << ", " << key << ", " << value;
  if (!compatibleDim(k[2], v[2]))
    return op->emitOpError("key and value need the same sequence length, "
                           "got ")
           << key << " and " << value;
  if (!compatibleDim(q[3], k[3]))
    return op->emitOpError("query and key need the same head size, got ")
           << query << " and " << key;
  // attention_c2
  ArrayRef<int64_t> o = dims(out), l = dims(lse);
  if (!compatibleDim(o[0], q[0]) || !compatibleDim(o[1], q[1]) ||
      !compatibleDim(o[2], q[2]) || !compatibleDim(o[3], v[3]))
    return op->emitOpError("output should be B x H x L x Ev (")
           << q[0] << "x" << q[1] << "x" << q[2] << "x" << v[3] << "), got "
           << out;
  if (!compatibleDim(l[0], q[0]) || !compatibleDim(l[1], q[1]) ||
      !compatibleDim(l[2], q[2]))
    return op->emitOpError("log-sum-exp should be B x H x L, got ") << lse;
  // attention_c3
  if (mask) {
    if (causal)
      return op->emitOpError("takes a mask or `causal`, not both");
    ArrayRef<int64_t> m = cast<RankedTensorType>(mask.getType()).getShape();
    for (int d = 0; d < 3; ++d)
      if (m[d] != 1 && !compatibleDim(m[d], q[d]))
        return op->emitOpError("mask dimension ")
               << d << " should be 1 or " << q[d] << ", got " << m[d];
    if (!compatibleDim(m[3], k[2]))
      return op->emitOpError("mask's last dimension should be the key "
                             "length ")
             << k[2] << ", got " << m[3];
  }
  // attention_c4
  if (!std::isfinite(scale))
    return op->emitOpError("scale must be finite, got ") << scale;
  return success();
}

LogicalResult AttentionOp::verify() {
  return verifyAttention(*this, getQuery().getType(), getKey().getType(),
                         getValue().getType(), getMask(),
                         getScale().convertToDouble(), getCausal(),
                         getOut().getType(), getLse().getType());
}

LogicalResult AttentionGradOp::verify() {
  // attention_grad_c1
  if (getGrad().getType() != getOut().getType())
    return emitOpError("grad should have the type of out, ")
           << getOut().getType() << ", got " << getGrad().getType();
  return verifyAttention(*this, getQuery().getType(), getKey().getType(),
                         getValue().getType(), getMask(),
                         getScale().convertToDouble(), getCausal(),
                         getOut().getType(), getLse().getType());
}
