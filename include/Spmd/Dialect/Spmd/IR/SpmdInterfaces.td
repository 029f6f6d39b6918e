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

#endif // SPMD_DIALECT_SPMD_IR_SPMDINTERFACES_TD
