// RUN: not spmd-opt %s 2>&1 | FileCheck %s
// CHECK: unknown_mesh.mlir:6:8: error: 'spmd.all_gather' op @tp does not name an 'spmd.mesh'

spmd.mesh @dp(shape = 4)
func.func @f(%x: tensor<4xf32>) -> tensor<16xf32> {
  %0 = spmd.all_gather %x on @tp axes = [0] gather_dim = 0 : tensor<4xf32> -> tensor<16xf32>
  return %0 : tensor<16xf32>
}
