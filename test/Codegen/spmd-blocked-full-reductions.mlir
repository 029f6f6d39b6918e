// RUN: spmd-opt %s --pass-pipeline='builtin.module(func.func(spmd-blocked-full-reductions{block=64}))' -split-input-file -verify-diagnostics | FileCheck %s
// RUN: not spmd-opt %s --pass-pipeline='builtin.module(func.func(spmd-blocked-full-reductions{block=0}))' -split-input-file 2>&1 | FileCheck %s --check-prefix=BADBLOCK
// BADBLOCK: error: spmd-blocked-full-reductions: block must be at least 1

// A sum of 21000 elements: blocks of 64 consecutive elements into 329
// partial sums (from 0), those into 6, then the 6 into the accumulator.
// CHECK-LABEL: func.func @big
// CHECK: %[[FLAT:.*]] = memref.collapse_shape %{{.*}} {{\[}}[0, 1]] : memref<300x70xf32> into memref<21000xf32>
// CHECK: %[[W:.*]] = arith.constant 64 : index
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[P1:.*]] = memref.alloc() : memref<329xf32>
// CHECK: %[[N:.*]] = arith.constant 21000 : index
// CHECK: scf.for %[[B:.*]] = %{{.*}} to %{{.*}} step
// CHECK: %[[BEGIN:.*]] = arith.muli %[[B]], %[[W]]
// CHECK: %[[NEXT:.*]] = arith.addi %[[BEGIN]], %[[W]]
// CHECK: %[[END:.*]] = arith.minsi %[[NEXT]], %[[N]]
// CHECK: scf.for %[[I:.*]] = %[[BEGIN]] to %[[END]] step %{{.*}} iter_args(%[[ACC:.*]] = %[[ZERO]]) -> (f32)
// CHECK: memref.load %[[FLAT]][%[[I]]]
// CHECK: arith.addf
// CHECK: memref.store %{{.*}}, %[[P1]][%[[B]]] : memref<329xf32>
// CHECK: %[[P2:.*]] = memref.alloc() : memref<6xf32>
// CHECK: memref.load %[[P1]]
// CHECK: memref.store %{{.*}}, %[[P2]]
// CHECK: %[[INIT:.*]] = memref.load %[[ACC0:.*]][] : memref<f32>
// CHECK: scf.for {{.*}} iter_args(%{{.*}} = %[[INIT]]) -> (f32)
// CHECK: memref.load %[[P2]]
// CHECK: memref.store %{{.*}}, %[[ACC0]][] : memref<f32>
// CHECK: memref.dealloc %[[P1]]
// CHECK: memref.dealloc %[[P2]]
// CHECK-NOT: linalg.reduce
func.func @big(%x: memref<300x70xf32>, %acc: memref<f32>) {
  linalg.reduce ins(%x : memref<300x70xf32>) outs(%acc : memref<f32>) dimensions = [0, 1]
    (%in: f32, %a: f32) {
      %s = arith.addf %in, %a : f32
      linalg.yield %s : f32
    }
  return
}

// -----

// Left alone: at most `block` elements, a partial reduction, a strided
// input, a combiner that is not one float add/mul/max/min.
// CHECK-LABEL: func.func @kept
// CHECK-COUNT-4: linalg.reduce
func.func @kept(%small: memref<8x8xf32>, %x: memref<300x70xf32>,
                %rows: memref<300xf32>, %acc: memref<f32>, %i: memref<300x70xi32>,
                %iacc: memref<i32>) {
  linalg.reduce ins(%small : memref<8x8xf32>) outs(%acc : memref<f32>) dimensions = [0, 1]
    (%in: f32, %a: f32) {
      %s = arith.addf %in, %a : f32
      linalg.yield %s : f32
    }
  linalg.reduce ins(%x : memref<300x70xf32>) outs(%rows : memref<300xf32>) dimensions = [1]
    (%in: f32, %a: f32) {
      %s = arith.addf %in, %a : f32
      linalg.yield %s : f32
    }
  %sub = memref.subview %x[0, 0] [300, 35] [1, 2] : memref<300x70xf32> to memref<300x35xf32, strided<[70, 2]>>
  linalg.reduce ins(%sub : memref<300x35xf32, strided<[70, 2]>>) outs(%acc : memref<f32>) dimensions = [0, 1]
    (%in: f32, %a: f32) {
      %s = arith.addf %in, %a : f32
      linalg.yield %s : f32
    }
  linalg.reduce ins(%i : memref<300x70xi32>) outs(%iacc : memref<i32>) dimensions = [0, 1]
    (%in: i32, %a: i32) {
      %s = arith.addi %in, %a : i32
      linalg.yield %s : i32
    }
  return
}
