//===- ScheduleForMemory.cpp - free large tensors before allocating more --===//
//
// spmd-schedule-for-memory: on tensors, right before bufferization, an op
// that is the last use of a large tensor (through any view of it) and whose
// results are smaller than what it frees moves up, with the ops only it uses
// (its init tensors), to right after the last op it depends on or that still
// uses that tensor. The ops it passes then run with that tensor freed: the
// step's transient peak can only go down (a backward's `dX = dY . W` runs
// before `dW = dY^T . X` when it is W's last use, so the gathered W is gone
// before the whole dW exists).
//
//===----------------------------------------------------------------------===//

#include "Spmd/Codegen/Passes.h"
#include "Spmd/Codegen/TensorBuffers.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/RegionUtils.h"

#include "llvm/ADT/SetVector.h"

namespace mlir::spmd {
#define GEN_PASS_DEF_SPMDSCHEDULEFORMEMORYPASS
#include "Spmd/Codegen/Passes.h.inc"
} // namespace mlir::spmd

using namespace mlir;
using spmd::isTensorView;
using spmd::ownsBuffer;

namespace {

/// How far up one op may move (ops passed), to bound the pass's time.
constexpr unsigned kMaxDistance = 512;

/// The operands `op` only reads: a destination-style op's inputs (its
/// inits become its results' buffers), every operand of another op.
SmallVector<Value> readOnlyOperands(Operation *op) {
  if (auto dps = dyn_cast<DestinationStyleOpInterface>(op)) {
    SmallVector<Value> inputs;
    for (OpOperand *input : dps.getDpsInputOperands())
      inputs.push_back(input->get());
    return inputs;
  }
  return SmallVector<Value>(op->getOperands());
}

class Scheduler {
public:
  Scheduler(Block &block, int64_t minBytes)
      : block(block), minBytes(std::max<int64_t>(1, minBytes)) {
    renumber();
  }

  void run() {
    for (Operation *op : llvm::to_vector(llvm::make_pointer_range(block)))
      hoist(op);
  }

private:
  /// The op of the block that is or holds `op`.
  Operation *inBlock(Operation *op) { return block.findAncestorOpInBlock(*op); }

  /// The ops of the block that use `root` or a view of it.
  SmallVector<Operation *> usersOf(Value root) {
    SmallVector<Operation *> users;
    SmallVector<Value> work{root};
    while (!work.empty()) {
      Value value = work.pop_back_val();
      for (Operation *user : value.getUsers()) {
        Operation *at = inBlock(user);
        if (!at)
          continue;
        if (isTensorView(at) && at == user)
          llvm::append_range(work, at->getResults());
        else
          users.push_back(at);
      }
    }
    return users;
  }

  /// Values `op` reads: operands and values its regions use from above.
  SmallVector<Value> readsOf(Operation *op) {
    SmallVector<Value> reads(op->getOperands());
    visitUsedValuesDefinedAbove(
        op->getRegions(), [&](OpOperand *use) { reads.push_back(use->get()); });
    return reads;
  }

  void hoist(Operation *op);

  /// Positions in block order, far enough apart to insert between.
  void renumber() {
    double at = 0;
    for (Operation &op : block)
      position[&op] = at += 1;
  }

  Block &block;
  /// What a move must save at least (small moves would only reorder the
  /// ops that the GPU lowering joins into one kernel).
  int64_t minBytes;
  DenseMap<Operation *, double> position;
};

void Scheduler::hoist(Operation *op) {
  if (op->getNumResults() == 0 || op->getNumRegions() > 1 || isTensorView(op) ||
      !isMemoryEffectFree(op) || op->hasTrait<OpTrait::IsTerminator>())
    return;
  // What its move may free early: roots of its operands it uses last, each
  // with the other ops that use it (passing one of them keeps it alive).
  DenseMap<Operation *, SmallVector<Value, 1>> rootsUsedBy;
  DenseMap<Value, int64_t> freedBy;
  int64_t freed = 0;
  for (Value operand : readOnlyOperands(op)) {
    Value root = spmd::viewedTensor(operand);
    int64_t bytes = spmd::staticTensorBytes(root.getType());
    if (freedBy.contains(root) || bytes == 0 || !ownsBuffer(root))
      continue;
    SmallVector<Operation *> users = usersOf(root);
    bool last = llvm::all_of(users, [&](Operation *user) {
      return user == op || position[user] < position[op];
    });
    if (!last)
      continue;
    freedBy[root] = bytes;
    freed += bytes;
    for (Operation *user : users)
      if (user != op)
        rootsUsedBy[user].push_back(root);
  }
  int64_t produced = 0;
  for (Value result : op->getResults())
    produced += spmd::staticTensorBytes(result.getType());
  if (freed - produced < minBytes)
    return;
  // The op and the ops only it (transitively) uses: its init tensors.
  llvm::SetVector<Operation *> group;
  group.insert(op);
  for (unsigned i = 0; i < group.size(); ++i)
    for (Value read : readsOf(group[i])) {
      Operation *def = read.getDefiningOp();
      if (!def || def->getBlock() != &block || group.contains(def) ||
          !isMemoryEffectFree(def) || def->getNumRegions() > 1 ||
          !llvm::all_of(def->getUsers(), [&](Operation *user) {
            Operation *at = inBlock(user);
            return at && group.contains(at);
          }))
        continue;
      group.insert(def);
    }
  // Up to the last op the group needs or that must keep its place
  // (collectives, calls, anything with effects), and no further than it
  // still frees more than it produces.
  llvm::SmallPtrSet<Operation *, 16> blockers;
  for (Operation *member : group)
    for (Value read : readsOf(member))
      if (Operation *def = read.getDefiningOp())
        if (Operation *at = inBlock(def); at && !group.contains(at))
          blockers.insert(at);
  Operation *first = nullptr;
  SmallVector<Operation *> members{op};
  unsigned passed = 0;
  for (Operation *prev = op->getPrevNode(); prev; prev = prev->getPrevNode()) {
    if (group.contains(prev)) {
      members.push_back(prev);
      continue;
    }
    if (blockers.contains(prev) || !isMemoryEffectFree(prev) ||
        ++passed > kMaxDistance)
      break;
    if (auto it = rootsUsedBy.find(prev); it != rootsUsedBy.end()) {
      for (Value root : it->second)
        freed -= std::exchange(freedBy[root], 0);
      if (freed - produced < minBytes)
        break;
    }
    first = prev;
  }
  if (!first)
    return;
  // Move the members below `first`, in their order, before it (those above
  // it stay where they are).
  llvm::erase_if(members, [&](Operation *member) {
    return position[member] < position[first];
  });
  std::reverse(members.begin(), members.end());
  Operation *prev = first->getPrevNode();
  double before = prev ? position[prev] : 0;
  double step = (position[first] - before) / (members.size() + 1);
  for (auto [i, member] : llvm::enumerate(members)) {
    member->moveBefore(first);
    position[member] = before + step * (i + 1);
  }
  if (step < 1e-6)
    renumber();
}

struct SpmdScheduleForMemoryPass
    : spmd::impl::SpmdScheduleForMemoryPassBase<SpmdScheduleForMemoryPass> {
  using Base::Base;
  void runOnOperation() override {
    for (Block &block : getOperation().getBody())
      Scheduler(block, minBytes).run();
  }
};

} // namespace
