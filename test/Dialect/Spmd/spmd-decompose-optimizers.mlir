// RUN: spmd-opt %s --spmd-decompose-optimizers --split-input-file | FileCheck %s

// Plain SGD is one foreach update: p + (-lr) * g.
// CHECK-LABEL: func.func @sgd_plain
// CHECK-SAME: (%[[P:.*]]: tensor<4xf32>, %[[G:.*]]: tensor<4xf32>)
// CHECK: %[[LR:.*]] = arith.constant -1.000000e-01 : f64
// CHECK: %[[NEW:.*]] = spmd.foreach_add [%[[P]]], [%[[G]]] alpha [%[[LR]]] : tensor<4xf32>, f64
// CHECK-NOT: spmd.sgd
// CHECK: return %[[NEW]]
func.func @sgd_plain(%p: tensor<4xf32>, %g: tensor<4xf32>) -> tensor<4xf32> {
  %0 = spmd.sgd params [%p] grads [%g] {lr = 0.1 : f64} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// torch order: maximize negates first, then weight decay, then momentum.
// Without dampening the coefficients (momentum, 1) serve every step (a
// missing buffer is zeros): the step counter is incremented, not read.
// CHECK-LABEL: func.func @sgd_full
// CHECK-SAME: (%[[P:.*]]: tensor<4xf32>, %[[G:.*]]: tensor<4xf32>, %[[B:.*]]: tensor<4xf32>, %[[S:.*]]: tensor<f32>)
// CHECK: %[[NEG:.*]] = spmd.foreach_neg [%[[G]]]
// CHECK: %[[WD:.*]] = arith.constant 1.000000e-02 : f64
// CHECK: %[[G1:.*]] = spmd.foreach_add [%[[NEG]]], [%[[P]]] alpha [%[[WD]]]
// CHECK-NOT: tensor.extract
// CHECK-NOT: arith.select
// CHECK: %[[BS:.*]] = arith.constant 9.000000e-01 : f64
// CHECK: %[[B1:.*]] = spmd.foreach_mul_scalar [%[[B]]] scalar [%[[BS]]]
// CHECK: %[[B2:.*]] = spmd.foreach_add [%[[B1]]], [%[[G1]]] alpha [%{{.*}}]
// CHECK: %[[G2:.*]] = spmd.foreach_add [%[[G1]]], [%[[B2]]] alpha [%{{.*}}]
// CHECK: %[[S1:.*]] = spmd.foreach_add_scalar [%[[S]]]
// CHECK: %[[P1:.*]] = spmd.foreach_add [%[[P]]], [%[[G2]]] alpha
// CHECK: return %[[P1]], %[[B2]], %[[S1]]
func.func @sgd_full(%p: tensor<4xf32>, %g: tensor<4xf32>, %b: tensor<4xf32>, %s: tensor<f32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<f32>) {
  %r:3 = spmd.sgd params [%p] grads [%g] momentum_buffers [%b] step %s {lr = 0.1 : f64, momentum = 0.9 : f64, weight_decay = 0.01 : f64, nesterov, maximize} : tensor<4xf32>
  return %r#0, %r#1, %r#2 : tensor<4xf32>, tensor<4xf32>, tensor<f32>
}

// -----

// With dampening, the first step (step == 0) uses buffer/grad coefficients
// (0, 1), later ones (momentum, 1 - dampening).
// CHECK-LABEL: func.func @sgd_dampening
// CHECK-SAME: (%[[P:.*]]: tensor<4xf32>, %[[G:.*]]: tensor<4xf32>, %[[B:.*]]: tensor<4xf32>, %[[S:.*]]: tensor<f32>)
// CHECK: %[[T:.*]] = tensor.extract %[[S]][] : tensor<f32>
// CHECK: %[[T64:.*]] = arith.extf %[[T]] : f32 to f64
// CHECK: %[[FIRST:.*]] = arith.cmpf oeq, %[[T64]]
// CHECK: %[[BS:.*]] = arith.select %[[FIRST]], %{{.*}}, %{{.*}} : f64
// CHECK: %[[GS:.*]] = arith.select %[[FIRST]], %{{.*}}, %{{.*}} : f64
// CHECK: %[[B1:.*]] = spmd.foreach_mul_scalar [%[[B]]] scalar [%[[BS]]]
// CHECK: %[[B2:.*]] = spmd.foreach_add [%[[B1]]], [%[[G]]] alpha [%[[GS]]]
// CHECK: %[[S1:.*]] = spmd.foreach_add_scalar [%[[S]]]
// CHECK: %[[P1:.*]] = spmd.foreach_add [%[[P]]], [%[[B2]]] alpha
// CHECK: return %[[P1]], %[[B2]], %[[S1]]
func.func @sgd_dampening(%p: tensor<4xf32>, %g: tensor<4xf32>, %b: tensor<4xf32>, %s: tensor<f32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<f32>) {
  %r:3 = spmd.sgd params [%p] grads [%g] momentum_buffers [%b] step %s {lr = 0.1 : f64, momentum = 0.9 : f64, dampening = 0.5 : f64} : tensor<4xf32>
  return %r#0, %r#1, %r#2 : tensor<4xf32>, tensor<4xf32>, tensor<f32>
}

// -----

// Two parameter groups with their own hyper-parameters stay two updates.
// CHECK-LABEL: func.func @sgd_groups
// CHECK: %[[LR0:.*]] = arith.constant -1.000000e-01 : f64
// CHECK: spmd.foreach_add [%{{.*}}], [%{{.*}}] alpha [%[[LR0]]] : tensor<4xf32>, f64
// CHECK: %[[LR1:.*]] = arith.constant -1.000000e-02 : f64
// CHECK: spmd.foreach_add [%{{.*}}], [%{{.*}}] alpha [%[[LR1]]] : tensor<2x2xf32>, f64
// CHECK-NOT: spmd.sgd
func.func @sgd_groups(%p: tensor<4xf32>, %g: tensor<4xf32>, %q: tensor<2x2xf32>, %h: tensor<2x2xf32>) -> (tensor<4xf32>, tensor<2x2xf32>) {
  %0 = spmd.sgd params [%p] grads [%g] {lr = 0.1 : f64} : tensor<4xf32>
  %1 = spmd.sgd params [%q] grads [%h] {lr = 0.01 : f64} : tensor<2x2xf32>
  return %0, %1 : tensor<4xf32>, tensor<2x2xf32>
}

// -----

// Adam: steps first, moments by lerp / mul+addcmul, bias corrections per
// parameter in f64 from the incremented step, then the addcdiv update.
// CHECK-LABEL: func.func @adam
// CHECK-SAME: (%[[P:.*]]: tensor<4xf32>, %[[Q:.*]]: tensor<2xf32>, %[[G:.*]]: tensor<4xf32>, %[[H:.*]]: tensor<2xf32>, %[[M:.*]]: tensor<4xf32>, %[[N:.*]]: tensor<2xf32>, %[[V:.*]]: tensor<4xf32>, %[[W:.*]]: tensor<2xf32>, %[[S:.*]]: tensor<f32>, %[[T:.*]]: tensor<f32>)
// CHECK: %[[ST:.*]]:2 = spmd.foreach_add_scalar [%[[S]], %[[T]]]
// CHECK: %[[M1:.*]]:2 = spmd.foreach_lerp [%[[M]], %[[N]]], [%[[G]], %[[H]]] weight
// CHECK: %[[V0:.*]]:2 = spmd.foreach_mul_scalar [%[[V]], %[[W]]] scalar
// CHECK: %[[V1:.*]]:2 = spmd.foreach_addcmul [%[[V0]]#0, %[[V0]]#1], [%[[G]], %[[H]]], [%[[G]], %[[H]]] value
// CHECK: tensor.extract %[[ST]]#0[]
// CHECK: math.powf
// CHECK: tensor.extract %[[ST]]#1[]
// CHECK: %[[D0:.*]]:2 = spmd.foreach_sqrt [%[[V1]]#0, %[[V1]]#1]
// CHECK: %[[D1:.*]]:2 = spmd.foreach_div_scalar [%[[D0]]#0, %[[D0]]#1] scalar [%{{.*}}, %{{.*}}] : tensor<4xf32>, tensor<2xf32>, f64, f64
// CHECK: %[[D2:.*]]:2 = spmd.foreach_add_scalar [%[[D1]]#0, %[[D1]]#1] scalar
// CHECK: %[[P1:.*]]:2 = spmd.foreach_addcdiv [%[[P]], %[[Q]]], [%[[M1]]#0, %[[M1]]#1], [%[[D2]]#0, %[[D2]]#1] value [%{{.*}}, %{{.*}}]
// CHECK: return %[[P1]]#0, %[[P1]]#1, %[[M1]]#0, %[[M1]]#1, %[[V1]]#0, %[[V1]]#1, %[[ST]]#0, %[[ST]]#1
func.func @adam(%p: tensor<4xf32>, %q: tensor<2xf32>, %g: tensor<4xf32>, %h: tensor<2xf32>, %m: tensor<4xf32>, %n: tensor<2xf32>, %v: tensor<4xf32>, %w: tensor<2xf32>, %s: tensor<f32>, %t: tensor<f32>) -> (tensor<4xf32>, tensor<2xf32>, tensor<4xf32>, tensor<2xf32>, tensor<4xf32>, tensor<2xf32>, tensor<f32>, tensor<f32>) {
  %r:8 = spmd.adam params [%p, %q] grads [%g, %h] exp_avgs [%m, %n] exp_avg_sqs [%v, %w] steps [%s, %t] {lr = 1.0e-3 : f64} : tensor<4xf32>, tensor<2xf32>
  return %r#0, %r#1, %r#2, %r#3, %r#4, %r#5, %r#6, %r#7 : tensor<4xf32>, tensor<2xf32>, tensor<4xf32>, tensor<2xf32>, tensor<4xf32>, tensor<2xf32>, tensor<f32>, tensor<f32>
}

// -----

// AdamW decays the parameters; amsgrad takes the running maximum; maximize
// negates the gradient first.
// CHECK-LABEL: func.func @adamw_amsgrad_maximize
// CHECK-SAME: (%[[P:.*]]: tensor<4xf32>, %[[G:.*]]: tensor<4xf32>, %{{.*}}: tensor<4xf32>, %{{.*}}: tensor<4xf32>, %[[X:.*]]: tensor<4xf32>, %{{.*}}: tensor<f32>)
// CHECK: %[[NEG:.*]] = spmd.foreach_neg [%[[G]]]
// CHECK: spmd.foreach_add_scalar
// CHECK: %[[DECAY:.*]] = arith.constant 9.999000e-01 : f64
// CHECK: %[[P0:.*]] = spmd.foreach_mul_scalar [%[[P]]] scalar [%[[DECAY]]]
// CHECK: spmd.foreach_lerp [%{{.*}}], [%[[NEG]]]
// CHECK: %[[V1:.*]] = spmd.foreach_addcmul
// CHECK: %[[X1:.*]] = spmd.foreach_maximum [%[[X]]], [%[[V1]]]
// CHECK: spmd.foreach_sqrt [%[[X1]]]
// CHECK: spmd.foreach_addcdiv [%[[P0]]]
func.func @adamw_amsgrad_maximize(%p: tensor<4xf32>, %g: tensor<4xf32>, %m: tensor<4xf32>, %v: tensor<4xf32>, %x: tensor<4xf32>, %s: tensor<f32>) -> tensor<4xf32> {
  %r:5 = spmd.adam params [%p] grads [%g] exp_avgs [%m] exp_avg_sqs [%v] max_exp_avg_sqs [%x] steps [%s] {lr = 1.0e-2 : f64, weight_decay = 1.0e-2 : f64, amsgrad, maximize, decoupled_weight_decay} : tensor<4xf32>
  return %r#0 : tensor<4xf32>
}

// -----

// Run-time float options are read from their tensor<f64> where torch uses
// them: -lr for the update, momentum for the buffer, 1 - dampening.
// CHECK-LABEL: func.func @sgd_runtime
// CHECK-SAME: (%[[P:.*]]: tensor<4xf32>, %[[G:.*]]: tensor<4xf32>, %[[B:.*]]: tensor<4xf32>, %[[S:.*]]: tensor<f32>, %[[LR:.*]]: tensor<f64>, %[[M:.*]]: tensor<f64>, %[[D:.*]]: tensor<f64>)
// CHECK: %[[MV:.*]] = tensor.extract %[[M]][] : tensor<f64>
// CHECK: %[[BS:.*]] = arith.select %{{.*}}, %{{.*}}, %[[MV]] : f64
// CHECK: %[[DV:.*]] = tensor.extract %[[D]][] : tensor<f64>
// CHECK: %[[KEEP:.*]] = arith.subf %{{.*}}, %[[DV]] : f64
// CHECK: %[[GS:.*]] = arith.select %{{.*}}, %{{.*}}, %[[KEEP]] : f64
// CHECK: %[[LRV:.*]] = tensor.extract %[[LR]][] : tensor<f64>
// CHECK: %[[NEGLR:.*]] = arith.negf %[[LRV]] : f64
// CHECK: spmd.foreach_add [%[[P]]], [%{{.*}}] alpha [%[[NEGLR]]]
// CHECK-NOT: spmd.sgd
func.func @sgd_runtime(%p: tensor<4xf32>, %g: tensor<4xf32>, %b: tensor<4xf32>, %s: tensor<f32>, %lr: tensor<f64>, %m: tensor<f64>, %d: tensor<f64>) -> (tensor<4xf32>, tensor<4xf32>, tensor<f32>) {
  %r:3 = spmd.sgd params [%p] grads [%g] momentum_buffers [%b] step %s hyperparams(lr = %lr, momentum = %m, dampening = %d) : tensor<4xf32>
  return %r#0, %r#1, %r#2 : tensor<4xf32>, tensor<4xf32>, tensor<f32>
}

// -----

// AdamW with run-time lr, beta1 and weight decay: 1 - lr * wd, 1 - beta1
// and beta1 ** t are computed from the values of this call.
// CHECK-LABEL: func.func @adamw_runtime
// CHECK-SAME: %[[LR:[^:]*]]: tensor<f64>, %[[B1:[^:]*]]: tensor<f64>, %[[WD:[^:]*]]: tensor<f64>)
// CHECK: %[[LRV:.*]] = tensor.extract %[[LR]][] : tensor<f64>
// CHECK: %[[WDV:.*]] = tensor.extract %[[WD]][] : tensor<f64>
// CHECK: %[[PROD:.*]] = arith.mulf %[[LRV]], %[[WDV]] : f64
// CHECK: %[[SHRINK:.*]] = arith.subf %{{.*}}, %[[PROD]] : f64
// CHECK: spmd.foreach_mul_scalar [%{{.*}}] scalar [%[[SHRINK]]]
// CHECK: %[[B1V:.*]] = tensor.extract %[[B1]][] : tensor<f64>
// CHECK: %[[W:.*]] = arith.subf %{{.*}}, %[[B1V]] : f64
// CHECK: spmd.foreach_lerp [%{{.*}}], [%{{.*}}] weight [%[[W]]]
// CHECK: math.powf %{{.*}}, %{{.*}} : f64
// CHECK-NOT: spmd.adam
func.func @adamw_runtime(%p: tensor<4xf32>, %g: tensor<4xf32>, %m: tensor<4xf32>, %v: tensor<4xf32>, %t: tensor<f32>, %lr: tensor<f64>, %b1: tensor<f64>, %wd: tensor<f64>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>) {
  %r:4 = spmd.adam params [%p] grads [%g] exp_avgs [%m] exp_avg_sqs [%v] steps [%t] hyperparams(lr = %lr, beta1 = %b1, weight_decay = %wd) {decoupled_weight_decay} : tensor<4xf32>
  return %r#0, %r#1, %r#2, %r#3 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>
}
