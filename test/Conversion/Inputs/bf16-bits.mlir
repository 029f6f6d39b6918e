// Input of bf16-lowering.mlir (spmd-bf16-bits-in-memory): bf16 values that
// only move between integer code and memory are stored and loaded as i16.
// CHECK-LABEL: llvm.func @copy
// CHECK: %[[V:.*]] = llvm.load %arg0 : !llvm.ptr -> i16
// CHECK: %[[S:.*]] = llvm.add %[[V]], %[[V]] : i16
// CHECK: llvm.store %[[S]], %arg1 : i16, !llvm.ptr
// CHECK-NOT: bf16
llvm.func @copy(%src: !llvm.ptr, %dst: !llvm.ptr) {
  %b = llvm.load %src : !llvm.ptr -> bf16
  %bits = llvm.bitcast %b : bf16 to i16
  %sum = llvm.add %bits, %bits : i16
  %back = llvm.bitcast %sum : i16 to bf16
  llvm.store %back, %dst : bf16, !llvm.ptr
  llvm.return
}

// A bf16 value used as a float stays.
// CHECK-LABEL: llvm.func @used_as_float
// CHECK: llvm.fpext %{{.*}} : bf16 to f32
llvm.func @used_as_float(%src: !llvm.ptr) -> f32 {
  %b = llvm.load %src : !llvm.ptr -> bf16
  %f = llvm.fpext %b : bf16 to f32
  llvm.return %f : f32
}
