//===- SpmdToRuntime.cpp - collectives and state to libSpmdRuntime --------===//

#include "Spmd/Conversion/Passes.h"
#include "Spmd/Conversion/RuntimeCalls.h"
#include "Spmd/Dialect/Spmd/IR/SpmdOps.h"
#include "Spmd/Runtime/SpmdRuntime.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/xxhash.h"

namespace mlir::spmd {
#define GEN_PASS_DEF_CONVERTSPMDTORUNTIMEPASS
#include "Spmd/Conversion/Passes.h.inc"
} // namespace mlir::spmd

using namespace mlir;
using namespace mlir::spmd;

namespace {

/// Alignment of state globals (see lowerState for why not 64).
constexpr int64_t kStateAlignment = 128;

class RuntimeLowering {
public:
  explicit RuntimeLowering(ModuleOp module)
      : module(module), ctx(module.getContext()), b(ctx) {}

  LogicalResult run();

private:
  Value i64(int64_t v, Location loc) {
    return arith::ConstantIntOp::create(b, loc, b.getI64Type(), v);
  }
  Value i32(int64_t v, Location loc) {
    return arith::ConstantIntOp::create(b, loc, b.getI32Type(), v);
  }
  /// Declares (once) and calls runtime function `name`.
  Value call(RuntimeFunction fn, ValueRange args, Location loc);
  FailureOr<std::pair<int64_t, int64_t>>
  group(Operation *op, FlatSymbolRefAttr meshName, ArrayRef<int64_t> axes);
  FailureOr<int32_t> dtype(Operation *op, Type element);
  /// A contiguous copy of `tensor` and a fresh buffer of `resultType`, with
  /// their addresses.
  std::tuple<Value, Value, Value>
  buffers(Value tensor, RankedTensorType resultType, Location loc);
  Value address(Value memref, Location loc);
  Value axisIndex(int64_t meshCode, int64_t mask, Location loc);

  /// A collective's runtime call: the blocking function, its `...Start`
  /// form, and their arguments.
  struct CollectiveCall {
    RuntimeFunction blocking, start;
    SmallVector<Value> args;
  };
  /// The call of the collective `operation` for one operand (of `inType`,
  /// at `inAddr`, into `outAddr`; element type code `dt`, group `mesh`,
  /// `axes`).
  FailureOr<CollectiveCall>
  collectiveCall(Operation *operation, RankedTensorType inType, Value inAddr,
                 Value outAddr, Value dt, Value mesh, Value axes, Location loc);
  LogicalResult lowerCollective(CollectiveOpInterface op);
  LogicalResult lowerWait(WaitOp op);
  LogicalResult lowerLocalSlice(LocalSliceOp op);
  LogicalResult lowerState(StateOp op);
  LogicalResult registerStates(ArrayRef<StateOp> states);
  void insertProgramChecks();
  Value stringConstant(StringRef text, StringRef symbol, Location loc);
  bool canReadInPlace(LoadOp load, ArrayRef<Operation *> uses);

  ModuleOp module;
  MLIRContext *ctx;
  OpBuilder b;
  struct Started {
    Value handle, out;
    RankedTensorType type;
    Value tensor = {};
  };
  /// Futures of started collectives, until their waits are lowered.
  DenseMap<Value, Started> pending;
  SmallVector<Operation *> started;
  /// Each state's loads and stores, in program order (lowerState).
  llvm::StringMap<SmallVector<Operation *>> stateUses;
  /// Whether a function calls anything but the runtime (canReadInPlace).
  DenseMap<Operation *, bool> callsOthers;
};

Value RuntimeLowering::call(RuntimeFunction fn, ValueRange args, Location loc) {
  auto op = spmd::callRuntime(b, module, loc, fn, args);
  return op.getNumResults() ? op.getResult(0) : Value();
}

FailureOr<std::pair<int64_t, int64_t>>
RuntimeLowering::group(Operation *op, FlatSymbolRefAttr meshName,
                       ArrayRef<int64_t> axes) {
  auto mesh = SymbolTable::lookupNearestSymbolFrom<MeshOp>(op, meshName);
  if (!mesh)
    return op->emitOpError() << meshName << " does not name an 'spmd.mesh'";
  if (mesh.getRank() > SPMD_MESH_MAX_AXES)
    return op->emitOpError("the runtime supports meshes of up to ")
           << SPMD_MESH_MAX_AXES << " axes";
  int64_t code = 0;
  for (auto [a, size] : llvm::enumerate(mesh.getShape())) {
    if (size >= (int64_t(1) << SPMD_MESH_AXIS_BITS))
      return op->emitOpError("the runtime supports axes of fewer than ")
             << (int64_t(1) << SPMD_MESH_AXIS_BITS) << " ranks";
    code = spmdMeshWithAxis(code, int32_t(a), size);
  }
  int64_t mask = 0, last = -1;
  for (int64_t axis : axes) {
    if (axis <= last)
      return op->emitOpError("the CPU runtime needs the axes of a group in "
                             "increasing order");
    last = axis;
    mask |= int64_t(1) << axis;
  }
  return std::make_pair(code, mask);
}

FailureOr<int32_t> RuntimeLowering::dtype(Operation *op, Type element) {
  if (element.isF32())
    return SPMD_F32;
  if (element.isF64())
    return SPMD_F64;
  if (element.isInteger(32))
    return SPMD_I32;
  if (element.isInteger(64))
    return SPMD_I64;
  if (element.isBF16())
    return SPMD_BF16;
  if (element.isF16())
    return SPMD_F16;
  if (element.isInteger(1))
    return SPMD_BOOL;
  return op->emitOpError() << "the CPU runtime does not support element type "
                           << element;
}

Value RuntimeLowering::address(Value memref, Location loc) {
  return spmd::bufferAddress(b, loc, memref);
}

std::tuple<Value, Value, Value>
RuntimeLowering::buffers(Value tensor, RankedTensorType resultType,
                         Location loc) {
  auto inType = cast<RankedTensorType>(tensor.getType());
  // The runtime reads the input as one contiguous block: ask bufferization
  // for an identity-layout buffer (it copies only when the tensor's buffer
  // has another layout, e.g. a slice).
  Value in = bufferization::ToBufferOp::create(
      b, loc, MemRefType::get(inType.getShape(), inType.getElementType()),
      tensor, /*read_only=*/true);
  Value out = memref::AllocOp::create(
      b, loc,
      MemRefType::get(resultType.getShape(), resultType.getElementType()));
  return {in, out, Value()};
}

Value RuntimeLowering::axisIndex(int64_t meshCode, int64_t mask, Location loc) {
  Value idx = call(RuntimeFunction::spmdAxisIndex,
                   {i64(meshCode, loc), i64(mask, loc)}, loc);
  return arith::IndexCastOp::create(b, loc, b.getIndexType(), idx);
}

static int64_t product(ArrayRef<int64_t> shape, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to; ++i)
    p *= shape[i];
  return p;
}

FailureOr<RuntimeLowering::CollectiveCall>
RuntimeLowering::collectiveCall(Operation *operation, RankedTensorType inType,
                                Value inAddr, Value outAddr, Value dt,
                                Value mesh, Value axes, Location loc) {
  ArrayRef<int64_t> shape = inType.getShape();
  size_t rank = shape.size();
  return TypeSwitch<Operation *, FailureOr<CollectiveCall>>(operation)
      .Case([&](AllReduceOp ar) {
        return CollectiveCall{
            RuntimeFunction::spmdAllReduce,
            RuntimeFunction::spmdAllReduceStart,
            {inAddr, outAddr, i64(inType.getNumElements(), loc), dt,
             i32(static_cast<int32_t>(ar.getKind()), loc), mesh, axes}};
      })
      .Case([&](AllGatherOp ag) {
        size_t d = ag.getGatherDimAttr().getInt();
        return CollectiveCall{RuntimeFunction::spmdAllGather,
                              RuntimeFunction::spmdAllGatherStart,
                              {inAddr, outAddr, i64(product(shape, 0, d), loc),
                               i64(shape[d], loc),
                               i64(product(shape, d + 1, rank), loc), dt, mesh,
                               axes}};
      })
      .Case([&](ReduceScatterOp rs) {
        size_t d = rs.getScatterDimAttr().getInt();
        return CollectiveCall{
            RuntimeFunction::spmdReduceScatter,
            RuntimeFunction::spmdReduceScatterStart,
            {inAddr, outAddr, i64(product(shape, 0, d), loc),
             i64(shape[d], loc), i64(product(shape, d + 1, rank), loc), dt,
             i32(static_cast<int32_t>(rs.getKind()), loc), mesh, axes}};
      })
      .Case([&](AllToAllOp a2a) -> FailureOr<CollectiveCall> {
        // The runtime takes 4 dimensions. Dimensions that are neither
        // split nor concatenated merge into the one before them: the
        // split dimension's chunks (and the concatenation's places)
        // are then the same bytes of the row-major buffer, so any
        // rank fits in at most 3.
        int64_t split = a2a.getSplitDimAttr().getInt();
        int64_t concat = a2a.getConcatDimAttr().getInt();
        SmallVector<int64_t> dims;
        int64_t newSplit = 0, newConcat = 0;
        for (size_t i = 0; i < rank; ++i) {
          bool special = int64_t(i) == split || int64_t(i) == concat;
          if (special || dims.empty())
            dims.push_back(shape[i]);
          else
            dims.back() *= shape[i];
          if (int64_t(i) == split)
            newSplit = dims.size() - 1;
          if (int64_t(i) == concat)
            newConcat = dims.size() - 1;
        }
        SmallVector<Value> args{inAddr, outAddr};
        for (size_t i = 0; i < 4; ++i)
          args.push_back(i64(i < dims.size() ? dims[i] : 1, loc));
        args.append({i64(newSplit, loc), i64(newConcat, loc), dt, mesh, axes});
        return CollectiveCall{RuntimeFunction::spmdAllToAll4,
                              RuntimeFunction::spmdAllToAll4Start, args};
      })
      .Case([&](BroadcastOp bc) {
        return CollectiveCall{
            RuntimeFunction::spmdBroadcast,
            RuntimeFunction::spmdBroadcastStart,
            {inAddr, outAddr, i64(inType.getNumElements(), loc), dt,
             i64(bc.getRootAttr().getInt(), loc), mesh, axes}};
      })
      .Default([&](Operation *) -> FailureOr<CollectiveCall> {
        return operation->emitOpError("has no runtime lowering");
      });
}

LogicalResult RuntimeLowering::lowerCollective(CollectiveOpInterface op) {
  Operation *operation = op.getOperation();
  bool async = op.isAsync();
  FailureOr<std::pair<int64_t, int64_t>> grp =
      group(operation, op.getMeshAttr(), op.getAxes());
  if (failed(grp))
    return failure();
  auto [meshCode, mask] = *grp;
  Location loc = operation->getLoc();
  b.setInsertionPoint(operation);
  // A coalesced collective (several operands) is one group: every operand's
  // non-blocking form between spmdGroupStart and spmdGroupEnd (NCCL launches
  // them together), then, if the op is synchronous, the waits.
  bool grouped = op.getInputs().size() > 1;
  if (grouped)
    call(RuntimeFunction::spmdGroupStart, {}, loc);
  SmallVector<Value> handles;
  SmallVector<Value> results;
  for (auto [input, result] :
       llvm::zip(op.getInputs(), operation->getResults())) {
    auto inType = cast<RankedTensorType>(input.getType());
    auto outType = async ? cast<FutureType>(result.getType()).getValueType()
                         : cast<RankedTensorType>(result.getType());
    if (!inType.hasStaticShape() || !outType.hasStaticShape())
      return operation->emitOpError(
          "the CPU runtime needs static shapes on collectives");
    FailureOr<int32_t> code = dtype(operation, inType.getElementType());
    if (failed(code))
      return failure();
    auto [in, out, unused] = buffers(input, outType, loc);
    Value inAddr = address(in, loc), outAddr = address(out, loc);
    Value dt = i32(*code, loc), mesh = i64(meshCode, loc),
          axes = i64(mask, loc);
    FailureOr<CollectiveCall> c =
        collectiveCall(operation, inType, inAddr, outAddr, dt, mesh, axes, loc);
    if (failed(c))
      return failure();
    // The asynchronous form calls <name>Start, which returns a handle.
    Value handle;
    if (!async && !grouped)
      call(c->blocking, c->args, loc);
    else
      handle = call(c->start, c->args, loc);
    if (async) {
      // The future becomes the handle and the buffer; its waits read them.
      pending[result] = {handle, out, outType};
      continue;
    }
    if (grouped)
      handles.push_back(handle);
    results.push_back(bufferization::ToTensorOp::create(
        b, loc, outType, out, /*restrict=*/true, /*writable=*/true));
  }
  if (grouped) {
    call(RuntimeFunction::spmdGroupEnd, {}, loc);
    for (Value handle : handles)
      call(RuntimeFunction::spmdWait, {handle}, loc);
    // The results are read only after the waits.
    for (Value r : results)
      r.getDefiningOp()->moveBefore(operation);
  }
  if (async) {
    started.push_back(operation);
    return success();
  }
  operation->replaceAllUsesWith(results);
  operation->erase();
  return success();
}

LogicalResult RuntimeLowering::lowerWait(WaitOp wait) {
  b.setInsertionPoint(wait);
  Location loc = wait.getLoc();
  SmallVector<Value> results;
  for (Value future : wait.getFutures()) {
    auto it = pending.find(future);
    if (it == pending.end())
      return wait.emitOpError("waits on a future that no collective of this "
                              "module started");
    auto &[handle, out, type, tensor] = it->second;
    if (tensor) {
      // Waiting twice: the buffer is the same tensor.
      if (tensor.getParentBlock() != wait->getBlock())
        return wait.emitOpError("the CPU lowering waits on a future in one "
                                "block only");
      results.push_back(tensor);
      continue;
    }
    call(RuntimeFunction::spmdWait, {handle}, loc);
    tensor = bufferization::ToTensorOp::create(b, loc, type, out,
                                               /*restrict=*/true,
                                               /*writable=*/true);
    results.push_back(tensor);
  }
  wait.replaceAllUsesWith(results);
  wait.erase();
  return success();
}

LogicalResult RuntimeLowering::lowerLocalSlice(LocalSliceOp op) {
  FailureOr<std::pair<int64_t, int64_t>> grp =
      group(op, op.getMeshAttr(), op.getAxes());
  if (failed(grp))
    return failure();
  Location loc = op.getLoc();
  b.setInsertionPoint(op);
  auto mesh =
      SymbolTable::lookupNearestSymbolFrom<MeshOp>(op, op.getMeshAttr());
  int64_t n = mesh.getGroupSize(op.getAxes());
  int64_t dim = op.getDimAttr().getInt();
  RankedTensorType inType = op.getInput().getType();
  int64_t size = inType.getDimSize(dim);
  if (ShapedType::isDynamic(size))
    return op.emitOpError("the CPU lowering needs a static sliced dimension");
  int64_t chunk = (size + n - 1) / n;
  Value idx = axisIndex(grp->first, grp->second, loc);
  Value offset = arith::MulIOp::create(
      b, loc, idx, arith::ConstantIndexOp::create(b, loc, chunk));
  SmallVector<OpFoldResult> offsets(inType.getRank(), b.getIndexAttr(0));
  SmallVector<OpFoldResult> sizes, strides(inType.getRank(), b.getIndexAttr(1));
  // Other dimensions are kept whole; an uneven split on another mesh axis
  // leaves them dynamic.
  for (int64_t d = 0; d < inType.getRank(); ++d)
    sizes.push_back(
        op.getType().isDynamicDim(d)
            ? OpFoldResult(
                  tensor::DimOp::create(b, loc, op.getInput(), d).getResult())
            : OpFoldResult(b.getIndexAttr(op.getType().getDimSize(d))));
  offsets[dim] = offset;
  if (op.getType().isDynamicDim(dim)) {
    // clamp(size - offset, 0, chunk)
    Value left = arith::SubIOp::create(
        b, loc, arith::ConstantIndexOp::create(b, loc, size), offset);
    Value low = arith::MaxSIOp::create(
        b, loc, left, arith::ConstantIndexOp::create(b, loc, 0));
    sizes[dim] = arith::MinSIOp::create(
                     b, loc, low, arith::ConstantIndexOp::create(b, loc, chunk))
                     .getResult();
    // An empty chunk starts at the end.
    offsets[dim] =
        arith::MinSIOp::create(b, loc, offset,
                               arith::ConstantIndexOp::create(b, loc, size))
            .getResult();
  }
  Value slice = tensor::ExtractSliceOp::create(
      b, loc, op.getType(), op.getInput(), offsets, sizes, strides);
  op.replaceAllUsesWith(slice);
  op.erase();
  return success();
}

/// Whether `load` may read its state's global directly instead of a copy:
/// it is the function's only load of that state, the function calls nothing
/// but the runtime, and every read of the value (through views of it) comes
/// before the next store of the state in the same block and does not leave
/// the function.
bool RuntimeLowering::canReadInPlace(LoadOp load, ArrayRef<Operation *> uses) {
  auto fn = load->getParentOfType<func::FuncOp>();
  Block *block = load->getBlock();
  Operation *nextStore = nullptr;
  for (Operation *use : uses) {
    if (use == load || use->getParentOfType<func::FuncOp>() != fn)
      continue;
    if (isa<LoadOp>(use))
      return false;
    if (use->getBlock() != block)
      return false;
    if (load->isBeforeInBlock(use) &&
        (!nextStore || use->isBeforeInBlock(nextStore)))
      nextStore = use;
  }
  auto [it, inserted] = callsOthers.try_emplace(fn, false);
  if (inserted)
    fn.walk([&, &found = it->second](func::CallOp call) {
      found |= !call.getCallee().starts_with("spmd");
    });
  if (it->second)
    return false;
  SmallVector<Value> work{load.getResult()};
  while (!work.empty()) {
    Value v = work.pop_back_val();
    for (OpOperand &use : v.getUses()) {
      Operation *user = block->findAncestorOpInBlock(*use.getOwner());
      if (!user || isa<func::ReturnOp>(use.getOwner()))
        return false;
      if (nextStore && !user->isBeforeInBlock(nextStore))
        return false;
      // Views alias the buffer: their reads count too.
      if (isa<tensor::ExtractSliceOp, tensor::CollapseShapeOp,
              tensor::ExpandShapeOp, tensor::CastOp, tensor::ReshapeOp>(
              use.getOwner()))
        llvm::append_range(work, use.getOwner()->getResults());
    }
  }
  return true;
}

LogicalResult RuntimeLowering::lowerState(StateOp state) {
  RankedTensorType type = state.getTensorType();
  auto memrefType = MemRefType::get(type.getShape(), type.getElementType());
  b.setInsertionPoint(state);
  // 128-byte aligned, not 64: one-shot bufferization turns a tensor
  // constant into a `memref.get_global` of any global whose initial value
  // and alignment match, without checking that the global is constant. A
  // zero state at the constants' 64 would be read (and then written) as a
  // zero tensor constant.
  auto global = memref::GlobalOp::create(
      b, state.getLoc(), state.getSymName(), b.getStringAttr("public"),
      memrefType,
      DenseElementsAttr::get(type, b.getZeroAttr(type.getElementType())),
      /*constant=*/false, /*alignment=*/b.getI64IntegerAttr(kStateAlignment));
  FailureOr<int32_t> code = dtype(state, type.getElementType());
  if (failed(code))
    return failure();
  global->setAttr(SpmdDialect::getStateDtypeAttrName(),
                  b.getI32IntegerAttr(*code));
  ArrayRef<Operation *> uses = stateUses[state.getSymName()];
  // Decided for every load before any use is rewritten: the check scans the
  // other uses, which the loop below erases one by one.
  llvm::SmallPtrSet<Operation *, 4> inPlace;
  for (Operation *op : uses)
    if (auto load = dyn_cast<LoadOp>(op); load && canReadInPlace(load, uses))
      inPlace.insert(op);
  for (Operation *op : uses) {
    Location loc = op->getLoc();
    b.setInsertionPoint(op);
    Value buffer =
        memref::GetGlobalOp::create(b, loc, memrefType, state.getSymName());
    if (auto load = dyn_cast<LoadOp>(op)) {
      Value t;
      if (inPlace.contains(op)) {
        // Every read happens before the state is next written: read the
        // global itself (not writable, so nothing is done in place on it).
        t = bufferization::ToTensorOp::create(b, loc, type, buffer,
                                              /*restrict=*/true,
                                              /*writable=*/false);
      } else {
        // A copy: a later store must not change values still in use.
        Value copy = memref::AllocOp::create(b, loc, memrefType);
        memref::CopyOp::create(b, loc, buffer, copy);
        t = bufferization::ToTensorOp::create(b, loc, type, copy,
                                              /*restrict=*/true,
                                              /*writable=*/true);
      }
      load.replaceAllUsesWith(t);
    } else {
      // An identity-layout source makes the copy a memcpy (bufferization
      // copies first if the value's buffer is a strided view).
      auto store = cast<StoreOp>(op);
      Value value = bufferization::ToBufferOp::create(
          b, loc, memrefType, store.getValue(), /*read_only=*/true);
      memref::CopyOp::create(b, loc, value, buffer);
    }
    op->erase();
  }
  state.erase();
  return success();
}

/// `spmd_register_state()` registers every state's global by name with the
/// runtime (spmdStateRegister); every function that loads or stores state
/// calls it first, so the host finds the buffers by name after any call.
LogicalResult RuntimeLowering::registerStates(ArrayRef<StateOp> states) {
  if (states.empty())
    return success();
  Location loc = module.getLoc();
  auto ptrType = LLVM::LLVMPointerType::get(ctx);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToEnd(module.getBody());
  auto fn = func::FuncOp::create(b, loc, "spmd_register_state",
                                 b.getFunctionType({}, {}));
  Block *body = fn.addEntryBlock();
  b.setInsertionPointToStart(body);
  for (auto [i, constState] : llvm::enumerate(states)) {
    StateOp state = constState;
    // Each state's registration carries the declaration's location.
    Location loc = state.getLoc();
    RankedTensorType type = state.getTensorType();
    FailureOr<int32_t> code = dtype(state, type.getElementType());
    if (failed(code))
      return failure();
    // The name as a NUL-terminated string constant.
    std::string text = state.getSymName().str();
    text.push_back('\0');
    std::string symbol = "__spmd_state_name_" + std::to_string(i);
    {
      OpBuilder::InsertionGuard inner(b);
      b.setInsertionPoint(fn);
      LLVM::GlobalOp::create(
          b, loc, LLVM::LLVMArrayType::get(b.getI8Type(), text.size()),
          /*isConstant=*/true, LLVM::Linkage::Internal, symbol,
          b.getStringAttr(text));
    }
    Value name = LLVM::AddressOfOp::create(b, loc, ptrType, symbol);
    Value buffer = memref::GetGlobalOp::create(
        b, loc, MemRefType::get(type.getShape(), type.getElementType()),
        state.getSymName());
    // i1 is a byte in memory, as torch.bool.
    int64_t bytes = type.getNumElements() *
                    ((type.getElementType().getIntOrFloatBitWidth() + 7) / 8);
    call(RuntimeFunction::spmdStateRegister,
         {name, address(buffer, loc), i64(bytes, loc), i32(*code, loc)}, loc);
  }
  func::ReturnOp::create(b, loc);
  // Call it on entry of every function that touches state.
  for (auto other : module.getOps<func::FuncOp>()) {
    if (other == fn || other.isExternal())
      continue;
    bool usesState = false;
    other.walk([&](Operation *op) { usesState |= isa<LoadOp, StoreOp>(op); });
    if (!usesState)
      continue;
    b.setInsertionPointToStart(&other.getBody().front());
    func::CallOp::create(b, loc, fn, ValueRange{});
  }
  return success();
}

/// The address of a NUL-terminated copy of `text`, a constant global named
/// `symbol` (made once).
Value RuntimeLowering::stringConstant(StringRef text, StringRef symbol,
                                      Location loc) {
  return spmd::stringConstant(b, module, loc, text, symbol);
}

/// Every public function that communicates starts with
/// `spmdProgramCheck(hash, name)`: on its first call the ranks compare a hash
/// of the whole local program, so ranks that were given different programs
/// (another reduction, other shapes, other options) stop with an error
/// instead of hanging or diverging silently. The hash is of the module as
/// printed without locations, before lowering: the same source compiled the
/// same way hashes the same on every rank.
void RuntimeLowering::insertProgramChecks() {
  SmallVector<func::FuncOp> entries;
  for (auto fn : module.getOps<func::FuncOp>()) {
    if (fn.isExternal() || !fn.isPublic())
      continue;
    bool communicates = false;
    fn.walk([&](Operation *op) {
      communicates |= isa<CollectiveOpInterface, LocalSliceOp, AxisIndexOp>(op);
    });
    if (communicates)
      entries.push_back(fn);
  }
  if (entries.empty())
    return;
  std::string text;
  llvm::raw_string_ostream os(text);
  module->print(os, OpPrintingFlags().enableDebugInfo(/*enable=*/false));
  uint64_t hash = llvm::xxh3_64bits(text);
  for (func::FuncOp fn : entries) {
    Location loc = fn.getLoc();
    b.setInsertionPointToStart(&fn.getBody().front());
    Value name = stringConstant(
        fn.getSymName(), ("__spmd_program_name_" + fn.getSymName()).str(), loc);
    call(RuntimeFunction::spmdProgramCheck,
         {i64(static_cast<int64_t>(hash), loc), name}, loc);
  }
}

LogicalResult RuntimeLowering::run() {
  insertProgramChecks();
  SmallVector<Operation *> work;
  module.walk([&](Operation *op) {
    if (isa<CollectiveOpInterface, LocalSliceOp, AxisIndexOp>(op))
      work.push_back(op);
  });
  for (Operation *op : work) {
    if (auto collective = dyn_cast<CollectiveOpInterface>(op)) {
      if (failed(lowerCollective(collective)))
        return failure();
    } else if (auto slice = dyn_cast<LocalSliceOp>(op)) {
      if (failed(lowerLocalSlice(slice)))
        return failure();
    } else if (auto idx = dyn_cast<AxisIndexOp>(op)) {
      FailureOr<std::pair<int64_t, int64_t>> grp =
          group(op, idx.getMeshAttr(), idx.getAxes());
      if (failed(grp))
        return failure();
      b.setInsertionPoint(op);
      idx.replaceAllUsesWith(axisIndex(grp->first, grp->second, op->getLoc()));
      op->erase();
    }
  }
  // Waits after every start is lowered; then the starts have no users.
  SmallVector<WaitOp> waits;
  module.walk([&](WaitOp wait) { waits.push_back(wait); });
  for (WaitOp wait : waits)
    if (failed(lowerWait(wait)))
      return failure();
  for (Operation *op : llvm::reverse(started)) {
    if (!op->use_empty())
      return op->emitOpError("the CPU lowering needs every future to be "
                             "consumed by spmd.wait");
    op->erase();
  }
  SmallVector<StateOp> states(module.getOps<StateOp>());
  if (failed(registerStates(states)))
    return failure();
  // Every state's loads and stores, found in one walk (not one per state:
  // a program holds hundreds of states and a long step).
  module.walk([&](Operation *op) {
    if (auto load = dyn_cast<LoadOp>(op))
      stateUses[load.getState()].push_back(op);
    else if (auto store = dyn_cast<StoreOp>(op))
      stateUses[store.getState()].push_back(op);
  });
  for (StateOp state : states)
    if (failed(lowerState(state)))
      return failure();
  // Specs described the layout; the local program no longer needs them.
  for (auto fn : module.getOps<func::FuncOp>()) {
    for (unsigned i = 0; i < fn.getNumArguments(); ++i)
      fn.removeArgAttr(i, SpmdDialect::getSpecAttrName());
    for (unsigned i = 0; i < fn.getNumResults(); ++i)
      fn.removeResultAttr(i,
                          StringAttr::get(ctx, SpmdDialect::getSpecAttrName()));
  }
  WalkResult leftover = module.walk([&](Operation *op) {
    if (isa<AnnotateOp, RedistributeOp>(op)) {
      op->emitOpError("is a global-program op; run spmd-distribute before "
                      "convert-spmd-to-runtime");
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  if (leftover.wasInterrupted())
    return failure();
  for (auto mesh : llvm::make_early_inc_range(module.getOps<MeshOp>()))
    mesh.erase();
  return success();
}

struct ConvertSpmdToRuntimePass
    : public spmd::impl::ConvertSpmdToRuntimePassBase<
          ConvertSpmdToRuntimePass> {
  void runOnOperation() override {
    RuntimeLowering lowering(getOperation());
    if (failed(lowering.run()))
      signalPassFailure();
  }
};

} // namespace
