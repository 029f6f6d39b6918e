// A linear layer's backward (y = x w^T without bias): dx = dy w and
// dw = dy^T x, two GEMMs that read dy and nothing of each other's.
func.func @linear_backward(%dy: tensor<4x8xf32>, %w: tensor<8x6xf32>,
                           %x: tensor<4x6xf32>)
    -> (tensor<4x6xf32>, tensor<8x6xf32>) attributes {llvm.emit_c_interface} {
  %zero = arith.constant 0.0 : f32
  %ex = tensor.empty() : tensor<4x6xf32>
  %zx = linalg.fill ins(%zero : f32) outs(%ex : tensor<4x6xf32>) -> tensor<4x6xf32>
  %dx = linalg.matmul ins(%dy, %w : tensor<4x8xf32>, tensor<8x6xf32>) outs(%zx : tensor<4x6xf32>) -> tensor<4x6xf32>
  %ew = tensor.empty() : tensor<8x6xf32>
  %zw = linalg.fill ins(%zero : f32) outs(%ew : tensor<8x6xf32>) -> tensor<8x6xf32>
  %dw = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (k, m)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>] ins(%dy, %x : tensor<4x8xf32>, tensor<4x6xf32>) outs(%zw : tensor<8x6xf32>) -> tensor<8x6xf32>
  return %dx, %dw : tensor<4x6xf32>, tensor<8x6xf32>
}
