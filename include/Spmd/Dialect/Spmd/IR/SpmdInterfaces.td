//===- SpmdInterfaces.td - spmd interfaces -----------------*- tablegen -*-===//

#ifndef SPMD_DIALECT_SPMD_IR_SPMDINTERFACES_TD
#define SPMD_DIALECT_SPMD_IR_SPMDINTERFACES_TD

include "mlir/IR/OpBase.td"

def Spmd_PlacementAttrInterface : AttrInterface<"PlacementAttr"> {
  let cppNamespace = "::mlir::spmd";
  let description = [{
    How one mesh axis lays a tensor out across the ranks along that axis:
    `replicate`, `shard<dim>` or `partial<kind>`. A spec holds one placement
    per mesh axis. Placements print without the dialect prefix inside a spec.
  }];
}

def Spmd_CollectiveOpInterface : OpInterface<"CollectiveOpInterface"> {
  let cppNamespace = "::mlir::spmd";
  let description = [{
    A functional collective over a group of ranks: the ranks of mesh `mesh`
    that differ only in the coordinates of `axes`. Each input is one tensor of
    a coalesced call; result `i` belongs to input `i` and is either a tensor
    (synchronous form) or a `!spmd.future` of that tensor (asynchronous form).
  }];
  let methods = [
    InterfaceMethod<"The mesh the group lives on.",
      "::mlir::FlatSymbolRefAttr", "getMeshAttr">,
    InterfaceMethod<"The mesh axes that span the group.",
      "::llvm::ArrayRef<int64_t>", "getAxes">,
    InterfaceMethod<"The coalesced inputs.",
      "::mlir::OperandRange", "getInputs">,
    InterfaceMethod<"True when the results are futures.", "bool", "isAsync",
      (ins), [{}], [{
        return !$_op->getResults().empty() &&
               ::llvm::isa<::mlir::spmd::FutureType>(
                   $_op->getResult(0).getType());
      }]>,
  ];
}

def Spmd_ShardingRuleOpInterface : OpInterface<"ShardingRuleOpInterface"> {
  let cppNamespace = "::mlir::spmd";
  let description = [{
    The placement rule of an op for `spmd-propagate` and `spmd-expand`: how
    its iteration factors drive the dimensions of its tensors, which factors
    are reductions, and in which operands it is linear (so Partial values
    pass through). Attached to upstream ops as external models
    (`registerShardingRuleModels`); an op without a rule is computed
    replicated.
  }];
  let methods = [
    InterfaceMethod<"Returns the rule, or failure when this instance has none.",
      "::mlir::FailureOr<::mlir::spmd::ShardingRule>", "getShardingRule">,
    InterfaceMethod<[{
      Called by `spmd-expand` once the op's operands and results have their
      local types: rebuilds the op (at the builder's insertion point) where
      its attributes or operands still hold global sizes (a slice's sizes,
      a reshape's result shape) and returns the new op, whose results
      replace this op's; returns null when nothing needs rebuilding (the
      default: sizes that come from the operands follow them); failure with
      a diagnostic when the op cannot be localized.
    }], "::mlir::FailureOr<::mlir::Operation *>", "localizeSizes",
      (ins "::mlir::OpBuilder &":$builder,
           "const ::mlir::spmd::ShardingRule &":$rule),
      /*methodBody=*/"",
      /*defaultImplementation=*/[{
        return static_cast<::mlir::Operation *>(nullptr);
      }]>,
  ];
}

#endif // SPMD_DIALECT_SPMD_IR_SPMDINTERFACES_TD
