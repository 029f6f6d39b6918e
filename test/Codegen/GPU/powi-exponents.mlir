// RUN: spmd-gpu-opt %s --split-input-file --pass-pipeline='builtin.module(gpu.module(spmd-gpu-powi-exponents))' --verify-diagnostics | FileCheck %s

// An i64 exponent (torch-mlir's `x ** 2`) becomes an i32 one, saturated
// with its parity kept; an i32 exponent is left alone.
// CHECK-LABEL: gpu.func @square
// CHECK-SAME: (%[[X:[^:]*]]: f32, %[[N:[^:]*]]: i64, %[[M:[^:]*]]: i32
// CHECK: %[[PARITY:.*]] = arith.andi %[[N]], %c1_i64 : i64
// CHECK: %[[HI:.*]] = arith.addi %c2147483646_i64, %[[PARITY]] : i64
// CHECK: %[[LO:.*]] = arith.addi %c-2147483648_i64, %[[PARITY]] : i64
// CHECK: %[[MAX:.*]] = arith.maxsi %[[N]], %[[LO]] : i64
// CHECK: %[[MIN:.*]] = arith.minsi %[[MAX]], %[[HI]] : i64
// CHECK: %[[N32:.*]] = arith.trunci %[[MIN]] : i64 to i32
// CHECK: math.fpowi %[[X]], %[[N32]] : f32, i32
// CHECK: math.fpowi %[[X]], %[[M]] : f32, i32
gpu.module @kernels {
  gpu.func @square(%x: f32, %n: i64, %m: i32, %out: memref<2xf32>) kernel {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %y = math.fpowi %x, %n : f32, i64
    %z = math.fpowi %x, %m : f32, i32
    memref.store %y, %out[%c0] : memref<2xf32>
    memref.store %z, %out[%c1] : memref<2xf32>
    gpu.return
  }
}

// -----

gpu.module @kernels {
  gpu.func @vector(%x: vector<2xf32>, %n: vector<2xi64>, %out: memref<vector<2xf32>>) kernel {
    // expected-error @+1 {{vector exponents are not supported}}
    %y = math.fpowi %x, %n : vector<2xf32>, vector<2xi64>
    memref.store %y, %out[] : memref<vector<2xf32>>
    gpu.return
  }
}
