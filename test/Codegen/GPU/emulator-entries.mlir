// RUN: spmd-gpu-opt %s --spmd-gpu-emulator-entries --split-input-file --verify-diagnostics | FileCheck %s

// The launch entry reads each parameter through cuLaunchKernel's array of
// pointers, hands pointers to the check callback, and calls the kernel with
// the grid and block sizes; the parameter sizes (count first) are a constant.
// CHECK: llvm.mlir.global external constant @__spmd_emu_m__k_params(dense<[3, 8, 8, 4]> : tensor<4xi64>)
// CHECK-LABEL: llvm.func @__spmd_emu_m__k(
// CHECK-SAME: %[[PARAMS:[a-z0-9_]+]]: !llvm.ptr, %[[GX:[a-z0-9_]+]]: i64, %[[GY:[a-z0-9_]+]]: i64, %[[GZ:[a-z0-9_]+]]: i64, %[[BX:[a-z0-9_]+]]: i64, %[[BY:[a-z0-9_]+]]: i64, %[[BZ:[a-z0-9_]+]]: i64, %[[CHECK:[a-z0-9_]+]]: !llvm.ptr)
// CHECK: %[[S0:.*]] = llvm.getelementptr %[[PARAMS]][0]
// CHECK: %[[P0:.*]] = llvm.load %[[S0]] : !llvm.ptr -> !llvm.ptr
// CHECK: %[[V0:.*]] = llvm.load %[[P0]] : !llvm.ptr -> !llvm.ptr
// CHECK: llvm.call %[[CHECK]](%[[V0]])
// CHECK: %[[S1:.*]] = llvm.getelementptr %[[PARAMS]][1]
// CHECK: %[[V1:.*]] = llvm.load %{{.*}} : !llvm.ptr -> i64
// CHECK: %[[S2:.*]] = llvm.getelementptr %[[PARAMS]][2]
// CHECK: %[[V2:.*]] = llvm.load %{{.*}} : !llvm.ptr -> f32
// CHECK-NOT: llvm.call %[[CHECK]]
// CHECK: llvm.call @__spmd_emu_impl_m__k(%[[V0]], %[[V1]], %[[V2]], %[[GX]], %[[GY]], %[[GZ]], %[[BX]], %[[BY]], %[[BZ]])
llvm.func @__spmd_emu_impl_m__k(%a: !llvm.ptr, %n: i64, %f: f32, %gx: i64, %gy: i64, %gz: i64, %bx: i64, %by: i64, %bz: i64) {
  llvm.return
}

// -----

// expected-error @below {{__spmd_emu_impl_bad__k is not a kernel made by spmd-gpu-kernels-to-host}}
llvm.func @__spmd_emu_impl_bad__k(%a: i64) {
  llvm.return
}
