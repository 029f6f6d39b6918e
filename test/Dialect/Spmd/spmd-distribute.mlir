// RUN: spmd-opt %s --spmd-distribute --split-input-file | FileCheck %s
// RUN: spmd-opt %s --spmd-distribute=verify-each-phase=true --split-input-file | FileCheck %s

// The one pass gives exactly what its five phases give as separate passes.
// RUN: spmd-opt %s --spmd-distribute --split-input-file > %t.one.mlir
// RUN: spmd-opt %s --split-input-file \
// RUN:   --pass-pipeline='builtin.module(spmd-fold-splat-reductions, spmd-propagate, spmd-expand, func.func(spmd-dedup-collectives), canonicalize{region-simplify=disabled max-iterations=1 top-down=false})' \
// RUN:   > %t.four.mlir
// RUN: diff %t.one.mlir %t.four.mlir

// Data parallel: batch-sharded inputs, replicated parameters, SGD. Exactly one
// all_reduce per gradient and no other collective; the loss is returned as
// each rank's partial sum (recorded in the result spec).
// CHECK-LABEL: func.func @mlp
// CHECK-SAME: %{{.*}}: tensor<2x8xf32> {spmd.spec = #spmd.spec<@dp, [shard<0>]>}
// CHECK-SAME: -> (tensor<f32> {spmd.spec = #spmd.spec<@dp, [partial<sum>]>}
// CHECK-NOT: spmd.all_gather
// CHECK-NOT: spmd.reduce_scatter
// CHECK-NOT: spmd.all_to_all
// CHECK: %[[G1:.*]] = spmd.all_reduce %{{.*}} on @dp axes = [0] sum : tensor<16x8xf32> -> tensor<16x8xf32>
// CHECK-NEXT: spmd.sgd params [%{{.*}}] grads [%[[G1]]]
// CHECK-NEXT: %[[G2:.*]] = spmd.all_reduce %{{.*}} on @dp axes = [0] sum : tensor<8x16xf32> -> tensor<8x16xf32>
// CHECK-NEXT: spmd.sgd params [%{{.*}}] grads [%[[G2]]]
// CHECK-NOT: spmd.all_
// CHECK: return
#id = affine_map<(d0, d1) -> (d0, d1)>
spmd.mesh @dp(shape = 2)
spmd.state @"fc1.weight" : tensor<16x8xf32> role = param
spmd.state @"fc2.weight" : tensor<8x16xf32> role = param

func.func @mlp(%x: tensor<4x8xf32> {spmd.spec = #spmd.spec<@dp, [shard<0>]>}, %t: tensor<4x8xf32> {spmd.spec = #spmd.spec<@dp, [shard<0>]>}) -> (tensor<f32>, tensor<4x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %w1 = spmd.load @"fc1.weight" : tensor<16x8xf32>
  %w2 = spmd.load @"fc2.weight" : tensor<8x16xf32>
  // h = x @ w1^T (column parallel)
  %e_h = tensor.empty() : tensor<4x16xf32>
  %z_h = linalg.fill ins(%zero : f32) outs(%e_h : tensor<4x16xf32>) -> tensor<4x16xf32>
  %h = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%x, %w1 : tensor<4x8xf32>, tensor<16x8xf32>) outs(%z_h : tensor<4x16xf32>) -> tensor<4x16xf32>
  // g = relu(h)
  %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%h : tensor<4x16xf32>) outs(%e_h : tensor<4x16xf32>) {
    ^bb0(%a: f32, %o: f32):
      %r = arith.maximumf %a, %zero : f32
      linalg.yield %r : f32
  } -> tensor<4x16xf32>
  // y = g @ w2^T (row parallel), replicated output as RowwiseParallel
  %e_y = tensor.empty() : tensor<4x8xf32>
  %z_y = linalg.fill ins(%zero : f32) outs(%e_y : tensor<4x8xf32>) -> tensor<4x8xf32>
  %y0 = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%g, %w2 : tensor<4x16xf32>, tensor<8x16xf32>) outs(%z_y : tensor<4x8xf32>) -> tensor<4x8xf32>
  // loss = sum((y - t)^2) / 32
  %d = linalg.sub ins(%y0, %t : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e_y : tensor<4x8xf32>) -> tensor<4x8xf32>
  %sq = linalg.mul ins(%d, %d : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e_y : tensor<4x8xf32>) -> tensor<4x8xf32>
  %e0 = tensor.empty() : tensor<f32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %sum = linalg.reduce ins(%sq : tensor<4x8xf32>) outs(%z0 : tensor<f32>) dimensions = [0, 1]
    (%in: f32, %acc: f32) {
      %s = arith.addf %in, %acc : f32
      linalg.yield %s : f32
    }
  %n = arith.constant dense<32.0> : tensor<f32>
  %loss = arith.divf %sum, %n : tensor<f32>
  // backward
  %c = arith.constant dense<0.0625> : tensor<4x8xf32>
  %dy = arith.mulf %d, %c : tensor<4x8xf32>
  // dg = dy @ w2
  %dg = linalg.matmul ins(%dy, %w2 : tensor<4x8xf32>, tensor<8x16xf32>) outs(%z_h : tensor<4x16xf32>) -> tensor<4x16xf32>
  // dw2 = dy^T @ g
  %e_w2 = tensor.empty() : tensor<8x16xf32>
  %z_w2 = linalg.fill ins(%zero : f32) outs(%e_w2 : tensor<8x16xf32>) -> tensor<8x16xf32>
  %dw2 = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (k, m)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%dy, %g : tensor<4x8xf32>, tensor<4x16xf32>) outs(%z_w2 : tensor<8x16xf32>) -> tensor<8x16xf32>
  // dh = dg * (h > 0)
  %dh = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%dg, %h : tensor<4x16xf32>, tensor<4x16xf32>) outs(%e_h : tensor<4x16xf32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %pos = arith.cmpf ogt, %b, %zero : f32
      %r = arith.select %pos, %a, %zero : f32
      linalg.yield %r : f32
  } -> tensor<4x16xf32>
  // dw1 = dh^T @ x
  %e_w1 = tensor.empty() : tensor<16x8xf32>
  %z_w1 = linalg.fill ins(%zero : f32) outs(%e_w1 : tensor<16x8xf32>) -> tensor<16x8xf32>
  %dw1 = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (k, m)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%dh, %x : tensor<4x16xf32>, tensor<4x8xf32>) outs(%z_w1 : tensor<16x8xf32>) -> tensor<16x8xf32>
  // dx = dh @ w1
  %e_x = tensor.empty() : tensor<4x8xf32>
  %z_x = linalg.fill ins(%zero : f32) outs(%e_x : tensor<4x8xf32>) -> tensor<4x8xf32>
  %dx = linalg.matmul ins(%dh, %w1 : tensor<4x16xf32>, tensor<16x8xf32>) outs(%z_x : tensor<4x8xf32>) -> tensor<4x8xf32>
  %nw1 = spmd.sgd params [%w1] grads [%dw1] {lr = 0.1 : f64} : tensor<16x8xf32>
  %nw2 = spmd.sgd params [%w2] grads [%dw2] {lr = 0.1 : f64} : tensor<8x16xf32>
  spmd.store %nw1 to @"fc1.weight" : tensor<16x8xf32>
  spmd.store %nw2 to @"fc2.weight" : tensor<8x16xf32>
  return %loss, %dx : tensor<f32>, tensor<4x8xf32>
}

// -----

// Megatron tensor parallel: fc1 column-parallel, fc2 row-parallel with a
// replicated output (RowwiseParallel). Forward: exactly one all_reduce.
// Backward: weight gradients stay sharded like their weights (no
// communication); the input gradient is returned partial.
// CHECK-LABEL: func.func @mlp
// CHECK: %[[W1:.*]] = spmd.load @fc1.weight : tensor<8x8xf32>
// CHECK: %[[W2:.*]] = spmd.load @fc2.weight : tensor<8x8xf32>
// CHECK: linalg.matmul {{.*}} ins(%{{.*}}, %[[W1]] : tensor<4x8xf32>, tensor<8x8xf32>) outs(%{{.*}} : tensor<4x8xf32>)
// CHECK: %[[Y:.*]] = linalg.matmul {{.*}} ins(%{{.*}}, %[[W2]] : tensor<4x8xf32>, tensor<8x8xf32>) outs(%{{.*}} : tensor<4x8xf32>)
// CHECK-NEXT: spmd.all_reduce %[[Y]] on @tp axes = [0] sum : tensor<4x8xf32> -> tensor<4x8xf32>
// CHECK-NOT: spmd.all_
// CHECK-NOT: spmd.reduce_scatter
// CHECK: spmd.sgd params [%[[W1]]] grads [%{{.*}}] {{.*}} : tensor<8x8xf32>
// CHECK: spmd.sgd params [%[[W2]]] grads [%{{.*}}] {{.*}} : tensor<8x8xf32>
// CHECK: return %{{.*}}, %{{.*}} : tensor<f32>, tensor<4x8xf32>
#id = affine_map<(d0, d1) -> (d0, d1)>
spmd.mesh @tp(shape = 2)
spmd.state @"fc1.weight" : tensor<16x8xf32> role = param spec = <@tp, [shard<0>]>
spmd.state @"fc2.weight" : tensor<8x16xf32> role = param spec = <@tp, [shard<1>]>

func.func @mlp(%x: tensor<4x8xf32>, %t: tensor<4x8xf32>) -> (tensor<f32>, tensor<4x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %w1 = spmd.load @"fc1.weight" : tensor<16x8xf32>
  %w2 = spmd.load @"fc2.weight" : tensor<8x16xf32>
  // h = x @ w1^T (column parallel)
  %e_h = tensor.empty() : tensor<4x16xf32>
  %z_h = linalg.fill ins(%zero : f32) outs(%e_h : tensor<4x16xf32>) -> tensor<4x16xf32>
  %h = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%x, %w1 : tensor<4x8xf32>, tensor<16x8xf32>) outs(%z_h : tensor<4x16xf32>) -> tensor<4x16xf32>
  // g = relu(h)
  %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%h : tensor<4x16xf32>) outs(%e_h : tensor<4x16xf32>) {
    ^bb0(%a: f32, %o: f32):
      %r = arith.maximumf %a, %zero : f32
      linalg.yield %r : f32
  } -> tensor<4x16xf32>
  // y = g @ w2^T (row parallel), replicated output as RowwiseParallel
  %e_y = tensor.empty() : tensor<4x8xf32>
  %z_y = linalg.fill ins(%zero : f32) outs(%e_y : tensor<4x8xf32>) -> tensor<4x8xf32>
  %y0 = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%g, %w2 : tensor<4x16xf32>, tensor<8x16xf32>) outs(%z_y : tensor<4x8xf32>) -> tensor<4x8xf32>
  %y = spmd.annotate %y0 to <@tp, [replicate]> : tensor<4x8xf32>
  // loss = sum((y - t)^2) / 32
  %d = linalg.sub ins(%y, %t : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e_y : tensor<4x8xf32>) -> tensor<4x8xf32>
  %sq = linalg.mul ins(%d, %d : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e_y : tensor<4x8xf32>) -> tensor<4x8xf32>
  %e0 = tensor.empty() : tensor<f32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %sum = linalg.reduce ins(%sq : tensor<4x8xf32>) outs(%z0 : tensor<f32>) dimensions = [0, 1]
    (%in: f32, %acc: f32) {
      %s = arith.addf %in, %acc : f32
      linalg.yield %s : f32
    }
  %n = arith.constant dense<32.0> : tensor<f32>
  %loss = arith.divf %sum, %n : tensor<f32>
  // backward
  %c = arith.constant dense<0.0625> : tensor<4x8xf32>
  %dy = arith.mulf %d, %c : tensor<4x8xf32>
  // dg = dy @ w2
  %dg = linalg.matmul ins(%dy, %w2 : tensor<4x8xf32>, tensor<8x16xf32>) outs(%z_h : tensor<4x16xf32>) -> tensor<4x16xf32>
  // dw2 = dy^T @ g
  %e_w2 = tensor.empty() : tensor<8x16xf32>
  %z_w2 = linalg.fill ins(%zero : f32) outs(%e_w2 : tensor<8x16xf32>) -> tensor<8x16xf32>
  %dw2 = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (k, m)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%dy, %g : tensor<4x8xf32>, tensor<4x16xf32>) outs(%z_w2 : tensor<8x16xf32>) -> tensor<8x16xf32>
  // dh = dg * (h > 0)
  %dh = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%dg, %h : tensor<4x16xf32>, tensor<4x16xf32>) outs(%e_h : tensor<4x16xf32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %pos = arith.cmpf ogt, %b, %zero : f32
      %r = arith.select %pos, %a, %zero : f32
      linalg.yield %r : f32
  } -> tensor<4x16xf32>
  // dw1 = dh^T @ x
  %e_w1 = tensor.empty() : tensor<16x8xf32>
  %z_w1 = linalg.fill ins(%zero : f32) outs(%e_w1 : tensor<16x8xf32>) -> tensor<16x8xf32>
  %dw1 = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (k, m)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%dh, %x : tensor<4x16xf32>, tensor<4x8xf32>) outs(%z_w1 : tensor<16x8xf32>) -> tensor<16x8xf32>
  // dx = dh @ w1
  %e_x = tensor.empty() : tensor<4x8xf32>
  %z_x = linalg.fill ins(%zero : f32) outs(%e_x : tensor<4x8xf32>) -> tensor<4x8xf32>
  %dx = linalg.matmul ins(%dh, %w1 : tensor<4x16xf32>, tensor<16x8xf32>) outs(%z_x : tensor<4x8xf32>) -> tensor<4x8xf32>
  %nw1 = spmd.sgd params [%w1] grads [%dw1] {lr = 0.1 : f64} : tensor<16x8xf32>
  %nw2 = spmd.sgd params [%w2] grads [%dw2] {lr = 0.1 : f64} : tensor<8x16xf32>
  spmd.store %nw1 to @"fc1.weight" : tensor<16x8xf32>
  spmd.store %nw2 to @"fc2.weight" : tensor<8x16xf32>
  return %loss, %dx : tensor<f32>, tensor<4x8xf32>
}

// -----

// The seed's test_expand_dimension: Linear(10, 10) under `.sum().backward()`
// over a global batch of 6 on 2 ranks. The weight gradient is each rank's
// rows (the ones the backward of sum expands to, 10x3 here) times its
// inputs, then one all_reduce, as DDP: not an all-gather of the batch,
// though that moves fewer bytes (60 floats against 100). The bias gradient
// (the sum of the ones over the batch) folds to a constant. No value of the
// global batch's shape remains.
// CHECK-LABEL: func.func @expand_dimension
// CHECK-NOT: tensor<6x
// CHECK-NOT: spmd.all_gather
// CHECK-DAG: %[[BIAS:.*]] = arith.constant dense<6.000000e+00> : tensor<1x10xf32>
// CHECK-DAG: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<10x3xf32>, tensor<3x10xf32>)
// CHECK: spmd.all_reduce %{{.*}} on @dp axes = [0] sum : tensor<10x10xf32>
// CHECK-NOT: tensor<6x
// CHECK: spmd.store %[[BIAS]] to @bias.grad
// CHECK: return
#rows = affine_map<(d0, d1) -> (d0, d1)>
#cols = affine_map<(d0, d1) -> (0, d1)>
spmd.mesh @dp(shape = 2)
spmd.state @"weight" : tensor<10x10xf32> role = param
spmd.state @"weight.grad" : tensor<10x10xf32> role = gradient
spmd.state @"bias.grad" : tensor<1x10xf32> role = gradient
func.func @expand_dimension(%x: tensor<6x10xf32> {spmd.spec = #spmd.spec<@dp, [shard<0>]>}) {
  %zero = arith.constant 0.0 : f32
  %ones_t = arith.constant dense<1.0> : tensor<10x6xf32>
  %ones = arith.constant dense<1.0> : tensor<6x10xf32>
  %e = tensor.empty() : tensor<10x10xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<10x10xf32>) -> tensor<10x10xf32>
  %gw = linalg.matmul ins(%ones_t, %x : tensor<10x6xf32>, tensor<6x10xf32>) outs(%z : tensor<10x10xf32>) -> tensor<10x10xf32>
  %eb = tensor.empty() : tensor<1x10xf32>
  %zb = linalg.fill ins(%zero : f32) outs(%eb : tensor<1x10xf32>) -> tensor<1x10xf32>
  %gb = linalg.generic {indexing_maps = [#rows, #cols], iterator_types = ["reduction", "parallel"]}
      ins(%ones : tensor<6x10xf32>) outs(%zb : tensor<1x10xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  } -> tensor<1x10xf32>
  spmd.store %gw to @"weight.grad" : tensor<10x10xf32>
  spmd.store %gb to @"bias.grad" : tensor<1x10xf32>
  return
}
