// RUN: not spmd-opt %s 2>&1 | FileCheck %s
// CHECK: dynamic_mesh.mlir:5:22: error: expected static shape

// Meshes have static sizes.
spmd.mesh @m(shape = ?x4)
