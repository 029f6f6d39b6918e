// RUN: spmd-opt %s --spmd-lower-attention=gpu=1 --split-input-file | FileCheck %s

// On the GPU path (spmd-lower-to-nvvm): the fused kernels of
// libSpmdGpuRuntime, the CPU path's arguments on device buffers.
// CHECK-LABEL: func.func @fits
// CHECK: call @spmdGpuAttentionForward(
// CHECK: call @spmdGpuAttentionBackward(
// CHECK-NOT: spmd.attention
// CHECK: func.func private @spmdGpuAttentionForward(i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, f64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64)
func.func @fits(%q: tensor<2x4x64x128xf32>, %k: tensor<2x4x48x128xf32>,
                %v: tensor<2x4x48x64xf32>, %g: tensor<2x4x64x64xf32>)
    -> (tensor<2x4x64x128xf32>, tensor<2x4x48x128xf32>, tensor<2x4x48x64xf32>) {
  %o, %l = spmd.attention %q, %k, %v {causal, scale = 0.125 : f64}
      : tensor<2x4x64x128xf32>, tensor<2x4x48x128xf32>, tensor<2x4x48x64xf32>
      -> tensor<2x4x64x64xf32>, tensor<2x4x64xf32>
  %dq, %dk, %dv = spmd.attention_grad %g, %q, %k, %v, %o, %l {causal, scale = 0.125 : f64}
      : tensor<2x4x64x64xf32>, tensor<2x4x64x128xf32>, tensor<2x4x48x128xf32>,
        tensor<2x4x48x64xf32>, tensor<2x4x64x64xf32>, tensor<2x4x64xf32>
  return %dq, %dk, %dv : tensor<2x4x64x128xf32>, tensor<2x4x48x128xf32>, tensor<2x4x48x64xf32>
}

// -----

// A head dimension above the kernels' 128 stays for spmd-decompose-attention.
// CHECK-LABEL: func.func @too_wide
// CHECK: spmd.attention
// CHECK-NOT: call @spmdGpuAttention
func.func @too_wide(%q: tensor<1x2x8x160xf32>, %k: tensor<1x2x8x160xf32>,
                    %v: tensor<1x2x8x160xf32>) -> tensor<1x2x8x160xf32> {
  %o, %l = spmd.attention %q, %k, %v {scale = 0.125 : f64}
      : tensor<1x2x8x160xf32>, tensor<1x2x8x160xf32>, tensor<1x2x8x160xf32>
      -> tensor<1x2x8x160xf32>, tensor<1x2x8xf32>
  return %o : tensor<1x2x8x160xf32>
}
