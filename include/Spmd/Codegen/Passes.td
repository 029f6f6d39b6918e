//===- Passes.td - spmd code generation passes -------------*- tablegen -*-===//
//
// The code generation the CPU lowering (spmd-lower-to-cpu) runs around the
// conversion to the runtime, several of them shared with the GPU lowering
// (lib/Codegen/Common): matmuls to BLAS, elementwise fusion, attention, the
// state updated in place. The GPU's own are in GPU/Passes.td.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_CODEGEN_PASSES_TD
#define SPMD_CODEGEN_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertLinalgToBlasPass
    : Pass<"spmd-convert-linalg-to-blas", "::mlir::ModuleOp"> {
  let summary = "Runs f32 matmuls and batched matmuls on buffers through cblas_sgemm";
  let description = [{
    After bufferization: every `linalg.matmul` on f32 memrefs whose rows
    are contiguous (inner stride 1), in plain form or with one operand
    transposed through its indexing maps (`(m, k), (n, k)` or `(k, m),
    (k, n)`), becomes a call `cblas_sgemm(RowMajor, transA, transB, M, N,
    K, 1.0, A, lda, B, ldb, beta, C, ldc)`: beta = 1 since linalg.matmul
    accumulates into its init, or 0 when the init is a zero fill of the
    output right before the matmul (the fill is dropped). Every
    `linalg.batch_matmul` of the same kind (3-D operands, batch dimension
    first, maps `(b, m, k)`, `(b, k, n)` or one of them transposed) becomes
    an `scf.for` over the batch with one such call per matrix, each matrix
    addressed through the batch stride of its layout (attention's `q @ k^T`
    and `att @ v`, forward and backward). Other matmuls (other element
    types, both operands transposed, a broadcast batch operand, a column
    stride other than 1) are left for the loop lowering. The program must
    then be linked with (or run with) `libopenblas`. `function=spmdGpuSgemm`
    calls the GPU runtime's cuBLAS matmul instead (same signature, device
    pointers); with `batched-function=spmdGpuSgemmStridedBatched` a batched
    matmul is one call of that function instead of a loop: the arguments
    above, each matrix's batch stride (i64, elements) after its leading
    dimension, and the batch count (i32) last, as
    `cublasSgemmStridedBatched` takes them. With `bf16-function` (and
    `bf16-batched-function`), matmuls of bf16 operands into an f32 result
    (what autocast's matmuls are after lowering: products widened,
    accumulated in f32) become calls of those functions instead, same
    arguments (element offsets in bf16 elements for A and B).

    ```mlir
    linalg.matmul ins(%a, %b : memref<64x128xf32>, memref<128x32xf32>)
                  outs(%c : memref<64x32xf32>)
    // becomes
    func.call @cblas_sgemm(%c101, %c111, %c111, %m, %n, %k, %one, %pa, %lda,
                           %pb, %ldb, %one, %pc, %ldc)
        : (i32, i32, i32, i32, i32, i32, f32, i64, i32, i64, i32, f32, i64, i32) -> ()
    ```
  }];
  let options = [
    Option<"function", "function", "std::string", "\"cblas_sgemm\"",
           "the function to call (cblas_sgemm's signature)">,
    Option<"batched", "batched", "bool", "true",
           "also batched matmuls, as a loop of calls (the GPU lowering "
           "sets false: one call per matrix would be a launch and a host "
           "wait each)">,
    Option<"batchedFunction", "batched-function", "std::string", "\"\"",
           "with `batched`, one call of this strided-batched function per "
           "batched matmul instead of a loop of `function` calls">,
    Option<"bf16Function", "bf16-function", "std::string", "\"\"",
           "also matmuls of bf16 operands into an f32 result (autocast), "
           "through this function (the same signature; A and B addresses "
           "of bf16 matrices, e.g. spmdGpuGemmBf16: cublasGemmEx)">,
    Option<"bf16BatchedFunction", "bf16-batched-function", "std::string",
           "\"\"",
           "the strided-batched function for bf16 batched matmuls "
           "(spmdGpuGemmBf16StridedBatched); without it they are left to "
           "the loop lowering">
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::func::FuncDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect"];
}

def SpmdLegalizeHalfConversionsPass
    : Pass<"spmd-legalize-half-conversions"> {
  let summary = "Makes 16-bit float conversions lowerable without libgcc 13";
  let description = [{
    Part of `spmd-lower-to-cpu`, before `arith-expand{include-bf16}` (which
    expands only f32 <-> bf16):
    - `arith.truncf` from f64 to bf16 becomes a truncation to f32, then to
      bf16 — how PyTorch converts a double to bfloat16
      (`c10::BFloat16(float(x))`), so the result is eager's — and
      `arith.extf` from bf16 to f64 goes through f32 (exact). LLVM would
      otherwise call `__truncdfbf2`, which libgcc before GCC 13 lacks.
    - `fastmath` flags on `arith.extf` / `arith.truncf` (which
      `math-extend-to-supported-types` copies from the math op it widens)
      are dropped: conversions do not use them, and `convert-arith-to-llvm`
      would leave them on `llvm.fpext` / `llvm.fptrunc` as attributes of an
      unloaded dialect.
    ```mlir
    %b = arith.truncf %x : f64 to bf16
    // becomes
    %f = arith.truncf %x : f64 to f32
    %b = arith.truncf %f : f32 to bf16
    ```
    Vectors and tensors of these types are converted element-wise alike.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

def SpmdBf16BitsInMemoryPass
    : Pass<"spmd-bf16-bits-in-memory", "::mlir::ModuleOp"> {
  let summary = "Moves bf16 values between memory and integer code as i16";
  let description = [{
    On the LLVM dialect (last step of `spmd-lower-to-cpu`, and of the GPU
    emulator's host code): after `arith-expand{include-bf16}` turned every
    bf16 conversion into integer code, a bf16 value is only ever the bitcast
    of an i16 on its way to memory, or a load on its way to a bitcast to
    i16. LLVM's x86 backend keeps a bf16 value that lives across basic
    blocks in a float register and rounds it back with a call to
    `__truncsfbf2`, which libgcc before GCC 13 does not have (Debian 12), so
    the program would not link on a CPU without AVX512-BF16. This pass stores
    and loads the i16 instead:
    ```mlir
    %b = llvm.bitcast %bits : i16 to bf16
    llvm.store %b, %p : bf16, !llvm.ptr
    // becomes
    llvm.store %bits, %p : i16, !llvm.ptr
    ```
    and `llvm.bitcast (llvm.load %p : bf16) : bf16 to i16` becomes an i16
    load. A scalar `llvm.select` between two bf16 values (a fused kernel
    choosing a bf16 constant, such as masked_fill's -inf) selects their i16
    bits. Other bf16 uses are left as they are.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def SpmdFreeAfterLastUsePass
    : Pass<"spmd-free-after-last-use", "::mlir::func::FuncOp"> {
  let summary = "Frees each buffer right after its last use";
  let description = [{
    Part of `spmd-lower-to-cpu`, on buffers, right after the buffer
    deallocation pipeline (not of `spmd-lower-to-nvvm` yet: a free between
    two kernels would keep `spmd-gpu-fuse-kernels` from fusing them; the
    device cache serves stream-ordered frees, so the GPU path can follow
    once that pass looks past them). Upstream's ownership-based
    deallocation frees a buffer at the end of the block that allocates it:
    a straight-line training step then holds every intermediate buffer
    (activations, gathered parameters, whole gradients before their
    reduce-scatter, collective outputs) until it returns, and its transient
    peak is the sum of all of them (a 2-layer GPT held 3x what it needed at
    any point). Here each unconditional `memref.dealloc` of a
    `memref.alloc` of the same block moves to just after the last op of
    that block that uses the buffer: directly, in a nested region, through
    a view (any result of a user counts as an alias but a loaded element or
    a size), through its address (`memref.extract_aligned_pointer_as_index`
    and what is computed from it), and through what a call given that
    address returns: the handle of a non-blocking collective, so a
    collective's buffers are freed after its `spmdWait`. The runtime's
    caching allocator hands a freed block to the next allocation of its
    size, so the step's peak follows liveness.

    Left where they are: deallocations of buffers that escape (returned or
    yielded by the block's terminator), conditional ones (`scf.if` of an
    ownership flag), and those of anything but a `memref.alloc` of the same
    block.

    ```mlir
    %a = memref.alloc() : memref<64xf32>
    linalg.fill ins(%c0 : f32) outs(%a : memref<64xf32>)
    memref.copy %a, %out : memref<64xf32> to memref<64xf32>
    %b = memref.alloc() : memref<64xf32>
    ...
    memref.dealloc %a : memref<64xf32>
    memref.dealloc %b : memref<64xf32>
    // becomes
    %a = memref.alloc() : memref<64xf32>
    linalg.fill ins(%c0 : f32) outs(%a : memref<64xf32>)
    memref.copy %a, %out : memref<64xf32> to memref<64xf32>
    memref.dealloc %a : memref<64xf32>
    %b = memref.alloc() : memref<64xf32>
    ```
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect"];
}

def SpmdPlanMemoryPass : Pass<"spmd-plan-memory", "::mlir::ModuleOp"> {
  let summary = "Records each step's planned transient memory peak";
  let description = [{
    Part of `spmd-lower-to-cpu`, on buffers, right after
    `spmd-free-after-last-use`. For each public function, walks its
    `memref.alloc`s and `memref.dealloc`s in program order (a loop's body
    counted once), each buffer sized as the runtime's allocator sizes it
    (rounded up to its alignment, at least 64 bytes), and exports the plan
    as a constant `__spmd_memory_plan_<function>` of four i64s: the most
    bytes live at once, and, at that point, those of activations and other
    intermediates, of whole gradients (buffers a reducing collective,
    `spmdAllReduce*`/`spmdReduceScatter*`, reads) and of communication
    buffers (buffers a collective writes). State is not in it: the runtime
    knows its bytes (`spmdStateData`). The bridge reads the plan when it
    loads a step (`spmd.memory_stats()`'s `planned_*` entries,
    `SPMD_MEMORY_LIMIT`).

    A dynamic size counts at its constant upper bound (a constant, or a
    min with one through casts and maxes: fully_shard's uneven chunk,
    `minsi(maxsi(n - r * part, 0), part)`). Not counted: a dynamic size
    without such a bound, memory the runtime or BLAS allocate on their
    own.

    With `report-peak=N` (`spmd-lower-to-cpu{report-memory-peak=N}`), each
    function also gets a remark naming the N largest buffers live at its
    peak: bytes, category and the location of the op that allocated them
    (the user's source line where the program carries one).

    ```mlir
    func.func @step(...) {
      %a = memref.alloc() : memref<1024xf32>   // 4096 bytes
      %g = memref.alloc() : memref<256xf32>    // 1024, into spmdAllReduce
      ...
      memref.dealloc %a : memref<1024xf32>
    // adds
    llvm.mlir.global external constant @__spmd_memory_plan_step(dense<[5120, 4096, 1024, 0]> : tensor<4xi64>) : !llvm.array<4 x i64>
    ```
  }];
  let options = [
    Option<"reportPeak", "report-peak", "unsigned", /*default=*/"0",
           "Remark the N largest buffers live at each function's peak">
  ];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def SpmdElideBufferCopiesPass
    : Pass<"spmd-elide-buffer-copies", "::mlir::func::FuncOp"> {
  let summary = "Computes values into the buffer they would be copied to";
  let description = [{
    On buffers, right after bufferization (part of `spmd-lower-to-cpu` and
    `spmd-lower-to-nvvm`): a `memref.copy` whose source is a fresh static
    buffer (or a reshape of one) that a GEMM (`linalg.matmul`,
    `linalg.batch_matmul`) computes, or of one element (the loss), and whose
    target is a contiguous static slice of another fresh buffer (a weight
    gradient copied into its collective's bucket; the leading rows of a
    padded gradient, a slice of any rank whose extent is its size) is
    removed, and the ops that computed the source compute into the slice,
    reshaped to the source's shape (a GEMM then writes it through its
    leading dimension). It applies only when every use of the source comes
    before the copy and reads or writes by element (linalg ops, loads,
    stores, copies) and nothing touches the slice's elements from the
    source's first use to the copy; the target buffer moves up to the first
    use when it came later, and with it a fill of the whole target between
    them (a `tensor.pad`'s value, a `linalg.fill` or `linalg.map` of values
    defined before the first use: the pad's rows keep it, the others are
    written after it). The same values are computed in the same
    order: only where they are stored changes. Other copies are left as
    they are: a loop nest's output of several elements (a bias's gradient)
    keeps its copy, which on the GPU is what gathers those small reductions
    into one kernel before the collective.
    ```mlir
    %g = memref.alloc() : memref<4x16xf32>
    linalg.matmul ins(%a, %b : ...) outs(%g : memref<4x16xf32>)
    %bucket = memref.alloc() : memref<181xf32>
    %flat = memref.collapse_shape %g [[0, 1]] : ... into memref<64xf32>
    %s = memref.subview %bucket[1] [64] [1] : ... to memref<64xf32, strided<[1], offset: 1>>
    memref.copy %flat, %s : ...
    // becomes
    %bucket = memref.alloc() : memref<181xf32>
    %s = memref.subview %bucket[1] [64] [1] : ...
    %g = memref.expand_shape %s [[0, 1]] output_shape [4, 16] : ...
        into memref<4x16xf32, strided<[16, 1], offset: 1>>
    linalg.matmul ins(%a, %b : ...) outs(%g : ...)
    ```
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect"];
}

def SpmdBlockedFullReductionsPass
    : Pass<"spmd-blocked-full-reductions", "::mlir::func::FuncOp"> {
  let summary = "Sums large buffers in blocks, not one long f32 loop";
  let description = [{
    On buffers (part of `spmd-lower-to-cpu`): a `linalg.reduce` of a whole
    static, identity-layout buffer of more than `block` elements into a 0-d
    accumulator, whose combiner is one float add, mul, max or min, becomes
    loops that combine each block of `block` consecutive elements into a
    partial result (from the combiner's identity), then the partial results
    the same way, until at most `block` are left, which are combined into
    the accumulator. A sequential f32 sum of n terms drifts by up to n
    roundings (2e-3 relative for a 4096x1024 loss); blocks bound it by about
    block + n / block, closer to PyTorch's cascaded sums. Deterministic; max
    and min are unchanged by the order. Other reductions are left as they
    are.
    ```mlir
    linalg.reduce ins(%x : memref<4096x1024xf32>) outs(%acc : memref<f32>)
        dimensions = [0, 1] (%in: f32, %a: f32) { ... arith.addf ... }
    // becomes
    %flat = memref.collapse_shape %x [[0, 1]] : ... into memref<4194304xf32>
    %partial = memref.alloc() : memref<4096xf32>
    scf.for %p = %c0 to %c4096 step %c1 {
      %s = scf.for %i = ... iter_args(%a = %zero) -> (f32) { ... }
      memref.store %s, %partial[%p] : memref<4096xf32>
    }
    ... the 4096 partials in blocks of 1024, then into %acc ...
    ```
  }];
  let options = [
    Option<"block", "block", "int64_t", "1024",
           "elements combined into each partial result">
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect"];
}

def SpmdOutlineLoopNestsPass
    : Pass<"spmd-outline-loop-nests", "::mlir::ModuleOp"> {
  let summary = "Moves each linalg op on buffers into its own function, once per shape";
  let description = [{
    Part of `spmd-lower-to-cpu`, after bufferization and the BLAS and
    blocked-reduction rewrites, before `convert-linalg-to-loops`. Every
    linalg op left in a function of the module (a loop nest once lowered)
    becomes a `func.call` of a private function that holds only that op;
    ops that are the same up to their operands (same op, attributes, body
    and operand types) share one function. Constants the op's body reads
    from above are cloned into the function; other values it reads become
    arguments. The functions have internal linkage and LLVM's `noinline`.

    Why: lowered in place, a whole train step is one LLVM function of tens
    of thousands of lines and hundreds of loops, and LLVM's function passes
    (GVN, LICM, the loop vectorizer's alias checks) grow faster than
    linearly with it: `opt -O3` took minutes on a 4-layer GPT. One small
    function per loop nest keeps every optimization local, and the layers
    of a model, which repeat the same shapes, compile once. The cost is one
    call per linalg op per step.

    ```mlir
    linalg.generic {...} ins(%a : memref<8x16xf32>) outs(%b : memref<8x16xf32>) {
    ^bb0(%x: f32, %y: f32):
      %r = arith.maximumf %x, %zero : f32
      linalg.yield %r : f32
    }
    // becomes
    func.call @__spmd_generic_0(%a, %b) : (memref<8x16xf32>, memref<8x16xf32>) -> ()
    func.func private @__spmd_generic_0(%arg0: memref<8x16xf32>,
        %arg1: memref<8x16xf32>) attributes {
        llvm.linkage = #llvm.linkage<internal>, passthrough = ["noinline"]} {
      %zero = arith.constant 0.000000e+00 : f32
      linalg.generic {...} ins(%arg0 : ...) outs(%arg1 : ...) { ... }
      return
    }
    ```
    A `memref.copy` between strided (non-identity) layouts becomes a
    `linalg.copy` first and is outlined like the rest: LLVM would lower it
    to the runtime's `memrefCopy`, which walks the elements one by one
    through their strides. Copies between identity layouts stay (memcpy).
    Linalg ops on tensors are left as they are (run it after
    bufferization).
  }];
  let dependentDialects = ["::mlir::func::FuncDialect",
                           "::mlir::LLVM::LLVMDialect"];
}

def SpmdFuseElementwisePass : Pass<"spmd-fuse-elementwise"> {
  let summary = "Fuses elementwise linalg.generic producers into their consumers";
  let description = [{
    Part of the front shared by `spmd-lower-to-cpu` and the GPU lowering,
    on tensors, right before bufferization. A `linalg.generic` whose loops
    are all parallel and whose result has exactly one user, a
    `linalg.generic` that reads it once per iteration (its indexing map is
    a permutation), is computed inside that consumer: upstream's
    elementwise fusion (`populateElementwiseOpsFusionPatterns`) with that
    control, which also folds fills and scalar constants into bodies and
    drops an `outs` operand whose value the body never reads (so
    bufferization writes into a fresh buffer instead of copying the old
    value first). A chain of elementwise ops becomes one loop nest, and an
    elementwise prologue fuses into a reduction (softmax's `exp(x - max)`
    into its sum, LayerNorm's `(x - mean)^2` into the variance).

    A generator (a `linalg.generic` with no inputs whose body computes
    from its indices with arith ops and index maps only: `torch.arange`'s
    iota, position ids) fuses into every consumer, through a broadcast too,
    since recomputing it reads no memory (a body with `math` ops, such as a
    sinusoidal encoding, is not recomputed per broadcast element). So does
    one that yields a `tensor.extract` of a tensor at indices computed so,
    with `cf.assert` bounds checks (the position table's rows at
    `torch.arange`'s ids): each reader loads the table's element instead of
    a stored copy's, and the gathered value may be used by the yield only;
    one
    reshaped with `tensor.expand_shape` before its use (the iota viewed as
    1 x C against a column of targets in cross-entropy's one-hot) is first
    generated in the expanded shape (upstream's
    `populateFoldReshapeOpsByExpansionPatterns`). Its values are the same
    indices. So is an elementwise op whose only reader is one
    `tensor.expand_shape` (nn.Linear's bias added to the matmul's B*L x N
    rows, then viewed as B x L x N): computed in the expanded shape, reading
    its inputs through the reshape, it has its readers' iteration space (one
    loop nest; on the GPU one kernel with the GELU after it). Other
    reshapes stay where they are.

    A cheap elementwise op (one input read once per element, at most two
    `arith` ops that do not read its `outs`: cross-entropy's
    `target != ignore_index`, LayerNorm backward's `rstd / N`, a negation,
    a cast) fuses into its consumers through broadcasts too (a few arith
    ops again per broadcast element, on a value loaded anyway), and one
    whose every user is a `linalg.generic` is cloned for each user, so it
    fuses into all of them: each loads the input instead of the result (the
    same traffic), and the value gets no loop nest, GPU kernel or buffer of
    its own.

    A generator read by several ops (the position iota gathered in the
    forward and compared with itself through two reshapes for the position
    embedding's gradient) is likewise cloned for each reader.

    So is a recomputable broadcast: a parallel `linalg.generic` whose
    inputs total at most 1/32 of its result's bytes and whose body is at
    most 16 `arith`, `linalg.index` and `affine.apply` ops (cross-entropy's
    one-hot mask of the targets over the vocabulary), when each reader reads
    it once per iteration and can fuse it (a reduction that it alone would
    give its loop bounds cannot: it then stays stored). Cloning and fusion
    repeat a few rounds, since a fused producer can make its reader one (the
    loss's gradient before the softmax's, once the mask is in it): no
    [tokens, vocabulary] mask or gradient is stored.

    An add of a `linalg.matmul`'s product (of a zero-filled output, read
    nowhere else) to another tensor read nowhere else (a tied weight's two
    gradients: the LM head's and the embedding's) becomes the matmul
    accumulating into that tensor: BLAS's `beta = 1` (the CPU's one-hot
    scatter adds its rows into it), no loop nest or GPU kernel for the add,
    and when the other term is a GEMM's output too,
    `spmd-elide-buffer-copies` computes both into the gradient's bucket.
    This one changes the order of additions (the product's partial sums
    onto the other term, instead of the finished product plus it): float32
    rounding, nothing else.

    A producer with several users, when every user but one all-parallel
    `linalg.generic` that reads it once per iteration comes after that
    consumer in its block (AdamW's new moments: stored into their state
    and read by the parameter's update; the bias-added activation GELU
    reads and the backward reads again), is computed inside that consumer,
    which yields it as one more result that every later user reads
    (upstream's `fuseElementwiseOps` with its preserved producer results;
    its own pattern keeps the producer, and computes the value twice, since
    it cannot know the other users come later). The value is written once
    and not read back: AdamW's update is one loop nest per parameter
    reading parameter, gradient and both moments and writing the three
    (28 bytes per element, was three nests and 40; GPT-2 124M's replicate
    step: 1043 -> 698 loop nest calls, the same buffers allocated). It runs
    after the rounds above, once cheap producers are cloned into their
    readers (GELU's `x * x`, two operands of one value until fusion's
    canonicalization merges them, would otherwise be stored). Not for or
    into an op its readers recompute (cheap, recomputable broadcast), not
    into a reduction (the value would be written inside one), nor past a
    user that comes before the consumer.

    First, a `linalg.fill` that is the `outs` of several ops (CSE merges
    the zero fills of every reduction and matmul of one shape) is cloned
    right before each of them, with its own `tensor.empty`: shared,
    bufferization would fill one buffer and copy it into every user's
    output; cloned, each output is filled in place, and a zero fill right
    before a matmul becomes `beta = 0` in `spmd-convert-linalg-to-blas`.

    Numerics are otherwise unchanged: every element goes through the same
    scalar operations in the same order; only where the intermediate lives
    changes. Not fused: other producers with several users (fusing would
    compute them twice, or move them past a reader), operands the consumer broadcasts (computed again for
    every element they are broadcast to) unless cheap, named ops (`linalg.matmul`,
    `linalg.transpose`, `linalg.reduce`, fills), which keep their own
    lowerings.

    ```mlir
    %e = linalg.generic {... ["parallel"]} ins(%x) outs(%empty) { exp }
    %s = linalg.generic {... ["parallel"]} ins(%e, %y) outs(%empty) { addf }
    // becomes
    %s = linalg.generic {... ["parallel"]} ins(%x, %y) outs(%empty) { exp; addf }
    ```
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect"];
}

def SpmdLowerAttentionPass : Pass<"spmd-lower-attention", "::mlir::ModuleOp"> {
  let summary = "Lowers spmd.attention and attention_grad to flash kernels";
  let description = [{
    Part of `spmd-lower-to-cpu`, on tensors, before bufferization: each
    `spmd.attention` becomes a call of libSpmdRuntime's
    `spmdAttentionForward` and each `spmd.attention_grad` one of
    `spmdAttentionBackward` (lib/Runtime/Attention.cpp), with fresh result
    buffers, the sizes, the mask's broadcast strides, the scale, `causal`,
    and each B x H x rows x n operand's element strides along batch, head
    and row as scalars. Operands are read where they are: a head transpose
    (`linalg.transpose` with permutation [0, 2, 1, 3], how a model splits
    (B, L, H, E) projections into heads) of a tensor whose buffer is known
    to have contiguous rows (fresh buffers, function arguments, reshapes
    and unit-stride slices of them: a column block of a packed QKV
    projection) becomes a transposed view of that buffer; other operands
    are identity-layout buffers (bufferization copies what has another
    layout). A result read through a head transpose (merging heads back)
    is written in that layout, and the transpose becomes the buffer; when
    the three gradients are merged and concatenated along the last
    dimension (a packed projection's gradient), they are written into
    column blocks of one buffer, which the concatenation becomes. The kernels work
    flash-attention style: per batch and head, query rows in blocks against
    key blocks, an online softmax that keeps the row maximum and sum,
    GEMMs of blocks through `spmdSgemm`; the backward recomputes each block
    of probabilities from the saved log-sum-exp. Scratch memory is a few
    blocks: no `L x S` tensor, forward or backward.

    Numerics: the softmax is summed block by block with rescaling (the
    online softmax), in f32, so results differ from eager's by float32
    rounding (the bound the tests check: 1e-5 relative on the models).

    With `gpu`, as part of `spmd-lower-to-nvvm`: the calls are of
    libSpmdGpuRuntime's `spmdGpuAttentionForward` / `...Backward` (same
    arguments, device buffers): fused kernels (lib/Runtime/Gpu/
    AttentionKernels.cuh), one warp per row, key and query tiles in shared
    memory, the row maximum and sum by warp shuffles; one kernel forward,
    two backward (dQ; dK and dV). Ops whose head dimensions are dynamic or
    above 128 are left to `spmd-decompose-attention` (materialized scores).

    ```mlir
    %o, %lse = spmd.attention %q, %k, %v {causal, scale = 0.125 : f64} : ...
    // becomes
    %qb = bufferization.to_buffer %q read_only : ... strided<[?, ?, ?, ?], offset: ?>
    %ob = memref.alloc() : memref<2x4x64x32xf32>
    %lb = memref.alloc() : memref<2x4x64xf32>
    call @spmdAttentionForward(<addresses>, <sizes>, <mask strides>,
                               %scale, %causal, <operand strides>) : (...) -> ()
    %o = bufferization.to_tensor %ob restrict writable : ...
    ```
  }];
  let options = [
    Option<"gpu", "gpu", "bool", "false",
           "call the GPU runtime's fused kernels (head dimensions up to 128)">
  ];
  let dependentDialects = ["::mlir::bufferization::BufferizationDialect",
                           "::mlir::func::FuncDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect"];
}

def SpmdScatterOneHotContractionsPass
    : Pass<"spmd-scatter-one-hot-contractions"> {
  let summary = "Turns matmuls with a one-hot matrix into row scatters and gathers";
  let description = [{
    Part of `spmd-lower-to-cpu`, on tensors, after `spmd-fuse-elementwise`
    and before bufferization. The bridge traces `nn.Embedding`'s backward
    as a matmul of the transposed one-hot matrix of the token ids with the
    output gradient (it stays in linalg and distributes as a contraction
    over the tokens: a Partial sum, all-reduced). Computed as written it
    materializes tokens x vocabulary floats and spends a GEMM of
    2 x tokens x vocabulary x dim flops on it. This pass matches
    `linalg.matmul` with indexing maps `A: (m, n, k) -> (k, m)`,
    `B: (k, n)`, `C: (m, n)` whose A is a two-loop parallel
    `linalg.generic` yielding `uitofp(cmpi eq(idx, row))` or
    `select(..., 1.0, 0.0)`, where `idx` is an integer tensor read along
    the token loop and `row` is the row loop's index (`linalg.index`, or
    an iota generic seen through reshapes); an extra
    `andi(..., cmpi ne(idx, c))` (padding_idx) is kept as a skipped index.
    It becomes an `scf.for` over the tokens that adds row t of B into row
    idx[t] of C (in place after bufferization), skipping ids outside
    [0, rows) and the padding index, as the one-hot would: tokens x dim
    additions, no one-hot, no GEMM. The one-hot generic is erased when it
    has no other user.

    Numerics: each row sum gets the same terms, in token order (BLAS
    orders them as it blocks); terms of other tokens, which the matmul
    added as `0 * g`, are not added, so a non-finite gradient no longer
    spreads to every row (as in eager's `index_put` accumulation).

    The other direction, `linalg.matmul` with A read as `(m, k)` (a
    one-hot of the tokens' ids against the rows: an embedding's lookup
    written as a contraction by `spmd-vocab-parallel`) and B `(k, n)` a
    table of rows, becomes a loop that adds row `idx[t]` of the table into
    row t of C (C starts as the matmul's init: zeros), skipping ids outside
    the table's rows. Either way the rows may be a rank's chunk of a
    vocabulary: the one-hot compares with a slice of the iota at the
    chunk's first row `first` (the reshape fused into the iota as an
    affine.apply of its indices is seen through), and `idx[t] - first` is
    the row, with a dynamic row count when the vocabulary splits unevenly.

    Not on the GPU path: a host loop over tokens would launch a kernel per
    token there (it keeps the GEMM).

    ```mlir
    %oh = linalg.generic {... ["parallel", "parallel"]}
        ins(%ids, %iota : tensor<32x1xi64>, tensor<1x50xi64>) ... {
      %e = arith.cmpi eq, %in, %in_0 : i64
      %f = arith.uitofp %e : i1 to f32
      linalg.yield %f : f32 } -> tensor<32x50xf32>
    %r = linalg.matmul indexing_maps = [(m, n, k) -> (k, m), (k, n), (m, n)]
        ins(%oh, %g : tensor<32x50xf32>, tensor<32x16xf32>)
        outs(%c : tensor<50x16xf32>) -> tensor<50x16xf32>
    // becomes
    %r = scf.for %t = %c0 to %c32 step %c1 iter_args(%acc = %c) {
      // %i = ids[t, 0]; if 0 <= %i < 50: %acc[%i, :] += %g[%t, :]
    }
    ```
  }];
  let dependentDialects = ["::mlir::scf::SCFDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::linalg::LinalgDialect"];
}

def SpmdUpdateStateInPlacePass : Pass<"spmd-update-state-in-place"> {
  let summary = "Computes a state's new value straight into its global";
  let description = [{
    Part of `spmd-lower-to-cpu` and `spmd-lower-to-nvvm`, on tensors, after
    `spmd-fuse-elementwise` and before bufferization. `convert-spmd-to-runtime` lowers
    `spmd.store` as a copy of the value into the state's global
    (`memref.copy %v, %global`); for an optimizer that is a copy of every
    parameter and every moment per step, on top of computing them. When
    the stored value is a result of a `linalg.generic` whose loops are all
    parallel, whose `outs` for that result is indexed by the identity and
    never read by the body, and the old value of the state is dead by then
    (every load of the state is a copy made before the generic, or a
    direct read of the global whose every reader, through views, comes
    before the generic or is the generic itself reading at the position it
    writes), the generic's `outs` becomes the global
    (`bufferization.to_tensor %global restrict writable`) and the copy is
    erased: the update is computed in place.

    A value padded with trailing rows before the store (`tensor.pad` of a
    constant, high on dimension 0 only: fully_shard's uneven chunk, this
    rank's rows then zero rows up to the storage's chunk size) is computed
    into the global's leading rows (an `extract_slice` of it as the
    generic's `outs`) and the padding rows are filled there: GPT-2 124M's
    `wte` chunk, its two moments and the parameter, were three 80 MiB
    temporaries per step.

    Left as a copy: a state stored more than once in a function, a value
    not produced by such a generic (a matmul, a collective's result, a
    view), an old value read later (or handed to the runtime, which may
    read it asynchronously).

    Also part of `spmd-lower-to-nvvm`: the buffers the copies no longer
    hold are freed at other points of the program stream, which the device
    cache serves at once (same stream); device-to-device copies per step of
    the test models fell from 15 / 33 / 78 / 17 to 6 / 9 / 18 / 5, with no
    allocation after the first step (`gpu-emulated-steps.test`).

    ```mlir
    %p = bufferization.to_tensor %g0 restrict : memref<4xf32> to tensor<4xf32>
    %new = linalg.generic {... ["parallel"]} ins(%p, %grad) outs(%empty) { p - lr * g }
    %b = bufferization.to_buffer %new read_only : tensor<4xf32> to memref<4xf32>
    memref.copy %b, %g1 : memref<4xf32> to memref<4xf32>
    // becomes
    %t = bufferization.to_tensor %g2 restrict writable : memref<4xf32> to tensor<4xf32>
    %new = linalg.generic {... ["parallel"]} ins(%p, %grad) outs(%t) { p - lr * g }
    ```
  }];
  let dependentDialects = ["::mlir::bufferization::BufferizationDialect",
                           "::mlir::memref::MemRefDialect"];
}

def SpmdScheduleForMemoryPass
    : Pass<"spmd-schedule-for-memory", "::mlir::func::FuncOp"> {
  let summary = "Moves an op that frees more than it allocates up, so the "
                "ops it passes run with less memory live";
  let description = [{
    Part of the lowering to buffers shared by the CPU and GPU lowerings,
    on tensors right before bufferization. An op that reads the last use of
    a large tensor (through any view of it: slices and reshapes share its
    buffer) and produces fewer bytes than it frees moves up, with the ops
    only it uses (its init tensors), to right after the last op it depends
    on, that still uses that tensor, or that has memory effects (calls,
    collectives and state accesses keep their places, so does the overlap
    schedule). Every op it passes then runs with less memory live, so the
    step's transient peak never goes up. What counts as freed: a tensor the
    step computes or a collective receives; not function arguments,
    constants, init placeholders (`tensor.empty`) or state, and not a
    destination-style op's inits (they become its results).

    The case it was written for: a tied or large weight gathered for the
    head (fully_shard), whose backward computes `dW = dY^T . X` (a whole
    weight-sized gradient) before `dX = dY . W`, the gathered W's last use:

    ```mlir
    %dw = linalg.matmul ins(%dyT, %x : tensor<50257x256xf32>, tensor<256x768xf32>) outs(%z0 : tensor<50257x768xf32>) -> tensor<50257x768xf32>
    %i = tensor.empty() : tensor<256x768xf32>
    %z1 = linalg.fill ins(%c0 : f32) outs(%i : tensor<256x768xf32>) -> tensor<256x768xf32>
    %dx = linalg.matmul ins(%dy, %w : tensor<256x50257xf32>, tensor<50257x768xf32>) outs(%z1 : tensor<256x768xf32>) -> tensor<256x768xf32>
    // becomes (%dx with its init first: W's 154 MB are freed before dW's
    // 154 MB are allocated)
    %i = tensor.empty() : tensor<256x768xf32>
    %z1 = linalg.fill ins(%c0 : f32) outs(%i : tensor<256x768xf32>) -> tensor<256x768xf32>
    %dx = linalg.matmul ins(%dy, %w : ...) outs(%z1 : ...) -> tensor<256x768xf32>
    %dw = linalg.matmul ins(%dyT, %x : ...) outs(%z0 : ...) -> tensor<50257x768xf32>
    ```

    A move must save at least `min-bytes` (default 1 MiB): smaller ones
    would only reorder ops that the GPU lowering joins into one kernel. An
    op moves at most 512 ops up (the pass stays linear in the program's
    size). Tensors of dynamic shape count as no bytes.
  }];
  let options = [
    Option<"minBytes", "min-bytes", "int64_t", /*default=*/"1048576",
           "Move an op only when it frees at least this many bytes more "
           "than it produces">
  ];
}

def SpmdRemoveOptimizationBarriersPass
    : Pass<"spmd-remove-optimization-barriers", "::mlir::func::FuncOp"> {
  let summary = "Replaces each spmd.optimization_barrier by its input";
  let description = [{
    Part of the lowering to buffers shared by the CPU and GPU lowerings,
    right before one-shot bufferization (which does not know the op). Up to
    here the barriers kept CSE from merging an activation checkpointing
    region's recomputation (in the backward) back into the forward's ops;
    on buffers nothing merges or hoists ops any more, so the barrier goes
    and its users read the input's buffer (no copy).

    ```mlir
    %r = spmd.optimization_barrier %x : tensor<8xf32>
    %y = math.exp %r : tensor<8xf32>
    // becomes
    %y = math.exp %x : tensor<8xf32>
    ```
  }];
}

def SpmdPolynomialMathPass : Pass<"spmd-polynomial-math"> {
  let summary = "Rewrites f32 math.erf and math.tanh as arithmetic LLVM can "
                "vectorize";
  let description = [{
    Part of the back shared by the CPU and GPU lowerings, after 16-bit math
    is widened to f32. Every `math.erf` on f32 (scalar or vector) becomes
    upstream MLIR's rational approximation
    (`populatePolynomialApproximateErfPattern`: a ratio of two degree-4
    polynomials on three intervals, then +-1), and every `math.tanh` on f32
    `copysign(f32(1 - 2 / (exp(2a) + 1)), x)` computed in f64 from
    `a = |x|` (`a` itself below 1e-5, where the f64 subtraction would
    cancel and tanh(a) rounds to a; tanh(-0) = -0, NaN stays NaN, +-inf
    gives +-1). LLVM turns either op into a call of libm's `erff` /
    `tanhf` per element, which its loop vectorizer cannot widen (it maps no
    libmvec function to them), so GELU's loops ran scalar, both the exact
    form (erf) and nanoGPT's `approximate="tanh"` (glibc's tanhf calls
    expm1f: 4.5% of GPT-2 124M's step on 2 ranks); the rewrites are plain
    arithmetic and `math.exp`, which vectorizes (libmvec's exp; f64 at
    half f32's width).

    Accuracy, checked against the f64 libm functions on 2^20 points by
    `test/Codegen/polynomial-math-run.mlir`: erf within 3e-7 over the
    whole f32 range (about two float32 ulps near +-1); tanh within 6e-8
    relative, correctly rounded on every point tested (0.5 ulp; PyTorch's
    SLEEF tanhf 0.51); upstream's f32 approximation is 4.5 ulp and no
    faster here within noise. (How far AdamW carries tanh's last bit into
    the parameters is not monotone in its accuracy: in
    `test/Python/reshard_check.py`'s Tanh MLP glibc's tanhf leaves 7.1e-6,
    this one 1.2e-5, upstream's 1.1e-5; that check allows 2% of a step.)
    Other element types are left to libm.

    ```mlir
    %y = math.erf %x : f32
    // becomes arith (select on |x|, two polynomial evaluations, a
    // division, copysign) with no call
    %t = math.tanh %x : vector<8xf32>
    // becomes arith and math.exp on vector<8xf64> (absf, extf, exp, a
    // division, a select, truncf, copysign)
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::vector::VectorDialect"];
}

def SpmdReassociableReductionsPass : Pass<"spmd-reassociable-reductions"> {
  let summary = "Lets LLVM vectorize the reductions along contiguous dimensions";
  let description = [{
    Part of `spmd-lower-to-cpu`, after bufferization and the blocked full
    reductions. In every linalg op on buffers with a reduction loop, the
    operation that combines an element with the accumulator (the yielded
    `arith.addf`, `mulf`, `maximumf`, `minimumf`, `maxnumf` or `minnumf`
    of the accumulator block argument) gets the `reassoc` fast-math flag;
    nothing else in the body does.

    Why: a row sum or row max (softmax, LayerNorm, cross-entropy) runs its
    reduction loop innermost, along the contiguous dimension. LLVM's loop
    vectorizer may only keep such an accumulator as partial results in
    vector lanes (then add the lanes as a tree) when the combiner may be
    reassociated; without the flag the loop stays scalar, one dependent
    addition per element.

    Numerics: max and min are exact in any order. A sum becomes V (about
    16 to 64, as LLVM chooses) interleaved partial sums of n/V terms each
    plus a tree of V: the rounding error bound drops from n to about n/V +
    log2(V) ulps of the running sums, the kind of accuracy the blocked full
    reductions give; results differ from a sequential sum by rounding, and
    are deterministic (the same program always adds in the same order, on
    any number of ranks). Column reductions (the reduction loop outermost)
    already vectorize along their contiguous parallel dimension.

    ```mlir
    linalg.generic {... ["parallel", "reduction"]} ins(%x : memref<64x128xf32>)
        outs(%s : memref<64xf32>) {
    ^bb0(%in: f32, %acc: f32):
      %r = arith.addf %in, %acc fastmath<reassoc> : f32
      linalg.yield %r : f32
    }
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

#endif // SPMD_CODEGEN_PASSES_TD
