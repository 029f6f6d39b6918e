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
// read it while lane 0 stores it) stays out of the chain: it remains a
// linalg op between the kernels of the reductions. (The last op writes an
// argument, which may alias the argument the reduction reads: it stays
// out too.)
// CHECK-LABEL: func.func @in_place_row_op
// CHECK: gpu.launch
// CHECK: linalg.generic
// CHECK-SAME: outs(%[[S:.*]] : memref<4x1xf32>)
// CHECK: gpu.launch
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
