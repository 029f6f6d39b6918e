// RUN: spmd-opt %s --spmd-print-sharding-rules --split-input-file -verify-diagnostics -o /dev/null

// Every op kind's sharding rule (ShardingRuleOpInterface), one case each, as
// Shardy's op_sharding_rule_registry.mlir lists its registry: factors per
// tensor dimension (`-`: none), factor sizes and limits, linear operand
// sets. See the pass description for the notation.

#id2 = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @linalg(%a: tensor<8x4xf32>, %b: tensor<4x2xf32>, %c: tensor<8x2xf32>, %v: tensor<8xf32>) {
  // A contraction: the reduction factor combines by sum; linear in each input.
  // expected-remark @below {{sharding rule: ([f0, f2], [f2, f1], [f0, f1]) -> ([f0, f1]) {f0 = 8, f1 = 2, f2 = 4 reduction sum}; linear in {0}, {1}}}
  %mm = linalg.matmul ins(%a, %b : tensor<8x4xf32>, tensor<4x2xf32>) outs(%c : tensor<8x2xf32>) -> tensor<8x2xf32>
  // A row maximum: the combiner read off the payload.
  // expected-remark @below {{sharding rule: ([f0, f1], [f0]) -> ([f0]) {f0 = 8, f1 = 4 reduction max}}}
  %max = linalg.generic {indexing_maps = [#id2, #row], iterator_types = ["parallel", "reduction"]} ins(%a : tensor<8x4xf32>) outs(%v : tensor<8xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %r = arith.maximumf %x, %acc : f32
    linalg.yield %r : f32
  } -> tensor<8xf32>
  // A reduction whose payload is no known combiner: never sharded.
  // expected-remark @below {{sharding rule: ([f0, f1], [f0]) -> ([f0]) {f0 = 8, f1 = 4 reduction no combiner}}}
  %last = linalg.generic {indexing_maps = [#id2, #row], iterator_types = ["parallel", "reduction"]} ins(%a : tensor<8x4xf32>) outs(%v : tensor<8xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %r = math.exp %x : f32
    linalg.yield %r : f32
  } -> tensor<8xf32>
  // A payload that reads its row's global position (an iota): that factor
  // is fixed.
  // expected-remark @below {{sharding rule: ([f0, f1]) -> ([f0, f1]) {f0 = 8 fixed, f1 = 2}}}
  %iota = linalg.generic {indexing_maps = [#id2], iterator_types = ["parallel", "parallel"]} outs(%c : tensor<8x2xf32>) {
  ^bb0(%o: f32):
    %i = linalg.index 0 : index
    %ii = arith.index_cast %i : index to i64
    %f = arith.sitofp %ii : i64 to f32
    linalg.yield %f : f32
  } -> tensor<8x2xf32>
  return
}

// -----

func.func @elementwise(%c: tensor<8x2xf32>, %d: tensor<8x2xf32>) {
  // expected-remark @below {{sharding rule: ([f0, f1], [f0, f1]) -> ([f0, f1]) {f0 = 8, f1 = 2}; linear in {0, 1}}}
  %add = arith.addf %c, %d : tensor<8x2xf32>
  // expected-remark @below {{sharding rule: ([f0, f1], [f0, f1]) -> ([f0, f1]) {f0 = 8, f1 = 2}; linear in {0}, {1}}}
  %mul = arith.mulf %c, %d : tensor<8x2xf32>
  // expected-remark @below {{sharding rule: ([f0, f1]) -> ([f0, f1]) {f0 = 8, f1 = 2}}}
  %ex = math.exp %c : tensor<8x2xf32>
  // A splat constant is whatever its users need; a dense one is replicated.
  // expected-remark @below {{sharding rule: () -> ([f0, f1]) {f0 = 8, f1 = 2}}}
  %splat = arith.constant dense<1.0> : tensor<8x2xf32>
  // expected-remark @below {{sharding rule: none}}
  %dense = arith.constant dense<[1.0, 2.0]> : tensor<2xf32>
  return
}

// -----

func.func @tensor(%a: tensor<8x4xf32>, %c: tensor<8x2xf32>, %t: tensor<32xf32>) {
  %cst = arith.constant 0.0 : f32
  // expected-remark @below {{sharding rule: () -> ([f0, f1]) {f0 = 8, f1 = 2}}}
  %e = tensor.empty() : tensor<8x2xf32>
  // expected-remark @below {{sharding rule: ([f0, f1]) -> ([f0, f1]) {f0 = ?, f1 = 2}; linear in {0}}}
  %cast = tensor.cast %c : tensor<8x2xf32> to tensor<?x2xf32>
  // Reshapes: the outer dimension of a split or merge, evenly divisible.
  // expected-remark @below {{sharding rule: ([f0]) -> ([f0, -]) {f0 = 4 even}; linear in {0}}}
  %exp = tensor.expand_shape %t [[0, 1]] output_shape [4, 8] : tensor<32xf32> into tensor<4x8xf32>
  // expected-remark @below {{sharding rule: ([f0, -]) -> ([f0]) {f0 = 8 even}; linear in {0}}}
  %col = tensor.collapse_shape %a [[0, 1]] : tensor<8x4xf32> into tensor<32xf32>
  // Leading unit dimensions of a group do not change the layout: the
  // factor is on the first dimension that is not 1.
  // expected-remark @below {{sharding rule: ([f0]) -> ([-, f0, -]) {f0 = 8 even}; linear in {0}}}
  %unit = tensor.expand_shape %t [[0, 1, 2]] output_shape [1, 8, 4] : tensor<32xf32> into tensor<1x8x4xf32>
  // Slices, pads and concats: the dimensions they take whole.
  // expected-remark @below {{sharding rule: ([f0, -]) -> ([f0, -]) {f0 = 8, f1 = 4}; linear in {0}}}
  %sl = tensor.extract_slice %a[0, 0] [8, 2] [1, 1] : tensor<8x4xf32> to tensor<8x2xf32>
  // expected-remark @below {{sharding rule: ([f0, -], [f0, -]) -> ([f0, -]) {f0 = 8, f1 = 4}; linear in {0, 1}}}
  %ins = tensor.insert_slice %sl into %a[0, 2] [8, 2] [1, 1] : tensor<8x2xf32> into tensor<8x4xf32>
  // expected-remark @below {{sharding rule: ([f0, -], [f0, -]) -> ([f0, -]) {f0 = 8, f1 = 8}; linear in {0, 1}}}
  %cat = tensor.concat dim(1) %a, %a : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x8xf32>
  // expected-remark @below {{sharding rule: ([f0, -]) -> ([f0, -]) {f0 = 8, f1 = 6}; linear in {0}}}
  %pad = tensor.pad %a low[0, 1] high[0, 1] {
  ^bb0(%i: index, %j: index):
    tensor.yield %cst : f32
  } : tensor<8x4xf32> to tensor<8x6xf32>
  return
}

// -----

// Foreach and optimizer ops: one factor group per entry, chosen separately.
func.func @entries(%a: tensor<8x4xf32>, %v: tensor<8xf32>) {
  // expected-remark @below {{sharding rule: ([f0, f1], [f2], [f0, f1], [f2]) -> ([f0, f1], [f2]) {f0 = 8 group 0, f1 = 4 group 0, f2 = 8 group 1}}}
  %fe:2 = spmd.foreach_add [%a, %v], [%a, %v] : tensor<8x4xf32>, tensor<8xf32>
  // expected-remark @below {{sharding rule: ([f0, f1], [f2], [f0, f1], [f2]) -> ([f0, f1], [f2]) {f0 = 8 group 0, f1 = 4 group 0, f2 = 8 group 1}}}
  %sgd:2 = spmd.sgd params [%a, %v] grads [%a, %v] {lr = 0.1} : tensor<8x4xf32>, tensor<8xf32>
  return
}

// -----

// Attention: batch and heads; a broadcast mask dimension has no factor; the
// gradients are linear in the output's gradient.
func.func @attention(%q: tensor<2x4x6x8xf32>, %m: tensor<2x1x1x6xf32>) {
  // expected-remark @below {{sharding rule: ([f0, f1, -, -], [f0, f1, -, -], [f0, f1, -, -], [f0, -, -, -]) -> ([f0, f1, -, -], [f0, f1, -]) {f0 = 2, f1 = 4}}}
  %o, %l = spmd.attention %q, %q, %q mask %m {scale = 0.5 : f64} : tensor<2x4x6x8xf32>, tensor<2x4x6x8xf32>, tensor<2x4x6x8xf32>, tensor<2x1x1x6xf32> -> tensor<2x4x6x8xf32>, tensor<2x4x6xf32>
  // expected-remark @below {{sharding rule: ([f0, f1, -, -], [f0, f1, -, -], [f0, f1, -, -], [f0, f1, -, -], [f0, f1, -, -], [f0, f1, -]) -> ([f0, f1, -, -], [f0, f1, -, -], [f0, f1, -, -]) {f0 = 2, f1 = 4}; linear in {0}}}
  %dq:3 = spmd.attention_grad %q, %q, %q, %q, %o, %l {causal, scale = 0.5 : f64} : tensor<2x4x6x8xf32>, tensor<2x4x6x8xf32>, tensor<2x4x6x8xf32>, tensor<2x4x6x8xf32>, tensor<2x4x6x8xf32>, tensor<2x4x6xf32>
  return
}
