// RUN: spmd-opt %s --pass-pipeline='builtin.module(func.func(spmd-bound-reductions-in-flight))' | FileCheck %s
// RUN: spmd-opt %s --pass-pipeline='builtin.module(func.func(spmd-bound-reductions-in-flight{max-in-flight=1}))' | FileCheck %s --check-prefix=ONE
// RUN: spmd-opt %s --pass-pipeline='builtin.module(func.func(spmd-bound-reductions-in-flight{max-in-flight=0}))' | FileCheck %s --check-prefix=OFF

// Three gradient reductions all waited for at the end (the optimizer): with
// two in flight at most, the first is waited for before the third starts.
// An all_gather is not a reduction and keeps its wait.
// CHECK-LABEL: func.func @grads
// CHECK: %[[F0:.*]] = spmd.reduce_scatter %arg0
// CHECK: %[[F1:.*]] = spmd.all_reduce %arg1
// CHECK: %[[G:.*]] = spmd.all_gather %arg3
// CHECK: %[[R0:.*]] = spmd.wait %[[F0]]
// CHECK: %[[F2:.*]] = spmd.reduce_scatter %arg2
// CHECK: arith.addf
// CHECK: spmd.wait %[[F1]]
// CHECK: spmd.wait %[[F2]]
// CHECK: spmd.wait %[[G]]
// ONE-LABEL: func.func @grads
// ONE: %[[F0:.*]] = spmd.reduce_scatter %arg0
// ONE: spmd.wait %[[F0]]
// ONE: %[[F1:.*]] = spmd.all_reduce %arg1
// ONE: spmd.all_gather
// ONE: spmd.wait %[[F1]]
// ONE: spmd.reduce_scatter %arg2
// OFF-LABEL: func.func @grads
// OFF: spmd.reduce_scatter %arg0
// OFF: spmd.all_reduce %arg1
// OFF: spmd.all_gather %arg3
// OFF: spmd.reduce_scatter %arg2
// OFF: spmd.wait
spmd.mesh @dp(shape = 2)
func.func @grads(%g0: tensor<8xf32>, %g1: tensor<4xf32>, %g2: tensor<8xf32>, %p: tensor<2xf32>)
    -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %f0 = spmd.reduce_scatter %g0 on @dp axes = [0] sum scatter_dim = 0 : tensor<8xf32> -> !spmd.future<tensor<4xf32>>
  %f1 = spmd.all_reduce %g1 on @dp axes = [0] sum : tensor<4xf32> -> !spmd.future<tensor<4xf32>>
  %fg = spmd.all_gather %p on @dp axes = [0] gather_dim = 0 : tensor<2xf32> -> !spmd.future<tensor<4xf32>>
  %f2 = spmd.reduce_scatter %g2 on @dp axes = [0] sum scatter_dim = 0 : tensor<8xf32> -> !spmd.future<tensor<4xf32>>
  %s = arith.addf %g1, %g1 : tensor<4xf32>
  %r0 = spmd.wait %f0 : !spmd.future<tensor<4xf32>>
  %r1 = spmd.wait %f1 : !spmd.future<tensor<4xf32>>
  %r2 = spmd.wait %f2 : !spmd.future<tensor<4xf32>>
  %rg = spmd.wait %fg : !spmd.future<tensor<4xf32>>
  return %r0, %r1, %r2, %rg : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}
