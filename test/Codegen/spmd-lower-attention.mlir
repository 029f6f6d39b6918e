// RUN: spmd-opt %s --spmd-lower-attention --canonicalize --split-input-file | FileCheck %s

// spmd.attention becomes one call of the runtime's flash kernel on buffers:
// the operands as read-only buffers in the layout they have, fresh output
// and log-sum-exp buffers, B H L S E Ev, the mask's strides (0: broadcast;
// no mask: address 0), the scale and causal, then the element strides of
// query, key, value and output along batch, head and row (the output's
// fold to constants: 4 * 64 * 16, 64 * 16, 16).
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
// CHECK-DAG: %[[C4096:.*]] = arith.constant 4096 : i64
// CHECK-DAG: %[[C1024:.*]] = arith.constant 1024 : i64
// CHECK-DAG: bufferization.to_buffer %{{.*}} read_only : tensor<2x4x64x32xf32> to memref<2x4x64x32xf32, strided<[?, ?, ?, ?], offset: ?>>
// CHECK-DAG: %[[OUT:.*]] = memref.alloc() : memref<2x4x64x16xf32>
// CHECK-DAG: %[[LSE:.*]] = memref.alloc() : memref<2x4x64xf32>
// CHECK: call @spmdAttentionForward(%{{.*}}, %{{.*}}, %{{.*}}, %[[C0]], %{{.*}}, %{{.*}}, %[[C2]], %[[C4]], %[[C64]], %[[C48]], %[[C32]], %[[C16]], %[[C0]], %[[C0]], %[[C0]], %[[SCALE]], %[[C1]], {{.*}}, %[[C4096]], %[[C1024]], %[[C16]]) : (i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, f64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64) -> ()
// CHECK-DAG: bufferization.to_tensor %[[OUT]] restrict writable : memref<2x4x64x16xf32> to tensor<2x4x64x16xf32>
// CHECK-DAG: bufferization.to_tensor %[[LSE]] restrict writable : memref<2x4x64xf32> to tensor<2x4x64xf32>
// CHECK-NOT: spmd.attention
// CHECK: func.func private @spmdAttentionForward(i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, f64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64)
func.func @forward(%q: tensor<2x4x64x32xf32>, %k: tensor<2x4x48x32xf32>, %v: tensor<2x4x48x16xf32>) -> (tensor<2x4x64x16xf32>, tensor<2x4x64xf32>) {
  %o, %l = spmd.attention %q, %k, %v {causal, scale = 0.125 : f64} : tensor<2x4x64x32xf32>, tensor<2x4x48x32xf32>, tensor<2x4x48x16xf32> -> tensor<2x4x64x16xf32>, tensor<2x4x64xf32>
  return %o, %l : tensor<2x4x64x16xf32>, tensor<2x4x64xf32>
}

// -----

// A mask 2 x 1 x 64 x 48 (per batch and query row, shared by the heads):
// strides 64 * 48 along the batch, 0 along the heads, 48 along the rows.
// The backward takes grad, query, key, value, out, lse, mask, then its
// three result buffers, and after the scalars the strides of grad, query,
// key, value, out and of the three results (dv's: 4 * 48 * 16, 48 * 16,
// 16).
// CHECK-LABEL: func.func @backward
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : i64
// CHECK-DAG: %[[C48:.*]] = arith.constant 48 : i64
// CHECK-DAG: %[[C3072:.*]] = arith.constant 3072 : i64
// CHECK-DAG: %[[DQ:.*]] = memref.alloc() : memref<2x4x64x32xf32>
// CHECK-DAG: %[[DK:.*]] = memref.alloc() : memref<2x4x48x32xf32>
// CHECK-DAG: %[[DV:.*]] = memref.alloc() : memref<2x4x48x16xf32>
// CHECK-DAG: %[[C768:.*]] = arith.constant 768 : i64
// CHECK-DAG: %[[C16:.*]] = arith.constant 16 : i64
// CHECK: call @spmdAttentionBackward({{(%[^,]*, )+}}%[[C3072]], %[[C0]], %[[C48]], %{{.*}}, %[[C0]], {{.*}}, %[[C3072]], %[[C768]], %[[C16]]) : (i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, f64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64) -> ()
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

// -----

// nanoGPT's attention: query, key and value are column blocks of one packed
// projection (B x L x 3C), their heads split and transposed to B x H x L x E;
// the output's heads are transposed back and merged. The kernels read the
// blocks in place (transposed views, strides found after bufferization) and
// write the output in B x L x H x E (strides 64 * 4 * 8, 8, 4 * 8): neither
// transpose is left to copy.
// CHECK-LABEL: func.func @head_transposes
// CHECK-NOT: linalg.transpose
// CHECK-DAG: %[[C2048:.*]] = arith.constant 2048 : i64
// CHECK-DAG: %[[C8:.*]] = arith.constant 8 : i64
// CHECK-DAG: %[[C32:.*]] = arith.constant 32 : i64
// CHECK: %[[Q:.*]] = bufferization.to_buffer %{{.*}} read_only : tensor<2x64x4x8xf32> to memref<2x64x4x8xf32, strided<[?, ?, ?, ?], offset: ?>>
// CHECK: memref.transpose %[[Q]] (d0, d1, d2, d3) -> (d0, d2, d1, d3)
// CHECK: %[[OUT:.*]] = memref.alloc() : memref<2x64x4x8xf32>
// CHECK: memref.transpose %[[OUT]] (d0, d1, d2, d3) -> (d0, d2, d1, d3) : memref<2x64x4x8xf32> to memref<2x4x64x8xf32, strided<[2048, 8, 32, 1]>>
// CHECK: call @spmdAttentionForward({{.*}}, %[[C2048]], %[[C8]], %[[C32]])
// CHECK-NOT: linalg.transpose
// CHECK: %[[MERGED:.*]] = bufferization.to_tensor %[[OUT]] restrict writable : memref<2x64x4x8xf32>
// CHECK: tensor.collapse_shape %[[MERGED]]
func.func @head_transposes(%p: tensor<2x64x96xf32>) -> (tensor<2x64x32xf32>, tensor<2x4x64xf32>) {
  %qs = tensor.extract_slice %p[0, 0, 0] [2, 64, 32] [1, 1, 1] : tensor<2x64x96xf32> to tensor<2x64x32xf32>
  %ks = tensor.extract_slice %p[0, 0, 32] [2, 64, 32] [1, 1, 1] : tensor<2x64x96xf32> to tensor<2x64x32xf32>
  %vs = tensor.extract_slice %p[0, 0, 64] [2, 64, 32] [1, 1, 1] : tensor<2x64x96xf32> to tensor<2x64x32xf32>
  %qe = tensor.expand_shape %qs [[0], [1], [2, 3]] output_shape [2, 64, 4, 8] : tensor<2x64x32xf32> into tensor<2x64x4x8xf32>
  %ke = tensor.expand_shape %ks [[0], [1], [2, 3]] output_shape [2, 64, 4, 8] : tensor<2x64x32xf32> into tensor<2x64x4x8xf32>
  %ve = tensor.expand_shape %vs [[0], [1], [2, 3]] output_shape [2, 64, 4, 8] : tensor<2x64x32xf32> into tensor<2x64x4x8xf32>
  %e = tensor.empty() : tensor<2x4x64x8xf32>
  %q = linalg.transpose ins(%qe : tensor<2x64x4x8xf32>) outs(%e : tensor<2x4x64x8xf32>) permutation = [0, 2, 1, 3]
  %k = linalg.transpose ins(%ke : tensor<2x64x4x8xf32>) outs(%e : tensor<2x4x64x8xf32>) permutation = [0, 2, 1, 3]
  %v = linalg.transpose ins(%ve : tensor<2x64x4x8xf32>) outs(%e : tensor<2x4x64x8xf32>) permutation = [0, 2, 1, 3]
  %o, %l = spmd.attention %q, %k, %v {causal, scale = 0.125 : f64} : tensor<2x4x64x8xf32>, tensor<2x4x64x8xf32>, tensor<2x4x64x8xf32> -> tensor<2x4x64x8xf32>, tensor<2x4x64xf32>
  %e2 = tensor.empty() : tensor<2x64x4x8xf32>
  %m = linalg.transpose ins(%o : tensor<2x4x64x8xf32>) outs(%e2 : tensor<2x64x4x8xf32>) permutation = [0, 2, 1, 3]
  %y = tensor.collapse_shape %m [[0], [1], [2, 3]] : tensor<2x64x4x8xf32> into tensor<2x64x32xf32>
  return %y, %l : tensor<2x64x32xf32>, tensor<2x4x64xf32>
}

// -----

// The backward of the same: the three gradients, each transposed back and
// merged from its heads, concatenated into the packed projection's gradient.
// The kernels write each into its column block of one buffer (B x L x 3C):
// no transpose, no concatenation left. An operand that is neither a head
// transpose nor known to have contiguous rows (here the result of an
// scf.if) is still copied to an identity-layout buffer.
// CHECK-LABEL: func.func @packed_gradients
// CHECK: %[[PACKED:.*]] = memref.alloc() : memref<2x64x96xf32>
// CHECK: %[[DK:.*]] = memref.subview %[[PACKED]][0, 0, 32] [2, 64, 32] [1, 1, 1]
// CHECK: %[[DKH:.*]] = memref.expand_shape %[[DK]] {{\[\[}}0], [1], [2, 3]] output_shape [2, 64, 4, 8]
// CHECK: memref.transpose %[[DKH]] (d0, d1, d2, d3) -> (d0, d2, d1, d3)
// CHECK: call @spmdAttentionBackward(
// CHECK-NOT: tensor.concat
// CHECK-NOT: linalg.transpose
// CHECK: %[[GRAD:.*]] = bufferization.to_tensor %[[PACKED]] restrict writable : memref<2x64x96xf32>
// CHECK: return %[[GRAD]]
func.func @packed_gradients(%g: tensor<2x4x64x8xf32>, %q: tensor<2x4x64x8xf32>, %k: tensor<2x4x64x8xf32>, %v: tensor<2x4x64x8xf32>, %o: tensor<2x4x64x8xf32>, %l: tensor<2x4x64xf32>, %c: i1) -> tensor<2x64x96xf32> {
  %qc = scf.if %c -> tensor<2x4x64x8xf32> {
    scf.yield %q : tensor<2x4x64x8xf32>
  } else {
    scf.yield %k : tensor<2x4x64x8xf32>
  }
  %dq, %dk, %dv = spmd.attention_grad %g, %qc, %k, %v, %o, %l {causal, scale = 0.125 : f64} : tensor<2x4x64x8xf32>, tensor<2x4x64x8xf32>, tensor<2x4x64x8xf32>, tensor<2x4x64x8xf32>, tensor<2x4x64x8xf32>, tensor<2x4x64xf32>
  %e = tensor.empty() : tensor<2x64x4x8xf32>
  %tq = linalg.transpose ins(%dq : tensor<2x4x64x8xf32>) outs(%e : tensor<2x64x4x8xf32>) permutation = [0, 2, 1, 3]
  %tk = linalg.transpose ins(%dk : tensor<2x4x64x8xf32>) outs(%e : tensor<2x64x4x8xf32>) permutation = [0, 2, 1, 3]
  %tv = linalg.transpose ins(%dv : tensor<2x4x64x8xf32>) outs(%e : tensor<2x64x4x8xf32>) permutation = [0, 2, 1, 3]
  %cq = tensor.collapse_shape %tq [[0], [1], [2, 3]] : tensor<2x64x4x8xf32> into tensor<2x64x32xf32>
  %ck = tensor.collapse_shape %tk [[0], [1], [2, 3]] : tensor<2x64x4x8xf32> into tensor<2x64x32xf32>
  %cv = tensor.collapse_shape %tv [[0], [1], [2, 3]] : tensor<2x64x4x8xf32> into tensor<2x64x32xf32>
  %packed = tensor.concat dim(2) %cq, %ck, %cv : (tensor<2x64x32xf32>, tensor<2x64x32xf32>, tensor<2x64x32xf32>) -> tensor<2x64x96xf32>
  return %packed : tensor<2x64x96xf32>
}

// -----

// As many heads as rows (4 x 4): the merged B x L x H x E buffer has the
// very type of the B x H x L x E output, and it is still the transpose's
// value, not the output's (no transpose of it is left to apply twice).
// CHECK-LABEL: func.func @heads_equal_rows
// CHECK: %[[OUT:.*]] = memref.alloc() : memref<1x4x4x8xf32>
// CHECK: memref.transpose %[[OUT]] (d0, d1, d2, d3) -> (d0, d2, d1, d3) : memref<1x4x4x8xf32> to memref<1x4x4x8xf32, strided<[128, 8, 32, 1]>>
// CHECK: call @spmdAttentionForward
// CHECK-NOT: linalg.transpose
// CHECK: %[[MERGED:.*]] = bufferization.to_tensor %[[OUT]] restrict writable
// CHECK: return %[[MERGED]]
func.func @heads_equal_rows(%q: tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32> {
  %o, %l = spmd.attention %q, %q, %q {scale = 0.125 : f64} : tensor<1x4x4x8xf32>, tensor<1x4x4x8xf32>, tensor<1x4x4x8xf32> -> tensor<1x4x4x8xf32>, tensor<1x4x4xf32>
  %e = tensor.empty() : tensor<1x4x4x8xf32>
  %m = linalg.transpose ins(%o : tensor<1x4x4x8xf32>) outs(%e : tensor<1x4x4x8xf32>) permutation = [0, 2, 1, 3]
  return %m : tensor<1x4x4x8xf32>
}
