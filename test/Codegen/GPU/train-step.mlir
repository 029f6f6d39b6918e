// REQUIRES: cuda-toolkit
// The example train step (examples/mlp_train_step.mlir: MLP, MSE, backward,
// SGD with momentum on 2 ranks) on the GPU: parameters and momentum buffers
// are device state the runtime keeps by name, the optimizer's step counter
// is read on the host through a 0-d copy, the gradients are all-reduced by
// the runtime (NCCL), and the result links against libSpmdGpuRuntime.
//
// RUN: sed -n '1,87p' %S/../../../examples/mlp_train_step.mlir > %t.global.mlir
// RUN: spmd-opt %t.global.mlir --spmd-distribute \
// RUN:   | spmd-gpu-opt --spmd-lower-to-nvvm="cuda-toolkit=%cuda_root" -o %t.mlir
// RUN: FileCheck %s < %t.mlir
// RUN: mlir-translate --mlir-to-llvmir %t.mlir -o %t.ll
// RUN: llc -O2 -mtriple=%host_triple -relocation-model=pic -filetype=obj %t.ll -o %t.o
// RUN: %host_cxx -shared %t.o -o %t.so %gpu_libs -Wl,--no-undefined

// CHECK-DAG: llvm.mlir.global internal constant @__spmd_gpu_state_name_fc1.weight("fc1.weight\00")
// CHECK-DAG: llvm.mlir.global internal constant @__spmd_gpu_state_name_optimizer.step("optimizer.step\00")
// CHECK-LABEL: llvm.func @train_step(
// CHECK: llvm.call @spmdGpuStateAddress
// CHECK: llvm.call @spmdAllReduce
// CHECK: llvm.call @spmdAllReduce
// CHECK: gpu.binary @train_step_kernel [#gpu.object<#nvvm.target<O = 3, chip = "sm_90", features = "+ptx86">
// CHECK-LABEL: llvm.func @dump(
// CHECK: llvm.func @spmdGpuStateAddress(!llvm.ptr, i64, i32) -> i64
//
// The step counter's value is read by the kernels that use it
// (spmd-gpu-scalars-into-kernels): no host copy of device data, and the
// host waits for the device once, at the end of the step.
// RUN: FileCheck %s --check-prefix=SCALAR < %t.mlir
// SCALAR-LABEL: llvm.func @train_step(
// SCALAR-NOT: llvm.call @mgpuStreamSynchronize
// SCALAR-NOT: llvm.load
// SCALAR: llvm.call @mgpuStreamSynchronize
// SCALAR-NEXT: llvm.call @mgpuStreamDestroy
// SCALAR-NEXT: llvm.call @spmdGpuProgramEnd()
// SCALAR-NEXT: llvm.return
