// A data-parallel gradient step (global program): squared-error loss of a
// linear model and the weight gradient, batch sharded over @dp.
spmd.mesh @dp(shape = 2)
func.func @grad_step(%x: tensor<16x8xf32> {spmd.spec = #spmd.spec<@dp, [shard<0>]>},
                     %w: tensor<8x4xf32>,
                     %y: tensor<16x4xf32> {spmd.spec = #spmd.spec<@dp, [shard<0>]>})
    -> (tensor<f32> {spmd.spec = #spmd.spec<@dp, [replicate]>},
        tensor<8x4xf32> {spmd.spec = #spmd.spec<@dp, [replicate]>})
    attributes {llvm.emit_c_interface} {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x4xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<16x4xf32>) -> tensor<16x4xf32>
  %p = linalg.matmul ins(%x, %w : tensor<16x8xf32>, tensor<8x4xf32>) outs(%z : tensor<16x4xf32>) -> tensor<16x4xf32>
  %d = linalg.sub ins(%p, %y : tensor<16x4xf32>, tensor<16x4xf32>) outs(%e : tensor<16x4xf32>) -> tensor<16x4xf32>
  %sq = linalg.mul ins(%d, %d : tensor<16x4xf32>, tensor<16x4xf32>) outs(%e : tensor<16x4xf32>) -> tensor<16x4xf32>
  %e0 = tensor.empty() : tensor<f32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %sum = linalg.reduce ins(%sq : tensor<16x4xf32>) outs(%z0 : tensor<f32>) dimensions = [0, 1]
    (%in: f32, %acc: f32) {
      %s = arith.addf %in, %acc : f32
      linalg.yield %s : f32
    }
  %ew = tensor.empty() : tensor<8x4xf32>
  %zw = linalg.fill ins(%zero : f32) outs(%ew : tensor<8x4xf32>) -> tensor<8x4xf32>
  %gw = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (k, m)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>] ins(%x, %d : tensor<16x8xf32>, tensor<16x4xf32>) outs(%zw : tensor<8x4xf32>) -> tensor<8x4xf32>
  return %sum, %gw : tensor<f32>, tensor<8x4xf32>
}
