// RUN: spmd-opt %s --pass-pipeline='builtin.module(func.func(spmd-decompose-attention))' | FileCheck %s

// The forward as linalg: scores (a contraction over the head size), scale +
// broadcast mask, row max, exp(x - max) (0 for a row with nothing to attend
// to), row sum, lse = max + log(sum), P V, / sum. No spmd op is left. Its
// numerics are checked on the GPU path against a double-precision reference
// (test/Codegen/GPU/emulated-attention.test).
// CHECK-LABEL: func.func @forward
// CHECK-NOT: spmd.attention
// CHECK: linalg.generic {indexing_maps = [#[[$QE:.*]], #[[$KE:.*]], #[[$LS:.*]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
// CHECK-SAME: ins(%{{.*}}, %{{.*}} : tensor<2x4x8x16xf32>, tensor<2x4x6x16xf32>)
// CHECK: linalg.generic
// CHECK-SAME: ins(%{{.*}}, %{{.*}} : tensor<2x4x8x6xf32>, tensor<2x1x1x6xf32>)
// CHECK: arith.mulf %{{.*}}, %cst
// CHECK: arith.addf
// CHECK: arith.maximumf
// CHECK: math.exp
// CHECK: math.log
// CHECK: arith.divf
// CHECK-NOT: spmd.attention
// CHECK: return
func.func @forward(%q: tensor<2x4x8x16xf32>, %k: tensor<2x4x6x16xf32>, %v: tensor<2x4x6x4xf32>, %m: tensor<2x1x1x6xf32>) -> (tensor<2x4x8x4xf32>, tensor<2x4x8xf32>) {
  %o, %l = spmd.attention %q, %k, %v mask %m {scale = 0.25 : f64} : tensor<2x4x8x16xf32>, tensor<2x4x6x16xf32>, tensor<2x4x6x4xf32>, tensor<2x1x1x6xf32> -> tensor<2x4x8x4xf32>, tensor<2x4x8xf32>
  return %o, %l : tensor<2x4x8x4xf32>, tensor<2x4x8xf32>
}

// Causal masking reads the row and column (linalg.index); the backward
// recomputes the probabilities from lse and yields dq, dk, dv.
// CHECK-LABEL: func.func @backward
// CHECK: %[[ROW:.*]] = linalg.index 2 : index
// CHECK: %[[COL:.*]] = linalg.index 3 : index
// CHECK: arith.cmpi ugt, %[[COL]], %[[ROW]] : index
// CHECK: math.exp
// CHECK-NOT: spmd.attention_grad
// CHECK: return %{{.*}}, %{{.*}}, %{{.*}} : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x4xf32>
func.func @backward(%g: tensor<2x4x8x4xf32>, %q: tensor<2x4x8x16xf32>, %k: tensor<2x4x8x16xf32>, %v: tensor<2x4x8x4xf32>, %o: tensor<2x4x8x4xf32>, %l: tensor<2x4x8xf32>) -> (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x4xf32>) {
  %dq, %dk, %dv = spmd.attention_grad %g, %q, %k, %v, %o, %l {causal, scale = 0.25 : f64} : tensor<2x4x8x4xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x4xf32>, tensor<2x4x8x4xf32>, tensor<2x4x8xf32>
  return %dq, %dk, %dv : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>, tensor<2x4x8x4xf32>
}
