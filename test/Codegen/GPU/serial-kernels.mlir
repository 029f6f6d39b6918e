// RUN: spmd-gpu-opt %s --pass-pipeline='builtin.module(func.func(spmd-gpu-serial-kernels))' | FileCheck %s

// CHECK-LABEL: func.func @serial
// Ops without a parallel loop (0-d fill) get a one-iteration parallel loop.
// CHECK: scf.parallel (%{{.*}}) = (%[[C0:.*]]) to (%[[C1:.*]]) step (%[[C1]]) {
// CHECK-NEXT: linalg.fill
// A full sum of 21000 elements: over the flattened input, 329 threads each
// add the elements p, p + 329, ... (64 of them, neighbouring threads
// reading neighbouring elements) from 0, then 6 threads the 329 partial
// sums, then one thread the last 6 into the accumulator.
// CHECK: %[[FLAT:.*]] = memref.collapse_shape %{{.*}} {{\[}}[0, 1]] : memref<300x70xf32> into memref<21000xf32>
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[P1:.*]] = gpu.alloc () : memref<329xf32>
// CHECK: %[[N1:.*]] = arith.constant 21000 : index
// CHECK: %[[T1:.*]] = arith.constant 329 : index
// CHECK: scf.parallel (%[[P:.*]]) = (%{{.*}}) to (%[[T1]]) step (%{{.*}}) {
// CHECK: scf.for %[[I:.*]] = %[[P]] to %[[N1]] step %[[T1]] iter_args(%[[ACC:.*]] = %[[ZERO]]) -> (f32) {
// CHECK: %[[V:.*]] = memref.load %[[FLAT]][%[[I]]] : memref<21000xf32>
// CHECK: arith.addf %[[V]], %[[ACC]] : f32
// CHECK: memref.store %{{.*}}, %[[P1]][%[[P]]] : memref<329xf32>
// CHECK: %[[P2:.*]] = gpu.alloc () : memref<6xf32>
// CHECK: scf.parallel
// CHECK: memref.load %[[P1]]
// CHECK: memref.store %{{.*}}, %[[P2]]
// CHECK: scf.parallel
// CHECK-NEXT: linalg.reduce ins(%[[P2]] : memref<6xf32>) outs(%{{.*}} : memref<f32>) dimensions = [0]
// CHECK: gpu.dealloc %[[P1]]
// CHECK: gpu.dealloc %[[P2]]
// The elementwise op keeps its own parallel loops.
// CHECK-NOT: scf.parallel
// CHECK: linalg.exp
func.func @serial(%x: memref<300x70xf32>, %acc: memref<f32>, %y: memref<300x70xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%acc : memref<f32>)
  linalg.reduce ins(%x : memref<300x70xf32>) outs(%acc : memref<f32>) dimensions = [0, 1]
    (%in: f32, %a: f32) {
      %s = arith.addf %in, %a : f32
      linalg.yield %s : f32
    }
  linalg.exp ins(%x : memref<300x70xf32>) outs(%y : memref<300x70xf32>)
  return
}

// A full reduction of at most 64 elements is one thread's work.
// CHECK-LABEL: func.func @small
// CHECK-NOT: gpu.alloc
// CHECK: scf.parallel (%{{.*}}) = (%{{.*}}) to (%{{.*}}) step (%{{.*}}) {
// CHECK-NEXT: linalg.reduce ins(%{{.*}} : memref<8x4xf32>) outs(%{{.*}} : memref<f32>) dimensions = [0, 1]
func.func @small(%x: memref<8x4xf32>, %acc: memref<f32>) {
  linalg.reduce ins(%x : memref<8x4xf32>) outs(%acc : memref<f32>) dimensions = [0, 1]
    (%in: f32, %a: f32) {
      %m = arith.maximumf %in, %a : f32
      linalg.yield %m : f32
    }
  return
}
