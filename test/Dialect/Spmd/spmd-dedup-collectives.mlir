// RUN: spmd-opt %s --spmd-dedup-collectives | FileCheck %s

spmd.mesh @dp(shape = 4)

// Several optimizer updates reading one partial gradient pay one all_reduce.
// CHECK-LABEL: func.func @one_all_reduce_per_gradient
// CHECK: %[[R:.*]] = spmd.all_reduce %{{.*}} on @dp axes = [0] sum
// CHECK-NOT: spmd.all_reduce
// CHECK: spmd.sgd params [%{{.*}}] grads [%[[R]]]
// CHECK: spmd.foreach_mul [%[[R]]], [%[[R]]]
func.func @one_all_reduce_per_gradient(%p: tensor<8xf32>, %g: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %a = spmd.all_reduce %g on @dp axes = [0] sum : tensor<8xf32> -> tensor<8xf32>
  %p1 = spmd.sgd params [%p] grads [%a] {lr = 0.1 : f64} : tensor<8xf32>
  %b = spmd.all_reduce %g on @dp axes = [0] sum : tensor<8xf32> -> tensor<8xf32>
  %c = spmd.all_reduce %g on @dp axes = [0] sum : tensor<8xf32> -> tensor<8xf32>
  %sq = spmd.foreach_mul [%b], [%c] : tensor<8xf32>
  return %p1, %sq : tensor<8xf32>, tensor<8xf32>
}

// Asynchronous starts and their waits merge too; different collectives stay.
// CHECK-LABEL: func.func @async
// CHECK: %[[F:.*]] = spmd.all_reduce %{{.*}} on @dp axes = [0] sum : tensor<8xf32> -> !spmd.future<tensor<8xf32>>
// CHECK-NEXT: %[[W:.*]] = spmd.wait %[[F]]
// CHECK-NEXT: %[[M:.*]] = spmd.all_reduce %{{.*}} on @dp axes = [0] max
// CHECK-NEXT: return %[[W]], %[[W]], %[[M]]
func.func @async(%g: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %f0 = spmd.all_reduce %g on @dp axes = [0] sum : tensor<8xf32> -> !spmd.future<tensor<8xf32>>
  %w0 = spmd.wait %f0 : !spmd.future<tensor<8xf32>>
  %f1 = spmd.all_reduce %g on @dp axes = [0] sum : tensor<8xf32> -> !spmd.future<tensor<8xf32>>
  %w1 = spmd.wait %f1 : !spmd.future<tensor<8xf32>>
  %m = spmd.all_reduce %g on @dp axes = [0] max : tensor<8xf32> -> tensor<8xf32>
  return %w0, %w1, %m : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}

// Round trips: slicing a gather back to the chunk it came from, and
// gathering a local slice of a replicated value.
// CHECK-LABEL: func.func @round_trips
// CHECK-SAME: (%[[S:.*]]: tensor<2x3xf32>, %[[R:.*]]: tensor<8x3xf32>)
// CHECK-NOT: spmd.
// CHECK: return %[[S]], %[[R]]
func.func @round_trips(%s: tensor<2x3xf32>, %r: tensor<8x3xf32>) -> (tensor<2x3xf32>, tensor<8x3xf32>) {
  %g = spmd.all_gather %s on @dp axes = [0] gather_dim = 0 : tensor<2x3xf32> -> tensor<8x3xf32>
  %back = spmd.local_slice %g on @dp axes = [0] dim = 0 : tensor<8x3xf32> -> tensor<2x3xf32>
  %l = spmd.local_slice %r on @dp axes = [0] dim = 0 : tensor<8x3xf32> -> tensor<2x3xf32>
  %again = spmd.all_gather %l on @dp axes = [0] gather_dim = 0 : tensor<2x3xf32> -> tensor<8x3xf32>
  return %back, %again : tensor<2x3xf32>, tensor<8x3xf32>
}

// A slice along another dimension is not a round trip.
// CHECK-LABEL: func.func @not_a_round_trip
// CHECK: spmd.all_gather
// CHECK: spmd.local_slice
func.func @not_a_round_trip(%s: tensor<2x4xf32>) -> tensor<8x1xf32> {
  %g = spmd.all_gather %s on @dp axes = [0] gather_dim = 0 : tensor<2x4xf32> -> tensor<8x4xf32>
  %x = spmd.local_slice %g on @dp axes = [0] dim = 1 : tensor<8x4xf32> -> tensor<8x1xf32>
  return %x : tensor<8x1xf32>
}
