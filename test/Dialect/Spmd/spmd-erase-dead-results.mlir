// RUN: spmd-opt %s --split-input-file --spmd-erase-dead-results | FileCheck %s

// torch-mlir's aten.max.dim: the argmax nobody reads goes, with its init,
// its map, its accumulator and the position it read (linalg.index).
// CHECK-LABEL: func.func @unused_argmax
// CHECK-SAME: (%[[X:.*]]: tensor<4x16xf32>, %[[A:.*]]: tensor<4xf32>)
// CHECK-NOT: linalg.fill
// CHECK: %[[M:.*]] = linalg.generic {indexing_maps = [#{{.*}}, #{{.*}}], iterator_types = ["parallel", "reduction"]} ins(%[[X]] : tensor<4x16xf32>) outs(%[[A]] : tensor<4xf32>)
// CHECK-NEXT: ^bb0(%[[IN:.*]]: f32, %[[OUT:.*]]: f32):
// CHECK-NEXT: %[[N:.*]] = arith.maximumf %[[IN]], %[[OUT]] : f32
// CHECK-NEXT: linalg.yield %[[N]] : f32
// CHECK-NEXT: } -> tensor<4xf32>
// CHECK-NEXT: return %[[M]]
#x = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @unused_argmax(%logits: tensor<4x16xf32>, %a: tensor<4xf32>) -> tensor<4xf32> {
  %c0 = arith.constant 0 : i64
  %e = tensor.empty() : tensor<4xi64>
  %b = linalg.fill ins(%c0 : i64) outs(%e : tensor<4xi64>) -> tensor<4xi64>
  %m:2 = linalg.generic {indexing_maps = [#x, #row, #row], iterator_types = ["parallel", "reduction"]}
      ins(%logits : tensor<4x16xf32>) outs(%a, %b : tensor<4xf32>, tensor<4xi64>) {
  ^bb0(%in: f32, %max: f32, %arg: i64):
    %i = linalg.index 1 : index
    %c = arith.index_cast %i : index to i64
    %n = arith.maximumf %in, %max : f32
    %gt = arith.cmpf ogt, %in, %max : f32
    %s = arith.select %gt, %c, %arg : i64
    linalg.yield %n, %s : f32, i64
  } -> (tensor<4xf32>, tensor<4xi64>)
  return %m#0 : tensor<4xf32>
}

// -----

// The argmax read, the maximum not: the maximum's accumulator feeds the
// argmax's compare, so both stay.
// CHECK-LABEL: func.func @kept_accumulator
// CHECK: %[[M:.*]]:2 = linalg.generic
// CHECK: return %[[M]]#1
#x = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @kept_accumulator(%logits: tensor<4x16xf32>, %a: tensor<4xf32>, %b: tensor<4xi64>) -> tensor<4xi64> {
  %m:2 = linalg.generic {indexing_maps = [#x, #row, #row], iterator_types = ["parallel", "reduction"]}
      ins(%logits : tensor<4x16xf32>) outs(%a, %b : tensor<4xf32>, tensor<4xi64>) {
  ^bb0(%in: f32, %max: f32, %arg: i64):
    %i = linalg.index 1 : index
    %c = arith.index_cast %i : index to i64
    %n = arith.maximumf %in, %max : f32
    %gt = arith.cmpf ogt, %in, %max : f32
    %s = arith.select %gt, %c, %arg : i64
    linalg.yield %n, %s : f32, i64
  } -> (tensor<4xf32>, tensor<4xi64>)
  return %m#1 : tensor<4xi64>
}

// -----

// A value both results yield stays for the kept one; an op with no result
// used is left to DCE.
// CHECK-LABEL: func.func @shared_value
// CHECK: %[[G:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<4xf32>)
// CHECK: %[[E:.*]] = math.exp
// CHECK-NEXT: linalg.yield %[[E]] : f32
// CHECK: linalg.generic {{.*}} outs(%{{.*}}, %{{.*}} : tensor<4xf32>, tensor<4xf32>)
// CHECK: return %[[G]]
#id = affine_map<(d0) -> (d0)>
func.func @shared_value(%x: tensor<4xf32>, %a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %g:2 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%x : tensor<4xf32>) outs(%a, %b : tensor<4xf32>, tensor<4xf32>) {
  ^bb0(%in: f32, %o1: f32, %o2: f32):
    %e = math.exp %in : f32
    linalg.yield %e, %e : f32, f32
  } -> (tensor<4xf32>, tensor<4xf32>)
  %dead:2 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%x : tensor<4xf32>) outs(%a, %b : tensor<4xf32>, tensor<4xf32>) {
  ^bb0(%in: f32, %o1: f32, %o2: f32):
    linalg.yield %in, %in : f32, f32
  } -> (tensor<4xf32>, tensor<4xf32>)
  return %g#0 : tensor<4xf32>
}

// -----

// An assert in the payload stays, and what it reads, even when only the
// dropped result used that value.
// CHECK-LABEL: func.func @assert_kept
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<4xf32>)
// CHECK: arith.cmpi
// CHECK: cf.assert
// CHECK: linalg.yield %{{.*}} : f32
#id = affine_map<(d0) -> (d0)>
func.func @assert_kept(%ids: tensor<4xi64>, %x: tensor<4xf32>, %a: tensor<4xf32>, %b: tensor<4xi64>) -> tensor<4xf32> {
  %c16 = arith.constant 16 : i64
  %g:2 = linalg.generic {indexing_maps = [#id, #id, #id, #id], iterator_types = ["parallel"]}
      ins(%ids, %x : tensor<4xi64>, tensor<4xf32>) outs(%a, %b : tensor<4xf32>, tensor<4xi64>) {
  ^bb0(%i: i64, %in: f32, %o1: f32, %o2: i64):
    %ok = arith.cmpi slt, %i, %c16 : i64
    cf.assert %ok, "index must be smaller than dim size"
    linalg.yield %in, %i : f32, i64
  } -> (tensor<4xf32>, tensor<4xi64>)
  return %g#0 : tensor<4xf32>
}
