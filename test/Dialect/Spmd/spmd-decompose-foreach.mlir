// RUN: spmd-opt %s --spmd-decompose-foreach --split-input-file | FileCheck %s

// A chain of foreach ops whose intermediate values are used only by other
// foreach ops becomes one generic per tensor that leaves the chain, with the
// whole formula in its body (torch's kernel order: (s * y) * z).
// CHECK-DAG: #[[ID:.*]] = affine_map<(d0) -> (d0)>
// CHECK-DAG: #[[ID2:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @chain
// CHECK-SAME: (%[[V:.*]]: tensor<16xf32>, %[[W:.*]]: tensor<2x3xf32>, %[[G:.*]]: tensor<16xf32>, %[[H:.*]]: tensor<2x3xf32>, %[[B:.*]]: f64, %[[C:.*]]: f64)
// CHECK-DAG: %[[BF:.*]] = arith.truncf %[[B]] : f64 to f32
// CHECK-DAG: %[[CF:.*]] = arith.truncf %[[C]] : f64 to f32
// CHECK: %[[E0:.*]] = tensor.empty() : tensor<16xf32>
// CHECK: %[[R0:.*]] = linalg.generic {indexing_maps = [#[[ID]], #[[ID]], #[[ID]]], iterator_types = ["parallel"]} ins(%[[V]], %[[G]] : tensor<16xf32>, tensor<16xf32>) outs(%[[E0]] : tensor<16xf32>)
// CHECK-NEXT: ^bb0(%[[VI:.*]]: f32, %[[GI:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT:   %[[A:.*]] = arith.mulf %[[VI]], %[[BF]] : f32
// CHECK-NEXT:   %[[S:.*]] = arith.mulf %[[CF]], %[[GI]] : f32
// CHECK-NEXT:   %[[T:.*]] = arith.mulf %[[S]], %[[GI]] : f32
// CHECK-NEXT:   %[[U:.*]] = arith.addf %[[A]], %[[T]] : f32
// CHECK-NEXT:   linalg.yield %[[U]] : f32
// CHECK: %[[R1:.*]] = linalg.generic {indexing_maps = [#[[ID2]], #[[ID2]], #[[ID2]]], iterator_types = ["parallel", "parallel"]} ins(%[[W]], %[[H]] : tensor<2x3xf32>, tensor<2x3xf32>)
// CHECK-NOT: spmd.foreach
// CHECK: return %[[R0]], %[[R1]]
func.func @chain(%v: tensor<16xf32>, %w: tensor<2x3xf32>, %g: tensor<16xf32>, %h: tensor<2x3xf32>, %b: f64, %c: f64) -> (tensor<16xf32>, tensor<2x3xf32>) {
  %0:2 = spmd.foreach_mul_scalar [%v, %w] scalar [%b] : tensor<16xf32>, tensor<2x3xf32>, f64
  %1:2 = spmd.foreach_addcmul [%0#0, %0#1], [%g, %h], [%g, %h] value [%c] : tensor<16xf32>, tensor<2x3xf32>, f64
  return %1#0, %1#1 : tensor<16xf32>, tensor<2x3xf32>
}

// -----

// A foreach value used outside the chain is materialized once, and its
// consumers read it instead of recomputing it: Adam's update is one generic
// per output (moment, second moment, parameter).
// CHECK-LABEL: func.func @adam_like
// CHECK-COUNT-3: linalg.generic
// CHECK-NOT: linalg.generic
// CHECK-NOT: spmd.foreach
func.func @adam_like(%p: tensor<8xf32>, %g: tensor<8xf32>, %m: tensor<8xf32>, %v: tensor<8xf32>, %w: f64, %b2: f64, %c: f64, %bc: f64, %eps: f64, %lr: f64) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %m1 = spmd.foreach_lerp [%m], [%g] weight [%w] : tensor<8xf32>, f64
  %v0 = spmd.foreach_mul_scalar [%v] scalar [%b2] : tensor<8xf32>, f64
  %v1 = spmd.foreach_addcmul [%v0], [%g], [%g] value [%c] : tensor<8xf32>, f64
  %d0 = spmd.foreach_sqrt [%v1] : tensor<8xf32>
  %d1 = spmd.foreach_div_scalar [%d0] scalar [%bc] : tensor<8xf32>, f64
  %d2 = spmd.foreach_add_scalar [%d1] scalar [%eps] : tensor<8xf32>, f64
  %p1 = spmd.foreach_addcdiv [%p], [%m1], [%d2] value [%lr] : tensor<8xf32>, f64
  return %p1, %m1, %v1 : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}

// The parameter generic reads the materialized moments.
// CHECK-LABEL: func.func @reads_materialized
// CHECK: %[[M1:.*]] = linalg.generic
// CHECK: %[[P1:.*]] = linalg.generic {{.*}} ins(%{{.*}}, %[[M1]] : tensor<8xf32>, tensor<8xf32>)
// CHECK: ^bb0(%[[PI:.*]]: f32, %[[MI:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: arith.addf %[[PI]], %[[MI]]
func.func @reads_materialized(%p: tensor<8xf32>, %g: tensor<8xf32>, %m: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %m1 = spmd.foreach_add [%m], [%g] : tensor<8xf32>
  %p1 = spmd.foreach_add [%p], [%m1] : tensor<8xf32>
  return %p1, %m1 : tensor<8xf32>, tensor<8xf32>
}

// -----

// Every formula, in ATen's evaluation order.
// CHECK-LABEL: func.func @formulas
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>, %[[Y:.*]]: tensor<4xf32>, %[[Z:.*]]: tensor<4xf32>, %[[S:.*]]: f32)
func.func @formulas(%x: tensor<4xf32>, %y: tensor<4xf32>, %z: tensor<4xf32>, %s: f32) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  // CHECK: ^bb0(%[[A:.*]]: f32, %{{.*}}: f32):
  // CHECK-NEXT: arith.negf %[[A]]
  %0 = spmd.foreach_neg [%x] : tensor<4xf32>
  // CHECK: math.sqrt
  %1 = spmd.foreach_sqrt [%x] : tensor<4xf32>
  // CHECK: ^bb0(%[[A:.*]]: f32, %[[B:.*]]: f32, %{{.*}}: f32):
  // CHECK-NEXT: %[[M:.*]] = arith.mulf %[[S]], %[[B]]
  // CHECK-NEXT: arith.addf %[[A]], %[[M]]
  %2 = spmd.foreach_add [%x], [%y] alpha [%s] : tensor<4xf32>, f32
  // CHECK: arith.mulf
  %3 = spmd.foreach_mul [%x], [%y] : tensor<4xf32>
  // CHECK: arith.divf
  %4 = spmd.foreach_div [%x], [%y] : tensor<4xf32>
  // CHECK: arith.maximumf
  %5 = spmd.foreach_maximum [%x], [%y] : tensor<4xf32>
  // CHECK: ^bb0(%[[A:.*]]: f32, %[[B:.*]]: f32, %{{.*}}: f32):
  // CHECK-NEXT: %[[D:.*]] = arith.subf %[[B]], %[[A]]
  // CHECK: %[[ABS:.*]] = math.absf %[[S]]
  // CHECK-NEXT: %[[SMALL:.*]] = arith.cmpf olt, %[[ABS]]
  // CHECK-NEXT: %[[L0:.*]] = arith.mulf %[[S]], %[[D]]
  // CHECK-NEXT: %[[LOW:.*]] = arith.addf %[[A]], %[[L0]]
  // CHECK: %[[OM:.*]] = arith.subf %{{.*}}, %[[S]]
  // CHECK-NEXT: %[[H0:.*]] = arith.mulf %[[D]], %[[OM]]
  // CHECK-NEXT: %[[HIGH:.*]] = arith.subf %[[B]], %[[H0]]
  // CHECK-NEXT: arith.select %[[SMALL]], %[[LOW]], %[[HIGH]]
  %6 = spmd.foreach_lerp [%x], [%y] weight [%s] : tensor<4xf32>, f32
  // CHECK: ^bb0(%[[A:.*]]: f32, %{{.*}}: f32):
  // CHECK-NEXT: arith.addf %[[A]], %[[S]]
  %7 = spmd.foreach_add_scalar [%x] scalar [%s] : tensor<4xf32>, f32
  // CHECK: arith.mulf %{{.*}}, %[[S]]
  %8 = spmd.foreach_mul_scalar [%x] scalar [%s] : tensor<4xf32>, f32
  // CHECK: arith.divf %{{.*}}, %[[S]]
  %9 = spmd.foreach_div_scalar [%x] scalar [%s] : tensor<4xf32>, f32
  // CHECK: ^bb0(%[[A:.*]]: f32, %[[B:.*]]: f32, %[[C:.*]]: f32, %{{.*}}: f32):
  // CHECK-NEXT: %[[M:.*]] = arith.mulf %[[B]], %[[C]]
  // CHECK-NEXT: arith.addf %[[A]], %[[M]]
  %10 = spmd.foreach_addcmul [%x], [%y], [%z] : tensor<4xf32>
  // CHECK: ^bb0(%[[A:.*]]: f32, %[[B:.*]]: f32, %[[C:.*]]: f32, %{{.*}}: f32):
  // CHECK-NEXT: %[[M:.*]] = arith.mulf %[[S]], %[[B]]
  // CHECK-NEXT: %[[D:.*]] = arith.divf %[[M]], %[[C]]
  // CHECK-NEXT: arith.addf %[[A]], %[[D]]
  %11 = spmd.foreach_addcdiv [%x], [%y], [%z] value [%s] : tensor<4xf32>, f32
  return %0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// Per-entry scalars, rank-0 tensors (step counters), dynamic sizes, and f16
// tensors with f64 scalars.
// CHECK-LABEL: func.func @shapes_and_scalars
// CHECK-SAME: (%[[T:.*]]: tensor<f32>, %[[D:.*]]: tensor<?x4xf16>, %[[A:.*]]: f64, %[[B:.*]]: f64)
// CHECK-DAG: %[[AF:.*]] = arith.truncf %[[A]] : f64 to f32
// CHECK-DAG: %[[BH:.*]] = arith.truncf %[[B]] : f64 to f16
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #{{.*}}], iterator_types = []} ins(%[[T]] : tensor<f32>)
// CHECK: arith.addf %{{.*}}, %[[AF]] : f32
// CHECK: %[[DIM:.*]] = tensor.dim %[[D]], %{{.*}} : tensor<?x4xf16>
// CHECK: %[[E:.*]] = tensor.empty(%[[DIM]]) : tensor<?x4xf16>
// CHECK: linalg.generic {{.*}} ins(%[[D]] : tensor<?x4xf16>) outs(%[[E]] : tensor<?x4xf16>)
// CHECK: arith.addf %{{.*}}, %[[BH]] : f16
func.func @shapes_and_scalars(%t: tensor<f32>, %d: tensor<?x4xf16>, %a: f64, %b: f64) -> (tensor<f32>, tensor<?x4xf16>) {
  %0:2 = spmd.foreach_add_scalar [%t, %d] scalar [%a, %b] : tensor<f32>, tensor<?x4xf16>, f64, f64
  return %0#0, %0#1 : tensor<f32>, tensor<?x4xf16>
}

// -----

// Dead foreach results produce nothing; values crossing into a nested region
// are materialized in their own block.
// CHECK-LABEL: func.func @regions
// CHECK: %[[OUTER:.*]] = linalg.generic
// CHECK: scf.if
// CHECK: linalg.generic {{.*}} ins(%[[OUTER]], %{{.*}} : tensor<4xf32>, tensor<4xf32>)
// CHECK-NOT: spmd.foreach
func.func @regions(%x: tensor<4xf32>, %y: tensor<4xf32>, %c: i1) -> tensor<4xf32> {
  %dead = spmd.foreach_neg [%y] : tensor<4xf32>
  %0 = spmd.foreach_mul [%x], [%y] : tensor<4xf32>
  %1 = scf.if %c -> tensor<4xf32> {
    %2 = spmd.foreach_add [%0], [%y] : tensor<4xf32>
    scf.yield %2 : tensor<4xf32>
  } else {
    scf.yield %x : tensor<4xf32>
  }
  return %1 : tensor<4xf32>
}
