// RUN: spmd-opt %s --convert-spmd-to-runtime --split-input-file --verify-diagnostics | FileCheck %s

spmd.mesh @m(shape = 2x4)

// A synchronous collective: the input as an identity-layout buffer (copied
// by bufferization only when its buffer has another layout), a fresh output,
// a runtime call with their addresses; mesh shape packed (2 | 4 << 16) and
// the axes as a mask.
// CHECK-LABEL: func.func @sync
// CHECK: %[[IN:.*]] = bufferization.to_buffer %{{.*}} read_only : tensor<4x8xf32> to memref<4x8xf32>
// CHECK: %[[OUT:.*]] = memref.alloc() : memref<16x8xf32>
// CHECK-DAG: %[[MESH:.*]] = arith.constant 262146 : i64
// CHECK-DAG: %[[MASK:.*]] = arith.constant 2 : i64
// CHECK: call @spmdAllGather(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[MESH]], %[[MASK]]) : (i64, i64, i64, i64, i64, i32, i64, i64) -> ()
// CHECK: bufferization.to_tensor %[[OUT]] restrict writable
// CHECK-NOT: spmd.
func.func @sync(%x: tensor<4x8xf32>) -> tensor<16x8xf32> {
  %0 = spmd.all_gather %x on @m axes = [1] gather_dim = 0 : tensor<4x8xf32> -> tensor<16x8xf32>
  return %0 : tensor<16x8xf32>
}

// An all_to_all of any rank: dimensions neither split nor concatenated
// merge into the one before them (3x4 -> 12; the split dimension's inner 8
// -> 2x8 = 16), so the runtime's four dimensions are [12, 4, 16, 1], split
// dimension 2, concatenation dimension 1.
// CHECK-LABEL: func.func @all_to_all_rank5
// CHECK: %[[D0:.*]] = arith.constant 12 : i64
// CHECK-NEXT: %[[D1:.*]] = arith.constant 4 : i64
// CHECK-NEXT: %[[D2:.*]] = arith.constant 16 : i64
// CHECK-NEXT: %[[D3:.*]] = arith.constant 1 : i64
// CHECK-NEXT: %[[S:.*]] = arith.constant 2 : i64
// CHECK-NEXT: %[[C:.*]] = arith.constant 1 : i64
// CHECK-NEXT: call @spmdAllToAll4(%{{.*}}, %{{.*}}, %[[D0]], %[[D1]], %[[D2]], %[[D3]], %[[S]], %[[C]], %{{.*}}, %{{.*}}, %{{.*}})
func.func @all_to_all_rank5(%x: tensor<3x4x4x2x8xf32>) -> tensor<3x4x8x1x8xf32> {
  %0 = spmd.all_to_all %x on @m axes = [0] split_dim = 3 concat_dim = 2 : tensor<3x4x4x2x8xf32> -> tensor<3x4x8x1x8xf32>
  return %0 : tensor<3x4x8x1x8xf32>
}

// Asynchronous: the start returns a handle; the wait completes it.
// CHECK-LABEL: func.func @async
// CHECK: %[[OUT:.*]] = memref.alloc() : memref<4x8xf32>
// CHECK: %[[H:.*]] = call @spmdAllReduceStart(
// CHECK: arith.mulf
// CHECK: call @spmdWait(%[[H]]) : (i64) -> ()
// CHECK: bufferization.to_tensor %[[OUT]]
// CHECK-NOT: spmd.
func.func @async(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %f = spmd.all_reduce %x on @m axes = [0, 1] sum : tensor<4x8xf32> -> !spmd.future<tensor<4x8xf32>>
  %y = arith.mulf %x, %x : tensor<4x8xf32>
  %r = spmd.wait %f : !spmd.future<tensor<4x8xf32>>
  return %r, %y : tensor<4x8xf32>, tensor<4x8xf32>
}

// Coalesced: one group of non-blocking calls (NCCL launches it as one
// operation), then the waits, then the results.
// CHECK-LABEL: func.func @coalesced
// CHECK: call @spmdGroupStart() : () -> ()
// CHECK: %[[H0:.*]] = call @spmdAllReduceStart(
// CHECK: %[[H1:.*]] = call @spmdAllReduceStart(
// CHECK: call @spmdGroupEnd() : () -> ()
// CHECK: call @spmdWait(%[[H0]]) : (i64) -> ()
// CHECK: call @spmdWait(%[[H1]]) : (i64) -> ()
// CHECK: bufferization.to_tensor
// CHECK: bufferization.to_tensor
// CHECK-NOT: spmd.
func.func @coalesced(%x: tensor<4x8xf32>, %y: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>) {
  %r:2 = spmd.all_reduce %x, %y on @m axes = [0] sum : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>, tensor<8xf32>
  return %r#0, %r#1 : tensor<4x8xf32>, tensor<8xf32>
}

// State becomes a public zero-initialized global; loads copy out, stores in;
// every function that touches state first registers it by name.
// CHECK: memref.global "public" @fc.w : memref<4xf32> = dense<0.000000e+00> {alignment = 128 : i64, spmd.state_dtype = 0 : i32}
// CHECK-LABEL: func.func @state
// CHECK-NEXT: call @spmd_register_state() : () -> ()
// CHECK: %[[G:.*]] = memref.get_global @fc.w : memref<4xf32>
// CHECK: memref.copy %[[G]], %{{.*}}
// CHECK: %[[G2:.*]] = memref.get_global @fc.w : memref<4xf32>
// CHECK: memref.copy %{{.*}}, %[[G2]]
spmd.state @"fc.w" : tensor<4xf32> role = param
func.func @state(%v: tensor<4xf32>) -> tensor<4xf32> {
  %w = spmd.load @"fc.w" : tensor<4xf32>
  spmd.store %v to @"fc.w" : tensor<4xf32>
  return %w : tensor<4xf32>
}

// A load whose reads all come before the next store reads the global in
// place (no copy); the store copies the new value in.
// CHECK-LABEL: func.func @update
// CHECK: %[[G:.*]] = memref.get_global @fc.v : memref<4xf32>
// CHECK-NEXT: %[[T:.*]] = bufferization.to_tensor %[[G]] restrict : memref<4xf32> to tensor<4xf32>
// CHECK-NEXT: %[[D:.*]] = arith.addf %[[T]], %[[T]]
// CHECK: %[[B:.*]] = bufferization.to_buffer %[[D]] read_only : tensor<4xf32> to memref<4xf32>
// CHECK: memref.copy %[[B]], %{{.*}} : memref<4xf32> to memref<4xf32>
spmd.state @"fc.v" : tensor<4xf32> role = param
func.func @update() {
  %v = spmd.load @"fc.v" : tensor<4xf32>
  %d = arith.addf %v, %v : tensor<4xf32>
  spmd.store %d to @"fc.v" : tensor<4xf32>
  return
}

// The registration of every state by name, size and element type.
// CHECK-DAG: llvm.mlir.global internal constant @__spmd_state_name_0("fc.w\00")
// CHECK-LABEL: func.func @spmd_register_state()
// CHECK: %[[NAME:.*]] = llvm.mlir.addressof @__spmd_state_name_0 : !llvm.ptr
// CHECK: %[[GL:.*]] = memref.get_global @fc.w : memref<4xf32>
// CHECK: call @spmdStateRegister(%[[NAME]], %{{.*}}, %{{.*}}, %{{.*}}) : (!llvm.ptr, i64, i64, i32) -> ()

// -----

spmd.mesh @m(shape = 2x2)
func.func @unsorted_axes(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'spmd.all_reduce' op the CPU runtime needs the axes of a group in increasing order}}
  %0 = spmd.all_reduce %x on @m axes = [1, 0] sum : tensor<4xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Regression (heap-use-after-free, then a crash): a store followed by two
// loads of one state. Neither load may read the global in place (each sees
// the other); both copy it out after the store.
// CHECK-LABEL: func.func @store_then_two_loads
// CHECK: memref.copy %{{.*}}, %[[G0:.*]] : memref<4xf32> to memref<4xf32>
// CHECK: %[[G1:.*]] = memref.get_global @s : memref<4xf32>
// CHECK: %[[C1:.*]] = memref.alloc() : memref<4xf32>
// CHECK: memref.copy %[[G1]], %[[C1]]
// CHECK: %[[G2:.*]] = memref.get_global @s : memref<4xf32>
// CHECK: %[[C2:.*]] = memref.alloc() : memref<4xf32>
// CHECK: memref.copy %[[G2]], %[[C2]]
spmd.state @s : tensor<4xf32> role = param
func.func @store_then_two_loads(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  spmd.store %x to @s : tensor<4xf32>
  %a = spmd.load @s : tensor<4xf32>
  %b = spmd.load @s : tensor<4xf32>
  return %a, %b : tensor<4xf32>, tensor<4xf32>
}

// -----

// Public functions that communicate check, on their first call, that every
// rank runs the same program (a hash of the module); private helpers and
// functions without collectives do not.
// CHECK-DAG: llvm.mlir.global internal constant @__spmd_program_name_step("step\00")
// CHECK-LABEL: func.func @step
// CHECK-NEXT: %[[NAME:.*]] = llvm.mlir.addressof @__spmd_program_name_step : !llvm.ptr
// CHECK-NEXT: %[[HASH:.*]] = arith.constant {{-?[0-9]+}} : i64
// CHECK-NEXT: call @spmdProgramCheck(%[[HASH]], %[[NAME]]) : (i64, !llvm.ptr) -> ()
// CHECK-LABEL: func.func @local_only
// CHECK-NOT: spmdProgramCheck
// CHECK: return
spmd.mesh @dp(shape = 2)
func.func @step(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = spmd.all_reduce %x on @dp axes = [0] sum : tensor<4xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
func.func @local_only(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = arith.addf %x, %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// 16-bit floats get their own element type codes (SPMD_BF16 = 4,
// SPMD_F16 = 5); the runtime reduces them in f32.
spmd.mesh @m(shape = 2)
// CHECK-LABEL: func.func @half_types
// CHECK-DAG: %[[BF:.*]] = arith.constant 4 : i32
// CHECK: call @spmdAllReduce(%{{.*}}, %{{.*}}, %{{.*}}, %[[BF]], %{{.*}}, %{{.*}}, %{{.*}})
// CHECK-DAG: %[[H:.*]] = arith.constant 5 : i32
// CHECK: call @spmdAllGather(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[H]], %{{.*}}, %{{.*}})
func.func @half_types(%x: tensor<4xbf16>, %y: tensor<2xf16>) -> (tensor<4xbf16>, tensor<4xf16>) {
  %0 = spmd.all_reduce %x on @m axes = [0] sum : tensor<4xbf16> -> tensor<4xbf16>
  %1 = spmd.all_gather %y on @m axes = [0] gather_dim = 0 : tensor<2xf16> -> tensor<4xf16>
  return %0, %1 : tensor<4xbf16>, tensor<4xf16>
}

// -----

spmd.mesh @m(shape = 2)
func.func @f8(%x: tensor<4xf8E4M3FN>) -> tensor<4xf8E4M3FN> {
  // expected-error @+1 {{'spmd.all_reduce' op the CPU runtime does not support element type 'f8E4M3FN'}}
  %0 = spmd.all_reduce %x on @m axes = [0] sum : tensor<4xf8E4M3FN> -> tensor<4xf8E4M3FN>
  return %0 : tensor<4xf8E4M3FN>
}
