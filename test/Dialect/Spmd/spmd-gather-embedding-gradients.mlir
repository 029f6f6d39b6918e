// RUN: spmd-opt %s --pass-pipeline='builtin.module(func.func(spmd-gather-embedding-gradients))' | FileCheck %s
// RUN: spmd-opt %s --pass-pipeline='builtin.module(func.func(spmd-gather-embedding-gradients))' | spmd-opt --spmd-lower-to-cpu | FileCheck %s --check-prefix=CPU

// An embedding's gradient (the one-hot of this rank's 32 token ids,
// transposed, times their rows) all-reduced over 2 ranks: the ids and rows
// are all-gathered and the one-hot is computed over the 64 tokens; a tied
// head's dense term is all-reduced alone and added after.
spmd.mesh @dp(shape = 2)
#tok = affine_map<(d0, d1) -> (d0, 0)>
#row = affine_map<(d0, d1) -> (0, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>

// CHECK-LABEL: func.func @tied
// CHECK-SAME: (%[[IDS:.*]]: tensor<32x1xi64>, %[[ROWS:.*]]: tensor<32x16xf32>, %[[HEAD:.*]]: tensor<512x16xf32>)
// CHECK: %[[ALLIDS:.*]] = spmd.all_gather %[[IDS]] on @dp axes = [0] gather_dim = 0 : tensor<32x1xi64> -> tensor<64x1xi64>
// CHECK: %[[EQ:.*]] = linalg.generic {{.*}} ins(%[[ALLIDS]], %{{.*}} : tensor<64x1xi64>, tensor<1x512xi64>) outs(%{{.*}} : tensor<64x512xi1>)
// CHECK: %[[ONEHOT:.*]] = linalg.generic {{.*}} ins(%[[EQ]] : tensor<64x512xi1>) outs(%{{.*}} : tensor<64x512xf32>)
// CHECK: %[[T:.*]] = linalg.transpose ins(%[[ONEHOT]] : tensor<64x512xf32>) outs(%{{.*}} : tensor<512x64xf32>)
// CHECK: %[[ALLROWS:.*]] = spmd.all_gather %[[ROWS]] on @dp axes = [0] gather_dim = 0 : tensor<32x16xf32> -> tensor<64x16xf32>
// CHECK: %[[EMB:.*]] = linalg.matmul ins(%[[T]], %[[ALLROWS]] : tensor<512x64xf32>, tensor<64x16xf32>)
// CHECK: %[[REDUCED:.*]] = spmd.all_reduce %[[HEAD]] on @dp axes = [0] sum : tensor<512x16xf32> -> tensor<512x16xf32>
// CHECK: %[[SUM:.*]] = linalg.generic {{.*}} ins(%[[REDUCED]], %[[EMB]] : tensor<512x16xf32>, tensor<512x16xf32>)
// CHECK: return %[[SUM]]
// The CPU lowering scatters the gathered rows: no GEMM left.
// CPU-LABEL: llvm.func @tied
// CPU-NOT: spmdSgemm
// CPU: llvm.return
func.func @tied(%ids: tensor<32x1xi64>, %rows: tensor<32x16xf32>,
                %head: tensor<512x16xf32>) -> tensor<512x16xf32> {
  %iota_init = tensor.empty() : tensor<1x512xi64>
  %iota = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]} outs(%iota_init : tensor<1x512xi64>) {
  ^bb0(%out: i64):
    %i = linalg.index 1 : index
    %c = arith.index_cast %i : index to i64
    linalg.yield %c : i64
  } -> tensor<1x512xi64>
  %eq_init = tensor.empty() : tensor<32x512xi1>
  %eq = linalg.generic {indexing_maps = [#tok, #row, #id], iterator_types = ["parallel", "parallel"]} ins(%ids, %iota : tensor<32x1xi64>, tensor<1x512xi64>) outs(%eq_init : tensor<32x512xi1>) {
  ^bb0(%a: i64, %b: i64, %out: i1):
    %e = arith.cmpi eq, %a, %b : i64
    linalg.yield %e : i1
  } -> tensor<32x512xi1>
  %f_init = tensor.empty() : tensor<32x512xf32>
  %onehot = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%eq : tensor<32x512xi1>) outs(%f_init : tensor<32x512xf32>) {
  ^bb0(%a: i1, %out: f32):
    %f = arith.uitofp %a : i1 to f32
    linalg.yield %f : f32
  } -> tensor<32x512xf32>
  %t_init = tensor.empty() : tensor<512x32xf32>
  %t = linalg.transpose ins(%onehot : tensor<32x512xf32>) outs(%t_init : tensor<512x32xf32>) permutation = [1, 0]
  %zero = arith.constant 0.0 : f32
  %acc_init = tensor.empty() : tensor<512x16xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%acc_init : tensor<512x16xf32>) -> tensor<512x16xf32>
  %emb = linalg.matmul ins(%t, %rows : tensor<512x32xf32>, tensor<32x16xf32>) outs(%acc : tensor<512x16xf32>) -> tensor<512x16xf32>
  %sum_init = tensor.empty() : tensor<512x16xf32>
  %sum = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%head, %emb : tensor<512x16xf32>, tensor<512x16xf32>) outs(%sum_init : tensor<512x16xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<512x16xf32>
  %r = spmd.all_reduce %sum on @dp axes = [0] sum : tensor<512x16xf32> -> tensor<512x16xf32>
  return %r : tensor<512x16xf32>
}

// An untied embedding (select form, the row index from linalg.index): no
// all-reduce is left.
// CHECK-LABEL: func.func @untied
// CHECK: spmd.all_gather {{.*}} -> tensor<64x1xi64>
// CHECK: spmd.all_gather {{.*}} -> tensor<64x16xf32>
// CHECK: %[[EMB:.*]] = linalg.matmul {{.*}} tensor<512x64xf32>, tensor<64x16xf32>
// CHECK-NOT: spmd.all_reduce
// CHECK: return %[[EMB]]
func.func @untied(%ids: tensor<32x1xi64>, %rows: tensor<32x16xf32>) -> tensor<512x16xf32> {
  %f_init = tensor.empty() : tensor<32x512xf32>
  %onehot = linalg.generic {indexing_maps = [#tok, #id], iterator_types = ["parallel", "parallel"]} ins(%ids : tensor<32x1xi64>) outs(%f_init : tensor<32x512xf32>) {
  ^bb0(%a: i64, %out: f32):
    %i = linalg.index 1 : index
    %c = arith.index_cast %i : index to i64
    %e = arith.cmpi eq, %a, %c : i64
    %one = arith.constant 1.0 : f32
    %zero = arith.constant 0.0 : f32
    %f = arith.select %e, %one, %zero : f32
    linalg.yield %f : f32
  } -> tensor<32x512xf32>
  %t_init = tensor.empty() : tensor<512x32xf32>
  %t = linalg.transpose ins(%onehot : tensor<32x512xf32>) outs(%t_init : tensor<512x32xf32>) permutation = [1, 0]
  %zero = arith.constant 0.0 : f32
  %acc_init = tensor.empty() : tensor<512x16xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%acc_init : tensor<512x16xf32>) -> tensor<512x16xf32>
  %emb = linalg.matmul ins(%t, %rows : tensor<512x32xf32>, tensor<32x16xf32>) outs(%acc : tensor<512x16xf32>) -> tensor<512x16xf32>
  %r = spmd.all_reduce %emb on @dp axes = [0] sum : tensor<512x16xf32> -> tensor<512x16xf32>
  return %r : tensor<512x16xf32>
}

// Kept: the one-hot reads its token position (this rank's, not global).
// CHECK-LABEL: func.func @token_position
// CHECK-NOT: spmd.all_gather
// CHECK: spmd.all_reduce
func.func @token_position(%ids: tensor<32x1xi64>, %rows: tensor<32x16xf32>) -> tensor<512x16xf32> {
  %f_init = tensor.empty() : tensor<32x512xf32>
  %onehot = linalg.generic {indexing_maps = [#tok, #id], iterator_types = ["parallel", "parallel"]} ins(%ids : tensor<32x1xi64>) outs(%f_init : tensor<32x512xf32>) {
  ^bb0(%a: i64, %out: f32):
    %i = linalg.index 0 : index
    %c = arith.index_cast %i : index to i64
    %e = arith.cmpi eq, %a, %c : i64
    %f = arith.uitofp %e : i1 to f32
    linalg.yield %f : f32
  } -> tensor<32x512xf32>
  %t_init = tensor.empty() : tensor<512x32xf32>
  %t = linalg.transpose ins(%onehot : tensor<32x512xf32>) outs(%t_init : tensor<512x32xf32>) permutation = [1, 0]
  %zero = arith.constant 0.0 : f32
  %acc_init = tensor.empty() : tensor<512x16xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%acc_init : tensor<512x16xf32>) -> tensor<512x16xf32>
  %emb = linalg.matmul ins(%t, %rows : tensor<512x32xf32>, tensor<32x16xf32>) outs(%acc : tensor<512x16xf32>) -> tensor<512x16xf32>
  %r = spmd.all_reduce %emb on @dp axes = [0] sum : tensor<512x16xf32> -> tensor<512x16xf32>
  return %r : tensor<512x16xf32>
}

// Kept: the rows compared against come from an argument (may differ by
// rank), not an iota.
// CHECK-LABEL: func.func @rank_dependent_rows
// CHECK-NOT: spmd.all_gather
// CHECK: spmd.all_reduce
func.func @rank_dependent_rows(%ids: tensor<32x1xi64>, %vocab: tensor<1x512xi64>, %rows: tensor<32x16xf32>) -> tensor<512x16xf32> {
  %f_init = tensor.empty() : tensor<32x512xf32>
  %onehot = linalg.generic {indexing_maps = [#tok, #row, #id], iterator_types = ["parallel", "parallel"]} ins(%ids, %vocab : tensor<32x1xi64>, tensor<1x512xi64>) outs(%f_init : tensor<32x512xf32>) {
  ^bb0(%a: i64, %b: i64, %out: f32):
    %e = arith.cmpi eq, %a, %b : i64
    %f = arith.uitofp %e : i1 to f32
    linalg.yield %f : f32
  } -> tensor<32x512xf32>
  %t_init = tensor.empty() : tensor<512x32xf32>
  %t = linalg.transpose ins(%onehot : tensor<32x512xf32>) outs(%t_init : tensor<512x32xf32>) permutation = [1, 0]
  %zero = arith.constant 0.0 : f32
  %acc_init = tensor.empty() : tensor<512x16xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%acc_init : tensor<512x16xf32>) -> tensor<512x16xf32>
  %emb = linalg.matmul ins(%t, %rows : tensor<512x32xf32>, tensor<32x16xf32>) outs(%acc : tensor<512x16xf32>) -> tensor<512x16xf32>
  %r = spmd.all_reduce %emb on @dp axes = [0] sum : tensor<512x16xf32> -> tensor<512x16xf32>
  return %r : tensor<512x16xf32>
}

// Kept: a dense matmul (not a 0/1 mask), an average, and a gradient that
// gathering would move more bytes for (8 rows, 32 tokens of 16 columns).
// CHECK-LABEL: func.func @kept
// CHECK-NOT: spmd.all_gather
// CHECK-COUNT-3: spmd.all_reduce
func.func @kept(%x: tensor<32x512xf32>, %ids: tensor<32x1xi64>, %rows: tensor<32x16xf32>) -> (tensor<512x16xf32>, tensor<512x16xf32>, tensor<8x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %t_init = tensor.empty() : tensor<512x32xf32>
  %t = linalg.transpose ins(%x : tensor<32x512xf32>) outs(%t_init : tensor<512x32xf32>) permutation = [1, 0]
  %acc_init = tensor.empty() : tensor<512x16xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%acc_init : tensor<512x16xf32>) -> tensor<512x16xf32>
  %dense = linalg.matmul ins(%t, %rows : tensor<512x32xf32>, tensor<32x16xf32>) outs(%acc : tensor<512x16xf32>) -> tensor<512x16xf32>
  %r0 = spmd.all_reduce %dense on @dp axes = [0] sum : tensor<512x16xf32> -> tensor<512x16xf32>
  %f_init = tensor.empty() : tensor<32x512xf32>
  %onehot = linalg.generic {indexing_maps = [#tok, #id], iterator_types = ["parallel", "parallel"]} ins(%ids : tensor<32x1xi64>) outs(%f_init : tensor<32x512xf32>) {
  ^bb0(%a: i64, %out: f32):
    %i = linalg.index 1 : index
    %c = arith.index_cast %i : index to i64
    %e = arith.cmpi eq, %a, %c : i64
    %f = arith.uitofp %e : i1 to f32
    linalg.yield %f : f32
  } -> tensor<32x512xf32>
  %t2_init = tensor.empty() : tensor<512x32xf32>
  %t2 = linalg.transpose ins(%onehot : tensor<32x512xf32>) outs(%t2_init : tensor<512x32xf32>) permutation = [1, 0]
  %emb = linalg.matmul ins(%t2, %rows : tensor<512x32xf32>, tensor<32x16xf32>) outs(%acc : tensor<512x16xf32>) -> tensor<512x16xf32>
  %r1 = spmd.all_reduce %emb on @dp axes = [0] avg : tensor<512x16xf32> -> tensor<512x16xf32>
  %s_init = tensor.empty() : tensor<32x8xf32>
  %small = linalg.generic {indexing_maps = [#tok, #id], iterator_types = ["parallel", "parallel"]} ins(%ids : tensor<32x1xi64>) outs(%s_init : tensor<32x8xf32>) {
  ^bb0(%a: i64, %out: f32):
    %i = linalg.index 1 : index
    %c = arith.index_cast %i : index to i64
    %e = arith.cmpi eq, %a, %c : i64
    %f = arith.uitofp %e : i1 to f32
    linalg.yield %f : f32
  } -> tensor<32x8xf32>
  %t3_init = tensor.empty() : tensor<8x32xf32>
  %t3 = linalg.transpose ins(%small : tensor<32x8xf32>) outs(%t3_init : tensor<8x32xf32>) permutation = [1, 0]
  %acc3_init = tensor.empty() : tensor<8x16xf32>
  %acc3 = linalg.fill ins(%zero : f32) outs(%acc3_init : tensor<8x16xf32>) -> tensor<8x16xf32>
  %few = linalg.matmul ins(%t3, %rows : tensor<8x32xf32>, tensor<32x16xf32>) outs(%acc3 : tensor<8x16xf32>) -> tensor<8x16xf32>
  %r2 = spmd.all_reduce %few on @dp axes = [0] sum : tensor<8x16xf32> -> tensor<8x16xf32>
  return %r0, %r1, %r2 : tensor<512x16xf32>, tensor<512x16xf32>, tensor<8x16xf32>
}
