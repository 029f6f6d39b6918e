// RUN: spmd-opt %s --spmd-expand --split-input-file --verify-diagnostics | FileCheck %s

// spmd-expand run alone reads the placement record spmd-propagate leaves
// (#spmd.strategy, spmd.result_specs, the function's spmd.mesh), here written
// by hand: rows of %x sharded, the matmul sharding its factor 0 (rows).

spmd.mesh @dp(shape = 2)
// CHECK-LABEL: func.func @placed
// CHECK-SAME: (%[[X:.*]]: tensor<4x4xf32> {{.*}}, %[[W:.*]]: tensor<4x2xf32> {{.*}}) -> (tensor<4x2xf32> {{.*}}) {
// CHECK: %[[E:.*]] = tensor.empty() : tensor<4x2xf32>
// CHECK: linalg.matmul ins(%[[X]], %[[W]] : tensor<4x4xf32>, tensor<4x2xf32>) outs(%[[E]] : tensor<4x2xf32>) -> tensor<4x2xf32>
// CHECK-NOT: spmd.strategy
func.func @placed(%x: tensor<8x4xf32> {spmd.spec = #spmd.spec<@dp, [shard<0>]>}, %w: tensor<4x2xf32> {spmd.spec = #spmd.spec<@dp, [replicate]>}) -> (tensor<8x2xf32> {spmd.spec = #spmd.spec<@dp, [shard<0>]>}) attributes {spmd.mesh = @dp} {
  %e = tensor.empty() {spmd.result_specs = [#spmd.spec<@dp, [shard<0>]>], spmd.strategy = #spmd.strategy<[factor<0>]>} : tensor<8x2xf32>
  %y = linalg.matmul {spmd.result_specs = [#spmd.spec<@dp, [shard<0>]>], spmd.strategy = #spmd.strategy<[factor<0>]>} ins(%x, %w : tensor<8x4xf32>, tensor<4x2xf32>) outs(%e : tensor<8x2xf32>) -> tensor<8x2xf32>
  return %y : tensor<8x2xf32>
}

// -----

// A record for another mesh: one choice per axis of a 2-axis mesh.
spmd.mesh @dp(shape = 2)
func.func @axes(%x: tensor<8x4xf32> {spmd.spec = #spmd.spec<@dp, [shard<0>]>}, %w: tensor<4x2xf32> {spmd.spec = #spmd.spec<@dp, [replicate]>}) -> (tensor<8x2xf32> {spmd.spec = #spmd.spec<@dp, [shard<0>]>}) attributes {spmd.mesh = @dp} {
  %e = tensor.empty() {spmd.result_specs = [#spmd.spec<@dp, [shard<0>]>], spmd.strategy = #spmd.strategy<[factor<0>]>} : tensor<8x2xf32>
  // expected-error @+1 {{the op's strategy has 2 choice(s) per factor group (one per mesh axis) but the mesh has 1 axis(es)}}
  %y = linalg.matmul {spmd.result_specs = [#spmd.spec<@dp, [shard<0>]>], spmd.strategy = #spmd.strategy<[factor<0>, replicate]>} ins(%x, %w : tensor<8x4xf32>, tensor<4x2xf32>) outs(%e : tensor<8x2xf32>) -> tensor<8x2xf32>
  return %y : tensor<8x2xf32>
}
