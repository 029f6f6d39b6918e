// RUN: spmd-opt %s --spmd-lower-attention --canonicalize --split-input-file | FileCheck %s

// spmd.attention becomes one call of the runtime's flash kernel on buffers:
// the operands as read-only identity-layout buffers, fresh output and
// log-sum-exp buffers, B H L S E Ev, the mask's strides (0: broadcast; no
// mask: address 0), the scale and causal.
// CHECK-LABEL: func.func @forward
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : i64
// CHECK-DAG: %[[C1:.*]] = arith.constant 1 : i64
// CHECK-DAG: %[[C2:.*]] = arith.constant 2 : i64
// CHECK-DAG: %[[C4:.*]] = arith.constant 4 : i64
// CHECK-DAG: %[[C64:.*]] = arith.constant 64 : i64
// CHECK-DAG: %[[C48:.*]] = arith.constant 48 : i64
// CHECK-DAG: %[[C32:.*]] = arith.constant 32 : i64
// CHECK-DAG: %[[C16:.*]] = arith.constant 16 : i64
// CHECK-DAG: %[[SCALE:.*]] = arith.constant 1.250000e-01 : f64
// CHECK-DAG: bufferization.to_buffer %{{.*}} read_only : tensor<2x4x64x32xf32> to memref<2x4x64x32xf32>
// CHECK-DAG: %[[OUT:.*]] = memref.alloc() : memref<2x4x64x16xf32>
// CHECK-DAG: %[[LSE:.*]] = memref.alloc() : memref<2x4x64xf32>
// CHECK: call @spmdAttentionForward(%{{.*}}, %{{.*}}, %{{.*}}, %[[C0]], %{{.*}}, %{{.*}}, %[[C2]], %[[C4]], %[[C64]], %[[C48]], %[[C32]], %[[C16]], %[[C0]], %[[C0]], %[[C0]], %[[SCALE]], %[[C1]]) : (i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, f64, i64) -> ()
// CHECK-DAG: bufferization.to_tensor %[[OUT]] restrict writable : memref<2x4x64x16xf32> to tensor<2x4x64x16xf32>
// CHECK-DAG: bufferization.to_tensor %[[LSE]] restrict writable : memref<2x4x64xf32> to tensor<2x4x64xf32>
// CHECK-NOT: spmd.attention
// CHECK: func.func private @spmdAttentionForward(i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, f64, i64)
func.func @forward(%q: tensor<2x4x64x32xf32>, %k: tensor<2x4x48x32xf32>, %v: tensor<2x4x48x16xf32>) -> (tensor<2x4x64x16xf32>, tensor<2x4x64xf32>) {
  %o, %l = spmd.attention %q, %k, %v {causal, scale = 0.125 : f64} : tensor<2x4x64x32xf32>, tensor<2x4x48x32xf32>, tensor<2x4x48x16xf32> -> tensor<2x4x64x16xf32>, tensor<2x4x64xf32>
  return %o, %l : tensor<2x4x64x16xf32>, tensor<2x4x64xf32>
}

// -----

// A mask 2 x 1 x 64 x 48 (per batch and query row, shared by the heads):
// strides 64 * 48 along the batch, 0 along the heads, 48 along the rows.
// The backward takes grad, query, key, value, out, lse, mask, then its
// three result buffers.
// CHECK-LABEL: func.func @backward
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : i64
// CHECK-DAG: %[[C48:.*]] = arith.constant 48 : i64
// CHECK-DAG: %[[C3072:.*]] = arith.constant 3072 : i64
// CHECK-DAG: %[[DQ:.*]] = memref.alloc() : memref<2x4x64x32xf32>
// CHECK-DAG: %[[DK:.*]] = memref.alloc() : memref<2x4x48x32xf32>
// CHECK-DAG: %[[DV:.*]] = memref.alloc() : memref<2x4x48x16xf32>
// CHECK: call @spmdAttentionBackward({{(%[^,]*, )+}}%[[C3072]], %[[C0]], %[[C48]], %{{.*}}, %[[C0]]) : (i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, f64, i64) -> ()
func.func @backward(%g: tensor<2x4x64x16xf32>, %q: tensor<2x4x64x32xf32>, %k: tensor<2x4x48x32xf32>, %v: tensor<2x4x48x16xf32>, %o: tensor<2x4x64x16xf32>, %l: tensor<2x4x64xf32>, %m: tensor<2x1x64x48xf32>) -> (tensor<2x4x64x32xf32>, tensor<2x4x48x32xf32>, tensor<2x4x48x16xf32>) {
  %dq, %dk, %dv = spmd.attention_grad %g, %q, %k, %v, %o, %l mask %m {scale = 0.125 : f64} : tensor<2x4x64x16xf32>, tensor<2x4x64x32xf32>, tensor<2x4x48x32xf32>, tensor<2x4x48x16xf32>, tensor<2x4x64x16xf32>, tensor<2x4x64xf32>, tensor<2x1x64x48xf32>
  return %dq, %dk, %dv : tensor<2x4x64x32xf32>, tensor<2x4x48x32xf32>, tensor<2x4x48x16xf32>
}

// -----

// Dynamic sizes (a batch split unevenly) come from the buffers.
// CHECK-LABEL: func.func @dynamic_batch
// CHECK: tensor.dim %{{.*}}, %c0 : tensor<?x4x64x32xf32>
// CHECK: memref.alloc(%{{.*}}) : memref<?x4x64x32xf32>
// CHECK: call @spmdAttentionForward
func.func @dynamic_batch(%q: tensor<?x4x64x32xf32>) -> tensor<?x4x64x32xf32> {
  %o, %l = spmd.attention %q, %q, %q {scale = 0.125 : f64} : tensor<?x4x64x32xf32>, tensor<?x4x64x32xf32>, tensor<?x4x64x32xf32> -> tensor<?x4x64x32xf32>, tensor<?x4x64xf32>
  return %o : tensor<?x4x64x32xf32>
}
