// RUN: not spmd-opt %s 2>&1 | FileCheck %s
// CHECK: bad_spec_mesh.mlir:5:1: error: 'spmd.state' op spec refers to @w, which is not an 'spmd.mesh'

spmd.state @w : tensor<4xf32> role = param
spmd.state @v : tensor<4xf32> role = param spec = <@w, [replicate]>
