// RUN: spmd-opt %s --spmd-propagate --split-input-file | FileCheck %s

// Sharding follows the batch dimension through a matmul; the contraction over
// the sharded batch (the weight gradient) is partial<sum>. Each placed op
// records its choice; unannotated arguments and results get their spec.
spmd.mesh @dp(shape = 4)
// CHECK-LABEL: func.func @dp_matmul
// CHECK-SAME: %{{.*}}: tensor<4x3xf32> {spmd.spec = #spmd.spec<@dp, [replicate]>}
// CHECK-SAME: -> (tensor<8x3xf32> {spmd.spec = #spmd.spec<@dp, [shard<0>]>}, tensor<4x3xf32> {spmd.spec = #spmd.spec<@dp, [partial<sum>]>})
// CHECK: tensor.empty() {spmd.result_specs = [#spmd.spec<@dp, [replicate]>], spmd.strategy = #spmd.strategy<[replicate]>}
// CHECK: linalg.matmul {spmd.result_specs = [#spmd.spec<@dp, [shard<0>]>], spmd.strategy = #spmd.strategy<[factor<0>]>}
// CHECK: linalg.matmul indexing_maps = {{.*}} {spmd.result_specs = [#spmd.spec<@dp, [partial<sum>]>], spmd.strategy = #spmd.strategy<[factor<2>]>}
func.func @dp_matmul(%x: tensor<8x4xf32> {spmd.spec = #spmd.spec<@dp, [shard<0>]>}, %w: tensor<4x3xf32>, %dy: tensor<8x3xf32> {spmd.spec = #spmd.spec<@dp, [shard<0>]>}) -> (tensor<8x3xf32>, tensor<4x3xf32>) {
  %e = tensor.empty() : tensor<8x3xf32>
  %y = linalg.matmul ins(%x, %w : tensor<8x4xf32>, tensor<4x3xf32>) outs(%e : tensor<8x3xf32>) -> tensor<8x3xf32>
  %ew = tensor.empty() : tensor<4x3xf32>
  %dw = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (k, m)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%x, %dy : tensor<8x4xf32>, tensor<8x3xf32>) outs(%ew : tensor<4x3xf32>) -> tensor<4x3xf32>
  return %y, %dw : tensor<8x3xf32>, tensor<4x3xf32>
}

// -----

// Partial is first-class: linear ops keep it (sum of partials, scaling by a
// replicated value, sums, transposes), non-linear ones resolve it (here by
// the cheapest route, a reduce_scatter into a shard).
spmd.mesh @dp(shape = 4)
// CHECK-LABEL: func.func @partial_linear
// CHECK: arith.addf {{.*}}spmd.result_specs = [#spmd.spec<@dp, [partial<sum>]>]
// CHECK: arith.mulf {{.*}}spmd.result_specs = [#spmd.spec<@dp, [partial<sum>]>]
// CHECK: linalg.transpose {{.*}}spmd.result_specs = [#spmd.spec<@dp, [partial<sum>]>]
// CHECK: linalg.reduce {{.*}}spmd.result_specs = [#spmd.spec<@dp, [partial<sum>]>]
// CHECK: math.exp {{.*}}spmd.result_specs = [#spmd.spec<@dp, [shard<0>]>]
func.func @partial_linear(%a: tensor<4x2xf32> {spmd.spec = #spmd.spec<@dp, [partial<sum>]>}, %b: tensor<4x2xf32> {spmd.spec = #spmd.spec<@dp, [partial<sum>]>}, %s: tensor<4x2xf32>) -> (tensor<2xf32>, tensor<4x2xf32>) {
  %0 = arith.addf %a, %b : tensor<4x2xf32>
  %1 = arith.mulf %0, %s : tensor<4x2xf32>
  %e = tensor.empty() : tensor<2x4xf32>
  %2 = linalg.transpose ins(%1 : tensor<4x2xf32>) outs(%e : tensor<2x4xf32>) permutation = [1, 0]
  %zero = arith.constant 0.0 : f32
  %e2 = tensor.empty() : tensor<2xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e2 : tensor<2xf32>) -> tensor<2xf32>
  %3 = linalg.reduce ins(%2 : tensor<2x4xf32>) outs(%z : tensor<2xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %x = arith.addf %in, %acc : f32
      linalg.yield %x : f32
    }
  %4 = math.exp %1 : tensor<4x2xf32>
  return %3, %4 : tensor<2xf32>, tensor<4x2xf32>
}

// -----

// A sum over a sharded dimension is partial<sum>; a max is partial<max>.
spmd.mesh @dp(shape = 2)
// CHECK-LABEL: func.func @reductions
// CHECK: linalg.reduce {{.*}}spmd.result_specs = [#spmd.spec<@dp, [partial<sum>]>]
// CHECK: linalg.reduce {{.*}}spmd.result_specs = [#spmd.spec<@dp, [partial<max>]>]
func.func @reductions(%x: tensor<8x4xf32> {spmd.spec = #spmd.spec<@dp, [shard<0>]>}) -> (tensor<4xf32>, tensor<4xf32>) {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %e = tensor.empty() : tensor<4xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %m = linalg.fill ins(%ninf : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %s = linalg.reduce ins(%x : tensor<8x4xf32>) outs(%z : tensor<4xf32>) dimensions = [0]
    (%in: f32, %acc: f32) {
      %r = arith.addf %in, %acc : f32
      linalg.yield %r : f32
    }
  %x2 = linalg.reduce ins(%x : tensor<8x4xf32>) outs(%m : tensor<4xf32>) dimensions = [0]
    (%in: f32, %acc: f32) {
      %r = arith.maximumf %in, %acc : f32
      linalg.yield %r : f32
    }
  return %s, %x2 : tensor<4xf32>, tensor<4xf32>
}

// -----

// Where choices conflict the cheaper wins: x is sharded on rows and w on
// columns; sharding the matmul's rows (all_gather w: 4x2 floats) is cheaper
// than its columns (all_gather x: 64x4 floats).
spmd.mesh @m(shape = 2)
// CHECK-LABEL: func.func @cost
// CHECK: linalg.matmul {spmd.result_specs = [#spmd.spec<@m, [shard<0>]>], spmd.strategy = #spmd.strategy<[factor<0>]>}
func.func @cost(%x: tensor<64x4xf32> {spmd.spec = #spmd.spec<@m, [shard<0>]>}, %w: tensor<4x2xf32> {spmd.spec = #spmd.spec<@m, [shard<1>]>}) -> tensor<64x2xf32> {
  %e = tensor.empty() : tensor<64x2xf32>
  %y = linalg.matmul ins(%x, %w : tensor<64x4xf32>, tensor<4x2xf32>) outs(%e : tensor<64x2xf32>) -> tensor<64x2xf32>
  return %y : tensor<64x2xf32>
}

// -----

// What later users ask for counts: the result is stored to replicated state,
// so the update resolves its partial gradient with one all_reduce instead of
// sharding the update (reduce_scatter plus two gathers).
spmd.mesh @dp(shape = 4)
spmd.state @w : tensor<16xf32> role = param
spmd.state @b : tensor<16xf32> role = optimizer_state
spmd.state @s : tensor<f32> role = optimizer_state
// CHECK-LABEL: func.func @optimizer
// CHECK: spmd.sgd {{.*}}spmd.result_specs = [#spmd.spec<@dp, [replicate]>, #spmd.spec<@dp, [replicate]>, #spmd.spec<@dp, [replicate]>], spmd.strategy = #spmd.strategy<[replicate], [replicate]>
func.func @optimizer(%g: tensor<16xf32> {spmd.spec = #spmd.spec<@dp, [partial<sum>]>}) {
  %w = spmd.load @w : tensor<16xf32>
  %b = spmd.load @b : tensor<16xf32>
  %s = spmd.load @s : tensor<f32>
  %r:3 = spmd.sgd params [%w] grads [%g] momentum_buffers [%b] step %s {lr = 0.1 : f64, momentum = 0.9 : f64} : tensor<16xf32>
  spmd.store %r#0 to @w : tensor<16xf32>
  spmd.store %r#1 to @b : tensor<16xf32>
  spmd.store %r#2 to @s : tensor<f32>
  return
}

// -----

// ZeRO: with sharded optimizer state and parameters, the update is sharded.
spmd.mesh @dp(shape = 4)
spmd.state @w : tensor<16xf32> role = param spec = <@dp, [shard<0>]>
// CHECK-LABEL: func.func @zero
// CHECK: spmd.sgd {{.*}}spmd.result_specs = [#spmd.spec<@dp, [shard<0>]>]
func.func @zero(%g: tensor<16xf32> {spmd.spec = #spmd.spec<@dp, [partial<sum>]>}) {
  %w = spmd.load @w : tensor<16xf32>
  %r = spmd.sgd params [%w] grads [%g] {lr = 0.1 : f64} : tensor<16xf32>
  spmd.store %r to @w : tensor<16xf32>
  return
}

// -----

// 2-D mesh: data parallel on axis 0, tensor parallel on axis 1.
spmd.mesh @m(shape = 2x2)
// CHECK-LABEL: func.func @two_d
// CHECK: linalg.matmul {spmd.result_specs = [#spmd.spec<@m, [shard<0>, shard<1>]>], spmd.strategy = #spmd.strategy<[factor<0>, factor<1>]>}
func.func @two_d(%x: tensor<8x4xf32> {spmd.spec = #spmd.spec<@m, [shard<0>, replicate]>}, %w: tensor<4x6xf32> {spmd.spec = #spmd.spec<@m, [replicate, shard<1>]>}) -> tensor<8x6xf32> {
  %e = tensor.empty() : tensor<8x6xf32>
  %y = linalg.matmul ins(%x, %w : tensor<8x4xf32>, tensor<4x6xf32>) outs(%e : tensor<8x6xf32>) -> tensor<8x6xf32>
  return %y : tensor<8x6xf32>
}

// -----

// Ops without a rule (here a rank-reducing slice) are computed replicated.
spmd.mesh @dp(shape = 2)
// CHECK-LABEL: func.func @fallback
// CHECK: tensor.extract_slice {{.*}}spmd.result_specs = [#spmd.spec<@dp, [replicate]>], spmd.strategy = #spmd.strategy<[replicate]>
func.func @fallback(%x: tensor<8x4xf32> {spmd.spec = #spmd.spec<@dp, [shard<0>]>}) -> tensor<4xf32> {
  %s = tensor.extract_slice %x[0, 0] [1, 4] [1, 1] : tensor<8x4xf32> to tensor<4xf32>
  return %s : tensor<4xf32>
}

// -----

// Slices, pads and concatenations keep the sharding of the dimensions they
// take whole.
spmd.mesh @dp(shape = 2)
// CHECK-LABEL: func.func @data_movement
// CHECK: tensor.extract_slice {{.*}}spmd.result_specs = [#spmd.spec<@dp, [shard<0>]>]
// CHECK: tensor.pad
// CHECK: spmd.result_specs = [#spmd.spec<@dp, [shard<0>]>]
// CHECK: tensor.concat {{.*}}spmd.result_specs = [#spmd.spec<@dp, [shard<0>]>]
func.func @data_movement(%x: tensor<8x4xf32> {spmd.spec = #spmd.spec<@dp, [shard<0>]>}) -> tensor<8x10xf32> {
  %s = tensor.extract_slice %x[0, 1] [8, 2] [1, 1] : tensor<8x4xf32> to tensor<8x2xf32>
  %zero = arith.constant 0.0 : f32
  %p = tensor.pad %s low[0, 1] high[0, 1] {
  ^bb0(%i: index, %j: index):
    tensor.yield %zero : f32
  } : tensor<8x2xf32> to tensor<8x4xf32>
  %c = tensor.concat dim(1) %p, %x, %s : (tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x2xf32>) -> tensor<8x10xf32>
  return %c : tensor<8x10xf32>
}

// -----

// A batch operand may be gathered by a candidate that still shards the op
// along the axis, when that moves at least 16 times fewer bytes than
// keeping the batch split: a vocabulary-parallel loss masks its [tokens,
// classes] values sharded along the classes with a column of one flag per
// token, gathered (32 bytes), instead of moving the values (8 KiB).
spmd.mesh @dp(shape = 2)
// CHECK-LABEL: func.func @small_batch_gather
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<8x1xi1>, tensor<8x256xf32>) {{.*}}spmd.result_specs = [#spmd.spec<@dp, [shard<1>]>], spmd.strategy = #spmd.strategy<[factor<1>]>
func.func @small_batch_gather(%valid: tensor<8x1xi1> {spmd.spec = #spmd.spec<@dp, [shard<0>]>}, %x: tensor<8x256xf32>) -> tensor<8x256xf32> {
  %xs = spmd.redistribute %x to <@dp, [shard<1>]> : tensor<8x256xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x256xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, 0)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%valid, %xs : tensor<8x1xi1>, tensor<8x256xf32>) outs(%e : tensor<8x256xf32>) {
  ^bb0(%v: i1, %a: f32, %out: f32):
    %s = arith.select %v, %a, %zero : f32
    linalg.yield %s : f32
  } -> tensor<8x256xf32>
  return %r : tensor<8x256xf32>
}

// -----

// With two values per token against rows of eight, gathering the batch
// (32 bytes) saves too little against moving the rows (128 bytes): the op
// keeps the batch split.
spmd.mesh @dp(shape = 2)
// CHECK-LABEL: func.func @batch_kept
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<8x2xf32>, tensor<8x8xf32>) {{.*}}spmd.result_specs = [#spmd.spec<@dp, [shard<0>]>], spmd.strategy = #spmd.strategy<[factor<0>]>
func.func @batch_kept(%b: tensor<8x2xf32> {spmd.spec = #spmd.spec<@dp, [shard<0>]>}, %x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %xs = spmd.redistribute %x to <@dp, [shard<1>]> : tensor<8x8xf32>
  %e = tensor.empty() : tensor<8x8xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, 0)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%b, %xs : tensor<8x2xf32>, tensor<8x8xf32>) outs(%e : tensor<8x8xf32>) {
  ^bb0(%v: f32, %a: f32, %out: f32):
    %s = arith.addf %v, %a : f32
    linalg.yield %s : f32
  } -> tensor<8x8xf32>
  return %r : tensor<8x8xf32>
}
