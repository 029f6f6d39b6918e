// REQUIRES: mpi
// 16-bit floats (torch.autocast's bfloat16 and float16) through every
// collective kind on 2 and 4 ranks, on MPI and Gloo. Rank r holds
// x = iota(4x8) / 4 + r (exact in both types); reductions run in float32
// and round once, so on 4 ranks 256 + 1 + 1 + 1 gives 260 in bfloat16
// (pairwise bfloat16 sums would give 256; float16 holds 259).
// check_16bit.py compares what
// rank 0 printed (widened to f32) with numpy rounded through torch's types.
// RUN: sed -e s/NP/2/g -e s/ROWSG/8/g -e s/COLSS/4/g -e s/T16/bf16/g %s | spmd-opt --spmd-lower-to-cpu > %t.bf2.mlir
// RUN: env SPMD_RUNTIME_CHECK=1 %mpirun 2 %run-mpi %t.bf2.mlir | %spmd_python %S/check_16bit.py 2 bf16 | FileCheck %s
// RUN: sed -e s/NP/4/g -e s/ROWSG/16/g -e s/COLSS/2/g -e s/T16/bf16/g %s | spmd-opt --spmd-lower-to-cpu > %t.bf4.mlir
// RUN: %mpirun 4 %run-mpi %t.bf4.mlir | %spmd_python %S/check_16bit.py 4 bf16 | FileCheck %s --check-prefixes=CHECK,BF-FOUR
// RUN: sed -e s/NP/2/g -e s/ROWSG/8/g -e s/COLSS/4/g -e s/T16/f16/g %s | spmd-opt --spmd-lower-to-cpu > %t.h2.mlir
// RUN: %mpirun 2 %run-mpi %t.h2.mlir | %spmd_python %S/check_16bit.py 2 f16 | FileCheck %s
// RUN: sed -e s/NP/4/g -e s/ROWSG/16/g -e s/COLSS/2/g -e s/T16/f16/g %s | spmd-opt --spmd-lower-to-cpu > %t.h4.mlir
// RUN: %mpirun 4 %run-mpi %t.h4.mlir | %spmd_python %S/check_16bit.py 4 f16 | FileCheck %s --check-prefixes=CHECK,H-FOUR
// CHECK: all_reduce_sum ok
// CHECK: all_reduce_avg ok
// CHECK: all_reduce_max ok
// CHECK: all_gather_0 ok
// CHECK: reduce_scatter_1 ok
// CHECK: all_to_all ok
// CHECK: broadcast ok
// CHECK: rounded_once ok
// BF-FOUR: rounded_once: 260
// H-FOUR: rounded_once: 259
// CHECK: 8 of 8 collectives ok

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
  %quarter = arith.constant dense<0.25> : tensor<4x8xf32>
  %r = spmd.axis_index @m axes = [0] : index
  %ri = arith.index_cast %r : index to i32
  %rf = arith.sitofp %ri : i32 to f32
  %offs = tensor.splat %rf : tensor<4x8xf32>
  %scaled = arith.mulf %iota, %quarter : tensor<4x8xf32>
  %x32 = arith.addf %scaled, %offs : tensor<4x8xf32>
  %x = arith.truncf %x32 : tensor<4x8xf32> to tensor<4x8xT16>
  %c0 = arith.constant 0 : index
  %first = arith.cmpi eq, %r, %c0 : index

  %s = spmd.all_reduce %x on @m axes = [0] sum : tensor<4x8xT16> -> tensor<4x8xT16>
  %s_w = arith.extf %s : tensor<4x8xT16> to tensor<4x8xf32>
  %s_u = tensor.cast %s_w : tensor<4x8xf32> to tensor<*xf32>
  func.call @show(%s_u, %first) : (tensor<*xf32>, i1) -> ()
  %a = spmd.all_reduce %x on @m axes = [0] avg : tensor<4x8xT16> -> tensor<4x8xT16>
  %a_w = arith.extf %a : tensor<4x8xT16> to tensor<4x8xf32>
  %a_u = tensor.cast %a_w : tensor<4x8xf32> to tensor<*xf32>
  func.call @show(%a_u, %first) : (tensor<*xf32>, i1) -> ()
  %mx = spmd.all_reduce %x on @m axes = [0] max : tensor<4x8xT16> -> tensor<4x8xT16>
  %mx_w = arith.extf %mx : tensor<4x8xT16> to tensor<4x8xf32>
  %mx_u = tensor.cast %mx_w : tensor<4x8xf32> to tensor<*xf32>
  func.call @show(%mx_u, %first) : (tensor<*xf32>, i1) -> ()
  %g0 = spmd.all_gather %x on @m axes = [0] gather_dim = 0 : tensor<4x8xT16> -> tensor<ROWSGx8xT16>
  %g0_w = arith.extf %g0 : tensor<ROWSGx8xT16> to tensor<ROWSGx8xf32>
  %g0_u = tensor.cast %g0_w : tensor<ROWSGx8xf32> to tensor<*xf32>
  func.call @show(%g0_u, %first) : (tensor<*xf32>, i1) -> ()
  %rs = spmd.reduce_scatter %x on @m axes = [0] sum scatter_dim = 1 : tensor<4x8xT16> -> tensor<4xCOLSSxT16>
  %rs_w = arith.extf %rs : tensor<4xCOLSSxT16> to tensor<4xCOLSSxf32>
  %rs_u = tensor.cast %rs_w : tensor<4xCOLSSxf32> to tensor<*xf32>
  func.call @show(%rs_u, %first) : (tensor<*xf32>, i1) -> ()
  %t = spmd.all_to_all %x on @m axes = [0] split_dim = 1 concat_dim = 0 : tensor<4x8xT16> -> tensor<ROWSGxCOLSSxT16>
  %t_w = arith.extf %t : tensor<ROWSGxCOLSSxT16> to tensor<ROWSGxCOLSSxf32>
  %t_u = tensor.cast %t_w : tensor<ROWSGxCOLSSxf32> to tensor<*xf32>
  func.call @show(%t_u, %first) : (tensor<*xf32>, i1) -> ()
  %b = spmd.broadcast %x on @m axes = [0] root = 0 : tensor<4x8xT16> -> tensor<4x8xT16>
  %b_w = arith.extf %b : tensor<4x8xT16> to tensor<4x8xf32>
  %b_u = tensor.cast %b_w : tensor<4x8xf32> to tensor<*xf32>
  func.call @show(%b_u, %first) : (tensor<*xf32>, i1) -> ()
  // Rank 0 holds 256, every other rank 1: one rounding of the f32 sum.
  %c256 = arith.constant 256.0 : f32
  %c1 = arith.constant 1.0 : f32
  %v = arith.select %first, %c256, %c1 : f32
  %vt = tensor.splat %v : tensor<2xf32>
  %v16 = arith.truncf %vt : tensor<2xf32> to tensor<2xT16>
  %once = spmd.all_reduce %v16 on @m axes = [0] sum : tensor<2xT16> -> tensor<2xT16>
  %once_w = arith.extf %once : tensor<2xT16> to tensor<2xf32>
  %once_u = tensor.cast %once_w : tensor<2xf32> to tensor<*xf32>
  func.call @show(%once_u, %first) : (tensor<*xf32>, i1) -> ()
  return
}
