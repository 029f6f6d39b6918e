// RUN: spmd-opt %s --spmd-remove-optimization-barriers | FileCheck %s
// RUN: spmd-opt %s --spmd-lower-to-cpu | FileCheck %s --check-prefix=LOWERED

// The barrier's users read its input; nothing else changes (the
// recomputed exp stays a second op).
// CHECK-LABEL: func.func @recompute
// CHECK-SAME: (%[[X:.*]]: tensor<16xf32>)
// CHECK-NOT: spmd.optimization_barrier
// CHECK: math.exp %[[X]]
// CHECK: math.exp %[[X]]
// LOWERED-LABEL: llvm.func @recompute
// LOWERED-NOT: spmd.optimization_barrier
func.func @recompute(%x: tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32>) {
  %a = math.exp %x : tensor<16xf32>
  %b = spmd.optimization_barrier %x : tensor<16xf32>
  %r = math.exp %b : tensor<16xf32>
  return %a, %r : tensor<16xf32>, tensor<16xf32>
}
