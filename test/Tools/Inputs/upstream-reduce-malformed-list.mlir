func.func @f(%x: tensor<4x4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  %r = linalg.reduce ins(%x : tensor<4x4xf32>) outs(%y : tensor<4xf32>) dimensions = \0]
    (%in: f32, %init: f32) {
      %s = arith.addf %in, %init : f32
      linalg.yield %s : f32
    }
  return %r : tensor<4xf32>
}
