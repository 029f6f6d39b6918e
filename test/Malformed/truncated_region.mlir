// RUN: not spmd-opt %s 2>&1 | FileCheck %s
// CHECK: truncated_region.mlir:5:51: error: expected operation name in quotes

spmd.mesh @m(shape = 4)
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
