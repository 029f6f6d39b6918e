// RUN: spmd-opt %s --spmd-propagate --split-input-file --verify-diagnostics

spmd.mesh @dp(shape = 2)
// expected-note @+1 {{the input's spec comes from here}}
func.func @annotate_conflicts_with_argument(%x: tensor<4xf32> {spmd.spec = #spmd.spec<@dp, [shard<0>]>}) -> tensor<4xf32> {
  // expected-error @+1 {{annotation #spmd.spec<@dp, [replicate]> conflicts with the spec its input already has, #spmd.spec<@dp, [shard<0>]> (use spmd.redistribute to change a spec)}}
  %a = spmd.annotate %x to <@dp, [replicate]> : tensor<4xf32>
  return %a : tensor<4xf32>
}

// -----

spmd.mesh @dp(shape = 2)
func.func @two_annotations(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %y = arith.negf %x : tensor<4xf32>
  // expected-note @+1 {{the other annotation is here}}
  %a = spmd.annotate %y to <@dp, [shard<0>]> : tensor<4xf32>
  // expected-error @+1 {{conflicting annotations of the same value: #spmd.spec<@dp, [partial<sum>]> here, #spmd.spec<@dp, [shard<0>]> before}}
  %b = spmd.annotate %y to <@dp, [partial<sum>]> : tensor<4xf32>
  return %a, %b : tensor<4xf32>, tensor<4xf32>
}

// -----

spmd.mesh @dp(shape = 2)
spmd.state @w : tensor<4xf32> role = param spec = <@dp, [shard<0>]>
func.func @annotate_conflicts_with_state() -> tensor<4xf32> {
  // expected-note @+1 {{the input's spec comes from here}}
  %w = spmd.load @w : tensor<4xf32>
  // expected-error @+1 {{annotation #spmd.spec<@dp, [replicate]> conflicts with the spec its input already has}}
  %a = spmd.annotate %w to <@dp, [replicate]> : tensor<4xf32>
  return %a : tensor<4xf32>
}

// -----

spmd.mesh @dp(shape = 2)
spmd.mesh @tp(shape = 4)
// expected-note @+1 {{@dp is used here}}
func.func @two_meshes(%x: tensor<4xf32> {spmd.spec = #spmd.spec<@dp, [shard<0>]>}) -> tensor<4xf32> {
  // expected-error @+1 {{specs of one function must use one mesh; found @tp and @dp}}
  %a = spmd.redistribute %x to <@tp, [replicate]> : tensor<4xf32>
  return %a : tensor<4xf32>
}

// -----

spmd.mesh @dp(shape = 2)
func.func @regions(%x: tensor<4xf32> {spmd.spec = #spmd.spec<@dp, [shard<0>]>}, %c: i1) -> tensor<4xf32> {
  // expected-error @+1 {{spmd-propagate does not support 'scf.if' (an op with regions) on tensors}}
  %r = scf.if %c -> tensor<4xf32> {
    scf.yield %x : tensor<4xf32>
  } else {
    scf.yield %x : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}

// -----

spmd.mesh @dp(shape = 2)
func.func @already_local(%x: tensor<4xf32> {spmd.spec = #spmd.spec<@dp, [partial<sum>]>}) -> tensor<4xf32> {
  // expected-error @+1 {{spmd-propagate runs on global programs; found a collective, which only a local program has}}
  %r = spmd.all_reduce %x on @dp axes = [0] sum : tensor<4xf32> -> tensor<4xf32>
  return %r : tensor<4xf32>
}
