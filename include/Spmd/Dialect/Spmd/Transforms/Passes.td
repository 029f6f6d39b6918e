//===- Passes.td - spmd transformation passes -------------*- tablegen -*-===//

#ifndef SPMD_DIALECT_SPMD_TRANSFORMS_PASSES_TD
#define SPMD_DIALECT_SPMD_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def SpmdDecomposeOptimizersPass
    : Pass<"spmd-decompose-optimizers", "::mlir::func::FuncOp"> {
  let summary = "Rewrites spmd.sgd / spmd.adam into foreach ops, as torch does";
  let description = [{
    Replaces each optimizer op with the sequence of foreach ops torch's
    foreach implementation runs (`torch.optim.sgd._multi_tensor_sgd`,
    `torch.optim.adam._multi_tensor_adam` with `capturable=False`), in the
    same order and with the same scalars, so float32 results match torch to
    rounding. Scalars torch computes in Python floats (`1 - dampening`,
    `-lr`, Adam's bias corrections from the step counter) are computed in
    f64 here and converted to the element type by the foreach ops, as the
    ATen kernels convert Python scalars.

    SGD's first step (torch: "momentum buffer is None", the buffer becomes a
    copy of the gradient) is expressed with coefficients chosen from the step
    counter: `buf = m * buf + d * g` with `(m, d) = (0, 1)` on step 0 and
    `(momentum, 1 - dampening)` after. This equals torch exactly as long as
    the buffer holds finite values before the first step (the runtime and
    the bridge zero-initialize optimizer state).

    Before:
    ```mlir
    %p, %t = spmd.adam params [%w] grads [%g] exp_avgs [%m] exp_avg_sqs [%v]
        steps [%s] {lr = 1.0e-03 : f64} : tensor<16xf32>
    ```
    After (abridged):
    ```mlir
    %s1 = spmd.foreach_add_scalar [%s] scalar [%one] : tensor<f32>, f64
    %m1 = spmd.foreach_lerp [%m], [%g] weight [%c0_1] : tensor<16xf32>, f64
    %v0 = spmd.foreach_mul_scalar [%v] scalar [%c0_999] : tensor<16xf32>, f64
    %v1 = spmd.foreach_addcmul [%v0], [%g], [%g] value [%c0_001] : tensor<16xf32>, f64
    ... bias corrections from %s1 in f64 ...
    %d0 = spmd.foreach_sqrt [%v1] : tensor<16xf32>
    %d1 = spmd.foreach_div_scalar [%d0] scalar [%bc2_sqrt] : tensor<16xf32>, f64
    %d2 = spmd.foreach_add_scalar [%d1] scalar [%eps] : tensor<16xf32>, f64
    %p1 = spmd.foreach_addcdiv [%w], [%m1], [%d2] value [%step_size] : tensor<16xf32>, f64
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::tensor::TensorDialect"];
  let statistics = [
    Statistic<"numSGD", "num-sgd", "Number of spmd.sgd ops decomposed">,
    Statistic<"numAdam", "num-adam", "Number of spmd.adam ops decomposed">,
  ];
}

def SpmdDecomposeForeachPass
    : Pass<"spmd-decompose-foreach", "::mlir::func::FuncOp"> {
  let summary = "Rewrites foreach ops into fused per-tensor linalg.generic ops";
  let description = [{
    Turns the foreach ops of each block into `linalg.generic` ops on tensors,
    one per foreach result that is used outside the foreach ops (an "output
    tensor"). The generic's body holds the whole elementwise expression that
    produces the value, through chains of foreach ops, so an optimizer's
    update of one tensor is one loop (Adam's new parameter: one generic that
    reads the parameter, gradient and both moments). A foreach value used
    both by other foreach ops and elsewhere is materialized by its own
    generic and recomputed inside its consumers (elementwise math is cheaper
    than a round trip through memory).

    The scalar formulas, and their evaluation order, are torch's ATen CPU
    kernels' (e.g. `addcdiv` is `x + (s * y) / z`, `lerp` switches formula at
    `|s| = 0.5`); see the foreach op descriptions.

    Before:
    ```mlir
    %0 = spmd.foreach_mul_scalar [%v] scalar [%b2] : tensor<16xf32>, f64
    %1 = spmd.foreach_addcmul [%0], [%g], [%g] value [%c] : tensor<16xf32>, f64
    ```
    After:
    ```mlir
    %1 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
        ins(%v, %g : tensor<16xf32>, tensor<16xf32>) outs(%e : tensor<16xf32>) {
    ^bb0(%vi: f32, %gi: f32, %out: f32):
      %a = arith.mulf %vi, %b2f : f32
      %b = arith.mulf %cf, %gi : f32
      %c = arith.mulf %b, %gi : f32
      %d = arith.addf %a, %c : f32
      linalg.yield %d : f32
    } -> tensor<16xf32>
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::tensor::TensorDialect"];
  let statistics = [
    Statistic<"numGenerics", "num-generics",
              "Number of linalg.generic ops created">,
    Statistic<"numForeach", "num-foreach", "Number of foreach ops removed">,
  ];
}

#endif // SPMD_DIALECT_SPMD_TRANSFORMS_PASSES_TD
