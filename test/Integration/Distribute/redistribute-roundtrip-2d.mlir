// REQUIRES: mpi
// 2-D mesh (2x2, 4 ranks): values go replicate -> A -> B -> replicate through
// multi-axis redistributions and must come back unchanged.
// RUN: spmd-opt %s --spmd-distribute --spmd-lower-to-cpu > %t.mlir
// RUN: env SPMD_RUNTIME_CHECK=1 %mpirun 4 %run-mpi %t.mlir > %t.out
// RUN: %spmd_python %S/compare_runs.py --expect-equal-to-first %t.out | FileCheck %s
// CHECK-COUNT-7: max |diff| = 0{{$}}
// CHECK: PASS

spmd.mesh @g(shape = 2x2)

func.func @roundtrip0(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %a = spmd.redistribute %x to <@g, [shard<0>, shard<1>]> : tensor<8x4xf32>
  %b = spmd.redistribute %a to <@g, [replicate, replicate]> : tensor<8x4xf32>
  %r = spmd.redistribute %b to <@g, [replicate, replicate]> : tensor<8x4xf32>
  return %r : tensor<8x4xf32>
}

func.func @roundtrip1(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %a = spmd.redistribute %x to <@g, [shard<0>, shard<0>]> : tensor<8x4xf32>
  %b = spmd.redistribute %a to <@g, [shard<1>, replicate]> : tensor<8x4xf32>
  %r = spmd.redistribute %b to <@g, [replicate, replicate]> : tensor<8x4xf32>
  return %r : tensor<8x4xf32>
}

func.func @roundtrip2(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %a = spmd.redistribute %x to <@g, [partial<sum>, shard<1>]> : tensor<8x4xf32>
  %b = spmd.redistribute %a to <@g, [shard<0>, shard<1>]> : tensor<8x4xf32>
  %r = spmd.redistribute %b to <@g, [replicate, replicate]> : tensor<8x4xf32>
  return %r : tensor<8x4xf32>
}

func.func @roundtrip3(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %a = spmd.redistribute %x to <@g, [replicate, replicate]> : tensor<8x4xf32>
  %b = spmd.redistribute %a to <@g, [shard<0>, shard<0>]> : tensor<8x4xf32>
  %r = spmd.redistribute %b to <@g, [replicate, replicate]> : tensor<8x4xf32>
  return %r : tensor<8x4xf32>
}

func.func @roundtrip4(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %a = spmd.redistribute %x to <@g, [partial<sum>, partial<sum>]> : tensor<8x4xf32>
  %b = spmd.redistribute %a to <@g, [replicate, shard<0>]> : tensor<8x4xf32>
  %r = spmd.redistribute %b to <@g, [replicate, replicate]> : tensor<8x4xf32>
  return %r : tensor<8x4xf32>
}

func.func @roundtrip5(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %a = spmd.redistribute %x to <@g, [shard<1>, partial<max>]> : tensor<8x4xf32>
  %b = spmd.redistribute %a to <@g, [partial<sum>, replicate]> : tensor<8x4xf32>
  %r = spmd.redistribute %b to <@g, [replicate, replicate]> : tensor<8x4xf32>
  return %r : tensor<8x4xf32>
}

func.func @roundtrip6(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %a = spmd.redistribute %x to <@g, [replicate, shard<0>]> : tensor<8x4xf32>
  %b = spmd.redistribute %a to <@g, [shard<0>, replicate]> : tensor<8x4xf32>
  %r = spmd.redistribute %b to <@g, [replicate, replicate]> : tensor<8x4xf32>
  return %r : tensor<8x4xf32>
}

func.func private @printMemrefF32(tensor<*xf32> {bufferization.access = "read"}) attributes {llvm.emit_c_interface}
func.func private @spmdWorldRank() -> i32

func.func @main() {
  %x = arith.constant dense<[[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0], [9.0, 10.0, 11.0, 12.0], [13.0, 14.0, 15.0, 16.0], [17.0, 18.0, 19.0, 20.0], [21.0, 22.0, 23.0, 24.0], [25.0, 26.0, 27.0, 28.0], [29.0, 30.0, 31.0, 32.0]]> : tensor<8x4xf32>
  %rank = func.call @spmdWorldRank() : () -> i32
  %c0 = arith.constant 0 : i32
  %first = arith.cmpi eq, %rank, %c0 : i32
  scf.if %first {
    %xp = arith.constant dense<[[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0], [9.0, 10.0, 11.0, 12.0], [13.0, 14.0, 15.0, 16.0], [17.0, 18.0, 19.0, 20.0], [21.0, 22.0, 23.0, 24.0], [25.0, 26.0, 27.0, 28.0], [29.0, 30.0, 31.0, 32.0]]> : tensor<8x4xf32>
    %u = tensor.cast %xp : tensor<8x4xf32> to tensor<*xf32>
    func.call @printMemrefF32(%u) : (tensor<*xf32>) -> ()
  }
  %r0 = func.call @roundtrip0(%x) : (tensor<8x4xf32>) -> tensor<8x4xf32>
  scf.if %first {
    %u0 = tensor.cast %r0 : tensor<8x4xf32> to tensor<*xf32>
    func.call @printMemrefF32(%u0) : (tensor<*xf32>) -> ()
  }
  %r1 = func.call @roundtrip1(%x) : (tensor<8x4xf32>) -> tensor<8x4xf32>
  scf.if %first {
    %u1 = tensor.cast %r1 : tensor<8x4xf32> to tensor<*xf32>
    func.call @printMemrefF32(%u1) : (tensor<*xf32>) -> ()
  }
  %r2 = func.call @roundtrip2(%x) : (tensor<8x4xf32>) -> tensor<8x4xf32>
  scf.if %first {
    %u2 = tensor.cast %r2 : tensor<8x4xf32> to tensor<*xf32>
    func.call @printMemrefF32(%u2) : (tensor<*xf32>) -> ()
  }
  %r3 = func.call @roundtrip3(%x) : (tensor<8x4xf32>) -> tensor<8x4xf32>
  scf.if %first {
    %u3 = tensor.cast %r3 : tensor<8x4xf32> to tensor<*xf32>
    func.call @printMemrefF32(%u3) : (tensor<*xf32>) -> ()
  }
  %r4 = func.call @roundtrip4(%x) : (tensor<8x4xf32>) -> tensor<8x4xf32>
  scf.if %first {
    %u4 = tensor.cast %r4 : tensor<8x4xf32> to tensor<*xf32>
    func.call @printMemrefF32(%u4) : (tensor<*xf32>) -> ()
  }
  %r5 = func.call @roundtrip5(%x) : (tensor<8x4xf32>) -> tensor<8x4xf32>
  scf.if %first {
    %u5 = tensor.cast %r5 : tensor<8x4xf32> to tensor<*xf32>
    func.call @printMemrefF32(%u5) : (tensor<*xf32>) -> ()
  }
  %r6 = func.call @roundtrip6(%x) : (tensor<8x4xf32>) -> tensor<8x4xf32>
  scf.if %first {
    %u6 = tensor.cast %r6 : tensor<8x4xf32> to tensor<*xf32>
    func.call @printMemrefF32(%u6) : (tensor<*xf32>) -> ()
  }
  return
}
