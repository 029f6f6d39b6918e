// RUN: spmd-opt %s --pass-pipeline='builtin.module(func.func(spmd-shard-embedding-gradients))' | FileCheck %s
// RUN: spmd-opt %s --pass-pipeline='builtin.module(func.func(spmd-shard-embedding-gradients))' | spmd-opt --spmd-lower-to-cpu | FileCheck %s --check-prefix=CPU

// A tied embedding's gradient (the one-hot of this rank's 32 token ids,
// transposed, times their rows, plus the head's dense gradient) padded from
// 510 to 512 rows and reduce-scattered over 2 ranks: the head's term is
// padded and reduce-scattered right where it is made; the ids and rows are
// all-gathered and this rank's 256 rows of the embedding term come from the
// one-hot of the 64 ids less the chunk's first row.
spmd.mesh @dp(shape = 2)
#tok = affine_map<(d0, d1) -> (d0, 0)>
#row = affine_map<(d0, d1) -> (0, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>

// CHECK-LABEL: func.func @tied
// CHECK-SAME: (%[[IDS:.*]]: tensor<32x1xi64>, %[[ROWS:.*]]: tensor<32x16xf32>, %[[X:.*]]: tensor<510x16xf32>)
// CHECK: %[[HEAD:.*]] = linalg.generic {{.*}} ins(%[[X]] : tensor<510x16xf32>)
// CHECK: } -> tensor<510x16xf32>
// CHECK-NEXT: arith.constant 0.000000e+00 : f32
// CHECK-NEXT: %[[HP:.*]] = tensor.pad %[[HEAD]] low[0, 0] high[2, 0]
// CHECK: %[[H:.*]] = spmd.reduce_scatter %[[HP]] on @dp axes = [0] sum scatter_dim = 0 : tensor<512x16xf32> -> tensor<256x16xf32>
// CHECK: %[[RANK:.*]] = spmd.axis_index @dp axes = [0] : index
// CHECK: %[[FIRST:.*]] = arith.muli %[[RANK]], %c256
// CHECK: %[[ALLIDS:.*]] = spmd.all_gather %[[IDS]] on @dp axes = [0] gather_dim = 0 : tensor<32x1xi64> -> tensor<64x1xi64>
// CHECK: %[[OFFSET:.*]] = arith.index_cast %[[FIRST]] : index to i64
// CHECK: %[[LOCAL:.*]] = linalg.generic {{.*}} ins(%[[ALLIDS]] : tensor<64x1xi64>)
// CHECK: arith.subi %{{.*}}, %[[OFFSET]] : i64
// CHECK: %[[IOTA:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<1x256xi64>)
// CHECK: %[[EQ:.*]] = linalg.generic {{.*}} ins(%[[LOCAL]], %[[IOTA]] : tensor<64x1xi64>, tensor<1x256xi64>) outs(%{{.*}} : tensor<64x256xi1>)
// CHECK: %[[ONEHOT:.*]] = linalg.generic {{.*}} ins(%[[EQ]] : tensor<64x256xi1>) outs(%{{.*}} : tensor<64x256xf32>)
// CHECK: %[[T:.*]] = linalg.transpose ins(%[[ONEHOT]] : tensor<64x256xf32>) outs(%{{.*}} : tensor<256x64xf32>)
// CHECK: %[[ALLROWS:.*]] = spmd.all_gather %[[ROWS]] on @dp axes = [0] gather_dim = 0 : tensor<32x16xf32> -> tensor<64x16xf32>
// CHECK: %[[EMB:.*]] = linalg.matmul ins(%[[T]], %[[ALLROWS]] : tensor<256x64xf32>, tensor<64x16xf32>) outs(%{{.*}} : tensor<256x16xf32>)
// CHECK: %[[SUM:.*]] = linalg.generic {{.*}} ins(%[[H]], %[[EMB]] : tensor<256x16xf32>, tensor<256x16xf32>) outs(%{{.*}} : tensor<256x16xf32>)
// CHECK-NOT: spmd.reduce_scatter
// CHECK: return %[[SUM]]
// The CPU lowering scatters the gathered rows that fall in the chunk: no
// GEMM left.
// CPU-LABEL: llvm.func @tied
// CPU-NOT: spmdSgemm
// CPU: llvm.return
func.func @tied(%ids: tensor<32x1xi64>, %rows: tensor<32x16xf32>,
                %x: tensor<510x16xf32>) -> tensor<256x16xf32> {
  %head_init = tensor.empty() : tensor<510x16xf32>
  %head = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<510x16xf32>) outs(%head_init : tensor<510x16xf32>) {
  ^bb0(%a: f32, %out: f32):
    %m = arith.mulf %a, %a : f32
    linalg.yield %m : f32
  } -> tensor<510x16xf32>
  %iota_init = tensor.empty() : tensor<1x510xi64>
  %iota = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]} outs(%iota_init : tensor<1x510xi64>) {
  ^bb0(%out: i64):
    %i = linalg.index 1 : index
    %c = arith.index_cast %i : index to i64
    linalg.yield %c : i64
  } -> tensor<1x510xi64>
  %eq_init = tensor.empty() : tensor<32x510xi1>
  %eq = linalg.generic {indexing_maps = [#tok, #row, #id], iterator_types = ["parallel", "parallel"]} ins(%ids, %iota : tensor<32x1xi64>, tensor<1x510xi64>) outs(%eq_init : tensor<32x510xi1>) {
  ^bb0(%a: i64, %b: i64, %out: i1):
    %e = arith.cmpi eq, %a, %b : i64
    linalg.yield %e : i1
  } -> tensor<32x510xi1>
  %f_init = tensor.empty() : tensor<32x510xf32>
  %onehot = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%eq : tensor<32x510xi1>) outs(%f_init : tensor<32x510xf32>) {
  ^bb0(%a: i1, %out: f32):
    %f = arith.uitofp %a : i1 to f32
    linalg.yield %f : f32
  } -> tensor<32x510xf32>
  %t_init = tensor.empty() : tensor<510x32xf32>
  %t = linalg.transpose ins(%onehot : tensor<32x510xf32>) outs(%t_init : tensor<510x32xf32>) permutation = [1, 0]
  %zero = arith.constant 0.0 : f32
  %acc_init = tensor.empty() : tensor<510x16xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%acc_init : tensor<510x16xf32>) -> tensor<510x16xf32>
  %emb = linalg.matmul ins(%t, %rows : tensor<510x32xf32>, tensor<32x16xf32>) outs(%acc : tensor<510x16xf32>) -> tensor<510x16xf32>
  %sum_init = tensor.empty() : tensor<510x16xf32>
  %sum = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%head, %emb : tensor<510x16xf32>, tensor<510x16xf32>) outs(%sum_init : tensor<510x16xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<510x16xf32>
  %pz = arith.constant 0.0 : f32
  %p = tensor.pad %sum low[0, 0] high[2, 0] {
  ^bb0(%i: index, %j: index):
    tensor.yield %pz : f32
  } : tensor<510x16xf32> to tensor<512x16xf32>
  %r = spmd.reduce_scatter %p on @dp axes = [0] sum scatter_dim = 0 : tensor<512x16xf32> -> tensor<256x16xf32>
  return %r : tensor<256x16xf32>
}

// An untied embedding (select form, the row index from linalg.index), even
// rows: no reduce-scatter is left.
// CHECK-LABEL: func.func @untied
// CHECK: spmd.all_gather {{.*}} -> tensor<64x1xi64>
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<64x256xf32>)
// CHECK: spmd.all_gather {{.*}} -> tensor<64x16xf32>
// CHECK: %[[EMB:.*]] = linalg.matmul {{.*}} tensor<256x64xf32>, tensor<64x16xf32>
// CHECK-NOT: spmd.reduce_scatter
// CHECK: return %[[EMB]]
func.func @untied(%ids: tensor<32x1xi64>, %rows: tensor<32x16xf32>) -> tensor<256x16xf32> {
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
  %r = spmd.reduce_scatter %emb on @dp axes = [0] sum scatter_dim = 0 : tensor<512x16xf32> -> tensor<256x16xf32>
  return %r : tensor<256x16xf32>
}

// Kept: the one-hot reads its token position (this rank's, not global).
// CHECK-LABEL: func.func @token_position
// CHECK-NOT: spmd.all_gather
// CHECK: spmd.reduce_scatter
func.func @token_position(%ids: tensor<32x1xi64>, %rows: tensor<32x16xf32>) -> tensor<256x16xf32> {
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
  %r = spmd.reduce_scatter %emb on @dp axes = [0] sum scatter_dim = 0 : tensor<512x16xf32> -> tensor<256x16xf32>
  return %r : tensor<256x16xf32>
}

// Kept: a padding_idx mask (ids != 0) beside the equality; shifted ids
// would compare against the wrong row.
// CHECK-LABEL: func.func @padding_idx
// CHECK-NOT: spmd.all_gather
// CHECK: spmd.reduce_scatter
func.func @padding_idx(%ids: tensor<32x1xi64>, %rows: tensor<32x16xf32>) -> tensor<256x16xf32> {
  %f_init = tensor.empty() : tensor<32x512xf32>
  %onehot = linalg.generic {indexing_maps = [#tok, #id], iterator_types = ["parallel", "parallel"]} ins(%ids : tensor<32x1xi64>) outs(%f_init : tensor<32x512xf32>) {
  ^bb0(%a: i64, %out: f32):
    %i = linalg.index 1 : index
    %c = arith.index_cast %i : index to i64
    %e = arith.cmpi eq, %a, %c : i64
    %z = arith.constant 0 : i64
    %n = arith.cmpi ne, %a, %z : i64
    %m = arith.andi %e, %n : i1
    %f = arith.uitofp %m : i1 to f32
    linalg.yield %f : f32
  } -> tensor<32x512xf32>
  %t_init = tensor.empty() : tensor<512x32xf32>
  %t = linalg.transpose ins(%onehot : tensor<32x512xf32>) outs(%t_init : tensor<512x32xf32>) permutation = [1, 0]
  %zero = arith.constant 0.0 : f32
  %acc_init = tensor.empty() : tensor<512x16xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%acc_init : tensor<512x16xf32>) -> tensor<512x16xf32>
  %emb = linalg.matmul ins(%t, %rows : tensor<512x32xf32>, tensor<32x16xf32>) outs(%acc : tensor<512x16xf32>) -> tensor<512x16xf32>
  %r = spmd.reduce_scatter %emb on @dp axes = [0] sum scatter_dim = 0 : tensor<512x16xf32> -> tensor<256x16xf32>
  return %r : tensor<256x16xf32>
}

// Kept: the reduce-scatter splits the columns, not the rows.
// CHECK-LABEL: func.func @columns
// CHECK-NOT: spmd.all_gather
// CHECK: spmd.reduce_scatter {{.*}} scatter_dim = 1
func.func @columns(%ids: tensor<32x1xi64>, %rows: tensor<32x16xf32>) -> tensor<512x8xf32> {
  %f_init = tensor.empty() : tensor<32x512xf32>
  %onehot = linalg.generic {indexing_maps = [#tok, #id], iterator_types = ["parallel", "parallel"]} ins(%ids : tensor<32x1xi64>) outs(%f_init : tensor<32x512xf32>) {
  ^bb0(%a: i64, %out: f32):
    %i = linalg.index 1 : index
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
  %r = spmd.reduce_scatter %emb on @dp axes = [0] sum scatter_dim = 1 : tensor<512x16xf32> -> tensor<512x8xf32>
  return %r : tensor<512x8xf32>
}
