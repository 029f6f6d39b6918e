// RUN: spmd-opt %s --pass-pipeline='builtin.module(func.func(spmd-free-after-last-use))' | FileCheck %s

// Each buffer is freed after its last use, not at the end of the block.
// CHECK-LABEL: func.func @straight_line
// CHECK: %[[A:.*]] = memref.alloc()
// CHECK: linalg.fill {{.*}} outs(%[[A]]
// CHECK: memref.copy %[[A]], %arg0
// CHECK-NEXT: memref.dealloc %[[A]]
// CHECK: %[[B:.*]] = memref.alloc()
// CHECK: %[[V:.*]] = memref.collapse_shape %[[B]]
// CHECK: memref.copy %[[V]], %arg1
// CHECK-NEXT: memref.dealloc %[[B]]
// CHECK-NEXT: return
func.func @straight_line(%out: memref<64xf32>, %flat: memref<64xf32>) {
  %c0 = arith.constant 0.0 : f32
  %a = memref.alloc() : memref<64xf32>
  linalg.fill ins(%c0 : f32) outs(%a : memref<64xf32>)
  memref.copy %a, %out : memref<64xf32> to memref<64xf32>
  %b = memref.alloc() : memref<8x8xf32>
  linalg.fill ins(%c0 : f32) outs(%b : memref<8x8xf32>)
  %v = memref.collapse_shape %b [[0, 1]] : memref<8x8xf32> into memref<64xf32>
  memref.copy %v, %flat : memref<64xf32> to memref<64xf32>
  memref.dealloc %a : memref<64xf32>
  memref.dealloc %b : memref<8x8xf32>
  return
}

// A non-blocking collective reads and writes its buffers until its wait:
// they are freed after spmdWait, whose handle the call given their
// addresses returned.
// CHECK-LABEL: func.func @collective
// CHECK: %[[H:.*]] = call @spmdAllReduceStart
// CHECK: linalg.fill
// CHECK: call @spmdWait(%[[H]])
// CHECK-NEXT: memref.dealloc %[[IN:.*]] :
// CHECK: memref.copy
// CHECK-NEXT: memref.dealloc
// CHECK-NEXT: return
func.func private @spmdAllReduceStart(i64, i64, i64, i32, i32, i64, i64) -> i64
func.func private @spmdWait(i64)
func.func @collective(%other: memref<16xf32>, %result: memref<16xf32>) {
  %c0 = arith.constant 0.0 : f32
  %n = arith.constant 16 : i64
  %f32 = arith.constant 0 : i32
  %mesh = arith.constant 2 : i64
  %mask = arith.constant 1 : i64
  %in = memref.alloc() : memref<16xf32>
  %out = memref.alloc() : memref<16xf32>
  linalg.fill ins(%c0 : f32) outs(%in : memref<16xf32>)
  %pi = memref.extract_aligned_pointer_as_index %in : memref<16xf32> -> index
  %po = memref.extract_aligned_pointer_as_index %out : memref<16xf32> -> index
  %ai = arith.index_cast %pi : index to i64
  %ao = arith.index_cast %po : index to i64
  %h = func.call @spmdAllReduceStart(%ai, %ao, %n, %f32, %f32, %mesh, %mask) : (i64, i64, i64, i32, i32, i64, i64) -> i64
  linalg.fill ins(%c0 : f32) outs(%other : memref<16xf32>)
  func.call @spmdWait(%h) : (i64) -> ()
  memref.copy %out, %result : memref<16xf32> to memref<16xf32>
  memref.dealloc %in : memref<16xf32>
  memref.dealloc %out : memref<16xf32>
  return
}

// Used inside a loop: freed after the loop. Returned: left alone.
// CHECK-LABEL: func.func @nested_and_escaping
// CHECK: %[[L:.*]] = memref.alloc()
// CHECK: %[[R:.*]] = memref.alloc()
// CHECK: scf.for
// CHECK: }
// CHECK-NEXT: memref.dealloc %[[L]]
// CHECK: return %[[R]]
func.func @nested_and_escaping(%x: memref<4xf32>) -> memref<4xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %l = memref.alloc() : memref<4xf32>
  %r = memref.alloc() : memref<4xf32>
  scf.for %i = %c0 to %c4 step %c1 {
    %v = memref.load %x[%i] : memref<4xf32>
    memref.store %v, %l[%i] : memref<4xf32>
  }
  memref.copy %x, %r : memref<4xf32> to memref<4xf32>
  memref.dealloc %l : memref<4xf32>
  return %r : memref<4xf32>
}
