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
  let hasOperationAttrVerify = 1;
  let extraClassDeclaration = [{
    void registerAttributes();

    /// The name of the argument/result attribute that holds a value's spec.
    static constexpr ::llvm::StringLiteral getSpecAttrName() {
      return ::llvm::StringLiteral("spmd.spec");
    }

    // The `spmd.*` attributes the passes leave on other dialects' ops (the
    // only ones the dialect accepts there; see docs/Spmd.md).

    /// On an op spmd-propagate placed: its `#spmd.strategy`.
    static constexpr ::llvm::StringLiteral getStrategyAttrName() {
      return ::llvm::StringLiteral("spmd.strategy");
    }
    /// On an op spmd-propagate placed: one `#spmd.spec` per tensor result
    /// (a unit attribute for any other result).
    static constexpr ::llvm::StringLiteral getResultSpecsAttrName() {
      return ::llvm::StringLiteral("spmd.result_specs");
    }
    /// On a function spmd-propagate placed: the mesh it distributes over.
    static constexpr ::llvm::StringLiteral getMeshAttrName() {
      return ::llvm::StringLiteral("spmd.mesh");
    }
    /// GPU lowering: on the `builtin.unrealized_conversion_cast` that makes
    /// a runtime device buffer (state or constant) a memref, "state:NAME" or
    /// "constant:NAME"; two casts with different values are different
    /// buffers.
    static constexpr ::llvm::StringLiteral getGpuBufferAttrName() {
      return ::llvm::StringLiteral("spmd.gpu_buffer");
    }
    /// CPU lowering: on the `memref.global` convert-spmd-to-runtime makes
    /// of a state, the runtime's element type code (an i32; SpmdRuntime.h's
    /// SPMD_F32...): spmd-state-in-runtime-memory allocates it by that.
    static constexpr ::llvm::StringLiteral getStateDtypeAttrName() {
      return ::llvm::StringLiteral("spmd.state_dtype");
    }
    /// GPU lowering: on a host load/store of a host copy (a unit attribute;
    /// spmd-verify-gpu-host-code allows those).
    static constexpr ::llvm::StringLiteral getHostCopyAttrName() {
      return ::llvm::StringLiteral("spmd.host_copy");
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
  I32EnumAttrCase<"Gradient", 4, "gradient">,
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
// Strategy attribute
//===----------------------------------------------------------------------===//

def Spmd_StrategyAttr : Spmd_Attr<"Strategy", "strategy"> {
  let summary = "how spmd-propagate placed an op: a choice per factor group "
                "and mesh axis";
  let description = [{
    The record spmd-propagate leaves on every op it places (attribute
    `spmd.strategy`, next to `spmd.result_specs`) and spmd-expand reads back.
    One bracketed list per factor group of the op's sharding rule (see
    `--spmd-print-sharding-rules`), one choice per mesh axis in each:

    - `replicate`: the group is not distributed along the axis;
    - `factor<f>`: the axis shards the rule's factor `f` (a factor of that
      group), so every dimension `f` drives is sharded; a sharded reduction
      factor leaves the results partial;
    - `partial<kind, s>`: the operands of the rule's linear set `s` hold
      `partial<kind>` along the axis and the results stay partial.

    ```mlir
    %0 = linalg.matmul {spmd.result_specs = [#spmd.spec<@m, [shard<0>, partial<sum>]>],
                        spmd.strategy = #spmd.strategy<[factor<0>, factor<2>]>}
           ins(%a, %b : ...) outs(%c : ...) -> tensor<8x2xf32>
    spmd.sgd ... {spmd.strategy = #spmd.strategy<[replicate], [factor<1>]>, ...}
    ```

    Checked on the op that holds it (strategy_c1–c5 in `docs/Spmd.md`):
    one list per factor group, each factor in range and of its group, each
    linear set in range, and `spmd.result_specs` next to it.
  }];
  let parameters = (ins
    "unsigned":$numAxes,
    ArrayRefParameter<"::mlir::spmd::AxisChoice",
                      "choices, indexed [group * numAxes + axis]">:$choices
  );
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    unsigned getNumGroups() const { return getChoices().size() / getNumAxes(); }
    const ::mlir::spmd::AxisChoice &getChoice(unsigned group,
                                              unsigned axis) const {
      return getChoices()[group * getNumAxes() + axis];
    }
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
