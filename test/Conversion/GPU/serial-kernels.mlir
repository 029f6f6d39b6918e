// RUN: spmd-gpu-opt %s --pass-pipeline='builtin.module(func.func(spmd-gpu-serial-kernels))' | FileCheck %s

// CHECK-LABEL: func.func @serial
// Ops without a parallel loop (0-d fill, full reduction) get a one-iteration
// parallel loop; the elementwise op keeps its own.
// CHECK: scf.parallel (%{{.*}}) = (%[[C0:.*]]) to (%[[C1:.*]]) step (%[[C1]]) {
// CHECK-NEXT: linalg.fill
// CHECK: scf.parallel
// CHECK-NEXT: linalg.reduce
// CHECK: }
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
