// Every collective kind of the dialect as one function for the GPU path
// (the collectives of test/Integration/Collectives/collectives.mlir, whose
// checker reads what collectives_main.cpp prints): rank r passes
// x = iota(4x8) + 100 r and gets the 12 results back. NP, ROWSG, COLSG and
// COLSS are set by sed for the number of ranks.
spmd.mesh @m(shape = NP)

func.func @collectives(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<ROWSGx8xf32>, tensor<4xCOLSGxf32>, tensor<4xCOLSSxf32>, tensor<ROWSGxCOLSSxf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xCOLSGxf32>, tensor<4x8xf32>)
    attributes {llvm.emit_c_interface} {
  %iota = arith.constant dense<[[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0],
                                [8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0],
                                [16.0, 17.0, 18.0, 19.0, 20.0, 21.0, 22.0, 23.0],
                                [24.0, 25.0, 26.0, 27.0, 28.0, 29.0, 30.0, 31.0]]> : tensor<4x8xf32>
  %s = spmd.all_reduce %x on @m axes = [0] sum : tensor<4x8xf32> -> tensor<4x8xf32>
  %a = spmd.all_reduce %x on @m axes = [0] avg : tensor<4x8xf32> -> tensor<4x8xf32>
  %mx = spmd.all_reduce %x on @m axes = [0] max : tensor<4x8xf32> -> tensor<4x8xf32>
  %g0 = spmd.all_gather %x on @m axes = [0] gather_dim = 0 : tensor<4x8xf32> -> tensor<ROWSGx8xf32>
  %g1 = spmd.all_gather %x on @m axes = [0] gather_dim = 1 : tensor<4x8xf32> -> tensor<4xCOLSGxf32>
  %rs = spmd.reduce_scatter %x on @m axes = [0] sum scatter_dim = 1 : tensor<4x8xf32> -> tensor<4xCOLSSxf32>
  %t = spmd.all_to_all %x on @m axes = [0] split_dim = 1 concat_dim = 0 : tensor<4x8xf32> -> tensor<ROWSGxCOLSSxf32>
  %b = spmd.broadcast %x on @m axes = [0] root = 0 : tensor<4x8xf32> -> tensor<4x8xf32>
  // Two tensors in one coalesced call.
  %c1, %c2 = spmd.all_reduce %x, %iota on @m axes = [0] sum : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>, tensor<4x8xf32>
  // Asynchronous: start two, compute, wait (one future twice).
  %f1 = spmd.all_reduce %x on @m axes = [0] sum : tensor<4x8xf32> -> !spmd.future<tensor<4x8xf32>>
  %f2 = spmd.all_gather %x on @m axes = [0] gather_dim = 1 : tensor<4x8xf32> -> !spmd.future<tensor<4xCOLSGxf32>>
  %busy = arith.mulf %x, %x : tensor<4x8xf32>
  %w2 = spmd.wait %f2 : !spmd.future<tensor<4xCOLSGxf32>>
  %w1 = spmd.wait %f1 : !spmd.future<tensor<4x8xf32>>
  %w1again = spmd.wait %f1 : !spmd.future<tensor<4x8xf32>>
  return %s, %a, %mx, %g0, %g1, %rs, %t, %b, %c2, %w1, %w2, %w1again : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<ROWSGx8xf32>, tensor<4xCOLSGxf32>, tensor<4xCOLSSxf32>, tensor<ROWSGxCOLSSxf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xCOLSGxf32>, tensor<4x8xf32>
}
