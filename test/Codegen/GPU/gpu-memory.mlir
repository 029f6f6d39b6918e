// RUN: spmd-gpu-opt %s --spmd-gpu-memory -split-input-file | FileCheck %s
// RUN: spmd-gpu-opt %s --spmd-gpu-memory -split-input-file | FileCheck %s --check-prefix=STATE

memref.global "private" constant @table : memref<4xf32> = dense<[1.0, 2.0, 3.0, 4.0]> {alignment = 64 : i64}

// CHECK-LABEL: func.func @buffers
// The constant is the runtime's device copy of it (uploaded on the first
// call, kept after), looked up at entry by its host address and size.
// CHECK: %[[HOST:.*]] = memref.get_global @table : memref<4xf32>
// CHECK: %[[PTR:.*]] = memref.extract_aligned_pointer_as_index %[[HOST]]
// CHECK: %[[HOSTI:.*]] = arith.index_cast %[[PTR]] : index to i64
// CHECK: %[[BYTES:.*]] = arith.constant 16 : i64
// CHECK: %[[ADDR:.*]] = call @spmdGpuConstantAddress(%[[HOSTI]], %[[BYTES]]) : (i64, i64) -> i64
// CHECK: llvm.inttoptr %[[ADDR]]
// CHECK: %[[TABLE:.*]] = builtin.unrealized_conversion_cast %{{.*}} : !llvm.struct<(ptr, ptr, i64, array<1 x i64>, array<1 x i64>)> to memref<4xf32>
// CHECK: %[[A:.*]] = gpu.alloc () : memref<4xf32>
// CHECK: gpu.memcpy %[[A]], %[[TABLE]] : memref<4xf32>, memref<4xf32>
// CHECK: %[[B:.*]] = gpu.alloc () : memref<2x4xf32>
// A copy of a strided view is a kernel (linalg.copy), not a memcpy.
// CHECK: linalg.copy ins(%{{.*}} : memref<2x2xf32, strided<[4, 1], offset: 1>>) outs(%{{.*}} : memref<2x2xf32, strided<[4, 1], offset: 1>>)
// CHECK: gpu.dealloc %[[B]] : memref<2x4xf32>
// CHECK-NEXT: return
// CHECK-NOT: memref.alloc()
// CHECK: func.func private @spmdGpuConstantAddress(i64, i64) -> i64
func.func @buffers(%arg: memref<2x4xf32>) -> memref<4xf32> {
  %t = memref.get_global @table : memref<4xf32>
  %a = memref.alloc() : memref<4xf32>
  memref.copy %t, %a : memref<4xf32> to memref<4xf32>
  %b = memref.alloc() : memref<2x4xf32>
  %src = memref.subview %arg[0, 1] [2, 2] [1, 1] : memref<2x4xf32> to memref<2x2xf32, strided<[4, 1], offset: 1>>
  %dst = memref.subview %b[0, 1] [2, 2] [1, 1] : memref<2x4xf32> to memref<2x2xf32, strided<[4, 1], offset: 1>>
  memref.copy %src, %dst : memref<2x2xf32, strided<[4, 1], offset: 1>> to memref<2x2xf32, strided<[4, 1], offset: 1>>
  memref.dealloc %b : memref<2x4xf32>
  return %a : memref<4xf32>
}

// -----

// State: the runtime's device buffer of that name, as a memref descriptor
// over the address spmdGpuStateAddress returns.
memref.global "public" @"fc.w" : memref<2x3xf32> = dense<0.0> {alignment = 128 : i64}
// STATE: llvm.mlir.global internal constant @__spmd_gpu_state_name_fc.w("fc.w\00")
// STATE-LABEL: func.func @state
// STATE: %[[NAME:.*]] = llvm.mlir.addressof @__spmd_gpu_state_name_fc.w : !llvm.ptr
// STATE: %[[BYTES:.*]] = arith.constant 24 : i64
// STATE: %[[F32:.*]] = arith.constant 0 : i32
// STATE: %[[ADDR:.*]] = call @spmdGpuStateAddress(%[[NAME]], %[[BYTES]], %[[F32]]) : (!llvm.ptr, i64, i32) -> i64
// STATE: %[[PTR:.*]] = llvm.inttoptr %[[ADDR]] : i64 to !llvm.ptr
// STATE: %[[W:.*]] = builtin.unrealized_conversion_cast %{{.*}} : !llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)> to memref<2x3xf32>
// STATE: %[[COPY:.*]] = gpu.alloc () : memref<2x3xf32>
// STATE: gpu.memcpy %[[COPY]], %[[W]]
// A scalar the host reads: through a host copy.
// STATE: %[[HOST:.*]] = memref.alloca() : memref<f32>
// STATE: gpu.memcpy %[[HOST]], %{{.*}} : memref<f32>, memref<f32>
// STATE: memref.load %[[HOST]][] {spmd.host_copy} : memref<f32>
func.func @state(%s: memref<f32>) -> (memref<2x3xf32>, f32) {
  %w = memref.get_global @"fc.w" : memref<2x3xf32>
  %copy = memref.alloc() : memref<2x3xf32>
  memref.copy %w, %copy : memref<2x3xf32> to memref<2x3xf32>
  %v = memref.load %s[] : memref<f32>
  return %copy, %v : memref<2x3xf32>, f32
}
