// RUN: spmd-opt %S/../../examples/linear_mse_sgd.mlir | FileCheck %s
// RUN: spmd-opt %S/../../examples/linear_mse_sgd.mlir --mlir-print-op-generic | spmd-opt | FileCheck %s

// The README's worked example stays valid.
// CHECK: spmd.mesh @dp(shape = 2)
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: {spmd.spec = #spmd.spec<@dp, [shard<0>]>}
// CHECK: %[[W:.*]] = spmd.load @fc.weight
// CHECK: linalg.matmul
// CHECK: %[[DW:.*]] = linalg.matmul
// CHECK: spmd.sgd params [%[[W]]] grads [%[[DW]]] momentum_buffers
// CHECK-COUNT-3: spmd.store
