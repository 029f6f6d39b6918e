// RUN: spmd-gpu-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(spmd-gpu-recompute-into-reductions))' | FileCheck %s

#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
#row = affine_map<(d0, d1) -> (d0)>
#all = affine_map<(d0, d1) -> ()>

// An MLP's output layer: the difference of the output and the targets is
// read by a GEMM (the weight gradient), by the loss's sum of squares (a
// full reduction) and by the bias gradient's column sum. Both reductions
// compute the difference again from its inputs; it stays for the GEMM.
// CHECK-LABEL: func.func @mse_and_bias
// CHECK: %[[D:.*]] = linalg.generic {{.*}} ins(%arg0, %arg1 : tensor<4x8xf32>, tensor<4x8xf32>)
// CHECK: linalg.matmul ins(%[[D]], %arg2 : tensor<4x8xf32>, tensor<8x3xf32>)
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction", "reduction"]} ins(%arg0, %arg1 : tensor<4x8xf32>, tensor<4x8xf32>) outs(%arg3 : tensor<f32>)
// CHECK-NEXT: ^bb0(%[[A:.*]]: f32, %[[B:.*]]: f32, %[[O:.*]]: f32):
// CHECK-NEXT: %[[S:.*]] = arith.subf %[[A]], %[[B]]
// CHECK-NEXT: %[[M:.*]] = arith.mulf %[[S]], %[[S]]
// CHECK-NEXT: arith.addf %[[M]], %[[O]]
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction", "parallel"]} ins(%arg0, %arg1 : tensor<4x8xf32>, tensor<4x8xf32>) outs(%arg4 : tensor<8xf32>)
// CHECK-NEXT: ^bb0(%[[A:.*]]: f32, %[[B:.*]]: f32, %[[O:.*]]: f32):
// CHECK-NEXT: %[[S:.*]] = arith.subf %[[A]], %[[B]]
// CHECK-NEXT: arith.addf %[[S]], %[[O]]
func.func @mse_and_bias(%y: tensor<4x8xf32>, %t: tensor<4x8xf32>, %w: tensor<8x3xf32>, %acc: tensor<f32>, %bias: tensor<8xf32>) -> (tensor<4x3xf32>, tensor<f32>, tensor<8xf32>) {
  %e = tensor.empty() : tensor<4x8xf32>
  %d = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%y, %t : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.subf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  %z = tensor.empty() : tensor<4x3xf32>
  %g = linalg.matmul ins(%d, %w : tensor<4x8xf32>, tensor<8x3xf32>) outs(%z : tensor<4x3xf32>) -> tensor<4x3xf32>
  %l = linalg.generic {indexing_maps = [#id, #all], iterator_types = ["reduction", "reduction"]} ins(%d : tensor<4x8xf32>) outs(%acc : tensor<f32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.mulf %a, %a : f32
    %s = arith.addf %m, %o : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  %c = linalg.generic {indexing_maps = [#id, #col], iterator_types = ["reduction", "parallel"]} ins(%d : tensor<4x8xf32>) outs(%bias : tensor<8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %a, %o : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  return %g, %l, %c : tensor<4x3xf32>, tensor<f32>, tensor<8xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>

// Transitively: ReLU's backward reads the scaled gradient, both read by a
// GEMM too; the bias gradient's column sum computes both again, reading
// what the chain reads (the gradient, the activation).
// CHECK-LABEL: func.func @chain
// CHECK: %[[S:.*]] = linalg.generic {{.*}} ins(%arg0 : tensor<4x8xf32>)
// CHECK: %[[R:.*]] = linalg.generic {{.*}} ins(%[[S]], %arg1 : tensor<4x8xf32>, tensor<4x8xf32>)
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction", "parallel"]} ins(%arg0, %arg1 : tensor<4x8xf32>, tensor<4x8xf32>) outs(%arg3 : tensor<8xf32>)
// CHECK-NEXT: ^bb0(%[[G:.*]]: f32, %[[H:.*]]: f32, %[[O:.*]]: f32):
// CHECK-NEXT: %[[M:.*]] = arith.mulf %[[G]]
// CHECK-NEXT: arith.cmpf
// CHECK-NEXT: %[[V:.*]] = arith.select {{.*}}, %[[M]]
// CHECK-NEXT: arith.addf %[[V]], %[[O]]
func.func @chain(%g: tensor<4x8xf32>, %h: tensor<4x8xf32>, %w: tensor<8x3xf32>, %bias: tensor<8xf32>) -> (tensor<4x3xf32>, tensor<4x3xf32>, tensor<8xf32>) {
  %cst = arith.constant 0.5 : f32
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %s = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%g : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.mulf %a, %cst : f32
    linalg.yield %m : f32
  } -> tensor<4x8xf32>
  %e2 = tensor.empty() : tensor<4x8xf32>
  %r = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%s, %h : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e2 : tensor<4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %p = arith.cmpf ogt, %b, %zero : f32
    %v = arith.select %p, %a, %zero : f32
    linalg.yield %v : f32
  } -> tensor<4x8xf32>
  %z = tensor.empty() : tensor<4x3xf32>
  %m1 = linalg.matmul ins(%s, %w : tensor<4x8xf32>, tensor<8x3xf32>) outs(%z : tensor<4x3xf32>) -> tensor<4x3xf32>
  %m2 = linalg.matmul ins(%r, %w : tensor<4x8xf32>, tensor<8x3xf32>) outs(%z : tensor<4x3xf32>) -> tensor<4x3xf32>
  %c = linalg.generic {indexing_maps = [#id, #col], iterator_types = ["reduction", "parallel"]} ins(%r : tensor<4x8xf32>) outs(%bias : tensor<8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %t = arith.addf %a, %o : f32
    linalg.yield %t : f32
  } -> tensor<8xf32>
  return %m1, %m2, %c : tensor<4x3xf32>, tensor<4x3xf32>, tensor<8xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#col = affine_map<(d0, d1) -> (d1)>
#bcast = affine_map<(d0, d1) -> (d0)>

// Kept: a row reduction (spmd-gpu-row-kernels runs its chain in one
// kernel anyway), a producer with one reader (spmd-fuse-elementwise's
// case), a producer read through a broadcast (it would be computed once
// per element it is broadcast to), a gather (scattered reads), and a
// contraction (it stays a GEMM).
// CHECK-LABEL: func.func @kept
// CHECK: %[[D:.*]] = linalg.generic {{.*}} ins(%arg0, %arg1 : tensor<4x8xf32>, tensor<4x8xf32>)
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%[[D]] : tensor<4x8xf32>)
// CHECK: %[[ONE:.*]] = linalg.generic {{.*}} ins(%arg0 : tensor<4x8xf32>)
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction", "parallel"]} ins(%[[ONE]] : tensor<4x8xf32>)
// CHECK: %[[V:.*]] = linalg.generic {{.*}} ins(%arg2 : tensor<4xf32>)
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction", "parallel"]} ins(%[[V]] : tensor<4xf32>)
// CHECK: %[[GA:.*]] = linalg.generic {{.*}} ins(%arg4 : tensor<4x8xindex>)
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction", "parallel"]} ins(%[[GA]] : tensor<4x8xf32>)
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[D]], %arg3 : tensor<4x8xf32>, tensor<8x3xf32>)
func.func @kept(%y: tensor<4x8xf32>, %t: tensor<4x8xf32>, %v: tensor<4xf32>, %w: tensor<8x3xf32>, %ix: tensor<4x8xindex>, %table: tensor<16x8xf32>, %rows: tensor<4xf32>, %cols: tensor<8xf32>) -> (tensor<4xf32>, tensor<8xf32>, tensor<8xf32>, tensor<4xf32>, tensor<8xf32>, tensor<4x8xf32>, tensor<4x3xf32>, tensor<4x8xf32>) {
  %e = tensor.empty() : tensor<4x8xf32>
  %d = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%y, %t : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.subf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  %rs = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%d : tensor<4x8xf32>) outs(%rows : tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %a, %o : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %one = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%y : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %n = arith.negf %a : f32
    linalg.yield %n : f32
  } -> tensor<4x8xf32>
  %c1 = linalg.generic {indexing_maps = [#id, #col], iterator_types = ["reduction", "parallel"]} ins(%one : tensor<4x8xf32>) outs(%cols : tensor<8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %a, %o : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  %e4 = tensor.empty() : tensor<4xf32>
  %vv = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%v : tensor<4xf32>) outs(%e4 : tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %n = arith.negf %a : f32
    linalg.yield %n : f32
  } -> tensor<4xf32>
  %c2 = linalg.generic {indexing_maps = [#bcast, #col], iterator_types = ["reduction", "parallel"]} ins(%vv : tensor<4xf32>) outs(%cols : tensor<8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %a, %o : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  %ga = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%ix : tensor<4x8xindex>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%i: index, %o: f32):
    %j = linalg.index 1 : index
    %x = tensor.extract %table[%i, %j] : tensor<16x8xf32>
    linalg.yield %x : f32
  } -> tensor<4x8xf32>
  %c3 = linalg.generic {indexing_maps = [#id, #col], iterator_types = ["reduction", "parallel"]} ins(%ga : tensor<4x8xf32>) outs(%cols : tensor<8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %a, %o : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  %z = tensor.empty() : tensor<4x3xf32>
  %mm = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%d, %w : tensor<4x8xf32>, tensor<8x3xf32>) outs(%z : tensor<4x3xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %p, %o : f32
    linalg.yield %s : f32
  } -> tensor<4x3xf32>
  return %rs, %c1, %c2, %vv, %c3, %ga, %mm, %d : tensor<4xf32>, tensor<8xf32>, tensor<8xf32>, tensor<4xf32>, tensor<8xf32>, tensor<4x8xf32>, tensor<4x3xf32>, tensor<4x8xf32>
}
