// RUN: spmd-opt %s --pass-pipeline='builtin.module(func.func(spmd-elide-buffer-copies))' -split-input-file | FileCheck %s

// A weight gradient (a GEMM's output) and the loss (one element) copied into
// their bucket: both are computed in their slices, the bucket is made before
// the first of them, and the copies are gone.
// CHECK-LABEL: func.func @into_bucket
// CHECK-NEXT: %[[BUCKET:.*]] = memref.alloc() : memref<70xf32>
// CHECK-NEXT: %[[S1:.*]] = memref.subview %[[BUCKET]][1] [64] [1]
// CHECK-NEXT: %[[G:.*]] = memref.expand_shape %[[S1]] {{\[\[}}0, 1]] output_shape [4, 16] : memref<64xf32, strided<[1], offset: 1>> into memref<4x16xf32, strided<[16, 1], offset: 1>>
// CHECK-NEXT: linalg.matmul ins(%{{.*}}, %{{.*}} : memref<4x8xf32>, memref<8x16xf32>) outs(%[[G]] : memref<4x16xf32, strided<[16, 1], offset: 1>>)
// CHECK-NEXT: %[[S0:.*]] = memref.subview %[[BUCKET]][0] [1] [1]
// CHECK-NEXT: %[[L:.*]] = memref.collapse_shape %[[S0]] [] : memref<1xf32, strided<[1]>> into memref<f32>
// CHECK-NEXT: linalg.reduce ins(%{{.*}} : memref<4xf32>) outs(%[[L]] : memref<f32>)
// CHECK-NOT: memref.copy
// CHECK: return %[[BUCKET]]
func.func @into_bucket(%a: memref<4x8xf32>, %b: memref<8x16xf32>, %x: memref<4xf32>) -> memref<70xf32> {
  %g = memref.alloc() : memref<4x16xf32>
  linalg.matmul ins(%a, %b : memref<4x8xf32>, memref<8x16xf32>) outs(%g : memref<4x16xf32>)
  %loss = memref.alloc() : memref<f32>
  linalg.reduce ins(%x : memref<4xf32>) outs(%loss : memref<f32>) dimensions = [0]
    (%in: f32, %acc: f32) {
      %s = arith.addf %in, %acc : f32
      linalg.yield %s : f32
    }
  %bucket = memref.alloc() : memref<70xf32>
  %l1 = memref.expand_shape %loss [] output_shape [1] : memref<f32> into memref<1xf32>
  %s0 = memref.subview %bucket[0] [1] [1] : memref<70xf32> to memref<1xf32, strided<[1]>>
  memref.copy %l1, %s0 : memref<1xf32> to memref<1xf32, strided<[1]>>
  %flat = memref.collapse_shape %g [[0, 1]] : memref<4x16xf32> into memref<64xf32>
  %s1 = memref.subview %bucket[1] [64] [1] : memref<70xf32> to memref<64xf32, strided<[1], offset: 1>>
  memref.copy %flat, %s1 : memref<64xf32> to memref<64xf32, strided<[1], offset: 1>>
  return %bucket : memref<70xf32>
}

// -----

// The copy of the source itself (no reshape between).
// CHECK-LABEL: func.func @direct
// CHECK-NEXT: %[[BUCKET:.*]] = memref.alloc() : memref<3xf32>
// CHECK-NEXT: %[[S:.*]] = memref.subview %[[BUCKET]][2] [1] [1]
// CHECK-NEXT: linalg.reduce ins(%{{.*}} : memref<4x1xf32>) outs(%[[S]] : memref<1xf32, strided<[1], offset: 2>>)
// CHECK-NOT: memref.copy
func.func @direct(%x: memref<4x1xf32>) -> memref<3xf32> {
  %r = memref.alloc() : memref<1xf32>
  linalg.reduce ins(%x : memref<4x1xf32>) outs(%r : memref<1xf32>) dimensions = [0]
    (%in: f32, %acc: f32) {
      %s = arith.addf %in, %acc : f32
      linalg.yield %s : f32
    }
  %bucket = memref.alloc() : memref<3xf32>
  %s = memref.subview %bucket[2] [1] [1] : memref<3xf32> to memref<1xf32, strided<[1], offset: 2>>
  memref.copy %r, %s : memref<1xf32> to memref<1xf32, strided<[1], offset: 2>>
  return %bucket : memref<3xf32>
}

// -----

// A loop nest's output of several elements keeps its copy (on the GPU the
// copy gathers such reductions into one kernel).
// CHECK-LABEL: func.func @loop_output
// CHECK: linalg.reduce ins(%{{.*}} : memref<4x6xf32>) outs(%[[R:.*]] : memref<6xf32>)
// CHECK: memref.copy %[[R]]
func.func @loop_output(%x: memref<4x6xf32>) -> memref<8xf32> {
  %r = memref.alloc() : memref<6xf32>
  linalg.reduce ins(%x : memref<4x6xf32>) outs(%r : memref<6xf32>) dimensions = [0]
    (%in: f32, %acc: f32) {
      %s = arith.addf %in, %acc : f32
      linalg.yield %s : f32
    }
  %bucket = memref.alloc() : memref<8xf32>
  %s = memref.subview %bucket[2] [6] [1] : memref<8xf32> to memref<6xf32, strided<[1], offset: 2>>
  memref.copy %r, %s : memref<6xf32> to memref<6xf32, strided<[1], offset: 2>>
  return %bucket : memref<8xf32>
}

// -----

// Kept: the GEMM's output is read after the copy.
// CHECK-LABEL: func.func @used_after
// CHECK: memref.copy
func.func @used_after(%a: memref<2x2xf32>, %b: memref<2x2xf32>, %o: memref<2x2xf32>) -> memref<4xf32> {
  %g = memref.alloc() : memref<2x2xf32>
  linalg.matmul ins(%a, %b : memref<2x2xf32>, memref<2x2xf32>) outs(%g : memref<2x2xf32>)
  %bucket = memref.alloc() : memref<4xf32>
  %flat = memref.collapse_shape %g [[0, 1]] : memref<2x2xf32> into memref<4xf32>
  %s = memref.subview %bucket[0] [4] [1] : memref<4xf32> to memref<4xf32, strided<[1]>>
  memref.copy %flat, %s : memref<4xf32> to memref<4xf32, strided<[1]>>
  memref.copy %g, %o : memref<2x2xf32> to memref<2x2xf32>
  return %bucket : memref<4xf32>
}

// -----

// Kept: the slice is written while the GEMM's output is live (the copy
// must overwrite it). A write to another slice of the bucket does not stop
// the GEMM from computing into its own.
// CHECK-LABEL: func.func @slice_touched
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : memref<2x2xf32>, memref<2x2xf32>) outs(%{{.*}} : memref<2x2xf32>)
// CHECK: memref.copy
// CHECK-LABEL: func.func @other_slice_touched
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : memref<2x2xf32>, memref<2x2xf32>) outs(%{{.*}} : memref<2x2xf32, strided<[2, 1], offset: 1>>)
// CHECK-NOT: memref.copy
func.func @slice_touched(%a: memref<2x2xf32>, %b: memref<2x2xf32>, %v: f32) -> memref<5xf32> {
  %c2 = arith.constant 2 : index
  %bucket = memref.alloc() : memref<5xf32>
  %g = memref.alloc() : memref<2x2xf32>
  linalg.matmul ins(%a, %b : memref<2x2xf32>, memref<2x2xf32>) outs(%g : memref<2x2xf32>)
  memref.store %v, %bucket[%c2] : memref<5xf32>
  %flat = memref.collapse_shape %g [[0, 1]] : memref<2x2xf32> into memref<4xf32>
  %s = memref.subview %bucket[1] [4] [1] : memref<5xf32> to memref<4xf32, strided<[1], offset: 1>>
  memref.copy %flat, %s : memref<4xf32> to memref<4xf32, strided<[1], offset: 1>>
  return %bucket : memref<5xf32>
}
func.func @other_slice_touched(%a: memref<2x2xf32>, %b: memref<2x2xf32>, %v: f32) -> memref<5xf32> {
  %bucket = memref.alloc() : memref<5xf32>
  %g = memref.alloc() : memref<2x2xf32>
  linalg.matmul ins(%a, %b : memref<2x2xf32>, memref<2x2xf32>) outs(%g : memref<2x2xf32>)
  %s0 = memref.subview %bucket[0] [1] [1] : memref<5xf32> to memref<1xf32, strided<[1]>>
  linalg.fill ins(%v : f32) outs(%s0 : memref<1xf32, strided<[1]>>)
  %flat = memref.collapse_shape %g [[0, 1]] : memref<2x2xf32> into memref<4xf32>
  %s = memref.subview %bucket[1] [4] [1] : memref<5xf32> to memref<4xf32, strided<[1], offset: 1>>
  memref.copy %flat, %s : memref<4xf32> to memref<4xf32, strided<[1], offset: 1>>
  return %bucket : memref<5xf32>
}

// -----

// Kept: a target that is not a fresh buffer (an argument may be anything,
// read anywhere), and a slice that is not contiguous.
// CHECK-LABEL: func.func @not_fresh
// CHECK: memref.copy
// CHECK-LABEL: func.func @strided_slice
// CHECK: memref.copy
func.func @not_fresh(%a: memref<2x2xf32>, %b: memref<2x2xf32>, %out: memref<8xf32>) {
  %g = memref.alloc() : memref<2x2xf32>
  linalg.matmul ins(%a, %b : memref<2x2xf32>, memref<2x2xf32>) outs(%g : memref<2x2xf32>)
  %flat = memref.collapse_shape %g [[0, 1]] : memref<2x2xf32> into memref<4xf32>
  %s = memref.subview %out[0] [4] [1] : memref<8xf32> to memref<4xf32, strided<[1]>>
  memref.copy %flat, %s : memref<4xf32> to memref<4xf32, strided<[1]>>
  return
}
func.func @strided_slice(%a: memref<2x2xf32>, %b: memref<2x2xf32>) -> memref<8xf32> {
  %g = memref.alloc() : memref<2x2xf32>
  linalg.matmul ins(%a, %b : memref<2x2xf32>, memref<2x2xf32>) outs(%g : memref<2x2xf32>)
  %bucket = memref.alloc() : memref<8xf32>
  %flat = memref.collapse_shape %g [[0, 1]] : memref<2x2xf32> into memref<4xf32>
  %s = memref.subview %bucket[0] [4] [2] : memref<8xf32> to memref<4xf32, strided<[2]>>
  memref.copy %flat, %s : memref<4xf32> to memref<4xf32, strided<[2]>>
  return %bucket : memref<8xf32>
}

// -----

// A pad's copy (an uneven gradient padded to split evenly for its
// reduce-scatter): the GEMM computes into the padded buffer's leading rows,
// and the pad's fill moves with the buffer before it.
// CHECK-LABEL: func.func @into_padded
// CHECK-NEXT: %[[ZERO:.*]] = arith.constant
// CHECK-NEXT: %[[PADDED:.*]] = memref.alloc() : memref<8x16xf32>
// CHECK-NEXT: linalg.fill ins(%[[ZERO]] : f32) outs(%[[PADDED]] : memref<8x16xf32>)
// CHECK-NEXT: %[[ROWS:.*]] = memref.subview %[[PADDED]][0, 0] [7, 16] [1, 1]
// CHECK-NEXT: linalg.matmul ins(%{{.*}}, %{{.*}} : memref<7x8xf32>, memref<8x16xf32>) outs(%[[ROWS]] : memref<7x16xf32, strided<[16, 1]>>)
// CHECK-NEXT: linalg.matmul ins(%{{.*}}, %{{.*}} : memref<7x8xf32>, memref<8x16xf32>) outs(%[[ROWS]] : memref<7x16xf32, strided<[16, 1]>>)
// CHECK-NOT: memref.copy
// CHECK: return %[[PADDED]]
func.func @into_padded(%a: memref<7x8xf32>, %b: memref<8x16xf32>) -> memref<8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %g = memref.alloc() : memref<7x16xf32>
  linalg.matmul ins(%a, %b : memref<7x8xf32>, memref<8x16xf32>) outs(%g : memref<7x16xf32>)
  linalg.matmul ins(%a, %b : memref<7x8xf32>, memref<8x16xf32>) outs(%g : memref<7x16xf32>)
  %padded = memref.alloc() : memref<8x16xf32>
  linalg.fill ins(%zero : f32) outs(%padded : memref<8x16xf32>)
  %rows = memref.subview %padded[0, 0] [7, 16] [1, 1] : memref<8x16xf32> to memref<7x16xf32, strided<[16, 1]>>
  memref.copy %g, %rows : memref<7x16xf32> to memref<7x16xf32, strided<[16, 1]>>
  return %padded : memref<8x16xf32>
}

// -----

// Kept: columns of a wider buffer are no contiguous run, and a fill that
// reads a value computed after the gradient cannot move before it.
// CHECK-LABEL: func.func @not_contiguous
// CHECK: memref.copy
// CHECK-LABEL: func.func @late_fill
// CHECK: memref.copy
func.func @not_contiguous(%a: memref<7x8xf32>, %b: memref<8x16xf32>) -> memref<7x17xf32> {
  %g = memref.alloc() : memref<7x16xf32>
  linalg.matmul ins(%a, %b : memref<7x8xf32>, memref<8x16xf32>) outs(%g : memref<7x16xf32>)
  %wide = memref.alloc() : memref<7x17xf32>
  %cols = memref.subview %wide[0, 0] [7, 16] [1, 1] : memref<7x17xf32> to memref<7x16xf32, strided<[17, 1]>>
  memref.copy %g, %cols : memref<7x16xf32> to memref<7x16xf32, strided<[17, 1]>>
  return %wide : memref<7x17xf32>
}
func.func @late_fill(%a: memref<7x8xf32>, %b: memref<8x16xf32>, %x: memref<f32>) -> memref<8x16xf32> {
  %g = memref.alloc() : memref<7x16xf32>
  linalg.matmul ins(%a, %b : memref<7x8xf32>, memref<8x16xf32>) outs(%g : memref<7x16xf32>)
  %v = memref.load %x[] : memref<f32>
  %padded = memref.alloc() : memref<8x16xf32>
  linalg.fill ins(%v : f32) outs(%padded : memref<8x16xf32>)
  %rows = memref.subview %padded[0, 0] [7, 16] [1, 1] : memref<8x16xf32> to memref<7x16xf32, strided<[16, 1]>>
  memref.copy %g, %rows : memref<7x16xf32> to memref<7x16xf32, strided<[16, 1]>>
  return %padded : memref<8x16xf32>
}

// -----

// A contiguous slice of another shape (one row of a 2-D bucket): flattened,
// then shaped as the gradient.
// CHECK-LABEL: func.func @into_row
// CHECK-NEXT: %[[BUCKET:.*]] = memref.alloc() : memref<2x64xf32>
// CHECK-NEXT: %[[ROW:.*]] = memref.subview %[[BUCKET]][1, 0] [1, 64] [1, 1]
// CHECK-NEXT: %[[FLAT:.*]] = memref.collapse_shape %[[ROW]] {{\[\[}}0, 1]] : memref<1x64xf32, strided<[64, 1], offset: 64>> into memref<64xf32, strided<[1], offset: 64>>
// CHECK-NEXT: %[[G:.*]] = memref.expand_shape %[[FLAT]] {{\[\[}}0, 1]] output_shape [4, 16]
// CHECK-NEXT: linalg.matmul {{.*}} outs(%[[G]] : memref<4x16xf32, strided<[16, 1], offset: 64>>)
// CHECK-NOT: memref.copy
func.func @into_row(%a: memref<4x8xf32>, %b: memref<8x16xf32>) -> memref<2x64xf32> {
  %g = memref.alloc() : memref<4x16xf32>
  linalg.matmul ins(%a, %b : memref<4x8xf32>, memref<8x16xf32>) outs(%g : memref<4x16xf32>)
  %bucket = memref.alloc() : memref<2x64xf32>
  %row = memref.subview %bucket[1, 0] [1, 64] [1, 1] : memref<2x64xf32> to memref<1x64xf32, strided<[64, 1], offset: 64>>
  %g2 = memref.expand_shape %g [[0, 1], [2]] output_shape [1, 4, 16] : memref<4x16xf32> into memref<1x4x16xf32>
  %g3 = memref.collapse_shape %g2 [[0], [1, 2]] : memref<1x4x16xf32> into memref<1x64xf32>
  memref.copy %g3, %row : memref<1x64xf32> to memref<1x64xf32, strided<[64, 1], offset: 64>>
  return %bucket : memref<2x64xf32>
}
