// REQUIRES: mpi
// Every placement pair on a 1-D mesh (uneven 6x4): each value goes
// replicate -> A -> B -> replicate and must come back unchanged, on 1, 2 and 4
// ranks. Only rank 0 prints.
// RUN: sed s/NP/1/ %s | spmd-opt --spmd-distribute --spmd-lower-to-cpu > %t1.mlir
// RUN: %mpirun 1 %run-mpi %t1.mlir > %t1.out
// RUN: %spmd_python %S/compare_runs.py --expect-equal-to-first %t1.out | FileCheck %s
// RUN: sed s/NP/2/ %s | spmd-opt --spmd-distribute --spmd-lower-to-cpu > %t2.mlir
// RUN: %mpirun 2 %run-mpi %t2.mlir > %t2.out
// RUN: %spmd_python %S/compare_runs.py --expect-equal-to-first %t2.out | FileCheck %s
// RUN: sed s/NP/4/ %s | spmd-opt --spmd-distribute --spmd-lower-to-cpu > %t4.mlir
// RUN: %mpirun 4 %run-mpi %t4.mlir > %t4.out
// RUN: %spmd_python %S/compare_runs.py --expect-equal-to-first %t4.out | FileCheck %s
// CHECK-COUNT-12: max |diff| = 0{{$}}
// CHECK: PASS

spmd.mesh @m(shape = NP)

func.func @roundtrip0(%x: tensor<6x4xf32>) -> tensor<6x4xf32> {
  %a = spmd.redistribute %x to <@m, [replicate]> : tensor<6x4xf32>
  %b = spmd.redistribute %a to <@m, [shard<0>]> : tensor<6x4xf32>
  %r = spmd.redistribute %b to <@m, [replicate]> : tensor<6x4xf32>
  return %r : tensor<6x4xf32>
}

func.func @roundtrip1(%x: tensor<6x4xf32>) -> tensor<6x4xf32> {
  %a = spmd.redistribute %x to <@m, [replicate]> : tensor<6x4xf32>
  %b = spmd.redistribute %a to <@m, [shard<1>]> : tensor<6x4xf32>
  %r = spmd.redistribute %b to <@m, [replicate]> : tensor<6x4xf32>
  return %r : tensor<6x4xf32>
}

func.func @roundtrip2(%x: tensor<6x4xf32>) -> tensor<6x4xf32> {
  %a = spmd.redistribute %x to <@m, [replicate]> : tensor<6x4xf32>
  %b = spmd.redistribute %a to <@m, [partial<sum>]> : tensor<6x4xf32>
  %r = spmd.redistribute %b to <@m, [replicate]> : tensor<6x4xf32>
  return %r : tensor<6x4xf32>
}

func.func @roundtrip3(%x: tensor<6x4xf32>) -> tensor<6x4xf32> {
  %a = spmd.redistribute %x to <@m, [shard<0>]> : tensor<6x4xf32>
  %b = spmd.redistribute %a to <@m, [replicate]> : tensor<6x4xf32>
  %r = spmd.redistribute %b to <@m, [replicate]> : tensor<6x4xf32>
  return %r : tensor<6x4xf32>
}

func.func @roundtrip4(%x: tensor<6x4xf32>) -> tensor<6x4xf32> {
  %a = spmd.redistribute %x to <@m, [shard<0>]> : tensor<6x4xf32>
  %b = spmd.redistribute %a to <@m, [shard<1>]> : tensor<6x4xf32>
  %r = spmd.redistribute %b to <@m, [replicate]> : tensor<6x4xf32>
  return %r : tensor<6x4xf32>
}

func.func @roundtrip5(%x: tensor<6x4xf32>) -> tensor<6x4xf32> {
  %a = spmd.redistribute %x to <@m, [shard<0>]> : tensor<6x4xf32>
  %b = spmd.redistribute %a to <@m, [partial<sum>]> : tensor<6x4xf32>
  %r = spmd.redistribute %b to <@m, [replicate]> : tensor<6x4xf32>
  return %r : tensor<6x4xf32>
}

func.func @roundtrip6(%x: tensor<6x4xf32>) -> tensor<6x4xf32> {
  %a = spmd.redistribute %x to <@m, [shard<1>]> : tensor<6x4xf32>
  %b = spmd.redistribute %a to <@m, [shard<0>]> : tensor<6x4xf32>
  %r = spmd.redistribute %b to <@m, [replicate]> : tensor<6x4xf32>
  return %r : tensor<6x4xf32>
}

func.func @roundtrip7(%x: tensor<6x4xf32>) -> tensor<6x4xf32> {
  %a = spmd.redistribute %x to <@m, [partial<sum>]> : tensor<6x4xf32>
  %b = spmd.redistribute %a to <@m, [replicate]> : tensor<6x4xf32>
  %r = spmd.redistribute %b to <@m, [replicate]> : tensor<6x4xf32>
  return %r : tensor<6x4xf32>
}

func.func @roundtrip8(%x: tensor<6x4xf32>) -> tensor<6x4xf32> {
  %a = spmd.redistribute %x to <@m, [partial<sum>]> : tensor<6x4xf32>
  %b = spmd.redistribute %a to <@m, [shard<0>]> : tensor<6x4xf32>
  %r = spmd.redistribute %b to <@m, [replicate]> : tensor<6x4xf32>
  return %r : tensor<6x4xf32>
}

func.func @roundtrip9(%x: tensor<6x4xf32>) -> tensor<6x4xf32> {
  %a = spmd.redistribute %x to <@m, [partial<sum>]> : tensor<6x4xf32>
  %b = spmd.redistribute %a to <@m, [shard<1>]> : tensor<6x4xf32>
  %r = spmd.redistribute %b to <@m, [replicate]> : tensor<6x4xf32>
  return %r : tensor<6x4xf32>
}

func.func @roundtrip10(%x: tensor<6x4xf32>) -> tensor<6x4xf32> {
  %a = spmd.redistribute %x to <@m, [partial<max>]> : tensor<6x4xf32>
  %b = spmd.redistribute %a to <@m, [replicate]> : tensor<6x4xf32>
  %r = spmd.redistribute %b to <@m, [replicate]> : tensor<6x4xf32>
  return %r : tensor<6x4xf32>
}

func.func @roundtrip11(%x: tensor<6x4xf32>) -> tensor<6x4xf32> {
  %a = spmd.redistribute %x to <@m, [partial<avg>]> : tensor<6x4xf32>
  %b = spmd.redistribute %a to <@m, [shard<0>]> : tensor<6x4xf32>
  %r = spmd.redistribute %b to <@m, [replicate]> : tensor<6x4xf32>
  return %r : tensor<6x4xf32>
}

func.func private @printMemrefF32(tensor<*xf32> {bufferization.access = "read"}) attributes {llvm.emit_c_interface}
func.func private @spmdWorldRank() -> i32

func.func @main() {
  %x = arith.constant dense<[[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0], [9.0, 10.0, 11.0, 12.0], [13.0, 14.0, 15.0, 16.0], [17.0, 18.0, 19.0, 20.0], [21.0, 22.0, 23.0, 24.0]]> : tensor<6x4xf32>
  %rank = func.call @spmdWorldRank() : () -> i32
  %c0 = arith.constant 0 : i32
  %first = arith.cmpi eq, %rank, %c0 : i32
  scf.if %first {
    %xp = arith.constant dense<[[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0], [9.0, 10.0, 11.0, 12.0], [13.0, 14.0, 15.0, 16.0], [17.0, 18.0, 19.0, 20.0], [21.0, 22.0, 23.0, 24.0]]> : tensor<6x4xf32>
    %u = tensor.cast %xp : tensor<6x4xf32> to tensor<*xf32>
    func.call @printMemrefF32(%u) : (tensor<*xf32>) -> ()
  }
  %r0 = func.call @roundtrip0(%x) : (tensor<6x4xf32>) -> tensor<6x4xf32>
  scf.if %first {
    %u0 = tensor.cast %r0 : tensor<6x4xf32> to tensor<*xf32>
    func.call @printMemrefF32(%u0) : (tensor<*xf32>) -> ()
  }
  %r1 = func.call @roundtrip1(%x) : (tensor<6x4xf32>) -> tensor<6x4xf32>
  scf.if %first {
    %u1 = tensor.cast %r1 : tensor<6x4xf32> to tensor<*xf32>
    func.call @printMemrefF32(%u1) : (tensor<*xf32>) -> ()
  }
  %r2 = func.call @roundtrip2(%x) : (tensor<6x4xf32>) -> tensor<6x4xf32>
  scf.if %first {
    %u2 = tensor.cast %r2 : tensor<6x4xf32> to tensor<*xf32>
    func.call @printMemrefF32(%u2) : (tensor<*xf32>) -> ()
  }
  %r3 = func.call @roundtrip3(%x) : (tensor<6x4xf32>) -> tensor<6x4xf32>
  scf.if %first {
    %u3 = tensor.cast %r3 : tensor<6x4xf32> to tensor<*xf32>
    func.call @printMemrefF32(%u3) : (tensor<*xf32>) -> ()
  }
  %r4 = func.call @roundtrip4(%x) : (tensor<6x4xf32>) -> tensor<6x4xf32>
  scf.if %first {
    %u4 = tensor.cast %r4 : tensor<6x4xf32> to tensor<*xf32>
    func.call @printMemrefF32(%u4) : (tensor<*xf32>) -> ()
  }
  %r5 = func.call @roundtrip5(%x) : (tensor<6x4xf32>) -> tensor<6x4xf32>
  scf.if %first {
    %u5 = tensor.cast %r5 : tensor<6x4xf32> to tensor<*xf32>
    func.call @printMemrefF32(%u5) : (tensor<*xf32>) -> ()
  }
  %r6 = func.call @roundtrip6(%x) : (tensor<6x4xf32>) -> tensor<6x4xf32>
  scf.if %first {
    %u6 = tensor.cast %r6 : tensor<6x4xf32> to tensor<*xf32>
    func.call @printMemrefF32(%u6) : (tensor<*xf32>) -> ()
  }
  %r7 = func.call @roundtrip7(%x) : (tensor<6x4xf32>) -> tensor<6x4xf32>
  scf.if %first {
    %u7 = tensor.cast %r7 : tensor<6x4xf32> to tensor<*xf32>
    func.call @printMemrefF32(%u7) : (tensor<*xf32>) -> ()
  }
  %r8 = func.call @roundtrip8(%x) : (tensor<6x4xf32>) -> tensor<6x4xf32>
  scf.if %first {
    %u8 = tensor.cast %r8 : tensor<6x4xf32> to tensor<*xf32>
    func.call @printMemrefF32(%u8) : (tensor<*xf32>) -> ()
  }
  %r9 = func.call @roundtrip9(%x) : (tensor<6x4xf32>) -> tensor<6x4xf32>
  scf.if %first {
    %u9 = tensor.cast %r9 : tensor<6x4xf32> to tensor<*xf32>
    func.call @printMemrefF32(%u9) : (tensor<*xf32>) -> ()
  }
  %r10 = func.call @roundtrip10(%x) : (tensor<6x4xf32>) -> tensor<6x4xf32>
  scf.if %first {
    %u10 = tensor.cast %r10 : tensor<6x4xf32> to tensor<*xf32>
    func.call @printMemrefF32(%u10) : (tensor<*xf32>) -> ()
  }
  %r11 = func.call @roundtrip11(%x) : (tensor<6x4xf32>) -> tensor<6x4xf32>
  scf.if %first {
    %u11 = tensor.cast %r11 : tensor<6x4xf32> to tensor<*xf32>
    func.call @printMemrefF32(%u11) : (tensor<*xf32>) -> ()
  }
  return
}
