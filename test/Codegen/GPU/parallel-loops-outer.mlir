// RUN: spmd-gpu-opt %s --pass-pipeline='builtin.module(func.func(spmd-gpu-parallel-loops-outer))' | FileCheck %s

// A bias gradient (sum over the batch for each feature): the feature
// dimension moves first, the batch reduction inside.
// CHECK-DAG: #[[IN:.*]] = affine_map<(d0, d1) -> (d1, d0)>
// CHECK-DAG: #[[OUT:.*]] = affine_map<(d0, d1) -> (d0)>
// CHECK-LABEL: func.func @bias_grad
// CHECK: linalg.generic {indexing_maps = [#[[IN]], #[[OUT]]], iterator_types = ["parallel", "reduction"]}
// CHECK-SAME: ins(%{{.*}} : memref<64x16xf32>) outs(%{{.*}} : memref<16xf32>)
func.func @bias_grad(%g: memref<64x16xf32>, %db: memref<16xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>], iterator_types = ["reduction", "parallel"]} ins(%g : memref<64x16xf32>) outs(%db : memref<16xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %in, %acc : f32
    linalg.yield %s : f32
  }
  return
}

// A named reduction over dimension 0 is generalized first.
// CHECK-LABEL: func.func @reduce_rows
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
// CHECK-NOT: linalg.reduce
func.func @reduce_rows(%x: memref<8x4xf32>, %acc: memref<4xf32>) {
  linalg.reduce ins(%x : memref<8x4xf32>) outs(%acc : memref<4xf32>) dimensions = [0]
    (%in: f32, %a: f32) {
      %s = arith.addf %in, %a : f32
      linalg.yield %s : f32
    }
  return
}

// Already parallel first: untouched.
// CHECK-LABEL: func.func @rows_sum
// CHECK: linalg.reduce
func.func @rows_sum(%x: memref<8x4xf32>, %acc: memref<8xf32>) {
  linalg.reduce ins(%x : memref<8x4xf32>) outs(%acc : memref<8xf32>) dimensions = [1]
    (%in: f32, %a: f32) {
      %s = arith.addf %in, %a : f32
      linalg.yield %s : f32
    }
  return
}
