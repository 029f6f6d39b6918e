// RUN: spmd-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(spmd-vocab-parallel))' | FileCheck %s
// RUN: spmd-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(spmd-vocab-parallel), spmd-distribute)' | FileCheck %s --check-prefix=LOCAL

#x = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#tok = affine_map<(d0, d1) -> (d0, 0)>
#cls = affine_map<(d0, d1) -> (0, d1)>
#iota = affine_map<(d0) -> (d0)>

// A tied output layer over a vocabulary of 64 stored by rows (fully_shard:
// the bridge gathers it before its first use), its loss's row maximum and
// pick of the target, and the embedding's gradient. The tokens are
// gathered instead of the weight: the head reads the stored rows, its
// logits and the one-hots over the vocabulary are sharded along the
// classes, the ids and the embedding gradient's rows are whole.
// CHECK-LABEL: func.func @tied_head
// CHECK-SAME: (%[[H:.*]]: tensor<8x8xf32> {{.*}}, %[[T:.*]]: tensor<8x1xi64> {{.*}}, %[[G:.*]]: tensor<8x8xf32> {{.*}}, %[[IDS:.*]]: tensor<8xi64> {{.*}})
// CHECK: %[[HW:.*]] = spmd.redistribute %[[H]] to <@dp, [replicate]> : tensor<8x8xf32>
// CHECK: %[[W:.*]] = spmd.load @wte
// CHECK: %[[WHOLE:.*]] = spmd.redistribute %[[W]] to <@dp, [replicate]>
// CHECK: linalg.transpose ins(%[[W]] : tensor<64x8xf32>)
// CHECK: %[[L:.*]] = linalg.matmul ins(%[[HW]], %{{.*}} : tensor<8x8xf32>, tensor<8x64xf32>)
// CHECK: %[[LS:.*]] = spmd.annotate %[[L]] to <@dp, [shard<1>]> : tensor<8x64xf32>
// CHECK: linalg.generic {{.*}} ins(%[[LS]] : tensor<8x64xf32>)
// CHECK: %[[TW:.*]] = spmd.redistribute %[[T]] to <@dp, [replicate]> : tensor<8x1xi64>
// CHECK: %[[HIT:.*]] = linalg.generic {{.*}} ins(%[[TW]], %{{.*}} : tensor<8x1xi64>, tensor<1x64xi64>)
// CHECK: spmd.annotate %[[HIT]] to <@dp, [shard<1>]> : tensor<8x64xi1>
// CHECK: %[[GW:.*]] = spmd.redistribute %[[G]] to <@dp, [replicate]> : tensor<8x8xf32>
// CHECK: linalg.matmul ins(%{{.*}}, %[[GW]] : tensor<64x8xf32>, tensor<8x8xf32>)
// The embedding's lookup reads the stored rows too: the ids (checked as
// the lookup checked them) against every position, as floats, times the
// rows; the gathered weight is left without a reader.
// CHECK: %[[CHECKED:.*]] = linalg.generic {{.*}} ins(%[[IDS]] : tensor<8xi64>)
// CHECK: cf.assert {{.*}} "index must be larger or equal to 0"
// CHECK: cf.assert {{.*}} "index must be smaller than dim size"
// CHECK: %[[COL:.*]] = tensor.expand_shape %[[CHECKED]] {{.*}} into tensor<8x1xi64>
// CHECK: %[[CW:.*]] = spmd.redistribute %[[COL]] to <@dp, [replicate]> : tensor<8x1xi64>
// CHECK: %[[LHIT:.*]] = linalg.generic {{.*}} ins(%[[CW]], %{{.*}} : tensor<8x1xi64>, tensor<1x64xi64>)
// CHECK: %[[LHITS:.*]] = spmd.annotate %[[LHIT]] to <@dp, [shard<1>]> : tensor<8x64xi1>
// CHECK: %[[LOH:.*]] = linalg.generic {{.*}} ins(%[[LHITS]] : tensor<8x64xi1>)
// CHECK: arith.uitofp
// CHECK: linalg.matmul ins(%[[LOH]], %[[W]] : tensor<8x64xf32>, tensor<64x8xf32>)
// CHECK-NOT: tensor.extract %[[WHOLE]]
//
// Distributed: no collective of the weight's size; the row maximum stays a
// partial max (returned so here); the gradients are each rank's rows.
// LOCAL-LABEL: func.func @tied_head
// LOCAL-SAME: -> (tensor<8xf32> {spmd.spec = #spmd.spec<@dp, [partial<max>]>}
// LOCAL-NOT: -> tensor<64x8xf32>
// LOCAL: %[[HW:.*]] = spmd.all_gather %{{.*}} gather_dim = 0 : tensor<4x8xf32> -> tensor<8x8xf32>
// LOCAL: %[[W:.*]] = spmd.load @wte : tensor<32x8xf32>
// LOCAL: linalg.transpose ins(%[[W]] : tensor<32x8xf32>)
// LOCAL: linalg.matmul ins(%[[HW]], %{{.*}} : tensor<8x8xf32>, tensor<8x32xf32>)
// LOCAL: arith.maximumf
// LOCAL: spmd.all_gather %{{.*}} gather_dim = 0 : tensor<4x1xi64> -> tensor<8x1xi64>
// LOCAL: spmd.local_slice %{{.*}} dim = 1 : tensor<1x64xi64> -> tensor<1x32xi64>
// LOCAL: spmd.all_gather %{{.*}} gather_dim = 0 : tensor<4x8xf32> -> tensor<8x8xf32>
// LOCAL-NOT: spmd.reduce_scatter
// LOCAL: %[[DW:.*]] = linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<32x8xf32>, tensor<8x8xf32>)
// LOCAL: spmd.store %[[DW]] to @wte.grad : tensor<32x8xf32>
// The lookup: each rank's rows' part for every token, summed and
// scattered back to the batch.
// LOCAL: %[[PART:.*]] = linalg.matmul ins(%{{.*}}, %[[W]] : tensor<8x32xf32>, tensor<32x8xf32>)
// LOCAL: spmd.reduce_scatter %[[PART]] on @dp axes = [0] sum scatter_dim = 0 : tensor<8x8xf32> -> tensor<4x8xf32>
// LOCAL-NOT: -> tensor<64x8xf32>
spmd.mesh @dp(shape = 2)
spmd.state @wte : tensor<64x8xf32> role = param spec = <@dp, [shard<0>]>
spmd.state @wte.grad : tensor<64x8xf32> role = gradient spec = <@dp, [shard<0>]>
func.func @tied_head(%h: tensor<8x8xf32> {spmd.spec = #spmd.spec<@dp, [shard<0>]>},
                     %t: tensor<8x1xi64> {spmd.spec = #spmd.spec<@dp, [shard<0>]>},
                     %g: tensor<8x8xf32> {spmd.spec = #spmd.spec<@dp, [shard<0>]>},
                     %ids: tensor<8xi64> {spmd.spec = #spmd.spec<@dp, [shard<0>]>})
    -> (tensor<8xf32>, tensor<8x8xf32> {spmd.spec = #spmd.spec<@dp, [shard<0>]>}) {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %w = spmd.load @wte : tensor<64x8xf32>
  %whole = spmd.redistribute %w to <@dp, [replicate]> : tensor<64x8xf32>
  %et = tensor.empty() : tensor<8x64xf32>
  %wt = linalg.transpose ins(%whole : tensor<64x8xf32>) outs(%et : tensor<8x64xf32>) permutation = [1, 0]
  %el = tensor.empty() : tensor<8x64xf32>
  %zl = linalg.fill ins(%zero : f32) outs(%el : tensor<8x64xf32>) -> tensor<8x64xf32>
  %logits = linalg.matmul ins(%h, %wt : tensor<8x8xf32>, tensor<8x64xf32>) outs(%zl : tensor<8x64xf32>) -> tensor<8x64xf32>
  %em = tensor.empty() : tensor<8xf32>
  %fm = linalg.fill ins(%ninf : f32) outs(%em : tensor<8xf32>) -> tensor<8xf32>
  %max = linalg.generic {indexing_maps = [#x, #row], iterator_types = ["parallel", "reduction"]}
      ins(%logits : tensor<8x64xf32>) outs(%fm : tensor<8xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %m = arith.maximumf %in, %acc : f32
    linalg.yield %m : f32
  } -> tensor<8xf32>
  %ei = tensor.empty() : tensor<64xi64>
  %iota = linalg.generic {indexing_maps = [#iota], iterator_types = ["parallel"]} outs(%ei : tensor<64xi64>) {
  ^bb0(%out: i64):
    %i = linalg.index 0 : index
    %v = arith.index_cast %i : index to i64
    linalg.yield %v : i64
  } -> tensor<64xi64>
  %classes = tensor.expand_shape %iota [[0, 1]] output_shape [1, 64] : tensor<64xi64> into tensor<1x64xi64>
  %eh = tensor.empty() : tensor<8x64xi1>
  %hit = linalg.generic {indexing_maps = [#tok, #cls, #x], iterator_types = ["parallel", "parallel"]}
      ins(%t, %classes : tensor<8x1xi64>, tensor<1x64xi64>) outs(%eh : tensor<8x64xi1>) {
  ^bb0(%a: i64, %b: i64, %out: i1):
    %eq = arith.cmpi eq, %a, %b : i64
    linalg.yield %eq : i1
  } -> tensor<8x64xi1>
  %fp = tensor.empty() : tensor<8x64xf32>
  %oh = linalg.generic {indexing_maps = [#x, #x], iterator_types = ["parallel", "parallel"]}
      ins(%hit : tensor<8x64xi1>) outs(%fp : tensor<8x64xf32>) {
  ^bb0(%a: i1, %out: f32):
    %f = arith.uitofp %a : i1 to f32
    linalg.yield %f : f32
  } -> tensor<8x64xf32>
  %eo = tensor.empty() : tensor<64x8xf32>
  %oht = linalg.transpose ins(%oh : tensor<8x64xf32>) outs(%eo : tensor<64x8xf32>) permutation = [1, 0]
  %zg = linalg.fill ins(%zero : f32) outs(%eo : tensor<64x8xf32>) -> tensor<64x8xf32>
  %dw = linalg.matmul ins(%oht, %g : tensor<64x8xf32>, tensor<8x8xf32>) outs(%zg : tensor<64x8xf32>) -> tensor<64x8xf32>
  spmd.store %dw to @wte.grad : tensor<64x8xf32>
  %ee = tensor.empty() : tensor<8x8xf32>
  %emb = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, #x], iterator_types = ["parallel", "parallel"]}
      ins(%ids : tensor<8xi64>) outs(%ee : tensor<8x8xf32>) {
  ^bb0(%id: i64, %out: f32):
    %r = arith.index_cast %id : i64 to index
    %c = linalg.index 1 : index
    %v = tensor.extract %whole[%r, %c] : tensor<64x8xf32>
    linalg.yield %v : f32
  } -> tensor<8x8xf32>
  return %max, %emb : tensor<8xf32>, tensor<8x8xf32>
}

// -----

#x = affine_map<(d0, d1) -> (d0, d1)>

// A wide layer inside the model (a fused QKV, an MLP's first projection):
// its output is not normalized over its columns, so it stays
// data-parallel, whatever its size against the tokens'.
// CHECK-LABEL: func.func @wide_layer
// LOCAL-LABEL: func.func @wide_layer
// CHECK-NOT: spmd.annotate
// CHECK-NOT: spmd.redistribute %arg0
spmd.mesh @dp(shape = 2)
spmd.state @fc : tensor<64x8xf32> role = param spec = <@dp, [shard<0>]>
func.func @wide_layer(%h: tensor<8x8xf32> {spmd.spec = #spmd.spec<@dp, [shard<0>]>}) -> tensor<8x64xf32> {
  %zero = arith.constant 0.0 : f32
  %w = spmd.load @fc : tensor<64x8xf32>
  %whole = spmd.redistribute %w to <@dp, [replicate]> : tensor<64x8xf32>
  %et = tensor.empty() : tensor<8x64xf32>
  %wt = linalg.transpose ins(%whole : tensor<64x8xf32>) outs(%et : tensor<8x64xf32>) permutation = [1, 0]
  %zl = linalg.fill ins(%zero : f32) outs(%et : tensor<8x64xf32>) -> tensor<8x64xf32>
  %y = linalg.matmul ins(%h, %wt : tensor<8x8xf32>, tensor<8x64xf32>) outs(%zl : tensor<8x64xf32>) -> tensor<8x64xf32>
  %g = linalg.generic {indexing_maps = [#x, #x], iterator_types = ["parallel", "parallel"]}
      ins(%y : tensor<8x64xf32>) outs(%et : tensor<8x64xf32>) {
  ^bb0(%a: f32, %out: f32):
    %t = math.tanh %a : f32
    linalg.yield %t : f32
  } -> tensor<8x64xf32>
  return %g : tensor<8x64xf32>
}

// -----

#x = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>

// Too few classes for the tokens (16 rows against 32 tokens): gathering
// the weight moves fewer bytes than gathering the tokens.
// CHECK-LABEL: func.func @small_vocabulary
// CHECK-NOT: spmd.annotate
spmd.mesh @dp(shape = 2)
spmd.state @wte : tensor<16x8xf32> role = param spec = <@dp, [shard<0>]>
func.func @small_vocabulary(%h: tensor<32x8xf32> {spmd.spec = #spmd.spec<@dp, [shard<0>]>}) -> tensor<32xf32> {
  %zero = arith.constant 0.0 : f32
  %w = spmd.load @wte : tensor<16x8xf32>
  %et = tensor.empty() : tensor<8x16xf32>
  %wt = linalg.transpose ins(%w : tensor<16x8xf32>) outs(%et : tensor<8x16xf32>) permutation = [1, 0]
  %el = tensor.empty() : tensor<32x16xf32>
  %zl = linalg.fill ins(%zero : f32) outs(%el : tensor<32x16xf32>) -> tensor<32x16xf32>
  %logits = linalg.matmul ins(%h, %wt : tensor<32x8xf32>, tensor<8x16xf32>) outs(%zl : tensor<32x16xf32>) -> tensor<32x16xf32>
  %es = tensor.empty() : tensor<32xf32>
  %fs = linalg.fill ins(%zero : f32) outs(%es : tensor<32xf32>) -> tensor<32xf32>
  %sum = linalg.generic {indexing_maps = [#x, #row], iterator_types = ["parallel", "reduction"]}
      ins(%logits : tensor<32x16xf32>) outs(%fs : tensor<32xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %in, %acc : f32
    linalg.yield %s : f32
  } -> tensor<32xf32>
  return %sum : tensor<32xf32>
}

// -----

#x = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>

// A weight sharded on a mesh of two axes (data and tensor parallel) is
// left to propagation (unsupported here).
// CHECK-LABEL: func.func @two_axes
// CHECK-NOT: spmd.annotate
spmd.mesh @m(shape = 2x2)
spmd.state @wte : tensor<64x8xf32> role = param spec = <@m, [shard<0>, replicate]>
func.func @two_axes(%h: tensor<8x8xf32> {spmd.spec = #spmd.spec<@m, [shard<0>, replicate]>}) -> tensor<8xf32> {
  %zero = arith.constant 0.0 : f32
  %w = spmd.load @wte : tensor<64x8xf32>
  %et = tensor.empty() : tensor<8x64xf32>
  %wt = linalg.transpose ins(%w : tensor<64x8xf32>) outs(%et : tensor<8x64xf32>) permutation = [1, 0]
  %zl = linalg.fill ins(%zero : f32) outs(%et : tensor<8x64xf32>) -> tensor<8x64xf32>
  %logits = linalg.matmul ins(%h, %wt : tensor<8x8xf32>, tensor<8x64xf32>) outs(%zl : tensor<8x64xf32>) -> tensor<8x64xf32>
  %es = tensor.empty() : tensor<8xf32>
  %fs = linalg.fill ins(%zero : f32) outs(%es : tensor<8xf32>) -> tensor<8xf32>
  %sum = linalg.generic {indexing_maps = [#x, #row], iterator_types = ["parallel", "reduction"]}
      ins(%logits : tensor<8x64xf32>) outs(%fs : tensor<8xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %in, %acc : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  return %sum : tensor<8xf32>
}
