//===- Passes.td - the GPU emulator's compilation --------*- tablegen -*-===//
//
// Test support, not part of the compiler: the passes that compile outlined
// GPU kernels for the host so that the GPU path runs against the GPU emulator
// (test/lib/GpuEmulator/Device) on machines without a GPU. spmd-gpu-opt registers
// them with the spmd-lower-to-emulator pipeline (LowerToEmulator.cpp), as
// mlir-opt registers upstream's test passes.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_TEST_GPUEMULATOR_PASSES_TD
#define SPMD_TEST_GPUEMULATOR_PASSES_TD

include "mlir/Pass/PassBase.td"

def SpmdGpuKernelsToHostPass
    : Pass<"spmd-gpu-kernels-to-host", "::mlir::ModuleOp"> {
  let summary = "Compiles outlined GPU kernels for the host (the emulator)";
  let description = [{
    After kernel outlining (part of `spmd-lower-to-emulator`): every
    kernel `@M::@F` becomes a host function `__spmd_emu_impl_M__F` taking the
    kernel's arguments and then the grid and block sizes (x, y, z each),
    whose body runs the kernel body once per block and thread, in loops;
    `gpu.block_id`/`thread_id`/`grid_dim`/`block_dim`/`global_id` become the
    loop indices and the sizes. Each `gpu.module @M` becomes `gpu.binary @M`
    whose object is the text `spmd-emulated-kernels:M` (the emulated
    driver's "image"; the launches keep referring to @M). The result runs
    on the CPU against the emulated CUDA driver, NCCL and cuBLAS
    (`build/lib/gpu-emulator`), so that the host side of the GPU path, the
    runtime and the kernels' index arithmetic are tested on machines without
    a GPU. A kernel with `gpu.shuffle` ops at the top level of its body
    (`spmd-gpu-row-kernels`' butterflies) runs phase by phase: the body is
    cut before each shuffle, every thread of a block runs a phase before any
    runs the next, the values a later phase uses are kept per thread
    (`memref.alloca` of the block's size), and a shuffle reads its partner's
    operand from them (xor, idx, up, down; out of range: the lane's own
    value, `valid` false). Unsupported, with a diagnostic: kernels that
    synchronize threads (`gpu.barrier`) or use workgroup/private
    attributions, shuffles inside loops or branches, other subgroup
    operations, and kernels that call functions.
    ```mlir
    gpu.module @step_kernel {
      gpu.func @step_kernel(%a: memref<64xf32>) kernel { ... gpu.return }
    }
    // adds
    func.func @__spmd_emu_impl_step_kernel__step_kernel(%a: memref<64xf32>,
        %gx: index, %gy: index, %gz: index,
        %bx: index, %by: index, %bz: index) {
      scf.for %block_z = %c0 to %gz step %c1 { ... scf.execute_region { ... } }
    }
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::func::FuncDialect",
                           "::mlir::gpu::GPUDialect",
                           "::mlir::NVVM::NVVMDialect",
                           "::mlir::scf::SCFDialect"];
}

def SpmdGpuEmulatorEntriesPass
    : Pass<"spmd-gpu-emulator-entries", "::mlir::ModuleOp"> {
  let summary = "Gives host-compiled kernels the emulator's launch interface";
  let description = [{
    The end of `spmd-lower-to-emulator`, on the LLVM dialect: for
    every `__spmd_emu_impl_M__F` made by `spmd-gpu-kernels-to-host`, an
    exported entry `__spmd_emu_M__F(params, gx, gy, gz, bx, by, bz, check)`
    that reads the arguments from `cuLaunchKernel`'s parameter array, passes
    every pointer argument to `check` (the emulator fails a launch that gives
    a kernel a pointer outside device memory) and runs the kernel, plus a
    constant `__spmd_emu_M__F_params` = {count, bytes of each parameter} the
    emulator uses to copy the parameters when the launch is enqueued.
    ```mlir
    llvm.func @__spmd_emu_impl_k__k(%a: !llvm.ptr, ..., %bz: i64)
    // gets
    llvm.mlir.global external constant @__spmd_emu_k__k_params(dense<[...]>)
    llvm.func @__spmd_emu_k__k(%params: !llvm.ptr, %gx: i64, ...,
                               %check: !llvm.ptr)
    ```
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

#endif // SPMD_TEST_GPUEMULATOR_PASSES_TD
