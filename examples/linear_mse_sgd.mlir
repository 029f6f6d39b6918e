// A whole single-device training step, written as the global program the
// compiler starts from: one linear layer, mean-squared-error loss, its
// backward pass, and SGD with momentum as one first-class op.
//
// The batch (x, y) is sharded along the data-parallel mesh @dp (each rank
// holds 8 of the 16 rows); the weight and the optimizer state are named
// state symbols, replicated. Nothing here says where the collectives go:
// that is the distribution passes' job.

spmd.mesh @dp(shape = 2)

spmd.state @"fc.weight" : tensor<4x8xf32> role = param
spmd.state @"fc.weight.momentum_buffer" : tensor<4x8xf32> role = optimizer_state
spmd.state @"optimizer.step" : tensor<f32> role = optimizer_state

func.func @train_step(
    %x: tensor<16x8xf32> {spmd.spec = #spmd.spec<@dp, [shard<0>]>},
    %y: tensor<16x4xf32> {spmd.spec = #spmd.spec<@dp, [shard<0>]>})
    -> (tensor<f32> {spmd.spec = #spmd.spec<@dp, [replicate]>}) {
  %zero = arith.constant 0.0 : f32
  %w = spmd.load @"fc.weight" : tensor<4x8xf32>

  // Forward: pred = x @ w^T, loss = mean((pred - y)^2).
  %e16x4 = tensor.empty() : tensor<16x4xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e16x4 : tensor<16x4xf32>) -> tensor<16x4xf32>
  %pred = linalg.matmul
      indexing_maps = [affine_map<(m, n, k) -> (m, k)>,
                       affine_map<(m, n, k) -> (n, k)>,
                       affine_map<(m, n, k) -> (m, n)>]
      ins(%x, %w : tensor<16x8xf32>, tensor<4x8xf32>)
      outs(%acc : tensor<16x4xf32>) -> tensor<16x4xf32>
  %diff = linalg.sub ins(%pred, %y : tensor<16x4xf32>, tensor<16x4xf32>)
                     outs(%e16x4 : tensor<16x4xf32>) -> tensor<16x4xf32>
  %sq = linalg.mul ins(%diff, %diff : tensor<16x4xf32>, tensor<16x4xf32>)
                   outs(%e16x4 : tensor<16x4xf32>) -> tensor<16x4xf32>
  %e0 = tensor.empty() : tensor<f32>
  %sum0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %sum = linalg.reduce ins(%sq : tensor<16x4xf32>) outs(%sum0 : tensor<f32>)
      dimensions = [0, 1]
      (%in: f32, %init: f32) {
        %s = arith.addf %in, %init : f32
        linalg.yield %s : f32
      }
  %count = arith.constant dense<64.0> : tensor<f32>
  %loss = arith.divf %sum, %count : tensor<f32>

  // Backward: dpred = 2 (pred - y) / 64, dw = dpred^T @ x.
  %two_over_n = arith.constant dense<0.03125> : tensor<16x4xf32>
  %dpred = arith.mulf %diff, %two_over_n : tensor<16x4xf32>
  %e4x8 = tensor.empty() : tensor<4x8xf32>
  %acc_w = linalg.fill ins(%zero : f32) outs(%e4x8 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %dw = linalg.matmul
      indexing_maps = [affine_map<(m, n, k) -> (k, m)>,
                       affine_map<(m, n, k) -> (k, n)>,
                       affine_map<(m, n, k) -> (m, n)>]
      ins(%dpred, %x : tensor<16x4xf32>, tensor<16x8xf32>)
      outs(%acc_w : tensor<4x8xf32>) -> tensor<4x8xf32>

  // Optimizer: torch.optim.SGD(lr=0.1, momentum=0.9), recognized, not traced.
  %buf = spmd.load @"fc.weight.momentum_buffer" : tensor<4x8xf32>
  %step = spmd.load @"optimizer.step" : tensor<f32>
  %new_w, %new_buf, %new_step = spmd.sgd params [%w] grads [%dw]
      momentum_buffers [%buf] step %step {lr = 0.1 : f64, momentum = 0.9 : f64}
      : tensor<4x8xf32>
  spmd.store %new_w to @"fc.weight" : tensor<4x8xf32>
  spmd.store %new_buf to @"fc.weight.momentum_buffer" : tensor<4x8xf32>
  spmd.store %new_step to @"optimizer.step" : tensor<f32>
  return %loss : tensor<f32>
}
