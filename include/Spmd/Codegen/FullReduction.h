//===- FullReduction.h - full reductions with a simple combiner -*- C++ -*-===//
//
// What the CPU and GPU lowerings share about a `linalg.reduce` of a whole
// buffer into a 0-d accumulator whose combiner is one float add, mul, max
// or min: recognizing it, the combiner's identity, and applying the
// combiner to new operands. Both lowerings split such reductions into
// partial results (blocks on the CPU, strided parallel stages on the GPU)
// instead of one long sequential loop.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_CODEGEN_FULLREDUCTION_H
#define SPMD_CODEGEN_FULLREDUCTION_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"

#include <optional>

namespace mlir::spmd {

/// A full reduction `op` of a static, identity-layout buffer to a 0-d
/// buffer of the same element type with a one-op float add/mul/max/min
/// combiner.
struct FullReduction {
  linalg::ReduceOp op;
  Value input;         // the buffer reduced
  Value init;          // the 0-d accumulator
  int64_t numElements; // of the input
  Operation *combiner; // the op in the body
  TypedAttr identity;  // of the combiner

  /// The combiner applied to (element, accumulator), built at `b`.
  Value combine(OpBuilder &b, Value element, Value accumulator) const;

  /// The input as a 1-d buffer (a collapse_shape unless it is one), at `b`.
  Value flatInput(OpBuilder &b) const;
};

/// The identity of the combiner `op` (arith add/mul/max/min on floats of
/// `type`: 0, 1, -inf, +inf), or null for another op.
TypedAttr combinerIdentity(Operation *op, Type type);

/// `op` as a FullReduction, if it is one.
std::optional<FullReduction> matchFullReduction(linalg::ReduceOp op);

} // namespace mlir::spmd

#endif // SPMD_CODEGEN_FULLREDUCTION_H
