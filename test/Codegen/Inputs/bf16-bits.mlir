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

// A select between bf16 values (a kernel argument and a loaded value)
// selects their bits: no bf16 select is left for LLVM to promote to float.
// CHECK-LABEL: llvm.func @select
// CHECK-SAME: (%[[C:.*]]: i1, %[[A:.*]]: i16, %[[P:.*]]: !llvm.ptr, %[[Q:.*]]: !llvm.ptr)
// CHECK: %[[V:.*]] = llvm.load %[[P]] : !llvm.ptr -> i16
// CHECK: %[[S:.*]] = llvm.select %[[C]], %[[A]], %[[V]] : i1, i16
// CHECK: llvm.store %[[S]], %[[Q]] : i16, !llvm.ptr
// CHECK-NOT: bf16
llvm.func @select(%c: i1, %a: i16, %p: !llvm.ptr, %q: !llvm.ptr) {
  %ab = llvm.bitcast %a : i16 to bf16
  %v = llvm.load %p : !llvm.ptr -> bf16
  %s = llvm.select %c, %ab, %v : i1, bf16
  llvm.store %s, %q : bf16, !llvm.ptr
  llvm.return
}
