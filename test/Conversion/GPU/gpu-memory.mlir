// RUN: spmd-gpu-opt %s --spmd-gpu-memory | FileCheck %s

memref.global "private" constant @table : memref<4xf32> = dense<[1.0, 2.0, 3.0, 4.0]> {alignment = 64 : i64}

// CHECK-LABEL: func.func @buffers
// The constant is copied to the device once, at entry, and freed at return.
// CHECK: %[[HOST:.*]] = memref.get_global @table : memref<4xf32>
// CHECK: %[[TABLE:.*]] = gpu.alloc () : memref<4xf32>
// CHECK: gpu.memcpy %[[TABLE]], %[[HOST]] : memref<4xf32>, memref<4xf32>
// CHECK: %[[A:.*]] = gpu.alloc () : memref<4xf32>
// CHECK: gpu.memcpy %[[A]], %[[TABLE]] : memref<4xf32>, memref<4xf32>
// CHECK: %[[B:.*]] = gpu.alloc () : memref<2x4xf32>
// A copy of a strided view is a kernel (linalg.copy), not a memcpy.
// CHECK: linalg.copy ins(%{{.*}} : memref<2x2xf32, strided<[4, 1], offset: 1>>) outs(%{{.*}} : memref<2x2xf32, strided<[4, 1], offset: 1>>)
// CHECK: gpu.dealloc %[[B]] : memref<2x4xf32>
// CHECK: gpu.dealloc %[[TABLE]] : memref<4xf32>
// CHECK-NEXT: return
// CHECK-NOT: memref.alloc
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
