// REQUIRES: mpi
// Every collective kind of the dialect, lowered by spmd-lower-to-cpu and run
// on 1, 2 and 4 ranks. Rank r holds x = iota(4x8) + 100 r; rank 0 prints what
// it received and check_collectives.py compares it with the expected values.
// RUN: sed -e s/NP/1/g -e s/ROWSG/4/g -e s/COLSG/8/g -e s/COLSS/8/g %s | spmd-opt --spmd-lower-to-cpu > %t1.mlir
// RUN: %mpirun 1 %run-mpi %t1.mlir | %spmd_python %S/check_collectives.py 1 | FileCheck %s
// RUN: sed -e s/NP/2/g -e s/ROWSG/8/g -e s/COLSG/16/g -e s/COLSS/4/g %s | spmd-opt --spmd-lower-to-cpu > %t2.mlir
// RUN: env SPMD_RUNTIME_CHECK=1 %mpirun 2 %run-mpi %t2.mlir | %spmd_python %S/check_collectives.py 2 | FileCheck %s
// RUN: sed -e s/NP/4/g -e s/ROWSG/16/g -e s/COLSG/32/g -e s/COLSS/2/g %s | spmd-opt --spmd-lower-to-cpu > %t4.mlir
// RUN: env SPMD_RUNTIME_CHECK=1 %mpirun 4 %run-mpi %t4.mlir | %spmd_python %S/check_collectives.py 4 | FileCheck %s
// CHECK: all_reduce_sum ok
// CHECK: all_reduce_avg ok
// CHECK: all_reduce_max ok
// CHECK: all_gather_0 ok
// CHECK: all_gather_1 ok
// CHECK: reduce_scatter_1 ok
// CHECK: all_to_all ok
// CHECK: broadcast ok
// CHECK: coalesced ok
// CHECK: async_all_reduce ok
// CHECK: async_all_gather_1 ok
// CHECK: async_waited_twice ok
// CHECK: 12 of 12 collectives ok

spmd.mesh @m(shape = NP)

func.func private @printMemrefF32(tensor<*xf32> {bufferization.access = "read"}) attributes {llvm.emit_c_interface}

func.func @show(%t: tensor<*xf32>, %first: i1) {
  scf.if %first {
    func.call @printMemrefF32(%t) : (tensor<*xf32>) -> ()
  }
  return
}

func.func @main() {
  %iota = arith.constant dense<[[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0],
                                [8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0],
                                [16.0, 17.0, 18.0, 19.0, 20.0, 21.0, 22.0, 23.0],
                                [24.0, 25.0, 26.0, 27.0, 28.0, 29.0, 30.0, 31.0]]> : tensor<4x8xf32>
  %r = spmd.axis_index @m axes = [0] : index
  %ri = arith.index_cast %r : index to i32
  %rf = arith.sitofp %ri : i32 to f32
  %hundred = arith.constant 100.0 : f32
  %off = arith.mulf %rf, %hundred : f32
  %offs = tensor.splat %off : tensor<4x8xf32>
  %x = arith.addf %iota, %offs : tensor<4x8xf32>
  %c0 = arith.constant 0 : index
  %first = arith.cmpi eq, %r, %c0 : index

  %s = spmd.all_reduce %x on @m axes = [0] sum : tensor<4x8xf32> -> tensor<4x8xf32>
  %s_u = tensor.cast %s : tensor<4x8xf32> to tensor<*xf32>
  func.call @show(%s_u, %first) : (tensor<*xf32>, i1) -> ()
  %a = spmd.all_reduce %x on @m axes = [0] avg : tensor<4x8xf32> -> tensor<4x8xf32>
  %a_u = tensor.cast %a : tensor<4x8xf32> to tensor<*xf32>
  func.call @show(%a_u, %first) : (tensor<*xf32>, i1) -> ()
  %mx = spmd.all_reduce %x on @m axes = [0] max : tensor<4x8xf32> -> tensor<4x8xf32>
  %mx_u = tensor.cast %mx : tensor<4x8xf32> to tensor<*xf32>
  func.call @show(%mx_u, %first) : (tensor<*xf32>, i1) -> ()
  %g0 = spmd.all_gather %x on @m axes = [0] gather_dim = 0 : tensor<4x8xf32> -> tensor<ROWSGx8xf32>
  %g0_u = tensor.cast %g0 : tensor<ROWSGx8xf32> to tensor<*xf32>
  func.call @show(%g0_u, %first) : (tensor<*xf32>, i1) -> ()
  %g1 = spmd.all_gather %x on @m axes = [0] gather_dim = 1 : tensor<4x8xf32> -> tensor<4xCOLSGxf32>
  %g1_u = tensor.cast %g1 : tensor<4xCOLSGxf32> to tensor<*xf32>
  func.call @show(%g1_u, %first) : (tensor<*xf32>, i1) -> ()
  %rs = spmd.reduce_scatter %x on @m axes = [0] sum scatter_dim = 1 : tensor<4x8xf32> -> tensor<4xCOLSSxf32>
  %rs_u = tensor.cast %rs : tensor<4xCOLSSxf32> to tensor<*xf32>
  func.call @show(%rs_u, %first) : (tensor<*xf32>, i1) -> ()
  %t = spmd.all_to_all %x on @m axes = [0] split_dim = 1 concat_dim = 0 : tensor<4x8xf32> -> tensor<ROWSGxCOLSSxf32>
  %t_u = tensor.cast %t : tensor<ROWSGxCOLSSxf32> to tensor<*xf32>
  func.call @show(%t_u, %first) : (tensor<*xf32>, i1) -> ()
  %b = spmd.broadcast %x on @m axes = [0] root = 0 : tensor<4x8xf32> -> tensor<4x8xf32>
  %b_u = tensor.cast %b : tensor<4x8xf32> to tensor<*xf32>
  func.call @show(%b_u, %first) : (tensor<*xf32>, i1) -> ()
  // Two tensors in one coalesced call.
  %c1, %c2 = spmd.all_reduce %x, %iota on @m axes = [0] sum : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>, tensor<4x8xf32>
  %c2_u = tensor.cast %c2 : tensor<4x8xf32> to tensor<*xf32>
  func.call @show(%c2_u, %first) : (tensor<*xf32>, i1) -> ()
  // Asynchronous: start two, compute, wait (one future twice).
  %f1 = spmd.all_reduce %x on @m axes = [0] sum : tensor<4x8xf32> -> !spmd.future<tensor<4x8xf32>>
  %f2 = spmd.all_gather %x on @m axes = [0] gather_dim = 1 : tensor<4x8xf32> -> !spmd.future<tensor<4xCOLSGxf32>>
  %busy = arith.mulf %x, %x : tensor<4x8xf32>
  %w2 = spmd.wait %f2 : !spmd.future<tensor<4xCOLSGxf32>>
  %w1 = spmd.wait %f1 : !spmd.future<tensor<4x8xf32>>
  %w1again = spmd.wait %f1 : !spmd.future<tensor<4x8xf32>>
  %w1_u = tensor.cast %w1 : tensor<4x8xf32> to tensor<*xf32>
  func.call @show(%w1_u, %first) : (tensor<*xf32>, i1) -> ()
  %w2_u = tensor.cast %w2 : tensor<4xCOLSGxf32> to tensor<*xf32>
  func.call @show(%w2_u, %first) : (tensor<*xf32>, i1) -> ()
  %w1a_u = tensor.cast %w1again : tensor<4x8xf32> to tensor<*xf32>
  func.call @show(%w1a_u, %first) : (tensor<*xf32>, i1) -> ()
  return
}
