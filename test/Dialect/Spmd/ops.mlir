// RUN: spmd-opt %s | spmd-opt | FileCheck %s
// RUN: spmd-opt %s --mlir-print-op-generic | spmd-opt | FileCheck %s

// Every op and attribute of the dialect, printed and parsed back.

// CHECK: spmd.mesh @dp(shape = 4)
spmd.mesh @dp(shape = 4)
// CHECK: spmd.mesh @m(shape = 2x4, axes = ["dp", "tp"])
spmd.mesh @m(shape = 2x4, axes = ["dp", "tp"])
// CHECK: spmd.mesh @cube(shape = 2x2x2)
spmd.mesh @cube(shape = 2x2x2)

// CHECK: spmd.state @fc.weight : tensor<16x8xf32> role = param spec = <@dp, [replicate]>
spmd.state @"fc.weight" : tensor<16x8xf32> role = param spec = <@dp, [replicate]>
// CHECK: spmd.state @fc.weight.exp_avg : tensor<16x8xf32> role = optimizer_state{{$}}
spmd.state @"fc.weight.exp_avg" : tensor<16x8xf32> role = optimizer_state
// CHECK: spmd.state @"bn.running mean" : tensor<8xf32> role = buffer spec = <@m, [shard<0>, partial<sum>]>
spmd.state @"bn.running mean" : tensor<8xf32> role = buffer spec = <@m, [shard<0>, partial<sum>]>
// CHECK: spmd.state @output.0 : tensor<f32> role = output
spmd.state @"output.0" : tensor<f32> role = output
// CHECK: spmd.state @fc.weight.grad : tensor<16x8xf32> role = gradient spec = <@m, [shard<0>, replicate]>
spmd.state @"fc.weight.grad" : tensor<16x8xf32> role = gradient spec = <@m, [shard<0>, replicate]>

// CHECK-LABEL: func.func @placements
// CHECK-SAME: {spmd.spec = #spmd.spec<@dp, [shard<0>]>}
// CHECK-SAME: {spmd.spec = #spmd.spec<@m, [partial<avg>, shard<1>]>}
// CHECK-SAME: {spmd.spec = #spmd.spec<@cube, [partial<max>, partial<min>, partial<prod>]>}
// CHECK-SAME: -> (tensor<16x8xf32> {spmd.spec = #spmd.spec<@dp, [replicate]>})
func.func @placements(
    %x: tensor<16x8xf32> {spmd.spec = #spmd.spec<@dp, [shard<0>]>},
    %y: tensor<16x8xf32> {spmd.spec = #spmd.spec<@m, [partial<avg>, shard<1>]>},
    %z: tensor<4xf32> {spmd.spec = #spmd.spec<@cube, [partial<max>, partial<min>, partial<prod>]>})
    -> (tensor<16x8xf32> {spmd.spec = #spmd.spec<@dp, [replicate]>}) {
  // CHECK: %[[A:.*]] = spmd.annotate %{{.*}} to <@dp, [shard<0>]> : tensor<16x8xf32>
  %a = spmd.annotate %x to <@dp, [shard<0>]> : tensor<16x8xf32>
  // CHECK: spmd.redistribute %[[A]] to <@dp, [replicate]> : tensor<16x8xf32>
  %r = spmd.redistribute %a to <@dp, [replicate]> : tensor<16x8xf32>
  return %r : tensor<16x8xf32>
}

// Placements are attributes of their own too.
// CHECK-LABEL: func.func private @standalone_placements()
// CHECK-SAME: a = #spmd.replicate, b = #spmd.shard<3>, c = #spmd.partial<sum>
func.func private @standalone_placements() attributes {a = #spmd.replicate, b = #spmd.shard<3>, c = #spmd.partial<sum>}

// CHECK-LABEL: func.func @collectives
func.func @collectives(%x: tensor<16x8xf32>, %g: tensor<16xf32>) {
  // CHECK: spmd.all_reduce %{{.*}} on @m axes = [0] sum : tensor<16xf32> -> tensor<16xf32>
  %0 = spmd.all_reduce %g on @m axes = [0] sum : tensor<16xf32> -> tensor<16xf32>
  // CHECK: spmd.all_reduce %{{.*}}, %{{.*}} on @m axes = [1, 0] max : tensor<16xf32>, tensor<16x8xf32> -> tensor<16xf32>, tensor<16x8xf32>
  %1:2 = spmd.all_reduce %g, %x on @m axes = [1, 0] max : tensor<16xf32>, tensor<16x8xf32> -> tensor<16xf32>, tensor<16x8xf32>
  // CHECK: spmd.all_gather %{{.*}} on @dp axes = [0] gather_dim = 0 : tensor<16x8xf32> -> tensor<64x8xf32>
  %2 = spmd.all_gather %x on @dp axes = [0] gather_dim = 0 : tensor<16x8xf32> -> tensor<64x8xf32>
  // CHECK: spmd.all_gather %{{.*}} on @m axes = [0, 1] gather_dim = 1 : tensor<16x8xf32> -> tensor<16x64xf32>
  %3 = spmd.all_gather %x on @m axes = [0, 1] gather_dim = 1 : tensor<16x8xf32> -> tensor<16x64xf32>
  // CHECK: spmd.reduce_scatter %{{.*}} on @dp axes = [0] sum scatter_dim = 1 : tensor<16x8xf32> -> tensor<16x2xf32>
  %4 = spmd.reduce_scatter %x on @dp axes = [0] sum scatter_dim = 1 : tensor<16x8xf32> -> tensor<16x2xf32>
  // CHECK: spmd.all_to_all %{{.*}} on @dp axes = [0] split_dim = 0 concat_dim = 1 : tensor<16x8xf32> -> tensor<4x32xf32>
  %5 = spmd.all_to_all %x on @dp axes = [0] split_dim = 0 concat_dim = 1 : tensor<16x8xf32> -> tensor<4x32xf32>
  // CHECK: spmd.all_to_all %{{.*}} on @dp axes = [0] split_dim = 1 concat_dim = 1 : tensor<16x8xf32> -> tensor<16x8xf32>
  %6 = spmd.all_to_all %x on @dp axes = [0] split_dim = 1 concat_dim = 1 : tensor<16x8xf32> -> tensor<16x8xf32>
  // CHECK: spmd.broadcast %{{.*}} on @m axes = [1] root = 3 : tensor<16xf32> -> tensor<16xf32>
  %7 = spmd.broadcast %g on @m axes = [1] root = 3 : tensor<16xf32> -> tensor<16xf32>
  // An empty group is allowed (and folds away).
  // CHECK: spmd.all_reduce %{{.*}} on @m axes = [] prod : tensor<16xf32> -> tensor<16xf32>
  %8 = spmd.all_reduce %g on @m axes = [] prod : tensor<16xf32> -> tensor<16xf32>
  // Dynamic sizes are checked where they are known.
  // CHECK: spmd.all_gather %{{.*}} on @dp axes = [0] gather_dim = 0 : tensor<?x8xf32> -> tensor<?x8xf32>
  %d = tensor.cast %x : tensor<16x8xf32> to tensor<?x8xf32>
  %9 = spmd.all_gather %d on @dp axes = [0] gather_dim = 0 : tensor<?x8xf32> -> tensor<?x8xf32>
  return
}

// CHECK-LABEL: func.func @rank_local
func.func @rank_local(%x: tensor<8x3xf32>, %y: tensor<6x3xf32>) -> (index, tensor<2x3xf32>, tensor<?x3xf32>) {
  // CHECK: spmd.axis_index @m axes = [1] : index
  %i = spmd.axis_index @m axes = [1] : index
  // CHECK: spmd.local_slice %{{.*}} on @dp axes = [0] dim = 0 : tensor<8x3xf32> -> tensor<2x3xf32>
  %s = spmd.local_slice %x on @dp axes = [0] dim = 0 : tensor<8x3xf32> -> tensor<2x3xf32>
  // CHECK: spmd.local_slice %{{.*}} on @dp axes = [0] dim = 0 : tensor<6x3xf32> -> tensor<?x3xf32>
  %u = spmd.local_slice %y on @dp axes = [0] dim = 0 : tensor<6x3xf32> -> tensor<?x3xf32>
  return %i, %s, %u : index, tensor<2x3xf32>, tensor<?x3xf32>
}

// CHECK-LABEL: func.func @async
func.func @async(%x: tensor<16x8xf32>, %g: tensor<16xf32>) -> (tensor<16xf32>, tensor<16x8xf32>, tensor<4x8xf32>) {
  // CHECK: %[[F:.*]]:2 = spmd.all_reduce %{{.*}}, %{{.*}} on @m axes = [0, 1] avg : tensor<16xf32>, tensor<16x8xf32> -> !spmd.future<tensor<16xf32>>, !spmd.future<tensor<16x8xf32>>
  %f0, %f1 = spmd.all_reduce %g, %x on @m axes = [0, 1] avg : tensor<16xf32>, tensor<16x8xf32> -> !spmd.future<tensor<16xf32>>, !spmd.future<tensor<16x8xf32>>
  // CHECK: %[[H:.*]] = spmd.reduce_scatter %{{.*}} on @dp axes = [0] sum scatter_dim = 0 : tensor<16x8xf32> -> !spmd.future<tensor<4x8xf32>>
  %h = spmd.reduce_scatter %x on @dp axes = [0] sum scatter_dim = 0 : tensor<16x8xf32> -> !spmd.future<tensor<4x8xf32>>
  // CHECK: spmd.wait %[[F]]#0, %[[F]]#1 : !spmd.future<tensor<16xf32>>, !spmd.future<tensor<16x8xf32>>
  %w0, %w1 = spmd.wait %f0, %f1 : !spmd.future<tensor<16xf32>>, !spmd.future<tensor<16x8xf32>>
  // CHECK: spmd.wait %[[H]] : !spmd.future<tensor<4x8xf32>>
  %w2 = spmd.wait %h : !spmd.future<tensor<4x8xf32>>
  return %w0, %w1, %w2 : tensor<16xf32>, tensor<16x8xf32>, tensor<4x8xf32>
}

// CHECK-LABEL: func.func @foreach
func.func @foreach(%a: tensor<16xf32>, %b: tensor<4x4xf32>, %c: tensor<16xf32>, %d: tensor<4x4xf32>, %s: f32, %t: f64) {
  // CHECK: spmd.foreach_neg [%{{.*}}, %{{.*}}] : tensor<16xf32>, tensor<4x4xf32>
  %0:2 = spmd.foreach_neg [%a, %b] : tensor<16xf32>, tensor<4x4xf32>
  // CHECK: spmd.foreach_sqrt [%{{.*}}] : tensor<16xf32>
  %1 = spmd.foreach_sqrt [%a] : tensor<16xf32>
  // CHECK: spmd.foreach_add [%{{.*}}, %{{.*}}], [%{{.*}}, %{{.*}}] : tensor<16xf32>, tensor<4x4xf32>
  %2:2 = spmd.foreach_add [%a, %b], [%c, %d] : tensor<16xf32>, tensor<4x4xf32>
  // CHECK: spmd.foreach_add [%{{.*}}], [%{{.*}}] alpha [%{{.*}}] : tensor<16xf32>, f32
  %3 = spmd.foreach_add [%a], [%c] alpha [%s] : tensor<16xf32>, f32
  // CHECK: spmd.foreach_mul [%{{.*}}], [%{{.*}}] : tensor<16xf32>
  %4 = spmd.foreach_mul [%a], [%c] : tensor<16xf32>
  // CHECK: spmd.foreach_div [%{{.*}}], [%{{.*}}] : tensor<16xf32>
  %5 = spmd.foreach_div [%a], [%c] : tensor<16xf32>
  // CHECK: spmd.foreach_maximum [%{{.*}}], [%{{.*}}] : tensor<4x4xf32>
  %6 = spmd.foreach_maximum [%b], [%d] : tensor<4x4xf32>
  // CHECK: spmd.foreach_lerp [%{{.*}}, %{{.*}}], [%{{.*}}, %{{.*}}] weight [%{{.*}}] : tensor<16xf32>, tensor<4x4xf32>, f64
  %7:2 = spmd.foreach_lerp [%a, %b], [%c, %d] weight [%t] : tensor<16xf32>, tensor<4x4xf32>, f64
  // CHECK: spmd.foreach_add_scalar [%{{.*}}, %{{.*}}] scalar [%{{.*}}, %{{.*}}] : tensor<16xf32>, tensor<4x4xf32>, f32, f64
  %8:2 = spmd.foreach_add_scalar [%a, %b] scalar [%s, %t] : tensor<16xf32>, tensor<4x4xf32>, f32, f64
  // CHECK: spmd.foreach_mul_scalar [%{{.*}}] scalar [%{{.*}}] : tensor<16xf32>, f32
  %9 = spmd.foreach_mul_scalar [%a] scalar [%s] : tensor<16xf32>, f32
  // CHECK: spmd.foreach_div_scalar [%{{.*}}] scalar [%{{.*}}] : tensor<16xf32>, f32
  %10 = spmd.foreach_div_scalar [%a] scalar [%s] : tensor<16xf32>, f32
  // CHECK: spmd.foreach_addcmul [%{{.*}}], [%{{.*}}], [%{{.*}}] value [%{{.*}}] : tensor<16xf32>, f32
  %11 = spmd.foreach_addcmul [%a], [%c], [%c] value [%s] : tensor<16xf32>, f32
  // CHECK: spmd.foreach_addcdiv [%{{.*}}], [%{{.*}}], [%{{.*}}] : tensor<16xf32>
  %12 = spmd.foreach_addcdiv [%a], [%c], [%c] : tensor<16xf32>
  return
}

// CHECK-LABEL: func.func @optimizers
func.func @optimizers(%p: tensor<16xf32>, %q: tensor<4x4xf32>, %st: tensor<f32>, %st2: tensor<f32>) {
  // CHECK: spmd.sgd params [%{{.*}}] grads [%{{.*}}] {lr = 1.000000e-01 : f64} : tensor<16xf32>
  %0 = spmd.sgd params [%p] grads [%p] {lr = 0.1 : f64} : tensor<16xf32>
  // CHECK: spmd.sgd params [%{{.*}}, %{{.*}}] grads [%{{.*}}, %{{.*}}] momentum_buffers [%{{.*}}, %{{.*}}] step %{{.*}} {lr = 1.000000e-01 : f64, maximize, momentum = 9.000000e-01 : f64, nesterov, weight_decay = 1.000000e-04 : f64} : tensor<16xf32>, tensor<4x4xf32>
  %1:5 = spmd.sgd params [%p, %q] grads [%p, %q] momentum_buffers [%p, %q] step %st {lr = 0.1, momentum = 0.9, weight_decay = 1.0e-4, nesterov, maximize} : tensor<16xf32>, tensor<4x4xf32>
  // CHECK: spmd.sgd {{.*}} {dampening = 5.000000e-01 : f64, lr = 1.000000e-02 : f64, momentum = 9.000000e-01 : f64} : tensor<16xf32>
  %2:3 = spmd.sgd params [%p] grads [%p] momentum_buffers [%p] step %st {lr = 0.01, momentum = 0.9, dampening = 0.5} : tensor<16xf32>
  // Defaults (beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0) are elided.
  // CHECK: spmd.adam params [%{{.*}}] grads [%{{.*}}] exp_avgs [%{{.*}}] exp_avg_sqs [%{{.*}}] steps [%{{.*}}] {lr = 1.000000e-03 : f64} : tensor<16xf32>
  %3:4 = spmd.adam params [%p] grads [%p] exp_avgs [%p] exp_avg_sqs [%p] steps [%st] {lr = 1.0e-3, beta1 = 0.9, beta2 = 0.999} : tensor<16xf32>
  // CHECK: spmd.adam params [%{{.*}}, %{{.*}}] grads [%{{.*}}, %{{.*}}] exp_avgs [%{{.*}}, %{{.*}}] exp_avg_sqs [%{{.*}}, %{{.*}}] max_exp_avg_sqs [%{{.*}}, %{{.*}}] steps [%{{.*}}, %{{.*}}] {amsgrad, beta1 = 8.000000e-01 : f64, decoupled_weight_decay, eps = 9.9999999999999995E-7 : f64, lr = 1.000000e-03 : f64, maximize} : tensor<16xf32>, tensor<4x4xf32>
  %4:10 = spmd.adam params [%p, %q] grads [%p, %q] exp_avgs [%p, %q] exp_avg_sqs [%p, %q] max_exp_avg_sqs [%p, %q] steps [%st, %st2] {lr = 1.0e-3, beta1 = 0.8, eps = 1.0e-6, weight_decay = 0.0, amsgrad, maximize, decoupled_weight_decay} : tensor<16xf32>, tensor<4x4xf32>
  return
}

// Float options read at run time (an LR scheduler's lr, OneCycleLR's
// momentum / beta1) print as hyperparams(...), not as attributes.
// CHECK-LABEL: func.func @runtime_hyperparams
// CHECK-SAME: (%[[P:.*]]: tensor<16xf32>, %[[S:.*]]: tensor<f32>, %[[LR:.*]]: tensor<f64>, %[[M:.*]]: tensor<f64>)
func.func @runtime_hyperparams(%p: tensor<16xf32>, %st: tensor<f32>, %lr: tensor<f64>, %m: tensor<f64>) {
  // CHECK: spmd.sgd params [%[[P]]] grads [%[[P]]] momentum_buffers [%[[P]]] step %[[S]] hyperparams(lr = %[[LR]], momentum = %[[M]]) {nesterov} : tensor<16xf32>
  %0:3 = spmd.sgd params [%p] grads [%p] momentum_buffers [%p] step %st hyperparams(lr = %lr, momentum = %m) {nesterov} : tensor<16xf32>
  // CHECK: spmd.sgd params [%[[P]]] grads [%[[P]]] hyperparams(lr = %[[LR]]) : tensor<16xf32>
  %1 = spmd.sgd params [%p] grads [%p] hyperparams(lr = %lr) : tensor<16xf32>
  // CHECK: spmd.adam params [%[[P]]] grads [%[[P]]] exp_avgs [%[[P]]] exp_avg_sqs [%[[P]]] steps [%[[S]]] hyperparams(lr = %[[LR]], beta1 = %[[M]]) {eps = 9.9999999999999995E-7 : f64} : tensor<16xf32>
  %2:4 = spmd.adam params [%p] grads [%p] exp_avgs [%p] exp_avg_sqs [%p] steps [%st] hyperparams(lr = %lr, beta1 = %m) {eps = 1.0e-6} : tensor<16xf32>
  return
}

// CHECK-LABEL: func.func @state
func.func @state() {
  // CHECK: %[[W:.*]] = spmd.load @fc.weight : tensor<16x8xf32>
  %w = spmd.load @"fc.weight" : tensor<16x8xf32>
  // CHECK: spmd.store %[[W]] to @fc.weight.exp_avg : tensor<16x8xf32>
  spmd.store %w to @"fc.weight.exp_avg" : tensor<16x8xf32>
  // CHECK: spmd.load @"bn.running mean" : tensor<8xf32>
  %b = spmd.load @"bn.running mean" : tensor<8xf32>
  return
}

// CHECK-LABEL: func.func @attention
// CHECK-SAME: (%[[Q:.*]]: tensor<2x4x64x32xf32>, %[[K:.*]]: tensor<2x4x48x32xf32>, %[[V:.*]]: tensor<2x4x48x16xf32>, %[[M:.*]]: tensor<2x1x1x48xf32>, %[[G:.*]]: tensor<2x4x64x16xf32>)
func.func @attention(%q: tensor<2x4x64x32xf32>, %k: tensor<2x4x48x32xf32>, %v: tensor<2x4x48x16xf32>, %m: tensor<2x1x1x48xf32>, %g: tensor<2x4x64x16xf32>) {
  // CHECK: %[[O:.*]], %[[L:.*]] = spmd.attention %[[Q]], %[[K]], %[[V]] {causal, scale = 1.250000e-01 : f64} : tensor<2x4x64x32xf32>, tensor<2x4x48x32xf32>, tensor<2x4x48x16xf32> -> tensor<2x4x64x16xf32>, tensor<2x4x64xf32>
  %o, %l = spmd.attention %q, %k, %v {causal, scale = 0.125 : f64} : tensor<2x4x64x32xf32>, tensor<2x4x48x32xf32>, tensor<2x4x48x16xf32> -> tensor<2x4x64x16xf32>, tensor<2x4x64xf32>
  // CHECK: spmd.attention %[[Q]], %[[K]], %[[V]] mask %[[M]] {scale = 5.000000e-01 : f64} : tensor<2x4x64x32xf32>, tensor<2x4x48x32xf32>, tensor<2x4x48x16xf32>, tensor<2x1x1x48xf32> -> tensor<2x4x64x16xf32>, tensor<2x4x64xf32>
  %p, %pl = spmd.attention %q, %k, %v mask %m {scale = 0.5 : f64} : tensor<2x4x64x32xf32>, tensor<2x4x48x32xf32>, tensor<2x4x48x16xf32>, tensor<2x1x1x48xf32> -> tensor<2x4x64x16xf32>, tensor<2x4x64xf32>
  // CHECK: spmd.attention_grad %[[G]], %[[Q]], %[[K]], %[[V]], %[[O]], %[[L]] {causal, scale = 1.250000e-01 : f64} : tensor<2x4x64x16xf32>, tensor<2x4x64x32xf32>, tensor<2x4x48x32xf32>, tensor<2x4x48x16xf32>, tensor<2x4x64x16xf32>, tensor<2x4x64xf32>
  %dq, %dk, %dv = spmd.attention_grad %g, %q, %k, %v, %o, %l {causal, scale = 0.125 : f64} : tensor<2x4x64x16xf32>, tensor<2x4x64x32xf32>, tensor<2x4x48x32xf32>, tensor<2x4x48x16xf32>, tensor<2x4x64x16xf32>, tensor<2x4x64xf32>
  // CHECK: spmd.attention_grad %[[G]], %[[Q]], %[[K]], %[[V]], %{{.*}}, %{{.*}} mask %[[M]] {scale = 5.000000e-01 : f64} : {{.*}}, tensor<2x1x1x48xf32>
  %mq, %mk, %mv = spmd.attention_grad %g, %q, %k, %v, %p, %pl mask %m {scale = 0.5 : f64} : tensor<2x4x64x16xf32>, tensor<2x4x64x32xf32>, tensor<2x4x48x32xf32>, tensor<2x4x48x16xf32>, tensor<2x4x64x16xf32>, tensor<2x4x64xf32>, tensor<2x1x1x48xf32>
  return
}

// The record spmd-propagate leaves on the ops it places.
spmd.mesh @m2(shape = 2x2)
// CHECK-LABEL: func.func @placed
// CHECK-SAME: attributes {spmd.mesh = @m2}
func.func @placed(%a: tensor<8x4xf32>, %b: tensor<4x2xf32>, %c: tensor<8x2xf32>) -> tensor<8x2xf32> attributes {spmd.mesh = @m2} {
  // CHECK: linalg.matmul {spmd.result_specs = [#spmd.spec<@m2, [shard<0>, partial<sum>]>], spmd.strategy = #spmd.strategy<[factor<0>, factor<2>]>}
  %0 = linalg.matmul {spmd.result_specs = [#spmd.spec<@m2, [shard<0>, partial<sum>]>], spmd.strategy = #spmd.strategy<[factor<0>, factor<2>]>} ins(%a, %b : tensor<8x4xf32>, tensor<4x2xf32>) outs(%c : tensor<8x2xf32>) -> tensor<8x2xf32>
  // CHECK: linalg.add {spmd.result_specs = [#spmd.spec<@m2, [partial<sum>, replicate]>], spmd.strategy = #spmd.strategy<[partial<sum, 0>, replicate]>}
  %1 = linalg.add {spmd.result_specs = [#spmd.spec<@m2, [partial<sum>, replicate]>], spmd.strategy = #spmd.strategy<[partial<sum, 0>, replicate]>} ins(%0, %0 : tensor<8x2xf32>, tensor<8x2xf32>) outs(%c : tensor<8x2xf32>) -> tensor<8x2xf32>
  return %1 : tensor<8x2xf32>
}

// CHECK-LABEL: func.func @optimization_barrier
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>)
func.func @optimization_barrier(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // CHECK: %[[B:.*]] = spmd.optimization_barrier %[[X]] : tensor<4x8xf32>
  %b = spmd.optimization_barrier %x : tensor<4x8xf32>
  // CHECK: return %[[B]]
  return %b : tensor<4x8xf32>
}
