//===- KernelsToHost.cpp - outlined GPU kernels as host functions ---------===//
//
// The first half of the GPU emulator's compilation (spmd-lower-to-emulator):
// each outlined kernel is copied into a host function that loops over the grid
// and the block and runs the kernel body once per thread. Without barriers or
// shared memory the threads of a kernel are independent, so any order of them
// computes what the GPU computes. A kernel whose threads exchange values by
// warp shuffles at the top level of its body (spmd-gpu-row-kernels'
// butterflies) runs phase by phase: the body is cut at each shuffle, every
// thread of the block runs one phase before any runs the next, the values a
// later phase uses are kept per thread in arrays, and a shuffle reads its
// partner lane's operand from them. Kernels that need more (barriers, shared
// memory, shuffles inside loops or branches) are rejected. The host code
// (launches, copies, collectives) is the one the real lowering produces: only
// the kernels' compilation differs. Each gpu.module then becomes a gpu.binary
// whose "image" is the text `spmd-emulated-kernels:<module>`, which the
// emulated driver reads.
//
//===----------------------------------------------------------------------===//

#include "Passes.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::spmd::test {
#define GEN_PASS_DEF_SPMDGPUKERNELSTOHOSTPASS
#include "GpuEmulator/Passes.h.inc"
} // namespace mlir::spmd::test

using namespace mlir;

namespace {

/// Loop indices and sizes standing for the GPU's ids, by dimension x, y, z.
struct ThreadIds {
  Value block[3], thread[3], gridDim[3], blockDim[3];
};

/// Replaces the GPU id ops and gpu.return in the cloned body; fails on what
/// the emulator cannot run.
LogicalResult rewriteBody(Region &body, const ThreadIds &ids, StringRef name) {
  auto dimIndex = [](gpu::Dimension d) { return static_cast<unsigned>(d); };
  SmallVector<Operation *> ops;
  body.walk([&](Operation *op) { ops.push_back(op); });
  for (Operation *op : ops) {
    OpBuilder b(op);
    Value replacement;
    if (auto id = dyn_cast<gpu::ThreadIdOp>(op)) {
      replacement = ids.thread[dimIndex(id.getDimension())];
    } else if (auto id = dyn_cast<gpu::BlockIdOp>(op)) {
      replacement = ids.block[dimIndex(id.getDimension())];
    } else if (auto dim = dyn_cast<gpu::BlockDimOp>(op)) {
      replacement = ids.blockDim[dimIndex(dim.getDimension())];
    } else if (auto dim = dyn_cast<gpu::GridDimOp>(op)) {
      replacement = ids.gridDim[dimIndex(dim.getDimension())];
    } else if (auto id = dyn_cast<gpu::GlobalIdOp>(op)) {
      unsigned d = dimIndex(id.getDimension());
      Value scaled =
          arith::MulIOp::create(b, op->getLoc(), ids.block[d], ids.blockDim[d]);
      replacement =
          arith::AddIOp::create(b, op->getLoc(), scaled, ids.thread[d]);
    } else if (isa<gpu::ReturnOp>(op)) {
      scf::YieldOp::create(b, op->getLoc());
      op->erase();
      continue;
    } else if (op->getDialect() && op->getDialect()->getNamespace() ==
                                       gpu::GPUDialect::getDialectNamespace()) {
      return op->emitError("spmd-gpu-kernels-to-host: '")
             << op->getName() << "' in kernel " << name
             << " is not supported by the GPU emulator (kernels must not "
                "synchronize or communicate between threads)";
    } else if (isa<CallOpInterface>(op)) {
      return op->emitError("spmd-gpu-kernels-to-host: kernel ")
             << name << " calls a function; not supported by the emulator";
    } else {
      continue;
    }
    op->getResult(0).replaceAllUsesWith(replacement);
    op->erase();
  }
  return success();
}

/// The kernel body's values a phase uses that an earlier phase defined,
/// in a stable order.
SmallVector<Value> liveIns(ArrayRef<Operation *> phase,
                           const DenseMap<Operation *, unsigned> &phaseOf,
                           unsigned index) {
  llvm::SetVector<Value> values;
  for (Operation *op : phase)
    op->walk([&](Operation *inner) {
      for (Value v : inner->getOperands()) {
        Operation *def = v.getDefiningOp();
        auto it = def ? phaseOf.find(def) : phaseOf.end();
        if (it != phaseOf.end() && it->second < index)
          values.insert(v);
      }
    });
  return values.takeVector();
}

bool isConstant(Value v) {
  Operation *def = v.getDefiningOp();
  return def && def->hasTrait<OpTrait::ConstantLike>();
}

/// The body of a kernel with top-level shuffles, phase by phase (see the
/// file comment), into `b` inside the block loops; the per-thread arrays
/// are allocated at `entry` (once per launch).
LogicalResult emitPhases(OpBuilder &b, OpBuilder &entry, Location loc,
                         Block &body, ThreadIds ids, StringRef name) {
  // Phase k: the ops after shuffle k - 1 (itself first) up to shuffle k.
  SmallVector<SmallVector<Operation *>> phases(1);
  DenseMap<Operation *, unsigned> phaseOf;
  for (Operation &op : body.without_terminator()) {
    if (isa<gpu::ShuffleOp>(op))
      phases.emplace_back();
    phases.back().push_back(&op);
    phaseOf[&op] = phases.size() - 1;
  }
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value threads = arith::MulIOp::create(
      entry, loc, ids.blockDim[0],
      arith::MulIOp::create(entry, loc, ids.blockDim[1], ids.blockDim[2]));
  // One array per value used after its phase (constants are cloned).
  SmallVector<SmallVector<Value>> ins(phases.size());
  llvm::SetVector<Value> kept;
  for (unsigned k = 0; k < phases.size(); ++k) {
    ins[k] = liveIns(phases[k], phaseOf, k);
    for (Value v : ins[k])
      if (!isConstant(v))
        kept.insert(v);
  }
  DenseMap<Value, Value> spill;
  for (Value v : kept) {
    Type type = v.getType();
    if (!type.isIntOrIndexOrFloat())
      return emitError(v.getLoc(), "spmd-gpu-kernels-to-host: kernel ")
             << name << " keeps a value of type " << type
             << " across a shuffle; not supported by the GPU emulator";
    spill[v] = memref::AllocaOp::create(
        entry, loc, MemRefType::get({ShapedType::kDynamic}, type),
        ValueRange{threads});
  }
  for (unsigned k = 0; k < phases.size(); ++k) {
    OpBuilder::InsertionGuard guard(b);
    ThreadIds phaseIds = ids;
    for (int d = 2; d >= 0; --d) {
      auto loop = scf::ForOp::create(b, loc, zero, ids.blockDim[d], one);
      b.setInsertionPointToStart(loop.getBody());
      phaseIds.thread[d] = loop.getInductionVar();
    }
    Value linear = arith::AddIOp::create(
        b, loc, phaseIds.thread[0],
        arith::MulIOp::create(
            b, loc, ids.blockDim[0],
            arith::AddIOp::create(b, loc, phaseIds.thread[1],
                                  arith::MulIOp::create(b, loc, ids.blockDim[1],
                                                        phaseIds.thread[2]))));
    auto region = scf::ExecuteRegionOp::create(b, loc, TypeRange{});
    b.createBlock(&region.getRegion());
    IRMapping map;
    for (Value v : ins[k])
      map.map(
          v,
          isConstant(v)
              ? b.clone(*v.getDefiningOp())->getResult(0)
              : memref::LoadOp::create(b, loc, spill[v], linear).getResult());
    auto first = phases[k].begin();
    if (k > 0) {
      // The shuffle: the partner lane's operand as it was at the shuffle.
      auto shuffle = cast<gpu::ShuffleOp>(phases[k].front());
      ++first;
      Value operand = shuffle.getValue();
      Value own = map.lookupOrDefault(operand);
      auto asIndex = [&](Value v) -> Value {
        return arith::IndexCastOp::create(b, loc, b.getIndexType(),
                                          map.lookupOrDefault(v));
      };
      Value warp = arith::ConstantIndexOp::create(b, loc, 32);
      Value lane = arith::RemUIOp::create(b, loc, linear, warp);
      Value base = arith::SubIOp::create(b, loc, linear, lane);
      Value offset = asIndex(shuffle.getOffset());
      Value width = asIndex(shuffle.getWidth());
      Value partner;
      switch (shuffle.getMode()) {
      case gpu::ShuffleMode::XOR:
        partner = arith::XOrIOp::create(b, loc, lane, offset);
        break;
      case gpu::ShuffleMode::IDX:
        partner = offset;
        break;
      case gpu::ShuffleMode::DOWN:
        partner = arith::AddIOp::create(b, loc, lane, offset);
        break;
      case gpu::ShuffleMode::UP:
        partner = arith::SubIOp::create(b, loc, lane, offset);
        break;
      }
      // In range: 0 <= partner < width, and a thread of the block.
      Value source = arith::AddIOp::create(b, loc, base, partner);
      auto cmp = [&](arith::CmpIPredicate p, Value x, Value y) -> Value {
        return arith::CmpIOp::create(b, loc, p, x, y);
      };
      Value valid = arith::AndIOp::create(
          b, loc,
          arith::AndIOp::create(b, loc,
                                cmp(arith::CmpIPredicate::sge, partner, zero),
                                cmp(arith::CmpIPredicate::slt, partner, width)),
          cmp(arith::CmpIPredicate::slt, source, threads));
      Value value = own;
      if (spill.count(operand)) {
        auto pick = scf::IfOp::create(b, loc, TypeRange{operand.getType()},
                                      valid, /*withElse=*/true);
        OpBuilder tb = pick.getThenBodyBuilder();
        scf::YieldOp::create(
            tb, loc,
            memref::LoadOp::create(tb, loc, spill[operand], source)
                .getResult());
        OpBuilder eb = pick.getElseBodyBuilder();
        scf::YieldOp::create(eb, loc, own);
        value = pick.getResult(0);
      }
      map.map(shuffle.getShuffleResult(), value);
      map.map(shuffle.getValid(), valid);
    }
    for (auto it = first; it != phases[k].end(); ++it)
      b.clone(**it, map);
    for (Value v : kept)
      if (phaseOf.lookup(v.getDefiningOp()) == k)
        memref::StoreOp::create(b, loc, map.lookup(v), spill[v], linear);
    scf::YieldOp::create(b, loc);
    if (failed(rewriteBody(region.getRegion(), phaseIds, name)))
      return failure();
  }
  return success();
}

/// Makes `__spmd_emu_impl_M__F` at the end of the top module.
LogicalResult emulateKernel(ModuleOp top, gpu::GPUModuleOp module,
                            gpu::GPUFuncOp kernel) {
  std::string name =
      ("__spmd_emu_impl_" + module.getName() + "__" + kernel.getName()).str();
  std::string shown = ("@" + module.getName() + "::@" + kernel.getName()).str();
  if (!kernel.getWorkgroupAttributions().empty() ||
      !kernel.getPrivateAttributions().empty())
    return kernel.emitError("spmd-gpu-kernels-to-host: kernel ")
           << shown << " uses workgroup or private memory; not supported by "
           << "the GPU emulator";
  Location loc = kernel.getLoc();
  MLIRContext *ctx = top.getContext();
  // 16-bit float scalars travel as their bits (i16): passing bf16 by value
  // makes LLVM's x86 ABI code call __truncsfbf2, which libgcc before GCC 13
  // lacks. The kernel body sees them bitcast back.
  SmallVector<Type> inputs;
  for (Type type : kernel.getArgumentTypes())
    inputs.push_back(type.isBF16() || type.isF16() ? IntegerType::get(ctx, 16)
                                                   : type);
  IndexType index = IndexType::get(ctx);
  inputs.append(6, index);
  OpBuilder b = OpBuilder::atBlockEnd(top.getBody());
  auto func =
      func::FuncOp::create(b, loc, name, FunctionType::get(ctx, inputs, {}));
  Block *entry = func.addEntryBlock();
  b.setInsertionPointToStart(entry);
  unsigned numKernelArgs = kernel.getNumArguments();
  ThreadIds ids;
  for (unsigned d = 0; d < 3; ++d) {
    ids.gridDim[d] = entry->getArgument(numKernelArgs + d);
    ids.blockDim[d] = entry->getArgument(numKernelArgs + 3 + d);
  }
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  // Blocks z, y, x, then threads z, y, x.
  auto loop = [&](Value upper) {
    auto forOp = scf::ForOp::create(b, loc, zero, upper, one);
    b.setInsertionPointToStart(forOp.getBody());
    return forOp.getInductionVar();
  };
  for (int d = 2; d >= 0; --d)
    ids.block[d] = loop(ids.gridDim[d]);
  IRMapping mapping;
  OpBuilder atEntry = OpBuilder::atBlockBegin(entry);
  for (unsigned i = 0; i < numKernelArgs; ++i) {
    Value arg = entry->getArgument(i);
    Type type = kernel.getArgument(i).getType();
    if (arg.getType() != type)
      arg = arith::BitcastOp::create(atEntry, loc, type, arg);
    mapping.map(kernel.getArgument(i), arg);
  }
  // Shuffles: phase by phase, on a copy of the body with the arguments
  // mapped.
  bool shuffles = false;
  kernel.walk([&](gpu::ShuffleOp) { shuffles = true; });
  if (shuffles) {
    Region &body = kernel.getBody();
    bool topLevel = body.hasOneBlock();
    kernel.walk([&](gpu::ShuffleOp op) {
      topLevel &= op->getBlock() == &body.front();
    });
    if (!topLevel)
      return kernel.emitError("spmd-gpu-kernels-to-host: kernel ")
             << shown << " shuffles inside a loop or branch; not supported "
             << "by the GPU emulator";
    auto scratch = scf::ExecuteRegionOp::create(b, loc, TypeRange{});
    body.cloneInto(&scratch.getRegion(), mapping);
    LogicalResult result =
        emitPhases(b, atEntry, loc, scratch.getRegion().front(), ids, shown);
    scratch->erase();
    b.setInsertionPointToEnd(entry);
    func::ReturnOp::create(b, loc);
    return result;
  }
  for (int d = 2; d >= 0; --d)
    ids.thread[d] = loop(ids.blockDim[d]);
  auto region = scf::ExecuteRegionOp::create(b, loc, TypeRange{});
  kernel.getBody().cloneInto(&region.getRegion(), mapping);
  b.setInsertionPointToEnd(entry);
  func::ReturnOp::create(b, loc);
  return rewriteBody(region.getRegion(), ids, shown);
}

struct SpmdGpuKernelsToHostPass
    : public spmd::test::impl::SpmdGpuKernelsToHostPassBase<
          SpmdGpuKernelsToHostPass> {
  void runOnOperation() override {
    ModuleOp top = getOperation();
    SmallVector<std::pair<gpu::GPUModuleOp, gpu::GPUFuncOp>> kernels;
    for (auto module : top.getOps<gpu::GPUModuleOp>())
      for (auto func : module.getOps<gpu::GPUFuncOp>())
        if (func.isKernel())
          kernels.push_back({module, func});
    for (auto [module, kernel] : kernels)
      if (failed(emulateKernel(top, module, kernel)))
        return signalPassFailure();
    // The launches refer to the module by name: a binary of that name whose
    // "image" the emulated driver reads.
    SmallVector<gpu::GPUModuleOp> modules(top.getOps<gpu::GPUModuleOp>());
    for (gpu::GPUModuleOp module : modules) {
      MLIRContext *ctx = module.getContext();
      Attribute target = NVVM::NVVMTargetAttr::get(ctx);
      if (ArrayAttr targets = module.getTargetsAttr();
          targets && !targets.empty())
        target = targets[0];
      // NUL-terminated: the driver's cuModuleLoadData gets no size.
      std::string image = ("spmd-emulated-kernels:" + module.getName()).str();
      image.push_back('\0');
      auto object =
          gpu::ObjectAttr::get(ctx, target, gpu::CompilationTarget::Binary,
                               StringAttr::get(ctx, image), nullptr, nullptr);
      OpBuilder b(module);
      gpu::BinaryOp::create(b, module.getLoc(), module.getName(),
                            module.getOffloadingHandlerAttr(),
                            ArrayRef<Attribute>{object});
      module.erase();
    }
  }
};

} // namespace
