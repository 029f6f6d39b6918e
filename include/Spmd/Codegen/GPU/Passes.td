//===- Passes.td - spmd GPU conversion passes --------------*- tablegen -*-===//
//
// The passes of spmd-lower-to-nvvm that are spmd's own. They live apart from
// the CPU conversions so that spmd-opt does not link the GPU toolchain
// (NVPTX code generation); spmd-gpu-opt does.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_CONVERSION_GPU_PASSES_TD
#define SPMD_CONVERSION_GPU_PASSES_TD

include "mlir/Pass/PassBase.td"

def SpmdGpuBiasIntoGemmsPass : Pass<"spmd-gpu-bias-into-gemms"> {
  let summary = "Adds a GEMM's bias through cuBLAS's beta = 1";
  let description = [{
    Part of `spmd-lower-to-nvvm`, on tensors, before bufferization. An f32
    `linalg.generic` that only adds a `linalg.matmul`'s product (computed
    into a zero fill and read nowhere else, directly or through one
    `tensor.expand_shape`) and a tensor read through a broadcast (a linear
    layer's bias, when no activation or residual joins the add: QKV's,
    read next by attention, a runtime call) is a kernel of its own. Here
    the matmul accumulates into the bias broadcast over its output instead
    (cuBLAS's `beta = 1`): the broadcast reads only the bias, so
    `spmd-gpu-fuse-kernels` moves its loop into an earlier launch, and the
    add's kernel is gone.

    The bias's map must name dimensions that are alone in their
    `expand_shape` group (the columns); other adds stay. cuBLAS computes
    `alpha * (A B) + beta * C` once the products are summed, as the add
    did; the emulator's BLAS adds some partial sums onto the bias instead
    (float32 rounding). A same-shape tensor is `spmd-fuse-elementwise`'s
    case (no broadcast needed).

    ```mlir
    %z = linalg.fill ins(%zero) outs(%e) -> tensor<8x6xf32>
    %p = linalg.matmul ins(%x, %w) outs(%z) -> tensor<8x6xf32>
    %y = linalg.generic {maps = [(m, n) -> (m, n), (m, n) -> (n), id]}
           ins(%p, %bias) outs(%e2) { addf }
    // becomes
    %b = linalg.generic {maps = [(m, n) -> (n), id]} ins(%bias) outs(%e)
    %y = linalg.matmul ins(%x, %w) outs(%b) -> tensor<8x6xf32>
    ```
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect"];
}

def SpmdGpuRecomputeIntoReductionsPass
    : Pass<"spmd-gpu-recompute-into-reductions"> {
  let summary = "Computes elementwise ops again inside the reductions that "
                "read them";
  let description = [{
    Part of `spmd-lower-to-nvvm`, on tensors, before bufferization. An
    elementwise `linalg.generic` whose result has several readers (a GEMM
    needs it: the MSE loss's difference, ReLU's or GELU's backward) and is
    also summed by a column or full reduction (a bias gradient, the loss)
    makes the reduction wait for it: two kernels. Here the reduction gets
    its own clone of the elementwise op fused into it
    (`linalg::fuseElementwiseOps`), so it reads the elementwise op's inputs
    and the two are independent: `spmd-gpu-fuse-kernels` later runs them
    in one launch. Producers are recomputed transitively (a fused
    reduction's new inputs may be recomputable too) while the reduction's
    body stays under 48 ops.

    Only reductions that are not row reductions take producers (a row
    reduction's chain already runs in one kernel,
    `spmd-gpu-row-kernels`), only through permutation maps (an element is
    recomputed once, not once per broadcast), never into contractions (they
    stay GEMMs), and never producers that read their init or hold regions.
    The recomputed values are the same operations on the same inputs:
    numerics are unchanged. A producer left with one reader is fused into it
    by the `spmd-fuse-elementwise` run that follows in the pipeline.

    ```mlir
    %d = linalg.generic {iterator_types = ["parallel", "parallel"]}
           ins(%y, %t) outs(%e0) { subf }           // also read by a GEMM
    %s = linalg.generic {iterator_types = ["reduction", "parallel"]}
           ins(%d) outs(%z) { addf }
    // becomes
    %s = linalg.generic {iterator_types = ["reduction", "parallel"]}
           ins(%y, %t) outs(%z) { subf; addf }
    ```
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect"];
}

def SpmdGpuPowiExponentsPass : Pass<"spmd-gpu-powi-exponents"> {
  let summary = "Gives math.fpowi an i32 exponent (libdevice's __nv_powif)";
  let description = [{
    Part of `spmd-lower-to-nvvm`, on the kernels right before their NVVM
    conversion. torch-mlir imports `x ** 2` as `math.fpowi` with an `i64`
    exponent; the NVVM lowering calls libdevice's `__nv_powif(float, int)`
    for it without converting the exponent, which declares the function
    with an `i64` parameter and computes garbage on a GPU (found on the
    first real GPU run; the emulator compiles kernels for the host, where
    convert-math-to-funcs handles it). Every exponent wider than 32 bits is
    saturated to `i32` keeping its sign and parity (an f32 `x^n` with
    `|n| >= 2^31` is already 0, inf or +-1). Vector exponents are an error.

    ```mlir
    %y = math.fpowi %x, %n : f32, i64
    // becomes
    %n32 = arith.trunci %clamped : i64 to i32   // %n clamped, parity kept
    %y = math.fpowi %x, %n32 : f32, i32
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

def SpmdGpuFreshOutputsPass : Pass<"spmd-gpu-fresh-outputs"> {
  let summary = "Gives every op its own tensor.empty before bufferization";
  let description = [{
    Part of `spmd-lower-to-nvvm`, on tensors, right before one-shot
    bufferization. CSE merges the `tensor.empty` of every op of one shape
    into one; bufferization then gives those ops one buffer and computes an
    elementwise op in place over an earlier op's result once nothing reads
    that result afterwards (the MSE loss's gradient over the difference its
    sum has just read). On the GPU that write-after-read keeps the two
    readers of the difference, the sum and the gradient, in two launches.
    Each destination-style op using a shared `tensor.empty` as an `outs`
    operand gets its own clone (the first user keeps the original), so each
    gets its own buffer; the GPU runtime's cache reuses freed device
    buffers, so a steady step still allocates nothing. The CPU path keeps
    the shared buffers (less memory; its loops run in order anyway).
    Numerics are unchanged.

    ```mlir
    %e = tensor.empty() : tensor<4xf32>
    %d = linalg.generic ... outs(%e : tensor<4xf32>)
    %g = linalg.generic ... ins(%d) outs(%e : tensor<4xf32>)
    // becomes
    %e = tensor.empty() : tensor<4xf32>
    %d = linalg.generic ... outs(%e : tensor<4xf32>)
    %e2 = tensor.empty() : tensor<4xf32>
    %g = linalg.generic ... ins(%d) outs(%e2 : tensor<4xf32>)
    ```
  }];
  let dependentDialects = ["::mlir::tensor::TensorDialect"];
}

def SpmdGpuMemoryPass : Pass<"spmd-gpu-memory", "::mlir::ModuleOp"> {
  let summary = "Puts a bufferized program's buffers in GPU memory";
  let description = [{
    After bufferization (part of `spmd-lower-to-nvvm`), in every host
    function: `memref.alloc`/`alloca` become `gpu.alloc` (device memory) and
    `memref.dealloc` `gpu.dealloc`; `memref.copy` between contiguous buffers
    of one type becomes `gpu.memcpy`, any other copy a `linalg.copy` (a
    kernel later); each constant global becomes the runtime's device copy of
    it, `spmdGpuConstantAddress(host address, bytes)` (uploaded on the first
    call, the same buffer after: a step does not copy its constants again
    each time it runs). Function arguments are taken to be
    device buffers. State (a mutable global from `spmd.state`) becomes the
    runtime's device buffer of that name, `spmdGpuStateAddress(name, bytes,
    dtype)` (zero-filled when first made; the host reaches it by name through
    `spmdStateData`/`spmdStateBind`, which return device pointers on the
    GPU). Host code that reads or writes a 0-d buffer (a `tensor.extract` of
    an optimizer's step counter) goes through a host copy (`memref.alloca` +
    `gpu.memcpy`). Unsupported, with a diagnostic: globals with a
    non-identity layout and state of element types other than
    f32/f64/i32/i64; other host accesses are left to
    `spmd-verify-gpu-host-code`.
    ```mlir
    %a = memref.alloc() : memref<64xf32>
    // becomes
    %a = gpu.alloc () : memref<64xf32>
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::func::FuncDialect",
                           "::mlir::gpu::GPUDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::LLVM::LLVMDialect",
                           "::mlir::memref::MemRefDialect"];
}

def SpmdGpuScalarsIntoKernelsPass
    : Pass<"spmd-gpu-scalars-into-kernels", "::mlir::func::FuncOp"> {
  let summary = "Computes scalars read from 0-d buffers inside the kernels "
                "that use them";
  let description = [{
    After bufferization, before `spmd-gpu-memory` (part of
    `spmd-lower-to-nvvm`): a linalg op whose body uses a scalar computed on
    the host from a 0-d buffer (Adam's bias corrections from the step
    counter and betas, a learning rate read from state) would make the host
    copy that buffer from the device and wait for it, twice per scalar.
    Instead the 0-d buffer becomes an input of the op (indexed by no loop)
    and the arithmetic between the load and the use is cloned into the body:
    the kernel reads the scalar on the device and the host never waits.
    Moved only when nothing between the load and the op may write the
    buffer (or a view of it) and the arithmetic has no side effects; other
    scalars stay on the host. Numerics are unchanged (the same operations in
    the same precision).
    ```mlir
    %b = memref.load %beta[] : memref<f64>
    %c = arith.subf %one, %b : f64
    linalg.generic ... ins(%x : memref<8xf64>) outs(%y : memref<8xf64>) {
    ^bb0(%in: f64, %out: f64):
      %r = arith.mulf %in, %c : f64
      linalg.yield %r : f64
    }
    // becomes
    linalg.generic ... ins(%x, %beta : memref<8xf64>, memref<f64>)
        outs(%y : memref<8xf64>) {
    ^bb0(%in: f64, %b: f64, %out: f64):
      %c = arith.subf %one, %b : f64
      %r = arith.mulf %in, %c : f64
      linalg.yield %r : f64
    }
    ```
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::memref::MemRefDialect"];
}

def SpmdGpuSerialKernelsPass
    : Pass<"spmd-gpu-serial-kernels", "::mlir::func::FuncOp"> {
  let summary = "Runs linalg ops without parallel loops as one-thread kernels";
  let description = [{
    On buffers (part of `spmd-lower-to-nvvm`, before the parallel-loop
    mapping): a linalg op whose loops are all reductions, or that has no
    loops (0-d fills and arithmetic), is wrapped in a one-iteration
    `scf.parallel`, so that it becomes a kernel of one thread instead of host
    loops over device memory. A full `linalg.reduce` of more than 64
    elements of a contiguous buffer with a float add/mul/max/min combiner
    becomes parallel stages instead: over the flattened input of n elements,
    thread p of ceil(n / 64) combines elements p, p + P, p + 2P, ...
    (neighbouring threads read neighbouring elements) from the combiner's
    identity into a partial buffer (`gpu.alloc`), and so on over the
    partials until at most 64 are left, which one thread combines into the
    accumulator (deterministic; float results may differ from a sequential
    loop by rounding).
    ```mlir
    linalg.fill ins(%zero : f32) outs(%acc : memref<f32>)
    // becomes
    scf.parallel (%i) = (%c0) to (%c1) step (%c1) {
      linalg.fill ins(%zero : f32) outs(%acc : memref<f32>)
    }
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::gpu::GPUDialect",
                           "::mlir::scf::SCFDialect"];
}

def SpmdGpuParallelLoopsOuterPass
    : Pass<"spmd-gpu-parallel-loops-outer", "::mlir::func::FuncOp"> {
  let summary = "Moves a linalg op's parallel dimensions before its reductions";
  let description = [{
    On buffers (part of `spmd-lower-to-nvvm`, before the parallel-loop
    mapping): a linalg op with a reduction dimension before a parallel one
    (a bias gradient summing over the batch) is generalized and its
    dimensions interchanged, parallel ones first in their order, so that it
    becomes one kernel whose threads each loop over the reduction instead of
    a host loop launching a kernel per reduction step. The computation and
    the order of each reduction are unchanged.
    ```mlir
    linalg.generic {iterator_types = ["reduction", "parallel"], ...}
    // becomes
    linalg.generic {iterator_types = ["parallel", "reduction"], ...}
    ```
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect"];
}

def SpmdGpuRowKernelsPass
    : Pass<"spmd-gpu-row-kernels", "::mlir::func::FuncOp"> {
  let summary = "Runs chains of row reductions and elementwise ops as one "
                "kernel of a warp per row";
  let description = [{
    On buffers (part of `spmd-lower-to-nvvm`, after `spmd-gpu-memory`): a
    chain of `linalg.generic` ops over the same loops (rows..., column),
    each elementwise or reducing the column into one f32 or f64 value per row with
    an add/mul/max/min combiner (softmax, LayerNorm's mean and variance,
    cross-entropy's log-sum-exp), with at least one reduction, becomes one
    `gpu.launch` of a warp (32 threads) per row. The lanes stride over the
    row (lane l takes columns l, l + 32, ...: neighbouring lanes read
    neighbouring elements); a reduction combines each lane's partial result
    with a butterfly of five `gpu.shuffle xor` (offsets 16 to 1), which
    leaves the row's value in every lane, so later members read it from a
    register; lane 0 stores it. A `linalg.fill` of a reduction's output just
    before it is its initial value (the fill is dropped).

    Members' row loops may differ in shape if not in number (a GEMM's 24x8
    result and its 4x6x8 view: each member delinearizes the block id its
    way). Members join a chain when every element one of them writes and
    another touches is the same element at the same place in the loops (so
    the same lane owns it; identity maps over row-major views of one buffer
    count), or is a reduction's row value read after it (also through
    another identity-layout view of its buffer: a 24-element row max read
    as 24x1). The kernel runs where the last member was: an operation in
    between that touches nothing the members touch stays where it is (a
    count of the targets and its all-reduce); one that reads or writes what
    they touch, and has no results, moves after the kernel with what
    depends on it (cross-entropy's loss, a sum of the rows the forward
    members wrote), as long as nothing it passes touches its buffers; the
    runtime's GEMM, attention and collective calls touch only the buffers
    whose addresses they take; any other call ends the chain. Numerics: each row's reduction is combined in a different order
    than a sequential loop (32 strided partial results, then a tree), so
    float results may differ by rounding; max and min are exact.
    (an f64 crosses lanes as two 32-bit shuffles). Unsupported, left as
    they are: integer reductions, reductions
    of more than the last loop, dynamic shapes, indexing maps other than
    loop dimensions and zeros, reductions over all loops (no rows).
    ```mlir
    linalg.generic {iterator_types = ["parallel", "reduction"]}   // row max
    linalg.generic {iterator_types = ["parallel", "parallel"]}    // exp(x - max)
    linalg.fill ...
    linalg.generic {iterator_types = ["parallel", "reduction"]}   // row sum
    linalg.generic {iterator_types = ["parallel", "parallel"]}    // / sum
    // becomes
    gpu.launch blocks(%row, ...) in (%rows, ...) threads(%lane, ...) in (%c32, ...) {
      ... scf.for %c = %lane to %n step %c32 ... gpu.shuffle xor ...
    }
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::gpu::GPUDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect"];
}

def SpmdGpuFuseKernelsPass
    : Pass<"spmd-gpu-fuse-kernels", "::mlir::func::FuncOp"> {
  let summary = "Fuses the parallel loops that become kernels: fewer launches";
  let description = [{
    On the `scf.parallel` loops of a host function that the GPU mapping turns
    into kernels (part of `spmd-lower-to-nvvm`, after linalg becomes parallel
    loops and before tiling), so that a step launches fewer, larger kernels
    (and, where a consumer reads what its producer wrote, keeps the value in
    a register instead of a round trip through device memory). These
    rewrites keep every element's arithmetic and its order:

    - *Vertical*: a loop whose body a later loop could start with is moved
      into it: the same non-unit iteration space (equal bounds and steps,
      dimensions of one iteration dropped, as a fill of `4x6x1` and the
      `4x6` row reduction that accumulates into it), and every pair of
      accesses to one buffer of which one writes is a `memref.load`/`store`
      of the same memref at the same indices in both (the same thread then
      reads what it wrote itself). Elementwise chains that bufferization
      left apart and a fill with the reduction it initialises become one
      loop.
    - *Horizontal*: consecutive loops that touch no common buffer where one
      of them writes become one 1-D loop over the sum of their iteration
      counts; a binary `scf.if` tree on the linear index picks the member,
      whose indices are delinearized from it. The optimizer's updates of
      every parameter, independent of each other, become one launch (a
      multi-tensor kernel, as PyTorch's `foreach` optimizers).

    - *Earlier*: a loop moves up to join the earliest loop it can run
      beside (horizontally), past operations that touch nothing it touches,
      with the operations computing the values it uses (buffers, views,
      constants, state-address lookups): cross-entropy's count of targets,
      which reads only an input, joins the step's first kernel.
    - Vertical fusion also runs a producer and a consumer over the same
      number of iterations but different shapes when every element they
      share is accessed densely through identity-layout views of one buffer
      (a 16x8 gradient and the copy of its 128-element collapse_shape into a
      bucket): the producer's indices are delinearized from the consumer's
      iteration. A pair over one space that names the shared elements
      through different views (a 1x16 column sum and the copy of its
      16-element collapse_shape) fuses the same way, and accesses to
      disjoint slices of one buffer (two gradients' places in a bucket)
      are not shared elements.
    - *Into a row kernel*: loops that touch nothing a row kernel of
      `spmd-gpu-row-kernels` touches (a `gpu.launch` of R blocks of one
      warp whose only writes are stores; a bias gradient's column sum next
      to LayerNorm's backward, the optimizer's step counters) join its
      launch, as one horizontally fused loop run by blocks R, R + 1, ...
      (a warp's width of iterations each). The row part stays
      straight-line code for every block, since its warp shuffles may not
      sit in a branch (the emulator runs a kernel phase by phase between
      them): the added blocks compute row R - 1 again with its stores
      skipped. A loop moves to the kernel past what touches none of its
      buffers (from after it, with the values it uses). Before the other
      loop moves and again after horizontal fusion; a kernel takes loops
      once.

    A loop moves (to the loop it joins) only past operations that do not
    touch what it touches; the runtime's GEMM, attention and collective
    calls touch the buffers whose addresses they are given (C and outputs
    written, the rest read; a wait, its collective's), other calls end a
    group, as do copies and frees of its buffers. Aliasing: two `gpu.alloc`/`memref.alloc`
    results are different buffers, as are runtime buffers with different
    `spmd.gpu_buffer` names (`spmd-gpu-memory` tags them) and a fresh
    allocation and a function argument; views (subview, reshape, cast,
    transpose) are their source's buffer, and two views of one buffer with static layouts
    over disjoint ranges of it (a bucket's pieces) do not overlap; anything
    else may alias. Loops with results,
    nested parallel loops, non-constant bounds, or operations whose memory
    effects are unknown are left alone.
    ```mlir
    scf.parallel (%i) = (%c0) to (%c6) step (%c1) {
      memref.store %x, %a[%i] : memref<6xf32>
      scf.reduce
    }
    scf.parallel (%i, %j) = (%c0, %c0) to (%c2, %c5) step (%c1, %c1) {
      memref.store %y, %b[%i, %j] : memref<2x5xf32>
      scf.reduce
    }
    // becomes one loop of 6 + 10 iterations
    scf.parallel (%k) = (%c0) to (%c16) step (%c1) {
      %first = arith.cmpi ult, %k, %c6 : index
      scf.if %first {
        memref.store %x, %a[%k] : memref<6xf32>
      } else {
        // %i, %j = delinearized %k - 6
        memref.store %y, %b[%i, %j] : memref<2x5xf32>
      }
      scf.reduce
    }
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::scf::SCFDialect"];
}

def SpmdGpuGroupGemmsPass
    : Pass<"spmd-gpu-group-gemms", "::mlir::ModuleOp"> {
  let summary = "Two independent f32 GEMMs in one cuBLAS call: fewer launches";
  let description = [{
    On the bufferized host code of a GPU step (part of `spmd-lower-to-nvvm`,
    after `spmd-gpu-fuse-kernels`): two `spmdGpuSgemm` calls of one block
    that do not depend on each other become one `spmdGpuSgemmPair` call
    (SpmdGpuRuntime.h: `cublasSgemmGroupedBatched`, two groups of one
    matrix), two `spmdGpuSgemmStridedBatched` calls one
    `spmdGpuSgemmStridedBatchedPair` (two groups of their batches). A linear
    layer's backward is the common case: `dX = dY W` and `dW = dY^T X` both
    read `dY` and nothing else of each other's; attention's batched
    matmuls have the same pattern.

    The later call moves up to the earlier one, with the operations that
    compute its operands (addresses, views, allocations, state-address
    lookups), when neither call writes what the other touches and nothing
    in between writes what the later one reads or touches what it writes
    (`Footprint.h`: a GEMM touches the buffers whose addresses it is given,
    C written, A and B read). An operation in between whose effects are
    unknown keeps the calls apart; the search looks at most 32
    memory-touching operations ahead. Each GEMM's arithmetic is unchanged
    (the same cuBLAS GEMM per group), so are the numerics.

    Not grouped: bf16 GEMMs, GEMMs of different kinds (a single one with a
    batched one), and more than two GEMMs (a third one starts the next
    pair).
    ```mlir
    call @spmdGpuSgemm(%o, %n, %n, %m, %k, %n2, %one, %dy, %lda, %w, %ldb,
                       %zero, %dx, %ldc) : (...) -> ()
    call @spmdGpuSgemm(%o, %t, %n, %k, %n2, %m, %one, %dy, %lda2, %x, %ldb2,
                       %zero, %dw, %ldc2) : (...) -> ()
    // becomes
    call @spmdGpuSgemmPair(%o, %n, %n, %m, %k, %n2, %one, %dy, %lda, %w,
                           %ldb, %zero, %dx, %ldc, %o, %t, %n, %k, %n2, %m,
                           %one, %dy, %lda2, %x, %ldb2, %zero, %dw, %ldc2)
        : (...) -> ()
    ```
  }];
  let dependentDialects = ["::mlir::func::FuncDialect"];
}

def SpmdGpuStreamOrderPass
    : Pass<"spmd-gpu-stream-order", "::mlir::ModuleOp"> {
  let summary = "Orders a program's device work on one stream; the host "
                "waits only where it reads device memory";
  let description = [{
    After kernel outlining (part of `spmd-lower-to-nvvm`, in place of
    upstream `gpu-async-region`, which makes the host wait for the device
    before every call it does not know: each cuBLAS matmul and collective).
    In every host function with GPU ops: launches, copies, memsets,
    allocations and frees become asynchronous, each after the one before (one
    token chain: the program stream); calls of the runtime functions that
    order their device work on that stream themselves (`spmdGpuSgemm`, the
    collectives and `spmdWait`, state and constant addresses, rank queries;
    see SpmdGpuRuntime.h) need no wait; any other op that may touch memory
    (a host copy of device data, an unknown call), a block's terminator and
    an op with regions (host control flow, each of whose blocks is ordered
    on its own) come after a host-blocking `gpu.wait`. The function calls
    `spmdGpuProgramBegin` first and `spmdGpuProgramEnd` before it returns,
    which is when the runtime orders its calls on the program stream.
    ```mlir
    %c = gpu.alloc () : memref<4xf32>
    gpu.launch_func @k::@k blocks in (%one, %one, %one)
        threads in (%one, %one, %one) args(%c : memref<4xf32>)
    call @spmdGpuSgemm(...)
    return
    // becomes
    call @spmdGpuProgramBegin() : () -> ()
    %t0 = gpu.wait async
    %c, %t1 = gpu.alloc async [%t0] () : memref<4xf32>
    %t2 = gpu.launch_func async [%t1] @k::@k ...
    call @spmdGpuSgemm(...)
    gpu.wait [%t2]
    call @spmdGpuProgramEnd() : () -> ()
    return
    ```
    Unsupported: host code that already has asynchronous GPU ops or
    `gpu.wait` (diagnosed).
  }];
  let dependentDialects = ["::mlir::func::FuncDialect",
                           "::mlir::gpu::GPUDialect"];
}

def SpmdVerifyGpuHostCodePass
    : Pass<"spmd-verify-gpu-host-code", "::mlir::ModuleOp"> {
  let summary = "Rejects host code that dereferences device memory";
  let description = [{
    After kernel outlining (part of `spmd-lower-to-nvvm`): any `memref.load`
    or `memref.store` left in a host function would read or write a device
    buffer on the CPU; each is reported with its location. Typical cause: a
    scalar taken out of a tensor (`tensor.extract`, e.g. an optimizer's step
    counter) outside a kernel.
  }];
}

def SpmdGpuTraceSourcesPass
    : Pass<"spmd-gpu-trace-sources", "::mlir::ModuleOp"> {
  let summary = "Tells the runtime which user line each kernel and GEMM runs";
  let description = [{
    After kernel outlining (part of `spmd-lower-to-nvvm`): before each
    `gpu.launch_func` and each call of a GPU runtime compute function
    (`spmdGpu*`: GEMMs, attention) in a host function, a call
    `spmdGpuTraceSource(name)` with the name a step trace gives the code of
    the op's location, `user.py:LINE|module.py:LINE` (the innermost frame of
    the user's model and of the torch.nn module it runs, as
    spmd-trace-regions names CPU regions), or a null pointer when the
    location has no user frame. While tracing, the runtime names the next
    kernel's event after it (a GEMM's and attention's events get it as
    their `source`); off, the call stores a pointer. A fused kernel carries
    the location of its first member.

    ```mlir
    %n = llvm.mlir.addressof @__spmd_source_0 : !llvm.ptr
    func.call @spmdGpuTraceSource(%n) : (!llvm.ptr) -> ()
    gpu.launch_func @train_step_kernel::@train_step_kernel ...
    ```
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect",
                           "::mlir::func::FuncDialect"];
}

#endif // SPMD_CONVERSION_GPU_PASSES_TD
