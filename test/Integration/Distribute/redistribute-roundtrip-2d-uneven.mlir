// REQUIRES: mpi
// Values sharded unevenly on both dimensions of a 2-D mesh (7x5 over 2x2
// leaves chunks of 4+3 rows and 3+2 columns) are redistributed, computed on
// and brought back: every result on 2 ranks (1x2, 2x1) and 4 ranks (2x2)
// must equal the single-rank run (1x1). Only rank 0 prints.
// RUN: sed s/SHAPE/1x1/ %s | spmd-opt --spmd-distribute --spmd-lower-to-cpu > %t11.mlir
// RUN: %mpirun 1 %run-mpi %t11.mlir > %t11.out
// RUN: sed s/SHAPE/1x2/ %s | spmd-opt --spmd-distribute --spmd-lower-to-cpu > %t12.mlir
// RUN: %mpirun 2 %run-mpi %t12.mlir > %t12.out
// RUN: %spmd_python %S/compare_runs.py %t11.out %t12.out | FileCheck %s
// RUN: sed s/SHAPE/2x1/ %s | spmd-opt --spmd-distribute --spmd-lower-to-cpu > %t21.mlir
// RUN: %mpirun 2 %run-mpi %t21.mlir > %t21.out
// RUN: %spmd_python %S/compare_runs.py %t11.out %t21.out | FileCheck %s
// RUN: sed s/SHAPE/2x2/ %s | spmd-opt --spmd-distribute --spmd-lower-to-cpu > %t22.mlir
// RUN: env SPMD_RUNTIME_CHECK=1 %mpirun 4 %run-mpi %t22.mlir > %t22.out
// RUN: %spmd_python %S/compare_runs.py %t11.out %t22.out | FileCheck %s
// The reference itself is what the functions compute (the round trips give
// back their input; exp and the row sums are checked against numpy).
// RUN: %spmd_python %S/check_uneven_2d.py %t11.out | FileCheck %s --check-prefix=REF
// CHECK: PASS
// REF: reference OK

spmd.mesh @g(shape = SHAPE)

func.func @roundtrip0(%x: tensor<7x5xf32>) -> tensor<7x5xf32> {
  %a = spmd.redistribute %x to <@g, [shard<0>, shard<1>]> : tensor<7x5xf32>
  %b = spmd.redistribute %a to <@g, [shard<1>, shard<0>]> : tensor<7x5xf32>
  %r = spmd.redistribute %b to <@g, [replicate, replicate]> : tensor<7x5xf32>
  return %r : tensor<7x5xf32>
}

func.func @roundtrip1(%x: tensor<7x5xf32>) -> tensor<7x5xf32> {
  %a = spmd.redistribute %x to <@g, [shard<0>, shard<1>]> : tensor<7x5xf32>
  %b = spmd.redistribute %a to <@g, [replicate, replicate]> : tensor<7x5xf32>
  %r = spmd.redistribute %b to <@g, [replicate, replicate]> : tensor<7x5xf32>
  return %r : tensor<7x5xf32>
}

func.func @roundtrip2(%x: tensor<7x5xf32>) -> tensor<7x5xf32> {
  %a = spmd.redistribute %x to <@g, [shard<0>, shard<1>]> : tensor<7x5xf32>
  %b = spmd.redistribute %a to <@g, [shard<0>, replicate]> : tensor<7x5xf32>
  %r = spmd.redistribute %b to <@g, [replicate, replicate]> : tensor<7x5xf32>
  return %r : tensor<7x5xf32>
}

func.func @roundtrip3(%x: tensor<7x5xf32>) -> tensor<7x5xf32> {
  %a = spmd.redistribute %x to <@g, [shard<0>, shard<1>]> : tensor<7x5xf32>
  %b = spmd.redistribute %a to <@g, [replicate, shard<1>]> : tensor<7x5xf32>
  %r = spmd.redistribute %b to <@g, [replicate, replicate]> : tensor<7x5xf32>
  return %r : tensor<7x5xf32>
}

func.func @roundtrip4(%x: tensor<7x5xf32>) -> tensor<7x5xf32> {
  %a = spmd.redistribute %x to <@g, [shard<1>, shard<0>]> : tensor<7x5xf32>
  %b = spmd.redistribute %a to <@g, [shard<0>, shard<1>]> : tensor<7x5xf32>
  %r = spmd.redistribute %b to <@g, [replicate, replicate]> : tensor<7x5xf32>
  return %r : tensor<7x5xf32>
}

func.func @roundtrip5(%x: tensor<7x5xf32>) -> tensor<7x5xf32> {
  %a = spmd.redistribute %x to <@g, [partial<sum>, shard<1>]> : tensor<7x5xf32>
  %b = spmd.redistribute %a to <@g, [shard<0>, shard<1>]> : tensor<7x5xf32>
  %r = spmd.redistribute %b to <@g, [replicate, replicate]> : tensor<7x5xf32>
  return %r : tensor<7x5xf32>
}

func.func @roundtrip6(%x: tensor<7x5xf32>) -> tensor<7x5xf32> {
  %a = spmd.redistribute %x to <@g, [shard<1>, partial<sum>]> : tensor<7x5xf32>
  %b = spmd.redistribute %a to <@g, [shard<1>, shard<0>]> : tensor<7x5xf32>
  %r = spmd.redistribute %b to <@g, [replicate, replicate]> : tensor<7x5xf32>
  return %r : tensor<7x5xf32>
}


// Elementwise on the doubly uneven layout, returned replicated.
func.func @exp(%x: tensor<7x5xf32>) -> (tensor<7x5xf32> {spmd.spec = #spmd.spec<@g, [replicate, replicate]>}) {
  %a = spmd.redistribute %x to <@g, [shard<0>, shard<1>]> : tensor<7x5xf32>
  %e = math.exp %a : tensor<7x5xf32>
  return %e : tensor<7x5xf32>
}

// A reduction over the unevenly split columns: partial sums on one axis.
func.func @rowsum(%x: tensor<7x5xf32>) -> (tensor<7xf32> {spmd.spec = #spmd.spec<@g, [replicate, replicate]>}) {
  %a = spmd.redistribute %x to <@g, [shard<0>, shard<1>]> : tensor<7x5xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<7xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<7xf32>) -> tensor<7xf32>
  %s = linalg.reduce ins(%a : tensor<7x5xf32>) outs(%acc : tensor<7xf32>) dimensions = [1]
    (%in: f32, %init: f32) {
      %sum = arith.addf %in, %init : f32
      linalg.yield %sum : f32
    }
  return %s : tensor<7xf32>
}

func.func private @printMemrefF32(tensor<*xf32> {bufferization.access = "read"}) attributes {llvm.emit_c_interface}
func.func private @spmdWorldRank() -> i32

func.func @main() {
  %x = arith.constant dense<[[1.0, 2.0, 3.0, 4.0, 5.0], [6.0, 7.0, 8.0, 9.0, 10.0], [11.0, 12.0, 13.0, 14.0, 15.0], [16.0, 17.0, 18.0, 19.0, 20.0], [21.0, 22.0, 23.0, 24.0, 25.0], [26.0, 27.0, 28.0, 29.0, 30.0], [31.0, 32.0, 33.0, 34.0, 35.0]]> : tensor<7x5xf32>
  %rank = func.call @spmdWorldRank() : () -> i32
  %c0 = arith.constant 0 : i32
  %first = arith.cmpi eq, %rank, %c0 : i32

  %roundtrip0 = func.call @roundtrip0(%x) : (tensor<7x5xf32>) -> tensor<7x5xf32>
  scf.if %first {
    %u_roundtrip0 = tensor.cast %roundtrip0 : tensor<7x5xf32> to tensor<*xf32>
    func.call @printMemrefF32(%u_roundtrip0) : (tensor<*xf32>) -> ()
  }

  %roundtrip1 = func.call @roundtrip1(%x) : (tensor<7x5xf32>) -> tensor<7x5xf32>
  scf.if %first {
    %u_roundtrip1 = tensor.cast %roundtrip1 : tensor<7x5xf32> to tensor<*xf32>
    func.call @printMemrefF32(%u_roundtrip1) : (tensor<*xf32>) -> ()
  }

  %roundtrip2 = func.call @roundtrip2(%x) : (tensor<7x5xf32>) -> tensor<7x5xf32>
  scf.if %first {
    %u_roundtrip2 = tensor.cast %roundtrip2 : tensor<7x5xf32> to tensor<*xf32>
    func.call @printMemrefF32(%u_roundtrip2) : (tensor<*xf32>) -> ()
  }

  %roundtrip3 = func.call @roundtrip3(%x) : (tensor<7x5xf32>) -> tensor<7x5xf32>
  scf.if %first {
    %u_roundtrip3 = tensor.cast %roundtrip3 : tensor<7x5xf32> to tensor<*xf32>
    func.call @printMemrefF32(%u_roundtrip3) : (tensor<*xf32>) -> ()
  }

  %roundtrip4 = func.call @roundtrip4(%x) : (tensor<7x5xf32>) -> tensor<7x5xf32>
  scf.if %first {
    %u_roundtrip4 = tensor.cast %roundtrip4 : tensor<7x5xf32> to tensor<*xf32>
    func.call @printMemrefF32(%u_roundtrip4) : (tensor<*xf32>) -> ()
  }

  %roundtrip5 = func.call @roundtrip5(%x) : (tensor<7x5xf32>) -> tensor<7x5xf32>
  scf.if %first {
    %u_roundtrip5 = tensor.cast %roundtrip5 : tensor<7x5xf32> to tensor<*xf32>
    func.call @printMemrefF32(%u_roundtrip5) : (tensor<*xf32>) -> ()
  }

  %roundtrip6 = func.call @roundtrip6(%x) : (tensor<7x5xf32>) -> tensor<7x5xf32>
  scf.if %first {
    %u_roundtrip6 = tensor.cast %roundtrip6 : tensor<7x5xf32> to tensor<*xf32>
    func.call @printMemrefF32(%u_roundtrip6) : (tensor<*xf32>) -> ()
  }


  %exp = func.call @exp(%x) : (tensor<7x5xf32>) -> tensor<7x5xf32>
  scf.if %first {
    %u_exp = tensor.cast %exp : tensor<7x5xf32> to tensor<*xf32>
    func.call @printMemrefF32(%u_exp) : (tensor<*xf32>) -> ()
  }

  %rowsum = func.call @rowsum(%x) : (tensor<7x5xf32>) -> tensor<7xf32>
  scf.if %first {
    %u_rowsum = tensor.cast %rowsum : tensor<7xf32> to tensor<*xf32>
    func.call @printMemrefF32(%u_rowsum) : (tensor<*xf32>) -> ()
  }
  return
}
