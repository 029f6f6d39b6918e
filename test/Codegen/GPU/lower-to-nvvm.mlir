// REQUIRES: cuda-toolkit
// The GPU lowering of a distributed step: kernels compiled to sm_90 cubins
// by ptxas, matmuls through cuBLAS, the gradient all-reduces through the
// runtime ABI (NCCL in libSpmdGpuRuntime), device memory from mgpuMemAlloc;
// the result links against libSpmdGpuRuntime into an executable.
//
// RUN: spmd-opt %S/Inputs/grad_step.mlir --spmd-distribute \
// RUN:   | spmd-gpu-opt --spmd-lower-to-nvvm="cuda-toolkit=%cuda_root" -o %t.mlir
// RUN: FileCheck %s < %t.mlir
// RUN: mlir-translate --mlir-to-llvmir %t.mlir -o %t.ll
// RUN: llc -O2 -mtriple=%host_triple -relocation-model=pic -filetype=obj %t.ll -o %t.o
// RUN: %host_cxx %S/Inputs/grad_step_main.cpp %t.o -o %t.exe %gpu_libs
// RUN: FileCheck %s --check-prefix=LL < %t.ll

// Host code (spmd-gpu-stream-order): device buffers, the forward matmul on
// cuBLAS, the kernels (the elementwise ones fused into one; the 0-d fill
// and the full sum of this rank's 32 values, one thread's work, fused into
// another: spmd-gpu-fuse-kernels), the gradient matmul, then the two
// all-reduces (loss, gradient), all ordered on the program stream: the host
// waits once, at the end.
// CHECK-LABEL: llvm.func @grad_step(
// CHECK: llvm.call @spmdGpuProgramBegin()
// CHECK-NOT: llvm.call @mgpuStreamSynchronize
// CHECK: llvm.call @mgpuMemAlloc
// CHECK-NOT: llvm.call @mgpuStreamSynchronize
// CHECK: llvm.call @spmdGpuSgemm
// CHECK-NOT: llvm.call @mgpuStreamSynchronize
// CHECK: gpu.launch_func
// CHECK-NOT: llvm.call @mgpuStreamSynchronize
// CHECK: llvm.call @spmdGpuSgemm
// CHECK-NOT: llvm.call @mgpuStreamSynchronize
// CHECK: llvm.call @spmdAllReduce
// CHECK-NOT: llvm.call @mgpuStreamSynchronize
// CHECK: llvm.call @spmdAllReduce
// CHECK: llvm.call @mgpuStreamSynchronize
// CHECK-NEXT: llvm.call @mgpuStreamDestroy
// CHECK-NEXT: llvm.call @spmdGpuProgramEnd()
// CHECK-NOT: llvm.call @mgpuStreamSynchronize
// CHECK-LABEL: llvm.func @_mlir_ciface_grad_step(
// Every kernel is a cubin for sm_90, with the PTX ISA named explicitly.
// CHECK-COUNT-2: gpu.binary @grad_step_kernel{{(_[0-9])?}} [#gpu.object<#nvvm.target<O = 3, chip = "sm_90", features = "+ptx86">, {{.*}}bin = "\7FELF
// CHECK-NOT: gpu.binary

// LL-DAG: declare ptr @mgpuModuleLoad(ptr, i64)
// LL-DAG: declare void @mgpuLaunchKernel(ptr, i64, i64, i64, i64, i64, i64, i32, ptr, ptr, ptr, i64)
// LL-DAG: declare void @spmdAllReduce(i64, i64, i64, i32, i32, i64, i64)
