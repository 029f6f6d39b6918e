//===- ShardingRules.h - placement rules of upstream and spmd ops -*- C++
//-*-===//

#ifndef SPMD_DIALECT_SPMD_TRANSFORMS_SHARDINGRULES_H
#define SPMD_DIALECT_SPMD_TRANSFORMS_SHARDINGRULES_H

#include "mlir/IR/DialectRegistry.h"

namespace mlir::spmd {

/// Attaches ShardingRuleOpInterface to every linalg structured op, the
/// elementwise arith and math ops, tensor.empty/cast/expand_shape/
/// collapse_shape, splat arith.constant, and the spmd foreach and optimizer
/// ops.
void registerShardingRuleModels(DialectRegistry &registry);

} // namespace mlir::spmd

#endif // SPMD_DIALECT_SPMD_TRANSFORMS_SHARDINGRULES_H
