// RUN: spmd-opt %s -split-input-file -verify-diagnostics

// Each case is named after the constraint it breaks (docs/Spmd.md).

// expected-error @+1 {{'spmd.mesh' op needs at least one axis}}
"spmd.mesh"() <{sym_name = "mesh_c1", shape = array<i64>}> : () -> ()

// -----

// expected-error @+1 {{'spmd.mesh' op axis 1 must have a static size of at least 1, found 0}}
spmd.mesh @mesh_c2(shape = 2x0)

// -----

// expected-error @+1 {{'spmd.mesh' op has 2 axes but 1 axis names}}
spmd.mesh @mesh_c3(shape = 2x2, axes = ["dp"])

// -----

// expected-error @+1 {{'spmd.mesh' op axis name "dp" appears twice}}
spmd.mesh @mesh_c4(shape = 2x2, axes = ["dp", "dp"])

// -----

spmd.mesh @m(shape = 4)
// expected-error @+1 {{shard dimension must be non-negative, found -1}}
func.func private @shard_c1(tensor<4xf32> {spmd.spec = #spmd.spec<@m, [shard<-1>]>})

// -----

func.func @spec_c1(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'spmd.annotate' op spec refers to @nowhere, which is not an 'spmd.mesh'}}
  %0 = spmd.annotate %x to <@nowhere, [replicate]> : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

spmd.mesh @m(shape = 2x2)
func.func @spec_c2(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'spmd.redistribute' op spec has 1 placements but mesh @m has 2 axes}}
  %0 = spmd.redistribute %x to <@m, [replicate]> : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

spmd.mesh @m(shape = 4)
// expected-error @+1 {{'func.func' op argument #0: a spec describes a ranked tensor, found 'f32'}}
func.func private @spec_c3(f32 {spmd.spec = #spmd.spec<@m, [replicate]>})

// -----

spmd.mesh @m(shape = 4)
// expected-error @+1 {{'spmd.state' op mesh axis 0 shards dimension 1 of 'tensor<4xf32>', which has 1 dimensions}}
spmd.state @spec_c4 : tensor<4xf32> role = param spec = <@m, [shard<1>]>

// -----

spmd.mesh @m(shape = 4)
// expected-error @+1 {{'func.func' op result #0: partial<avg> needs a float element type, found 'i32'}}
func.func private @spec_c5() -> (tensor<4xi32> {spmd.spec = #spmd.spec<@m, [partial<avg>]>})

// -----

// expected-error @+1 {{expected a placement (replicate, shard<dim> or partial<kind>), found 'sharded'}}
func.func private @spec_placement(tensor<4xf32> {spmd.spec = #spmd.spec<@m, [sharded<0>]>})

// -----

spmd.mesh @m(shape = 4)
// expected-error @+1 {{'func.func' op argument #0: unknown attribute 'spmd.sharding' (the spmd dialect defines 'spmd.spec')}}
func.func private @func_spec_c1(tensor<4xf32> {spmd.sharding = #spmd.spec<@m, [replicate]>})

// -----

// expected-error @+1 {{'func.func' op argument #0: 'spmd.spec' must be a #spmd.spec, found #spmd.replicate}}
func.func private @func_spec_c2(tensor<4xf32> {spmd.spec = #spmd.replicate})

// -----

func.func @collective_c1() {
  // expected-error @+1 {{'spmd.all_reduce' op needs at least one input}}
  "spmd.all_reduce"() <{mesh = @m, axes = array<i64: 0>, kind = 0 : i32}> : () -> ()
  return
}

// -----

func.func @collective_c2(%x: tensor<4xf32>) {
  // expected-error @+1 {{'spmd.all_reduce' op has 1 inputs but 2 results}}
  %0:2 = "spmd.all_reduce"(%x) <{mesh = @m, axes = array<i64: 0>, kind = 0 : i32}> : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

spmd.mesh @m(shape = 4)
func.func @collective_c3(%x: tensor<4xf32>, %y: tensor<4xf32>) {
  // expected-error @+1 {{'spmd.all_reduce' op results must be all ranked tensors or all futures; result #1 is 'tensor<4xf32>'}}
  %0:2 = spmd.all_reduce %x, %y on @m axes = [0] sum : tensor<4xf32>, tensor<4xf32> -> !spmd.future<tensor<4xf32>>, tensor<4xf32>
  return
}

// -----

spmd.mesh @m(shape = 2x2)
func.func @collective_c4(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'spmd.all_reduce' op mesh axis 1 appears twice}}
  %0 = spmd.all_reduce %x on @m axes = [1, 1] sum : tensor<4xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @collective_c5(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'spmd.broadcast' op @nowhere does not name an 'spmd.mesh'}}
  %0 = spmd.broadcast %x on @nowhere axes = [0] root = 0 : tensor<4xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// expected-note @+1 {{mesh declared here}}
spmd.mesh @m(shape = 2x2)
func.func @collective_c6(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'spmd.all_reduce' op mesh axis 2 is out of range for mesh @m with 2 axes}}
  %0 = spmd.all_reduce %x on @m axes = [2] sum : tensor<4xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

spmd.mesh @m(shape = 4)
func.func @collective_element_type(%x: tensor<4xf32>) -> tensor<4xf16> {
  // expected-error @+1 {{'spmd.all_reduce' op result element type 'f16' differs from input element type 'f32'}}
  %0 = spmd.all_reduce %x on @m axes = [0] sum : tensor<4xf32> -> tensor<4xf16>
  return %0 : tensor<4xf16>
}

// -----

spmd.mesh @m(shape = 4)
func.func @all_reduce_c1(%x: tensor<4xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'spmd.all_reduce' op result type 'tensor<8xf32>' differs from input type 'tensor<4xf32>'}}
  %0 = spmd.all_reduce %x on @m axes = [0] sum : tensor<4xf32> -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

spmd.mesh @m(shape = 4)
func.func @all_reduce_c2(%x: tensor<4xi32>) -> tensor<4xi32> {
  // expected-error @+1 {{'spmd.all_reduce' op avg needs float element types, found 'tensor<4xi32>'}}
  %0 = spmd.all_reduce %x on @m axes = [0] avg : tensor<4xi32> -> tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

spmd.mesh @m(shape = 4)
func.func @all_gather_c1(%x: tensor<4xf32>) -> tensor<16xf32> {
  // expected-error @+1 {{'spmd.all_gather' op gather_dim 1 is out of range for 'tensor<4xf32>'}}
  %0 = spmd.all_gather %x on @m axes = [0] gather_dim = 1 : tensor<4xf32> -> tensor<16xf32>
  return %0 : tensor<16xf32>
}

// -----

spmd.mesh @m(shape = 4)
func.func @all_gather_c2(%x: tensor<4x3xf32>) -> tensor<16x4xf32> {
  // expected-error @+1 {{'spmd.all_gather' op result dimension 1 (4) differs from input dimension 1 (3)}}
  %0 = spmd.all_gather %x on @m axes = [0] gather_dim = 0 : tensor<4x3xf32> -> tensor<16x4xf32>
  return %0 : tensor<16x4xf32>
}

// -----

spmd.mesh @m(shape = 2x4)
func.func @all_gather_c3(%x: tensor<4x3xf32>) -> tensor<16x3xf32> {
  // expected-error @+1 {{'spmd.all_gather' op result dimension 0 should be 32 for input dimension 4 and a group of 8 ranks, found 16}}
  %0 = spmd.all_gather %x on @m axes = [0, 1] gather_dim = 0 : tensor<4x3xf32> -> tensor<16x3xf32>
  return %0 : tensor<16x3xf32>
}

// -----

spmd.mesh @m(shape = 4)
func.func @reduce_scatter_c1(%x: tensor<8xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'spmd.reduce_scatter' op scatter_dim -1 is out of range for 'tensor<8xf32>'}}
  %0 = spmd.reduce_scatter %x on @m axes = [0] sum scatter_dim = -1 : tensor<8xf32> -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

spmd.mesh @m(shape = 4)
func.func @reduce_scatter_c2(%x: tensor<8x2xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'spmd.reduce_scatter' op result dimension 1 (3) differs from input dimension 1 (2)}}
  %0 = spmd.reduce_scatter %x on @m axes = [0] sum scatter_dim = 0 : tensor<8x2xf32> -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

spmd.mesh @m(shape = 4)
func.func @reduce_scatter_c3(%x: tensor<6xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'spmd.reduce_scatter' op input dimension 0 (6) is not divisible by the group size (4)}}
  %0 = spmd.reduce_scatter %x on @m axes = [0] sum scatter_dim = 0 : tensor<6xf32> -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

spmd.mesh @m(shape = 4)
func.func @reduce_scatter_c4(%x: tensor<8xi64>) -> tensor<2xi64> {
  // expected-error @+1 {{'spmd.reduce_scatter' op avg needs float element types, found 'tensor<8xi64>'}}
  %0 = spmd.reduce_scatter %x on @m axes = [0] avg scatter_dim = 0 : tensor<8xi64> -> tensor<2xi64>
  return %0 : tensor<2xi64>
}

// -----

spmd.mesh @m(shape = 4)
func.func @all_to_all_c1(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{'spmd.all_to_all' op concat_dim 2 is out of range for 'tensor<8x4xf32>'}}
  %0 = spmd.all_to_all %x on @m axes = [0] split_dim = 0 concat_dim = 2 : tensor<8x4xf32> -> tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}

// -----

spmd.mesh @m(shape = 4)
func.func @all_to_all_c2(%x: tensor<8x4x2xf32>) -> tensor<2x16x3xf32> {
  // expected-error @+1 {{'spmd.all_to_all' op result dimension 2 (3) differs from input dimension 2 (2)}}
  %0 = spmd.all_to_all %x on @m axes = [0] split_dim = 0 concat_dim = 1 : tensor<8x4x2xf32> -> tensor<2x16x3xf32>
  return %0 : tensor<2x16x3xf32>
}

// -----

spmd.mesh @m(shape = 4)
func.func @all_to_all_c3(%x: tensor<8x4xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{'spmd.all_to_all' op result dimension 1 should be 16 for a group of 4 ranks, found 8}}
  %0 = spmd.all_to_all %x on @m axes = [0] split_dim = 0 concat_dim = 1 : tensor<8x4xf32> -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

spmd.mesh @m(shape = 4)
func.func @broadcast_c1(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'spmd.broadcast' op root must be non-negative, found -1}}
  %0 = spmd.broadcast %x on @m axes = [0] root = -1 : tensor<4xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

spmd.mesh @m(shape = 4)
func.func @broadcast_c2(%x: tensor<4xf32>) -> tensor<2x2xf32> {
  // expected-error @+1 {{'spmd.broadcast' op result type 'tensor<2x2xf32>' differs from input type 'tensor<4xf32>'}}
  %0 = spmd.broadcast %x on @m axes = [0] root = 0 : tensor<4xf32> -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}

// -----

spmd.mesh @m(shape = 2x4)
func.func @broadcast_c3(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'spmd.broadcast' op root 2 is out of range for a group of 2 ranks}}
  %0 = spmd.broadcast %x on @m axes = [0] root = 2 : tensor<4xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @wait_c1() {
  // expected-error @+1 {{'spmd.wait' op needs at least one future}}
  "spmd.wait"() : () -> ()
  return
}

// -----

func.func @wait_type(%x: tensor<4xf32>) {
  // expected-error @+1 {{'spmd.wait' op operand #0 must be a future, found 'tensor<4xf32>'}}
  %0 = spmd.wait %x : tensor<4xf32>
  return
}

// -----

func.func @foreach_c1(%a: tensor<4xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{'spmd.foreach_mul' op tensor list #1 has 1 entries, expected 2}}
  %0:2 = "spmd.foreach_mul"(%a, %b, %a) <{operandSegmentSizes = array<i32: 2, 1>}> : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @foreach_c1_empty() {
  // expected-error @+1 {{'spmd.foreach_neg' op needs at least one tensor in each list}}
  "spmd.foreach_neg"() : () -> ()
  return
}

// -----

func.func @foreach_c2(%a: tensor<4xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{'spmd.foreach_mul' op entry #0 of tensor list #1 has type 'tensor<8xf32>', expected 'tensor<4xf32>'}}
  %0 = "spmd.foreach_mul"(%a, %b) <{operandSegmentSizes = array<i32: 1, 1>}> : (tensor<4xf32>, tensor<8xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @foreach_c2_float(%a: tensor<4xi32>) {
  // expected-error @+1 {{'spmd.foreach_neg' op entry #0 must be a float tensor, found 'tensor<4xi32>'}}
  %0 = spmd.foreach_neg [%a] : tensor<4xi32>
  return
}

// -----

func.func @foreach_c3(%a: tensor<4xf32>, %b: tensor<2xf32>, %c: tensor<3xf32>, %s: f32) {
  // expected-error @+1 {{'spmd.foreach_mul_scalar' op needs one shared or 3 per-entry scalars, found 2}}
  %0:3 = spmd.foreach_mul_scalar [%a, %b, %c] scalar [%s, %s] : tensor<4xf32>, tensor<2xf32>, tensor<3xf32>, f32, f32
  return
}

// -----

func.func @sgd_c1(%p: tensor<4xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{'spmd.sgd' op grads #0 has type 'tensor<8xf32>', expected 'tensor<4xf32>' (the type of param #0)}}
  %0 = "spmd.sgd"(%p, %g) <{lr = 0.1 : f64, operandSegmentSizes = array<i32: 1, 1, 0, 0, 0>}> : (tensor<4xf32>, tensor<8xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @sgd_c1_count(%p: tensor<4xf32>, %q: tensor<4xf32>, %g: tensor<4xf32>) {
  // expected-error @+1 {{'spmd.sgd' op has 2 params but 1 grads}}
  %0:2 = "spmd.sgd"(%p, %q, %g) <{lr = 0.1 : f64, operandSegmentSizes = array<i32: 2, 1, 0, 0, 0>}> : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @sgd_c2(%p: tensor<4xf32>, %g: tensor<4xf32>) {
  // expected-error @+1 {{'spmd.sgd' op invalid lr -0.1: expected a finite value >= 0}}
  %0 = spmd.sgd params [%p] grads [%g] {lr = -0.1 : f64} : tensor<4xf32>
  return
}

// -----

func.func @sgd_c3(%p: tensor<4xf32>, %g: tensor<4xf32>, %b: tensor<4xf32>, %s: tensor<f32>) {
  // expected-error @+1 {{'spmd.sgd' op nesterov momentum needs a momentum and zero dampening}}
  %0:3 = spmd.sgd params [%p] grads [%g] momentum_buffers [%b] step %s {lr = 0.1 : f64, momentum = 0.9 : f64, dampening = 0.1 : f64, nesterov} : tensor<4xf32>
  return
}

// -----

func.func @sgd_c4(%p: tensor<4xf32>, %g: tensor<4xf32>, %s: tensor<f32>) {
  // expected-error @+1 {{'spmd.sgd' op has 1 params but 0 momentum_buffers}}
  %0:2 = spmd.sgd params [%p] grads [%g] step %s {lr = 0.1 : f64, momentum = 0.9 : f64} : tensor<4xf32>
  return
}

// -----

func.func @sgd_c4_no_momentum(%p: tensor<4xf32>, %g: tensor<4xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{'spmd.sgd' op without momentum takes neither momentum_buffers nor a step counter}}
  %0:2 = spmd.sgd params [%p] grads [%g] momentum_buffers [%b] {lr = 0.1 : f64} : tensor<4xf32>
  return
}

// -----

func.func @sgd_param_float(%p: tensor<4xi32>, %g: tensor<4xi32>) {
  // expected-error @+1 {{'spmd.sgd' op param #0 must be a float tensor, found 'tensor<4xi32>'}}
  %0 = spmd.sgd params [%p] grads [%g] {lr = 0.1 : f64} : tensor<4xi32>
  return
}

// -----

func.func @adam_c1(%p: tensor<4xf32>, %g: tensor<4xf32>, %m: tensor<4xf32>, %v: tensor<4xf32>) {
  // expected-error @+1 {{'spmd.adam' op has 1 params but 0 steps}}
  %0:3 = "spmd.adam"(%p, %g, %m, %v) <{lr = 1.0e-3 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0>}> : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @adam_c2(%p: tensor<4xf32>, %g: tensor<4xf32>, %m: tensor<4xf32>, %v: tensor<4xf32>, %t: tensor<f32>) {
  // expected-error @+1 {{'spmd.adam' op invalid beta2 1: expected a finite value >= 0 and < 1}}
  %0:4 = spmd.adam params [%p] grads [%g] exp_avgs [%m] exp_avg_sqs [%v] steps [%t] {lr = 1.0e-3 : f64, beta2 = 1.0 : f64} : tensor<4xf32>
  return
}

// -----

func.func @adam_c2_eps(%p: tensor<4xf32>, %g: tensor<4xf32>, %m: tensor<4xf32>, %v: tensor<4xf32>, %t: tensor<f32>) {
  // expected-error @+1 {{'spmd.adam' op invalid eps -1e-08: expected a finite value >= 0}}
  %0:4 = spmd.adam params [%p] grads [%g] exp_avgs [%m] exp_avg_sqs [%v] steps [%t] {lr = 1.0e-3 : f64, eps = -1.0e-8 : f64} : tensor<4xf32>
  return
}

// -----

func.func @adam_c3(%p: tensor<4xf32>, %g: tensor<4xf32>, %m: tensor<4xf32>, %v: tensor<4xf32>, %t: tensor<f32>) {
  // expected-error @+1 {{'spmd.adam' op has 1 params but 0 max_exp_avg_sqs}}
  %0:4 = spmd.adam params [%p] grads [%g] exp_avgs [%m] exp_avg_sqs [%v] steps [%t] {lr = 1.0e-3 : f64, amsgrad} : tensor<4xf32>
  return
}

// -----

func.func @sgd_c5_unknown(%p: tensor<4xf32>, %g: tensor<4xf32>, %x: tensor<f64>) {
  // expected-error @+1 {{'spmd.sgd' op has no float option 'beta1' to take at run time (expected one of: lr, momentum, dampening, weight_decay)}}
  %0 = spmd.sgd params [%p] grads [%g] hyperparams(lr = %x, beta1 = %x) : tensor<4xf32>
  return
}

// -----

func.func @sgd_c5_twice(%p: tensor<4xf32>, %g: tensor<4xf32>, %x: tensor<f64>) {
  // expected-error @+1 {{'spmd.sgd' op takes hyperparam 'lr' twice}}
  %0 = spmd.sgd params [%p] grads [%g] hyperparams(lr = %x, lr = %x) : tensor<4xf32>
  return
}

// -----

func.func @sgd_c5_both(%p: tensor<4xf32>, %g: tensor<4xf32>, %x: tensor<f64>) {
  // expected-error @+1 {{'spmd.sgd' op takes 'lr' both as an attribute and at run time}}
  %0 = spmd.sgd params [%p] grads [%g] hyperparams(lr = %x) {lr = 0.1 : f64} : tensor<4xf32>
  return
}

// -----

func.func @sgd_c5_no_lr(%p: tensor<4xf32>, %g: tensor<4xf32>) {
  // expected-error @+1 {{'spmd.sgd' op needs lr, as an attribute or a hyperparam}}
  %0 = spmd.sgd params [%p] grads [%g] : tensor<4xf32>
  return
}

// -----

// A run-time momentum means momentum is on: buffers and a step are needed.
func.func @sgd_c5_momentum(%p: tensor<4xf32>, %g: tensor<4xf32>, %x: tensor<f64>) {
  // expected-error @+1 {{'spmd.sgd' op with momentum needs a step counter}}
  %0 = spmd.sgd params [%p] grads [%g] hyperparams(lr = %x, momentum = %x) : tensor<4xf32>
  return
}

// -----

// nesterov needs dampening to be a known zero.
func.func @sgd_c3_runtime_dampening(%p: tensor<4xf32>, %g: tensor<4xf32>, %b: tensor<4xf32>, %s: tensor<f32>, %x: tensor<f64>) {
  // expected-error @+1 {{'spmd.sgd' op nesterov momentum needs a momentum and zero dampening}}
  %0:3 = spmd.sgd params [%p] grads [%g] momentum_buffers [%b] step %s hyperparams(lr = %x, momentum = %x, dampening = %x) {nesterov} : tensor<4xf32>
  return
}

// -----

func.func @adam_c4_both(%p: tensor<4xf32>, %g: tensor<4xf32>, %m: tensor<4xf32>, %v: tensor<4xf32>, %t: tensor<f32>, %x: tensor<f64>) {
  // expected-error @+1 {{'spmd.adam' op takes 'beta1' both as an attribute and at run time}}
  %0:4 = spmd.adam params [%p] grads [%g] exp_avgs [%m] exp_avg_sqs [%v] steps [%t] hyperparams(beta1 = %x) {lr = 1.0e-3 : f64, beta1 = 0.8 : f64} : tensor<4xf32>
  return
}

// -----

func.func @adam_c4_unknown(%p: tensor<4xf32>, %g: tensor<4xf32>, %m: tensor<4xf32>, %v: tensor<4xf32>, %t: tensor<f32>, %x: tensor<f64>) {
  // expected-error @+1 {{'spmd.adam' op has no float option 'momentum' to take at run time (expected one of: lr, beta1, beta2, eps, weight_decay)}}
  %0:4 = spmd.adam params [%p] grads [%g] exp_avgs [%m] exp_avg_sqs [%v] steps [%t] hyperparams(momentum = %x) {lr = 1.0e-3 : f64} : tensor<4xf32>
  return
}

// -----

// Run-time float options are tensor<f64> (Python floats).
// expected-note @+1 {{prior use here}}
func.func @hyperparam_type(%p: tensor<4xf32>, %g: tensor<4xf32>, %x: tensor<f32>) {
  // expected-error @+1 {{use of value '%x' expects different type than prior uses: 'tensor<f64>' vs 'tensor<f32>'}}
  %0 = spmd.sgd params [%p] grads [%g] hyperparams(lr = %x) : tensor<4xf32>
  return
}

// -----

// Step counters are tensor<f32>, as torch keeps them.
// expected-note @+1 {{prior use here}}
func.func @adam_step_type(%p: tensor<4xf32>, %g: tensor<4xf32>, %m: tensor<4xf32>, %v: tensor<4xf32>, %t: tensor<f64>) {
  // expected-error @+1 {{use of value '%t' expects different type than prior uses: 'tensor<f32>' vs 'tensor<f64>'}}
  %0:4 = spmd.adam params [%p] grads [%g] exp_avgs [%m] exp_avg_sqs [%v] steps [%t] {lr = 1.0e-3 : f64} : tensor<4xf32>
  return
}

// -----

// expected-error @+1 {{'spmd.state' op needs a static shape, found 'tensor<?xf32>'}}
spmd.state @state_c1 : tensor<?xf32> role = param

// -----

// expected-error @+1 {{'spmd.state' op spec refers to @nowhere, which is not an 'spmd.mesh'}}
spmd.state @state_c2 : tensor<4xf32> role = param spec = <@nowhere, [replicate]>

// -----

spmd.mesh @m(shape = 4)
func.func @load_c1() -> tensor<4xf32> {
  // expected-error @+1 {{'spmd.load' op @m does not name an 'spmd.state'}}
  %0 = spmd.load @m : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// expected-note @+1 {{state declared here}}
spmd.state @w : tensor<4xf32> role = param
func.func @load_c2() -> tensor<8xf32> {
  // expected-error @+1 {{'spmd.load' op type 'tensor<8xf32>' differs from the type of state @w ('tensor<4xf32>')}}
  %0 = spmd.load @w : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

func.func @store_c1(%x: tensor<4xf32>) {
  // expected-error @+1 {{'spmd.store' op @w does not name an 'spmd.state'}}
  spmd.store %x to @w : tensor<4xf32>
  return
}

// -----

// expected-note @+1 {{state declared here}}
spmd.state @w : tensor<4xf32> role = optimizer_state
func.func @store_c2(%x: tensor<4xf64>) {
  // expected-error @+1 {{'spmd.store' op type 'tensor<4xf64>' differs from the type of state @w ('tensor<4xf32>')}}
  spmd.store %x to @w : tensor<4xf64>
  return
}

// -----

// expected-error @+1 {{expected string or keyword containing one of the following enum values for attribute 'role' [param, buffer, optimizer_state, output, gradient]}}
spmd.state @role : tensor<4xf32> role = weights

// -----

// expected-error @+1 {{'spmd.mesh' op has more than 2147483647 ranks}}
spmd.mesh @mesh_c5(shape = 65536x65536)

// -----

// A product past int64_t (found by spmd-fuzz under UBSan) is the same error.
// expected-error @+1 {{'spmd.mesh' op has more than 2147483647 ranks}}
spmd.mesh @mesh_c5_overflow(shape = 99999999x999999999999999)

// -----

spmd.mesh @m(shape = 2x2)
func.func @axis_index_c1() -> index {
  // expected-error @+1 {{'spmd.axis_index' op mesh axes must be unique and in [0, 2), found 2}}
  %0 = spmd.axis_index @m axes = [2] : index
  return %0 : index
}

// -----

spmd.mesh @m(shape = 4)
func.func @local_slice_c1(%x: tensor<8x3xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'spmd.local_slice' op result dimension 1 (4) differs from input dimension 1 (3)}}
  %0 = spmd.local_slice %x on @m axes = [0] dim = 0 : tensor<8x3xf32> -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

spmd.mesh @m(shape = 4)
func.func @local_slice_c2(%x: tensor<6x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'spmd.local_slice' op result dimension 0 should be dynamic (uneven chunks) for size 6 over 4 ranks}}
  %0 = spmd.local_slice %x on @m axes = [0] dim = 0 : tensor<6x3xf32> -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @attention_c1_heads(%q: tensor<2x4x8x16xf32>, %k: tensor<2x2x8x16xf32>) {
  // expected-error @+1 {{'spmd.attention' op query, key and value need the same batch and head dimensions (B x H x ...), got 'tensor<2x4x8x16xf32>', 'tensor<2x2x8x16xf32>', 'tensor<2x2x8x16xf32>'}}
  %o, %l = spmd.attention %q, %k, %k {scale = 0.25 : f64} : tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32> -> tensor<2x4x8x16xf32>, tensor<2x4x8xf32>
  return
}

// -----

func.func @attention_c1_length(%q: tensor<2x4x8x16xf32>, %k: tensor<2x4x8x16xf32>, %v: tensor<2x4x6x16xf32>) {
  // expected-error @+1 {{'spmd.attention' op key and value need the same sequence length, got 'tensor<2x4x8x16xf32>' and 'tensor<2x4x6x16xf32>'}}
  %o, %l = spmd.attention %q, %k, %v {scale = 0.25 : f64} : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x6x16xf32> -> tensor<2x4x8x16xf32>, tensor<2x4x8xf32>
  return
}

// -----

func.func @attention_c1_head_size(%q: tensor<2x4x8x16xf32>, %k: tensor<2x4x8x8xf32>) {
  // expected-error @+1 {{'spmd.attention' op query and key need the same head size, got 'tensor<2x4x8x16xf32>' and 'tensor<2x4x8x8xf32>'}}
  %o, %l = spmd.attention %q, %k, %k {scale = 0.25 : f64} : tensor<2x4x8x16xf32>, tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32> -> tensor<2x4x8x8xf32>, tensor<2x4x8xf32>
  return
}

// -----

func.func @attention_c2_out(%q: tensor<2x4x8x16xf32>, %v: tensor<2x4x8x4xf32>) {
  // expected-error @+1 {{'spmd.attention' op output should be B x H x L x Ev (2x4x8x4), got 'tensor<2x4x8x16xf32>'}}
  %o, %l = spmd.attention %q, %q, %v {scale = 0.25 : f64} : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x4xf32> -> tensor<2x4x8x16xf32>, tensor<2x4x8xf32>
  return
}

// -----

func.func @attention_c2_lse(%q: tensor<2x4x8x16xf32>) {
  // expected-error @+1 {{'spmd.attention' op log-sum-exp should be B x H x L, got 'tensor<2x4x16xf32>'}}
  %o, %l = spmd.attention %q, %q, %q {scale = 0.25 : f64} : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32> -> tensor<2x4x8x16xf32>, tensor<2x4x16xf32>
  return
}

// -----

func.func @attention_c3_causal(%q: tensor<2x4x8x16xf32>, %m: tensor<1x1x8x8xf32>) {
  // expected-error @+1 {{'spmd.attention' op takes a mask or `causal`, not both}}
  %o, %l = spmd.attention %q, %q, %q mask %m {causal, scale = 0.25 : f64} : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<1x1x8x8xf32> -> tensor<2x4x8x16xf32>, tensor<2x4x8xf32>
  return
}

// -----

func.func @attention_c3_broadcast(%q: tensor<2x4x8x16xf32>, %m: tensor<1x2x8x8xf32>) {
  // expected-error @+1 {{'spmd.attention' op mask dimension 1 should be 1 or 4, got 2}}
  %o, %l = spmd.attention %q, %q, %q mask %m {scale = 0.25 : f64} : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<1x2x8x8xf32> -> tensor<2x4x8x16xf32>, tensor<2x4x8xf32>
  return
}

// -----

func.func @attention_c3_keys(%q: tensor<2x4x8x16xf32>, %m: tensor<1x1x8x6xf32>) {
  // expected-error @+1 {{'spmd.attention' op mask's last dimension should be the key length 8, got 6}}
  %o, %l = spmd.attention %q, %q, %q mask %m {scale = 0.25 : f64} : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<1x1x8x6xf32> -> tensor<2x4x8x16xf32>, tensor<2x4x8xf32>
  return
}

// -----

func.func @attention_c4(%q: tensor<2x4x8x16xf32>) {
  // expected-error @+1 {{'spmd.attention' op scale must be finite, got INF}}
  %o, %l = spmd.attention %q, %q, %q {scale = 0x7FF0000000000000 : f64} : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32> -> tensor<2x4x8x16xf32>, tensor<2x4x8xf32>
  return
}

// -----

func.func @attention_grad_c1(%q: tensor<2x4x8x16xf32>, %v: tensor<2x4x8x4xf32>, %o: tensor<2x4x8x4xf32>, %l: tensor<2x4x8xf32>) {
  // expected-error @+1 {{'spmd.attention_grad' op grad should have the type of out, 'tensor<2x4x8x4xf32>', got 'tensor<2x4x8x16xf32>'}}
  %dq, %dk, %dv = spmd.attention_grad %q, %q, %q, %v, %o, %l {scale = 0.25 : f64} : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x4xf32>, tensor<2x4x8x4xf32>, tensor<2x4x8xf32>
  return
}

// -----

func.func @attention_rank(%q: tensor<4x8x16xf32>) {
  // expected-error @+1 {{'spmd.attention' op operand #0 must be 4D tensor of 32-bit float values, but got 'tensor<4x8x16xf32>'}}
  %o, %l = "spmd.attention"(%q, %q, %q) <{scale = 0.25 : f64}> : (tensor<4x8x16xf32>, tensor<4x8x16xf32>, tensor<4x8x16xf32>) -> (tensor<4x8x16xf32>, tensor<4x8xf32>)
  return
}

// -----

// The record spmd-propagate leaves on the ops it places (strategy_c*,
// result_specs_c*, op_attr_c*).

func.func @strategy_type(%a: tensor<8x4xf32>, %b: tensor<4x2xf32>, %c: tensor<8x2xf32>) -> tensor<8x2xf32> {
  // expected-error @+1 {{'linalg.matmul' op 'spmd.strategy' must be a #spmd.strategy, found array<i64: 0>}}
  %0 = linalg.matmul {spmd.result_specs = [#spmd.spec<@m, [shard<0>]>], spmd.strategy = array<i64: 0>} ins(%a, %b : tensor<8x4xf32>, tensor<4x2xf32>) outs(%c : tensor<8x2xf32>) -> tensor<8x2xf32>
  return %0 : tensor<8x2xf32>
}

// -----

func.func @strategy_c1(%a: tensor<8x4xf32>, %b: tensor<4x2xf32>, %c: tensor<8x2xf32>) -> tensor<8x2xf32> {
  // expected-error @+1 {{'linalg.matmul' op 'spmd.strategy': the op's sharding rule has 1 factor group(s), the strategy 2}}
  %0 = linalg.matmul {spmd.result_specs = [#spmd.spec<@m, [shard<0>]>], spmd.strategy = #spmd.strategy<[factor<0>], [replicate]>} ins(%a, %b : tensor<8x4xf32>, tensor<4x2xf32>) outs(%c : tensor<8x2xf32>) -> tensor<8x2xf32>
  return %0 : tensor<8x2xf32>
}

// -----

func.func @strategy_c2(%a: tensor<8x4xf32>, %b: tensor<4x2xf32>, %c: tensor<8x2xf32>) -> tensor<8x2xf32> {
  // expected-error @+1 {{'linalg.matmul' op 'spmd.strategy': group 0 shards factor 3 on mesh axis 1, which is not a factor of that group (the rule has 3 factors)}}
  %0 = linalg.matmul {spmd.result_specs = [#spmd.spec<@m, [shard<0>, replicate]>], spmd.strategy = #spmd.strategy<[factor<0>, factor<3>]>} ins(%a, %b : tensor<8x4xf32>, tensor<4x2xf32>) outs(%c : tensor<8x2xf32>) -> tensor<8x2xf32>
  return %0 : tensor<8x2xf32>
}

// -----

func.func @strategy_c3(%a: tensor<8x4xf32>, %b: tensor<4x2xf32>, %c: tensor<8x2xf32>) -> tensor<8x2xf32> {
  // expected-error @+1 {{'linalg.matmul' op 'spmd.strategy': mesh axis 0 passes a partial through linear set 2, but the rule has 2}}
  %0 = linalg.matmul {spmd.result_specs = [#spmd.spec<@m, [partial<sum>]>], spmd.strategy = #spmd.strategy<[partial<sum, 2>]>} ins(%a, %b : tensor<8x4xf32>, tensor<4x2xf32>) outs(%c : tensor<8x2xf32>) -> tensor<8x2xf32>
  return %0 : tensor<8x2xf32>
}

// -----

func.func @strategy_c4(%a: tensor<8x4xf32>, %b: tensor<4x2xf32>, %c: tensor<8x2xf32>) -> tensor<8x2xf32> {
  // expected-error @+1 {{'linalg.matmul' op 'spmd.strategy': an op with a strategy also has 'spmd.result_specs'}}
  %0 = linalg.matmul {spmd.strategy = #spmd.strategy<[factor<0>]>} ins(%a, %b : tensor<8x4xf32>, tensor<4x2xf32>) outs(%c : tensor<8x2xf32>) -> tensor<8x2xf32>
  return %0 : tensor<8x2xf32>
}

// -----

// expected-error @+1 {{every factor group has one choice per mesh axis: expected 2, found 1}}
func.func private @strategy_c5() attributes {s = #spmd.strategy<[factor<0>, replicate], [replicate]>}

// -----

// expected-error @+1 {{expected a choice (replicate, factor<f> or partial<kind, set>), found 'shard'}}
func.func private @strategy_choice() attributes {s = #spmd.strategy<[shard<0>]>}

// -----

// expected-error @+1 {{a strategy's factor must be non-negative, found -1}}
func.func private @strategy_c6() attributes {s = #spmd.strategy<[factor<-1>]>}

// -----

func.func @result_specs_c1(%a: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'arith.addf' op 'spmd.result_specs': expected an array of 1 entries (one per result), found []}}
  %0 = arith.addf %a, %a {spmd.result_specs = []} : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

func.func @result_specs_c2(%a: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'arith.addf' op 'spmd.result_specs': result #0 needs a #spmd.spec, found #spmd.replicate}}
  %0 = arith.addf %a, %a {spmd.result_specs = [#spmd.replicate]} : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

func.func @mesh_attr_c1(%a: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'arith.addf' op 'spmd.mesh' is a function's mesh (a symbol reference)}}
  %0 = arith.addf %a, %a {spmd.mesh = @m} : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

func.func @op_attr_c1(%a: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'arith.addf' op unknown attribute 'spmd.stratgy' (the spmd dialect defines 'spmd.strategy', 'spmd.result_specs', 'spmd.mesh', 'spmd.gpu_buffer', 'spmd.state_dtype' and 'spmd.host_copy' on operations)}}
  %0 = arith.addf %a, %a {spmd.stratgy = #spmd.strategy<[replicate]>} : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

// expected-error @+1 {{'memref.global' op 'spmd.state_dtype' is a state global's element type code (an i32 on a memref.global)}}
memref.global "public" @w : memref<4xf32> = dense<0.0> {spmd.state_dtype = 1.0 : f32}

// -----

// expected-error @+1 {{'func.func' op 'spmd.state_dtype' is a state global's element type code (an i32 on a memref.global)}}
func.func @not_a_global() attributes {spmd.state_dtype = 0 : i32} {
  return
}

// -----

func.func @optimization_barrier_c1_type(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'spmd.optimization_barrier' op failed to verify that all of {input, result} have same type}}
  %b = "spmd.optimization_barrier"(%x) : (tensor<4x8xf32>) -> tensor<8x4xf32>
  return
}

// -----

func.func @optimization_barrier_c2_ranked(%x: tensor<*xf32>) {
  // expected-error @+1 {{'spmd.optimization_barrier' op operand #0 must be ranked tensor of any type values, but got 'tensor<*xf32>'}}
  %b = "spmd.optimization_barrier"(%x) : (tensor<*xf32>) -> tensor<*xf32>
  return
}
