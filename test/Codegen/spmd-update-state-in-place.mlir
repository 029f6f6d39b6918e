// RUN: spmd-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(spmd-update-state-in-place))' | FileCheck %s

memref.global "public" @w : memref<4xf32> = dense<0.0> {alignment = 128 : i64}
#id = affine_map<(d0) -> (d0)>

// SGD as convert-spmd-to-runtime leaves it: the parameter read in place,
// updated by one elementwise generic, stored by a copy. The generic now
// writes the global; no copy is left.
// CHECK-LABEL: func.func @sgd
// CHECK: %[[OLD:.*]] = bufferization.to_tensor %{{.*}} restrict : memref<4xf32>
// CHECK: %[[G:.*]] = memref.get_global @w
// CHECK: %[[T:.*]] = bufferization.to_tensor %[[G]] restrict writable
// CHECK: linalg.generic {{.*}} ins(%[[OLD]], %{{.*}} : tensor<4xf32>, tensor<4xf32>) outs(%[[T]] : tensor<4xf32>)
// CHECK-NOT: memref.copy
// CHECK: return
func.func @sgd(%grad: tensor<4xf32>) -> tensor<4xf32> {
  %g0 = memref.get_global @w : memref<4xf32>
  %p = bufferization.to_tensor %g0 restrict : memref<4xf32> to tensor<4xf32>
  %sq = arith.mulf %p, %p : tensor<4xf32>
  %e = tensor.empty() : tensor<4xf32>
  %new = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%p, %grad : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %r = arith.subf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  %b = bufferization.to_buffer %new read_only : tensor<4xf32> to memref<4xf32>
  %g1 = memref.get_global @w : memref<4xf32>
  memref.copy %b, %g1 : memref<4xf32> to memref<4xf32>
  return %sq : tensor<4xf32>
}

// -----

memref.global "public" @w : memref<4xf32> = dense<0.0> {alignment = 128 : i64}
memref.global "public" @m : memref<4xf32> = dense<0.0> {alignment = 128 : i64}
memref.global "public" @v : memref<4xf32> = dense<0.0> {alignment = 128 : i64}
#id = affine_map<(d0) -> (d0)>
#rev = affine_map<(d0) -> (3 - d0)>

// Kept as copies: the old parameter read after the update (a later
// reader would see the new value), the old value read reversed by the
// updating generic itself (another element is written first), and a
// value stored twice.
// CHECK-LABEL: func.func @kept
// CHECK-COUNT-4: memref.copy
// CHECK-NOT: writable
func.func @kept(%grad: tensor<4xf32>) -> tensor<4xf32> {
  %g0 = memref.get_global @w : memref<4xf32>
  %p = bufferization.to_tensor %g0 restrict : memref<4xf32> to tensor<4xf32>
  %e = tensor.empty() : tensor<4xf32>
  %new = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%p, %grad : tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %r = arith.subf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  %late = arith.mulf %p, %p : tensor<4xf32>
  %b = bufferization.to_buffer %new read_only : tensor<4xf32> to memref<4xf32>
  %g1 = memref.get_global @w : memref<4xf32>
  memref.copy %b, %g1 : memref<4xf32> to memref<4xf32>

  %h0 = memref.get_global @m : memref<4xf32>
  %q = bufferization.to_tensor %h0 restrict : memref<4xf32> to tensor<4xf32>
  %rev = linalg.generic {indexing_maps = [#rev, #id], iterator_types = ["parallel"]}
      ins(%q : tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%a: f32, %out: f32):
    linalg.yield %a : f32
  } -> tensor<4xf32>
  %c = bufferization.to_buffer %rev read_only : tensor<4xf32> to memref<4xf32>
  %h1 = memref.get_global @m : memref<4xf32>
  memref.copy %c, %h1 : memref<4xf32> to memref<4xf32>

  %twice = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%grad : tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%a: f32, %out: f32):
    %r = arith.negf %a : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  %d = bufferization.to_buffer %twice read_only : tensor<4xf32> to memref<4xf32>
  %v0 = memref.get_global @v : memref<4xf32>
  memref.copy %d, %v0 : memref<4xf32> to memref<4xf32>
  %v1 = memref.get_global @v : memref<4xf32>
  memref.copy %d, %v1 : memref<4xf32> to memref<4xf32>
  return %late : tensor<4xf32>
}

// -----

memref.global "public" @a : memref<4xf32> = dense<0.0> {alignment = 128 : i64}
memref.global "public" @b : memref<4xf32> = dense<0.0> {alignment = 128 : i64}
#id = affine_map<(d0) -> (d0)>

// One value stored into two states: its generic can write only one, so
// both stay copies.
// CHECK-LABEL: func.func @two_states
// CHECK-COUNT-2: memref.copy
// CHECK-NOT: writable
func.func @two_states(%grad: tensor<4xf32>) {
  %e = tensor.empty() : tensor<4xf32>
  %v = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%grad : tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%x: f32, %out: f32):
    %r = arith.negf %x : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  %buf = bufferization.to_buffer %v read_only : tensor<4xf32> to memref<4xf32>
  %ga = memref.get_global @a : memref<4xf32>
  memref.copy %buf, %ga : memref<4xf32> to memref<4xf32>
  %gb = memref.get_global @b : memref<4xf32>
  memref.copy %buf, %gb : memref<4xf32> to memref<4xf32>
  return
}

// -----

// fully_shard's uneven chunk: this rank's rows (a dynamic count) padded
// with zero rows to the storage's chunk size before the store. The update
// writes the global's leading rows, the padding rows are filled there,
// and neither the padded copy nor the copy into the global remains.
// CHECK-LABEL: func.func @padded_chunk
// CHECK: tensor.empty
// CHECK: %[[G:.*]] = memref.get_global @chunk_p
// CHECK: %[[T:.*]] = bufferization.to_tensor %[[G]] restrict writable
// CHECK: %[[ROWS:.*]] = tensor.extract_slice %[[T]][0, 0] [%arg1, 4] [1, 1]
// CHECK: %[[NEW:.*]] = linalg.generic {{.*}} outs(%[[ROWS]] : tensor<?x4xf32>)
// CHECK: %[[W:.*]] = tensor.insert_slice %[[NEW]] into %[[T]][0, 0] [%arg1, 4] [1, 1]
// CHECK: %[[TAIL:.*]] = tensor.extract_slice %[[W]][%arg1, 0] [%arg2, 4] [1, 1]
// CHECK: %[[F:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[TAIL]] : tensor<?x4xf32>)
// CHECK: tensor.insert_slice %[[F]] into %[[W]][%arg1, 0] [%arg2, 4] [1, 1]
// CHECK-NOT: tensor.pad
// CHECK-NOT: memref.copy
memref.global "public" @chunk_p : memref<3x4xf32> = dense<0.0>
func.func @padded_chunk(%grad: tensor<?x4xf32>, %n: index, %high: index) {
  %zero = arith.constant 0.0 : f32
  %g0 = memref.get_global @chunk_p : memref<3x4xf32>
  %p = bufferization.to_tensor %g0 restrict : memref<3x4xf32> to tensor<3x4xf32>
  %rows = tensor.extract_slice %p[0, 0] [%n, 4] [1, 1] : tensor<3x4xf32> to tensor<?x4xf32>
  %e = tensor.empty(%n) : tensor<?x4xf32>
  %new = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%rows, %grad : tensor<?x4xf32>, tensor<?x4xf32>) outs(%e : tensor<?x4xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %r = arith.subf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<?x4xf32>
  %padded = tensor.pad %new low[0, 0] high[%high, 0] {
  ^bb0(%i: index, %j: index):
    tensor.yield %zero : f32
  } : tensor<?x4xf32> to tensor<3x4xf32>
  %g1 = memref.get_global @chunk_p : memref<3x4xf32>
  %b = bufferization.to_buffer %padded read_only : tensor<3x4xf32> to memref<3x4xf32>
  memref.copy %b, %g1 : memref<3x4xf32> to memref<3x4xf32>
  return
}
