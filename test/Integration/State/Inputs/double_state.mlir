// A step that doubles a named parameter in place.
spmd.state @"fc.w" : tensor<4xf32> role = param

func.func @step() {
  %w = spmd.load @"fc.w" : tensor<4xf32>
  %two = arith.constant dense<2.0> : tensor<4xf32>
  %d = arith.mulf %w, %two : tensor<4xf32>
  spmd.store %d to @"fc.w" : tensor<4xf32>
  return
}
