// RUN: spmd-gpu-opt %s --pass-pipeline='builtin.module(func.func(spmd-gpu-serial-kernels))' | FileCheck %s

// CHECK-LABEL: func.func @serial
// Ops without a parallel loop (0-d fill) get a one-iteration parallel loop.
// CHECK: scf.parallel (%{{.*}}) = (%[[C0:.*]]) to (%[[C1:.*]]) step (%[[C1]]) {
// CHECK-NEXT: linalg.fill
// A full sum is split: rows in parallel into partial sums (from 0), then one
// thread adds the partials into the accumulator.
// CHECK: %[[PART:.*]] = gpu.alloc () : memref<8xf32>
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: linalg.fill ins(%[[ZERO]] : f32) outs(%[[PART]] : memref<8xf32>)
// CHECK: linalg.reduce ins(%{{.*}} : memref<8x4xf32>) outs(%[[PART]] : memref<8xf32>) dimensions = [1]
// CHECK: scf.parallel
// CHECK-NEXT: linalg.reduce ins(%[[PART]] : memref<8xf32>) outs(%{{.*}} : memref<f32>) dimensions = [0]
// CHECK: gpu.dealloc %[[PART]]
// The elementwise op keeps its own parallel loops.
// CHECK-NOT: scf.parallel
// CHECK: linalg.exp
func.func @serial(%x: memref<8x4xf32>, %acc: memref<f32>, %y: memref<8x4xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%acc : memref<f32>)
  linalg.reduce ins(%x : memref<8x4xf32>) outs(%acc : memref<f32>) dimensions = [0, 1]
    (%in: f32, %a: f32) {
      %s = arith.addf %in, %a : f32
      linalg.yield %s : f32
    }
  linalg.exp ins(%x : memref<8x4xf32>) outs(%y : memref<8x4xf32>)
  return
}
