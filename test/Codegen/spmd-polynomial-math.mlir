// RUN: spmd-opt %s --spmd-polynomial-math | FileCheck %s
// f32 erf and tanh, scalar or vector, become arithmetic (no call left to
// make); f64 erf and tanh stay for libm. Accuracy: polynomial-math-run.mlir.
// CHECK-LABEL: func.func @erf
// CHECK-NOT: math.erf %{{.*}} : f32
// CHECK-NOT: math.erf %{{.*}} : vector<8xf32>
// CHECK: arith.divf
// CHECK: math.erf %{{.*}} : f64
func.func @erf(%x: f32, %v: vector<8xf32>, %d: f64) -> (f32, vector<8xf32>, f64) {
  %a = math.erf %x : f32
  %b = math.erf %v : vector<8xf32>
  %c = math.erf %d : f64
  return %a, %b, %c : f32, vector<8xf32>, f64
}

// CHECK-LABEL: func.func @tanh
// CHECK-NOT: math.tanh %{{.*}} : f32
// CHECK-NOT: math.tanh %{{.*}} : vector<8xf32>
// CHECK: arith.divf
// CHECK: math.tanh %{{.*}} : f64
func.func @tanh(%x: f32, %v: vector<8xf32>, %d: f64) -> (f32, vector<8xf32>, f64) {
  %a = math.tanh %x : f32
  %b = math.tanh %v : vector<8xf32>
  %c = math.tanh %d : f64
  return %a, %b, %c : f32, vector<8xf32>, f64
}
