//===- SpmdBase.td - spmd dialect, enums, attributes, types -*- tablegen -*-===//

#ifndef SPMD_DIALECT_SPMD_IR_SPMDBASE_TD
#define SPMD_DIALECT_SPMD_IR_SPMDBASE_TD

include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"
include "mlir/IR/EnumAttr.td"
include "mlir/IR/OpBase.td"
include "Spmd/Dialect/Spmd/IR/SpmdInterfaces.td"

//===----------------------------------------------------------------------===//
// Dialect
//===----------------------------------------------------------------------===//

def Spmd_Dialect : Dialect {
  let name = "spmd";
  let cppNamespace = "::mlir::spmd";
  let summary = "Whole-train-step SPMD programs with explicit collectives";
  let description = [{
    The `spmd` dialect describes how one single-device training step is
    distributed over a mesh of ranks: meshes, per-axis placements and specs,
    placement constraints, value-semantic (optionally asynchronous)
    collectives, multi-tensor (foreach) arithmetic, optimizers as
    first-class ops, and named state (parameters, buffers, optimizer state).

    Function arguments and results carry their spec in the `spmd.spec`
    attribute:

    ```mlir
    spmd.mesh @dp(shape = 4)
    func.func @f(%x: tensor<16x8xf32> {spmd.spec = #spmd.spec<@dp, [shard<0>]>})
    ```
  }];
  let useDefaultAttributePrinterParser = 1;
  let useDefaultTypePrinterParser = 1;
  let hasConstantMaterializer = 0;
  let hasRegionArgAttrVerify = 1;
  let hasRegionResultAttrVerify = 1;
  let extraClassDeclaration = [{
    void registerAttributes();

    /// The name of the argument/result attribute that holds a value's spec.
    static constexpr ::llvm::StringLiteral getSpecAttrName() {
      return ::llvm::StringLiteral("spmd.spec");
    }
  }];
}

class Spmd_Op<string mnemonic, list<Trait> traits = []>
    : Op<Spmd_Dialect, mnemonic, traits>;

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def Spmd_ReductionKind : I32EnumAttr<"ReductionKind",
    "reduction kind", [
  I32EnumAttrCase<"Sum", 0, "sum">,
  I32EnumAttrCase<"Avg", 1, "avg">,
  I32EnumAttrCase<"Max", 2, "max">,
  I32EnumAttrCase<"Min", 3, "min">,
  I32EnumAttrCase<"Prod", 4, "prod">,
]> {
  let cppNamespace = "::mlir::spmd";
}

def Spmd_StateRole : I32EnumAttr<"StateRole", "state role", [
  I32EnumAttrCase<"Param", 0, "param">,
  I32EnumAttrCase<"Buffer", 1, "buffer">,
  I32EnumAttrCase<"OptimizerState", 2, "optimizer_state">,
  I32EnumAttrCase<"Output", 3, "output">,
]> {
  let cppNamespace = "::mlir::spmd";
}

//===----------------------------------------------------------------------===//
// Placement attributes
//===----------------------------------------------------------------------===//

class Spmd_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<Spmd_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

def Spmd_ReplicateAttr : Spmd_Attr<"Replicate", "replicate",
                                   [Spmd_PlacementAttrInterface]> {
  let summary = "every rank along the axis holds the whole tensor";
  let description = [{
    DTensor's `Replicate()`. Inside a spec it is written `replicate`.

    ```mlir
    #spmd.replicate
    ```
  }];
}

def Spmd_ShardAttr : Spmd_Attr<"Shard", "shard",
                               [Spmd_PlacementAttrInterface]> {
  let summary = "the tensor is split along one of its dimensions";
  let description = [{
    DTensor's `Shard(dim)`: the ranks along the axis hold consecutive chunks
    of tensor dimension `dim`, with `torch.chunk` semantics when the size is
    not divisible (chunks of `ceil(size / n)`, trailing ranks smaller or
    empty). Inside a spec it is written `shard<dim>`.

    ```mlir
    #spmd.shard<0>
    ```
  }];
  let parameters = (ins "int64_t":$dim);
  let assemblyFormat = "`<` $dim `>`";
  let genVerifyDecl = 1;
}

def Spmd_PartialAttr : Spmd_Attr<"Partial", "partial",
                                 [Spmd_PlacementAttrInterface]> {
  let summary = "each rank holds a term of a pending reduction";
  let description = [{
    DTensor's `Partial(reduce_op)`: the logical tensor is the reduction
    (`sum`, `avg`, `max`, `min` or `prod`) of the tensors the ranks along the
    axis hold. Inside a spec it is written `partial<kind>`.

    ```mlir
    #spmd.partial<sum>
    ```
  }];
  let parameters = (ins "ReductionKind":$kind);
  let assemblyFormat = "`<` $kind `>`";
}

//===----------------------------------------------------------------------===//
// Spec attribute
//===----------------------------------------------------------------------===//

def Spmd_SpecAttr : Spmd_Attr<"Spec", "spec"> {
  let summary = "a mesh and one placement per mesh axis";
  let description = [{
    DTensor's `DTensorSpec`: how a (global) tensor is laid out over a mesh.
    Placement `i` says what mesh axis `i` does to the tensor. Several axes may
    shard the same tensor dimension; they then split it in axis order (axis 0
    outermost).

    ```mlir
    #spmd.spec<@m, [shard<0>, replicate]>
    #spmd.spec<@m, [partial<sum>, shard<1>]>
    ```

    The mesh reference and the spec length are checked against the mesh by
    the op that holds the spec (spec C1, C2, C3 in `docs/Spmd.md`).
  }];
  let parameters = (ins
    "::mlir::FlatSymbolRefAttr":$mesh,
    ArrayRefParameter<"::mlir::spmd::PlacementAttr", "one placement per mesh axis">:$placements
  );
  let hasCustomAssemblyFormat = 1;
  let extraClassDeclaration = [{
    /// Checks this spec against the mesh it names and the type it describes;
    /// `emitError` reports the first violated constraint.
    ::llvm::LogicalResult verifyAgainst(
        ::llvm::function_ref<::mlir::InFlightDiagnostic()> emitError,
        ::mlir::Operation *from, ::mlir::Type type) const;
  }];
}

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

def Spmd_FutureType : TypeDef<Spmd_Dialect, "Future"> {
  let mnemonic = "future";
  let summary = "the pending result of an asynchronous collective";
  let description = [{
    An asynchronous collective yields a future instead of a tensor;
    `spmd.wait` turns it into the tensor. Everything between the two may
    overlap with the communication.

    ```mlir
    !spmd.future<tensor<8x16xf32>>
    ```
  }];
  let parameters = (ins "::mlir::RankedTensorType":$valueType);
  let assemblyFormat = "`<` $valueType `>`";
}

#endif // SPMD_DIALECT_SPMD_IR_SPMDBASE_TD
