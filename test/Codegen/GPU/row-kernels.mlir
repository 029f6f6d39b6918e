// RUN: spmd-gpu-opt %s --pass-pipeline='builtin.module(func.func(spmd-gpu-row-kernels))' -split-input-file | FileCheck %s
// (The emulator runs such kernels phase by phase: kernels-to-host.mlir.)

// Softmax over rows of 40: row max, exp(x - max), row sum, divide; the
// fills are the reductions' initial values. One kernel, a warp per row.
// CHECK-LABEL: func.func @softmax
// CHECK-NOT: linalg.
// CHECK: %[[C4:.*]] = arith.constant 4 : index
// CHECK: gpu.launch blocks(%[[ROW:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[C4]], %{{.*}}, %{{.*}}) threads(%[[LANE:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[C32:.*]], %{{.*}}, %{{.*}})
// Lane l takes the columns l, l + 32, ...
// CHECK: %[[MAX:.*]] = scf.for %[[C:.*]] = %[[LANE]] to %{{.*}} step %{{.*}} iter_args(%[[ACC:.*]] = %{{.*}}) -> (f32) {
// CHECK: memref.load %{{.*}}[%[[ROW]], %[[C]]]
// CHECK: arith.maximumf
// A butterfly: offsets 16, 8, 4, 2, 1.
// CHECK: %[[O16:.*]] = arith.constant 16 : i32
// CHECK: gpu.shuffle xor %[[MAX]], %[[O16]]
// CHECK-COUNT-4: gpu.shuffle xor
// Combined with the fill's value; lane 0 stores.
// CHECK: %[[RMAX:.*]] = arith.maximumf %{{.*}}, %cst : f32
// CHECK: %[[FIRST:.*]] = arith.cmpi eq, %[[LANE]], %{{.*}} : index
// CHECK: scf.if %[[FIRST]] {
// CHECK: memref.store %[[RMAX]]
// exp(x - max) reads the row max from the register.
// CHECK: scf.for
// CHECK: arith.subf %{{.*}}, %[[RMAX]] : f32
// CHECK: math.exp
// CHECK: scf.for {{.*}} -> (f32)
// CHECK: arith.addf
// CHECK-COUNT-5: gpu.shuffle xor
// CHECK: %[[RSUM:.*]] = arith.addf %{{.*}}, %cst_0 : f32
// CHECK: scf.for
// CHECK: arith.divf %{{.*}}, %[[RSUM]] : f32
// CHECK: gpu.terminator
// CHECK-NOT: gpu.launch

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0, 0)>
func.func @softmax(%x: memref<4x40xf32>) -> memref<4x40xf32> {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %max = gpu.alloc () : memref<4x1xf32>
  %e = gpu.alloc () : memref<4x40xf32>
  %sum = gpu.alloc () : memref<4x1xf32>
  %y = gpu.alloc () : memref<4x40xf32>
  linalg.fill ins(%ninf : f32) outs(%max : memref<4x1xf32>)
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<4x40xf32>) outs(%max : memref<4x1xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %m = arith.maximumf %in, %acc : f32
    linalg.yield %m : f32
  }
  linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %max : memref<4x40xf32>, memref<4x1xf32>) outs(%e : memref<4x40xf32>) {
  ^bb0(%in: f32, %m: f32, %out: f32):
    %d = arith.subf %in, %m : f32
    %v = math.exp %d : f32
    linalg.yield %v : f32
  }
  linalg.fill ins(%zero : f32) outs(%sum : memref<4x1xf32>)
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%e : memref<4x40xf32>) outs(%sum : memref<4x1xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %in, %acc : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%e, %sum : memref<4x40xf32>, memref<4x1xf32>) outs(%y : memref<4x40xf32>) {
  ^bb0(%in: f32, %s: f32, %out: f32):
    %v = arith.divf %in, %s : f32
    linalg.yield %v : f32
  }
  return %y : memref<4x40xf32>
}

// -----

// An op over the rows that updates its buffer in place (every lane would
// read it while lane 0 stores it) stays out of the chain: it moves after
// the kernel, which the max (touching nothing the op touches) joins past
// it. The last op reads what the moved op wrote: it stays a linalg op after
// it. (It writes an argument, which may alias the argument the reductions
// read: it could not join anyway.)
// CHECK-LABEL: func.func @in_place_row_op
// CHECK: gpu.launch
// CHECK-COUNT-2: scf.for
// CHECK: gpu.terminator
// CHECK: linalg.generic
// CHECK-SAME: outs(%[[S:.*]] : memref<4x1xf32>)
// CHECK: linalg.generic
// CHECK-SAME: outs(%arg1 : memref<4x40xf32>)
// CHECK-NOT: gpu.launch
// CHECK: return
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#row2 = affine_map<(d0, d1) -> (d0, 0)>
func.func @in_place_row_op(%x: memref<4x40xf32>, %y: memref<4x40xf32>) {
  %zero = arith.constant 0.0 : f32
  %sum = gpu.alloc () : memref<4x1xf32>
  linalg.fill ins(%zero : f32) outs(%sum : memref<4x1xf32>)
  linalg.generic {indexing_maps = [#id2, #row2], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<4x40xf32>) outs(%sum : memref<4x1xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %in, %acc : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%sum : memref<4x1xf32>) outs(%sum : memref<4x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %h = arith.mulf %in, %in : f32
    linalg.yield %h : f32
  }
  %max = gpu.alloc () : memref<4x1xf32>
  linalg.generic {indexing_maps = [#id2, #row2], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<4x40xf32>) outs(%max : memref<4x1xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %m = arith.maximumf %in, %acc : f32
    linalg.yield %m : f32
  }
  linalg.generic {indexing_maps = [#id2, #row2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%x, %sum : memref<4x40xf32>, memref<4x1xf32>) outs(%y : memref<4x40xf32>) {
  ^bb0(%in: f32, %s: f32, %out: f32):
    %v = arith.divf %in, %s : f32
    linalg.yield %v : f32
  }
  return
}

// -----

// A bias add over 24 rows (a GEMM's result) and the row max over its 4x6
// view join one kernel: the same rows, numbered row-major.
// CHECK-LABEL: func.func @reshaped_rows
// CHECK: gpu.launch blocks(%[[B:[a-z0-9_]+]], %{{.*}}, %{{.*}}) in (%{{[a-z0-9_]+}} = %c24,
// CHECK: scf.for
// CHECK: memref.store %{{.*}}, %{{.*}}[%[[B]], %{{.*}}] : memref<24x8xf32>
// CHECK: %[[J:.*]] = arith.remui %[[B]], %{{.*}} : index
// CHECK: %[[I:.*]] = arith.divui %[[B]], %{{.*}} : index
// CHECK: memref.load %{{.*}}[%[[I]], %[[J]], %{{.*}}] : memref<4x6x8xf32>
// CHECK: gpu.shuffle xor
// CHECK-NOT: linalg.generic
#id24 = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#row3 = affine_map<(d0, d1, d2) -> (d0, d1, 0)>
func.func @reshaped_rows(%bias: memref<8xf32>) -> memref<4x6x1xf32> {
  %ninf = arith.constant 0xFF800000 : f32
  %h = gpu.alloc () : memref<24x8xf32>
  linalg.generic {indexing_maps = [#col, #id24], iterator_types = ["parallel", "parallel"]}
      ins(%bias : memref<8xf32>) outs(%h : memref<24x8xf32>) {
  ^bb0(%b: f32, %out: f32):
    %v = arith.addf %out, %b : f32
    linalg.yield %v : f32
  }
  %v3 = memref.expand_shape %h [[0, 1], [2]] output_shape [4, 6, 8] : memref<24x8xf32> into memref<4x6x8xf32>
  %max = gpu.alloc () : memref<4x6x1xf32>
  linalg.fill ins(%ninf : f32) outs(%max : memref<4x6x1xf32>)
  linalg.generic {indexing_maps = [#id3, #row3], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%v3 : memref<4x6x8xf32>) outs(%max : memref<4x6x1xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %m = arith.maximumf %in, %acc : f32
    linalg.yield %m : f32
  }
  return %max : memref<4x6x1xf32>
}

// -----

// Cross-entropy as the GPU path lowers it: the row max into a 24-element
// buffer, read back through its 24x1 expand_shape (the same row's value: a
// register, not a reload); the count of targets and its all-reduce, which
// touch nothing the rows touch, stay where they are; the loss (a sum of
// what the forward rows wrote, then a division by the count) moves after
// the kernel; the backward rows join the forward's kernel past all of it.
// CHECK-LABEL: func.func @cross_entropy
// CHECK: linalg.generic {{.*}} outs(%[[COUNT:.*]] : memref<i64>)
// CHECK: call @spmdAllReduceStart
// CHECK: call @spmdWait
// CHECK: gpu.launch
// CHECK: %[[MAX:.*]] = arith.maximumf %{{.*}}, %cst : f32
// CHECK-NOT: memref.load %expand_shape
// CHECK: arith.subf %{{.*}}, %[[MAX]] : f32
// CHECK: math.exp
// The backward's rows, in the same kernel.
// CHECK: memref.load %{{.*}}[] : memref<i64>
// CHECK: arith.divf
// CHECK: gpu.terminator
// CHECK: linalg.generic {{.*}} outs(%[[SUM:.*]] : memref<f32>)
// CHECK: linalg.generic {{.*}} ins(%[[SUM]], %{{.*}} : memref<f32>, memref<i64>)
// CHECK-NOT: gpu.launch
// CHECK: return
#ce2 = affine_map<(d0, d1) -> (d0, d1)>
#ce_row = affine_map<(d0, d1) -> (d0)>
#ce_row1 = affine_map<(d0, d1) -> (d0, 0)>
#ce_all = affine_map<(d0) -> (d0)>
#ce_scalar = affine_map<(d0) -> ()>
#ce_0d = affine_map<() -> ()>
#ce_0dcol = affine_map<(d0, d1) -> ()>
func.func private @spmdAllReduceStart(i64, i64, i64, i32, i32, i64, i64) -> i64
func.func private @spmdWait(i64)
func.func @cross_entropy(%logits: memref<24x16xf32>, %targets: memref<24xi64>)
    -> (memref<f32>, memref<24x16xf32>) {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %zero_i = arith.constant 0 : i64
  %c1 = arith.constant 1 : i64
  %c2 = arith.constant 2 : i64
  %c0_i32 = arith.constant 0 : i32
  %c3_i32 = arith.constant 3 : i32
  %max = gpu.alloc () : memref<24xf32>
  linalg.fill ins(%ninf : f32) outs(%max : memref<24xf32>)
  linalg.generic {indexing_maps = [#ce2, #ce_row], iterator_types = ["parallel", "reduction"]}
      ins(%logits : memref<24x16xf32>) outs(%max : memref<24xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %m = arith.maximumf %in, %acc : f32
    linalg.yield %m : f32
  }
  %max1 = memref.expand_shape %max [[0, 1]] output_shape [24, 1] : memref<24xf32> into memref<24x1xf32>
  %shifted = gpu.alloc () : memref<24x16xf32>
  linalg.generic {indexing_maps = [#ce2, #ce_row1, #ce2], iterator_types = ["parallel", "parallel"]}
      ins(%logits, %max1 : memref<24x16xf32>, memref<24x1xf32>) outs(%shifted : memref<24x16xf32>) {
  ^bb0(%in: f32, %m: f32, %out: f32):
    %d = arith.subf %in, %m : f32
    linalg.yield %d : f32
  }
  %picked = gpu.alloc () : memref<24xf32>
  linalg.fill ins(%zero : f32) outs(%picked : memref<24xf32>)
  linalg.generic {indexing_maps = [#ce2, #ce_row], iterator_types = ["parallel", "reduction"]}
      ins(%shifted : memref<24x16xf32>) outs(%picked : memref<24xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %e = math.exp %in : f32
    %s = arith.addf %e, %acc : f32
    linalg.yield %s : f32
  }
  %count = gpu.alloc () : memref<i64>
  linalg.generic {indexing_maps = [#ce_0d], iterator_types = []} outs(%count : memref<i64>) {
  ^bb0(%out: i64):
    linalg.yield %zero_i : i64
  }
  linalg.generic {indexing_maps = [#ce_all, #ce_scalar], iterator_types = ["reduction"]}
      ins(%targets : memref<24xi64>) outs(%count : memref<i64>) {
  ^bb0(%t: i64, %acc: i64):
    %s = arith.addi %t, %acc : i64
    linalg.yield %s : i64
  }
  %total = gpu.alloc () : memref<i64>
  %p0 = memref.extract_aligned_pointer_as_index %count : memref<i64> -> index
  %a0 = arith.index_cast %p0 : index to i64
  %p1 = memref.extract_aligned_pointer_as_index %total : memref<i64> -> index
  %a1 = arith.index_cast %p1 : index to i64
  %h = call @spmdAllReduceStart(%a0, %a1, %c1, %c3_i32, %c0_i32, %c2, %c1) : (i64, i64, i64, i32, i32, i64, i64) -> i64
  call @spmdWait(%h) : (i64) -> ()
  %sum = gpu.alloc () : memref<f32>
  linalg.fill ins(%zero : f32) outs(%sum : memref<f32>)
  linalg.generic {indexing_maps = [#ce_all, #ce_scalar], iterator_types = ["reduction"]}
      ins(%picked : memref<24xf32>) outs(%sum : memref<f32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %in, %acc : f32
    linalg.yield %s : f32
  }
  %loss = gpu.alloc () : memref<f32>
  linalg.generic {indexing_maps = [#ce_0d, #ce_0d, #ce_0d], iterator_types = []}
      ins(%sum, %total : memref<f32>, memref<i64>) outs(%loss : memref<f32>) {
  ^bb0(%s: f32, %n: i64, %out: f32):
    %nf = arith.sitofp %n : i64 to f32
    %l = arith.divf %s, %nf : f32
    linalg.yield %l : f32
  }
  %rowsum = gpu.alloc () : memref<24x1xf32>
  linalg.fill ins(%zero : f32) outs(%rowsum : memref<24x1xf32>)
  linalg.generic {indexing_maps = [#ce2, #ce_row1], iterator_types = ["parallel", "reduction"]}
      ins(%shifted : memref<24x16xf32>) outs(%rowsum : memref<24x1xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %in, %acc : f32
    linalg.yield %s : f32
  }
  %grad = gpu.alloc () : memref<24x16xf32>
  linalg.generic {indexing_maps = [#ce2, #ce_row1, #ce_0dcol, #ce2], iterator_types = ["parallel", "parallel"]}
      ins(%shifted, %rowsum, %total : memref<24x16xf32>, memref<24x1xf32>, memref<i64>) outs(%grad : memref<24x16xf32>) {
  ^bb0(%in: f32, %r: f32, %n: i64, %out: f32):
    %nf = arith.sitofp %n : i64 to f32
    %d = arith.subf %in, %r : f32
    %g = arith.divf %d, %nf : f32
    linalg.yield %g : f32
  }
  return %loss, %grad : memref<f32>, memref<24x16xf32>
}
