// RUN: spmd-gpu-opt %s --pass-pipeline='builtin.module(func.func(spmd-gpu-scalars-into-kernels))' --split-input-file | FileCheck %s

// Adam's bias correction: 1 - beta^t from two 0-d buffers, used by an
// elementwise update. The buffers become inputs indexed by no loop and the
// arithmetic moves into the body; nothing is left on the host.
#id = affine_map<(d0) -> (d0)>
// CHECK-DAG: #[[ID:.*]] = affine_map<(d0) -> (d0)>
// CHECK-DAG: #[[NONE:.*]] = affine_map<(d0) -> ()>
// CHECK-LABEL: func.func @bias_correction
// CHECK-SAME: (%[[X:.*]]: memref<8xf32>, %[[BETA:.*]]: memref<f64>, %[[POW:.*]]: memref<f64>, %[[Y:.*]]: memref<8xf32>)
// CHECK-NOT: memref.load
// CHECK: linalg.generic {indexing_maps = [#[[ID]], #[[NONE]], #[[NONE]], #[[ID]]]
// CHECK-SAME: ins(%[[X]], %[[BETA]], %[[POW]] : memref<8xf32>, memref<f64>, memref<f64>) outs(%[[Y]] : memref<8xf32>)
// CHECK-NEXT: ^bb0(%[[IN:.*]]: f32, %[[B:.*]]: f64, %[[P:.*]]: f64, %{{.*}}: f32):
// CHECK-NEXT: %[[M:.*]] = arith.mulf %[[B]], %[[P]] : f64
// CHECK-NEXT: %[[S:.*]] = arith.subf %{{.*}}, %[[M]] : f64
// CHECK-NEXT: %[[T:.*]] = arith.truncf %[[S]] : f64 to f32
// CHECK-NEXT: %[[R:.*]] = arith.mulf %[[IN]], %[[T]] : f32
// CHECK-NEXT: linalg.yield %[[R]]
func.func @bias_correction(%x: memref<8xf32>, %beta: memref<f64>,
                           %pow: memref<f64>, %y: memref<8xf32>) {
  %one = arith.constant 1.0 : f64
  %b = memref.load %beta[] : memref<f64>
  %p = memref.load %pow[] : memref<f64>
  %m = arith.mulf %b, %p : f64
  %s = arith.subf %one, %m : f64
  %t = arith.truncf %s : f64 to f32
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%x : memref<8xf32>) outs(%y : memref<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.mulf %in, %t : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// The buffer is written between the load and the op (the step counter
// incremented): the scalar stays on the host.
#id = affine_map<(d0) -> (d0)>
#none = affine_map<(d0) -> ()>
// CHECK-LABEL: func.func @written_between
// CHECK: %[[V:.*]] = memref.load
// CHECK: linalg.fill
// CHECK: linalg.generic
// CHECK-SAME: ins(%{{.*}} : memref<8xf32>)
// CHECK: arith.mulf %{{.*}}, %[[V]] : f32
func.func @written_between(%x: memref<8xf32>, %c: memref<f32>,
                           %y: memref<8xf32>) {
  %zero = arith.constant 0.0 : f32
  %v = memref.load %c[] : memref<f32>
  linalg.fill ins(%zero : f32) outs(%c : memref<f32>)
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%x : memref<8xf32>) outs(%y : memref<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.mulf %in, %v : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// A scalar of a function argument (a host value) stays a captured value;
// a load of a ranked buffer is not a scalar read: untouched.
#id = affine_map<(d0) -> (d0)>
// CHECK-LABEL: func.func @host_values
// CHECK: memref.load %{{.*}}[%{{.*}}] : memref<4xf32>
// CHECK: linalg.generic
// CHECK-SAME: ins(%{{.*}} : memref<8xf32>)
func.func @host_values(%x: memref<8xf32>, %s: f32, %v: memref<4xf32>,
                       %y: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %e = memref.load %v[%c0] : memref<4xf32>
  %t = arith.addf %s, %e : f32
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%x : memref<8xf32>) outs(%y : memref<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.mulf %in, %t : f32
    linalg.yield %r : f32
  }
  return
}
