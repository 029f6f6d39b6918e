// RUN: spmd-gpu-opt %s --pass-pipeline='builtin.module(func.func(spmd-gpu-fuse-kernels))' -split-input-file | FileCheck %s
// In spmd-lower-to-nvvm (on by default, fuse-kernels=0 turns it off): the
// gradient step's four kernels become two.
// RUN: spmd-opt %S/Inputs/grad_step.mlir --spmd-distribute \
// RUN:   | spmd-gpu-opt --spmd-lower-to-emulator | FileCheck %s --check-prefix=FUSED
// RUN: spmd-opt %S/Inputs/grad_step.mlir --spmd-distribute \
// RUN:   | spmd-gpu-opt --spmd-lower-to-emulator="fuse-kernels=0" | FileCheck %s --check-prefix=APART
// FUSED-COUNT-2: gpu.launch_func
// FUSED-NOT: gpu.launch_func
// APART-COUNT-4: gpu.launch_func
// APART-NOT: gpu.launch_func

// A fill (its unit dimension dropped) moves into the row reduction that
// accumulates into it: each thread initialises its own row, then sums it.
// CHECK-LABEL: func.func @fill_into_reduction
// CHECK: %[[OUT:.*]] = gpu.alloc
// CHECK: scf.parallel (%[[I:.*]]) = (%{{.*}}) to (%{{.*}}) step (%{{.*}}) {
// CHECK-NEXT: %[[Z:.*]] = arith.constant 0 : index
// CHECK-NEXT: memref.store %{{.*}}, %[[OUT]][%[[I]], %[[Z]]]
// CHECK-NEXT: scf.for
// CHECK-NOT: scf.parallel
func.func @fill_into_reduction(%x: memref<4x8xf32>) -> memref<4x1xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %zero = arith.constant 0.0 : f32
  %out = gpu.alloc () : memref<4x1xf32>
  scf.parallel (%i, %j) = (%c0, %c0) to (%c4, %c1) step (%c1, %c1) {
    memref.store %zero, %out[%i, %j] : memref<4x1xf32>
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%c4) step (%c1) {
    scf.for %k = %c0 to %c8 step %c1 {
      %v = memref.load %x[%i, %k] : memref<4x8xf32>
      %acc = memref.load %out[%i, %c0] : memref<4x1xf32>
      %s = arith.addf %v, %acc : f32
      memref.store %s, %out[%i, %c0] : memref<4x1xf32>
    }
    scf.reduce
  }
  return %out : memref<4x1xf32>
}

// -----

// An elementwise chain: the consumer reads what the producer wrote at the
// same element, and the producer's index check goes with it.
// CHECK-LABEL: func.func @chain
// CHECK: scf.parallel (%[[I:.*]], %[[J:.*]]) =
// CHECK: cf.assert
// CHECK: memref.store %{{.*}}, %[[T:.*]][%[[I]], %[[J]]]
// CHECK: memref.load %[[T]][%[[I]], %[[J]]]
// CHECK: math.exp
// CHECK-NOT: scf.parallel
func.func @chain(%x: memref<4x8xf32>, %n: index) -> memref<4x8xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %t = gpu.alloc () : memref<4x8xf32>
  %y = gpu.alloc () : memref<4x8xf32>
  scf.parallel (%i, %j) = (%c0, %c0) to (%c4, %c8) step (%c1, %c1) {
    %ok = arith.cmpi slt, %i, %n : index
    cf.assert %ok, "index out of range"
    %v = memref.load %x[%i, %j] : memref<4x8xf32>
    %d = arith.addf %v, %v : f32
    memref.store %d, %t[%i, %j] : memref<4x8xf32>
    scf.reduce
  }
  scf.parallel (%i, %j) = (%c0, %c0) to (%c4, %c8) step (%c1, %c1) {
    %v = memref.load %t[%i, %j] : memref<4x8xf32>
    %e = math.exp %v : f32
    memref.store %e, %y[%i, %j] : memref<4x8xf32>
    scf.reduce
  }
  return %y : memref<4x8xf32>
}

// -----

// The consumer reads the producer's result transposed: another thread's
// element. Neither fusion applies.
// CHECK-LABEL: func.func @transposed
// CHECK: scf.parallel
// CHECK: scf.parallel
func.func @transposed(%x: memref<4x4xf32>) -> memref<4x4xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %t = gpu.alloc () : memref<4x4xf32>
  %y = gpu.alloc () : memref<4x4xf32>
  scf.parallel (%i, %j) = (%c0, %c0) to (%c4, %c4) step (%c1, %c1) {
    %v = memref.load %x[%i, %j] : memref<4x4xf32>
    memref.store %v, %t[%i, %j] : memref<4x4xf32>
    scf.reduce
  }
  scf.parallel (%i, %j) = (%c0, %c0) to (%c4, %c4) step (%c1, %c1) {
    %v = memref.load %t[%j, %i] : memref<4x4xf32>
    memref.store %v, %y[%i, %j] : memref<4x4xf32>
    scf.reduce
  }
  return %y : memref<4x4xf32>
}

// -----

// Independent loops of different shapes: one loop over 6 + 10 iterations;
// the second member's indices are delinearized from the linear index.
// CHECK-LABEL: func.func @independent
// CHECK-DAG: %[[C16:.*]] = arith.constant 16 : index
// CHECK: scf.parallel (%[[K:.*]]) = (%{{.*}}) to (%[[C16]]) step (%{{.*}}) {
// CHECK: %[[FIRST:.*]] = arith.cmpi ult, %[[K]], %{{.*}} : index
// CHECK: scf.if %[[FIRST]] {
// CHECK: memref.store %{{.*}}, %{{.*}}[%[[K]]] : memref<6xf32>
// CHECK: } else {
// CHECK: %[[R:.*]] = arith.subi %[[K]], %{{.*}} : index
// CHECK: %[[J:.*]] = arith.remui %[[R]], %{{.*}} : index
// CHECK: %[[I:.*]] = arith.divui %[[R]], %{{.*}} : index
// CHECK: memref.store %{{.*}}, %{{.*}}[%[[I]], %[[J]]] : memref<2x5xf32>
// CHECK-NOT: scf.parallel
func.func @independent(%a: memref<6xf32>) -> memref<2x5xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c5 = arith.constant 5 : index
  %c6 = arith.constant 6 : index
  %x = arith.constant 1.0 : f32
  %b = gpu.alloc () : memref<2x5xf32>
  scf.parallel (%i) = (%c0) to (%c6) step (%c1) {
    memref.store %x, %a[%i] : memref<6xf32>
    scf.reduce
  }
  scf.parallel (%i, %j) = (%c0, %c0) to (%c2, %c5) step (%c1, %c1) {
    memref.store %x, %b[%i, %j] : memref<2x5xf32>
    scf.reduce
  }
  return %b : memref<2x5xf32>
}

// -----

// Three independent updates of named runtime buffers of different sizes
// (an optimizer's parameters): one loop of 3 + 5 + 7 iterations, the member
// picked by a balanced tree of two comparisons.
// CHECK-LABEL: func.func @three_states
// CHECK-DAG: %[[C15:.*]] = arith.constant 15 : index
// CHECK: scf.parallel (%{{.*}}) = (%{{.*}}) to (%[[C15]]) step
// CHECK-COUNT-2: arith.cmpi ult
// CHECK-NOT: scf.parallel
func.func @three_states(%d0: !llvm.struct<(ptr, ptr, i64)>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c5 = arith.constant 5 : index
  %c7 = arith.constant 7 : index
  %one = arith.constant 1.0 : f32
  %w = builtin.unrealized_conversion_cast %d0 : !llvm.struct<(ptr, ptr, i64)> to memref<3xf32> {spmd.gpu_buffer = "state:w"}
  %b = builtin.unrealized_conversion_cast %d0 : !llvm.struct<(ptr, ptr, i64)> to memref<5xf32> {spmd.gpu_buffer = "state:b"}
  %s = builtin.unrealized_conversion_cast %d0 : !llvm.struct<(ptr, ptr, i64)> to memref<7xf32> {spmd.gpu_buffer = "state:v"}
  scf.parallel (%i) = (%c0) to (%c3) step (%c1) {
    %v = memref.load %w[%i] : memref<3xf32>
    %n = arith.addf %v, %one : f32
    memref.store %n, %w[%i] : memref<3xf32>
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%c5) step (%c1) {
    %v = memref.load %b[%i] : memref<5xf32>
    %n = arith.addf %v, %one : f32
    memref.store %n, %b[%i] : memref<5xf32>
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%c7) step (%c1) {
    %v = memref.load %s[%i] : memref<7xf32>
    %n = arith.addf %v, %one : f32
    memref.store %n, %s[%i] : memref<7xf32>
    scf.reduce
  }
  return
}

// -----

// What stops a group: a call the pass does not know, a free of a buffer
// the group uses, two casts of one runtime buffer, and two arguments (which
// may be one buffer). The loop after the free, touching only an argument,
// moves up past it to join the loop before it. An argument and a runtime
// buffer are never one buffer (the bridge copies an input that lies in the
// program's state): the store into the state joins the argument's.
// CHECK-LABEL: func.func @barriers
// CHECK-COUNT-2: scf.parallel
// CHECK: call @opaque
// CHECK: %[[C2:.*]] = arith.constant 2 : index
// CHECK: scf.parallel (%{{.*}}) = (%{{.*}}) to (%[[C2]])
// CHECK-NOT: scf.parallel
// CHECK: gpu.dealloc
// CHECK: scf.parallel
// CHECK: memref.store %{{.*}}, %arg1[%{{.*}}] : memref<4xf32>
// CHECK-NEXT: memref.store %{{.*}}, %{{.*}}[] : memref<f32>
// CHECK: scf.parallel
// CHECK-NEXT: memref.load
// CHECK-NOT: scf.parallel
func.func private @opaque()
func.func @barriers(%a: memref<4xf32>, %b: memref<4xf32>,
                    %d0: !llvm.struct<(ptr, ptr, i64)>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %x = arith.constant 1.0 : f32
  %t = gpu.alloc () : memref<4xf32>
  // Same shape and independent: one loop (vertically).
  scf.parallel (%i) = (%c0) to (%c4) step (%c1) {
    memref.store %x, %t[%i] : memref<4xf32>
    scf.reduce
  }
  // Reads %t at another element: not fusable with the first.
  scf.parallel (%i) = (%c0) to (%c4) step (%c1) {
    %j = arith.subi %c4, %i : index
    %v = memref.load %t[%j] : memref<4xf32>
    memref.store %v, %a[%i] : memref<4xf32>
    scf.reduce
  }
  call @opaque() : () -> ()
  scf.parallel (%i) = (%c0) to (%c1) step (%c1) {
    memref.store %x, %t[%c0] : memref<4xf32>
    scf.reduce
  }
  gpu.dealloc %t : memref<4xf32>
  scf.parallel (%i) = (%c0) to (%c1) step (%c1) {
    memref.store %x, %a[%c1] : memref<4xf32>
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%c1) step (%c1) {
    memref.store %x, %b[%c0] : memref<4xf32>
    scf.reduce
  }
  %s1 = builtin.unrealized_conversion_cast %d0 : !llvm.struct<(ptr, ptr, i64)> to memref<f32> {spmd.gpu_buffer = "state:s"}
  %s2 = builtin.unrealized_conversion_cast %d0 : !llvm.struct<(ptr, ptr, i64)> to memref<f32> {spmd.gpu_buffer = "state:s"}
  scf.parallel (%i) = (%c0) to (%c1) step (%c1) {
    memref.store %x, %s1[] : memref<f32>
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%c1) step (%c1) {
    %v = memref.load %s2[] : memref<f32>
    memref.store %v, %b[%c1] : memref<4xf32>
    scf.reduce
  }
  return
}

// -----

// Loops the pass does not touch: dynamic bounds.
// CHECK-LABEL: func.func @dynamic
// CHECK-COUNT-2: scf.parallel
func.func @dynamic(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %x = arith.constant 1.0 : f32
  %t = gpu.alloc (%n) : memref<?xf32>
  %u = gpu.alloc (%n) : memref<?xf32>
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    memref.store %x, %t[%i] : memref<?xf32>
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    memref.store %x, %u[%i] : memref<?xf32>
    scf.reduce
  }
  return
}

// -----

// Slices of one buffer with static layouts are told apart by their ranges
// (a bucket's pieces written side by side): disjoint ones fuse, overlapping
// ones do not.
// CHECK-LABEL: func.func @slices
// CHECK: scf.parallel (%{{.*}}) = (%{{.*}}) to (%[[C7:.*]]) step
// CHECK: scf.parallel
// CHECK-NOT: scf.parallel
func.func @slices(%x: f32) -> memref<8xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %flat = gpu.alloc () : memref<8xf32>
  %a = memref.subview %flat[0] [4] [1] : memref<8xf32> to memref<4xf32, strided<[1]>>
  %b = memref.subview %flat[4] [3] [1] : memref<8xf32> to memref<3xf32, strided<[1], offset: 4>>
  %c = memref.subview %flat[3] [4] [1] : memref<8xf32> to memref<4xf32, strided<[1], offset: 3>>
  scf.parallel (%i) = (%c0) to (%c4) step (%c1) {
    memref.store %x, %a[%i] : memref<4xf32, strided<[1]>>
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%c3) step (%c1) {
    memref.store %x, %b[%i] : memref<3xf32, strided<[1], offset: 4>>
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%c4) step (%c1) {
    %v = memref.load %c[%i] : memref<4xf32, strided<[1], offset: 3>>
    %w = arith.addf %v, %x : f32
    memref.store %w, %c[%i] : memref<4xf32, strided<[1], offset: 3>>
    scf.reduce
  }
  return %flat : memref<8xf32>
}

// -----

// Column blocks of one row-major buffer (the attention gradients copied
// side by side into the packed QKV projection's gradient): their element
// ranges interleave, but in the last dimension they are apart, so the
// copies fuse (over their one 4x3 space, each thread storing both blocks'
// element); blocks that share a column do not.
// CHECK-LABEL: func.func @column_blocks
// CHECK: scf.parallel (%[[I:.*]], %[[J:.*]]) = (%{{.*}}, %{{.*}}) to (%c4, %c3) step
// CHECK-NEXT: memref.store %{{.*}}, %[[LEFT:subview]][%[[I]], %[[J]]]
// CHECK-NEXT: memref.store %{{.*}}, %[[RIGHT:subview_0]][%[[I]], %[[J]]]
// CHECK: scf.parallel
// CHECK-NOT: scf.parallel
func.func @column_blocks(%x: f32, %y: f32) -> memref<4x6xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %packed = gpu.alloc () : memref<4x6xf32>
  %left = memref.subview %packed[0, 0] [4, 3] [1, 1] : memref<4x6xf32> to memref<4x3xf32, strided<[6, 1]>>
  %right = memref.subview %packed[0, 3] [4, 3] [1, 1] : memref<4x6xf32> to memref<4x3xf32, strided<[6, 1], offset: 3>>
  %middle = memref.subview %packed[0, 2] [4, 3] [1, 1] : memref<4x6xf32> to memref<4x3xf32, strided<[6, 1], offset: 2>>
  scf.parallel (%i, %j) = (%c0, %c0) to (%c4, %c3) step (%c1, %c1) {
    memref.store %x, %left[%i, %j] : memref<4x3xf32, strided<[6, 1]>>
    scf.reduce
  }
  scf.parallel (%i, %j) = (%c0, %c0) to (%c4, %c3) step (%c1, %c1) {
    memref.store %y, %right[%i, %j] : memref<4x3xf32, strided<[6, 1], offset: 3>>
    scf.reduce
  }
  scf.parallel (%i, %j) = (%c0, %c0) to (%c4, %c3) step (%c1, %c1) {
    memref.store %x, %middle[%i, %j] : memref<4x3xf32, strided<[6, 1], offset: 2>>
    scf.reduce
  }
  return %packed : memref<4x6xf32>
}

// -----

// A cuBLAS GEMM touches only the buffers whose addresses it is given (it
// reads A and B, writes C): the bias gradient (a column sum of A) and an
// elementwise loop join a loop past both GEMMs, after the second one, whose
// result that loop reads.
// CHECK-LABEL: func.func @past_a_gemm
// CHECK: call @spmdGpuSgemm
// CHECK: call @spmdGpuSgemm
// CHECK: %[[C28:.*]] = arith.constant 28 : index
// CHECK: scf.parallel (%{{.*}}) = (%{{.*}}) to (%[[C28]]) step
// CHECK-NOT: scf.parallel
func.func private @spmdGpuSgemm(i32, i32, i32, i32, i32, i32, f32, i64, i32, i64, i32, f32, i64, i32)
func.func @past_a_gemm(%a: memref<4x4xf32>, %b: memref<4x4xf32>, %x: memref<8xf32>)
    -> (memref<4xf32>, memref<4x4xf32>, memref<8xf32>, memref<4x4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %one = arith.constant 1.0 : f32
  %zero = arith.constant 0.0 : f32
  %c4_i32 = arith.constant 4 : i32
  %c101 = arith.constant 101 : i32
  %c111 = arith.constant 111 : i32
  %bias = gpu.alloc () : memref<4xf32>
  scf.parallel (%j) = (%c0) to (%c4) step (%c1) {
    %s = scf.for %i = %c0 to %c4 step %c1 iter_args(%acc = %zero) -> (f32) {
      %v = memref.load %a[%i, %j] : memref<4x4xf32>
      %n = arith.addf %v, %acc : f32
      scf.yield %n : f32
    }
    memref.store %s, %bias[%j] : memref<4xf32>
    scf.reduce
  }
  %c = gpu.alloc () : memref<4x4xf32>
  %pa = memref.extract_aligned_pointer_as_index %a : memref<4x4xf32> -> index
  %pb = memref.extract_aligned_pointer_as_index %b : memref<4x4xf32> -> index
  %pc = memref.extract_aligned_pointer_as_index %c : memref<4x4xf32> -> index
  %ia = arith.index_cast %pa : index to i64
  %ib = arith.index_cast %pb : index to i64
  %ic = arith.index_cast %pc : index to i64
  call @spmdGpuSgemm(%c101, %c111, %c111, %c4_i32, %c4_i32, %c4_i32, %one, %ia, %c4_i32, %ib, %c4_i32, %zero, %ic, %c4_i32) : (i32, i32, i32, i32, i32, i32, f32, i64, i32, i64, i32, f32, i64, i32) -> ()
  %y = gpu.alloc () : memref<8xf32>
  scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
    %v = memref.load %x[%i] : memref<8xf32>
    %w = arith.mulf %v, %v : f32
    memref.store %w, %y[%i] : memref<8xf32>
    scf.reduce
  }
  %d = gpu.alloc () : memref<4x4xf32>
  %pd = memref.extract_aligned_pointer_as_index %d : memref<4x4xf32> -> index
  %id = arith.index_cast %pd : index to i64
  call @spmdGpuSgemm(%c101, %c111, %c111, %c4_i32, %c4_i32, %c4_i32, %one, %ia, %c4_i32, %ib, %c4_i32, %zero, %id, %c4_i32) : (i32, i32, i32, i32, i32, i32, f32, i64, i32, i64, i32, f32, i64, i32) -> ()
  scf.parallel (%i, %j) = (%c0, %c0) to (%c4, %c4) step (%c1, %c1) {
    %v = memref.load %d[%i, %j] : memref<4x4xf32>
    %w = arith.addf %v, %one : f32
    memref.store %w, %d[%i, %j] : memref<4x4xf32>
    scf.reduce
  }
  return %bias, %c, %y, %d : memref<4xf32>, memref<4x4xf32>, memref<8xf32>, memref<4x4xf32>
}

// -----

// A loop that writes a GEMM's operand stays before it; the loop after the
// GEMM, which touches neither its operands nor its result, moves up to join
// it (16 + 8 iterations), its output's allocation with it.
// CHECK-LABEL: func.func @not_past_a_gemm
// CHECK: %[[C24:.*]] = arith.constant 24 : index
// CHECK: scf.parallel (%{{.*}}) = (%{{.*}}) to (%[[C24]])
// CHECK-NOT: scf.parallel
// CHECK: call @spmdGpuSgemm
// CHECK-NOT: scf.parallel
func.func private @spmdGpuSgemm(i32, i32, i32, i32, i32, i32, f32, i64, i32, i64, i32, f32, i64, i32)
func.func @not_past_a_gemm(%b: memref<4x4xf32>, %x: memref<8xf32>)
    -> (memref<4x4xf32>, memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %one = arith.constant 1.0 : f32
  %zero = arith.constant 0.0 : f32
  %c4_i32 = arith.constant 4 : i32
  %c101 = arith.constant 101 : i32
  %c111 = arith.constant 111 : i32
  %a = gpu.alloc () : memref<4x4xf32>
  scf.parallel (%i, %j) = (%c0, %c0) to (%c4, %c4) step (%c1, %c1) {
    memref.store %one, %a[%i, %j] : memref<4x4xf32>
    scf.reduce
  }
  %c = gpu.alloc () : memref<4x4xf32>
  %pa = memref.extract_aligned_pointer_as_index %a : memref<4x4xf32> -> index
  %pb = memref.extract_aligned_pointer_as_index %b : memref<4x4xf32> -> index
  %pc = memref.extract_aligned_pointer_as_index %c : memref<4x4xf32> -> index
  %ia = arith.index_cast %pa : index to i64
  %ib = arith.index_cast %pb : index to i64
  %ic = arith.index_cast %pc : index to i64
  call @spmdGpuSgemm(%c101, %c111, %c111, %c4_i32, %c4_i32, %c4_i32, %one, %ia, %c4_i32, %ib, %c4_i32, %zero, %ic, %c4_i32) : (i32, i32, i32, i32, i32, i32, f32, i64, i32, i64, i32, f32, i64, i32) -> ()
  %y = gpu.alloc () : memref<8xf32>
  scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
    %v = memref.load %x[%i] : memref<8xf32>
    memref.store %v, %y[%i] : memref<8xf32>
    scf.reduce
  }
  return %c, %y : memref<4x4xf32>, memref<8xf32>
}

// -----

// A gradient computed over its 4x2 shape and copied into a bucket through
// its 8-element collapse_shape: one loop over the copy's 8 iterations, the
// gradient's indices delinearized from it (each thread reads back the
// element it wrote).
// CHECK-LABEL: func.func @through_a_reshape
// CHECK: scf.parallel (%[[I:.*]]) = (%{{.*}}) to (%c8) step
// CHECK: %[[J:.*]] = arith.remui %[[I]], %{{.*}} : index
// CHECK: %[[R:.*]] = arith.divui %[[I]], %{{.*}} : index
// CHECK: memref.store %{{.*}}, %{{.*}}[%[[R]], %[[J]]] : memref<4x2xf32>
// CHECK: memref.load %{{.*}}[%[[I]]] : memref<8xf32>
// CHECK-NOT: scf.parallel
func.func @through_a_reshape(%a: memref<4x2xf32>) -> memref<10xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %g = gpu.alloc () : memref<4x2xf32>
  scf.parallel (%i, %j) = (%c0, %c0) to (%c4, %c2) step (%c1, %c1) {
    %v = memref.load %a[%i, %j] : memref<4x2xf32>
    %w = arith.addf %v, %v : f32
    memref.store %w, %g[%i, %j] : memref<4x2xf32>
    scf.reduce
  }
  %bucket = gpu.alloc () : memref<10xf32>
  %flat = memref.collapse_shape %g [[0, 1]] : memref<4x2xf32> into memref<8xf32>
  %piece = memref.subview %bucket[2] [8] [1] : memref<10xf32> to memref<8xf32, strided<[1], offset: 2>>
  scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
    %v = memref.load %flat[%i] : memref<8xf32>
    memref.store %v, %piece[%i] : memref<8xf32, strided<[1], offset: 2>>
    scf.reduce
  }
  return %bucket : memref<10xf32>
}

// -----

// A bias gradient: a column sum over its 1x16 buffer, then copied into its
// bucket slice through the buffer's 16-element collapse_shape. The two
// loops have one 16-iteration space but name the sum through different
// views: the sum runs at the start of the copy's loop (each thread
// finishes its column, then copies it), one kernel.
// CHECK-LABEL: func.func @column_sum_into_bucket
// CHECK: scf.parallel (%[[I:.*]]) = (%{{.*}}) to (%c16) step
// CHECK-NOT: scf.parallel
// CHECK: scf.for
// CHECK: memref.store %{{.*}}, %{{.*}}[%{{.*}}, %[[I]]] : memref<1x16xf32>
// CHECK-NOT: scf.parallel
// CHECK: memref.load %{{.*}}[%[[I]]] : memref<16xf32>
// CHECK: memref.store %{{.*}}, %{{.*}}[%[[I]]] : memref<16xf32, strided<[1], offset: 4>>
// CHECK-NOT: scf.parallel
func.func @column_sum_into_bucket(%a: memref<4x16xf32>) -> memref<20xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  %zero = arith.constant 0.0 : f32
  %sum = gpu.alloc () : memref<1x16xf32>
  scf.parallel (%j) = (%c0) to (%c16) step (%c1) {
    memref.store %zero, %sum[%c0, %j] : memref<1x16xf32>
    scf.for %i = %c0 to %c4 step %c1 {
      %v = memref.load %a[%i, %j] : memref<4x16xf32>
      %s = memref.load %sum[%c0, %j] : memref<1x16xf32>
      %t = arith.addf %v, %s : f32
      memref.store %t, %sum[%c0, %j] : memref<1x16xf32>
    }
    scf.reduce
  }
  %bucket = gpu.alloc () : memref<20xf32>
  %flat = memref.collapse_shape %sum [[0, 1]] : memref<1x16xf32> into memref<16xf32>
  %piece = memref.subview %bucket[4] [16] [1] : memref<20xf32> to memref<16xf32, strided<[1], offset: 4>>
  scf.parallel (%j) = (%c0) to (%c16) step (%c1) {
    %v = memref.load %flat[%j] : memref<16xf32>
    memref.store %v, %piece[%j] : memref<16xf32, strided<[1], offset: 4>>
    scf.reduce
  }
  return %bucket : memref<20xf32>
}

// -----

// Two gradients' copies into disjoint slices of one bucket share no
// element: the first loop runs at the start of the second, one kernel. A
// copy into a slice that overlaps theirs stays after them.
// CHECK-LABEL: func.func @bucket_slices
// CHECK: scf.parallel (%[[I:.*]]) = (%{{.*}}) to (%c4) step
// CHECK-NEXT: memref.load %arg0[%[[I]]]
// CHECK-NEXT: memref.store %{{.*}}, %subview[%[[I]]]
// CHECK-NEXT: memref.load %arg1[%[[I]]]
// CHECK-NEXT: memref.store %{{.*}}, %subview_0[%[[I]]]
// CHECK: scf.parallel (%[[J:.*]]) = (%{{.*}}) to (%c4) step
// CHECK-NEXT: memref.load %arg2[%[[J]]]
// CHECK-NEXT: memref.store %{{.*}}, %subview_1[%[[J]]]
// CHECK-NOT: scf.parallel
func.func @bucket_slices(%a: memref<4xf32>, %b: memref<4xf32>, %c: memref<4xf32>) -> memref<8xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %bucket = gpu.alloc () : memref<8xf32>
  %first = memref.subview %bucket[0] [4] [1] : memref<8xf32> to memref<4xf32, strided<[1]>>
  %second = memref.subview %bucket[4] [4] [1] : memref<8xf32> to memref<4xf32, strided<[1], offset: 4>>
  %over = memref.subview %bucket[2] [4] [1] : memref<8xf32> to memref<4xf32, strided<[1], offset: 2>>
  scf.parallel (%i) = (%c0) to (%c4) step (%c1) {
    %v = memref.load %a[%i] : memref<4xf32>
    memref.store %v, %first[%i] : memref<4xf32, strided<[1]>>
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%c4) step (%c1) {
    %v = memref.load %b[%i] : memref<4xf32>
    memref.store %v, %second[%i] : memref<4xf32, strided<[1], offset: 4>>
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%c4) step (%c1) {
    %v = memref.load %c[%i] : memref<4xf32>
    memref.store %v, %over[%i] : memref<4xf32, strided<[1], offset: 2>>
    scf.reduce
  }
  return %bucket : memref<8xf32>
}

// -----

// A row kernel (4 rows, a warp each) and a loop it does not touch (a bias
// gradient's column sum) as one launch: blocks 4 and 5 run the loop's 40
// iterations, 32 a block. The row part stays straight-line code (its warp
// shuffles may not be in a branch): the added blocks compute row 3 again
// and skip its stores. An index check in the kernel (a gather's bounds)
// holds in them too. A loop reading what the kernel writes stays.
// CHECK-LABEL: func.func @loop_into_row_kernel
// CHECK: %[[GRID:.*]] = arith.constant 6 : index
// CHECK: gpu.launch blocks(%[[B:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[GRID]],
// CHECK: %[[LAST:.*]] = arith.minui %[[B]], %c3
// CHECK: %[[ROW:.*]] = arith.cmpi ult, %[[B]], %c4
// CHECK: %[[V:.*]] = memref.load %arg0[%[[LAST]],
// CHECK: scf.if %[[ROW]] {
// CHECK-NEXT: memref.store %{{.*}}, %[[Y:memref]][%[[LAST]],
// CHECK: %[[EXTRA:.*]] = arith.cmpi uge, %[[B]], %c4
// CHECK: scf.if %[[EXTRA]] {
// CHECK: %[[K:.*]] = arith.subi %[[B]], %c4
// CHECK: %[[BASE:.*]] = arith.muli %[[K]], %c32
// CHECK: %[[I:.*]] = arith.addi %[[BASE]],
// CHECK: %[[IN:.*]] = arith.cmpi ult, %[[I]], %c40
// CHECK: scf.if %[[IN]] {
// CHECK: memref.store %{{.*}}, %[[SUM:memref_0]][%[[I]]]
// CHECK: gpu.terminator
// CHECK: scf.parallel
// CHECK: memref.load %[[Y]]
// CHECK-NOT: scf.parallel
// CHECK-NOT: gpu.launch
func.func @loop_into_row_kernel(%x: memref<4x32xf32>, %a: memref<40x3xf32>) -> (memref<4x32xf32>, memref<40xf32>, memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c32 = arith.constant 32 : index
  %c40 = arith.constant 40 : index
  %zero = arith.constant 0.0 : f32
  %y = gpu.alloc () : memref<4x32xf32>
  %sum = gpu.alloc () : memref<40xf32>
  %first = gpu.alloc () : memref<4xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c4, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    %ok = arith.cmpi slt, %tx, %c32 : index
    cf.assert %ok, "index must be smaller than dim size"
    %v = memref.load %x[%bx, %tx] : memref<4x32xf32>
    %w = arith.addf %v, %v : f32
    memref.store %w, %y[%bx, %tx] : memref<4x32xf32>
    gpu.terminator
  }
  scf.parallel (%i) = (%c0) to (%c40) step (%c1) {
    memref.store %zero, %sum[%i] : memref<40xf32>
    scf.for %j = %c0 to %c3 step %c1 {
      %v = memref.load %a[%i, %j] : memref<40x3xf32>
      %s = memref.load %sum[%i] : memref<40xf32>
      %t = arith.addf %v, %s : f32
      memref.store %t, %sum[%i] : memref<40xf32>
    }
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%c4) step (%c1) {
    %v = memref.load %y[%i, %c0] : memref<4x32xf32>
    memref.store %v, %first[%i] : memref<4xf32>
    scf.reduce
  }
  return %y, %sum, %first : memref<4x32xf32>, memref<40xf32>, memref<4xf32>
}
