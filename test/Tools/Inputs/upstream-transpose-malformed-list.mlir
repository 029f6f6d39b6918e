func.func @f(%x: tensor<4x4xf32>, %y: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %r = linalg.transpose ins(%x : tensor<4x4xf32>) outs(%y : tensor<4x4xf32>) permutation = [1, x]
  return %r : tensor<4x4xf32>
}
