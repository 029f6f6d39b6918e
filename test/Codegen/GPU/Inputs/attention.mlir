// Attention forward and backward, with a padding mask (one row of the mask
// per batch element, -inf past each element's length) and causal, for
// attention_main.cpp: B = 2, H = 3, L = 70, S = 90 (causal: 70), E = 16,
// Ev = 8.
func.func @masked(%q: tensor<2x3x70x16xf32>, %k: tensor<2x3x90x16xf32>,
                  %v: tensor<2x3x90x8xf32>, %m: tensor<2x1x1x90xf32>,
                  %g: tensor<2x3x70x8xf32>)
    -> (tensor<2x3x70x8xf32>, tensor<2x3x70x16xf32>, tensor<2x3x90x16xf32>,
        tensor<2x3x90x8xf32>) attributes {llvm.emit_c_interface} {
  %o, %l = spmd.attention %q, %k, %v mask %m {scale = 0.25 : f64}
      : tensor<2x3x70x16xf32>, tensor<2x3x90x16xf32>, tensor<2x3x90x8xf32>,
        tensor<2x1x1x90xf32> -> tensor<2x3x70x8xf32>, tensor<2x3x70xf32>
  %dq, %dk, %dv = spmd.attention_grad %g, %q, %k, %v, %o, %l mask %m
      {scale = 0.25 : f64}
      : tensor<2x3x70x8xf32>, tensor<2x3x70x16xf32>, tensor<2x3x90x16xf32>,
        tensor<2x3x90x8xf32>, tensor<2x3x70x8xf32>, tensor<2x3x70xf32>,
        tensor<2x1x1x90xf32>
  return %o, %dq, %dk, %dv : tensor<2x3x70x8xf32>, tensor<2x3x70x16xf32>,
      tensor<2x3x90x16xf32>, tensor<2x3x90x8xf32>
}

func.func @causal(%q: tensor<2x3x70x16xf32>, %k: tensor<2x3x70x16xf32>,
                  %v: tensor<2x3x70x8xf32>, %g: tensor<2x3x70x8xf32>)
    -> (tensor<2x3x70x8xf32>, tensor<2x3x70x16xf32>, tensor<2x3x70x16xf32>,
        tensor<2x3x70x8xf32>) attributes {llvm.emit_c_interface} {
  %o, %l = spmd.attention %q, %k, %v {causal, scale = 0.25 : f64}
      : tensor<2x3x70x16xf32>, tensor<2x3x70x16xf32>, tensor<2x3x70x8xf32>
        -> tensor<2x3x70x8xf32>, tensor<2x3x70xf32>
  %dq, %dk, %dv = spmd.attention_grad %g, %q, %k, %v, %o, %l
      {causal, scale = 0.25 : f64}
      : tensor<2x3x70x8xf32>, tensor<2x3x70x16xf32>, tensor<2x3x70x16xf32>,
        tensor<2x3x70x8xf32>, tensor<2x3x70x8xf32>, tensor<2x3x70xf32>
  return %o, %dq, %dk, %dv : tensor<2x3x70x8xf32>, tensor<2x3x70x16xf32>,
      tensor<2x3x70x16xf32>, tensor<2x3x70x8xf32>
}
