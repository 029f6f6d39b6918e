//===- SpmdOps.h - spmd operations ------------------------------*- C++ -*-===//

#ifndef SPMD_DIALECT_SPMD_IR_SPMDOPS_H
#define SPMD_DIALECT_SPMD_IR_SPMDOPS_H

#include "Spmd/Dialect/Spmd/IR/ShardingRule.h"
#include "Spmd/Dialect/Spmd/IR/SpmdDialect.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "Spmd/Dialect/Spmd/IR/SpmdOpInterfaces.h.inc"

#define GET_OP_CLASSES
#include "Spmd/Dialect/Spmd/IR/SpmdOps.h.inc"

namespace mlir::spmd {

/// Looks up the mesh `mesh` names from `from`; emits an error located at
/// `from` and returns null when it does not name an `spmd.mesh`.
MeshOp lookupMesh(Operation *from, FlatSymbolRefAttr mesh,
                  SymbolTableCollection *symbolTable = nullptr);

/// The number of ranks in the group of a collective, or std::nullopt when
/// its mesh does not resolve.
std::optional<int64_t> getGroupSize(CollectiveOpInterface op);

} // namespace mlir::spmd

#endif // SPMD_DIALECT_SPMD_IR_SPMDOPS_H
