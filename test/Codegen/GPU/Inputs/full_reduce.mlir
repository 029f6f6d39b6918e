// Full reductions large enough to run as parallel stages on the GPU
// (spmd-gpu-serial-kernels): the sum and the max of a 300x70 tensor, and the
// sum of a 1-d tensor of 5000 elements.
func.func @full_reduce(%x: tensor<300x70xf32>, %v: tensor<5000xf32>)
    -> (tensor<f32>, tensor<f32>, tensor<f32>) attributes {llvm.emit_c_interface} {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %e = tensor.empty() : tensor<f32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %m = linalg.fill ins(%ninf : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %sum = linalg.reduce ins(%x : tensor<300x70xf32>) outs(%z : tensor<f32>) dimensions = [0, 1]
    (%in: f32, %a: f32) {
      %s = arith.addf %in, %a : f32
      linalg.yield %s : f32
    }
  %max = linalg.reduce ins(%x : tensor<300x70xf32>) outs(%m : tensor<f32>) dimensions = [0, 1]
    (%in: f32, %a: f32) {
      %s = arith.maximumf %in, %a : f32
      linalg.yield %s : f32
    }
  %sum1 = linalg.reduce ins(%v : tensor<5000xf32>) outs(%z : tensor<f32>) dimensions = [0]
    (%in: f32, %a: f32) {
      %s = arith.addf %in, %a : f32
      linalg.yield %s : f32
    }
  return %sum, %max, %sum1 : tensor<f32>, tensor<f32>, tensor<f32>
}
