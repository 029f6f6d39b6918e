//===- MatmulMaps.h - indexing maps of a (batch) matmul ---------*- C++ -*-===//
//
// The indexing maps of a `linalg.matmul` (loops m, n, k) or
// `linalg.batch_matmul` (b, m, n, k) that reads A or B transposed: what
// spmd-fold-transpose-into-matmul writes and spmd-convert-linalg-to-blas
// recognizes.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_DIALECT_SPMD_TRANSFORMS_MATMULMAPS_H
#define SPMD_DIALECT_SPMD_TRANSFORMS_MATMULMAPS_H

#include "mlir/IR/AffineMap.h"
#include "llvm/ADT/SmallVector.h"

namespace mlir::spmd {

/// A: (m, k), or (k, m) with `transA`; B: (k, n), or (n, k) with `transB`;
/// C: (m, n); each with the batch dimension first when `batched`.
inline SmallVector<AffineMap, 3> matmulMaps(MLIRContext *ctx, bool batched,
                                            bool transA, bool transB) {
  unsigned dims = batched ? 4 : 3;
  SmallVector<AffineExpr> d;
  for (unsigned i = 0; i < dims; ++i)
    d.push_back(getAffineDimExpr(i, ctx));
  AffineExpr m = d[dims - 3], n = d[dims - 2], k = d[dims - 1];
  auto map = [&](AffineExpr r, AffineExpr c) {
    SmallVector<AffineExpr> results;
    if (batched)
      results.push_back(d[0]);
    results.append({r, c});
    return AffineMap::get(dims, 0, results, ctx);
  };
  return {transA ? map(k, m) : map(m, k), transB ? map(n, k) : map(k, n),
          map(m, n)};
}

} // namespace mlir::spmd

#endif // SPMD_DIALECT_SPMD_TRANSFORMS_MATMULMAPS_H
