//===- AutoShard.cpp - replicated or sharded, per parameter ---------------===//
//
// Automatic data parallelism on a global program. Every parameter an
// optimizer op updates is either replicated (its gradient all-reduced) or
// sharded on dimension 0 along one mesh axis (gathered where used, its
// gradient reduce-scattered, its update on a chunk). Data parallelism
// leaves each rank's FLOPs alone, so the choice is between communication,
// the update's memory traffic and memory per rank: the pass models those
// from measured figures (spmd.Auto's calibration), takes each parameter's
// faster choice, then shards what saves the most memory per second added
// until the step fits the limit. The result is written as
// DataParallel("fully_shard") writes it, so spmd-distribute does the rest.
//
//===----------------------------------------------------------------------===//

#include "Spmd/Dialect/Spmd/IR/SpmdOps.h"
#include "Spmd/Dialect/Spmd/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cmath>
#include <optional>

namespace mlir::spmd {
#define GEN_PASS_DEF_SPMDAUTOSHARDPASS
#include "Spmd/Dialect/Spmd/Transforms/Passes.h.inc"
} // namespace mlir::spmd

using namespace mlir;
using namespace mlir::spmd;

namespace {

/// A collective's cost: latency plus bytes per rank over bandwidth.
struct LinkFigures {
  double latencyUs = 100.0;
  double gbps = 2.0;

  double seconds(double bytes) const {
    return latencyUs * 1e-6 + bytes / (gbps * 1e9);
  }
};

/// The machine the plan is modeled for (spmd.Auto's calibration keys).
struct Figures {
  double memoryGbps = 10.0;
  LinkFigures allReduce, allGather, reduceScatter;
};

/// Reads `path` (a JSON object of spmd.Auto's calibration keys) into
/// `figures`; reports what is wrong at `at`.
LogicalResult readCalibration(StringRef path, Operation *at, Figures &figures) {
  auto fail = [&](const Twine &why) {
    return at->emitError() << "spmd-auto-shard: calibration '" << path
                           << "': " << why;
  };
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return fail(buffer.getError().message());
  auto parsed = llvm::json::parse((*buffer)->getBuffer());
  if (!parsed)
    return fail(llvm::toString(parsed.takeError()));
  const llvm::json::Object *object = parsed->getAsObject();
  if (!object)
    return fail("not a JSON object");
  auto number = [&](StringRef key, bool rate, double &into) -> LogicalResult {
    std::optional<double> v = object->getNumber(key);
    if (!v)
      return fail("'" + key + "' is missing or not a number");
    if (!std::isfinite(*v) || (rate ? *v <= 0 : *v < 0))
      return fail("'" + key + "' must be a finite number " +
                  (rate ? "above 0" : "not below 0"));
    into = *v;
    return success();
  };
  double gemm = 0;
  std::pair<StringRef, LinkFigures *> links[] = {
      {"all_reduce", &figures.allReduce},
      {"all_gather", &figures.allGather},
      {"reduce_scatter", &figures.reduceScatter}};
  if (failed(number("gemm_gflops", /*rate=*/true, gemm)) ||
      failed(number("memory_gbps", /*rate=*/true, figures.memoryGbps)))
    return failure();
  for (auto [kind, link] : links)
    if (failed(number((kind + "_latency_us").str(), /*rate=*/false,
                      link->latencyUs)) ||
        failed(number((kind + "_gbps").str(), /*rate=*/true, link->gbps)))
      return failure();
  return success();
}

/// One parameter the pass may shard, with what it decides over.
struct Parameter {
  StateOp state;
  /// Its optimizer states of its type and its gradient state.
  SmallVector<StateOp> companions;
  int64_t bytes = 0; // the whole parameter
  int64_t chunk = 0; // the largest rank's chunk of it
  int64_t companionBytes = 0;
  double replicatedSeconds = 0, shardedSeconds = 0;
  bool sharded = false;

  /// Its state, its companions and its gradient in the step: whole until
  /// the update when replicated, a chunk once reduce-scattered.
  int64_t replicatedMemory() const { return 2 * bytes + companionBytes; }
  /// Without the gathered copy (counted for the plan as a whole).
  int64_t shardedMemory() const {
    if (!bytes) // an empty parameter
      return 0;
    return 2 * chunk +
           static_cast<int64_t>(
               std::ceil(static_cast<double>(companionBytes) * chunk / bytes));
  }
};

int64_t bytesOf(RankedTensorType type) {
  int64_t bits = type.getElementType().getIntOrFloatBitWidth();
  return type.getNumElements() * std::max<int64_t>(bits / 8, 1);
}

/// The state `value` loads, if it is an `spmd.load`.
StateOp loadedState(Value value) {
  auto load = value.getDefiningOp<LoadOp>();
  if (!load)
    return {};
  return SymbolTable::lookupNearestSymbolFrom<StateOp>(load,
                                                       load.getStateAttr());
}

/// `bytes` for a reader: in bytes below 1 MiB, else in MiB.
std::string mib(int64_t bytes) {
  if (bytes < (1 << 20))
    return std::to_string(bytes) + " B";
  return llvm::formatv("{0:F1} MiB", static_cast<double>(bytes) / (1 << 20))
      .str();
}

struct SpmdAutoShardPass
    : public spmd::impl::SpmdAutoShardPassBase<SpmdAutoShardPass> {
  using SpmdAutoShardPassBase::SpmdAutoShardPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MeshOp mesh = findMesh(module);
    if (!mesh)
      return signalPassFailure();
    ArrayRef<int64_t> shape = mesh.getShape();
    if (axis < 0 || axis >= static_cast<int64_t>(shape.size())) {
      mesh.emitError() << "spmd-auto-shard: axis " << static_cast<int64_t>(axis)
                       << " of a mesh of " << shape.size() << " axes";
      return signalPassFailure();
    }
    Figures figures;
    // Diagnostics about the plan go to the mesh (a module's location
    // prints the whole module).
    if (!calibration.empty() &&
        failed(readCalibration(calibration, mesh, figures)))
      return signalPassFailure();
    if (memoryLimit < 0 || reserve < 0) {
      mesh.emitError() << "spmd-auto-shard: memory-limit and reserve are "
                          "bytes, not below 0";
      return signalPassFailure();
    }
    int64_t ranks = shape[axis];
    SmallVector<Parameter> params = collect(module);
    for (Parameter &p : params)
      model(p, ranks, figures);
    if (failed(choose(mesh, params)))
      return signalPassFailure();
    auto meshRef = FlatSymbolRefAttr::get(mesh.getSymNameAttr());
    for (Parameter &p : params)
      if (p.sharded)
        apply(module, p, meshRef, shape.size());
    if (report)
      describe(module, mesh, params);
  }

  MeshOp findMesh(ModuleOp module) {
    SmallVector<MeshOp> meshes(module.getOps<MeshOp>());
    if (!meshName.empty()) {
      for (MeshOp m : meshes)
        if (m.getSymName() == meshName)
          return m;
      Operation *at = meshes.empty() ? module.getOperation() : meshes[0];
      auto diag = at->emitError() << "spmd-auto-shard: no mesh @" << meshName;
      for (auto [i, m] : llvm::enumerate(meshes))
        diag << (i ? ", @" : "; the module's: @") << m.getSymName();
      return {};
    }
    if (meshes.size() != 1) {
      Operation *at = meshes.empty() ? module.getOperation() : meshes[1];
      at->emitError() << "spmd-auto-shard: the module has " << meshes.size()
                      << " meshes; name the one to shard over (mesh=)";
      return {};
    }
    return meshes.front();
  }

  /// The parameters of every optimizer op, with their companions.
  SmallVector<Parameter> collect(ModuleOp module) {
    SmallVector<Parameter> params;
    llvm::SmallDenseSet<Operation *> seen;
    auto add = [&](Value param, ArrayRef<Value> companions) {
      StateOp state = loadedState(param);
      auto type = dyn_cast<RankedTensorType>(param.getType());
      if (!state || state.getRole() != StateRole::Param || !type ||
          type.getRank() == 0 || state.getSpec() ||
          !type.getElementType().isIntOrFloat() || !seen.insert(state).second)
        return;
      Parameter p{state};
      for (Value c : companions)
        if (StateOp s = loadedState(c); s && c.getType() == type)
          p.companions.push_back(s);
      // The bridge keeps a parameter's `.grad` between calls as a state of
      // its name (StateOp's role `gradient`).
      auto grad = SymbolTable::lookupNearestSymbolFrom<StateOp>(
          module,
          StringAttr::get(module.getContext(), state.getSymName() + ".grad"));
      if (grad && grad.getRole() == StateRole::Gradient &&
          grad.getType() == type)
        p.companions.push_back(grad);
      if (llvm::any_of(p.companions, [](StateOp s) { return s.getSpec(); }))
        return;
      p.bytes = bytesOf(type);
      for (StateOp s : p.companions)
        p.companionBytes += bytesOf(s.getTensorType());
      params.push_back(p);
    };
    module.walk([&](Operation *op) {
      if (auto adam = dyn_cast<AdamOp>(op)) {
        for (auto [i, param] : llvm::enumerate(adam.getParams())) {
          SmallVector<Value> companions{adam.getExpAvgs()[i],
                                        adam.getExpAvgSqs()[i]};
          if (!adam.getMaxExpAvgSqs().empty())
            companions.push_back(adam.getMaxExpAvgSqs()[i]);
          add(param, companions);
        }
      } else if (auto sgd = dyn_cast<SGDOp>(op)) {
        for (auto [i, param] : llvm::enumerate(sgd.getParams())) {
          SmallVector<Value> companions;
          if (!sgd.getMomentumBuffers().empty())
            companions.push_back(sgd.getMomentumBuffers()[i]);
          add(param, companions);
        }
      }
    });
    return params;
  }

  /// Each choice's modeled seconds (communication and update).
  void model(Parameter &p, int64_t ranks, const Figures &f) {
    RankedTensorType type = p.state.getTensorType();
    int64_t rows = type.getDimSize(0);
    int64_t rowBytes = rows ? p.bytes / rows : 0;
    p.chunk = (rows + ranks - 1) / ranks * rowBytes;
    double bandwidth = f.memoryGbps * 1e9;
    // The update reads the parameter, its gradient and its companions and
    // writes most of them: about twice their bytes.
    double update = 2.0 * (2.0 * p.bytes + p.companionBytes) / bandwidth;
    double share = p.bytes ? static_cast<double>(p.chunk) / p.bytes : 1.0;
    p.replicatedSeconds = f.allReduce.seconds(p.bytes) + update;
    p.shardedSeconds = (reshardAfterForward ? 2 : 1) *
                           f.allGather.seconds(static_cast<double>(p.chunk)) +
                       f.reduceScatter.seconds(p.bytes) + update * share;
  }

  /// The gathered whole copies a plan holds at once.
  int64_t gatheredBytes(ArrayRef<Parameter> params) const {
    int64_t sum = 0, largest = 0;
    for (const Parameter &p : params)
      if (p.sharded) {
        sum += p.bytes;
        largest = std::max(largest, p.bytes);
      }
    return reshardAfterForward ? std::min(sum, 2 * largest) : sum;
  }

  int64_t memory(ArrayRef<Parameter> params) const {
    int64_t total = reserve + gatheredBytes(params);
    for (const Parameter &p : params)
      total += p.sharded ? p.shardedMemory() : p.replicatedMemory();
    return total;
  }

  LogicalResult choose(MeshOp mesh, MutableArrayRef<Parameter> params) {
    for (Parameter &p : params)
      p.sharded = p.shardedSeconds < p.replicatedSeconds;
    if (!memoryLimit)
      return success();
    while (memory(params) > memoryLimit) {
      // The replicated parameter that saves the most bytes per second
      // added (the plan's bytes, gathered copies included).
      Parameter *best = nullptr;
      double bestRatio = 0;
      int64_t before = memory(params);
      for (Parameter &p : params) {
        if (p.sharded)
          continue;
        p.sharded = true;
        int64_t saved = before - memory(params);
        p.sharded = false;
        if (saved <= 0)
          continue;
        double added = std::max(p.shardedSeconds - p.replicatedSeconds, 1e-12);
        double ratio = static_cast<double>(saved) / added;
        if (!best || ratio > bestRatio) {
          best = &p;
          bestRatio = ratio;
        }
      }
      if (!best) {
        return mesh.emitError()
               << "spmd-auto-shard: the step's state does not fit the memory "
                  "limit of "
               << static_cast<int64_t>(memoryLimit)
               << " bytes per rank: the plan needs " << before << " ("
               << mib(before) << ", reserve " << static_cast<int64_t>(reserve)
               << " included) with every parameter that saves memory "
                  "sharded; more ranks on the axis or a smaller model would "
                  "fit";
      }
      best->sharded = true;
    }
    return success();
  }

  void apply(ModuleOp module, Parameter &p, FlatSymbolRefAttr meshRef,
             size_t axes) {
    MLIRContext *ctx = module.getContext();
    SmallVector<PlacementAttr> placements(axes, ReplicateAttr::get(ctx));
    auto whole = SpecAttr::get(ctx, meshRef, placements);
    placements[axis] = ShardAttr::get(ctx, 0);
    auto sharded = SpecAttr::get(ctx, meshRef, placements);
    p.state.setSpecAttr(sharded);
    for (StateOp s : p.companions)
      s.setSpecAttr(sharded);
    // Every use of the parameter but the optimizer's update reads it whole.
    SmallVector<LoadOp> loads;
    module.walk([&](LoadOp load) {
      if (load.getState() == p.state.getSymName())
        loads.push_back(load);
    });
    OpBuilder b(ctx);
    for (LoadOp load : loads) {
      // The optimizer's `params` operands (the first operand segment).
      auto updates = [](OpOperand &use) {
        Operation *owner = use.getOwner();
        std::pair<unsigned, unsigned> params;
        if (auto adam = dyn_cast<AdamOp>(owner))
          params = adam.getODSOperandIndexAndLength(0);
        else if (auto sgd = dyn_cast<SGDOp>(owner))
          params = sgd.getODSOperandIndexAndLength(0);
        else
          return false;
        unsigned n = use.getOperandNumber();
        return params.first <= n && n < params.first + params.second;
      };
      if (llvm::all_of(load->getUses(), updates))
        continue;
      b.setInsertionPointAfter(load);
      auto gathered = RedistributeOp::create(b, load.getLoc(), load, whole);
      load.getResult().replaceUsesWithIf(
          gathered.getResult(), [&](OpOperand &use) {
            return use.getOwner() != gathered && !updates(use);
          });
    }
  }

  void describe(ModuleOp module, MeshOp mesh,
                MutableArrayRef<Parameter> params) const {
    double seconds = 0, replicated = 0;
    int64_t count = 0, shardedBytes = 0, allBytes = 0;
    for (Parameter &p : params) {
      seconds += p.sharded ? p.shardedSeconds : p.replicatedSeconds;
      replicated += p.replicatedSeconds;
      count += p.sharded;
      shardedBytes += p.sharded ? p.bytes : 0;
      allBytes += p.bytes;
      p.state.emitRemark() << (p.sharded ? "sharded" : "replicated") << ": "
                           << llvm::formatv(
                                  "replicated {0:F3} ms, sharded {1:F3} ms; ",
                                  p.replicatedSeconds * 1e3,
                                  p.shardedSeconds * 1e3)
                           << "memory " << p.replicatedMemory() << " -> "
                           << p.shardedMemory() << " bytes per rank (+ "
                           << p.bytes << " gathered)";
    }
    SmallVector<Parameter> allReplicated(params);
    for (Parameter &p : allReplicated)
      p.sharded = false;
    mesh.emitRemark() << "spmd-auto-shard: " << count << " of " << params.size()
                      << " parameters sharded along @" << mesh.getSymName()
                      << " axis " << static_cast<int64_t>(axis) << " ("
                      << mib(shardedBytes) << " of " << mib(allBytes)
                      << "); modeled communication and update "
                      << llvm::formatv("{0:F3} ms (all replicated {1:F3} ms)",
                                       seconds * 1e3, replicated * 1e3)
                      << "; state and gathered copies " << mib(memory(params))
                      << " per rank (all replicated "
                      << mib(memory(allReplicated))
                      << (memoryLimit ? ", limit " + mib(memoryLimit)
                                      : std::string())
                      << ")";
  }
};

} // namespace
