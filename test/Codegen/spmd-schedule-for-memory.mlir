// RUN: spmd-opt %s --split-input-file '--spmd-schedule-for-memory=min-bytes=1' | FileCheck %s
// RUN: spmd-opt %s --split-input-file --spmd-schedule-for-memory | FileCheck %s --check-prefix=SMALL

// By default a move must save 1 MiB: these small programs stay as they are.
// SMALL-LABEL: func.func @head
// SMALL: linalg.matmul ins(%arg0

// The head's backward: dX (W's last use, 2 KiB) moves, with its init,
// above dW (8 KiB), so the gathered W (8 KiB) is freed before dW exists.
// CHECK-LABEL: func.func @head
// CHECK: %[[W:.*]] = bufferization.to_tensor
// CHECK: %[[E1:.*]] = tensor.empty() : tensor<16x32xf32>
// CHECK: %[[Z1:.*]] = linalg.fill {{.*}} outs(%[[E1]]
// CHECK: %[[DX:.*]] = linalg.matmul ins(%{{.*}}, %[[W]] {{.*}} outs(%[[Z1]]
// CHECK: tensor.empty() : tensor<64x32xf32>
// CHECK: %[[DW:.*]] = linalg.matmul
// CHECK: return %[[DW]], %[[DX]]
func.func @head(%dyT: tensor<64x16xf32>, %x: tensor<16x32xf32>, %dy: tensor<16x64xf32>) -> (tensor<64x32xf32>, tensor<16x32xf32>) {
  %c0 = arith.constant 0.0 : f32
  %buf = memref.alloc() : memref<64x32xf32>
  %w = bufferization.to_tensor %buf restrict writable : memref<64x32xf32> to tensor<64x32xf32>
  %e0 = tensor.empty() : tensor<64x32xf32>
  %z0 = linalg.fill ins(%c0 : f32) outs(%e0 : tensor<64x32xf32>) -> tensor<64x32xf32>
  %dw = linalg.matmul ins(%dyT, %x : tensor<64x16xf32>, tensor<16x32xf32>) outs(%z0 : tensor<64x32xf32>) -> tensor<64x32xf32>
  %e1 = tensor.empty() : tensor<16x32xf32>
  %z1 = linalg.fill ins(%c0 : f32) outs(%e1 : tensor<16x32xf32>) -> tensor<16x32xf32>
  %dx = linalg.matmul ins(%dy, %w : tensor<16x64xf32>, tensor<64x32xf32>) outs(%z1 : tensor<16x32xf32>) -> tensor<16x32xf32>
  return %dw, %dx : tensor<64x32xf32>, tensor<16x32xf32>
}

// -----

// Through a view (the slice shares W's buffer), and past an op that also
// reads a tensor the mover reads last (%dy: it stays alive until %dw, but
// W alone frees more than %dx takes).
// CHECK-LABEL: func.func @view_and_shared_input
// CHECK: linalg.generic
// CHECK: %[[DX:.*]] = linalg.matmul ins(%[[DY:.*]], %{{.*}} : tensor<16x64xf32>
// CHECK: linalg.matmul {{.*}}ins(%[[DY]]
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @view_and_shared_input(%x: tensor<16x32xf32>, %a: tensor<16x64xf32>) -> (tensor<64x32xf32>, tensor<16x32xf32>) {
  %c0 = arith.constant 0.0 : f32
  %buf = memref.alloc() : memref<65x32xf32>
  %padded = bufferization.to_tensor %buf restrict writable : memref<65x32xf32> to tensor<65x32xf32>
  %w = tensor.extract_slice %padded[0, 0] [64, 32] [1, 1] : tensor<65x32xf32> to tensor<64x32xf32>
  %ey = tensor.empty() : tensor<16x64xf32>
  %dy = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<16x64xf32>) outs(%ey : tensor<16x64xf32>) {
  ^bb0(%in: f32, %out: f32):
    %n = arith.negf %in : f32
    linalg.yield %n : f32
  } -> tensor<16x64xf32>
  %e0 = tensor.empty() : tensor<64x32xf32>
  %z0 = linalg.fill ins(%c0 : f32) outs(%e0 : tensor<64x32xf32>) -> tensor<64x32xf32>
  %dw = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d2, d0)>, affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%dy, %x : tensor<16x64xf32>, tensor<16x32xf32>) outs(%z0 : tensor<64x32xf32>) -> tensor<64x32xf32>
  %e1 = tensor.empty() : tensor<16x32xf32>
  %z1 = linalg.fill ins(%c0 : f32) outs(%e1 : tensor<16x32xf32>) -> tensor<16x32xf32>
  %dx = linalg.matmul ins(%dy, %w : tensor<16x64xf32>, tensor<64x32xf32>) outs(%z1 : tensor<16x32xf32>) -> tensor<16x32xf32>
  return %dw, %dx : tensor<64x32xf32>, tensor<16x32xf32>
}

// -----

// Nothing moves: above an op with effects (a call, a collective keeps its
// place),
// above the op defining what it reads, or when what it frees is not the
// step's own (an argument) or is not more than what it produces.
// CHECK-LABEL: func.func @stays
// CHECK: linalg.matmul ins(%arg0
// CHECK: call @reduce
// CHECK: linalg.matmul ins(%arg2
// CHECK-LABEL: func.func @argument_not_freed
// CHECK: linalg.matmul ins(%arg0
// CHECK: linalg.matmul ins(%arg2
// CHECK-LABEL: func.func @produces_more
// CHECK: linalg.matmul ins(%arg0
// CHECK: linalg.matmul ins(%arg2
func.func private @reduce(tensor<64x32xf32>) -> tensor<64x32xf32>
func.func @stays(%dyT: tensor<64x16xf32>, %x: tensor<16x32xf32>, %dy: tensor<16x64xf32>) -> (tensor<64x32xf32>, tensor<16x32xf32>) {
  %c0 = arith.constant 0.0 : f32
  %buf = memref.alloc() : memref<64x32xf32>
  %w = bufferization.to_tensor %buf restrict writable : memref<64x32xf32> to tensor<64x32xf32>
  %e0 = tensor.empty() : tensor<64x32xf32>
  %z0 = linalg.fill ins(%c0 : f32) outs(%e0 : tensor<64x32xf32>) -> tensor<64x32xf32>
  %dw = linalg.matmul ins(%dyT, %x : tensor<64x16xf32>, tensor<16x32xf32>) outs(%z0 : tensor<64x32xf32>) -> tensor<64x32xf32>
  %r = func.call @reduce(%dw) : (tensor<64x32xf32>) -> tensor<64x32xf32>
  %e1 = tensor.empty() : tensor<16x32xf32>
  %z1 = linalg.fill ins(%c0 : f32) outs(%e1 : tensor<16x32xf32>) -> tensor<16x32xf32>
  %dx = linalg.matmul ins(%dy, %w : tensor<16x64xf32>, tensor<64x32xf32>) outs(%z1 : tensor<16x32xf32>) -> tensor<16x32xf32>
  return %r, %dx : tensor<64x32xf32>, tensor<16x32xf32>
}
func.func @argument_not_freed(%dyT: tensor<64x16xf32>, %x: tensor<16x32xf32>, %dy: tensor<16x64xf32>, %w: tensor<64x32xf32>) -> (tensor<64x32xf32>, tensor<16x32xf32>) {
  %c0 = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<64x32xf32>
  %z0 = linalg.fill ins(%c0 : f32) outs(%e0 : tensor<64x32xf32>) -> tensor<64x32xf32>
  %dw = linalg.matmul ins(%dyT, %x : tensor<64x16xf32>, tensor<16x32xf32>) outs(%z0 : tensor<64x32xf32>) -> tensor<64x32xf32>
  %e1 = tensor.empty() : tensor<16x32xf32>
  %z1 = linalg.fill ins(%c0 : f32) outs(%e1 : tensor<16x32xf32>) -> tensor<16x32xf32>
  %dx = linalg.matmul ins(%dy, %w : tensor<16x64xf32>, tensor<64x32xf32>) outs(%z1 : tensor<16x32xf32>) -> tensor<16x32xf32>
  return %dw, %dx : tensor<64x32xf32>, tensor<16x32xf32>
}
func.func @produces_more(%a: tensor<16x4xf32>, %b: tensor<4x16xf32>, %x: tensor<64x4xf32>) -> (tensor<16x16xf32>, tensor<64x16xf32>) {
  %c0 = arith.constant 0.0 : f32
  %buf = memref.alloc() : memref<4x16xf32>
  %w = bufferization.to_tensor %buf restrict writable : memref<4x16xf32> to tensor<4x16xf32>
  %e0 = tensor.empty() : tensor<16x16xf32>
  %z0 = linalg.fill ins(%c0 : f32) outs(%e0 : tensor<16x16xf32>) -> tensor<16x16xf32>
  %p = linalg.matmul ins(%a, %b : tensor<16x4xf32>, tensor<4x16xf32>) outs(%z0 : tensor<16x16xf32>) -> tensor<16x16xf32>
  %e1 = tensor.empty() : tensor<64x16xf32>
  %z1 = linalg.fill ins(%c0 : f32) outs(%e1 : tensor<64x16xf32>) -> tensor<64x16xf32>
  %q = linalg.matmul ins(%x, %w : tensor<64x4xf32>, tensor<4x16xf32>) outs(%z1 : tensor<64x16xf32>) -> tensor<64x16xf32>
  return %p, %q : tensor<16x16xf32>, tensor<64x16xf32>
}
