// RUN: spmd-gpu-opt %s --spmd-gpu-group-gemms -split-input-file | FileCheck %s
// In spmd-lower-to-nvvm (on by default, group-gemms=0 turns it off), a
// linear layer's backward from linalg on tensors:
// RUN: spmd-gpu-opt %S/Inputs/linear_backward.mlir --spmd-lower-to-emulator \
// RUN:   | FileCheck %s --check-prefix=PIPELINE
// RUN: spmd-gpu-opt %S/Inputs/linear_backward.mlir \
// RUN:   --spmd-lower-to-emulator="group-gemms=0" \
// RUN:   | FileCheck %s --check-prefix=APART
// PIPELINE: llvm.call @spmdGpuSgemmPair(
// PIPELINE-NOT: llvm.call @spmdGpuSgemm(
// APART: llvm.call @spmdGpuSgemm(
// APART: llvm.call @spmdGpuSgemm(
// APART-NOT: llvm.call @spmdGpuSgemmPair

// A linear layer's backward: dX = dY W and dW = dY^T X read dY and write
// different buffers. The second moves up past a kernel that touches neither
// (with the allocation and the addresses it uses) and both become one call:
// the first's 14 operands, then the second's; the kernel runs after it.
// CHECK-LABEL: func.func @linear_backward
// CHECK: %[[PDY:.*]] = memref.extract_aligned_pointer_as_index %arg0
// CHECK-NEXT: %[[IDY:.*]] = arith.index_cast %[[PDY]] : index to i64
// CHECK: gpu.alloc () : memref<4x6xf32>
// CHECK: gpu.alloc () : memref<8x6xf32>
// CHECK: call @spmdGpuSgemmPair(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[IDY]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[IDY]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (i32, i32, i32, i32, i32, i32, f32, i64, i32, i64, i32, f32, i64, i32, i32, i32, i32, i32, i32, i32, f32, i64, i32, i64, i32, f32, i64, i32) -> ()
// CHECK-NEXT: gpu.alloc () : memref<16xf32>
// CHECK-NEXT: scf.parallel
// CHECK-NOT: call @spmdGpuSgemm
// CHECK: return
// CHECK: func.func private @spmdGpuSgemmPair(i32, i32, i32, i32, i32, i32, f32, i64, i32, i64, i32, f32, i64, i32, i32, i32, i32, i32, i32, i32, f32, i64, i32, i64, i32, f32, i64, i32)
func.func private @spmdGpuSgemm(i32, i32, i32, i32, i32, i32, f32, i64, i32, i64, i32, f32, i64, i32)
func.func @linear_backward(%dy: memref<4x8xf32>, %w: memref<8x6xf32>, %x: memref<4x6xf32>)
    -> (memref<4x6xf32>, memref<8x6xf32>, memref<16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %one = arith.constant 1.0 : f32
  %zero = arith.constant 0.0 : f32
  %c4_i32 = arith.constant 4 : i32
  %c6_i32 = arith.constant 6 : i32
  %c8_i32 = arith.constant 8 : i32
  %c101 = arith.constant 101 : i32
  %c111 = arith.constant 111 : i32
  %c112 = arith.constant 112 : i32
  %pdy = memref.extract_aligned_pointer_as_index %dy : memref<4x8xf32> -> index
  %idy = arith.index_cast %pdy : index to i64
  %pw = memref.extract_aligned_pointer_as_index %w : memref<8x6xf32> -> index
  %iw = arith.index_cast %pw : index to i64
  %dx = gpu.alloc () : memref<4x6xf32>
  %pdx = memref.extract_aligned_pointer_as_index %dx : memref<4x6xf32> -> index
  %idx = arith.index_cast %pdx : index to i64
  call @spmdGpuSgemm(%c101, %c111, %c111, %c4_i32, %c6_i32, %c8_i32, %one, %idy, %c8_i32, %iw, %c6_i32, %zero, %idx, %c6_i32) : (i32, i32, i32, i32, i32, i32, f32, i64, i32, i64, i32, f32, i64, i32) -> ()
  %z = gpu.alloc () : memref<16xf32>
  scf.parallel (%i) = (%c0) to (%c16) step (%c1) {
    memref.store %one, %z[%i] : memref<16xf32>
    scf.reduce
  }
  %dw = gpu.alloc () : memref<8x6xf32>
  %px = memref.extract_aligned_pointer_as_index %x : memref<4x6xf32> -> index
  %ix = arith.index_cast %px : index to i64
  %pdw = memref.extract_aligned_pointer_as_index %dw : memref<8x6xf32> -> index
  %idw = arith.index_cast %pdw : index to i64
  call @spmdGpuSgemm(%c101, %c112, %c111, %c8_i32, %c6_i32, %c4_i32, %one, %idy, %c8_i32, %ix, %c6_i32, %zero, %idw, %c6_i32) : (i32, i32, i32, i32, i32, i32, f32, i64, i32, i64, i32, f32, i64, i32) -> ()
  return %dx, %dw, %z : memref<4x6xf32>, memref<8x6xf32>, memref<16xf32>
}

// -----

// The second GEMM reads what the first writes (h = x W1, y = h W2): they
// stay two calls.
// CHECK-LABEL: func.func @dependent
// CHECK: call @spmdGpuSgemm(
// CHECK: call @spmdGpuSgemm(
// CHECK-NOT: spmdGpuSgemmPair
func.func private @spmdGpuSgemm(i32, i32, i32, i32, i32, i32, f32, i64, i32, i64, i32, f32, i64, i32)
func.func @dependent(%x: memref<4x4xf32>, %w1: memref<4x4xf32>, %w2: memref<4x4xf32>) -> memref<4x4xf32> {
  %one = arith.constant 1.0 : f32
  %zero = arith.constant 0.0 : f32
  %c4_i32 = arith.constant 4 : i32
  %c101 = arith.constant 101 : i32
  %c111 = arith.constant 111 : i32
  %px = memref.extract_aligned_pointer_as_index %x : memref<4x4xf32> -> index
  %ix = arith.index_cast %px : index to i64
  %pw1 = memref.extract_aligned_pointer_as_index %w1 : memref<4x4xf32> -> index
  %iw1 = arith.index_cast %pw1 : index to i64
  %pw2 = memref.extract_aligned_pointer_as_index %w2 : memref<4x4xf32> -> index
  %iw2 = arith.index_cast %pw2 : index to i64
  %h = gpu.alloc () : memref<4x4xf32>
  %ph = memref.extract_aligned_pointer_as_index %h : memref<4x4xf32> -> index
  %ih = arith.index_cast %ph : index to i64
  call @spmdGpuSgemm(%c101, %c111, %c111, %c4_i32, %c4_i32, %c4_i32, %one, %ix, %c4_i32, %iw1, %c4_i32, %zero, %ih, %c4_i32) : (i32, i32, i32, i32, i32, i32, f32, i64, i32, i64, i32, f32, i64, i32) -> ()
  %y = gpu.alloc () : memref<4x4xf32>
  %py = memref.extract_aligned_pointer_as_index %y : memref<4x4xf32> -> index
  %iy = arith.index_cast %py : index to i64
  call @spmdGpuSgemm(%c101, %c111, %c111, %c4_i32, %c4_i32, %c4_i32, %one, %ih, %c4_i32, %iw2, %c4_i32, %zero, %iy, %c4_i32) : (i32, i32, i32, i32, i32, i32, f32, i64, i32, i64, i32, f32, i64, i32) -> ()
  return %y : memref<4x4xf32>
}

// -----

// A kernel in between writes what the second GEMM reads (its A): the
// second cannot move up past it.
// CHECK-LABEL: func.func @kernel_in_between
// CHECK: call @spmdGpuSgemm(
// CHECK: scf.parallel
// CHECK: call @spmdGpuSgemm(
// CHECK-NOT: spmdGpuSgemmPair
func.func private @spmdGpuSgemm(i32, i32, i32, i32, i32, i32, f32, i64, i32, i64, i32, f32, i64, i32)
func.func @kernel_in_between(%a: memref<4x4xf32>, %b: memref<4x4xf32>) -> (memref<4x4xf32>, memref<4x4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %one = arith.constant 1.0 : f32
  %zero = arith.constant 0.0 : f32
  %c4_i32 = arith.constant 4 : i32
  %c101 = arith.constant 101 : i32
  %c111 = arith.constant 111 : i32
  %pa = memref.extract_aligned_pointer_as_index %a : memref<4x4xf32> -> index
  %ia = arith.index_cast %pa : index to i64
  %pb = memref.extract_aligned_pointer_as_index %b : memref<4x4xf32> -> index
  %ib = arith.index_cast %pb : index to i64
  %c = gpu.alloc () : memref<4x4xf32>
  %pc = memref.extract_aligned_pointer_as_index %c : memref<4x4xf32> -> index
  %ic = arith.index_cast %pc : index to i64
  call @spmdGpuSgemm(%c101, %c111, %c111, %c4_i32, %c4_i32, %c4_i32, %one, %ia, %c4_i32, %ib, %c4_i32, %zero, %ic, %c4_i32) : (i32, i32, i32, i32, i32, i32, f32, i64, i32, i64, i32, f32, i64, i32) -> ()
  %t = gpu.alloc () : memref<4x4xf32>
  scf.parallel (%i, %j) = (%c0, %c0) to (%c4, %c4) step (%c1, %c1) {
    memref.store %one, %t[%i, %j] : memref<4x4xf32>
    scf.reduce
  }
  %pt = memref.extract_aligned_pointer_as_index %t : memref<4x4xf32> -> index
  %it = arith.index_cast %pt : index to i64
  %d = gpu.alloc () : memref<4x4xf32>
  %pd = memref.extract_aligned_pointer_as_index %d : memref<4x4xf32> -> index
  %id = arith.index_cast %pd : index to i64
  call @spmdGpuSgemm(%c101, %c111, %c111, %c4_i32, %c4_i32, %c4_i32, %one, %it, %c4_i32, %ib, %c4_i32, %zero, %id, %c4_i32) : (i32, i32, i32, i32, i32, i32, f32, i64, i32, i64, i32, f32, i64, i32) -> ()
  return %c, %d : memref<4x4xf32>, memref<4x4xf32>
}

// -----

// Both GEMMs accumulate into one C (beta = 1): the second writes what the
// first writes, so they stay apart (in order).
// CHECK-LABEL: func.func @same_output
// CHECK: call @spmdGpuSgemm(
// CHECK: call @spmdGpuSgemm(
// CHECK-NOT: spmdGpuSgemmPair
func.func private @spmdGpuSgemm(i32, i32, i32, i32, i32, i32, f32, i64, i32, i64, i32, f32, i64, i32)
func.func @same_output(%a: memref<4x4xf32>, %b: memref<4x4xf32>, %c: memref<4x4xf32>) -> memref<4x4xf32> {
  %one = arith.constant 1.0 : f32
  %c4_i32 = arith.constant 4 : i32
  %c101 = arith.constant 101 : i32
  %c111 = arith.constant 111 : i32
  %pa = memref.extract_aligned_pointer_as_index %a : memref<4x4xf32> -> index
  %ia = arith.index_cast %pa : index to i64
  %pb = memref.extract_aligned_pointer_as_index %b : memref<4x4xf32> -> index
  %ib = arith.index_cast %pb : index to i64
  %pc = memref.extract_aligned_pointer_as_index %c : memref<4x4xf32> -> index
  %ic = arith.index_cast %pc : index to i64
  call @spmdGpuSgemm(%c101, %c111, %c111, %c4_i32, %c4_i32, %c4_i32, %one, %ia, %c4_i32, %ib, %c4_i32, %one, %ic, %c4_i32) : (i32, i32, i32, i32, i32, i32, f32, i64, i32, i64, i32, f32, i64, i32) -> ()
  call @spmdGpuSgemm(%c101, %c111, %c111, %c4_i32, %c4_i32, %c4_i32, %one, %ib, %c4_i32, %ia, %c4_i32, %one, %ic, %c4_i32) : (i32, i32, i32, i32, i32, i32, f32, i64, i32, i64, i32, f32, i64, i32) -> ()
  return %c : memref<4x4xf32>
}

// -----

// An unknown call in between (its effects unknown) keeps them apart.
// CHECK-LABEL: func.func @unknown_call
// CHECK: call @spmdGpuSgemm(
// CHECK: call @something
// CHECK: call @spmdGpuSgemm(
// CHECK-NOT: spmdGpuSgemmPair
func.func private @spmdGpuSgemm(i32, i32, i32, i32, i32, i32, f32, i64, i32, i64, i32, f32, i64, i32)
func.func private @something()
func.func @unknown_call(%a: memref<4x4xf32>, %b: memref<4x4xf32>) -> (memref<4x4xf32>, memref<4x4xf32>) {
  %one = arith.constant 1.0 : f32
  %zero = arith.constant 0.0 : f32
  %c4_i32 = arith.constant 4 : i32
  %c101 = arith.constant 101 : i32
  %c111 = arith.constant 111 : i32
  %pa = memref.extract_aligned_pointer_as_index %a : memref<4x4xf32> -> index
  %ia = arith.index_cast %pa : index to i64
  %pb = memref.extract_aligned_pointer_as_index %b : memref<4x4xf32> -> index
  %ib = arith.index_cast %pb : index to i64
  %c = gpu.alloc () : memref<4x4xf32>
  %pc = memref.extract_aligned_pointer_as_index %c : memref<4x4xf32> -> index
  %ic = arith.index_cast %pc : index to i64
  %d = gpu.alloc () : memref<4x4xf32>
  %pd = memref.extract_aligned_pointer_as_index %d : memref<4x4xf32> -> index
  %id = arith.index_cast %pd : index to i64
  call @spmdGpuSgemm(%c101, %c111, %c111, %c4_i32, %c4_i32, %c4_i32, %one, %ia, %c4_i32, %ib, %c4_i32, %zero, %ic, %c4_i32) : (i32, i32, i32, i32, i32, i32, f32, i64, i32, i64, i32, f32, i64, i32) -> ()
  call @something() : () -> ()
  call @spmdGpuSgemm(%c101, %c111, %c111, %c4_i32, %c4_i32, %c4_i32, %one, %ib, %c4_i32, %ia, %c4_i32, %zero, %id, %c4_i32) : (i32, i32, i32, i32, i32, i32, f32, i64, i32, i64, i32, f32, i64, i32) -> ()
  return %c, %d : memref<4x4xf32>, memref<4x4xf32>
}

// -----

// A batched matmul's backward (attention's `att @ v`): two strided-batched
// GEMMs that read the same gradient become one call of their own pair (18
// operands each); a single GEMM next to them is not grouped with either.
// CHECK-LABEL: func.func @batched
// CHECK: call @spmdGpuSgemmStridedBatchedPair(%{{.*}}) : (i32, i32, i32, i32, i32, i32, f32, i64, i32, i64, i64, i32, i64, f32, i64, i32, i64, i32, i32, i32, i32, i32, i32, i32, f32, i64, i32, i64, i64, i32, i64, f32, i64, i32, i64, i32) -> ()
// CHECK: call @spmdGpuSgemm(
// CHECK-NOT: call @{{.*}}Pair(
func.func private @spmdGpuSgemmStridedBatched(i32, i32, i32, i32, i32, i32, f32, i64, i32, i64, i64, i32, i64, f32, i64, i32, i64, i32)
func.func private @spmdGpuSgemm(i32, i32, i32, i32, i32, i32, f32, i64, i32, i64, i32, f32, i64, i32)
func.func @batched(%g: memref<2x4x4xf32>, %a: memref<2x4x4xf32>, %v: memref<2x4x4xf32>) -> (memref<2x4x4xf32>, memref<2x4x4xf32>, memref<4x4xf32>) {
  %one = arith.constant 1.0 : f32
  %zero = arith.constant 0.0 : f32
  %c2_i32 = arith.constant 2 : i32
  %c4_i32 = arith.constant 4 : i32
  %c16_i64 = arith.constant 16 : i64
  %c101 = arith.constant 101 : i32
  %c111 = arith.constant 111 : i32
  %c112 = arith.constant 112 : i32
  %pg = memref.extract_aligned_pointer_as_index %g : memref<2x4x4xf32> -> index
  %ig = arith.index_cast %pg : index to i64
  %pa = memref.extract_aligned_pointer_as_index %a : memref<2x4x4xf32> -> index
  %ia = arith.index_cast %pa : index to i64
  %pv = memref.extract_aligned_pointer_as_index %v : memref<2x4x4xf32> -> index
  %iv = arith.index_cast %pv : index to i64
  %da = gpu.alloc () : memref<2x4x4xf32>
  %pda = memref.extract_aligned_pointer_as_index %da : memref<2x4x4xf32> -> index
  %ida = arith.index_cast %pda : index to i64
  call @spmdGpuSgemmStridedBatched(%c101, %c111, %c112, %c4_i32, %c4_i32, %c4_i32, %one, %ig, %c4_i32, %c16_i64, %iv, %c4_i32, %c16_i64, %zero, %ida, %c4_i32, %c16_i64, %c2_i32) : (i32, i32, i32, i32, i32, i32, f32, i64, i32, i64, i64, i32, i64, f32, i64, i32, i64, i32) -> ()
  %dv = gpu.alloc () : memref<2x4x4xf32>
  %pdv = memref.extract_aligned_pointer_as_index %dv : memref<2x4x4xf32> -> index
  %idv = arith.index_cast %pdv : index to i64
  call @spmdGpuSgemmStridedBatched(%c101, %c112, %c111, %c4_i32, %c4_i32, %c4_i32, %one, %ia, %c4_i32, %c16_i64, %ig, %c4_i32, %c16_i64, %zero, %idv, %c4_i32, %c16_i64, %c2_i32) : (i32, i32, i32, i32, i32, i32, f32, i64, i32, i64, i64, i32, i64, f32, i64, i32, i64, i32) -> ()
  %s = gpu.alloc () : memref<4x4xf32>
  %ps = memref.extract_aligned_pointer_as_index %s : memref<4x4xf32> -> index
  %is = arith.index_cast %ps : index to i64
  call @spmdGpuSgemm(%c101, %c111, %c111, %c4_i32, %c4_i32, %c4_i32, %one, %ig, %c4_i32, %iv, %c4_i32, %zero, %is, %c4_i32) : (i32, i32, i32, i32, i32, i32, f32, i64, i32, i64, i32, f32, i64, i32) -> ()
  return %da, %dv, %s : memref<2x4x4xf32>, memref<2x4x4xf32>, memref<4x4xf32>
}
