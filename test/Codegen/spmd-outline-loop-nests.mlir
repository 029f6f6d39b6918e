// RUN: spmd-opt %s --spmd-outline-loop-nests | FileCheck %s

#id = affine_map<(d0, d1) -> (d0, d1)>

// Two ReLUs over the same shape share one function (the constant 0 is
// cloned into it); a ReLU over another shape and a copy get their own; a
// value read from above that is not a constant becomes an argument; the
// linalg op on tensors stays.
// CHECK-LABEL: func.func @step
// CHECK-SAME: (%[[A:.*]]: memref<8x16xf32>, %[[B:.*]]: memref<8x16xf32>, %[[C:.*]]: memref<4x4xf32>, %[[S:.*]]: f32, %[[T:.*]]: tensor<4xf32>)
// CHECK: call @[[RELU:__spmd_generic_[0-9]+]](%[[A]], %[[B]]) : (memref<8x16xf32>, memref<8x16xf32>) -> ()
// CHECK-NEXT: call @[[RELU]](%[[B]], %[[A]]) : (memref<8x16xf32>, memref<8x16xf32>) -> ()
// CHECK-NEXT: call @[[RELU4:__spmd_generic_[0-9]+]](%[[C]]) : (memref<4x4xf32>) -> ()
// CHECK-NEXT: call @[[SCALE:__spmd_generic_[0-9]+]](%[[A]], %[[B]], %[[S]]) : (memref<8x16xf32>, memref<8x16xf32>, f32) -> ()
// CHECK-NEXT: call @[[COPY:__spmd_copy_[0-9]+]](%[[A]], %[[B]])
// CHECK-NEXT: linalg.fill
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @step(%a: memref<8x16xf32>, %b: memref<8x16xf32>, %c: memref<4x4xf32>, %s: f32, %t: tensor<4xf32>) -> tensor<4xf32> {
  %zero = arith.constant 0.0 : f32
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : memref<8x16xf32>) outs(%b : memref<8x16xf32>) {
  ^bb0(%x: f32, %y: f32):
    %r = arith.maximumf %x, %zero : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%b : memref<8x16xf32>) outs(%a : memref<8x16xf32>) {
  ^bb0(%x: f32, %y: f32):
    %r = arith.maximumf %x, %zero : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%c : memref<4x4xf32>) outs(%c : memref<4x4xf32>) {
  ^bb0(%x: f32, %y: f32):
    %r = arith.maximumf %x, %zero : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : memref<8x16xf32>) outs(%b : memref<8x16xf32>) {
  ^bb0(%x: f32, %y: f32):
    %r = arith.mulf %x, %s : f32
    linalg.yield %r : f32
  }
  linalg.copy ins(%a : memref<8x16xf32>) outs(%b : memref<8x16xf32>)
  %filled = linalg.fill ins(%zero : f32) outs(%t : tensor<4xf32>) -> tensor<4xf32>
  return %filled : tensor<4xf32>
}

// A copy between strided layouts becomes an outlined linalg.copy; a copy
// between identity layouts stays a memref.copy (a memcpy).
// CHECK-LABEL: func.func @copies
// CHECK-SAME: (%[[X:.*]]: memref<8x16xf32>, %[[Y:.*]]: memref<8x16xf32, strided<[48, 1], offset: 16>>, %[[Z:.*]]: memref<8x16xf32>)
// CHECK-NEXT: call @[[SCOPY:__spmd_copy_[0-9]+]](%[[X]], %[[Y]])
// CHECK-NEXT: memref.copy %[[X]], %[[Z]] : memref<8x16xf32> to memref<8x16xf32>
func.func @copies(%x: memref<8x16xf32>, %y: memref<8x16xf32, strided<[48, 1], offset: 16>>, %z: memref<8x16xf32>) {
  memref.copy %x, %y : memref<8x16xf32> to memref<8x16xf32, strided<[48, 1], offset: 16>>
  memref.copy %x, %z : memref<8x16xf32> to memref<8x16xf32>
  return
}

// CHECK: func.func private @[[RELU]](%[[X:.*]]: memref<8x16xf32>, %[[Y:.*]]: memref<8x16xf32>)
// CHECK-SAME: attributes {llvm.linkage = #llvm.linkage<internal>, passthrough = ["noinline"]}
// CHECK-NEXT: %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: linalg.generic {{.*}} ins(%[[X]] : memref<8x16xf32>) outs(%[[Y]] : memref<8x16xf32>)
// CHECK: arith.maximumf %{{.*}}, %[[Z]] : f32
// CHECK: return
// CHECK: func.func private @[[RELU4]](%[[CARG:.*]]: memref<4x4xf32>)
// CHECK: ins(%[[CARG]] : memref<4x4xf32>) outs(%[[CARG]] : memref<4x4xf32>)
// CHECK: func.func private @[[SCALE]](%{{.*}}: memref<8x16xf32>, %{{.*}}: memref<8x16xf32>, %[[SARG:.*]]: f32)
// CHECK: arith.mulf %{{.*}}, %[[SARG]] : f32
// CHECK: func.func private @[[COPY]]
// CHECK: linalg.copy
// CHECK: func.func private @[[SCOPY]](%{{.*}}: memref<8x16xf32>, %{{.*}}: memref<8x16xf32, strided<[48, 1], offset: 16>>)
// CHECK: linalg.copy
// CHECK-NOT: func.func private
