// RUN: spmd-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(spmd-reassociable-reductions))' | FileCheck %s

// The combiner of a row sum gets reassoc (its other flags kept); the rest
// of the body does not.
// CHECK-LABEL: func.func @row_sum
// CHECK: arith.subf %{{.*}}, %{{.*}} : f32
// CHECK: arith.addf %{{.*}}, %{{.*}} fastmath<reassoc,nnan> : f32
func.func @row_sum(%x: memref<64x128xf32>, %s: memref<64xf32>) {
  %c = arith.constant 1.0 : f32
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<64x128xf32>) outs(%s : memref<64xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %d = arith.subf %in, %c : f32
    %r = arith.addf %d, %acc fastmath<nnan> : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// Max and linalg.reduce are marked; an elementwise op, an op on tensors
// and a body that does not end in a combiner of the accumulator are not.
// CHECK-LABEL: func.func @others
// CHECK: arith.maximumf %{{.*}}, %{{.*}} fastmath<reassoc> : f32
// CHECK: arith.addf %{{.*}}, %{{.*}} fastmath<reassoc> : f32
// CHECK: arith.addf %{{.*}}, %{{.*}} : f32
// CHECK: arith.addf %{{.*}}, %{{.*}} : f32
// CHECK: arith.addf %{{.*}}, %{{.*}} : f32
// CHECK: arith.mulf %{{.*}}, %{{.*}} : f32
func.func @others(%x: memref<64x128xf32>, %m: memref<64xf32>, %s: memref<f32>, %t: tensor<64x128xf32>,
                  %u: tensor<64xf32>) -> tensor<64xf32> {
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<64x128xf32>) outs(%m : memref<64xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %r = arith.maximumf %in, %acc : f32
    linalg.yield %r : f32
  }
  linalg.reduce ins(%x : memref<64x128xf32>) outs(%s : memref<f32>) dimensions = [0, 1]
    (%in: f32, %acc: f32) {
      %r = arith.addf %in, %acc : f32
      linalg.yield %r : f32
    }
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<64x128xf32>) outs(%x : memref<64x128xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.addf %in, %out : f32
    linalg.yield %r : f32
  }
  %v = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>],
                       iterator_types = ["parallel", "reduction"]}
      ins(%t : tensor<64x128xf32>) outs(%u : tensor<64xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %r = arith.addf %in, %acc : f32
    linalg.yield %r : f32
  } -> tensor<64xf32>
  // Yields (in + acc) * 2: not a combiner of the accumulator.
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<64x128xf32>) outs(%m : memref<64xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %two = arith.constant 2.0 : f32
    %a = arith.addf %in, %acc : f32
    %r = arith.mulf %a, %two : f32
    linalg.yield %r : f32
  }
  return %v : tensor<64xf32>
}
