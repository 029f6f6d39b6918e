// RUN: spmd-opt %s --spmd-propagate --spmd-expand --canonicalize --split-input-file | FileCheck %s

// Every redistribute pair on a 1-D mesh of 4 ranks (tensor<8x4xf32>), then
// uneven shapes (torch.chunk semantics), Partial kinds, and 2-D meshes. Each
// case checks the exact collective, its axes and dims, and the local types.

spmd.mesh @m(shape = 4)
// CHECK-LABEL: func.func @r_to_s0
// CHECK-SAME: (%[[X:.*]]: tensor<8x4xf32>
// CHECK-SAME: -> (tensor<2x4xf32> {spmd.spec = #spmd.spec<@m, [shard<0>]>})
// CHECK: spmd.local_slice %[[X]] on @m axes = [0] dim = 0 : tensor<8x4xf32> -> tensor<2x4xf32>
// CHECK-NOT: spmd.all_
// CHECK: return
func.func @r_to_s0(%x: tensor<8x4xf32> {spmd.spec = #spmd.spec<@m, [replicate]>}) -> tensor<8x4xf32> {
  %r = spmd.redistribute %x to <@m, [shard<0>]> : tensor<8x4xf32>
  return %r : tensor<8x4xf32>
}

// -----

spmd.mesh @m(shape = 4)
// CHECK-LABEL: func.func @r_to_s1
// CHECK-SAME: (%[[X:.*]]: tensor<8x4xf32>
// CHECK-SAME: -> (tensor<8x1xf32> {spmd.spec = #spmd.spec<@m, [shard<1>]>})
// CHECK: spmd.local_slice %[[X]] on @m axes = [0] dim = 1 : tensor<8x4xf32> -> tensor<8x1xf32>
// CHECK-NOT: spmd.all_
// CHECK: return
func.func @r_to_s1(%x: tensor<8x4xf32> {spmd.spec = #spmd.spec<@m, [replicate]>}) -> tensor<8x4xf32> {
  %r = spmd.redistribute %x to <@m, [shard<1>]> : tensor<8x4xf32>
  return %r : tensor<8x4xf32>
}

// -----

spmd.mesh @m(shape = 4)
// CHECK-LABEL: func.func @r_to_p
// CHECK-SAME: (%[[X:.*]]: tensor<8x4xf32>
// CHECK-SAME: -> (tensor<8x4xf32> {spmd.spec = #spmd.spec<@m, [partial<sum>]>})
// CHECK: %[[I:.*]] = spmd.axis_index @m axes = [0] : index
// CHECK: %[[Z:.*]] = linalg.fill
// CHECK: %[[F:.*]] = arith.cmpi eq, %[[I]]
// CHECK: arith.select %[[F]], %[[X]], %[[Z]] : tensor<8x4xf32>
// CHECK-NOT: spmd.all_
// CHECK: return
func.func @r_to_p(%x: tensor<8x4xf32> {spmd.spec = #spmd.spec<@m, [replicate]>}) -> tensor<8x4xf32> {
  %r = spmd.redistribute %x to <@m, [partial<sum>]> : tensor<8x4xf32>
  return %r : tensor<8x4xf32>
}

// -----

spmd.mesh @m(shape = 4)
// CHECK-LABEL: func.func @s0_to_r
// CHECK-SAME: (%[[X:.*]]: tensor<2x4xf32>
// CHECK-SAME: -> (tensor<8x4xf32> {spmd.spec = #spmd.spec<@m, [replicate]>})
// CHECK: spmd.all_gather %[[X]] on @m axes = [0] gather_dim = 0 : tensor<2x4xf32> -> tensor<8x4xf32>
// CHECK-NOT: spmd.all_
// CHECK: return
func.func @s0_to_r(%x: tensor<8x4xf32> {spmd.spec = #spmd.spec<@m, [shard<0>]>}) -> tensor<8x4xf32> {
  %r = spmd.redistribute %x to <@m, [replicate]> : tensor<8x4xf32>
  return %r : tensor<8x4xf32>
}

// -----

spmd.mesh @m(shape = 4)
// CHECK-LABEL: func.func @s0_to_s1
// CHECK-SAME: (%[[X:.*]]: tensor<2x4xf32>
// CHECK-SAME: -> (tensor<8x1xf32> {spmd.spec = #spmd.spec<@m, [shard<1>]>})
// CHECK: spmd.all_to_all %[[X]] on @m axes = [0] split_dim = 1 concat_dim = 0 : tensor<2x4xf32> -> tensor<8x1xf32>
// CHECK-NOT: spmd.all_
// CHECK: return
func.func @s0_to_s1(%x: tensor<8x4xf32> {spmd.spec = #spmd.spec<@m, [shard<0>]>}) -> tensor<8x4xf32> {
  %r = spmd.redistribute %x to <@m, [shard<1>]> : tensor<8x4xf32>
  return %r : tensor<8x4xf32>
}

// -----

spmd.mesh @m(shape = 4)
// CHECK-LABEL: func.func @s0_to_p
// CHECK-SAME: (%[[X:.*]]: tensor<2x4xf32>
// CHECK-SAME: -> (tensor<8x4xf32> {spmd.spec = #spmd.spec<@m, [partial<sum>]>})
// CHECK: %[[G:.*]] = spmd.all_gather %[[X]] on @m axes = [0] gather_dim = 0 : tensor<2x4xf32> -> tensor<8x4xf32>
// CHECK: arith.select %{{.*}}, %[[G]], %{{.*}} : tensor<8x4xf32>
// CHECK-NOT: spmd.all_
// CHECK: return
func.func @s0_to_p(%x: tensor<8x4xf32> {spmd.spec = #spmd.spec<@m, [shard<0>]>}) -> tensor<8x4xf32> {
  %r = spmd.redistribute %x to <@m, [partial<sum>]> : tensor<8x4xf32>
  return %r : tensor<8x4xf32>
}

// -----

spmd.mesh @m(shape = 4)
// CHECK-LABEL: func.func @s1_to_r
// CHECK-SAME: (%[[X:.*]]: tensor<8x1xf32>
// CHECK-SAME: -> (tensor<8x4xf32> {spmd.spec = #spmd.spec<@m, [replicate]>})
// CHECK: spmd.all_gather %[[X]] on @m axes = [0] gather_dim = 1 : tensor<8x1xf32> -> tensor<8x4xf32>
// CHECK-NOT: spmd.all_
// CHECK: return
func.func @s1_to_r(%x: tensor<8x4xf32> {spmd.spec = #spmd.spec<@m, [shard<1>]>}) -> tensor<8x4xf32> {
  %r = spmd.redistribute %x to <@m, [replicate]> : tensor<8x4xf32>
  return %r : tensor<8x4xf32>
}

// -----

spmd.mesh @m(shape = 4)
// CHECK-LABEL: func.func @s1_to_s0
// CHECK-SAME: (%[[X:.*]]: tensor<8x1xf32>
// CHECK-SAME: -> (tensor<2x4xf32> {spmd.spec = #spmd.spec<@m, [shard<0>]>})
// CHECK: spmd.all_to_all %[[X]] on @m axes = [0] split_dim = 0 concat_dim = 1 : tensor<8x1xf32> -> tensor<2x4xf32>
// CHECK-NOT: spmd.all_
// CHECK: return
func.func @s1_to_s0(%x: tensor<8x4xf32> {spmd.spec = #spmd.spec<@m, [shard<1>]>}) -> tensor<8x4xf32> {
  %r = spmd.redistribute %x to <@m, [shard<0>]> : tensor<8x4xf32>
  return %r : tensor<8x4xf32>
}

// -----

spmd.mesh @m(shape = 4)
// CHECK-LABEL: func.func @s1_to_p
// CHECK-SAME: (%[[X:.*]]: tensor<8x1xf32>
// CHECK-SAME: -> (tensor<8x4xf32> {spmd.spec = #spmd.spec<@m, [partial<sum>]>})
// CHECK: %[[G:.*]] = spmd.all_gather %[[X]] on @m axes = [0] gather_dim = 1 : tensor<8x1xf32> -> tensor<8x4xf32>
// CHECK: arith.select %{{.*}}, %[[G]], %{{.*}} : tensor<8x4xf32>
// CHECK-NOT: spmd.all_
// CHECK: return
func.func @s1_to_p(%x: tensor<8x4xf32> {spmd.spec = #spmd.spec<@m, [shard<1>]>}) -> tensor<8x4xf32> {
  %r = spmd.redistribute %x to <@m, [partial<sum>]> : tensor<8x4xf32>
  return %r : tensor<8x4xf32>
}

// -----

spmd.mesh @m(shape = 4)
// CHECK-LABEL: func.func @p_to_r
// CHECK-SAME: (%[[X:.*]]: tensor<8x4xf32>
// CHECK-SAME: -> (tensor<8x4xf32> {spmd.spec = #spmd.spec<@m, [replicate]>})
// CHECK: spmd.all_reduce %[[X]] on @m axes = [0] sum : tensor<8x4xf32> -> tensor<8x4xf32>
// CHECK-NOT: spmd.all_
// CHECK: return
func.func @p_to_r(%x: tensor<8x4xf32> {spmd.spec = #spmd.spec<@m, [partial<sum>]>}) -> tensor<8x4xf32> {
  %r = spmd.redistribute %x to <@m, [replicate]> : tensor<8x4xf32>
  return %r : tensor<8x4xf32>
}

// -----

spmd.mesh @m(shape = 4)
// CHECK-LABEL: func.func @p_to_s0
// CHECK-SAME: (%[[X:.*]]: tensor<8x4xf32>
// CHECK-SAME: -> (tensor<2x4xf32> {spmd.spec = #spmd.spec<@m, [shard<0>]>})
// CHECK: spmd.reduce_scatter %[[X]] on @m axes = [0] sum scatter_dim = 0 : tensor<8x4xf32> -> tensor<2x4xf32>
// CHECK-NOT: spmd.all_
// CHECK: return
func.func @p_to_s0(%x: tensor<8x4xf32> {spmd.spec = #spmd.spec<@m, [partial<sum>]>}) -> tensor<8x4xf32> {
  %r = spmd.redistribute %x to <@m, [shard<0>]> : tensor<8x4xf32>
  return %r : tensor<8x4xf32>
}

// -----

spmd.mesh @m(shape = 4)
// CHECK-LABEL: func.func @p_to_s1
// CHECK-SAME: (%[[X:.*]]: tensor<8x4xf32>
// CHECK-SAME: -> (tensor<8x1xf32> {spmd.spec = #spmd.spec<@m, [shard<1>]>})
// CHECK: spmd.reduce_scatter %[[X]] on @m axes = [0] sum scatter_dim = 1 : tensor<8x4xf32> -> tensor<8x1xf32>
// CHECK-NOT: spmd.all_
// CHECK: return
func.func @p_to_s1(%x: tensor<8x4xf32> {spmd.spec = #spmd.spec<@m, [partial<sum>]>}) -> tensor<8x4xf32> {
  %r = spmd.redistribute %x to <@m, [shard<1>]> : tensor<8x4xf32>
  return %r : tensor<8x4xf32>
}
// -----

// Same spec: nothing to do.
spmd.mesh @m(shape = 4)
// CHECK-LABEL: func.func @same
// CHECK-NEXT: return %arg0
func.func @same(%x: tensor<8x4xf32> {spmd.spec = #spmd.spec<@m, [shard<0>]>}) -> tensor<8x4xf32> {
  %r = spmd.redistribute %x to <@m, [shard<0>]> : tensor<8x4xf32>
  return %r : tensor<8x4xf32>
}

// -----

// Partial max: all_reduce max; Replicate -> partial<max> is free.
spmd.mesh @m(shape = 4)
// CHECK-LABEL: func.func @max_to_r
// CHECK: spmd.all_reduce %{{.*}} on @m axes = [0] max
func.func @max_to_r(%x: tensor<8x4xf32> {spmd.spec = #spmd.spec<@m, [partial<max>]>}) -> tensor<8x4xf32> {
  %r = spmd.redistribute %x to <@m, [replicate]> : tensor<8x4xf32>
  return %r : tensor<8x4xf32>
}
// CHECK-LABEL: func.func @r_to_max
// CHECK-NEXT: return %arg0
func.func @r_to_max(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %r = spmd.redistribute %x to <@m, [partial<max>]> : tensor<8x4xf32>
  return %r : tensor<8x4xf32>
}

// -----

// Uneven: 6 rows over 4 ranks are chunks of 2, 2, 2, 0 (torch.chunk). The
// local size is dynamic; gathers pad to 2 rows per rank and drop the padding.
spmd.mesh @m(shape = 4)
// CHECK-LABEL: func.func @uneven_s0_to_r
// CHECK-SAME: (%[[X:.*]]: tensor<?x4xf32>
// CHECK-SAME: -> (tensor<6x4xf32>
// CHECK: %[[D:.*]] = tensor.dim %[[X]], %{{.*}} : tensor<?x4xf32>
// CHECK: %[[H:.*]] = arith.subi %{{.*}}, %[[D]]
// CHECK: %[[P:.*]] = tensor.pad %[[X]] low[0, 0] high[%[[H]], 0]
// CHECK: } : tensor<?x4xf32> to tensor<2x4xf32>
// CHECK: %[[G:.*]] = spmd.all_gather %[[P]] on @m axes = [0] gather_dim = 0 : tensor<2x4xf32> -> tensor<8x4xf32>
// CHECK: tensor.extract_slice %[[G]][0, 0] [6, 4] [1, 1] : tensor<8x4xf32> to tensor<6x4xf32>
func.func @uneven_s0_to_r(%x: tensor<6x4xf32> {spmd.spec = #spmd.spec<@m, [shard<0>]>}) -> tensor<6x4xf32> {
  %r = spmd.redistribute %x to <@m, [replicate]> : tensor<6x4xf32>
  return %r : tensor<6x4xf32>
}
// CHECK-LABEL: func.func @uneven_r_to_s0
// CHECK: spmd.local_slice %{{.*}} on @m axes = [0] dim = 0 : tensor<6x4xf32> -> tensor<?x4xf32>
func.func @uneven_r_to_s0(%x: tensor<6x4xf32>) -> tensor<6x4xf32> {
  %r = spmd.redistribute %x to <@m, [shard<0>]> : tensor<6x4xf32>
  return %r : tensor<6x4xf32>
}
// Partial -> uneven shard: pad to 8 rows, reduce_scatter, keep
// clamp(6 - 2 * idx, 0, 2) rows.
// CHECK-LABEL: func.func @uneven_p_to_s0
// CHECK: %[[I:.*]] = spmd.axis_index @m axes = [0] : index
// CHECK: %[[P:.*]] = tensor.pad %{{.*}} low[0, 0] high[2, 0]
// CHECK: } : tensor<6x4xf32> to tensor<8x4xf32>
// CHECK: %[[S:.*]] = spmd.reduce_scatter %[[P]] on @m axes = [0] sum scatter_dim = 0 : tensor<8x4xf32> -> tensor<2x4xf32>
// CHECK: %[[O:.*]] = arith.muli %[[I]]
// CHECK: %[[L:.*]] = arith.subi %{{.*}}, %[[O]]
// CHECK: %[[M:.*]] = arith.maxsi %[[L]]
// CHECK: %[[N:.*]] = arith.minsi %[[M]]
// CHECK: tensor.extract_slice %[[S]][0, 0] [%[[N]], 4] [1, 1] : tensor<2x4xf32> to tensor<?x4xf32>
func.func @uneven_p_to_s0(%x: tensor<6x4xf32> {spmd.spec = #spmd.spec<@m, [partial<sum>]>}) -> tensor<6x4xf32> {
  %r = spmd.redistribute %x to <@m, [shard<0>]> : tensor<6x4xf32>
  return %r : tensor<6x4xf32>
}
// Uneven shard -> shard of another dimension goes through replicate.
// CHECK-LABEL: func.func @uneven_s0_to_s1
// CHECK: spmd.all_gather
// CHECK: spmd.local_slice %{{.*}} on @m axes = [0] dim = 1 : tensor<6x4xf32> -> tensor<6x1xf32>
// CHECK-NOT: spmd.all_to_all
func.func @uneven_s0_to_s1(%x: tensor<6x4xf32> {spmd.spec = #spmd.spec<@m, [shard<0>]>}) -> tensor<6x4xf32> {
  %r = spmd.redistribute %x to <@m, [shard<1>]> : tensor<6x4xf32>
  return %r : tensor<6x4xf32>
}

// -----

// 2-D mesh 2x2: axes change inner to outer (undo), then outer to inner
// (apply); one collective per axis.
spmd.mesh @g(shape = 2x2)
// CHECK-LABEL: func.func @two_d_gather_both
// CHECK-SAME: (%[[X:.*]]: tensor<4x2xf32>
// CHECK: %[[A:.*]] = spmd.all_gather %[[X]] on @g axes = [1] gather_dim = 1 : tensor<4x2xf32> -> tensor<4x4xf32>
// CHECK: spmd.all_gather %[[A]] on @g axes = [0] gather_dim = 0 : tensor<4x4xf32> -> tensor<8x4xf32>
func.func @two_d_gather_both(%x: tensor<8x4xf32> {spmd.spec = #spmd.spec<@g, [shard<0>, shard<1>]>}) -> tensor<8x4xf32> {
  %r = spmd.redistribute %x to <@g, [replicate, replicate]> : tensor<8x4xf32>
  return %r : tensor<8x4xf32>
}
// Two axes on one dimension: the inner axis is gathered first.
// CHECK-LABEL: func.func @two_d_nested
// CHECK-SAME: (%[[X:.*]]: tensor<2x4xf32>
// CHECK: %[[A:.*]] = spmd.all_gather %[[X]] on @g axes = [1] gather_dim = 0 : tensor<2x4xf32> -> tensor<4x4xf32>
// CHECK: spmd.all_to_all %[[A]] on @g axes = [0] split_dim = 1 concat_dim = 0 : tensor<4x4xf32> -> tensor<8x2xf32>
func.func @two_d_nested(%x: tensor<8x4xf32> {spmd.spec = #spmd.spec<@g, [shard<0>, shard<0>]>}) -> tensor<8x4xf32> {
  %r = spmd.redistribute %x to <@g, [shard<1>, replicate]> : tensor<8x4xf32>
  return %r : tensor<8x4xf32>
}
// Partial on one axis, shard on the other.
// CHECK-LABEL: func.func @two_d_partial
// CHECK-SAME: (%[[X:.*]]: tensor<8x2xf32>
// CHECK: %[[A:.*]] = spmd.reduce_scatter %[[X]] on @g axes = [0] sum scatter_dim = 0 : tensor<8x2xf32> -> tensor<4x2xf32>
// CHECK-NOT: spmd.all
// CHECK: return %[[A]]
func.func @two_d_partial(%x: tensor<8x4xf32> {spmd.spec = #spmd.spec<@g, [partial<sum>, shard<1>]>}) -> tensor<8x4xf32> {
  %r = spmd.redistribute %x to <@g, [shard<0>, shard<1>]> : tensor<8x4xf32>
  return %r : tensor<8x4xf32>
}
// Replicate to a dimension split over both axes: axis 0 outer.
// CHECK-LABEL: func.func @two_d_split_both
// CHECK: %[[A:.*]] = spmd.local_slice %{{.*}} on @g axes = [0] dim = 0 : tensor<8x4xf32> -> tensor<4x4xf32>
// CHECK: spmd.local_slice %[[A]] on @g axes = [1] dim = 0 : tensor<4x4xf32> -> tensor<2x4xf32>
func.func @two_d_split_both(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %r = spmd.redistribute %x to <@g, [shard<0>, shard<0>]> : tensor<8x4xf32>
  return %r : tensor<8x4xf32>
}

// -----

// Sharded state gets local storage; loads and stores follow.
spmd.mesh @dp(shape = 4)
// CHECK: spmd.state @w : tensor<2x3xf32> role = optimizer_state spec = <@dp, [shard<0>]>
spmd.state @w : tensor<8x3xf32> role = optimizer_state spec = <@dp, [shard<0>]>
// CHECK-LABEL: func.func @state
// CHECK: %[[W:.*]] = spmd.load @w : tensor<2x3xf32>
// CHECK: spmd.store %[[W]] to @w : tensor<2x3xf32>
func.func @state() {
  %w = spmd.load @w : tensor<8x3xf32>
  spmd.store %w to @w : tensor<8x3xf32>
  return
}

// -----

// Uneven sharded state (torch.chunk: 3 + 3 + 3 + 1 rows of 10) is stored at
// the largest chunk on every rank; a load cuts this rank's rows out, a store
// pads them back.
spmd.mesh @dp(shape = 4)
// CHECK: spmd.state @u : tensor<3x2xf32> role = param spec = <@dp, [shard<0>]>
spmd.state @u : tensor<10x2xf32> role = param spec = <@dp, [shard<0>]>
// CHECK-LABEL: func.func @uneven_state
// CHECK: %[[I:.*]] = spmd.axis_index @dp axes = [0]
// CHECK: %[[U:.*]] = spmd.load @u : tensor<3x2xf32>
// CHECK: %[[N:.*]] = arith.minsi
// CHECK: %[[P:.*]] = tensor.extract_slice %[[U]][0, 0] [%[[N]], 2] [1, 1] : tensor<3x2xf32> to tensor<?x2xf32>
// CHECK: %[[D:.*]] = linalg.generic {{.*}} ins(%[[P]] : tensor<?x2xf32>)
// CHECK: %[[Q:.*]] = tensor.pad %[[D]] low[0, 0] high[{{.*}}, 0]
// CHECK: spmd.store %[[Q]] to @u : tensor<3x2xf32>
func.func @uneven_state() {
  %u = spmd.load @u : tensor<10x2xf32>
  %e = tensor.empty() : tensor<10x2xf32>
  %d = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%u : tensor<10x2xf32>) outs(%e : tensor<10x2xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %a, %a : f32
    linalg.yield %s : f32
  } -> tensor<10x2xf32>
  spmd.store %d to @u : tensor<10x2xf32>
  return
}

// -----

// Slices, pads and concatenations on sharded rows get local sizes.
spmd.mesh @dp(shape = 2)
// CHECK-LABEL: func.func @data_movement
// CHECK-SAME: (%[[X:.*]]: tensor<4x4xf32>
// CHECK: %[[S:.*]] = tensor.extract_slice %[[X]][0, 1] [4, 2] [1, 1] : tensor<4x4xf32> to tensor<4x2xf32>
// CHECK: %[[P:.*]] = tensor.pad %[[S]] low[0, 1] high[0, 1]
// CHECK: tensor.concat dim(1) %[[P]], %[[X]], %[[S]] : (tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x2xf32>) -> tensor<4x10xf32>
// CHECK-NOT: spmd.all
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

// A gather (torch-mlir's embedding): the payload reads the embedding column
// through `linalg.index 2` and the table captured from above. The batch
// dimension stays sharded (no gather of the token ids); the indexed dimension
// is never sharded, and the captured table is read whole (replicated here).
spmd.mesh @dp(shape = 2)
// CHECK-LABEL: func.func @embedding
// CHECK-SAME: (%[[IDS:.*]]: tensor<2x3xi64> {{.*}}, %[[TABLE:.*]]: tensor<10x4xf32> {{.*}}) -> (tensor<2x3x4xf32>
// CHECK-NOT: spmd.all_gather
// CHECK: linalg.generic {{.*}} ins(%[[IDS]] : tensor<2x3xi64>) outs(%{{.*}} : tensor<2x3x4xf32>)
// CHECK: linalg.index 2
// CHECK: tensor.extract %[[TABLE]]
func.func @embedding(%ids: tensor<4x3xi64> {spmd.spec = #spmd.spec<@dp, [shard<0>]>},
                     %table: tensor<10x4xf32> {spmd.spec = #spmd.spec<@dp, [replicate]>})
    -> (tensor<4x3x4xf32> {spmd.spec = #spmd.spec<@dp, [shard<0>]>}) {
  %e = tensor.empty() : tensor<4x3x4xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%ids : tensor<4x3xi64>) outs(%e : tensor<4x3x4xf32>) {
  ^bb0(%id: i64, %out: f32):
    %row = arith.index_cast %id : i64 to index
    %col = linalg.index 2 : index
    %v = tensor.extract %table[%row, %col] : tensor<10x4xf32>
    linalg.yield %v : f32
  } -> tensor<4x3x4xf32>
  return %r : tensor<4x3x4xf32>
}

// -----

// The payload reads the position along the sharded dimension (an arange over
// the batch): that dimension is computed whole, from the gathered input.
spmd.mesh @dp(shape = 2)
// CHECK-LABEL: func.func @positions
// CHECK: %[[ALL:.*]] = spmd.all_gather %{{.*}} on @dp axes = [0] gather_dim = 0 : tensor<2xf32> -> tensor<4xf32>
// CHECK: linalg.generic {{.*}} ins(%[[ALL]] : tensor<4xf32>)
// CHECK: linalg.index 0
func.func @positions(%x: tensor<4xf32> {spmd.spec = #spmd.spec<@dp, [shard<0>]>})
    -> (tensor<4xf32> {spmd.spec = #spmd.spec<@dp, [replicate]>}) {
  %e = tensor.empty() : tensor<4xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%x : tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%v: f32, %out: f32):
    %i = linalg.index 0 : index
    %c = arith.index_cast %i : index to i64
    %f = arith.sitofp %c : i64 to f32
    %s = arith.addf %v, %f : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// A table captured by the payload is made whole before the op even when it
// is sharded (here the table arrives sharded by rows).
spmd.mesh @dp(shape = 2)
// CHECK-LABEL: func.func @captured_sharded
// CHECK: %[[WHOLE:.*]] = spmd.all_gather %{{.*}} on @dp axes = [0] gather_dim = 0 : tensor<5x4xf32> -> tensor<10x4xf32>
// CHECK: linalg.generic
// CHECK: tensor.extract %[[WHOLE]]
func.func @captured_sharded(%ids: tensor<4xi64> {spmd.spec = #spmd.spec<@dp, [shard<0>]>},
                            %table: tensor<10x4xf32> {spmd.spec = #spmd.spec<@dp, [shard<0>]>})
    -> (tensor<4x4xf32> {spmd.spec = #spmd.spec<@dp, [shard<0>]>}) {
  %e = tensor.empty() : tensor<4x4xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%ids : tensor<4xi64>) outs(%e : tensor<4x4xf32>) {
  ^bb0(%id: i64, %out: f32):
    %row = arith.index_cast %id : i64 to index
    %col = linalg.index 1 : index
    %v = tensor.extract %table[%row, %col] : tensor<10x4xf32>
    linalg.yield %v : f32
  } -> tensor<4x4xf32>
  return %r : tensor<4x4xf32>
}

// -----

// On a mesh axis of one rank every placement is the whole value: changing
// it moves nothing (no gather along the other axis and re-slice).
spmd.mesh @m(shape = 1x2)
// CHECK-LABEL: func.func @unit_axis
// CHECK-SAME: (%[[X:.*]]: tensor<4x4xf32>
// CHECK-NOT: spmd.all_gather
// CHECK-NOT: spmd.local_slice
// CHECK: return %[[X]] : tensor<4x4xf32>
func.func @unit_axis(%x: tensor<8x4xf32> {spmd.spec = #spmd.spec<@m, [shard<0>, shard<0>]>}) -> (tensor<8x4xf32> {spmd.spec = #spmd.spec<@m, [replicate, shard<0>]>}) {
  %y = spmd.redistribute %x to <@m, [replicate, shard<0>]> : tensor<8x4xf32>
  return %y : tensor<8x4xf32>
}
