//===- Passes.td - spmd conversion passes ------------------*- tablegen -*-===//

#ifndef SPMD_CONVERSION_PASSES_TD
#define SPMD_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertSpmdToRuntimePass
    : Pass<"convert-spmd-to-runtime", "::mlir::ModuleOp"> {
  let summary = "Lowers collectives, rank queries and state to libSpmdRuntime";
  let description = [{
    Runs on the local program (after `spmd-expand`), on tensors, so that
    upstream one-shot bufferization handles everything after it:

    - each synchronous collective becomes, per input, the input as an
      identity-layout buffer (bufferization copies only inputs whose buffer
      has another layout), a fresh output buffer, and a call into
      libSpmdRuntime with their addresses (`spmdAllReduce`, `spmdAllGather`,
      `spmdReduceScatter`, `spmdAllToAll4`, `spmdBroadcast`); the result
      tensor is the output buffer;
    - a coalesced collective (several operands) is one group: each
      operand's `...Start` form between `spmdGroupStart()` and
      `spmdGroupEnd()` (NCCL launches the group as one operation; MPI runs
      the non-blocking calls concurrently), then, if synchronous, one
      `spmdWait` per operand;
    - an asynchronous collective calls the `...Start` form (non-blocking
      MPI), which returns a handle; each `spmd.wait` of its futures calls
      `spmdWait(handle)` and yields the output buffer as a tensor, so the
      computation between them overlaps the communication;
    - `spmd.axis_index` becomes `spmdAxisIndex`, and `spmd.local_slice` a
      `tensor.extract_slice` at this rank's chunk (torch.chunk sizes);
    - `spmd.state` becomes a zero-initialized public `memref.global` of the
      same name, marked with its runtime element type code
      (`spmd.state_dtype`; `spmd-state-in-runtime-memory` later moves it
      into a buffer the runtime allocates); `spmd.load` copies the global into a new buffer,
      `spmd.store` copies into the global; a generated
      `spmd_register_state()`, called on entry of every function that
      touches state, registers each global by name (size, element type)
      with the runtime, so the host reads and writes state in place by name
      (`spmdStateBind`);
    - every public function that communicates (a collective, a local slice
      or a rank query) starts with `spmdProgramCheck(hash, name)`: the hash
      is of the local module as printed without locations, and on the
      function's first call the runtime checks that every rank has the same
      (ranks given different programs stop with an error instead of hanging
      or diverging).

    A group is passed as the mesh shape packed 16 bits per axis and a bit
    mask of the axes. Unsupported, with a diagnostic: futures not consumed
    by `spmd.wait` (or waited on in several blocks), dynamic shapes on
    collectives, element types other than
    f32/f64/i32/i64, meshes of more than 4 axes or axes of 65536 ranks or
    more, groups whose axes are not listed in increasing order, all_to_all
    of rank above 4.

    ```mlir
    %r = spmd.all_reduce %g on @dp axes = [0] sum : tensor<8xf32> -> tensor<8xf32>
    // becomes
    %in = bufferization.to_buffer %g read_only : tensor<8xf32> to memref<8xf32>
    %out = memref.alloc() : memref<8xf32>
    func.call @spmdAllReduce(%in_addr, %out_addr, %c8, %f32, %sum, %mesh, %mask)
        : (i64, i64, i64, i32, i32, i64, i64) -> ()
    %r = bufferization.to_tensor %out restrict writable : memref<8xf32> to tensor<8xf32>
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::bufferization::BufferizationDialect",
                           "::mlir::func::FuncDialect",
                           "::mlir::LLVM::LLVMDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::tensor::TensorDialect"];
}

def SpmdCollectiveInputsInPlacePass
    : Pass<"spmd-collective-inputs-in-place", "::mlir::func::FuncOp"> {
  let summary = "Lets the runtime read a collective's input in place";
  let description = [{
    Part of `spmd-lower-to-cpu`, on buffers, right after
    `spmd-free-after-last-use`. By default the runtime copies the input of
    a non-blocking collective when it starts (`spmdAllReduceStart`,
    `spmdAllGatherStart`, `spmdReduceScatterStart`), because the program
    may free or overwrite it before the wait: on GPT-2 124M under
    fully_shard those copies (whole gradients before their reduce-scatter,
    parameter shards before their gather) were ~450 MiB of each rank's
    resident memory and a memcpy of every gradient per step. This pass
    proves, for each start, that the input buffer stays allocated and
    unwritten until the `spmdWait` of its handle, and then ors
    `SPMD_INPUT_STAYS` (0x100) into the call's element-type code: the
    runtime then hands the buffer itself to the backend.

    The proof, conservative: the address is
    `extract_aligned_pointer_as_index` of a buffer whose root (through
    views) is a `memref.alloc` of the same block; the handle's first
    `spmdWait` is a later op of that block; and no op in between writes or
    frees that buffer or any view of it, or passes its address to a call
    other than as the input of another collective start. Anything else
    (state, function arguments, a wait in another block, an unknown op)
    keeps the copy.

    ```mlir
    %g = memref.alloc() : memref<256xf32>
    ...
    %h = func.call @spmdReduceScatterStart(%gi, %oi, %c1, %c256, %c1, %f32, ...)
    ... (nothing writes %g)
    func.call @spmdWait(%h) : (i64) -> ()
    // becomes
    %f32_stays = arith.constant 256 : i32
    %h = func.call @spmdReduceScatterStart(%gi, %oi, %c1, %c256, %c1, %f32_stays, ...)
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

def SpmdTraceRegionsPass : Pass<"spmd-trace-regions", "::mlir::ModuleOp"> {
  let summary = "Brackets the user's source lines as trace regions";
  let description = [{
    Part of `spmd-lower-to-cpu`, on buffers, after `spmd-outline-loop-nests`.
    In each public function, a run of consecutive ops that do work (calls,
    linalg ops, loops, copies) whose locations lead to the same frame of
    the user's code (the innermost frame outside PyTorch, torch-mlir and
    spmd; the bridge keeps FX stack traces as locations) and the same
    innermost `torch/nn/modules` frame becomes one region:
    `%t = call @spmdTraceBegin()` before it, `call @spmdTraceEnd(%t, name)`
    after it, `name` a constant `"user.py:LINE|module.py:LINE"`. With
    tracing on (`spmd.profile`), the runtime records each region as an
    event, so a step trace shows the time per line of the user's model;
    off, a region costs two calls and an atomic load. Ops whose locations
    hold no user frame (hand-written MLIR) get no region.

    ```mlir
    call @__spmd_generic_3(...) loc(callsite("model.py":12:0 at ...))
    call @spmdSgemm(...) loc(callsite("model.py":12:0 at ...))
    // becomes
    %t = call @spmdTraceBegin() : () -> i64
    call @__spmd_generic_3(...)
    call @spmdSgemm(...)
    %name = llvm.mlir.addressof @__spmd_region_0 : !llvm.ptr
    call @spmdTraceEnd(%t, %name) : (i64, !llvm.ptr) -> ()
    ```
  }];
  let dependentDialects = ["::mlir::func::FuncDialect",
                           "::mlir::LLVM::LLVMDialect"];
}

def SpmdStateInRuntimeMemoryPass
    : Pass<"spmd-state-in-runtime-memory", "::mlir::ModuleOp"> {
  let summary = "Keeps state in buffers the runtime allocates, not in globals";
  let description = [{
    Part of `spmd-lower-to-cpu`, on buffers, after `spmd-trace-regions`.
    `convert-spmd-to-runtime` declares each `spmd.state` as a zero
    `memref.global` marked `spmd.state_dtype` (the passes on tensors and
    bufferization recognize state stores by its `memref.get_global`). Left
    in the shared object, every parameter, gradient and optimizer moment
    would be a global in `.bss`: past ~2 GiB of them the default code model
    cannot reach them (a 24-layer GPT-2 with AdamW does not link), and
    their memory is the library's, not the runtime's to count or place.

    Here every state global goes away. In each function, the first read of
    a state's address becomes, at the function's entry, a call
    `spmdStateAddress(name, bytes, dtype)`: the runtime's buffer of that
    name (made on first use, zero-filled, 128-byte aligned, kept for the
    life of the process and shared by every program that names the state,
    as the host's `spmdStateBind` sees it), and each `memref.get_global` of
    it a memref over that address. No size limit follows from the code
    model, and a state is allocated when a program first runs, not when
    the library is loaded.

    ```mlir
    memref.global "public" @w : memref<4xf32> = dense<0.0> {alignment = 128 : i64, spmd.state_dtype = 0 : i32}
    func.func @step() {
      %0 = memref.get_global @w : memref<4xf32>
      ...
    // becomes
    func.func @step() {
      %a = call @spmdStateAddress(%name, %c16_i64, %c0_i32) : (!llvm.ptr, i64, i32) -> i64
      %0 = builtin.unrealized_conversion_cast %desc : !llvm.struct<(ptr, ptr, i64, array<1 x i64>, array<1 x i64>)> to memref<4xf32>
      ...
    ```

    Unsupported, with a diagnostic: a state global read other than through
    `memref.get_global`, one without the identity layout.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::func::FuncDialect",
                           "::mlir::LLVM::LLVMDialect"];
}

#endif // SPMD_CONVERSION_PASSES_TD
