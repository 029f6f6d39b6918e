//===- Passes.td - spmd transformation passes -------------*- tablegen -*-===//

#ifndef SPMD_DIALECT_SPMD_TRANSFORMS_PASSES_TD
#define SPMD_DIALECT_SPMD_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def SpmdDecomposeOptimizersPass
    : Pass<"spmd-decompose-optimizers", "::mlir::func::FuncOp"> {
  let summary = "Rewrites spmd.sgd / spmd.adam into foreach ops, as torch does";
  let description = [{
    Replaces each optimizer op with the sequence of foreach ops torch's
    foreach implementation runs (`torch.optim.sgd._multi_tensor_sgd`,
    `torch.optim.adam._multi_tensor_adam` with `capturable=False`), in the
    same order and with the same scalars, so float32 results match torch to
    rounding. Scalars torch computes in Python floats (`1 - dampening`,
    `-lr`, Adam's bias corrections from the step counter) are computed in
    f64 here and converted to the element type by the foreach ops, as the
    ATen kernels convert Python scalars.

    SGD's first step (torch: "momentum buffer is None", the buffer becomes a
    copy of the gradient) is expressed with coefficients chosen from the step
    counter: `buf = m * buf + d * g` with `(m, d) = (0, 1)` on step 0 and
    `(momentum, 1 - dampening)` after. This equals torch exactly as long as
    the buffer holds finite values before the first step (the runtime and
    the bridge zero-initialize optimizer state). Without dampening (0, known
    when compiling: not a run-time hyperparameter) the two pairs give the
    same buffer on step 0, since the buffer is zeros then (`momentum * 0 +
    g` is `g`), so the update uses `(momentum, 1)` on every step and does
    not read the counter, which it still increments: on the GPU the
    optimizer is then one kernel instead of two around the counter (a
    kernel cannot both read a counter in every thread and increment it).

    Before:
    ```mlir
    %p, %t = spmd.adam params [%w] grads [%g] exp_avgs [%m] exp_avg_sqs [%v]
        steps [%s] {lr = 1.0e-03 : f64} : tensor<16xf32>
    ```
    After (abridged):
    ```mlir
    %s1 = spmd.foreach_add_scalar [%s] scalar [%one] : tensor<f32>, f64
    %m1 = spmd.foreach_lerp [%m], [%g] weight [%c0_1] : tensor<16xf32>, f64
    %v0 = spmd.foreach_mul_scalar [%v] scalar [%c0_999] : tensor<16xf32>, f64
    %v1 = spmd.foreach_addcmul [%v0], [%g], [%g] value [%c0_001] : tensor<16xf32>, f64
    ... bias corrections from %s1 in f64 ...
    %d0 = spmd.foreach_sqrt [%v1] : tensor<16xf32>
    %d1 = spmd.foreach_div_scalar [%d0] scalar [%bc2_sqrt] : tensor<16xf32>, f64
    %d2 = spmd.foreach_add_scalar [%d1] scalar [%eps] : tensor<16xf32>, f64
    %p1 = spmd.foreach_addcdiv [%w], [%m1], [%d2] value [%step_size] : tensor<16xf32>, f64
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::tensor::TensorDialect"];
  let statistics = [
    Statistic<"numSGD", "num-sgd", "Number of spmd.sgd ops decomposed">,
    Statistic<"numAdam", "num-adam", "Number of spmd.adam ops decomposed">,
  ];
}

def SpmdDecomposeAttentionPass
    : Pass<"spmd-decompose-attention", "::mlir::func::FuncOp"> {
  let summary = "Rewrites spmd.attention / attention_grad into linalg";
  let description = [{
    Computes attention as eager's math path does, in `linalg.generic` ops on
    tensors: the scaled, masked scores `B x H x L x S` (a contraction over
    the head size, then scale, mask and causal `-inf` by `linalg.index`),
    the row maximum, `exp(scores - max)` (0 for a row with nothing to
    attend to), the row sum, `lse = max + log(sum)`, and `P V / sum`; the
    backward recomputes `P = exp(scores - lse)` and forms `dV = P^T dO`,
    `dP = dO V^T`, `D = rowsum(dO * O)`, `dS = P (dP - D)`,
    `dQ = scale dS K`, `dK = scale dS^T Q`.

    The GPU pipeline (`spmd-lower-to-nvvm`) runs it: its kernels come from
    linalg, and a fused attention kernel is not generated yet, so the
    scores are materialized there (memory quadratic in the sequence). The
    CPU pipeline lowers the ops to flash kernels instead
    (`spmd-lower-attention`).
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::arith::ArithDialect"];
}

def SpmdDecomposeForeachPass
    : Pass<"spmd-decompose-foreach", "::mlir::func::FuncOp"> {
  let summary = "Rewrites foreach ops into fused per-tensor linalg.generic ops";
  let description = [{
    Turns the foreach ops of each block into `linalg.generic` ops on tensors,
    one per foreach result that is used outside the foreach ops (an "output
    tensor"). The generic's body holds the whole elementwise expression that
    produces the value, through chains of foreach ops, so an optimizer's
    update of one tensor is one loop (Adam's new parameter: one generic that
    reads the parameter, gradient and both moments). A foreach value used
    both by other foreach ops and elsewhere is materialized by its own
    generic and recomputed inside its consumers (elementwise math is cheaper
    than a round trip through memory).

    The scalar formulas, and their evaluation order, are torch's ATen CPU
    kernels' (e.g. `addcdiv` is `x + (s * y) / z`, `lerp` switches formula at
    `|s| = 0.5`); see the foreach op descriptions.

    Before:
    ```mlir
    %0 = spmd.foreach_mul_scalar [%v] scalar [%b2] : tensor<16xf32>, f64
    %1 = spmd.foreach_addcmul [%0], [%g], [%g] value [%c] : tensor<16xf32>, f64
    ```
    After:
    ```mlir
    %1 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
        ins(%v, %g : tensor<16xf32>, tensor<16xf32>) outs(%e : tensor<16xf32>) {
    ^bb0(%vi: f32, %gi: f32, %out: f32):
      %a = arith.mulf %vi, %b2f : f32
      %b = arith.mulf %cf, %gi : f32
      %c = arith.mulf %b, %gi : f32
      %d = arith.addf %a, %c : f32
      linalg.yield %d : f32
    } -> tensor<16xf32>
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::tensor::TensorDialect"];
  let statistics = [
    Statistic<"numGenerics", "num-generics",
              "Number of linalg.generic ops created">,
    Statistic<"numForeach", "num-foreach", "Number of foreach ops removed">,
  ];
}

def SpmdFoldTransposeIntoMatmulPass
    : Pass<"spmd-fold-transpose-into-matmul", "::mlir::func::FuncOp"> {
  let summary = "Reads a transposed matmul operand through the indexing map";
  let description = [{
    On tensors: a `linalg.matmul` with the default indexing maps whose
    operand is a 2-D `linalg.transpose` (permutation [1, 0]) reads the
    transpose's input instead, through a transposed indexing map: `(n, k)`
    for the right operand, `(k, m)` for the left one. The same products in
    the same order, without materializing the transposed copy (PyTorch's
    `linear` is `x @ W^T`, which torch-mlir imports as a transpose and a
    matmul). Part of `spmd-lower-to-cpu` and `spmd-lower-to-nvvm`, where
    the BLAS calls take transposed operands directly. Likewise a
    `linalg.batch_matmul` whose operand is a [0, 2, 1] transpose (attention's
    `q @ k^T`, and `p^T @ dy` in its backward): `(b, n, k)` or `(b, k, m)`,
    for the strided-batched GEMM's transposition flag.
    ```mlir
    %t = linalg.transpose ins(%w : tensor<16x8xf32>) outs(%e : tensor<8x16xf32>) permutation = [1, 0]
    %y = linalg.matmul ins(%x, %t : tensor<4x8xf32>, tensor<8x16xf32>) outs(%z : tensor<4x16xf32>) -> tensor<4x16xf32>
    // becomes
    %y = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>,
                                        affine_map<(m, n, k) -> (n, k)>,
                                        affine_map<(m, n, k) -> (m, n)>]
        ins(%x, %w : tensor<4x8xf32>, tensor<16x8xf32>) outs(%z : tensor<4x16xf32>) -> tensor<4x16xf32>
    ```
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect"];
}

def SpmdOverlapCollectivesPass
    : Pass<"spmd-overlap-collectives", "::mlir::func::FuncOp"> {
  let summary = "Starts collectives early and waits for them late";
  let description = [{
    On a local program (after `spmd-distribute`): every synchronous
    collective at the top level of a function becomes asynchronous, starts
    right after its inputs are computed, and is waited for right before the
    first use of a result, so the work in between (the rest of the backward
    pass after a gradient's all-reduce) overlaps the communication: NCCL
    runs it on its own stream; MPI's non-blocking collectives progress
    while the rank is in the runtime. Every rank moves the same collectives
    the same way, so all still issue them in one order. Results and
    numerics are unchanged. Collectives inside nested regions are left as
    they are.
    ```mlir
    %g = linalg.matmul ...
    %h = linalg.generic ...           // independent work
    %r = spmd.all_reduce %g on @dp axes = [0] sum : tensor<8xf32> -> tensor<8xf32>
    %u = arith.addf %r, %h : tensor<8xf32>
    // becomes
    %g = linalg.matmul ...
    %f = spmd.all_reduce %g on @dp axes = [0] sum : tensor<8xf32> -> !spmd.future<tensor<8xf32>>
    %h = linalg.generic ...
    %r = spmd.wait %f : !spmd.future<tensor<8xf32>>
    %u = arith.addf %r, %h : tensor<8xf32>
    ```
    `prefetch-parameters=1`: an all_gather of a parameter
    (`isParameterGather`) starts no earlier than right after the wait of the
    previous parameter gather, as FSDP prefetches one module ahead, instead
    of as soon as its input exists (the function's start, where every
    gathered parameter would then be alive at once).
  }];
  let options = [
    Option<"prefetchParameters", "prefetch-parameters", "bool", "false",
           "start each parameter all_gather after the previous one's wait">
  ];
}

def SpmdRegatherParametersPass
    : Pass<"spmd-regather-parameters", "::mlir::func::FuncOp"> {
  let summary = "Gathers a sharded parameter again before its distant uses";
  let description = [{
    FSDP's `reshard_after_forward`, on a local program (after
    `spmd-distribute`, before `spmd-overlap-collectives`): a parameter
    stored sharded is all-gathered once, so its whole copy lives from its
    first use (forward) to its last (backward). Here each synchronous
    `spmd.all_gather` of a parameter (`isParameterGather`: its input is the
    `spmd.load` of a `param` state, through the pad of an uneven chunk) is
    repeated before every later group of its uses that starts more than
    `min-gap` of the function's ops after the previous use; each group reads
    its own gather (with the slice that cuts an uneven gather's padding), so
    the copy the forward read is dead after it. The last layer's uses, close
    together, keep one gather (as FSDP keeps the root's). Results are
    unchanged; communication grows by one gather per regrouped use. With
    `spmd-overlap-collectives{prefetch-parameters=1}` the copies start one
    parameter gather ahead of their use instead of at the function's start.
    ```mlir
    %w = spmd.all_gather %s on @dp axes = [0] gather_dim = 0 : tensor<4x8xf32> -> tensor<8x8xf32>
    %y = linalg.matmul ins(%x, %w ...)      // forward
    ...                                     // more than min-gap ops
    %d = linalg.matmul ins(%g, %w ...)      // backward
    // becomes
    %w = spmd.all_gather %s ...
    %y = linalg.matmul ins(%x, %w ...)
    ...
    %w2 = spmd.all_gather %s on @dp axes = [0] gather_dim = 0 : tensor<4x8xf32> -> tensor<8x8xf32>
    %d = linalg.matmul ins(%g, %w2 ...)
    ```
  }];
  let options = [
    Option<"minGap", "min-gap", "double", "0.1",
           "the fraction of the function's ops between two uses of a "
           "gathered parameter beyond which the later one gathers again">
  ];
}

def SpmdBoundReductionsInFlightPass
    : Pass<"spmd-bound-reductions-in-flight", "::mlir::func::FuncOp"> {
  let summary = "Waits for a reduction before later ones pile up";
  let description = [{
    After `spmd-overlap-collectives` and `spmd-bucket-collectives` (the
    bridge's pipeline runs it by default). A reduction of gradients
    (asynchronous `spmd.all_reduce` or `spmd.reduce_scatter`) is first used
    by the optimizer at the end of the step, so overlap alone waits for all
    of them there: every bucket's input, a whole gradient, stays alive
    until then, and the step's peak holds every gradient whole (under
    fully_shard twice the gradient chunks a rank keeps, for nothing). Here,
    in the order the reductions start, the waits of the k-th move to right
    before the start of the (k + `max-in-flight`)-th when they were later:
    at most `max-in-flight` reductions are in flight at any point, each
    still overlapping the backward computation of the next ones, and each
    bucket's input is freed once its reduction is waited for. Every rank
    moves the same waits, so the collectives' order is unchanged; results
    and numerics are unchanged. `max-in-flight=0` leaves the waits alone.

    ```mlir
    %f0 = spmd.reduce_scatter %g0 ... -> !spmd.future<tensor<4xf32>>
    %f1 = spmd.reduce_scatter %g1 ... -> !spmd.future<tensor<4xf32>>
    %f2 = spmd.reduce_scatter %g2 ... -> !spmd.future<tensor<4xf32>>
    %r0 = spmd.wait %f0 ...
    // becomes, with max-in-flight=2
    %f0 = spmd.reduce_scatter %g0 ...
    %f1 = spmd.reduce_scatter %g1 ...
    %r0 = spmd.wait %f0 ...
    %f2 = spmd.reduce_scatter %g2 ...
    ```
  }];
  let options = [
    Option<"maxInFlight", "max-in-flight", "int64_t", "2",
           "reductions in flight at most (0: unbounded)">
  ];
}

def SpmdBucketCollectivesPass
    : Pass<"spmd-bucket-collectives", "::mlir::func::FuncOp"> {
  let summary = "Merges independent collectives into buckets run at once";
  let description = [{
    After `spmd-overlap-collectives` (the bridge's pipeline runs it by
    default): asynchronous `spmd.all_reduce`s of one static tensor each,
    with one mesh, axes, kind and element type, in the order they start (the
    order their inputs are ready), are grouped into buckets as DDP groups
    gradients: a member joins, and the bucket closes once it holds
    `bucket-bytes` or more (the first bucket of each kind:
    `first-bucket-bytes`, as DDP's small first bucket). Each bucket's inputs are flattened and
    concatenated (`tensor.insert_slice` into one 1-D tensor), reduced by one
    asynchronous all_reduce where the bucket's last member started, waited
    for where its first member was, and each result is cut back out
    (`tensor.extract_slice` and a reshape). A member joins a bucket only if
    no result of the bucket is used before it starts (a bucket never waits
    for itself). The result of every element is the same reduction of the
    same values; the library may sum a larger buffer in another order
    (float results then differ by rounding, as DDP's). Left alone:
    synchronous collectives, collectives with several operands or dynamic
    shapes. FSDP's `reduce_scatter`s and `all_gather`s on dimension 0 are
    bucketed the same way, each member laid out `[ranks, elements]` (a
    rank's chunk is one contiguous run) and the members concatenated along
    the elements, so one collective on dimension 0 moves every member's
    chunk to its rank; on other dimensions they are left alone. One of
    `bucket-bytes` or more runs alone (its stripes in a bucket are no
    contiguous run of it, so a bucket would copy it whole on the way in or
    out: a gradient could not be computed into its slot, a gathered
    parameter would be cut back out), and the open bucket stays open for
    the smaller ones after it. `bucket-bytes=0` turns it off.
    ```mlir
    %f1 = spmd.all_reduce %g1 on @dp axes = [0] sum : tensor<8x4xf32> -> !spmd.future<tensor<8x4xf32>>
    %f2 = spmd.all_reduce %g2 on @dp axes = [0] sum : tensor<4xf32> -> !spmd.future<tensor<4xf32>>
    %r1 = spmd.wait %f1 : !spmd.future<tensor<8x4xf32>>
    %r2 = spmd.wait %f2 : !spmd.future<tensor<4xf32>>
    // becomes
    %c1 = tensor.collapse_shape %g1 [[0, 1]] : tensor<8x4xf32> into tensor<32xf32>
    %b0 = tensor.empty() : tensor<36xf32>
    %b1 = tensor.insert_slice %c1 into %b0[0] [32] [1] : tensor<32xf32> into tensor<36xf32>
    %b2 = tensor.insert_slice %g2 into %b1[32] [4] [1] : tensor<4xf32> into tensor<36xf32>
    %f = spmd.all_reduce %b2 on @dp axes = [0] sum : tensor<36xf32> -> !spmd.future<tensor<36xf32>>
    %r = spmd.wait %f : !spmd.future<tensor<36xf32>>
    %s1 = tensor.extract_slice %r[0] [32] [1] : tensor<36xf32> to tensor<32xf32>
    %r1 = tensor.expand_shape %s1 [[0, 1]] output_shape [8, 4] : tensor<32xf32> into tensor<8x4xf32>
    %r2 = tensor.extract_slice %r[32] [4] [1] : tensor<36xf32> to tensor<4xf32>
    ```
  }];
  let options = [
    Option<"bucketBytes", "bucket-bytes", "int64_t", "26214400",
           "the most bytes of a bucket (25 MiB, as DDP); 0: no buckets">,
    Option<"firstBucketBytes", "first-bucket-bytes", "int64_t", "1048576",
           "the most bytes of the first bucket of each kind (1 MiB, as "
           "DDP): the first gradients start reducing early">
  ];
  let dependentDialects = ["::mlir::tensor::TensorDialect"];
}

def SpmdPrintShardingRulesPass
    : Pass<"spmd-print-sharding-rules", "::mlir::ModuleOp"> {
  let summary = "Reports each op's sharding rule as a remark (for tests)";
  let description = [{
    Makes the `ShardingRuleOpInterface` rules visible, as Shardy's
    `op_sharding_rule_registry` tests do: every op with a rule gets a remark
    `sharding rule: (<operands>) -> (<results>) {<factors>}` where each
    tensor lists the factor of each dimension (`f0`, `f1`, ...; `-` for
    none), and each factor its size and what limits it: `reduction` (with
    its combiner, or `no combiner`: then it is never sharded), `fixed`
    (the op reads its global position), `even` (only an evenly divisible
    size may be sharded), `group g` when the op has several groups; then
    `linear in {i, j}` for each set of operands the op is jointly linear
    in. An op on tensors the interface knows but that has no rule for this
    instance gets `sharding rule: none` (it is computed replicated); scalar
    ops get nothing. The IR is unchanged.

    ```
    %0 = linalg.matmul ins(%a, %b : tensor<8x4xf32>, tensor<4x2xf32>) ...
    // remark: sharding rule: ([f0, f2], [f2, f1], [f0, f1]) -> ([f0, f1])
    //   {f0 = 8, f1 = 2, f2 = 4 reduction sum}; linear in {0}, {1}
    ```
  }];
}

def SpmdReportCollectivesPass
    : Pass<"spmd-report-collectives", "::mlir::ModuleOp"> {
  let summary = "Prints a local program's meshes, state and collectives as JSON";
  let description = [{
    An analysis for tools (`spmd.explain` reads it); the IR is unchanged.
    On a local program (after `spmd-distribute`), prints to stdout one JSON
    object per line: each `spmd.mesh` (`{"kind": "mesh", "name", "shape"}`),
    each `spmd.state` (`"state"`: name, role, local type, bytes), then each
    collective in program order (`"collective"`: `op`, `reduction` for
    all_reduce / reduce_scatter, `mesh`, `axes`, the input `types`, `bytes`
    sent per rank (the inputs' sizes), whether it is `async` (returns a
    future), and `feeds`: the state its results reach, following uses
    through every op up to an optimizer op that takes them as gradient i
    (then parameter i's state) or a `spmd.store` (that state)); a bucket
    (`spmd-bucket-collectives`: the result only cut into slices) also lists
    its `pieces`, each slice's `bytes` and `feeds`.

    ```
    {"kind":"collective","op":"all_reduce","reduction":"sum","mesh":"world",
     "axes":[0],"types":["tensor<50x16xf32>"],"bytes":3200,"async":true,
     "feeds":["tok.weight"]}
    ```
  }];
}

def SpmdPropagatePass : Pass<"spmd-propagate", "::mlir::ModuleOp"> {
  let summary = "Gives every tensor value a placement (DTensor propagation)";
  let description = [{
    Decides, for a global program, how every tensor value is laid out over
    the function's mesh, and records it where a user can see it: each placed
    op gets `spmd.result_specs` (one spec per result) and `spmd.strategy`
    (per factor group and mesh axis: the sharded factor, `-1` replicate, or
    a negative code for a Partial pass-through); function arguments and
    results without a spec get the one found.

    Sources are fixed: `spmd.spec` on arguments, `spmd.annotate` (which also
    states the layout of its input) and `spmd.redistribute` results, and
    loaded state (its `spmd.state` spec; replicated by default). Every other
    op is placed by its ShardingRule, one sweep in program order: per factor
    group and mesh axis it takes the candidate with the least communication
    under DTensor's cost model (bytes per rank: all_gather and
    reduce_scatter (n-1)/n, all_reduce 2(n-1)/n, all_to_all (n-1)/n², local
    slices free) to bring its operands to what it needs, plus the cost of
    bringing its results to the spec a later annotate, store or return asks
    for; ties go to fewer local re-slices of replicated data, then to sharded
    compute. A contraction or reduction over a sharded factor yields
    `partial<kind>`; linear ops (add/sub of partials, scaling by a
    replicated value, transposes, reshapes, sums, matmul with one partial
    side) keep it; everything else resolves it.

    Errors: specs of several meshes in one function; an annotation that
    contradicts its input's fixed spec (a note points at the other source);
    ops with regions on tensors (`scf.for`, ...); collectives in the input.

    Unsupported, computed replicated: ops without a rule (tensor slicing,
    padding, concatenation, calls), linalg payloads that read
    `linalg.index`, and sharding of dynamic dimensions.

    ```mlir
    // before
    %y = linalg.matmul ins(%x, %w : tensor<8x4xf32>, tensor<4x2xf32>) ...
    // after, with %x sharded on its rows
    %y = linalg.matmul {spmd.result_specs = [#spmd.spec<@dp, [shard<0>]>],
                        spmd.strategy = #spmd.strategy<[factor<0>]>}
        ins(%x, %w ...) ...
    ```
  }];
}

def SpmdExpandPass : Pass<"spmd-expand", "::mlir::ModuleOp"> {
  let summary = "Rewrites a placed global program to local shapes and collectives";
  let description = [{
    Turns the global program `spmd-propagate` placed into the program each
    rank runs: every value gets its local type, and wherever an op needs an
    operand in another layout than it has, the change becomes collectives
    (DTensor's table): Partial→Replicate `all_reduce`, Partial→Shard
    `reduce_scatter`, Shard→Replicate `all_gather`, Shard(i)→Shard(j)
    `all_to_all`, Replicate→Shard `spmd.local_slice` (no communication),
    Replicate→Partial local (kept on group index 0). Multi-axis specs
    change axis by axis: inner to outer to undo shards and partials, then
    outer to inner to apply the new ones. `spmd.annotate` and
    `spmd.redistribute` disappear into those collectives; returns and
    stores get their values in the function's result specs and the states'
    specs; sharded state gets local-shaped storage.

    Uneven shapes follow `torch.chunk`: a dimension of size `N` split over
    `n` ranks has chunks of `ceil(N / n)` and a dynamic local size;
    all_gather and reduce_scatter pad to `n * ceil(N / n)` and slice the
    padding off. Uneven splits over several axes, and uneven sharded state,
    are diagnosed.

    ```mlir
    // before (placed): %g partial<sum>, the update wants it replicated
    %p1 = spmd.sgd params [%p] grads [%g] ...
    // after
    %r = spmd.all_reduce %g on @dp axes = [0] sum : tensor<4x8xf32> -> tensor<4x8xf32>
    %p1 = spmd.sgd params [%p] grads [%r] ...
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect"];
}

def SpmdFoldSplatReductionsPass : Pass<"spmd-fold-splat-reductions"> {
  let summary = "Folds the sum of a splat into a splat";
  let description = [{
    A `linalg.generic` whose body is `yield(in + out)`, with reduction loops
    of static sizes, whose one input is a float splat (a splat constant or
    a `linalg.fill` of a constant) and whose init is one too, becomes the
    splat constant `init + c * (reduced elements)`, computed in double and
    rounded once (within float rounding of the element-by-element sum).
    The backward of `x.sum()` reduces a splat of ones of the batch's shape
    for a bias gradient; nothing distributed reaches that reduction, so
    without this fold every rank would materialize and sum a tensor of the
    global batch's shape. `spmd-distribute` runs it first.

    ```mlir
    %ones = arith.constant dense<1.0> : tensor<6x10xf32>
    %zero = linalg.fill ins(%c0 : f32) outs(%e : tensor<1x10xf32>) -> tensor<1x10xf32>
    %sum = linalg.generic {iterator_types = ["reduction", "parallel"], ...}
        ins(%ones : tensor<6x10xf32>) outs(%zero : tensor<1x10xf32>) { addf }
    // becomes
    %sum = arith.constant dense<6.0> : tensor<1x10xf32>
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

def SpmdEraseDeadResultsPass : Pass<"spmd-erase-dead-results"> {
  let summary = "Drops linalg.generic results nothing reads, with their payload";
  let description = [{
    A `linalg.generic` result without uses is removed together with its
    init, its indexing map, its payload block argument and the payload ops
    only it needed, when no result that stays reads its accumulator. The op
    is rebuilt with the remaining results; an op none of whose results is
    used is left to dead-code elimination. Payload ops with effects (an
    assert) stay.

    torch-mlir takes a row maximum (amax, and so log_softmax and the
    cross-entropy) with `aten.max.dim`, whose argmax nobody reads; its
    payload reads the reduced position with `linalg.index`, which keeps the
    class dimension from being sharded (see the sharding rules) and costs a
    compare and a select per element. `spmd-distribute` runs this first.

    ```mlir
    %m:2 = linalg.generic {indexing_maps = [#x, #row, #row],
                           iterator_types = ["parallel", "reduction"]}
        ins(%logits : tensor<48x16xf32>) outs(%neg_inf, %zeros : tensor<48xf32>, tensor<48xi64>) {
    ^bb0(%in: f32, %max: f32, %arg: i64):
      %i = linalg.index 1 : index
      %c = arith.index_cast %i : index to i64
      %n = arith.maximumf %in, %max : f32
      %gt = arith.cmpf ogt, %in, %max : f32
      %a = arith.select %gt, %c, %arg : i64
      linalg.yield %n, %a : f32, i64
    } -> (tensor<48xf32>, tensor<48xi64>)
    // with %m#1 unused, becomes
    %m = linalg.generic {indexing_maps = [#x, #row], iterator_types = ["parallel", "reduction"]}
        ins(%logits : tensor<48x16xf32>) outs(%neg_inf : tensor<48xf32>) {
    ^bb0(%in: f32, %max: f32):
      %n = arith.maximumf %in, %max : f32
      linalg.yield %n : f32
    } -> tensor<48xf32>
    ```
  }];
}

def SpmdVocabParallelPass
    : Pass<"spmd-vocab-parallel", "::mlir::func::FuncOp"> {
  let summary = "Keeps a large row-sharded vocabulary weight sharded: gathers the tokens instead";
  let description = [{
    Megatron's vocabulary-parallel head and loss, stated on a global program
    for propagation to follow. A head is a `linalg.matmul(%x, transpose(%w))`
    whose weight `%w` is an `spmd.load` of a state sharded by rows
    (`shard<0>` on a one-axis mesh) and at least `min-ratio` times the bytes
    of `%x`: GPT-2's tied `wte` (50257 x 768) against a batch's final hidden
    state (512 x 768). Left to propagation, fully_shard gathers that weight
    whole for the head's forward and backward and reduce-scatters its whole
    gradient. Instead:

    - `%x` is redistributed to replicated (an all-gather of the tokens) for
      every matmul that reads it, the head and its weight gradient, and the
      logits are annotated `shard<1>`: each rank computes the whole batch's
      logits for its rows of the vocabulary, and its rows of the gradient;
    - every one-hot over the vocabulary (an elementwise `cmpi eq` of ids
      against an iota of that size: the loss's pick of the target,
      `nn.Embedding`'s gradient) takes the whole batch's ids
      (redistributed to replicated) and is annotated sharded along the
      classes;
    - the rows an embedding gradient (`transpose(one-hot) . rows`) adds are
      redistributed to replicated, so it yields this rank's rows too;
    - the embedding's lookup of the gathered weight (a generic yielding
      `tensor.extract %w[index_cast(id), linalg.index]`) becomes a one-hot
      of its ids (checked against the vocabulary's bounds with the lookup's
      own assert messages) times the stored rows: each rank adds its rows'
      part for every token, a partial sum reduce-scattered to the batch.
      The weight is never gathered whole. (On the CPU the one-hot products
      run as row gathers and scatters: spmd-scatter-one-hot-contractions.)

    Propagation then keeps log_softmax along the vocabulary (its maximum and
    sum become partial: an all-reduce of one number per token) and
    reduce-scatters the hidden state's gradient (a partial sum over the
    vocabulary) back to the batch's shards.

    Unsupported (left alone): meshes of more than one axis, weights with
    dynamic shapes, heads written with `linalg.matmul` indexing maps.

    ```mlir
    %w = spmd.load @wte : tensor<50257x768xf32>      // shard<0> on @dp
    %wt = linalg.transpose ins(%w : ...) outs(...) permutation = [1, 0]
    %logits = linalg.matmul ins(%h, %wt : tensor<512x768xf32>, ...) ...
    // becomes
    %hw = spmd.redistribute %h to <@dp, [replicate]> : tensor<512x768xf32>
    %l = linalg.matmul ins(%hw, %wt : ...) ...
    %logits = spmd.annotate %l to <@dp, [shard<1>]> : tensor<512x50257xf32>
    ```
  }];
  let options = [
    Option<"minRatio", "min-ratio", "int64_t", /*default=*/"4",
           "How many times the head's input the weight must weigh (bytes)">,
  ];
  let dependentDialects = ["::mlir::spmd::SpmdDialect"];
}

def SpmdDedupCollectivesPass
    : Pass<"spmd-dedup-collectives", "::mlir::func::FuncOp"> {
  let summary = "Merges identical collectives and removes round trips";
  let description = [{
    Within each block, merges collectives (and waits, axis indices, local
    slices) that have the same kind, operands, mesh, axes and attributes, so
    several optimizer ops reading the same Partial gradient pay one
    all_reduce; and removes round trips: `local_slice(all_gather(x))` back
    to the same chunk is `x`, and `all_gather(local_slice(x))` of a
    replicated `x` is `x`.

    ```mlir
    // before
    %a = spmd.all_reduce %g on @dp axes = [0] sum : tensor<8xf32> -> tensor<8xf32>
    %b = spmd.all_reduce %g on @dp axes = [0] sum : tensor<8xf32> -> tensor<8xf32>
    // after: %b is %a
    ```
  }];
}

def SpmdAutoShardPass : Pass<"spmd-auto-shard", "::mlir::ModuleOp"> {
  let summary = "Chooses per parameter: replicated or sharded, from a cost model";
  let description = [{
    Automatic data parallelism on a global program (before
    `spmd-distribute`): for each parameter an optimizer op (`spmd.adam`,
    `spmd.sgd`) updates, it chooses between keeping it replicated (DDP:
    its gradient all-reduced) and sharding it on dimension 0 along one mesh
    axis (FSDP / ZeRO-3: the parameter all-gathered where the step uses it,
    its gradient reduce-scattered, the optimizer updating this rank's chunk
    only), minimizing the modeled time of the step's communication and
    update under a memory limit per rank.

    Per parameter of `B` bytes, with `S` bytes of companions (its optimizer
    states of its type: `exp_avgs`, `exp_avg_sqs`, `max_exp_avg_sqs`,
    `momentum_buffers`; and its `gradient` state `<name>.grad`), on an axis
    of `n` ranks (chunk `c` bytes: `ceil(dim0 / n)` rows):

    ```
    replicated: all_reduce(B)                                  memory 2B + S
                update 2 (2B + S) / memory bandwidth
    sharded:    all_gather(c) (twice with reshard-after-forward)
                + reduce_scatter(B)                            memory (2B + S) c / B
                update 2 (2B + S) c / B / memory bandwidth     + the gathered copies
    ```

    (memory: the parameter, its gradient in the step -- whole until the
    update when replicated, a chunk once reduce-scattered -- and its
    companions)

    where a collective of `x` bytes per rank costs its kind's latency plus
    `x` over its bandwidth. The gathered copies count `B` per sharded
    parameter for the whole step, or, with `reshard-after-forward`, twice
    the largest sharded parameter. Each parameter first takes its faster
    choice; while the state, the gathered copies and `reserve` exceed
    `memory-limit`, the replicated parameter that saves the most memory per
    modeled second added is sharded. The figures come from `calibration`,
    a JSON file of the keys `spmd.Auto` measures and stores in the compile
    cache (`calibration-*.json`: `memory_gbps`, and `<kind>_latency_us`,
    `<kind>_gbps` for `all_reduce`, `all_gather`, `reduce_scatter`;
    `gemm_gflops` is read and unused: data parallelism leaves the FLOPs per
    rank alone); without it, 10 GB/s and every collective 100 us + 2 GB/s.

    A sharded parameter's state, its companions and its gradient state get
    `spec = <@mesh, [..., shard<0>, ...]>`, and each of its loads is
    redistributed to replicated along that axis for every use but the
    optimizer's `params` operand, as `DataParallel("fully_shard")` writes
    it. Parameters of rank 0, ones whose state or companions already have a
    spec, and ones no optimizer op updates are left as they are.

    Unsupported, diagnosed: a limit that even every parameter sharded
    exceeds (the error gives the bytes needed), a calibration file that
    cannot be read or lacks a key, a mesh that is not there. Not modeled:
    activations and communication buffers (give them as `reserve`;
    spmd.Auto gives the replicated program's planned activations, then
    weighs the plan by its lowered program's planned peak), tensor-parallel
    splits, and other mesh shapes.

    ```mlir
    // spmd-opt --spmd-auto-shard="memory-limit=1400000 report=true"
    // (replicated, w, its gradient and exp_avg take 1.5 MiB per rank;
    // sharded, 768 KiB and its gathered copy 512 KiB)
    spmd.mesh @world(shape = 2)
    spmd.state @"w" : tensor<512x256xf32> role = param
    spmd.state @"w.exp_avg" : tensor<512x256xf32> role = optimizer_state
    // becomes:
    spmd.state @"w" : tensor<512x256xf32> role = param spec = <@world, [shard<0>]>
    spmd.state @"w.exp_avg" : tensor<512x256xf32> role = optimizer_state spec = <@world, [shard<0>]>
    // and in the step:
    %w = spmd.load @"w" : tensor<512x256xf32>
    %whole = spmd.redistribute %w to <@world, [replicate]> : tensor<512x256xf32>
    ```
  }];
  let options = [
    Option<"memoryLimit", "memory-limit", "int64_t", /*default=*/"0",
           "bytes per rank the step's state, gathered copies and reserve "
           "may take (0: no limit)">,
    Option<"reserve", "reserve", "int64_t", /*default=*/"0",
           "bytes per rank kept for what the model does not count "
           "(activations, communication buffers)">,
    Option<"calibration", "calibration", "std::string", /*default=*/"\"\"",
           "a JSON file of measured figures (spmd.Auto's calibration-*.json)">,
    Option<"reshardAfterForward", "reshard-after-forward", "bool",
           /*default=*/"false",
           "sharded parameters are gathered again for the backward "
           "(spmd-regather-parameters): two gathers, less memory">,
    Option<"meshName", "mesh", "std::string", /*default=*/"\"\"",
           "the mesh to shard over (default: the module's only mesh)">,
    Option<"axis", "axis", "int64_t", /*default=*/"0",
           "the mesh axis parameters are sharded along (the batch's)">,
    Option<"report", "report", "bool", /*default=*/"false",
           "a remark per parameter and one for the plan">,
  ];
}

def SpmdDistributePass : Pass<"spmd-distribute", "::mlir::ModuleOp"> {
  let summary = "Distributes a global program: propagate, expand, dedup, canonicalize";
  let description = [{
    The whole distribution pipeline as one flag: `spmd-erase-dead-results`,
    `spmd-fold-splat-reductions`,
    `spmd-propagate`, then `spmd-expand`, then `spmd-dedup-collectives` on every function, then one
    sweep of canonicalization (folds and dead-code removal; no region
    simplification, as expansion leaves no control flow to simplify). The
    output is what those four passes give when run one after another.

    It is one pass rather than a pass pipeline so that the program is
    verified once, after the last phase, instead of after each of the four
    (verifying linalg ops dominates the cost of distributing large train
    steps; see docs/Rationale.md). `verify-each-phase` restores a verifier
    run after every phase for debugging, as do the individual passes.

    ```mlir
    // spmd-opt --spmd-distribute train_step.mlir
    spmd.mesh @dp(shape = 4)
    func.func @step(%x: tensor<32x64xf32> {spmd.spec = #spmd.spec<@dp, [shard<0>]>}, ...)
    // becomes a per-rank program on tensor<8x64xf32> with one all_reduce
    // per gradient.
    ```
  }];
  let options = [
    Option<"verifyEachPhase", "verify-each-phase", "bool", /*default=*/"false",
           "Run the verifier after every phase, not only at the end">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect"];
}

#endif // SPMD_DIALECT_SPMD_TRANSFORMS_PASSES_TD
