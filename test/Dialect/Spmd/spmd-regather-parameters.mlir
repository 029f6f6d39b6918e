// RUN: spmd-opt %s --pass-pipeline='builtin.module(func.func(spmd-regather-parameters{min-gap=0.3}))' | FileCheck %s
// RUN: spmd-opt %s --pass-pipeline='builtin.module(func.func(spmd-regather-parameters{min-gap=0.3}, spmd-overlap-collectives{prefetch-parameters=1}))' | FileCheck %s --check-prefix=PREFETCH

// A parameter's gather is repeated before its distant (backward) uses;
// close uses share one; a gather of a buffer is left alone.
spmd.mesh @dp(shape = 2)
spmd.state @w : tensor<4x4xf32> role = param spec = <@dp, [shard<0>]>
spmd.state @v : tensor<4x4xf32> role = param spec = <@dp, [shard<0>]>
spmd.state @b : tensor<4x4xf32> role = buffer spec = <@dp, [shard<0>]>
// CHECK-LABEL: func.func @step
// CHECK: %[[W:.*]] = spmd.load @w
// CHECK: %[[V:.*]] = spmd.load @v
// CHECK: %[[B:.*]] = spmd.load @b
// CHECK: %[[G1:.*]] = spmd.all_gather %[[W]] {{.*}} -> tensor<8x4xf32>
// CHECK: %[[GB:.*]] = spmd.all_gather %[[B]] {{.*}} -> tensor<8x4xf32>
// CHECK: %[[F1:.*]] = arith.addf %[[G1]], %[[G1]]
// CHECK: %[[F2:.*]] = arith.mulf %[[F1]], %[[G1]]
// CHECK: %[[G2:.*]] = spmd.all_gather %[[W]] {{.*}} -> tensor<8x4xf32>
// CHECK-NEXT: arith.subf %{{.*}}, %[[G2]]
// CHECK: arith.subf %{{.*}}, %[[GB]]
// CHECK-NEXT: %[[GV2:.*]] = spmd.all_gather %[[V]] {{.*}} -> tensor<8x4xf32>
// CHECK-NEXT: return %{{.*}}, %[[GV2]]
// The second parameter's gather starts after the first one's wait; its
// copy for the backward use starts after the second one's.
// PREFETCH-LABEL: func.func @step
// PREFETCH: %[[FW:.*]] = spmd.all_gather {{.*}} -> !spmd.future<tensor<8x4xf32>>
// PREFETCH: spmd.wait %[[FW]]
// PREFETCH-NEXT: %[[FV:.*]] = spmd.all_gather {{.*}} -> !spmd.future<tensor<8x4xf32>>
// PREFETCH: spmd.wait %[[FV]]
// PREFETCH-NEXT: spmd.all_gather {{.*}} -> !spmd.future<tensor<8x4xf32>>
func.func @step() -> (tensor<8x4xf32>, tensor<8x4xf32>) {
  %w = spmd.load @w : tensor<4x4xf32>
  %v = spmd.load @v : tensor<4x4xf32>
  %b = spmd.load @b : tensor<4x4xf32>
  %gw = spmd.all_gather %w on @dp axes = [0] gather_dim = 0 : tensor<4x4xf32> -> tensor<8x4xf32>
  %gv = spmd.all_gather %v on @dp axes = [0] gather_dim = 0 : tensor<4x4xf32> -> tensor<8x4xf32>
  %gb = spmd.all_gather %b on @dp axes = [0] gather_dim = 0 : tensor<4x4xf32> -> tensor<8x4xf32>
  %f1 = arith.addf %gw, %gw : tensor<8x4xf32>
  %f2 = arith.mulf %f1, %gw : tensor<8x4xf32>
  %f3 = arith.mulf %f2, %gv : tensor<8x4xf32>
  %f4 = arith.mulf %f3, %f3 : tensor<8x4xf32>
  %f5 = arith.mulf %f4, %f4 : tensor<8x4xf32>
  %f6 = arith.mulf %f5, %f5 : tensor<8x4xf32>
  %f7 = arith.mulf %f6, %f6 : tensor<8x4xf32>
  %f8 = arith.mulf %f7, %gb : tensor<8x4xf32>
  %f9 = arith.mulf %f8, %f8 : tensor<8x4xf32>
  %b1 = arith.subf %f9, %gw : tensor<8x4xf32>
  %b2 = arith.subf %b1, %f1 : tensor<8x4xf32>
  %b3 = arith.subf %b2, %gb : tensor<8x4xf32>
  return %b3, %gv : tensor<8x4xf32>, tensor<8x4xf32>
}
