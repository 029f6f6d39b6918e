// RUN: spmd-opt %s --spmd-polynomial-erf | FileCheck %s
// f32 erf, scalar or vector, becomes arithmetic (no call left to make);
// f64 erf stays for libm. Accuracy: polynomial-erf-run.mlir.
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
