// RUN: spmd-opt %s -cse | FileCheck %s

// Collectives and waits are Pure: every rank runs the same program, so CSE
// merges identical collectives on all ranks alike (see the op descriptions).

spmd.mesh @dp(shape = 4)

// CHECK-LABEL: func.func @merge_identical
// CHECK: spmd.all_reduce
// CHECK-NEXT: %[[W:.*]] = spmd.wait
// CHECK-NEXT: return %[[W]], %[[W]], %[[W]], %[[W]]
func.func @merge_identical(%g: tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) {
  %0 = spmd.all_reduce %g on @dp axes = [0] sum : tensor<16xf32> -> !spmd.future<tensor<16xf32>>
  %1 = spmd.all_reduce %g on @dp axes = [0] sum : tensor<16xf32> -> !spmd.future<tensor<16xf32>>
  %a = spmd.wait %0 : !spmd.future<tensor<16xf32>>
  %b = spmd.wait %1 : !spmd.future<tensor<16xf32>>
  return %a, %b, %a, %b : tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>
}

// Different kinds, axes or inputs are different collectives.
// CHECK-LABEL: func.func @keep_different
// CHECK-COUNT-3: spmd.all_reduce
func.func @keep_different(%g: tensor<16xf32>, %h: tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) {
  %0 = spmd.all_reduce %g on @dp axes = [0] sum : tensor<16xf32> -> tensor<16xf32>
  %1 = spmd.all_reduce %g on @dp axes = [0] max : tensor<16xf32> -> tensor<16xf32>
  %2 = spmd.all_reduce %h on @dp axes = [0] sum : tensor<16xf32> -> tensor<16xf32>
  return %0, %1, %2 : tensor<16xf32>, tensor<16xf32>, tensor<16xf32>
}

// Loads read state and stores write it: CSE merges two loads with no store
// between them, never across one.
// CHECK-LABEL: func.func @state_order
// CHECK: spmd.load @w
// CHECK-NOT: spmd.load
// CHECK: spmd.store
// CHECK: spmd.load @w
spmd.state @w : tensor<16xf32> role = param
func.func @state_order(%v: tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) {
  %0 = spmd.load @w : tensor<16xf32>
  %1 = spmd.load @w : tensor<16xf32>
  spmd.store %v to @w : tensor<16xf32>
  %2 = spmd.load @w : tensor<16xf32>
  return %0, %1, %2 : tensor<16xf32>, tensor<16xf32>, tensor<16xf32>
}

// spmd.optimization_barrier is not Pure: CSE neither merges two barriers of
// one value nor an op on the barrier's result with the same op on the value
// (activation checkpointing's recomputation stays apart from the forward).
// CHECK-LABEL: func.func @barrier_keeps_recomputation
// CHECK: math.exp
// CHECK: spmd.optimization_barrier
// CHECK: spmd.optimization_barrier
// CHECK: math.exp
// CHECK: math.exp
func.func @barrier_keeps_recomputation(%x: tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) {
  %a = math.exp %x : tensor<16xf32>
  %b1 = spmd.optimization_barrier %x : tensor<16xf32>
  %b2 = spmd.optimization_barrier %x : tensor<16xf32>
  %r1 = math.exp %b1 : tensor<16xf32>
  %r2 = math.exp %b2 : tensor<16xf32>
  return %a, %r1, %r2 : tensor<16xf32>, tensor<16xf32>, tensor<16xf32>
}
