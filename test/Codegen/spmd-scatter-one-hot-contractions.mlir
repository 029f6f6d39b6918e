// RUN: spmd-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(spmd-scatter-one-hot-contractions))' | FileCheck %s

#tok = affine_map<(d0, d1) -> (d0, 0)>
#row = affine_map<(d0, d1) -> (0, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#iota = affine_map<(d0) -> (d0)>

// nn.Embedding's backward as the bridge traces it (after fusion): the
// one-hot of the ids against an iota, contracted over the tokens. It
// becomes a loop over the tokens adding gradient rows into the result;
// the one-hot and the iota are gone.
// CHECK-LABEL: func.func @embedding_backward
// CHECK-SAME: (%[[IDS:.*]]: tensor<32x1xi64>, %[[G:.*]]: tensor<32x16xf32>, %[[C:.*]]: tensor<50x16xf32>)
// CHECK-NOT: linalg.matmul
// CHECK-NOT: uitofp
// CHECK: %[[R:.*]] = scf.for %[[T:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[ACC:.*]] = %[[C]])
// CHECK: %[[I:.*]] = tensor.extract %[[IDS]][%[[T]], %{{.*}}] : tensor<32x1xi64>
// CHECK: arith.cmpi sge, %[[I]]
// CHECK: arith.cmpi slt, %[[I]], %c50_i64
// CHECK: scf.if
// CHECK: %[[V:.*]] = arith.index_cast %[[I]] : i64 to index
// CHECK: %[[DST:.*]] = tensor.extract_slice %[[ACC]][%[[V]], 0] [1, 16] [1, 1] : tensor<50x16xf32> to tensor<16xf32>
// CHECK: %[[SRC:.*]] = tensor.extract_slice %[[G]][%[[T]], 0] [1, 16] [1, 1] : tensor<32x16xf32> to tensor<16xf32>
// CHECK: %[[SUM:.*]] = linalg.generic {{.*}} ins(%[[SRC]] : tensor<16xf32>) outs(%[[DST]] : tensor<16xf32>)
// CHECK: arith.addf
// CHECK: tensor.insert_slice %[[SUM]] into %[[ACC]][%[[V]], 0] [1, 16] [1, 1]
// CHECK: } else {
// CHECK-NEXT: scf.yield %[[ACC]]
// CHECK: return %[[R]]
func.func @embedding_backward(%ids: tensor<32x1xi64>, %g: tensor<32x16xf32>, %c: tensor<50x16xf32>) -> tensor<50x16xf32> {
  %e = tensor.empty() : tensor<50xi64>
  %iota = linalg.generic {indexing_maps = [#iota], iterator_types = ["parallel"]} outs(%e : tensor<50xi64>) {
  ^bb0(%out: i64):
    %i = linalg.index 0 : index
    %v = arith.index_cast %i : index to i64
    linalg.yield %v : i64
  } -> tensor<50xi64>
  %rows = tensor.expand_shape %iota [[0, 1]] output_shape [1, 50] : tensor<50xi64> into tensor<1x50xi64>
  %e2 = tensor.empty() : tensor<32x50xf32>
  %oh = linalg.generic {indexing_maps = [#tok, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%ids, %rows : tensor<32x1xi64>, tensor<1x50xi64>) outs(%e2 : tensor<32x50xf32>) {
  ^bb0(%a: i64, %b: i64, %out: f32):
    %eq = arith.cmpi eq, %a, %b : i64
    %f = arith.uitofp %eq : i1 to f32
    linalg.yield %f : f32
  } -> tensor<32x50xf32>
  %r = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (k, m)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%oh, %g : tensor<32x50xf32>, tensor<32x16xf32>) outs(%c : tensor<50x16xf32>) -> tensor<50x16xf32>
  return %r : tensor<50x16xf32>
}

// -----

#tok = affine_map<(d0, d1) -> (d0, 0)>
#id = affine_map<(d0, d1) -> (d0, d1)>

// The iota fused into the one-hot's body (spmd-fuse-elementwise), its
// reshape's linearization kept: the row is `s0 + s1 * 50` of (index 1, 0),
// as replicate's GPT-2 embedding backward reaches this pass.
// CHECK-LABEL: func.func @iota_fused_into_body
// CHECK-NOT: linalg.matmul
// CHECK: scf.for
// CHECK: tensor.extract
// CHECK: scf.if
func.func @iota_fused_into_body(%ids: tensor<32x1xi64>, %g: tensor<32x16xf32>, %c: tensor<50x16xf32>) -> tensor<50x16xf32> {
  %c0 = arith.constant 0 : index
  %e = tensor.empty() : tensor<32x50xf32>
  %oh = linalg.generic {indexing_maps = [#tok, #id], iterator_types = ["parallel", "parallel"]}
      ins(%ids : tensor<32x1xi64>) outs(%e : tensor<32x50xf32>) {
  ^bb0(%a: i64, %out: f32):
    %i = linalg.index 1 : index
    %lin = affine.apply affine_map<()[s0, s1] -> (s0 + s1 * 50)>()[%i, %c0]
    %v = arith.index_cast %lin : index to i64
    %eq = arith.cmpi eq, %a, %v : i64
    %f = arith.uitofp %eq : i1 to f32
    linalg.yield %f : f32
  } -> tensor<32x50xf32>
  %r = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (k, m)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%oh, %g : tensor<32x50xf32>, tensor<32x16xf32>) outs(%c : tensor<50x16xf32>) -> tensor<50x16xf32>
  return %r : tensor<50x16xf32>
}

// A row index the loop indices do not give alone (index 1 + index 0) is
// no one-hot row: the matmul stays.
// CHECK-LABEL: func.func @not_a_row_index
// CHECK: linalg.matmul
func.func @not_a_row_index(%ids: tensor<32x1xi64>, %g: tensor<32x16xf32>, %c: tensor<50x16xf32>) -> tensor<50x16xf32> {
  %e = tensor.empty() : tensor<32x50xf32>
  %oh = linalg.generic {indexing_maps = [#tok, #id], iterator_types = ["parallel", "parallel"]}
      ins(%ids : tensor<32x1xi64>) outs(%e : tensor<32x50xf32>) {
  ^bb0(%a: i64, %out: f32):
    %i = linalg.index 1 : index
    %j = linalg.index 0 : index
    %lin = affine.apply affine_map<()[s0, s1] -> (s0 + s1)>()[%i, %j]
    %v = arith.index_cast %lin : index to i64
    %eq = arith.cmpi eq, %a, %v : i64
    %f = arith.uitofp %eq : i1 to f32
    linalg.yield %f : f32
  } -> tensor<32x50xf32>
  %r = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (k, m)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%oh, %g : tensor<32x50xf32>, tensor<32x16xf32>) outs(%c : tensor<50x16xf32>) -> tensor<50x16xf32>
  return %r : tensor<50x16xf32>
}

// -----

#tok = affine_map<(d0, d1) -> (d0)>
#id = affine_map<(d0, d1) -> (d0, d1)>

// The row index as linalg.index, the one-hot as a select, padding_idx 7
// computed in the body, i32 ids: the padding index is skipped too.
// CHECK-LABEL: func.func @padding_in_body
// CHECK-NOT: linalg.matmul
// CHECK: scf.for
// CHECK: %[[I:.*]] = tensor.extract %{{.*}}[%{{.*}}] : tensor<8xi32>
// CHECK: arith.cmpi slt, %[[I]], %c10_i32
// CHECK: arith.cmpi ne, %[[I]], %c7_i32
// CHECK: scf.if
func.func @padding_in_body(%ids: tensor<8xi32>, %g: tensor<8x4xf32>, %c: tensor<10x4xf32>) -> tensor<10x4xf32> {
  %one = arith.constant 1.0 : f32
  %zero = arith.constant 0.0 : f32
  %pad = arith.constant 7 : i32
  %e = tensor.empty() : tensor<8x10xf32>
  %oh = linalg.generic {indexing_maps = [#tok, #id], iterator_types = ["parallel", "parallel"]}
      ins(%ids : tensor<8xi32>) outs(%e : tensor<8x10xf32>) {
  ^bb0(%a: i32, %out: f32):
    %i = linalg.index 1 : index
    %v = arith.index_cast %i : index to i32
    %eq = arith.cmpi eq, %v, %a : i32
    %ne = arith.cmpi ne, %a, %pad : i32
    %both = arith.andi %ne, %eq : i1
    %f = arith.select %both, %one, %zero : f32
    linalg.yield %f : f32
  } -> tensor<8x10xf32>
  %r = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (k, m)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%oh, %g : tensor<8x10xf32>, tensor<8x4xf32>) outs(%c : tensor<10x4xf32>) -> tensor<10x4xf32>
  return %r : tensor<10x4xf32>
}

// -----

#tok = affine_map<(d0, d1) -> (d0, 0)>
#id = affine_map<(d0, d1) -> (d0, d1)>

// The padding mask as its own generic over the same ids (fusion leaves a
// broadcast operand alone): recognized, then erased with the one-hot.
// CHECK-LABEL: func.func @padding_mask_input
// CHECK-NOT: linalg.generic {{.*}} ins(%arg0 : tensor<8x1xi64>)
// CHECK: scf.for
// CHECK: arith.cmpi ne, %{{.*}}, %c3_i64
func.func @padding_mask_input(%ids: tensor<8x1xi64>, %g: tensor<8x4xf32>, %c: tensor<10x4xf32>) -> tensor<10x4xf32> {
  %pad = arith.constant 3 : i64
  %em = tensor.empty() : tensor<8x1xi1>
  %mask = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%ids : tensor<8x1xi64>) outs(%em : tensor<8x1xi1>) {
  ^bb0(%a: i64, %out: i1):
    %ne = arith.cmpi ne, %a, %pad : i64
    linalg.yield %ne : i1
  } -> tensor<8x1xi1>
  %e = tensor.empty() : tensor<8x10xf32>
  %oh = linalg.generic {indexing_maps = [#tok, #tok, #id], iterator_types = ["parallel", "parallel"]}
      ins(%ids, %mask : tensor<8x1xi64>, tensor<8x1xi1>) outs(%e : tensor<8x10xf32>) {
  ^bb0(%a: i64, %m: i1, %out: f32):
    %i = linalg.index 1 : index
    %v = arith.index_cast %i : index to i64
    %eq = arith.cmpi eq, %a, %v : i64
    %both = arith.andi %eq, %m : i1
    %f = arith.uitofp %both : i1 to f32
    linalg.yield %f : f32
  } -> tensor<8x10xf32>
  %r = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (k, m)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%oh, %g : tensor<8x10xf32>, tensor<8x4xf32>) outs(%c : tensor<10x4xf32>) -> tensor<10x4xf32>
  return %r : tensor<10x4xf32>
}

// -----

#tok = affine_map<(d0, d1) -> (d0)>
#id = affine_map<(d0, d1) -> (d0, d1)>

// Left alone: a comparison that is not equality (not one-hot) and a
// gradient read transposed. A one-hot contracted along the row loop
// instead of the tokens is a lookup of the table's rows: a gather loop (see
// @lookup_in_chunk). A one-hot with another user is kept for it (the
// matmul still becomes a scatter).
// CHECK-LABEL: func.func @not_one_hot
// CHECK: linalg.matmul
// CHECK: scf.for
// CHECK: linalg.matmul
// CHECK-NOT: scf.for
// CHECK-LABEL: func.func @one_hot_kept
// CHECK: %[[OH:.*]] = linalg.generic
// CHECK: scf.for
// CHECK: return %{{.*}}, %[[OH]]
func.func @not_one_hot(%ids: tensor<8xi64>, %g: tensor<8x4xf32>, %gt: tensor<4x8xf32>, %c: tensor<10x4xf32>, %c8: tensor<8x4xf32>, %h: tensor<10x4xf32>)
    -> (tensor<10x4xf32>, tensor<8x4xf32>, tensor<10x4xf32>) {
  %e = tensor.empty() : tensor<8x10xf32>
  %lt = linalg.generic {indexing_maps = [#tok, #id], iterator_types = ["parallel", "parallel"]}
      ins(%ids : tensor<8xi64>) outs(%e : tensor<8x10xf32>) {
  ^bb0(%a: i64, %out: f32):
    %i = linalg.index 1 : index
    %v = arith.index_cast %i : index to i64
    %cmp = arith.cmpi slt, %a, %v : i64
    %f = arith.uitofp %cmp : i1 to f32
    linalg.yield %f : f32
  } -> tensor<8x10xf32>
  %r0 = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (k, m)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%lt, %g : tensor<8x10xf32>, tensor<8x4xf32>) outs(%c : tensor<10x4xf32>) -> tensor<10x4xf32>
  %oh = linalg.generic {indexing_maps = [#tok, #id], iterator_types = ["parallel", "parallel"]}
      ins(%ids : tensor<8xi64>) outs(%e : tensor<8x10xf32>) {
  ^bb0(%a: i64, %out: f32):
    %i = linalg.index 1 : index
    %v = arith.index_cast %i : index to i64
    %eq = arith.cmpi eq, %a, %v : i64
    %f = arith.uitofp %eq : i1 to f32
    linalg.yield %f : f32
  } -> tensor<8x10xf32>
  // one_hot (8x10) times h (10x4): a gather, contracted along the rows.
  %r1 = linalg.matmul ins(%oh, %h : tensor<8x10xf32>, tensor<10x4xf32>) outs(%c8 : tensor<8x4xf32>) -> tensor<8x4xf32>
  %r2 = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (k, m)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%oh, %gt : tensor<8x10xf32>, tensor<4x8xf32>) outs(%c : tensor<10x4xf32>) -> tensor<10x4xf32>
  return %r0, %r1, %r2 : tensor<10x4xf32>, tensor<8x4xf32>, tensor<10x4xf32>
}
func.func @one_hot_kept(%ids: tensor<8xi64>, %g: tensor<8x4xf32>, %c: tensor<10x4xf32>) -> (tensor<10x4xf32>, tensor<8x10xf32>) {
  %e = tensor.empty() : tensor<8x10xf32>
  %oh = linalg.generic {indexing_maps = [#tok, #id], iterator_types = ["parallel", "parallel"]}
      ins(%ids : tensor<8xi64>) outs(%e : tensor<8x10xf32>) {
  ^bb0(%a: i64, %out: f32):
    %i = linalg.index 1 : index
    %v = arith.index_cast %i : index to i64
    %eq = arith.cmpi eq, %a, %v : i64
    %f = arith.uitofp %eq : i1 to f32
    linalg.yield %f : f32
  } -> tensor<8x10xf32>
  %r = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (k, m)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%oh, %g : tensor<8x10xf32>, tensor<8x4xf32>) outs(%c : tensor<10x4xf32>) -> tensor<10x4xf32>
  return %r, %oh : tensor<10x4xf32>, tensor<8x10xf32>
}

// -----

#tok = affine_map<(d0, d1) -> (d0, 0)>
#row = affine_map<(d0, d1) -> (0, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>

// A rank's chunk of the vocabulary (spmd-vocab-parallel, uneven: the
// chunk's size is dynamic): the iota generated in its reshaped shape (the
// reshape fused into it: an affine.apply of the indices) and sliced at the
// chunk's first row. Each token adds to row id - first when that is one of
// the chunk's rows.
// CHECK-LABEL: func.func @chunk_of_rows
// CHECK-SAME: (%[[IDS:.*]]: tensor<32x1xi64>, %[[G:.*]]: tensor<32x16xf32>, %[[C:.*]]: tensor<?x16xf32>, %[[FIRST:.*]]: index, %[[SIZE:.*]]: index)
// CHECK-NOT: linalg.matmul
// CHECK: %[[DIM:.*]] = tensor.dim %[[C]], %{{.*}} : tensor<?x16xf32>
// CHECK: %[[ROWS:.*]] = arith.index_cast %[[DIM]] : index to i64
// CHECK: %[[OFF:.*]] = arith.index_cast %[[FIRST]] : index to i64
// CHECK: scf.for
// CHECK: %[[RAW:.*]] = tensor.extract %[[IDS]]
// CHECK: %[[I:.*]] = arith.subi %[[RAW]], %[[OFF]] : i64
// CHECK: arith.cmpi sge, %[[I]]
// CHECK: arith.cmpi slt, %[[I]], %[[ROWS]] : i64
// CHECK: scf.if
// CHECK: arith.index_cast %[[I]] : i64 to index
func.func @chunk_of_rows(%ids: tensor<32x1xi64>, %g: tensor<32x16xf32>, %c: tensor<?x16xf32>, %first: index, %size: index) -> tensor<?x16xf32> {
  %c0 = arith.constant 0 : index
  %e = tensor.empty() : tensor<1x50xi64>
  %iota = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]} outs(%e : tensor<1x50xi64>) {
  ^bb0(%out: i64):
    %i = linalg.index 1 : index
    %lin = affine.apply affine_map<()[s0, s1] -> (s0 + s1 * 50)>()[%i, %c0]
    %v = arith.index_cast %lin : index to i64
    linalg.yield %v : i64
  } -> tensor<1x50xi64>
  %rows = tensor.extract_slice %iota[0, %first] [1, %size] [1, 1] : tensor<1x50xi64> to tensor<1x?xi64>
  %e2 = tensor.empty(%size) : tensor<32x?xf32>
  %oh = linalg.generic {indexing_maps = [#tok, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%ids, %rows : tensor<32x1xi64>, tensor<1x?xi64>) outs(%e2 : tensor<32x?xf32>) {
  ^bb0(%a: i64, %b: i64, %out: f32):
    %eq = arith.cmpi eq, %a, %b : i64
    %f = arith.uitofp %eq : i1 to f32
    linalg.yield %f : f32
  } -> tensor<32x?xf32>
  %r = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (k, m)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%oh, %g : tensor<32x?xf32>, tensor<32x16xf32>) outs(%c : tensor<?x16xf32>) -> tensor<?x16xf32>
  return %r : tensor<?x16xf32>
}

// -----

#tok = affine_map<(d0, d1) -> (d0, 0)>
#row = affine_map<(d0, d1) -> (0, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>

// The other direction: an embedding's lookup written as a one-hot times the
// table (spmd-vocab-parallel), over a rank's chunk of the rows. Each token
// adds row id - first of the chunk into its own row of the (zero) result,
// when the id is one of the chunk's rows.
// CHECK-LABEL: func.func @lookup_in_chunk
// CHECK-SAME: (%[[IDS:.*]]: tensor<32x1xi64>, %[[W:.*]]: tensor<?x16xf32>, %[[C:.*]]: tensor<32x16xf32>, %[[FIRST:.*]]: index, %[[SIZE:.*]]: index)
// CHECK-NOT: linalg.matmul
// CHECK: %[[DIM:.*]] = tensor.dim %[[W]], %{{.*}} : tensor<?x16xf32>
// CHECK: %[[ROWS:.*]] = arith.index_cast %[[DIM]] : index to i64
// CHECK: %[[OFF:.*]] = arith.index_cast %[[FIRST]] : index to i64
// CHECK: %[[R:.*]] = scf.for %[[T:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[ACC:.*]] = %[[C]])
// CHECK: %[[RAW:.*]] = tensor.extract %[[IDS]][%[[T]], %{{.*}}]
// CHECK: %[[I:.*]] = arith.subi %[[RAW]], %[[OFF]] : i64
// CHECK: arith.cmpi sge, %[[I]]
// CHECK: arith.cmpi slt, %[[I]], %[[ROWS]] : i64
// CHECK: scf.if
// CHECK: %[[V:.*]] = arith.index_cast %[[I]] : i64 to index
// CHECK: %[[DST:.*]] = tensor.extract_slice %[[ACC]][%[[T]], 0] [1, 16] [1, 1] : tensor<32x16xf32> to tensor<16xf32>
// CHECK: %[[SRC:.*]] = tensor.extract_slice %[[W]][%[[V]], 0] [1, 16] [1, 1] : tensor<?x16xf32> to tensor<16xf32>
// CHECK: linalg.generic {{.*}} ins(%[[SRC]] : tensor<16xf32>) outs(%[[DST]] : tensor<16xf32>)
// CHECK: tensor.insert_slice %{{.*}} into %[[ACC]][%[[T]], 0] [1, 16] [1, 1]
// CHECK: return %[[R]]
func.func @lookup_in_chunk(%ids: tensor<32x1xi64>, %w: tensor<?x16xf32>, %c: tensor<32x16xf32>, %first: index, %size: index) -> tensor<32x16xf32> {
  %e = tensor.empty() : tensor<50xi64>
  %iota = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} outs(%e : tensor<50xi64>) {
  ^bb0(%out: i64):
    %i = linalg.index 0 : index
    %v = arith.index_cast %i : index to i64
    linalg.yield %v : i64
  } -> tensor<50xi64>
  %all = tensor.expand_shape %iota [[0, 1]] output_shape [1, 50] : tensor<50xi64> into tensor<1x50xi64>
  %rows = tensor.extract_slice %all[0, %first] [1, %size] [1, 1] : tensor<1x50xi64> to tensor<1x?xi64>
  %e2 = tensor.empty(%size) : tensor<32x?xf32>
  %oh = linalg.generic {indexing_maps = [#tok, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%ids, %rows : tensor<32x1xi64>, tensor<1x?xi64>) outs(%e2 : tensor<32x?xf32>) {
  ^bb0(%a: i64, %b: i64, %out: f32):
    %eq = arith.cmpi eq, %a, %b : i64
    %f = arith.uitofp %eq : i1 to f32
    linalg.yield %f : f32
  } -> tensor<32x?xf32>
  %r = linalg.matmul ins(%oh, %w : tensor<32x?xf32>, tensor<?x16xf32>) outs(%c : tensor<32x16xf32>) -> tensor<32x16xf32>
  return %r : tensor<32x16xf32>
}
