// RUN: FileCheck %s --input-file=%spmd_obj_root/docs/Spmd/SpmdOps.md
// RUN: FileCheck %s --check-prefix=ATTR --input-file=%spmd_obj_root/docs/Spmd/SpmdAttrs.md

// The op documentation is generated from SpmdOps.td (add_mlir_doc) and covers
// every op, in alphabetical order.
// CHECK: ### `spmd.adam`
// CHECK: ### `spmd.all_gather`
// CHECK: ### `spmd.all_reduce`
// CHECK: ### `spmd.all_to_all`
// CHECK: ### `spmd.annotate`
// CHECK: ### `spmd.attention_grad`
// CHECK: ### `spmd.attention`
// CHECK: ### `spmd.broadcast`
// CHECK: ### `spmd.foreach_add`
// CHECK: ### `spmd.foreach_add_scalar`
// CHECK: ### `spmd.foreach_addcdiv`
// CHECK: ### `spmd.foreach_addcmul`
// CHECK: ### `spmd.foreach_div`
// CHECK: ### `spmd.foreach_div_scalar`
// CHECK: ### `spmd.foreach_lerp`
// CHECK: ### `spmd.foreach_maximum`
// CHECK: ### `spmd.foreach_mul`
// CHECK: ### `spmd.foreach_mul_scalar`
// CHECK: ### `spmd.foreach_neg`
// CHECK: ### `spmd.foreach_sqrt`
// CHECK: ### `spmd.load`
// CHECK: ### `spmd.mesh`
// CHECK: ### `spmd.redistribute`
// CHECK: ### `spmd.reduce_scatter`
// CHECK: ### `spmd.sgd`
// CHECK: ### `spmd.state`
// CHECK: ### `spmd.store`
// CHECK: ### `spmd.wait`

// ATTR: ### PartialAttr
// ATTR: ### ReplicateAttr
// ATTR: ### ShardAttr
// ATTR: ### SpecAttr
