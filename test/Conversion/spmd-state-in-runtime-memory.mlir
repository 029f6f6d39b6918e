// RUN: spmd-opt %s --spmd-state-in-runtime-memory | FileCheck %s
// A state global becomes the runtime's buffer of that name, looked up once
// per function at its entry; constants stay globals.

memref.global "public" @"fc.w" : memref<2x3xf32> = dense<0.0> {alignment = 128 : i64, spmd.state_dtype = 0 : i32}
memref.global "public" @"step" : memref<i64> = dense<0> {alignment = 128 : i64, spmd.state_dtype = 3 : i32}
memref.global "private" constant @ones : memref<2x3xf32> = dense<1.0>

// CHECK-NOT: memref.global "public"
// CHECK: memref.global "private" constant @ones
// CHECK-NOT: memref.global "public"

// CHECK-LABEL: func.func @update
// CHECK-DAG: %[[BYTES:.*]] = arith.constant 24 : i64
// CHECK-DAG: %[[F32:.*]] = arith.constant 0 : i32
// CHECK: %[[A:.*]] = call @spmdStateAddress(%{{.*}}, %[[BYTES]], %[[F32]]) : (!llvm.ptr, i64, i32) -> i64
// CHECK: %[[P:.*]] = llvm.inttoptr %[[A]] : i64 to !llvm.ptr
// CHECK: %[[W:.*]] = builtin.unrealized_conversion_cast %{{.*}} : !llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)> to memref<2x3xf32>
// CHECK: %[[S:.*]] = builtin.unrealized_conversion_cast %{{.*}} : !llvm.struct<(ptr, ptr, i64)> to memref<i64>
// CHECK-NOT: spmdStateAddress
// CHECK-NOT: memref.get_global @"fc.w"
// CHECK: %[[C:.*]] = memref.get_global @ones
// CHECK: memref.copy %[[C]], %[[W]]
// CHECK: memref.copy %[[W]], %arg0
// CHECK: memref.load %[[S]][]
func.func @update(%out: memref<2x3xf32>) -> i64 {
  %w = memref.get_global @"fc.w" : memref<2x3xf32>
  %c = memref.get_global @ones : memref<2x3xf32>
  memref.copy %c, %w : memref<2x3xf32> to memref<2x3xf32>
  %again = memref.get_global @"fc.w" : memref<2x3xf32>
  memref.copy %again, %out : memref<2x3xf32> to memref<2x3xf32>
  %s = memref.get_global @"step" : memref<i64>
  %v = memref.load %s[] : memref<i64>
  return %v : i64
}

// A function that names no state looks nothing up.
// CHECK-LABEL: func.func @no_state
// CHECK-NOT: spmdStateAddress
// CHECK: return
func.func @no_state() {
  return
}

// CHECK: func.func private @spmdStateAddress(!llvm.ptr, i64, i32) -> i64
