// RUN: spmd-opt %s --spmd-distribute --split-input-file | FileCheck %s

// spmd.attention's rule: batch and heads shard freely. DP x TP on a 2x2
// mesh, batch on axis 0 and heads on axis 1: each rank computes its own
// 2 x 2 block of (batch, head) pairs, with no collective, forward and
// backward; the results keep the placements.
// CHECK-LABEL: func.func @batch_and_heads
// CHECK-SAME: -> (tensor<2x2x8x16xf32> {spmd.spec = #spmd.spec<@m, [shard<0>, shard<1>]>}, tensor<2x2x8x16xf32> {spmd.spec = #spmd.spec<@m, [shard<0>, shard<1>]>})
// CHECK-NOT: spmd.all_
// CHECK-NOT: spmd.reduce_scatter
// CHECK: spmd.attention %{{.*}}, %{{.*}}, %{{.*}} {causal, scale = 2.500000e-01 : f64} : tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32> -> tensor<2x2x8x16xf32>, tensor<2x2x8xf32>
// CHECK: spmd.attention_grad {{.*}} : tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8xf32>
// CHECK-NOT: spmd.all_
// CHECK: return
spmd.mesh @m(shape = 2x2)
func.func @batch_and_heads(
    %q: tensor<4x4x8x16xf32> {spmd.spec = #spmd.spec<@m, [shard<0>, shard<1>]>},
    %k: tensor<4x4x8x16xf32> {spmd.spec = #spmd.spec<@m, [shard<0>, shard<1>]>},
    %v: tensor<4x4x8x16xf32> {spmd.spec = #spmd.spec<@m, [shard<0>, shard<1>]>},
    %g: tensor<4x4x8x16xf32> {spmd.spec = #spmd.spec<@m, [shard<0>, shard<1>]>})
    -> (tensor<4x4x8x16xf32>, tensor<4x4x8x16xf32>) {
  %o, %l = spmd.attention %q, %k, %v {causal, scale = 0.25 : f64} : tensor<4x4x8x16xf32>, tensor<4x4x8x16xf32>, tensor<4x4x8x16xf32> -> tensor<4x4x8x16xf32>, tensor<4x4x8xf32>
  %dq, %dk, %dv = spmd.attention_grad %g, %q, %k, %v, %o, %l {causal, scale = 0.25 : f64} : tensor<4x4x8x16xf32>, tensor<4x4x8x16xf32>, tensor<4x4x8x16xf32>, tensor<4x4x8x16xf32>, tensor<4x4x8x16xf32>, tensor<4x4x8xf32>
  return %o, %dq : tensor<4x4x8x16xf32>, tensor<4x4x8x16xf32>
}

// -----

// A broadcast mask (one row per batch element, as a key padding mask) is
// sharded with the batch; its size-1 dimensions stay whole.
// CHECK-LABEL: func.func @padding_mask
// CHECK-NOT: spmd.all_
// CHECK: spmd.attention %{{.*}}, %{{.*}}, %{{.*}} mask %{{.*}} {scale = 2.500000e-01 : f64} : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x1x1x8xf32> -> tensor<2x4x8x16xf32>, tensor<2x4x8xf32>
spmd.mesh @dp(shape = 2)
func.func @padding_mask(
    %q: tensor<4x4x8x16xf32> {spmd.spec = #spmd.spec<@dp, [shard<0>]>},
    %m: tensor<4x1x1x8xf32> {spmd.spec = #spmd.spec<@dp, [shard<0>]>})
    -> tensor<4x4x8x16xf32> {
  %o, %l = spmd.attention %q, %q, %q mask %m {scale = 0.25 : f64} : tensor<4x4x8x16xf32>, tensor<4x4x8x16xf32>, tensor<4x4x8x16xf32>, tensor<4x1x1x8xf32> -> tensor<4x4x8x16xf32>, tensor<4x4x8xf32>
  return %o : tensor<4x4x8x16xf32>
}

// -----

// The sequence is computed whole: a query sharded along it is regathered
// (or moved to a shardable dimension) before the op, which sees all 8
// positions.
// CHECK-LABEL: func.func @sequence_sharded
// CHECK: spmd.all_
// CHECK: spmd.attention {{.*}} : tensor<{{[0-9]+}}x4x8x16xf32>, tensor<{{[0-9]+}}x4x8x16xf32>, tensor<{{[0-9]+}}x4x8x16xf32> -> tensor<{{[0-9]+}}x4x8x16xf32>
spmd.mesh @sp(shape = 2)
func.func @sequence_sharded(
    %q: tensor<4x4x8x16xf32> {spmd.spec = #spmd.spec<@sp, [shard<2>]>})
    -> tensor<4x4x8x16xf32> {
  %o, %l = spmd.attention %q, %q, %q {causal, scale = 0.25 : f64} : tensor<4x4x8x16xf32>, tensor<4x4x8x16xf32>, tensor<4x4x8x16xf32> -> tensor<4x4x8x16xf32>, tensor<4x4x8xf32>
  return %o : tensor<4x4x8x16xf32>
}
