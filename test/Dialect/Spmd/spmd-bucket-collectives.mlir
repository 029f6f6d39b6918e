// RUN: spmd-opt %s --pass-pipeline='builtin.module(func.func(spmd-bucket-collectives))' -split-input-file | FileCheck %s
// RUN: spmd-opt %s --pass-pipeline='builtin.module(func.func(spmd-bucket-collectives{bucket-bytes=136 first-bucket-bytes=136}))' -split-input-file | FileCheck %s --check-prefix=SMALL
// RUN: spmd-opt %s --pass-pipeline='builtin.module(func.func(spmd-bucket-collectives{bucket-bytes=0}))' -split-input-file | FileCheck %s --check-prefix=OFF
// RUN: spmd-opt %s --pass-pipeline='builtin.module(func.func(spmd-bucket-collectives{bucket-bytes=1024 first-bucket-bytes=64}))' -split-input-file | FileCheck %s --check-prefix=FIRST
// RUN: spmd-opt %s --pass-pipeline='builtin.module(func.func(spmd-bucket-collectives{bucket-bytes=100 first-bucket-bytes=100}))' -split-input-file | FileCheck %s --check-prefix=LONE

// Three f32 gradients (8x4, 4, a scalar) in one bucket of 37 elements,
// started where the last one was, waited for where the first wait was; the
// i64 count is its own kind and stays.
// CHECK-LABEL: func.func @grads
// CHECK: %[[COUNT:.*]] = spmd.all_reduce %arg3 on @dp axes = [0] sum : tensor<i64>
// CHECK: %[[E:.*]] = tensor.empty() : tensor<37xf32>
// CHECK: %[[C1:.*]] = tensor.collapse_shape %arg0 {{\[}}[0, 1]] : tensor<8x4xf32> into tensor<32xf32>
// CHECK: %[[B1:.*]] = tensor.insert_slice %[[C1]] into %[[E]][0] [32] [1]
// CHECK: %[[B2:.*]] = tensor.insert_slice %arg1 into %[[B1]][32] [4] [1]
// CHECK: %[[S:.*]] = tensor.expand_shape %arg2 [] output_shape [1] : tensor<f32> into tensor<1xf32>
// CHECK: %[[B3:.*]] = tensor.insert_slice %[[S]] into %[[B2]][36] [1] [1]
// CHECK: %[[F:.*]] = spmd.all_reduce %[[B3]] on @dp axes = [0] sum : tensor<37xf32> -> !spmd.future<tensor<37xf32>>
// CHECK: %[[R:.*]] = spmd.wait %[[F]] : !spmd.future<tensor<37xf32>>
// CHECK: %[[P1:.*]] = tensor.extract_slice %[[R]][0] [32] [1]
// CHECK: %[[R1:.*]] = tensor.expand_shape %[[P1]] {{\[}}[0, 1]] output_shape [8, 4]
// CHECK: %[[R2:.*]] = tensor.extract_slice %[[R]][32] [4] [1]
// CHECK: %[[P3:.*]] = tensor.extract_slice %[[R]][36] [1] [1]
// CHECK: %[[R3:.*]] = tensor.collapse_shape %[[P3]] [] : tensor<1xf32> into tensor<f32>
// CHECK: %[[R4:.*]] = spmd.wait %[[COUNT]]
// CHECK: return %[[R1]], %[[R2]], %[[R3]], %[[R4]]
// With a budget of 136 bytes (34 floats), as DDP: the 8x4 gradient (128
// bytes) and the 4 (144 >= 136: the bucket closes), then the scalar alone.
// SMALL-LABEL: func.func @grads
// SMALL: tensor.empty() : tensor<36xf32>
// SMALL: spmd.all_reduce %{{.*}} on @dp axes = [0] sum : tensor<36xf32>
// SMALL: spmd.all_reduce %arg2 on @dp axes = [0] sum : tensor<f32>
// OFF-LABEL: func.func @grads
// OFF-COUNT-4: spmd.all_reduce %arg
spmd.mesh @dp(shape = 2)
func.func @grads(%g1: tensor<8x4xf32>, %g2: tensor<4xf32>, %g3: tensor<f32>, %l: tensor<i64>)
    -> (tensor<8x4xf32>, tensor<4xf32>, tensor<f32>, tensor<i64>) {
  %f1 = spmd.all_reduce %g1 on @dp axes = [0] sum : tensor<8x4xf32> -> !spmd.future<tensor<8x4xf32>>
  %f2 = spmd.all_reduce %g2 on @dp axes = [0] sum : tensor<4xf32> -> !spmd.future<tensor<4xf32>>
  %f4 = spmd.all_reduce %l on @dp axes = [0] sum : tensor<i64> -> !spmd.future<tensor<i64>>
  %f3 = spmd.all_reduce %g3 on @dp axes = [0] sum : tensor<f32> -> !spmd.future<tensor<f32>>
  %r2 = spmd.wait %f2 : !spmd.future<tensor<4xf32>>
  %r1 = spmd.wait %f1 : !spmd.future<tensor<8x4xf32>>
  %r3 = spmd.wait %f3 : !spmd.future<tensor<f32>>
  %r4 = spmd.wait %f4 : !spmd.future<tensor<i64>>
  return %r1, %r2, %r3, %r4 : tensor<8x4xf32>, tensor<4xf32>, tensor<f32>, tensor<i64>
}

// -----

// The second all-reduce's input needs the first one's result (a loss
// normalised by a reduced count): one bucket would wait for itself. Other
// kinds (max) and other meshes do not mix.
// CHECK-LABEL: func.func @dependent
// CHECK-COUNT-4: spmd.all_reduce %
// CHECK-NOT: tensor.insert_slice
spmd.mesh @dp(shape = 2)
spmd.mesh @tp(shape = 2)
func.func @dependent(%n: tensor<f32>, %x: tensor<f32>, %m: tensor<4xf32>, %t: tensor<4xf32>)
    -> (tensor<f32>, tensor<4xf32>, tensor<4xf32>) {
  %fn = spmd.all_reduce %n on @dp axes = [0] sum : tensor<f32> -> !spmd.future<tensor<f32>>
  %rn = spmd.wait %fn : !spmd.future<tensor<f32>>
  %q = arith.divf %x, %rn : tensor<f32>
  %fq = spmd.all_reduce %q on @dp axes = [0] sum : tensor<f32> -> !spmd.future<tensor<f32>>
  %fm = spmd.all_reduce %m on @dp axes = [0] max : tensor<4xf32> -> !spmd.future<tensor<4xf32>>
  %ft = spmd.all_reduce %t on @tp axes = [0] sum : tensor<4xf32> -> !spmd.future<tensor<4xf32>>
  %rq = spmd.wait %fq : !spmd.future<tensor<f32>>
  %rm = spmd.wait %fm : !spmd.future<tensor<4xf32>>
  %rt = spmd.wait %ft : !spmd.future<tensor<4xf32>>
  return %rq, %rm, %rt : tensor<f32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// The first bucket's small budget (64 bytes) closes after the second
// gradient (48 + 80 >= 64, as DDP); the next one opens a bucket with the
// full budget (1024 bytes) and is alone in it (reduced by itself).
// With the default budgets, all three in one bucket.
// CHECK-LABEL: func.func @first_budget
// CHECK: spmd.all_reduce %{{.*}} on @dp axes = [0] sum : tensor<52xf32>
// CHECK-NOT: spmd.all_reduce
// FIRST-LABEL: func.func @first_budget
// FIRST: tensor.empty() : tensor<32xf32>
// FIRST: spmd.all_reduce %{{.*}} on @dp axes = [0] sum : tensor<32xf32>
// FIRST: spmd.all_reduce %arg2 on @dp axes = [0] sum : tensor<20xf32>
// FIRST-NOT: spmd.all_reduce
spmd.mesh @dp(shape = 2)
func.func @first_budget(%g1: tensor<12xf32>, %g2: tensor<20xf32>, %g3: tensor<20xf32>)
    -> (tensor<12xf32>, tensor<20xf32>, tensor<20xf32>) {
  %f1 = spmd.all_reduce %g1 on @dp axes = [0] sum : tensor<12xf32> -> !spmd.future<tensor<12xf32>>
  %f2 = spmd.all_reduce %g2 on @dp axes = [0] sum : tensor<20xf32> -> !spmd.future<tensor<20xf32>>
  %f3 = spmd.all_reduce %g3 on @dp axes = [0] sum : tensor<20xf32> -> !spmd.future<tensor<20xf32>>
  %r1 = spmd.wait %f1 : !spmd.future<tensor<12xf32>>
  %r2 = spmd.wait %f2 : !spmd.future<tensor<20xf32>>
  %r3 = spmd.wait %f3 : !spmd.future<tensor<20xf32>>
  return %r1, %r2, %r3 : tensor<12xf32>, tensor<20xf32>, tensor<20xf32>
}

// -----

// FSDP's collectives on dimension 0 over 2 ranks: two gradients'
// reduce-scatters (8x4 -> 4x4, 6 -> 3) become one on a [2, 16 + 3] layout
// (rank r's chunks in row r), and two parameters' all-gathers (4x4 -> 8x4,
// 3 -> 6) one on [1, 19] -> [2, 19]; each result is cut back out. A
// reduce_scatter on dimension 1 is not a member.
// CHECK-LABEL: func.func @fsdp
// CHECK: %[[RE:.*]] = tensor.empty() : tensor<2x19xf32>
// CHECK: %[[G1:.*]] = tensor.expand_shape %{{.*}} {{\[}}[0, 1]] output_shape [2, 16] : tensor<32xf32> into tensor<2x16xf32>
// CHECK: %[[RB1:.*]] = tensor.insert_slice %[[G1]] into %[[RE]][0, 0] [2, 16] [1, 1]
// CHECK: %[[G2:.*]] = tensor.expand_shape %arg1 {{\[}}[0, 1]] output_shape [2, 3] : tensor<6xf32> into tensor<2x3xf32>
// CHECK: %[[RB2:.*]] = tensor.insert_slice %[[G2]] into %[[RB1]][0, 16] [2, 3] [1, 1]
// CHECK: %[[RF:.*]] = spmd.reduce_scatter %[[RB2]] on @dp axes = [0] sum scatter_dim = 0 : tensor<2x19xf32> -> !spmd.future<tensor<1x19xf32>>
// CHECK: spmd.reduce_scatter %arg4 on @dp axes = [0] sum scatter_dim = 1
// CHECK: %[[AE:.*]] = tensor.empty() : tensor<1x19xf32>
// CHECK: %[[AF:.*]] = spmd.all_gather %{{.*}} on @dp axes = [0] gather_dim = 0 : tensor<1x19xf32> -> !spmd.future<tensor<2x19xf32>>
// CHECK: %[[R:.*]] = spmd.wait %[[RF]] : !spmd.future<tensor<1x19xf32>>
// CHECK: %[[R1:.*]] = tensor.extract_slice %[[R]][0, 0] [1, 16] [1, 1]
// CHECK: tensor.expand_shape %{{.*}} {{\[}}[0, 1]] output_shape [4, 4] : tensor<16xf32> into tensor<4x4xf32>
// CHECK: tensor.extract_slice %[[R]][0, 16] [1, 3] [1, 1]
// CHECK: %[[A:.*]] = spmd.wait %[[AF]] : !spmd.future<tensor<2x19xf32>>
// CHECK: tensor.extract_slice %[[A]][0, 0] [2, 16] [1, 1]
// CHECK: tensor.expand_shape %{{.*}} {{\[}}[0, 1]] output_shape [8, 4] : tensor<32xf32> into tensor<8x4xf32>
// CHECK: tensor.extract_slice %[[A]][0, 16] [2, 3] [1, 1]
// OFF-LABEL: func.func @fsdp
// OFF-COUNT-3: spmd.reduce_scatter %arg
// OFF-COUNT-2: spmd.all_gather %arg
spmd.mesh @dp(shape = 2)
func.func @fsdp(%g1: tensor<8x4xf32>, %g2: tensor<6xf32>, %p1: tensor<4x4xf32>, %p2: tensor<3xf32>, %h: tensor<2x4xf32>)
    -> (tensor<4x4xf32>, tensor<3xf32>, tensor<8x4xf32>, tensor<6xf32>, tensor<2x2xf32>) {
  %r1 = spmd.reduce_scatter %g1 on @dp axes = [0] sum scatter_dim = 0 : tensor<8x4xf32> -> !spmd.future<tensor<4x4xf32>>
  %r2 = spmd.reduce_scatter %g2 on @dp axes = [0] sum scatter_dim = 0 : tensor<6xf32> -> !spmd.future<tensor<3xf32>>
  %r3 = spmd.reduce_scatter %h on @dp axes = [0] sum scatter_dim = 1 : tensor<2x4xf32> -> !spmd.future<tensor<2x2xf32>>
  %a1 = spmd.all_gather %p1 on @dp axes = [0] gather_dim = 0 : tensor<4x4xf32> -> !spmd.future<tensor<8x4xf32>>
  %a2 = spmd.all_gather %p2 on @dp axes = [0] gather_dim = 0 : tensor<3xf32> -> !spmd.future<tensor<6xf32>>
  %w1 = spmd.wait %r1 : !spmd.future<tensor<4x4xf32>>
  %w2 = spmd.wait %r2 : !spmd.future<tensor<3xf32>>
  %w3 = spmd.wait %r3 : !spmd.future<tensor<2x2xf32>>
  %w4 = spmd.wait %a1 : !spmd.future<tensor<8x4xf32>>
  %w5 = spmd.wait %a2 : !spmd.future<tensor<6xf32>>
  return %w1, %w2, %w4, %w5, %w3 : tensor<4x4xf32>, tensor<3xf32>, tensor<8x4xf32>, tensor<6xf32>, tensor<2x2xf32>
}

// -----

// A reduce_scatter or all_gather of the budget or more runs alone (in a
// bucket's [n, m] stripes it would be copied whole on the way in or out);
// the smaller ones around it still share one. All-reduces (flat buckets,
// gradients computed in their slots) keep DDP's rule (@fsdp, SMALL).
// LONE-LABEL: func.func @large_alone
// LONE: spmd.reduce_scatter %arg0 on @dp axes = [0] sum scatter_dim = 0 : tensor<8x4xf32> -> !spmd.future<tensor<4x4xf32>>
// LONE: spmd.reduce_scatter %{{.*}} on @dp axes = [0] sum scatter_dim = 0 : tensor<2x6xf32> -> !spmd.future<tensor<1x6xf32>>
// LONE-NOT: spmd.reduce_scatter
spmd.mesh @dp(shape = 2)
func.func @large_alone(%g1: tensor<8x4xf32>, %g2: tensor<6xf32>, %g3: tensor<6xf32>)
    -> (tensor<4x4xf32>, tensor<3xf32>, tensor<3xf32>) {
  %r2 = spmd.reduce_scatter %g2 on @dp axes = [0] sum scatter_dim = 0 : tensor<6xf32> -> !spmd.future<tensor<3xf32>>
  %r1 = spmd.reduce_scatter %g1 on @dp axes = [0] sum scatter_dim = 0 : tensor<8x4xf32> -> !spmd.future<tensor<4x4xf32>>
  %r3 = spmd.reduce_scatter %g3 on @dp axes = [0] sum scatter_dim = 0 : tensor<6xf32> -> !spmd.future<tensor<3xf32>>
  %w1 = spmd.wait %r1 : !spmd.future<tensor<4x4xf32>>
  %w2 = spmd.wait %r2 : !spmd.future<tensor<3xf32>>
  %w3 = spmd.wait %r3 : !spmd.future<tensor<3xf32>>
  return %w1, %w2, %w3 : tensor<4x4xf32>, tensor<3xf32>, tensor<3xf32>
}
