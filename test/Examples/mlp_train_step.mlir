// RUN: spmd-opt %S/../../examples/mlp_train_step.mlir --spmd-distribute | FileCheck %s
// RUN: spmd-opt %S/../../examples/mlp_train_step.mlir --spmd-distribute --spmd-lower-to-cpu | FileCheck %s --check-prefix=LLVM

// The README's main example: data parallel over 2 ranks, one all_reduce per
// gradient plus one for the loss, nothing else.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: tensor<8x6xf32> {spmd.spec = #spmd.spec<@dp, [replicate]>}
// CHECK-COUNT-3: spmd.all_reduce
// CHECK-NOT: spmd.all_gather
// CHECK-NOT: spmd.reduce_scatter
// CHECK-NOT: spmd.all_to_all
// CHECK-LABEL: func.func @dump

// LLVM-DAG: llvm.func @main()
// LLVM-DAG: llvm.call @spmdAllReduce
// LLVM-DAG: llvm.func @spmdAllReduce(i64, i64, i64, i32, i32, i64, i64)
