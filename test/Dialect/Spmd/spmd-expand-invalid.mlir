// RUN: spmd-opt %s --spmd-propagate --spmd-expand --split-input-file --verify-diagnostics

spmd.mesh @m(shape = 2x2)
// Uneven splits over several axes are not supported.
// expected-error @+1 {{dimension 0 of 'tensor<6x4xf32>' (6) does not divide evenly over the 4 ranks of several mesh axes; uneven sharding is supported on one axis only}}
func.func @uneven_two_axes(%x: tensor<6x4xf32> {spmd.spec = #spmd.spec<@m, [shard<0>, shard<0>]>}) -> tensor<6x4xf32> {
  return %x : tensor<6x4xf32>
}

// -----

spmd.mesh @dp(shape = 4)
// expected-error @+1 {{sharding dynamic dimension 0 of 'tensor<?xf32>' is not supported}}
func.func @dynamic(%x: tensor<?xf32> {spmd.spec = #spmd.spec<@dp, [shard<0>]>}) -> tensor<?xf32> {
  return %x : tensor<?xf32>
}

// -----

spmd.mesh @m(shape = 2)
// expand_shape rebuilt with local sizes (its localizeSizes hook) needs a
// static result shape when a dimension it splits is sharded.
func.func @expand_dynamic(%x: tensor<?x8xf32> {spmd.spec = #spmd.spec<@m, [shard<1>]>}, %n: index) -> tensor<?x2x4xf32> {
  // expected-error @+1 {{spmd-expand: expand_shape of a sharded dimension needs static sizes}}
  %e = tensor.expand_shape %x [[0], [1, 2]] output_shape [%n, 2, 4] : tensor<?x8xf32> into tensor<?x2x4xf32>
  return %e : tensor<?x2x4xf32>
}
