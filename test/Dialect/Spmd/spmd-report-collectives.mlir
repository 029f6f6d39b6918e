// RUN: spmd-opt %s --spmd-report-collectives -o /dev/null | FileCheck %s

// A local data-parallel step: the loss and two gradients all-reduced, the
// gradients into one SGD op. Each collective names the state it feeds:
// gradient i feeds parameter i's state, the loss its output state; the IR
// is not changed.
// CHECK: {"kind":"mesh","name":"dp","shape":[4]}
// CHECK: {"bytes":512,"kind":"state","name":"w","role":"param","type":"tensor<16x8xf32>"}
// CHECK: {"bytes":32,"kind":"state","name":"b","role":"param","type":"tensor<8xf32>"}
// CHECK: {"bytes":4,"kind":"state","name":"loss","role":"output","type":"tensor<f32>"}
// CHECK: {"async":false,"axes":[0],"bytes":4,"feeds":["loss"],"kind":"collective","mesh":"dp","op":"all_reduce","reduction":"sum","types":["tensor<f32>"]}
// CHECK: {"async":true,"axes":[0],"bytes":512,"feeds":["w"],"kind":"collective","mesh":"dp","op":"all_reduce","reduction":"avg","types":["tensor<16x8xf32>"]}
// CHECK: {"async":true,"axes":[0],"bytes":32,"feeds":["b"],"kind":"collective","mesh":"dp","op":"all_reduce","reduction":"avg","types":["tensor<8xf32>"]}
spmd.mesh @dp(shape = 4)
spmd.state @w : tensor<16x8xf32> role = param
spmd.state @b : tensor<8xf32> role = param
spmd.state @loss : tensor<f32> role = output
func.func @step(%gw: tensor<16x8xf32>, %gb: tensor<8xf32>, %l: tensor<f32>) {
  %w = spmd.load @w : tensor<16x8xf32>
  %b = spmd.load @b : tensor<8xf32>
  %lr = spmd.all_reduce %l on @dp axes = [0] sum : tensor<f32> -> tensor<f32>
  spmd.store %lr to @loss : tensor<f32>
  %fw = spmd.all_reduce %gw on @dp axes = [0] avg : tensor<16x8xf32> -> !spmd.future<tensor<16x8xf32>>
  %fb = spmd.all_reduce %gb on @dp axes = [0] avg : tensor<8xf32> -> !spmd.future<tensor<8xf32>>
  %rw = spmd.wait %fw : !spmd.future<tensor<16x8xf32>>
  %rb = spmd.wait %fb : !spmd.future<tensor<8xf32>>
  %nb = arith.negf %rb : tensor<8xf32>
  %p:2 = spmd.sgd params [%w, %b] grads [%rw, %nb] {lr = 0.1} : tensor<16x8xf32>, tensor<8xf32>
  spmd.store %p#0 to @w : tensor<16x8xf32>
  spmd.store %p#1 to @b : tensor<8xf32>
  return
}
