// RUN: spmd-opt %s --split-input-file --spmd-collective-inputs-in-place | FileCheck %s
// A non-blocking collective's input read in place (SPMD_INPUT_STAYS = 256
// or'ed into the element-type code) only where the buffer is a local
// allocation that nothing writes or frees before the handle's wait.

func.func private @spmdReduceScatterStart(i64, i64, i64, i64, i64, i32, i32, i64, i64) -> i64
func.func private @spmdAllReduceStart(i64, i64, i64, i32, i32, i64, i64) -> i64
func.func private @spmdWait(i64)

// CHECK-LABEL: func.func @stays
// CHECK: %[[F:.*]] = arith.constant 256 : i32
// CHECK: call @spmdReduceScatterStart({{.*}}, %[[F]], {{.*}})
func.func @stays(%sink: memref<128xf32>) {
  %f32 = arith.constant 0 : i32
  %sum = arith.constant 0 : i32
  %c1 = arith.constant 1 : i64
  %c256 = arith.constant 256 : i64
  %mesh = arith.constant 2 : i64
  %g = memref.alloc() : memref<256xf32>
  %out = memref.alloc() : memref<128xf32>
  %pg = memref.extract_aligned_pointer_as_index %g : memref<256xf32> -> index
  %po = memref.extract_aligned_pointer_as_index %out : memref<128xf32> -> index
  %gi = arith.index_cast %pg : index to i64
  %oi = arith.index_cast %po : index to i64
  %h = func.call @spmdReduceScatterStart(%gi, %oi, %c1, %c256, %c1, %f32, %sum, %mesh, %mesh) : (i64, i64, i64, i64, i64, i32, i32, i64, i64) -> i64
  // Reading the input meanwhile is fine.
  %c0 = arith.constant 0 : index
  %x = memref.load %g[%c0] : memref<256xf32>
  linalg.fill ins(%x : f32) outs(%sink : memref<128xf32>)
  func.call @spmdWait(%h) : (i64) -> ()
  memref.dealloc %g : memref<256xf32>
  memref.copy %out, %sink : memref<128xf32> to memref<128xf32>
  memref.dealloc %out : memref<128xf32>
  return
}

// -----

func.func private @spmdAllReduceStart(i64, i64, i64, i32, i32, i64, i64) -> i64
func.func private @spmdWait(i64)

// Written through a view before the wait: copied.
// CHECK-LABEL: func.func @written
// CHECK-NOT: arith.constant 256 : i32
// CHECK: call @spmdAllReduceStart
func.func @written() {
  %f32 = arith.constant 0 : i32
  %sum = arith.constant 0 : i32
  %n = arith.constant 64 : i64
  %mesh = arith.constant 2 : i64
  %one = arith.constant 1.0 : f32
  %g = memref.alloc() : memref<64xf32>
  %out = memref.alloc() : memref<64xf32>
  %pg = memref.extract_aligned_pointer_as_index %g : memref<64xf32> -> index
  %po = memref.extract_aligned_pointer_as_index %out : memref<64xf32> -> index
  %gi = arith.index_cast %pg : index to i64
  %oi = arith.index_cast %po : index to i64
  %h = func.call @spmdAllReduceStart(%gi, %oi, %n, %f32, %sum, %mesh, %mesh) : (i64, i64, i64, i32, i32, i64, i64) -> i64
  %v = memref.subview %g[0] [32] [1] : memref<64xf32> to memref<32xf32, strided<[1]>>
  linalg.fill ins(%one : f32) outs(%v : memref<32xf32, strided<[1]>>)
  func.call @spmdWait(%h) : (i64) -> ()
  memref.dealloc %g : memref<64xf32>
  memref.dealloc %out : memref<64xf32>
  return
}

// -----

func.func private @spmdAllReduceStart(i64, i64, i64, i32, i32, i64, i64) -> i64
func.func private @spmdWait(i64)
func.func private @opaque(i64)

// A function argument (the caller's, or state), the same buffer as input
// and output, an address handed to an unknown call, a wait in another
// block: copied.
// CHECK-LABEL: func.func @kept_copies
// CHECK-NOT: arith.constant 256 : i32
// CHECK: return
func.func @kept_copies(%arg: memref<64xf32>, %cond: i1) {
  %f32 = arith.constant 0 : i32
  %sum = arith.constant 0 : i32
  %n = arith.constant 64 : i64
  %mesh = arith.constant 2 : i64
  %out = memref.alloc() : memref<64xf32>
  %po = memref.extract_aligned_pointer_as_index %out : memref<64xf32> -> index
  %oi = arith.index_cast %po : index to i64
  %pa = memref.extract_aligned_pointer_as_index %arg : memref<64xf32> -> index
  %ai = arith.index_cast %pa : index to i64
  %h1 = func.call @spmdAllReduceStart(%ai, %oi, %n, %f32, %sum, %mesh, %mesh) : (i64, i64, i64, i32, i32, i64, i64) -> i64
  func.call @spmdWait(%h1) : (i64) -> ()
  %h2 = func.call @spmdAllReduceStart(%oi, %oi, %n, %f32, %sum, %mesh, %mesh) : (i64, i64, i64, i32, i32, i64, i64) -> i64
  func.call @spmdWait(%h2) : (i64) -> ()
  %g = memref.alloc() : memref<64xf32>
  %pg = memref.extract_aligned_pointer_as_index %g : memref<64xf32> -> index
  %gi = arith.index_cast %pg : index to i64
  %h3 = func.call @spmdAllReduceStart(%gi, %oi, %n, %f32, %sum, %mesh, %mesh) : (i64, i64, i64, i32, i32, i64, i64) -> i64
  func.call @opaque(%gi) : (i64) -> ()
  func.call @spmdWait(%h3) : (i64) -> ()
  %h4 = func.call @spmdAllReduceStart(%gi, %oi, %n, %f32, %sum, %mesh, %mesh) : (i64, i64, i64, i32, i32, i64, i64) -> i64
  scf.if %cond {
    func.call @spmdWait(%h4) : (i64) -> ()
  }
  memref.dealloc %g : memref<64xf32>
  memref.dealloc %out : memref<64xf32>
  return
}
