//===- BufferRoots.h - which buffers may alias, on the GPU path -*- C++ -*-===//
//
// What spmd-gpu-fuse-kernels and spmd-gpu-row-kernels assume about aliasing
// of the buffers of a bufferized GPU program: views are their source's
// buffer; distinct allocations are distinct buffers, as are runtime buffers
// (state, constants) with different `spmd.gpu_buffer` names, an allocation
// and a function argument, and a runtime buffer and a function argument
// (the bridge copies an input that lies in the program's state before the
// call); anything else may alias.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_LIB_CONVERSION_GPU_BUFFERROOTS_H
#define SPMD_LIB_CONVERSION_GPU_BUFFERROOTS_H

#include "Spmd/Codegen/GPU/Passes.h"
#include "Spmd/Codegen/StaticExtent.h"
#include "Spmd/Dialect/Spmd/IR/SpmdDialect.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace mlir::spmd {

/// The buffer a memref value is a view of, as far as aliasing goes.
struct Root {
  enum Kind { Fresh, Named, Unknown };
  Kind kind;
  /// The allocation, the name attribute, or the value itself.
  const void *key;
  /// An argument of the function (never a fresh allocation).
  bool argument = false;
};

inline Root rootOf(Value value) {
  while (Operation *def = value.getDefiningOp()) {
    // Views, and the two ops that make one without being view-like ops: a
    // cast (to a dynamic layout) and a transpose of the same elements.
    if (auto cast = dyn_cast<memref::CastOp>(def)) {
      value = cast.getSource();
      continue;
    }
    if (auto transpose = dyn_cast<memref::TransposeOp>(def)) {
      value = transpose.getIn();
      continue;
    }
    auto view = dyn_cast<ViewLikeOpInterface>(def);
    if (!view || view.getViewSource() == value)
      break;
    value = view.getViewSource();
  }
  Operation *def = value.getDefiningOp();
  if (def && isa<gpu::AllocOp, memref::AllocOp, memref::AllocaOp>(def))
    return {Root::Fresh, def};
  if (def)
    if (auto name = def->getAttrOfType<StringAttr>(
            spmd::SpmdDialect::getGpuBufferAttrName()))
      return {Root::Named, name.getAsOpaquePointer()};
  bool argument = false;
  if (auto arg = dyn_cast<BlockArgument>(value))
    argument = isa<FunctionOpInterface>(arg.getOwner()->getParentOp());
  return {Root::Unknown, value.getAsOpaquePointer(), argument};
}

inline bool mayAlias(const Root &a, const Root &b) {
  if (a.kind == Root::Fresh || b.kind == Root::Fresh) {
    if (a.kind == b.kind)
      return a.key == b.key;
    const Root &other = a.kind == Root::Fresh ? b : a;
    return !(other.kind == Root::Named || other.argument);
  }
  if (a.kind == Root::Named && b.kind == Root::Named)
    return a.key == b.key;
  // An input is never the program's buffer (python/spmd/_executable.py
  // copies one that lies in its state).
  if ((a.kind == Root::Named && b.argument) ||
      (b.kind == Root::Named && a.argument))
    return false;
  return true;
}

/// Whether two roots are one buffer for certain (then views of it can be
/// compared by their layouts' offsets).
inline bool sameRoot(const Root &a, const Root &b) {
  return a.kind == b.kind && a.key == b.key;
}

/// Whether `a` and `b` are static subviews of one identity-layout buffer
/// that are apart in some dimension (columns [0, 8) and [8, 16) of a
/// row-major matrix: their element ranges interleave, their coordinates do
/// not meet). An identity layout names each element by one coordinate
/// tuple, so apart in one dimension is apart.
inline bool disjointSubviews(Value a, Value b) {
  auto x = a.getDefiningOp<memref::SubViewOp>();
  auto y = b.getDefiningOp<memref::SubViewOp>();
  if (!x || !y || x.getSource() != y.getSource() ||
      !x.getSourceType().getLayout().isIdentity())
    return false;
  ArrayRef<int64_t> xo = x.getStaticOffsets(), xs = x.getStaticSizes(),
                    xt = x.getStaticStrides(), yo = y.getStaticOffsets(),
                    ys = y.getStaticSizes(), yt = y.getStaticStrides();
  for (unsigned d = 0; d < xo.size(); ++d) {
    int64_t values[] = {xo[d], xs[d], xt[d], yo[d], ys[d], yt[d]};
    if (llvm::any_of(values, ShapedType::isDynamic) || xs[d] == 0 ||
        ys[d] == 0 || xt[d] <= 0 || yt[d] <= 0)
      continue;
    // The coordinates each touches in dimension d: [first, last].
    int64_t xLast = xo[d] + (xs[d] - 1) * xt[d];
    int64_t yLast = yo[d] + (ys[d] - 1) * yt[d];
    if (xLast < yo[d] || yLast < xo[d])
      return true;
  }
  return false;
}

/// Whether two values of one root may touch a common element: not when
/// both have static layouts over disjoint ranges of it (slices of one
/// buffer, as a bucket's pieces), or are subviews apart in a dimension.
inline bool mayOverlap(Value a, Value b) {
  if (disjointSubviews(a, b))
    return false;
  auto x = staticExtent(a), y = staticExtent(b);
  if (!x || !y)
    return true;
  return !(x->second < y->first || y->second < x->first);
}

} // namespace mlir::spmd

#endif // SPMD_LIB_CONVERSION_GPU_BUFFERROOTS_H
