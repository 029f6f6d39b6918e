// RUN: spmd-opt %s --spmd-convert-linalg-to-blas --cse | FileCheck %s
// RUN: spmd-opt %s --spmd-convert-linalg-to-blas="function=spmdGpuSgemm batched-function=spmdGpuSgemmStridedBatched" --cse | FileCheck %s --check-prefix=STRIDED

// CHECK-LABEL: func.func @plain
// CHECK-SAME: (%[[A:.*]]: memref<64x128xf32>, %[[B:.*]]: memref<128x32xf32>, %[[C:.*]]: memref<64x32xf32>)
// CHECK-DAG: %[[ROW:.*]] = arith.constant 101 : i32
// CHECK-DAG: %[[NT:.*]] = arith.constant 111 : i32
// CHECK: call @cblas_sgemm(%[[ROW]], %[[NT]], %[[NT]], %{{.*}}) : (i32, i32, i32, i32, i32, i32, f32, i64, i32, i64, i32, f32, i64, i32) -> ()
// CHECK-NOT: linalg.matmul
func.func @plain(%a: memref<64x128xf32>, %b: memref<128x32xf32>, %c: memref<64x32xf32>) {
  linalg.matmul ins(%a, %b : memref<64x128xf32>, memref<128x32xf32>) outs(%c : memref<64x32xf32>)
  return
}

// B transposed through the indexing maps.
// CHECK-LABEL: func.func @transposed_b
// CHECK-DAG: %[[NT:.*]] = arith.constant 111 : i32
// CHECK-DAG: %[[T:.*]] = arith.constant 112 : i32
// CHECK: call @cblas_sgemm(%{{.*}}, %[[NT]], %[[T]],
func.func @transposed_b(%a: memref<8x4xf32>, %b: memref<6x4xf32>, %c: memref<8x6xf32>) {
  linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%a, %b : memref<8x4xf32>, memref<6x4xf32>) outs(%c : memref<8x6xf32>)
  return
}

// A zero fill right before the matmul becomes beta = 0 (and goes away).
// CHECK-LABEL: func.func @zero_init
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-DAG: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NOT: linalg.fill
// CHECK: call @cblas_sgemm(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[ONE]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[ZERO]], %{{.*}}, %{{.*}}) :
func.func @zero_init(%a: memref<8x4xf32>, %b: memref<4x6xf32>, %c: memref<8x6xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<8x6xf32>)
  linalg.matmul ins(%a, %b : memref<8x4xf32>, memref<4x6xf32>) outs(%c : memref<8x6xf32>)
  return
}

// Row-contiguous strided operands (a slice of rows) are taken with their
// offset and row stride; other element types stay for the loop lowering.
// CHECK-LABEL: func.func @strided_and_f64
// CHECK-SAME: (%[[A:.*]]: memref<8x4xf32, strided<[8, 1], offset: ?>>
// CHECK: %{{.*}}, %[[OFF:.*]], %{{.*}}:2, %[[STRIDES:.*]]:2 = memref.extract_strided_metadata %[[A]]
// CHECK: %[[LDA:.*]] = arith.index_cast %[[STRIDES]]#0 : index to i32
// CHECK: arith.muli %[[OFF]]
// CHECK: call @cblas_sgemm(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[LDA]],
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : memref<8x4xf64>, memref<4x6xf64>)
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : memref<8x4xf32, strided<[1, 8]>>
func.func @strided_and_f64(%a: memref<8x4xf32, strided<[8, 1], offset: ?>>, %b: memref<4x6xf32>, %c: memref<8x6xf32>,
                           %d: memref<8x4xf64>, %e: memref<4x6xf64>, %f: memref<8x6xf64>,
                           %g: memref<8x4xf32, strided<[1, 8]>>) {
  linalg.matmul ins(%a, %b : memref<8x4xf32, strided<[8, 1], offset: ?>>, memref<4x6xf32>) outs(%c : memref<8x6xf32>)
  linalg.matmul ins(%d, %e : memref<8x4xf64>, memref<4x6xf64>) outs(%f : memref<8x6xf64>)
  linalg.matmul ins(%g, %b : memref<8x4xf32, strided<[1, 8]>>, memref<4x6xf32>) outs(%c : memref<8x6xf32>)
  return
}

// A batched matmul is a loop of GEMMs over the batch, each matrix addressed
// through the batch stride of its layout; a zero fill before it is beta = 0.
// CHECK-LABEL: func.func @batched
// CHECK-SAME: (%[[A:.*]]: memref<6x8x4xf32>, %[[B:.*]]: memref<6x4x5xf32>, %[[C:.*]]: memref<6x8x5xf32>)
// CHECK-NOT: linalg.fill
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-DAG: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-DAG: %[[FOUR:.*]] = arith.constant 4 : index
// CHECK-DAG: %[[BASEA:.*]], %[[OFFA:.*]], %{{.*}}:3, %[[STRIDESA:.*]]:3 = memref.extract_strided_metadata %[[A]]
// CHECK-DAG: %[[LDA:.*]] = arith.index_cast %[[STRIDESA]]#1 : index to i32
// CHECK: scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:   %[[SKIP:.*]] = arith.muli %[[I]], %[[STRIDESA]]#0 : index
// CHECK:   %[[ELEM:.*]] = arith.addi %[[OFFA]], %[[SKIP]] : index
// CHECK:   arith.muli %[[ELEM]], %[[FOUR]] : index
// CHECK:   call @cblas_sgemm(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[ONE]], %{{.*}}, %[[LDA]], %{{.*}}, %{{.*}}, %[[ZERO]], %{{.*}}, %{{.*}}) :
// CHECK: }
// CHECK-NOT: linalg.batch_matmul
// With a strided-batched function (the GPU lowering's cuBLAS call): one
// call, each matrix's batch stride after its leading dimension, the batch
// count last.
// STRIDED-LABEL: func.func @batched
// STRIDED-SAME: (%[[A:.*]]: memref<6x8x4xf32>, %[[B:.*]]: memref<6x4x5xf32>, %[[C:.*]]: memref<6x8x5xf32>)
// STRIDED-NOT: scf.for
// STRIDED-DAG: %[[BASEA:.*]], %[[OFFA:.*]], %{{.*}}:3, %[[STRIDESA:.*]]:3 = memref.extract_strided_metadata %[[A]]
// STRIDED-DAG: %[[SA:.*]] = arith.index_cast %[[STRIDESA]]#0 : index to i64
// STRIDED-DAG: %[[LDA:.*]] = arith.index_cast %[[STRIDESA]]#1 : index to i32
// STRIDED: call @spmdGpuSgemmStridedBatched(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[LDA]], %[[SA]], %{{.*}}) : (i32, i32, i32, i32, i32, i32, f32, i64, i32, i64, i64, i32, i64, f32, i64, i32, i64, i32) -> ()
// STRIDED-NOT: call @spmdGpuSgemm(
// STRIDED-NOT: linalg.batch_matmul
// STRIDED-LABEL: func.func @batched_transposed
func.func @batched(%a: memref<6x8x4xf32>, %b: memref<6x4x5xf32>, %c: memref<6x8x5xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<6x8x5xf32>)
  linalg.batch_matmul ins(%a, %b : memref<6x8x4xf32>, memref<6x4x5xf32>) outs(%c : memref<6x8x5xf32>)
  return
}

// Batched with B transposed through the maps (q @ k^T); a broadcast batch
// operand and both operands transposed stay for the loop lowering.
// CHECK-LABEL: func.func @batched_transposed
// CHECK-DAG: %[[NT:.*]] = arith.constant 111 : i32
// CHECK-DAG: %[[T:.*]] = arith.constant 112 : i32
// CHECK: scf.for
// CHECK: call @cblas_sgemm(%{{.*}}, %[[NT]], %[[T]],
// CHECK: linalg.batch_matmul
// CHECK: linalg.batch_matmul
func.func @batched_transposed(%a: memref<6x8x4xf32>, %b: memref<6x5x4xf32>, %c: memref<6x8x5xf32>,
                              %w: memref<4x5xf32>, %at: memref<6x4x8xf32>) {
  linalg.batch_matmul indexing_maps = [affine_map<(b, m, n, k) -> (b, m, k)>, affine_map<(b, m, n, k) -> (b, n, k)>, affine_map<(b, m, n, k) -> (b, m, n)>]
      ins(%a, %b : memref<6x8x4xf32>, memref<6x5x4xf32>) outs(%c : memref<6x8x5xf32>)
  linalg.batch_matmul indexing_maps = [affine_map<(b, m, n, k) -> (b, m, k)>, affine_map<(b, m, n, k) -> (k, n)>, affine_map<(b, m, n, k) -> (b, m, n)>]
      ins(%a, %w : memref<6x8x4xf32>, memref<4x5xf32>) outs(%c : memref<6x8x5xf32>)
  linalg.batch_matmul indexing_maps = [affine_map<(b, m, n, k) -> (b, k, m)>, affine_map<(b, m, n, k) -> (b, n, k)>, affine_map<(b, m, n, k) -> (b, m, n)>]
      ins(%at, %b : memref<6x4x8xf32>, memref<6x5x4xf32>) outs(%c : memref<6x8x5xf32>)
  return
}

// Autocast's matmuls (bf16 operands into an f32 result) go to the bf16
// functions when they are named (the GPU lowering: cublasGemmEx), with the
// operands' offsets counted in 2-byte elements; without them they stay
// linalg (the default CHECK run).
// RUN: spmd-opt %s --spmd-convert-linalg-to-blas="function=spmdGpuSgemm batched-function=spmdGpuSgemmStridedBatched bf16-function=spmdGpuGemmBf16 bf16-batched-function=spmdGpuGemmBf16StridedBatched" --cse | FileCheck %s --check-prefix=BF16
// CHECK-LABEL: func.func @bf16
// CHECK: linalg.matmul
// CHECK: linalg.batch_matmul
// BF16-LABEL: func.func @bf16
// BF16: %{{.*}}, %[[OFF:.*]], %{{.*}}:2, %{{.*}}:2 = memref.extract_strided_metadata %{{.*}} : memref<8x4xbf16, strided<[4, 1], offset: ?>>
// BF16: %[[TWO:.*]] = arith.constant 2 : index
// BF16: arith.muli %[[OFF]], %[[TWO]] : index
// BF16: call @spmdGpuGemmBf16(
// BF16: call @spmdGpuGemmBf16StridedBatched(
// BF16-NOT: linalg.matmul
// BF16-NOT: linalg.batch_matmul
func.func @bf16(%a: memref<8x4xbf16, strided<[4, 1], offset: ?>>, %b: memref<4x6xbf16>,
                %c: memref<8x6xf32>, %x: memref<3x8x4xbf16>,
                %y: memref<3x4x5xbf16>, %z: memref<3x8x5xf32>) {
  linalg.matmul ins(%a, %b : memref<8x4xbf16, strided<[4, 1], offset: ?>>, memref<4x6xbf16>)
                outs(%c : memref<8x6xf32>)
  linalg.batch_matmul ins(%x, %y : memref<3x8x4xbf16>, memref<3x4x5xbf16>)
                      outs(%z : memref<3x8x5xf32>)
  return
}
