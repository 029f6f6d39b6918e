// RUN: spmd-opt %s -canonicalize -split-input-file | FileCheck %s

spmd.mesh @m(shape = 1x4)

// A collective over a group of one rank is the identity.
// CHECK-LABEL: func.func @trivial_groups
// CHECK-SAME: (%[[X:.*]]: tensor<8x4xf32>, %[[Y:.*]]: tensor<4xf32>)
// CHECK-NOT: spmd.
// CHECK: return %[[X]], %[[Y]], %[[X]], %[[X]], %[[X]], %[[Y]]
func.func @trivial_groups(%x: tensor<8x4xf32>, %y: tensor<4xf32>) -> (tensor<8x4xf32>, tensor<4xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<4xf32>) {
  %0:2 = spmd.all_reduce %x, %y on @m axes = [0] sum : tensor<8x4xf32>, tensor<4xf32> -> tensor<8x4xf32>, tensor<4xf32>
  %1 = spmd.all_gather %0#0 on @m axes = [0] gather_dim = 0 : tensor<8x4xf32> -> tensor<8x4xf32>
  %2 = spmd.reduce_scatter %x on @m axes = [] avg scatter_dim = 1 : tensor<8x4xf32> -> tensor<8x4xf32>
  %3 = spmd.all_to_all %x on @m axes = [0] split_dim = 0 concat_dim = 1 : tensor<8x4xf32> -> tensor<8x4xf32>
  %4 = spmd.broadcast %y on @m axes = [0] root = 0 : tensor<4xf32> -> tensor<4xf32>
  return %1, %0#1, %2, %3, %x, %4 : tensor<8x4xf32>, tensor<4xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<4xf32>
}

// CHECK-LABEL: func.func @real_groups_stay
// CHECK: spmd.all_reduce %{{.*}} on @m axes = [1] sum
// CHECK: spmd.all_gather %{{.*}} on @m axes = [0, 1] gather_dim = 0
func.func @real_groups_stay(%x: tensor<8x4xf32>) -> (tensor<8x4xf32>, tensor<32x4xf32>) {
  %0 = spmd.all_reduce %x on @m axes = [1] sum : tensor<8x4xf32> -> tensor<8x4xf32>
  %1 = spmd.all_gather %x on @m axes = [0, 1] gather_dim = 0 : tensor<8x4xf32> -> tensor<32x4xf32>
  return %0, %1 : tensor<8x4xf32>, tensor<32x4xf32>
}

// Waiting on a trivial asynchronous collective yields its input; a real one
// stays.
// CHECK-LABEL: func.func @trivial_async
// CHECK-SAME: (%[[X:.*]]: tensor<8x4xf32>, %[[Y:.*]]: tensor<4xf32>)
// CHECK: %[[F:.*]] = spmd.all_reduce %[[Y]] on @m axes = [1] sum : tensor<4xf32> -> !spmd.future<tensor<4xf32>>
// CHECK-NEXT: %[[W:.*]] = spmd.wait %[[F]] : !spmd.future<tensor<4xf32>>
// CHECK-NEXT: return %[[X]], %[[W]]
func.func @trivial_async(%x: tensor<8x4xf32>, %y: tensor<4xf32>) -> (tensor<8x4xf32>, tensor<4xf32>) {
  %f = spmd.all_reduce %x on @m axes = [0] sum : tensor<8x4xf32> -> !spmd.future<tensor<8x4xf32>>
  %g = spmd.all_reduce %y on @m axes = [1] sum : tensor<4xf32> -> !spmd.future<tensor<4xf32>>
  %a, %b = spmd.wait %f, %g : !spmd.future<tensor<8x4xf32>>, !spmd.future<tensor<4xf32>>
  return %a, %b : tensor<8x4xf32>, tensor<4xf32>
}

// Collectives are Pure (see their description): an unused one is dropped.
// CHECK-LABEL: func.func @dead_collective
// CHECK-NOT: spmd.
// CHECK: return
func.func @dead_collective(%x: tensor<8x4xf32>) {
  %0 = spmd.all_reduce %x on @m axes = [1] sum : tensor<8x4xf32> -> tensor<8x4xf32>
  %f = spmd.all_gather %x on @m axes = [1] gather_dim = 0 : tensor<8x4xf32> -> !spmd.future<tensor<32x4xf32>>
  return
}

// -----

spmd.mesh @dp(shape = 4)

// A redistribute to the spec its input already has folds away.
// CHECK-LABEL: func.func @redistribute_same_spec
// CHECK-SAME: (%[[X:.*]]: tensor<8x4xf32>)
// CHECK: %[[A:.*]] = spmd.annotate %[[X]] to <@dp, [shard<0>]>
// CHECK-NOT: spmd.redistribute
// CHECK: return %[[A]]
func.func @redistribute_same_spec(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %a = spmd.annotate %x to <@dp, [shard<0>]> : tensor<8x4xf32>
  %r = spmd.redistribute %a to <@dp, [shard<0>]> : tensor<8x4xf32>
  return %r : tensor<8x4xf32>
}

// A chain of redistributes keeps only the last.
// CHECK-LABEL: func.func @redistribute_chain
// CHECK-SAME: (%[[X:.*]]: tensor<8x4xf32>)
// CHECK: %[[A:.*]] = spmd.annotate %[[X]] to <@dp, [partial<sum>]>
// CHECK-NEXT: %[[R:.*]] = spmd.redistribute %[[A]] to <@dp, [shard<1>]>
// CHECK-NEXT: return %[[R]]
func.func @redistribute_chain(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %a = spmd.annotate %x to <@dp, [partial<sum>]> : tensor<8x4xf32>
  %r0 = spmd.redistribute %a to <@dp, [replicate]> : tensor<8x4xf32>
  %r1 = spmd.redistribute %r0 to <@dp, [shard<0>]> : tensor<8x4xf32>
  %r2 = spmd.redistribute %r1 to <@dp, [shard<1>]> : tensor<8x4xf32>
  return %r2 : tensor<8x4xf32>
}

// A redistribute to another spec stays.
// CHECK-LABEL: func.func @redistribute_other_spec
// CHECK: spmd.redistribute %{{.*}} to <@dp, [replicate]>
func.func @redistribute_other_spec(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %a = spmd.annotate %x to <@dp, [shard<0>]> : tensor<8x4xf32>
  %r = spmd.redistribute %a to <@dp, [replicate]> : tensor<8x4xf32>
  return %r : tensor<8x4xf32>
}
