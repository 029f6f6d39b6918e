//===- SpmdOps.td - spmd operations ------------------------*- tablegen -*-===//
//
// Constraint labels (`mesh_c1`, `all_gather_c3`, ...) refer to docs/Spmd.md;
// each verifier check carries its label and each invalid test is named after
// it.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_DIALECT_SPMD_IR_SPMDOPS_TD
#define SPMD_DIALECT_SPMD_IR_SPMDOPS_TD

include "Spmd/Dialect/Spmd/IR/SpmdBase.td"
include "Spmd/Dialect/Spmd/IR/SpmdInterfaces.td"
include "mlir/IR/BuiltinAttributes.td"
include "mlir/IR/CommonAttrConstraints.td"
include "mlir/IR/CommonTypeConstraints.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Spmd_StateResource : Resource<"::mlir::spmd::StateResource">;


//===----------------------------------------------------------------------===//
// Mesh
//===----------------------------------------------------------------------===//

def Spmd_MeshOp : Spmd_Op<"mesh", [Symbol]> {
  let summary = "an N-d grid of ranks";
  let description = [{
    Declares a mesh: `shape` gives the size of each axis, and the product of
    the sizes is the number of ranks. Ranks are numbered row-major over the
    axes (the last axis varies fastest). Axes may be named; collectives and
    specs refer to axes by index.

    ```mlir
    spmd.mesh @dp(shape = 4)
    spmd.mesh @m(shape = 2x4, axes = ["dp", "tp"])
    ```

    Only static sizes are supported (mesh C2).
  }];
  let arguments = (ins
    SymbolNameAttr:$sym_name,
    DenseI64ArrayAttr:$shape,
    OptionalAttr<StrArrayAttr>:$axis_names
  );
  let assemblyFormat = [{
    $sym_name `(` `shape` `=` custom<MeshShape>($shape)
    (`,` `axes` `=` $axis_names^)? `)` attr-dict
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    int64_t getRank() { return getShape().size(); }
    /// The number of ranks in the group spanned by `axes`.
    int64_t getGroupSize(::llvm::ArrayRef<int64_t> axes);
  }];
}

//===----------------------------------------------------------------------===//
// Placement constraints
//===----------------------------------------------------------------------===//

class Spmd_SpecOp<string mnemonic, list<Trait> traits = []>
    : Spmd_Op<mnemonic, !listconcat(traits, [
        Pure, AllTypesMatch<["input", "result"]>,
        DeclareOpInterfaceMethods<SymbolUserOpInterface>])> {
  let arguments = (ins AnyRankedTensor:$input, Spmd_SpecAttr:$spec);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input `to` $spec attr-dict `:` type($result)";
}

def Spmd_AnnotateOp : Spmd_SpecOp<"annotate"> {
  let summary = "constrains the spec of a value";
  let description = [{
    The result is the input, laid out as `spec`. Propagation treats the spec
    as fixed and spreads it to the producers and users of the value; where
    they need another spec, expansion inserts the collectives. The types are
    global (single-device) types.

    ```mlir
    %y = spmd.annotate %x to <@dp, [shard<0>]> : tensor<16x8xf32>
    ```
  }];
}

def Spmd_RedistributeOp : Spmd_SpecOp<"redistribute"> {
  let summary = "changes the spec of a value";
  let description = [{
    The result holds the same (global) tensor as the input, laid out as
    `spec`; the input keeps whatever spec propagation gives it. Expansion
    lowers the change to collectives following DTensor's table
    (partial→replicate: all_reduce, partial→shard: reduce_scatter,
    shard→replicate: all_gather, shard→shard: all_to_all, replicate→shard:
    a local slice, replicate→partial: local).

    ```mlir
    %y = spmd.redistribute %x to <@dp, [replicate]> : tensor<16x8xf32>
    ```

    A redistribute to the spec its input already has folds away, and a chain
    of redistributes collapses into the last one.
  }];
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

class Spmd_CollectiveOp<string mnemonic, list<Trait> traits = []>
    : Spmd_Op<mnemonic, !listconcat(traits, [
        Pure,
        DeclareOpInterfaceMethods<SymbolUserOpInterface>,
        DeclareOpInterfaceMethods<Spmd_CollectiveOpInterface>])> {
  dag commonArgs = (ins
    Variadic<AnyRankedTensor>:$inputs,
    FlatSymbolRefAttr:$mesh,
    DefaultValuedAttr<DenseI64ArrayAttr, "{}">:$axes
  );
  let results = (outs Variadic<AnyType>:$results);
  let hasVerifier = 1;
  let hasFolder = 1;

  code commonDescription = [{
    Side effects: the op is `Pure`. Every rank runs the same program with no
    rank-dependent control flow around collectives (the SPMD premise that
    `spmd-expand` keeps), so all ranks make the same choice when CSE merges
    two identical collectives, DCE drops an unused one, or a scheduler moves
    one; and ranks always issue collectives in the same order. A program that
    guards a collective on the rank breaks that premise and is unsupported.

    Several inputs make one coalesced call (one result per input). With
    tensor results the op is synchronous; with `!spmd.future` results it only
    starts the communication and `spmd.wait` yields the tensors. A group of
    size 1 (no axes, or axes of size 1) folds to its inputs.
  }];
}

def Spmd_AllReduceOp : Spmd_CollectiveOp<"all_reduce"> {
  let summary = "reduces tensors across a group; every rank gets the result";
  let description = [{
    Each result is the elementwise `kind` reduction (`sum`, `avg`, `max`,
    `min`, `prod`) of the corresponding input over the ranks of the group.
    `avg` requires a float element type.

    ```mlir
    spmd.mesh @m(shape = 2x4)
    %r = spmd.all_reduce %g on @m axes = [0] sum : tensor<16xf32> -> tensor<16xf32>
    %f0, %f1 = spmd.all_reduce %a, %b on @m axes = [0, 1] avg
        : tensor<4xf32>, tensor<8xf32>
        -> !spmd.future<tensor<4xf32>>, !spmd.future<tensor<8xf32>>
    ```
  }] # commonDescription;
  let arguments = !con(commonArgs, (ins Spmd_ReductionKind:$kind));
  let builders = [
    // One tensor (or future) reduced over `axes` of `mesh`.
    OpBuilder<(ins "::mlir::Type":$resultType, "::mlir::Value":$input,
                   "::mlir::FlatSymbolRefAttr":$mesh,
                   "::llvm::ArrayRef<int64_t>":$axes,
                   "::mlir::spmd::ReductionKind":$kind), [{
      build($_builder, $_state, ::mlir::TypeRange{resultType},
            ::mlir::ValueRange{input}, mesh,
            $_builder.getDenseI64ArrayAttr(axes),
            ReductionKindAttr::get($_builder.getContext(), kind));
    }]>
  ];
  let assemblyFormat = [{
    $inputs `on` $mesh `axes` `=` $axes $kind attr-dict
    `:` type($inputs) `->` type($results)
  }];
}

def Spmd_AllGatherOp : Spmd_CollectiveOp<"all_gather"> {
  let summary = "concatenates the tensors of a group; every rank gets the result";
  let description = [{
    Each result is the concatenation along `gather_dim` of the corresponding
    input of every rank of the group, in group order (row-major over `axes`
    in the order listed). The result's `gather_dim` is the input's times the
    group size; other dimensions are unchanged.

    ```mlir
    spmd.mesh @m(shape = 4)
    %r = spmd.all_gather %x on @m axes = [0] gather_dim = 0
        : tensor<2x8xf32> -> tensor<8x8xf32>
    ```
  }] # commonDescription;
  let arguments = !con(commonArgs, (ins I64Attr:$gather_dim));
  let builders = [
    // One tensor (or future) gathered along `gatherDim`.
    OpBuilder<(ins "::mlir::Type":$resultType, "::mlir::Value":$input,
                   "::mlir::FlatSymbolRefAttr":$mesh,
                   "::llvm::ArrayRef<int64_t>":$axes, "int64_t":$gatherDim), [{
      build($_builder, $_state, ::mlir::TypeRange{resultType},
            ::mlir::ValueRange{input}, mesh,
            $_builder.getDenseI64ArrayAttr(axes),
            $_builder.getI64IntegerAttr(gatherDim));
    }]>
  ];
  let assemblyFormat = [{
    $inputs `on` $mesh `axes` `=` $axes `gather_dim` `=` $gather_dim attr-dict
    `:` type($inputs) `->` type($results)
  }];
}

def Spmd_ReduceScatterOp : Spmd_CollectiveOp<"reduce_scatter"> {
  let summary = "reduces tensors across a group; each rank keeps one chunk";
  let description = [{
    The `kind` reduction of the inputs over the group, split into as many
    equal chunks along `scatter_dim` as the group has ranks; rank `i` of the
    group keeps chunk `i`. The input's `scatter_dim` must be divisible by the
    group size (expansion pads uneven tensors first).

    ```mlir
    spmd.mesh @m(shape = 4)
    %r = spmd.reduce_scatter %g on @m axes = [0] sum scatter_dim = 0
        : tensor<8x8xf32> -> tensor<2x8xf32>
    ```
  }] # commonDescription;
  let arguments = !con(commonArgs, (ins Spmd_ReductionKind:$kind,
                                        I64Attr:$scatter_dim));
  let builders = [
    // One tensor (or future) reduced and scattered along `scatterDim`.
    OpBuilder<(ins "::mlir::Type":$resultType, "::mlir::Value":$input,
                   "::mlir::FlatSymbolRefAttr":$mesh,
                   "::llvm::ArrayRef<int64_t>":$axes,
                   "::mlir::spmd::ReductionKind":$kind,
                   "int64_t":$scatterDim), [{
      build($_builder, $_state, ::mlir::TypeRange{resultType},
            ::mlir::ValueRange{input}, mesh,
            $_builder.getDenseI64ArrayAttr(axes),
            ReductionKindAttr::get($_builder.getContext(), kind),
            $_builder.getI64IntegerAttr(scatterDim));
    }]>
  ];
  let assemblyFormat = [{
    $inputs `on` $mesh `axes` `=` $axes $kind `scatter_dim` `=` $scatter_dim
    attr-dict `:` type($inputs) `->` type($results)
  }];
}

def Spmd_AllToAllOp : Spmd_CollectiveOp<"all_to_all"> {
  let summary = "exchanges chunks between all ranks of a group";
  let description = [{
    Each rank splits its input into group-size chunks along `split_dim`,
    sends chunk `j` to rank `j` of the group, and concatenates what it
    receives along `concat_dim` in group order. The input's `split_dim` must
    be divisible by the group size.

    ```mlir
    spmd.mesh @m(shape = 4)
    %r = spmd.all_to_all %x on @m axes = [0] split_dim = 1 concat_dim = 0
        : tensor<2x8xf32> -> tensor<8x2xf32>
    ```
  }] # commonDescription;
  let arguments = !con(commonArgs, (ins I64Attr:$split_dim,
                                        I64Attr:$concat_dim));
  let builders = [
    // One tensor exchanged: split along `splitDim`, concatenated along
    // `concatDim`.
    OpBuilder<(ins "::mlir::Type":$resultType, "::mlir::Value":$input,
                   "::mlir::FlatSymbolRefAttr":$mesh,
                   "::llvm::ArrayRef<int64_t>":$axes, "int64_t":$splitDim,
                   "int64_t":$concatDim), [{
      build($_builder, $_state, ::mlir::TypeRange{resultType},
            ::mlir::ValueRange{input}, mesh,
            $_builder.getDenseI64ArrayAttr(axes),
            $_builder.getI64IntegerAttr(splitDim),
            $_builder.getI64IntegerAttr(concatDim));
    }]>
  ];
  let assemblyFormat = [{
    $inputs `on` $mesh `axes` `=` $axes `split_dim` `=` $split_dim
    `concat_dim` `=` $concat_dim attr-dict
    `:` type($inputs) `->` type($results)
  }];
}

def Spmd_BroadcastOp : Spmd_CollectiveOp<"broadcast"> {
  let summary = "copies the tensors of one rank to every rank of a group";
  let description = [{
    Every rank of the group gets the inputs of the rank whose linear index
    in the group is `root`.

    ```mlir
    spmd.mesh @m(shape = 2x4)
    %r = spmd.broadcast %x on @m axes = [1] root = 0 : tensor<8xf32> -> tensor<8xf32>
    ```
  }] # commonDescription;
  let arguments = !con(commonArgs, (ins I64Attr:$root));
  let assemblyFormat = [{
    $inputs `on` $mesh `axes` `=` $axes `root` `=` $root attr-dict
    `:` type($inputs) `->` type($results)
  }];
}

//===----------------------------------------------------------------------===//
// Rank-local ops
//===----------------------------------------------------------------------===//

def Spmd_AxisIndexOp : Spmd_Op<"axis_index", [
    Pure, DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "this rank's index in the group spanned by mesh axes";
  let description = [{
    The linear index (row-major over `axes`, in the order listed) of the
    calling rank within its group. Rank-dependent but deterministic per rank,
    hence `Pure`.

    ```mlir
    spmd.mesh @m(shape = 2x4)
    %i = spmd.axis_index @m axes = [1] : index
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$mesh, DenseI64ArrayAttr:$axes);
  let results = (outs Index:$result);
  let assemblyFormat = "$mesh `axes` `=` $axes attr-dict `:` type($result)";
}

def Spmd_LocalSliceOp : Spmd_Op<"local_slice", [
    Pure, DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "the chunk of a replicated tensor this rank keeps";
  let description = [{
    Replicate→Shard without communication: splits `dim` into as many chunks
    as the group spanned by `axes` has ranks, with `torch.chunk` semantics
    (chunks of `ceil(size / n)`, trailing ranks smaller or empty), and keeps
    the chunk of the calling rank's group index. When the size is divisible
    the result dimension is `size / n`; otherwise it is dynamic.

    ```mlir
    spmd.mesh @dp(shape = 4)
    %s = spmd.local_slice %x on @dp axes = [0] dim = 0 : tensor<8x3xf32> -> tensor<2x3xf32>
    %u = spmd.local_slice %y on @dp axes = [0] dim = 0 : tensor<6x3xf32> -> tensor<?x3xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, FlatSymbolRefAttr:$mesh,
                       DenseI64ArrayAttr:$axes, I64Attr:$dim);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `on` $mesh `axes` `=` $axes `dim` `=` $dim attr-dict
    `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Spmd_WaitOp : Spmd_Op<"wait", [
    Pure, DeclareOpInterfaceMethods<InferTypeOpInterface>]> {
  let summary = "yields the tensors of asynchronous collectives";
  let description = [{
    Completes the communication behind each future and yields its tensor.
    Waiting on one future twice yields the same tensor (waits are `Pure`, so
    CSE may merge them).

    ```mlir
    %f = spmd.all_reduce %g on @dp axes = [0] sum : tensor<16xf32> -> !spmd.future<tensor<16xf32>>
    // ... computation that overlaps the all_reduce ...
    %r = spmd.wait %f : !spmd.future<tensor<16xf32>>
    ```
  }];
  let arguments = (ins Variadic<Spmd_FutureType>:$futures);
  let results = (outs Variadic<AnyRankedTensor>:$results);
  let assemblyFormat = "$futures attr-dict `:` type($futures)";
  let hasVerifier = 1;
  let hasCanonicalizer = 1;
}

//===----------------------------------------------------------------------===//
// Foreach (multi-tensor) ops
//===----------------------------------------------------------------------===//

// A foreach op applies one elementwise formula to N tensors at once. Its
// tensor lists all have N entries and entry `i` of every list has the same
// type; scalar operands are floats converted to the tensors' element type,
// either one shared by all entries or one per entry. The types after the
// colon are those of the first list, then those of the scalars.
class Spmd_ForeachOp<string mnemonic, string formula, string torchName,
                     dag args, string format, string listsExpr,
                     string scalarsExpr, string scalarUse, string example>
    : Spmd_Op<"foreach_" # mnemonic, !listconcat([
        Pure, DeclareOpInterfaceMethods<InferTypeOpInterface>],
        !if(!gt(!size(args), 1), [AttrSizedOperandSegments], []))> {
  let summary = "foreach: `" # formula # "` on each entry of tensor lists";
  let description = "Result `i` is `" # formula # "` " # scalarUse #
    " (torch `" # torchName # "`). Results have the types of `self`.\n\n" #
    "```mlir\n" # example # "\n```\n";
  let arguments = args;
  let results = (outs Variadic<AnyRankedTensor>:$results);
  let assemblyFormat = format;
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The tensor list operands, in order.
    ::llvm::SmallVector<::mlir::OperandRange> getTensorLists() {
      return {}] # listsExpr # [{};
    }
    /// The scalar operands: none, one shared by all entries, or one per entry.
    ::mlir::OperandRange getScalarOperands() {
      return }] # scalarsExpr # [{;
    }
  }];
  code noScalars = "getOperation()->getOperands().take_front(0)";
}

class Spmd_ForeachOp1<string mnemonic, string formula, string torchName>
    : Spmd_ForeachOp<mnemonic, formula, torchName,
        (ins Variadic<AnyRankedTensor>:$self),
        "` ` `[` $self `]` attr-dict `:` custom<ForeachTypes>(type($self))",
        "getSelf()", "getOperation()->getOperands().take_front(0)",
        "with `x = self[i]`",
        "%r0, %r1 = spmd.foreach_" # mnemonic #
        " [%a, %b] : tensor<4xf32>, tensor<2x3xf32>">;

class Spmd_ForeachOp2<string mnemonic, string formula, string torchName>
    : Spmd_ForeachOp<mnemonic, formula, torchName,
        (ins Variadic<AnyRankedTensor>:$self, Variadic<AnyRankedTensor>:$other),
        "` ` `[` $self `]` `,` ` ` `[` $other `]` attr-dict "
        "`:` custom<ForeachListTypes>(type($self), type($other))",
        "getSelf(), getOther()", "getOperation()->getOperands().take_front(0)",
        "with `x = self[i]`, `y = other[i]`",
        "%r0, %r1 = spmd.foreach_" # mnemonic #
        " [%a, %b], [%c, %d] : tensor<4xf32>, tensor<2x3xf32>">;

// `required`: the scalar must be given; otherwise it defaults to 1.
class Spmd_ForeachOp2Scalar<string mnemonic, string formula, string torchName,
                            string keyword, bit required>
    : Spmd_ForeachOp<mnemonic, formula, torchName,
        (ins Variadic<AnyRankedTensor>:$self, Variadic<AnyRankedTensor>:$other,
             Variadic<AnyFloat>:$scalars),
        "` ` `[` $self `]` `,` ` ` `[` $other `]` " #
        !if(required, "`" # keyword # "` ` ` `[` $scalars `]`",
                      "(`" # keyword # "` ` ` `[` $scalars^ `]`)?") #
        " attr-dict `:` custom<ForeachTypes>(type($self), type($other), "
        "type($scalars))",
        "getSelf(), getOther()", "getScalars()",
        "with `x = self[i]`, `y = other[i]` and `s` the `" # keyword #
        "` scalar (one shared or one per entry" #
        !if(required, "", "; 1 when absent") # ")",
        "%r0, %r1 = spmd.foreach_" # mnemonic # " [%a, %b], [%c, %d] " #
        keyword # " [%s] : tensor<4xf32>, tensor<2x3xf32>, f32">;

class Spmd_ForeachOpScalar<string mnemonic, string formula, string torchName>
    : Spmd_ForeachOp<mnemonic, formula, torchName,
        (ins Variadic<AnyRankedTensor>:$self, Variadic<AnyFloat>:$scalars),
        "` ` `[` $self `]` `scalar` ` ` `[` $scalars `]` attr-dict "
        "`:` custom<ForeachTypes>(type($self), type($scalars))",
        "getSelf()", "getScalars()",
        "with `x = self[i]` and `s` the scalar (one shared or one per entry)",
        "%r0, %r1 = spmd.foreach_" # mnemonic #
        " [%a, %b] scalar [%s0, %s1] : tensor<4xf32>, tensor<2x3xf32>, f32, f64">;

class Spmd_ForeachOp3<string mnemonic, string formula, string torchName>
    : Spmd_ForeachOp<mnemonic, formula, torchName,
        (ins Variadic<AnyRankedTensor>:$self, Variadic<AnyRankedTensor>:$tensor1,
             Variadic<AnyRankedTensor>:$tensor2, Variadic<AnyFloat>:$scalars),
        "` ` `[` $self `]` `,` ` ` `[` $tensor1 `]` `,` ` ` `[` $tensor2 `]` "
        "(`value` ` ` `[` $scalars^ `]`)? attr-dict "
        "`:` custom<ForeachTypes>(type($self), type($tensor1), type($tensor2), "
        "type($scalars))",
        "getSelf(), getTensor1(), getTensor2()", "getScalars()",
        "with `x = self[i]`, `y = tensor1[i]`, `z = tensor2[i]` and `s` the "
        "`value` scalar (one shared or one per entry; 1 when absent)",
        "%r = spmd.foreach_" # mnemonic #
        " [%a], [%b], [%c] value [%s] : tensor<4xf32>, f32">;

def Spmd_ForeachNegOp : Spmd_ForeachOp1<"neg", "-x", "_foreach_neg">;
def Spmd_ForeachSqrtOp : Spmd_ForeachOp1<"sqrt", "sqrt(x)", "_foreach_sqrt">;
def Spmd_ForeachAddOp
    : Spmd_ForeachOp2Scalar<"add", "x + s * y", "_foreach_add(List, List, alpha)",
                            "alpha", 0>;
def Spmd_ForeachMulOp : Spmd_ForeachOp2<"mul", "x * y", "_foreach_mul(List, List)">;
def Spmd_ForeachDivOp : Spmd_ForeachOp2<"div", "x / y", "_foreach_div(List, List)">;
def Spmd_ForeachMaximumOp
    : Spmd_ForeachOp2<"maximum", "max(x, y)", "_foreach_maximum(List, List)">;
def Spmd_ForeachLerpOp
    : Spmd_ForeachOp2Scalar<"lerp",
        "|s| < 0.5 ? x + s * (y - x) : y - (y - x) * (1 - s)",
        "_foreach_lerp(List, List, weight)", "weight", 1>;
def Spmd_ForeachAddScalarOp
    : Spmd_ForeachOpScalar<"add_scalar", "x + s", "_foreach_add(List, Scalar)">;
def Spmd_ForeachMulScalarOp
    : Spmd_ForeachOpScalar<"mul_scalar", "x * s", "_foreach_mul(List, Scalar)">;
def Spmd_ForeachDivScalarOp
    : Spmd_ForeachOpScalar<"div_scalar", "x / s", "_foreach_div(List, Scalar)">;
def Spmd_ForeachAddcmulOp
    : Spmd_ForeachOp3<"addcmul", "x + s * y * z", "_foreach_addcmul">;
def Spmd_ForeachAddcdivOp
    : Spmd_ForeachOp3<"addcdiv", "x + s * (y / z)", "_foreach_addcdiv">;

//===----------------------------------------------------------------------===//
// Optimizers
//===----------------------------------------------------------------------===//

def Spmd_SGDOp : Spmd_Op<"sgd", [
    Pure, AttrSizedOperandSegments,
    DeclareOpInterfaceMethods<InferTypeOpInterface>]> {
  let summary = "one step of torch.optim.SGD over a parameter group";
  let description = [{
    Updates every parameter of one group with its gradient, with exactly
    torch's formulas and order (`torch.optim.SGD`, foreach form). For each
    parameter `p` with gradient `g`:

    ```
    if maximize:        g = -g
    if weight_decay:    g = g + weight_decay * p
    if momentum != 0:
        if step == 0:   b = g                      # torch: buffer is None
        else:           b = momentum * b + (1 - dampening) * g
        if nesterov:    g = g + momentum * b
        else:           g = b
    p = p - lr * g
    step = step + 1
    ```

    With `momentum != 0` the op takes one momentum buffer per parameter and a
    step counter (a `tensor<f32>`, 0 before the first step, when the buffers
    hold zeros, as the bridge and the runtime initialize them) that stands
    for torch's "buffer is None" test; without momentum it takes neither.
    (Without dampening, the first step's `b = g` is `momentum * 0 + g`: the
    lowering then does not read the counter.) The
    types after the colon are the parameters'; gradients and buffers have
    the same. The results are the new parameters, then the new momentum
    buffers, then the new step counter.

    Float options a training loop changes (an LR scheduler, OneCycleLR's
    momentum) are run-time values: `hyperparams(lr = %lr, momentum = %m)`
    gives them as `tensor<f64>` operands read on every call, in place of the
    attribute of the same name (`lr`, `momentum`, `dampening`,
    `weight_decay`). What decides the op's structure stays an attribute: a
    run-time `momentum` means momentum is on (buffers and a step counter), a
    run-time `weight_decay` that the decay is applied, and `nesterov` needs a
    compile-time zero `dampening`.

    ```mlir
    %p0, %p1, %b0, %b1, %s = spmd.sgd params [%w, %v] grads [%gw, %gv]
        momentum_buffers [%bw, %bv] step %st
        {lr = 1.0e-01, momentum = 9.0e-01, nesterov}
        : tensor<16x8xf32>, tensor<8xf32>
    %q, %c, %t = spmd.sgd params [%w] grads [%gw] momentum_buffers [%bw]
        step %st hyperparams(lr = %lr, momentum = %m) : tensor<16x8xf32>
    ```
  }];
  let arguments = (ins
    Variadic<AnyRankedTensor>:$params,
    Variadic<AnyRankedTensor>:$grads,
    Variadic<AnyRankedTensor>:$momentum_buffers,
    Optional<0DTensorOf<[F32]>>:$step,
    Variadic<0DTensorOf<[F64]>>:$hyperparams,
    OptionalAttr<StrArrayAttr>:$hyperparam_names,
    OptionalAttr<F64Attr>:$lr,
    DefaultValuedAttr<F64Attr, "0.0">:$momentum,
    DefaultValuedAttr<F64Attr, "0.0">:$dampening,
    DefaultValuedAttr<F64Attr, "0.0">:$weight_decay,
    UnitAttr:$nesterov,
    UnitAttr:$maximize
  );
  let results = (outs Variadic<AnyRankedTensor>:$results);
  let assemblyFormat = [{
    `params` ` ` `[` $params `]` `grads` ` ` `[` $grads `]`
    (`momentum_buffers` ` ` `[` $momentum_buffers^ `]`)?
    (`step` $step^)?
    custom<Hyperparams>($hyperparams, type($hyperparams), $hyperparam_names)
    attr-dict
    `:` custom<SGDTypes>(type($params), type($grads),
                         ref($momentum_buffers), type($momentum_buffers),
                         ref($step), type($step))
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    ::mlir::ResultRange getNewParams();
    ::mlir::ResultRange getNewMomentumBuffers();
    /// The new step counter, or null without momentum.
    ::mlir::Value getNewStep();
    /// The run-time value of float option `name` (a `tensor<f64>`), or null
    /// when the option is an attribute.
    ::mlir::Value getHyperparam(::llvm::StringRef name);
  }];
}

def Spmd_AdamOp : Spmd_Op<"adam", [
    Pure, AttrSizedOperandSegments,
    DeclareOpInterfaceMethods<InferTypeOpInterface>]> {
  let summary = "one step of torch.optim.Adam / AdamW over a parameter group";
  let description = [{
    Updates every parameter of one group with exactly torch's formulas and
    order (`torch.optim.Adam`, or `torch.optim.AdamW` when
    `decoupled_weight_decay` is set; foreach form, `capturable=False`). For
    each parameter `p` with gradient `g`, first moment `m`, second moment
    `v`, max second moment `vmax` (amsgrad only) and step `t`:

    ```
    if maximize:                 g = -g
    t = t + 1
    if weight_decay:
        if decoupled_weight_decay: p = p * (1 - lr * weight_decay)
        else:                      g = g + weight_decay * p
    m = lerp(m, g, 1 - beta1)
    v = beta2 * v + (1 - beta2) * g * g
    bias_correction1 = 1 - beta1 ** t           # in float64, as torch
    bias_correction2 = 1 - beta2 ** t
    step_size = lr / bias_correction1
    if amsgrad: vmax = max(vmax, v); d = sqrt(vmax)
    else:       d = sqrt(v)
    d = d / sqrt(bias_correction2) + eps
    p = p - step_size * m / d
    ```

    Steps are per parameter, `tensor<f32>` as torch keeps them. The types
    after the colon are the parameters'; gradients and moments have the
    same. The results are the new parameters, first moments, second moments,
    max second moments (amsgrad only) and steps, in that order.

    Float options a training loop changes (an LR scheduler, OneCycleLR's
    beta1) are run-time values: `hyperparams(lr = %lr, beta1 = %b1)` gives
    them as `tensor<f64>` operands read on every call, in place of the
    attribute of the same name (`lr`, `beta1`, `beta2`, `eps`,
    `weight_decay`); a run-time `weight_decay` means the decay is applied.

    ```mlir
    %p, %m, %v, %t = spmd.adam params [%w] grads [%g] exp_avgs [%m0]
        exp_avg_sqs [%v0] steps [%t0]
        {lr = 1.0e-03, weight_decay = 1.0e-02, decoupled_weight_decay}
        : tensor<16x8xf32>
    %p2, %m2, %v2, %t2 = spmd.adam params [%w] grads [%g] exp_avgs [%m0]
        exp_avg_sqs [%v0] steps [%t0] hyperparams(lr = %lr, beta1 = %b1)
        : tensor<16x8xf32>
    ```
  }];
  let arguments = (ins
    Variadic<AnyRankedTensor>:$params,
    Variadic<AnyRankedTensor>:$grads,
    Variadic<AnyRankedTensor>:$exp_avgs,
    Variadic<AnyRankedTensor>:$exp_avg_sqs,
    Variadic<AnyRankedTensor>:$max_exp_avg_sqs,
    Variadic<0DTensorOf<[F32]>>:$steps,
    Variadic<0DTensorOf<[F64]>>:$hyperparams,
    OptionalAttr<StrArrayAttr>:$hyperparam_names,
    OptionalAttr<F64Attr>:$lr,
    DefaultValuedAttr<F64Attr, "0.9">:$beta1,
    DefaultValuedAttr<F64Attr, "0.999">:$beta2,
    DefaultValuedAttr<F64Attr, "1.0e-8">:$eps,
    DefaultValuedAttr<F64Attr, "0.0">:$weight_decay,
    UnitAttr:$amsgrad,
    UnitAttr:$maximize,
    UnitAttr:$decoupled_weight_decay
  );
  let results = (outs Variadic<AnyRankedTensor>:$results);
  let assemblyFormat = [{
    `params` ` ` `[` $params `]` `grads` ` ` `[` $grads `]`
    `exp_avgs` ` ` `[` $exp_avgs `]` `exp_avg_sqs` ` ` `[` $exp_avg_sqs `]`
    (`max_exp_avg_sqs` ` ` `[` $max_exp_avg_sqs^ `]`)?
    `steps` ` ` `[` $steps `]`
    custom<Hyperparams>($hyperparams, type($hyperparams), $hyperparam_names)
    attr-dict
    `:` custom<AdamTypes>(type($params), type($grads), type($exp_avgs),
                          type($exp_avg_sqs), ref($max_exp_avg_sqs),
                          type($max_exp_avg_sqs), ref($steps), type($steps))
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    ::mlir::ResultRange getNewParams();
    ::mlir::ResultRange getNewExpAvgs();
    ::mlir::ResultRange getNewExpAvgSqs();
    ::mlir::ResultRange getNewMaxExpAvgSqs();
    ::mlir::ResultRange getNewSteps();
    /// The run-time value of float option `name` (a `tensor<f64>`), or null
    /// when the option is an attribute.
    ::mlir::Value getHyperparam(::llvm::StringRef name);
  }];
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

def Spmd_AttentionOp : Spmd_Op<"attention", [Pure]> {
  let summary = "scaled dot-product attention, keeping the log-sum-exp";
  let description = [{
    `softmax(query @ key^T * scale + mask) @ value` per batch and head, as
    `F.scaled_dot_product_attention` computes it, and the log-sum-exp of
    each row of the (scaled, masked) scores, which `spmd.attention_grad`
    recomputes the softmax from. Shapes: query `B x H x L x E`, key
    `B x H x S x E`, value `B x H x S x Ev`; results `B x H x L x Ev` and
    `B x H x L`. Grouped-query attention repeats key and value heads before
    the op (the bridge does).

    `mask`, when given, is added to the scores (`-inf` masks a position;
    a boolean mask is converted before the op): `Bm x Hm x Lm x S` with each
    of `Bm`, `Hm`, `Lm` equal to 1 (broadcast) or to `B`, `H`, `L`.
    `causal` masks key positions after the query's (top-left aligned, as
    PyTorch's `is_causal`); it excludes `mask`. A row whose every position
    is masked yields zeros and a log-sum-exp of `-inf`.

    Lowered flash-attention style (`--spmd-lower-to-cpu`: libSpmdRuntime's
    `spmdAttentionForward`): scores in blocks with an online softmax, never
    an `L x S` tensor; operands are read and written by strides, so a head
    transpose around the op is a view, not a copy (`spmd-lower-attention`).
    Batch and heads shard freely; the sequence and head dimensions are
    computed whole. f32 only (16-bit autocast attention is traced as its
    math by the bridge). On the GPU path: libSpmdGpuRuntime's fused kernels
    for head dimensions up to 128, above that decomposed into linalg
    (`spmd-decompose-attention`: the scores materialized).

    ```mlir
    %o, %lse = spmd.attention %q, %k, %v {causal, scale = 0.125 : f64}
        : tensor<2x4x64x32xf32>, tensor<2x4x64x32xf32>, tensor<2x4x64x32xf32>
        -> tensor<2x4x64x32xf32>, tensor<2x4x64xf32>
    %p, %l = spmd.attention %q, %k, %v mask %m {scale = 0.125 : f64}
        : tensor<2x4x64x32xf32>, tensor<2x4x64x32xf32>, tensor<2x4x64x32xf32>,
          tensor<2x1x1x64xf32> -> tensor<2x4x64x32xf32>, tensor<2x4x64xf32>
    ```
  }];
  let arguments = (ins
    4DTensorOf<[F32]>:$query, 4DTensorOf<[F32]>:$key, 4DTensorOf<[F32]>:$value,
    Optional<4DTensorOf<[F32]>>:$mask, F64Attr:$scale, UnitAttr:$causal);
  let results = (outs 4DTensorOf<[F32]>:$out, 3DTensorOf<[F32]>:$lse);
  let assemblyFormat = [{
    $query `,` $key `,` $value (`mask` $mask^)? attr-dict
    `:` type($query) `,` type($key) `,` type($value) (`,` type($mask)^)?
    `->` type($out) `,` type($lse)
  }];
  let hasVerifier = 1;
}

def Spmd_AttentionGradOp : Spmd_Op<"attention_grad", [
    Pure, AllTypesMatch<["query", "grad_query"]>,
    AllTypesMatch<["key", "grad_key"]>,
    AllTypesMatch<["value", "grad_value"]>]> {
  let summary = "the gradients of spmd.attention from its saved results";
  let description = [{
    Given the gradient of `spmd.attention`'s output, its operands and
    attributes, and its results (`out`, `lse`), yields the gradients of
    query, key and value (the mask gets none). The softmax is recomputed
    from `lse` block by block (flash-attention's backward): with
    `P = exp(query @ key^T * scale + mask - lse)` and
    `D = rowsum(grad * out)`,
    `dV = P^T @ grad`, `dS = P * (grad @ value^T - D)`,
    `dQ = dS @ key * scale`, `dK = dS^T @ query * scale`.
    Shapes and mask as `spmd.attention`; results have the types of query,
    key and value.

    ```mlir
    %dq, %dk, %dv = spmd.attention_grad %g, %q, %k, %v, %o, %lse
        {causal, scale = 0.125 : f64}
        : tensor<2x4x64x32xf32>, tensor<2x4x64x32xf32>, tensor<2x4x64x32xf32>,
          tensor<2x4x64x32xf32>, tensor<2x4x64x32xf32>, tensor<2x4x64xf32>
    ```
  }];
  let arguments = (ins
    4DTensorOf<[F32]>:$grad, 4DTensorOf<[F32]>:$query, 4DTensorOf<[F32]>:$key,
    4DTensorOf<[F32]>:$value, 4DTensorOf<[F32]>:$out, 3DTensorOf<[F32]>:$lse,
    Optional<4DTensorOf<[F32]>>:$mask, F64Attr:$scale, UnitAttr:$causal);
  let results = (outs 4DTensorOf<[F32]>:$grad_query,
                      4DTensorOf<[F32]>:$grad_key,
                      4DTensorOf<[F32]>:$grad_value);
  let assemblyFormat = [{
    $grad `,` $query `,` $key `,` $value `,` $out `,` $lse
    (`mask` $mask^)? attr-dict
    `:` type($grad) `,` type($query) `,` type($key) `,` type($value) `,`
        type($out) `,` type($lse) (`,` type($mask)^)?
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Recomputation
//===----------------------------------------------------------------------===//

def Spmd_OptimizationBarrierOp : Spmd_Op<"optimization_barrier", [
    AllTypesMatch<["input", "result"]>,
    MemoryEffects<[MemRead<DefaultResource>, MemWrite<DefaultResource>]>]> {
  let summary = "the input itself, which transformations do not look through";
  let description = [{
    Returns `input` unchanged. What makes it useful is what it prevents: it
    declares a read and a write of memory, so CSE does not merge two ops that
    differ only by reading the input directly or through a barrier, and no
    pass moves it or the ops after it that use it above where it stands. The
    bridge puts one on each value of the forward that an activation
    checkpointing region's recomputation in the backward reads
    (`torch.utils.checkpoint`, `spmd.compile(activation_checkpointing=...)`):
    without it, CSE would merge the recomputed ops back into the forward's
    and keep their activations alive across the whole step (XLA's
    `opt-barrier` plays the same role in JAX's `remat`).

    It has the placement of its input (sharding rule: identity, linear), and
    is removed before bufferization (`spmd-remove-optimization-barriers`),
    where nothing merges or hoists tensor ops any more: the result is the
    input's buffer, no copy.

    ```mlir
    %x2 = spmd.optimization_barrier %x : tensor<4x512x512xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

//===----------------------------------------------------------------------===//
// State
//===----------------------------------------------------------------------===//

def Spmd_StateOp : Spmd_Op<"state", [
    Symbol, DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "a named tensor that lives across train steps";
  let description = [{
    Declares a parameter, buffer or optimizer state tensor by name (its
    PyTorch FQN, e.g. `"layer1.weight"` or `"layer1.weight.exp_avg"`). The
    runtime binds the name to a buffer the caller owns or allocates one, so
    state stays in place between steps and checkpoints go by name. `type` is
    the global type; `spec` (default: replicated) says how the ranks hold
    it, and expansion gives sharded state its local type. Role `output`
    marks a value the step hands back to its host through the registry (the
    Python bridge's loss), rather than a tensor of the model. Role
    `gradient` holds a parameter's gradient between steps (PyTorch's
    `.grad`: the bridge's `<FQN>.grad`, read when a step accumulates into
    gradients left by an earlier call, written when one is left after it).

    ```mlir
    spmd.mesh @dp(shape = 4)
    spmd.state @"fc.weight" : tensor<16x8xf32> role = param
    spmd.state @"fc.weight.exp_avg" : tensor<16x8xf32> role = optimizer_state
        spec = <@dp, [shard<0>]>
    ```

    Only static shapes are supported (state C1).
  }];
  let arguments = (ins
    SymbolNameAttr:$sym_name,
    TypeAttrOf<AnyRankedTensor>:$type,
    Spmd_StateRole:$role,
    OptionalAttr<Spmd_SpecAttr>:$spec
  );
  let assemblyFormat = [{
    $sym_name `:` $type `role` `=` $role (`spec` `=` $spec^)? attr-dict
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    ::mlir::RankedTensorType getTensorType() {
      return ::llvm::cast<::mlir::RankedTensorType>(getType());
    }
  }];
}

def Spmd_LoadOp : Spmd_Op<"load", [
    MemoryEffects<[MemRead<Spmd_StateResource>]>,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "reads a state tensor";
  let description = [{
    Yields the current value of state `state`. The result type is the
    state's type.

    ```mlir
    %w = spmd.load @"fc.weight" : tensor<16x8xf32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$state);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$state attr-dict `:` type($result)";
}

def Spmd_StoreOp : Spmd_Op<"store", [
    MemoryEffects<[MemWrite<Spmd_StateResource>]>,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "writes a state tensor";
  let description = [{
    Makes `value` the new value of state `state`; later loads in the same
    step and the next step see it. The value's type is the state's type.

    ```mlir
    spmd.store %w1 to @"fc.weight" : tensor<16x8xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$value, FlatSymbolRefAttr:$state);
  let assemblyFormat = "$value `to` $state attr-dict `:` type($value)";
}

#endif // SPMD_DIALECT_SPMD_IR_SPMDOPS_TD
