// RUN: spmd-opt %s --spmd-plan-memory | FileCheck %s
// RUN: spmd-opt %s '--spmd-plan-memory=report-peak=2' -o /dev/null 2>&1 | FileCheck %s --check-prefix=REPORT
// The plan: the most bytes live at once (each buffer rounded up to its
// alignment, at least 64 bytes), and at that point activations, whole
// gradients (read by a reducing collective), communication buffers
// (written by a collective).

// At the peak: %act (4096), %grad (1024, reduced), %out (1024, written by
// the collective); %early (256) was freed before.
// CHECK-DAG: llvm.mlir.global external constant @__spmd_memory_plan_step(dense<[6144, 4096, 1024, 1024]> : tensor<4xi64>)
// Element sizes from the data layout: 100 indices are 800 bytes (832 with
// the 64-byte rounding), not a crash.
// CHECK-DAG: llvm.mlir.global external constant @__spmd_memory_plan_indices(dense<[832, 832, 0, 0]> : tensor<4xi64>)
// A dynamic size at its bound: min(max(n - r * 8, 0), 8) rows of 16 f32
// are at most 512 bytes; one without a bound is not counted.
// CHECK-DAG: llvm.mlir.global external constant @__spmd_memory_plan_chunk(dense<[512, 512, 0, 0]> : tensor<4xi64>)
// A function without buffers has an all-zero plan; private ones none.
// CHECK-DAG: llvm.mlir.global external constant @__spmd_memory_plan_empty(dense<0> : tensor<4xi64>)
// CHECK-NOT: __spmd_memory_plan_helper

// report-peak=N: a remark per function with the N largest buffers live at
// its peak, largest first (ties in allocation order).
// REPORT: remark: transient peak 6.0 KiB in 3 buffers; largest:
// REPORT-NEXT: 4.0 KiB activation memref<1024xf32> at loc({{.*}}:[[@LINE+19]]:
// REPORT-NEXT: 1.0 KiB whole gradient memref<256xf32> at loc(
// REPORT-NOT: communication memref<256xf32>
// REPORT: remark: transient peak 0.8 KiB in 1 buffers; largest:
// REPORT-NEXT: 0.8 KiB activation memref<100xindex>
// REPORT: remark: transient peak 0.0 KiB in 0 buffers; largest:
// REPORT-NOT: remark

func.func private @spmdAllReduceStart(i64, i64, i64, i32, i32, i64, i64) -> i64
func.func private @spmdWait(i64)

func.func @step(%x: memref<64xf32>) {
  %c0 = arith.constant 0.0 : f32
  %n = arith.constant 256 : i64
  %i32 = arith.constant 0 : i32
  %mesh = arith.constant 2 : i64
  %early = memref.alloc() : memref<64xf32>
  linalg.fill ins(%c0 : f32) outs(%early : memref<64xf32>)
  memref.dealloc %early : memref<64xf32>
  %act = memref.alloc() : memref<1024xf32>
  %grad = memref.alloc() : memref<256xf32>
  %out = memref.alloc() : memref<256xf32>
  %pi = memref.extract_aligned_pointer_as_index %grad : memref<256xf32> -> index
  %po = memref.extract_aligned_pointer_as_index %out : memref<256xf32> -> index
  %ai = arith.index_cast %pi : index to i64
  %ao = arith.index_cast %po : index to i64
  %h = func.call @spmdAllReduceStart(%ai, %ao, %n, %i32, %i32, %mesh, %mesh) : (i64, i64, i64, i32, i32, i64, i64) -> i64
  func.call @spmdWait(%h) : (i64) -> ()
  memref.dealloc %grad : memref<256xf32>
  memref.dealloc %out : memref<256xf32>
  memref.dealloc %act : memref<1024xf32>
  // Smaller than the peak above.
  %late = memref.alloc() : memref<16xf32>
  memref.dealloc %late : memref<16xf32>
  return
}

func.func @indices() {
  %a = memref.alloc() : memref<100xindex>
  memref.dealloc %a : memref<100xindex>
  return
}

func.func @chunk(%r: index, %n: index) {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %start = arith.muli %r, %c8 : index
  %left = arith.subi %n, %start : index
  %pos = arith.maxsi %left, %c0 : index
  %rows = arith.minsi %pos, %c8 : index
  %a = memref.alloc(%rows) : memref<?x16xf32>
  memref.dealloc %a : memref<?x16xf32>
  %b = memref.alloc(%n) : memref<?x16xf32>
  memref.dealloc %b : memref<?x16xf32>
  return
}

func.func @empty() {
  return
}

func.func private @helper() {
  %a = memref.alloc() : memref<16xf32>
  memref.dealloc %a : memref<16xf32>
  return
}
