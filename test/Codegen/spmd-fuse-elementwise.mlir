// RUN: spmd-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(spmd-fuse-elementwise))' | FileCheck %s

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#col = affine_map<(d0, d1) -> (d1)>

// exp feeds only the row sum: one loop nest; the sum keeps its own init.
// CHECK-LABEL: func.func @into_reduction
// CHECK-COUNT-1: linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "reduction"]
// CHECK: math.exp
// CHECK: arith.addf
// CHECK-NOT: linalg.generic
func.func @into_reduction(%x: tensor<8x16xf32>) -> tensor<8xf32> {
  %e0 = tensor.empty() : tensor<8x16xf32>
  %e = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<8x16xf32>) outs(%e0 : tensor<8x16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = math.exp %in : f32
    linalg.yield %r : f32
  } -> tensor<8x16xf32>
  %zero = arith.constant 0.0 : f32
  %s0 = tensor.empty() : tensor<8xf32>
  %z = linalg.fill ins(%zero : f32) outs(%s0 : tensor<8xf32>) -> tensor<8xf32>
  %s = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%e : tensor<8x16xf32>) outs(%z : tensor<8xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %r = arith.addf %in, %acc : f32
    linalg.yield %r : f32
  } -> tensor<8xf32>
  return %s : tensor<8xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>

// A producer with two users is computed once, in the first user's loop
// nest, which yields it for the second; the second, a cheap op (one
// input, one arith op) that its own readers would recompute, is not fused
// into (it would become one more stored result). The producer the
// consumer broadcasts is not fused (computed again for every row). (The
// same value read twice by one consumer is one use.)
// CHECK-LABEL: func.func @kept
// CHECK: %[[EV:.*]] = linalg.generic
// CHECK-SAME: ins(%arg1 : tensor<16xf32>)
// CHECK: math.exp
// CHECK: %[[BOTH:.*]]:2 = linalg.generic
// CHECK-SAME: ins(%arg0, %[[EV]] : tensor<8x16xf32>, tensor<16xf32>)
// CHECK: %[[EXP:.*]] = math.exp
// CHECK: linalg.yield %[[EXP]], %{{.*}} : f32, f32
// CHECK: %[[NEG:.*]] = linalg.generic
// CHECK-SAME: ins(%[[BOTH]]#0 : tensor<8x16xf32>)
// CHECK: arith.negf
// CHECK-NOT: linalg.generic
// CHECK: return %[[BOTH]]#1, %[[NEG]]
func.func @kept(%x: tensor<8x16xf32>, %v: tensor<16xf32>) -> (tensor<8x16xf32>, tensor<8x16xf32>) {
  %e0 = tensor.empty() : tensor<8x16xf32>
  %twice = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<8x16xf32>) outs(%e0 : tensor<8x16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = math.exp %in : f32
    linalg.yield %r : f32
  } -> tensor<8x16xf32>
  %v0 = tensor.empty() : tensor<16xf32>
  %ev = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%v : tensor<16xf32>) outs(%v0 : tensor<16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = math.exp %in : f32
    linalg.yield %r : f32
  } -> tensor<16xf32>
  %a = linalg.generic {indexing_maps = [#id, #id, #col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%twice, %twice, %ev : tensor<8x16xf32>, tensor<8x16xf32>, tensor<16xf32>) outs(%e0 : tensor<8x16xf32>) {
  ^bb0(%in: f32, %in2: f32, %b: f32, %out: f32):
    %m = arith.mulf %in, %in2 : f32
    %r = arith.addf %m, %b : f32
    linalg.yield %r : f32
  } -> tensor<8x16xf32>
  %c = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%twice : tensor<8x16xf32>) outs(%e0 : tensor<8x16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.negf %in : f32
    linalg.yield %r : f32
  } -> tensor<8x16xf32>
  return %a, %c : tensor<8x16xf32>, tensor<8x16xf32>
}

// -----

// One zero fill that CSE shared between two matmuls becomes one fill per
// matmul, each right before it, on its own tensor.empty.
// CHECK-LABEL: func.func @fill_per_user
// CHECK: %[[E1:.*]] = tensor.empty() : tensor<4x4xf32>
// CHECK-NEXT: %[[F1:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[E1]] : tensor<4x4xf32>)
// CHECK-NEXT: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<4x4xf32>, tensor<4x4xf32>) outs(%[[F1]] : tensor<4x4xf32>)
// CHECK: %[[E2:.*]] = tensor.empty() : tensor<4x4xf32>
// CHECK-NEXT: %[[F2:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[E2]] : tensor<4x4xf32>)
// CHECK-NEXT: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<4x4xf32>, tensor<4x4xf32>) outs(%[[F2]] : tensor<4x4xf32>)
// CHECK-NOT: linalg.fill
func.func @fill_per_user(%a: tensor<4x4xf32>, %b: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x4xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
  %m1 = linalg.matmul ins(%a, %b : tensor<4x4xf32>, tensor<4x4xf32>) outs(%z : tensor<4x4xf32>) -> tensor<4x4xf32>
  %m2 = linalg.matmul ins(%b, %a : tensor<4x4xf32>, tensor<4x4xf32>) outs(%z : tensor<4x4xf32>) -> tensor<4x4xf32>
  return %m1, %m2 : tensor<4x4xf32>, tensor<4x4xf32>
}

// -----

#v = affine_map<(d0) -> (d0)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#column = affine_map<(d0, d1) -> (d0, 0)>
#broadcast_row = affine_map<(d0, d1) -> (0, d1)>

// torch.arange(16) viewed as 1 x 16 and compared with a column of targets
// (cross-entropy's one-hot): the iota reads nothing, so it is generated
// in the reshaped shape and recomputed inside the comparison, broadcast
// and all, instead of being stored once and read 8 times.
// CHECK-LABEL: func.func @generator
// CHECK-NOT: tensor.expand_shape
// CHECK: %[[T:.*]] = tensor.expand_shape %arg0
// CHECK-NOT: tensor.expand_shape
// CHECK: linalg.generic
// CHECK-SAME: ins(%[[T]] : tensor<8x1xi64>)
// CHECK: linalg.index 1
// CHECK: arith.cmpi eq
// CHECK-NOT: linalg.generic
func.func @generator(%targets: tensor<8xi64>) -> tensor<8x16xi1> {
  %i0 = tensor.empty() : tensor<16xi64>
  %iota = linalg.generic {indexing_maps = [#v], iterator_types = ["parallel"]}
      outs(%i0 : tensor<16xi64>) {
  ^bb0(%out: i64):
    %i = linalg.index 0 : index
    %c = arith.index_cast %i : index to i64
    linalg.yield %c : i64
  } -> tensor<16xi64>
  %row = tensor.expand_shape %iota [[0, 1]] output_shape [1, 16] : tensor<16xi64> into tensor<1x16xi64>
  %t = tensor.expand_shape %targets [[0, 1]] output_shape [8, 1] : tensor<8xi64> into tensor<8x1xi64>
  %e = tensor.empty() : tensor<8x16xi1>
  %eq = linalg.generic {indexing_maps = [#column, #broadcast_row, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%t, %row : tensor<8x1xi64>, tensor<1x16xi64>) outs(%e : tensor<8x16xi1>) {
  ^bb0(%a: i64, %b: i64, %out: i1):
    %r = arith.cmpi eq, %a, %b : i64
    linalg.yield %r : i1
  } -> tensor<8x16xi1>
  return %eq : tensor<8x16xi1>
}

// -----

#v = affine_map<(d0) -> (d0)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#broadcast = affine_map<(d0, d1) -> (d1)>

// A generator with transcendental math (a sinusoidal encoding) is computed
// once, not again for every row it is broadcast to.
// CHECK-LABEL: func.func @costly_generator
// CHECK: linalg.generic
// CHECK: math.sin
// CHECK: linalg.generic
// CHECK-NOT: math.sin
// CHECK: arith.addf
func.func @costly_generator(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %e0 = tensor.empty() : tensor<16xf32>
  %enc = linalg.generic {indexing_maps = [#v], iterator_types = ["parallel"]}
      outs(%e0 : tensor<16xf32>) {
  ^bb0(%out: f32):
    %i = linalg.index 0 : index
    %c = arith.index_cast %i : index to i64
    %f = arith.sitofp %c : i64 to f32
    %s = math.sin %f : f32
    linalg.yield %s : f32
  } -> tensor<16xf32>
  %e = tensor.empty() : tensor<8x16xf32>
  %sum = linalg.generic {indexing_maps = [#id2, #broadcast, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%x, %enc : tensor<8x16xf32>, tensor<16xf32>) outs(%e : tensor<8x16xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %r = arith.addf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<8x16xf32>
  return %sum : tensor<8x16xf32>
}

// -----

#id2 = affine_map<(d0, d1) -> (d0, d1)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#pos = affine_map<(d0, d1, d2) -> (d1, d2)>

// The position table's rows at torch.arange's ids (a gather whose indices
// come from its own loop indices, with its bounds checks) read through a
// broadcast over the batch: each reader loads the table's element instead
// of a stored copy, so the gather is recomputed in the add, and no copy
// is made. A gather left without readers by earlier rewrites stays as it
// is (it once crashed the per-reader cloning).
// CHECK-LABEL: func.func @gather_generator
// CHECK: linalg.generic
// CHECK-SAME: outs(%{{.*}} : tensor<6x8xf32>)
// CHECK: %[[SUM:.*]] = linalg.generic
// CHECK-SAME: ins(%arg0 : tensor<2x6x8xf32>)
// CHECK: cf.assert
// CHECK: tensor.extract %arg1
// CHECK: arith.addf
// CHECK-NOT: linalg.generic
// CHECK: return %[[SUM]]
func.func @gather_generator(%x: tensor<2x6x8xf32>, %table: tensor<16x8xf32>) -> tensor<2x6x8xf32> {
  %c16 = arith.constant 16 : index
  %e0 = tensor.empty() : tensor<6x8xf32>
  %dead = linalg.generic {indexing_maps = [#id2], iterator_types = ["parallel", "parallel"]}
      outs(%e0 : tensor<6x8xf32>) {
  ^bb0(%out: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %v = tensor.extract %table[%i, %j] : tensor<16x8xf32>
    linalg.yield %v : f32
  } -> tensor<6x8xf32>
  %rows = linalg.generic {indexing_maps = [#id2], iterator_types = ["parallel", "parallel"]}
      outs(%e0 : tensor<6x8xf32>) {
  ^bb0(%out: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %ok = arith.cmpi slt, %i, %c16 : index
    cf.assert %ok, "index must be smaller than dim size"
    %v = tensor.extract %table[%i, %j] : tensor<16x8xf32>
    linalg.yield %v : f32
  } -> tensor<6x8xf32>
  %e = tensor.empty() : tensor<2x6x8xf32>
  %sum = linalg.generic {indexing_maps = [#id3, #pos, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x, %rows : tensor<2x6x8xf32>, tensor<6x8xf32>) outs(%e : tensor<2x6x8xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %r = arith.addf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<2x6x8xf32>
  return %sum : tensor<2x6x8xf32>
}

// -----

#id2 = affine_map<(d0, d1) -> (d0, d1)>
#bias = affine_map<(d0, d1) -> (d1)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>

// nn.Linear's bias added to the matmul's rows (B*L x N), then viewed as
// B x L x N and read twice (GELU and its backward's input): the add is
// computed in the B x L x N shape, reading the matmul's rows through the
// reshape, so it has the iteration space of its readers (on buffers, the
// GPU fuses it with GELU into one kernel). The reshape moves to the
// matmul's result; the value, read twice, is computed once, in GELU's loop
// nest, which yields it too.
// CHECK-LABEL: func.func @elementwise_before_reshape
// CHECK: %[[ROWS:.*]] = tensor.expand_shape %arg0 {{\[\[}}0, 1], [2]] output_shape [4, 6, 32] : tensor<24x32xf32> into tensor<4x6x32xf32>
// CHECK: %[[BOTH:.*]]:2 = linalg.generic
// CHECK-SAME: ins(%[[ROWS]], %arg1 : tensor<4x6x32xf32>, tensor<32xf32>)
// CHECK: %[[SUM:.*]] = arith.addf
// CHECK: %[[GELU:.*]] = math.erf %[[SUM]]
// CHECK: linalg.yield %[[SUM]], %[[GELU]]
// CHECK-NOT: tensor.expand_shape
// CHECK: return %[[BOTH]]#1, %[[BOTH]]#0
func.func @elementwise_before_reshape(%mm: tensor<24x32xf32>, %b: tensor<32xf32>) -> (tensor<4x6x32xf32>, tensor<4x6x32xf32>) {
  %e = tensor.empty() : tensor<24x32xf32>
  %biased = linalg.generic {indexing_maps = [#id2, #bias, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%mm, %b : tensor<24x32xf32>, tensor<32xf32>) outs(%e : tensor<24x32xf32>) {
  ^bb0(%x: f32, %y: f32, %out: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<24x32xf32>
  %v = tensor.expand_shape %biased [[0, 1], [2]] output_shape [4, 6, 32] : tensor<24x32xf32> into tensor<4x6x32xf32>
  %e3 = tensor.empty() : tensor<4x6x32xf32>
  %g = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%v : tensor<4x6x32xf32>) outs(%e3 : tensor<4x6x32xf32>) {
  ^bb0(%x: f32, %out: f32):
    %r = math.erf %x : f32
    linalg.yield %r : f32
  } -> tensor<4x6x32xf32>
  return %g, %v : tensor<4x6x32xf32>, tensor<4x6x32xf32>
}

// -----

#v = affine_map<(d0) -> (d0)>

// Inside a chain of elementwise ops (dropout's Philox rounds, whose values
// are read by later rounds too) the last op is not expanded: its input is
// computed by a generic of the chain's shape, and computing the last op in
// another shape would split the chain into loop nests that no longer fuse.
// CHECK-LABEL: func.func @chain_before_reshape
// CHECK: %[[FIRST:.*]] = linalg.generic
// CHECK: arith.muli
// CHECK: %[[LAST:.*]] = linalg.generic
// CHECK-SAME: ins(%[[FIRST]] : tensor<128xi64>)
// CHECK: arith.addi
// CHECK: tensor.expand_shape %[[LAST]] {{\[\[}}0, 1]] output_shape [8, 16]
func.func @chain_before_reshape(%x: tensor<128xi64>) -> (tensor<8x16xi64>, tensor<128xi64>) {
  %e = tensor.empty() : tensor<128xi64>
  %first = linalg.generic {indexing_maps = [#v, #v], iterator_types = ["parallel"]}
      ins(%x : tensor<128xi64>) outs(%e : tensor<128xi64>) {
  ^bb0(%a: i64, %out: i64):
    %r = arith.muli %a, %a : i64
    linalg.yield %r : i64
  } -> tensor<128xi64>
  %last = linalg.generic {indexing_maps = [#v, #v], iterator_types = ["parallel"]}
      ins(%first : tensor<128xi64>) outs(%e : tensor<128xi64>) {
  ^bb0(%a: i64, %out: i64):
    %r = arith.addi %a, %a : i64
    linalg.yield %r : i64
  } -> tensor<128xi64>
  %v = tensor.expand_shape %last [[0, 1]] output_shape [8, 16] : tensor<128xi64> into tensor<8x16xi64>
  return %v, %first : tensor<8x16xi64>, tensor<128xi64>
}

// -----

// Cross-entropy's mask of the targets that are not ignore_index, read by the
// count of the mean and by the sum: cheap (one input, one compare), it is
// cloned for each reader and fused into both; nothing computes it alone.
// CHECK-LABEL: func.func @cheap_per_user
// CHECK: linalg.generic {{.*}} ins(%arg0 : tensor<24xi64>)
// CHECK: arith.cmpi ne
// CHECK: linalg.generic {{.*}} ins(%arg0, %arg1 : tensor<24xi64>, tensor<24xf32>)
// CHECK: arith.cmpi ne
// CHECK-NOT: linalg.generic
func.func @cheap_per_user(%t: tensor<24xi64>, %l: tensor<24xf32>) -> (tensor<i64>, tensor<f32>) {
  %e = tensor.empty() : tensor<24xi1>
  %ignore = arith.constant -100 : i64
  %valid = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%t : tensor<24xi64>) outs(%e : tensor<24xi1>) {
  ^bb0(%in: i64, %out: i1):
    %r = arith.cmpi ne, %in, %ignore : i64
    linalg.yield %r : i1
  } -> tensor<24xi1>
  %c0 = arith.constant 0 : i64
  %z = tensor.empty() : tensor<i64>
  %zc = linalg.fill ins(%c0 : i64) outs(%z : tensor<i64>) -> tensor<i64>
  %count = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>], iterator_types = ["reduction"]}
      ins(%valid : tensor<24xi1>) outs(%zc : tensor<i64>) {
  ^bb0(%in: i1, %acc: i64):
    %x = arith.extui %in : i1 to i64
    %r = arith.addi %x, %acc : i64
    linalg.yield %r : i64
  } -> tensor<i64>
  %f0 = arith.constant 0.0 : f32
  %zf = tensor.empty() : tensor<f32>
  %zs = linalg.fill ins(%f0 : f32) outs(%zf : tensor<f32>) -> tensor<f32>
  %sum = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>], iterator_types = ["reduction"]}
      ins(%valid, %l : tensor<24xi1>, tensor<24xf32>) outs(%zs : tensor<f32>) {
  ^bb0(%v: i1, %x: f32, %acc: f32):
    %n = arith.negf %x : f32
    %s = arith.select %v, %n, %f0 : f32
    %r = arith.addf %s, %acc : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  return %count, %sum : tensor<i64>, tensor<f32>
}

// -----

// The same mask also returned (a reader that is no generic): kept, and
// computed once.
// CHECK-LABEL: func.func @cheap_kept
// CHECK-COUNT-1: arith.cmpi ne
// CHECK-NOT: arith.cmpi
func.func @cheap_kept(%t: tensor<24xi64>) -> (tensor<i64>, tensor<24xi1>) {
  %e = tensor.empty() : tensor<24xi1>
  %ignore = arith.constant -100 : i64
  %valid = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%t : tensor<24xi64>) outs(%e : tensor<24xi1>) {
  ^bb0(%in: i64, %out: i1):
    %r = arith.cmpi ne, %in, %ignore : i64
    linalg.yield %r : i1
  } -> tensor<24xi1>
  %c0 = arith.constant 0 : i64
  %z = tensor.empty() : tensor<i64>
  %zc = linalg.fill ins(%c0 : i64) outs(%z : tensor<i64>) -> tensor<i64>
  %count = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>], iterator_types = ["reduction"]}
      ins(%valid : tensor<24xi1>) outs(%zc : tensor<i64>) {
  ^bb0(%in: i1, %acc: i64):
    %x = arith.extui %in : i1 to i64
    %r = arith.addi %x, %acc : i64
    linalg.yield %r : i64
  } -> tensor<i64>
  return %count, %valid : tensor<i64>, tensor<24xi1>
}

// -----

// LayerNorm's backward scales each row's rstd by 1/N, then reads it broadcast
// along the row: the division is recomputed for every element it is
// broadcast to (one arith op on a value loaded anyway) instead of being a
// loop nest, and a GPU kernel, of its own. A costly op (exp) read through
// a broadcast stays (@kept).
// CHECK-LABEL: func.func @cheap_broadcast
// CHECK: linalg.generic {{.*}} ins(%arg0, %arg1 : tensor<24xf32>, tensor<24x8xf32>)
// CHECK: arith.divf
// CHECK: arith.mulf
// CHECK-NOT: linalg.generic
func.func @cheap_broadcast(%rstd: tensor<24xf32>, %x: tensor<24x8xf32>) -> tensor<24x8xf32> {
  %n = arith.constant 8.0 : f32
  %scaled = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%rstd : tensor<24xf32>) outs(%rstd : tensor<24xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.divf %in, %n : f32
    linalg.yield %r : f32
  } -> tensor<24xf32>
  %e = tensor.empty() : tensor<24x8xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%scaled, %x : tensor<24xf32>, tensor<24x8xf32>) outs(%e : tensor<24x8xf32>) {
  ^bb0(%s: f32, %v: f32, %out: f32):
    %r = arith.mulf %s, %v : f32
    linalg.yield %r : f32
  } -> tensor<24x8xf32>
  return %y : tensor<24x8xf32>
}

// -----

// Cross-entropy's one-hot mask of the targets over the vocabulary, from a
// column of targets (inputs 1/32 of its bytes or less, a few arith and
// index ops), read by the loss's sum and its gradient: each computes its
// own, and then so does the gradient (its inputs are columns and scalars
// once the mask is in it) for each of its elementwise readers. No
// [tokens, vocabulary] mask or gradient is stored.
// CHECK-LABEL: func.func @recomputed_broadcast
// CHECK: linalg.generic {{.*}} ins(%arg0, %arg1 : tensor<4x1xi64>, tensor<4x1024xf32>) outs(%{{.*}} : tensor<4xf32>)
// CHECK: arith.cmpi eq
// CHECK: linalg.generic {{.*}} ins(%arg0, %arg2, %arg1 : tensor<4x1xi64>, tensor<f32>, tensor<4x1024xf32>) outs(%{{.*}} : tensor<4x1024xf32>)
// CHECK: arith.cmpi eq
// CHECK: math.exp
// CHECK-NOT: linalg.generic
#col = affine_map<(d0, d1) -> (d0, 0)>
#all = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#scalar = affine_map<(d0, d1) -> ()>
func.func @recomputed_broadcast(%t: tensor<4x1xi64>, %logp: tensor<4x1024xf32>, %scale: tensor<f32>) -> (tensor<4xf32>, tensor<4x1024xf32>) {
  %f0 = arith.constant 0.0 : f32
  %em = tensor.empty() : tensor<4x1024xi1>
  %mask = linalg.generic {indexing_maps = [#col, #all], iterator_types = ["parallel", "parallel"]}
      ins(%t : tensor<4x1xi64>) outs(%em : tensor<4x1024xi1>) {
  ^bb0(%in: i64, %out: i1):
    %j = linalg.index 1 : index
    %ji = arith.index_cast %j : index to i64
    %r = arith.cmpi eq, %in, %ji : i64
    linalg.yield %r : i1
  } -> tensor<4x1024xi1>
  %es = tensor.empty() : tensor<4xf32>
  %zs = linalg.fill ins(%f0 : f32) outs(%es : tensor<4xf32>) -> tensor<4xf32>
  %picked = linalg.generic {indexing_maps = [#all, #all, #row], iterator_types = ["parallel", "reduction"]}
      ins(%mask, %logp : tensor<4x1024xi1>, tensor<4x1024xf32>) outs(%zs : tensor<4xf32>) {
  ^bb0(%m: i1, %x: f32, %acc: f32):
    %s = arith.select %m, %x, %f0 : f32
    %r = arith.addf %s, %acc : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  %eg = tensor.empty() : tensor<4x1024xf32>
  %dnll = linalg.generic {indexing_maps = [#all, #scalar, #all], iterator_types = ["parallel", "parallel"]}
      ins(%mask, %scale : tensor<4x1024xi1>, tensor<f32>) outs(%eg : tensor<4x1024xf32>) {
  ^bb0(%m: i1, %c: f32, %out: f32):
    %n = arith.negf %c : f32
    %r = arith.select %m, %n, %f0 : f32
    linalg.yield %r : f32
  } -> tensor<4x1024xf32>
  %ed = tensor.empty() : tensor<4x1024xf32>
  %dlogits = linalg.generic {indexing_maps = [#all, #all, #all], iterator_types = ["parallel", "parallel"]}
      ins(%dnll, %logp : tensor<4x1024xf32>, tensor<4x1024xf32>) outs(%ed : tensor<4x1024xf32>) {
  ^bb0(%d: f32, %x: f32, %out: f32):
    %p = math.exp %x : f32
    %r = arith.addf %d, %p : f32
    linalg.yield %r : f32
  } -> tensor<4x1024xf32>
  return %picked, %dlogits : tensor<4xf32>, tensor<4x1024xf32>
}

// -----

// Not recomputed: a broadcast read by a reduction that it alone would give
// its loop bounds (the fused reduction would have no operand over d1), so
// it is stored once for both readers, and a broadcast whose inputs are
// not small next to it.
#col = affine_map<(d0, d1) -> (d0, 0)>
#all = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @broadcast_kept
// CHECK-COUNT-1: arith.cmpi eq
// CHECK-NOT: arith.cmpi eq
// CHECK-LABEL: func.func @large_inputs_kept
// CHECK-COUNT-1: arith.mulf
// CHECK-NOT: arith.mulf
func.func @broadcast_kept(%t: tensor<4x1xi64>, %logp: tensor<4x1024xf32>) -> (tensor<4x1xf32>, tensor<4x1024xf32>) {
  %f0 = arith.constant 0.0 : f32
  %f1 = arith.constant 1.0 : f32
  %eg = tensor.empty() : tensor<4x1024xf32>
  %onehot = linalg.generic {indexing_maps = [#col, #all], iterator_types = ["parallel", "parallel"]}
      ins(%t : tensor<4x1xi64>) outs(%eg : tensor<4x1024xf32>) {
  ^bb0(%in: i64, %out: f32):
    %j = linalg.index 1 : index
    %ji = arith.index_cast %j : index to i64
    %c = arith.cmpi eq, %in, %ji : i64
    %r = arith.select %c, %f1, %f0 : f32
    linalg.yield %r : f32
  } -> tensor<4x1024xf32>
  %ez = tensor.empty() : tensor<4x1xf32>
  %zs = linalg.fill ins(%f0 : f32) outs(%ez : tensor<4x1xf32>) -> tensor<4x1xf32>
  %sum = linalg.generic {indexing_maps = [#all, #col], iterator_types = ["parallel", "reduction"]}
      ins(%onehot : tensor<4x1024xf32>) outs(%zs : tensor<4x1xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %r = arith.addf %x, %acc : f32
    linalg.yield %r : f32
  } -> tensor<4x1xf32>
  %ed = tensor.empty() : tensor<4x1024xf32>
  %y = linalg.generic {indexing_maps = [#all, #all, #all], iterator_types = ["parallel", "parallel"]}
      ins(%onehot, %logp : tensor<4x1024xf32>, tensor<4x1024xf32>) outs(%ed : tensor<4x1024xf32>) {
  ^bb0(%d: f32, %x: f32, %out: f32):
    %p = math.exp %x : f32
    %r = arith.subf %d, %p : f32
    linalg.yield %r : f32
  } -> tensor<4x1024xf32>
  return %sum, %y : tensor<4x1xf32>, tensor<4x1024xf32>
}
func.func @large_inputs_kept(%a: tensor<4x1024xf32>, %a2: tensor<4x1024xf32>, %logp: tensor<4x1024xf32>) -> (tensor<4x1024xf32>, tensor<4x1024xf32>) {
  %e = tensor.empty() : tensor<4x1024xf32>
  %b = linalg.generic {indexing_maps = [#all, #all, #all], iterator_types = ["parallel", "parallel"]}
      ins(%a, %a2 : tensor<4x1024xf32>, tensor<4x1024xf32>) outs(%e : tensor<4x1024xf32>) {
  ^bb0(%in: f32, %in2: f32, %out: f32):
    %r = arith.mulf %in, %in2 : f32
    linalg.yield %r : f32
  } -> tensor<4x1024xf32>
  %e1 = tensor.empty() : tensor<4x1024xf32>
  %y1 = linalg.generic {indexing_maps = [#all, #all, #all], iterator_types = ["parallel", "parallel"]}
      ins(%b, %logp : tensor<4x1024xf32>, tensor<4x1024xf32>) outs(%e1 : tensor<4x1024xf32>) {
  ^bb0(%d: f32, %x: f32, %out: f32):
    %p = math.exp %x : f32
    %r = arith.subf %d, %p : f32
    linalg.yield %r : f32
  } -> tensor<4x1024xf32>
  %e2 = tensor.empty() : tensor<4x1024xf32>
  %y2 = linalg.generic {indexing_maps = [#all, #all, #all], iterator_types = ["parallel", "parallel"]}
      ins(%b, %logp : tensor<4x1024xf32>, tensor<4x1024xf32>) outs(%e2 : tensor<4x1024xf32>) {
  ^bb0(%d: f32, %x: f32, %out: f32):
    %p = math.exp %x : f32
    %r = arith.addf %d, %p : f32
    linalg.yield %r : f32
  } -> tensor<4x1024xf32>
  return %y1, %y2 : tensor<4x1024xf32>, tensor<4x1024xf32>
}

// -----

#tied = affine_map<(d0, d1) -> (d0, d1)>

// A tied weight's two gradients: the LM head's (a matmul) plus the
// embedding's (another matmul, of a zero fill): the second accumulates
// into the first (BLAS beta = 1), no add of its own.
// CHECK-LABEL: func.func @accumulate_into_matmul
// CHECK: %[[HEAD:.*]] = linalg.matmul ins(%arg0, %arg1 : tensor<16x24xf32>, tensor<24x8xf32>)
// CHECK-NEXT: %[[SUM:.*]] = linalg.matmul ins(%arg2, %arg3 : tensor<16x24xf32>, tensor<24x8xf32>) outs(%[[HEAD]] : tensor<16x8xf32>)
// CHECK-NEXT: return %[[SUM]]
func.func @accumulate_into_matmul(%a: tensor<16x24xf32>, %b: tensor<24x8xf32>, %c: tensor<16x24xf32>, %d: tensor<24x8xf32>) -> tensor<16x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x8xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<16x8xf32>) -> tensor<16x8xf32>
  %head = linalg.matmul ins(%a, %b : tensor<16x24xf32>, tensor<24x8xf32>) outs(%z : tensor<16x8xf32>) -> tensor<16x8xf32>
  %embed = linalg.matmul ins(%c, %d : tensor<16x24xf32>, tensor<24x8xf32>) outs(%z : tensor<16x8xf32>) -> tensor<16x8xf32>
  %sum = linalg.generic {indexing_maps = [#tied, #tied, #tied], iterator_types = ["parallel", "parallel"]} ins(%head, %embed : tensor<16x8xf32>, tensor<16x8xf32>) outs(%e : tensor<16x8xf32>) {
  ^bb0(%x: f32, %y: f32, %out: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<16x8xf32>
  return %sum : tensor<16x8xf32>
}

// -----

#kept = affine_map<(d0, d1) -> (d0, d1)>

// Kept: the other term is read again (accumulating into it would need a
// copy), and a matmul whose output starts from something else than zeros.
// (The two adds, the first read by the second, are one loop nest.)
// CHECK-LABEL: func.func @accumulate_kept
// CHECK: linalg.matmul ins(%arg1, %arg2 : tensor<4x4xf32>, tensor<4x4xf32>) outs(%{{.*}} : tensor<4x4xf32>)
// CHECK: linalg.matmul ins(%arg2, %arg1 : tensor<4x4xf32>, tensor<4x4xf32>) outs(%arg3 : tensor<4x4xf32>)
// CHECK: linalg.generic
// CHECK: arith.addf
// CHECK: arith.addf
func.func @accumulate_kept(%x: tensor<4x4xf32>, %a: tensor<4x4xf32>, %b: tensor<4x4xf32>, %init: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x4xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
  %p = linalg.matmul ins(%a, %b : tensor<4x4xf32>, tensor<4x4xf32>) outs(%z : tensor<4x4xf32>) -> tensor<4x4xf32>
  %s = linalg.generic {indexing_maps = [#kept, #kept, #kept], iterator_types = ["parallel", "parallel"]} ins(%x, %p : tensor<4x4xf32>, tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) {
  ^bb0(%u: f32, %v: f32, %out: f32):
    %w = arith.addf %u, %v : f32
    linalg.yield %w : f32
  } -> tensor<4x4xf32>
  %q = linalg.matmul ins(%b, %a : tensor<4x4xf32>, tensor<4x4xf32>) outs(%init : tensor<4x4xf32>) -> tensor<4x4xf32>
  %e2 = tensor.empty() : tensor<4x4xf32>
  %t = linalg.generic {indexing_maps = [#kept, #kept, #kept], iterator_types = ["parallel", "parallel"]} ins(%s, %q : tensor<4x4xf32>, tensor<4x4xf32>) outs(%e2 : tensor<4x4xf32>) {
  ^bb0(%u: f32, %v: f32, %out: f32):
    %w = arith.addf %u, %v : f32
    linalg.yield %w : f32
  } -> tensor<4x4xf32>
  return %x, %s, %t : tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>
}

// -----

#m = affine_map<(d0, d1) -> (d0, d1)>

// AdamW's shape: the new moment is stored (here: returned) and read by the
// parameter's update. It is computed in the update's loop nest, which yields
// it: one pass over parameter, gradient and moment, the moment written once.
// CHECK-LABEL: func.func @read_again_later
// CHECK: %[[UPDATE:.*]]:2 = linalg.generic
// CHECK-SAME: ins(%arg2, %arg0, %arg1 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>)
// CHECK: %[[MOMENT:.*]] = arith.addf
// CHECK: %[[PARAM:.*]] = arith.subf %{{.*}}, %[[MOMENT]]
// CHECK: linalg.yield %[[MOMENT]], %[[PARAM]]
// CHECK-NOT: linalg.generic
// CHECK: return %[[UPDATE]]#1, %[[UPDATE]]#0
func.func @read_again_later(%m: tensor<4x8xf32>, %g: tensor<4x8xf32>, %p: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %e = tensor.empty() : tensor<4x8xf32>
  %moment = linalg.generic {indexing_maps = [#m, #m, #m], iterator_types = ["parallel", "parallel"]}
      ins(%m, %g : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %r = arith.addf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  %e2 = tensor.empty() : tensor<4x8xf32>
  %param = linalg.generic {indexing_maps = [#m, #m, #m], iterator_types = ["parallel", "parallel"]}
      ins(%p, %moment : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e2 : tensor<4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %r = arith.subf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  return %param, %moment : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

#r = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>

// Not fused: a producer also read before the consumer (the fused op would
// take the consumer's place, after that reader), and a producer whose
// consumer reduces (its value would be written inside a reduction).
// CHECK-LABEL: func.func @read_before_or_reduced
// CHECK: %[[FIRST:.*]] = linalg.generic
// CHECK: arith.addf
// CHECK: tensor.extract %[[FIRST]]
// CHECK: linalg.generic
// CHECK-SAME: ins(%[[FIRST]] : tensor<4x8xf32>)
// CHECK: %[[SECOND:.*]] = linalg.generic
// CHECK: arith.mulf
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "reduction"]
// CHECK-SAME: ins(%[[SECOND]] : tensor<4x8xf32>)
func.func @read_before_or_reduced(%x: tensor<4x8xf32>) -> (f32, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xf32>) {
  %c0 = arith.constant 0 : index
  %e = tensor.empty() : tensor<4x8xf32>
  %first = linalg.generic {indexing_maps = [#r, #r], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %out: f32):
    %r = arith.addf %a, %a : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  %corner = tensor.extract %first[%c0, %c0] : tensor<4x8xf32>
  %neg = linalg.generic {indexing_maps = [#r, #r], iterator_types = ["parallel", "parallel"]}
      ins(%first : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %out: f32):
    %r = arith.negf %a : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  %second = linalg.generic {indexing_maps = [#r, #r], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %out: f32):
    %r = arith.mulf %a, %a : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  %z = tensor.empty() : tensor<4xf32>
  %sum = linalg.generic {indexing_maps = [#r, #row], iterator_types = ["parallel", "reduction"]}
      ins(%second : tensor<4x8xf32>) outs(%z : tensor<4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %a, %acc : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  return %corner, %neg, %second, %sum : f32, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xf32>
}
