// 16-bit floats through spmd-lower-to-cpu on a CPU without AVX512-BF16
// (plain x86-64): arithmetic runs in f32 and rounds after every op, and
// nothing calls __truncsfbf2 / __truncdfbf2, which libgcc before GCC 13
// (Debian 12) does not have. f16 may call __truncsfhf2 / __extendhfsf2
// (libgcc has them).
// RUN: spmd-opt %s --spmd-lower-to-cpu | mlir-translate --mlir-to-llvmir > %t.ll
// RUN: llc -O2 -mtriple=%host_triple -mcpu=x86-64 -relocation-model=pic -filetype=obj %t.ll -o %t.o
// RUN: llvm-nm %t.o | FileCheck %s --check-prefix=SYMS --implicit-check-not=bf2
// SYMS: T scale
//
// The two passes on their own:
// RUN: spmd-opt %s --spmd-legalize-half-conversions | FileCheck %s --check-prefix=VIA
// RUN: spmd-opt %S/Inputs/bf16-bits.mlir --spmd-bf16-bits-in-memory | FileCheck %S/Inputs/bf16-bits.mlir

// VIA-LABEL: func.func @scale
// VIA: %[[F:.*]] = arith.truncf %{{.*}} : f64 to f32
// VIA: arith.truncf %[[F]] : f32 to bf16
// VIA: %[[E:.*]] = arith.extf %{{.*}} : bf16 to f32
// VIA: arith.extf %[[E]] : f32 to f64
func.func @scale(%x: memref<16xbf16>, %s: f64, %out: memref<16xf64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %sb = arith.truncf %s : f64 to bf16
  scf.for %i = %c0 to %c16 step %c1 {
    %v = memref.load %x[%i] : memref<16xbf16>
    %p = arith.mulf %v, %sb : bf16
    memref.store %p, %x[%i] : memref<16xbf16>
    %w = arith.extf %p : bf16 to f64
    memref.store %w, %out[%i] : memref<16xf64>
  }
  return
}

// Half precision arithmetic, for the record.
func.func @half(%x: memref<8xf16>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  scf.for %i = %c0 to %c8 step %c1 {
    %v = memref.load %x[%i] : memref<8xf16>
    %e = math.exp %v : f16
    memref.store %e, %x[%i] : memref<8xf16>
  }
  return
}
