//===- StaticExtent.h - the elements a static view touches ------*- C++ -*-===//
//
// What the CPU and GPU lowerings share about a view of a buffer with a
// static layout: the range of its root's elements it may touch, to tell
// slices of one buffer (a bucket's pieces) apart.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_CODEGEN_STATICEXTENT_H
#define SPMD_CODEGEN_STATICEXTENT_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Value.h"

#include <optional>
#include <utility>

namespace mlir::spmd {

/// The elements of its root that a view with a static layout may touch,
/// [first, last] counted from the root's start (views share the root's
/// aligned pointer, from which their layouts' offsets count); none for a
/// dynamic layout (it may touch any).
inline std::optional<std::pair<int64_t, int64_t>> staticExtent(Value value) {
  auto type = dyn_cast<MemRefType>(value.getType());
  if (!type || !type.hasStaticShape())
    return std::nullopt;
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(type.getStridesAndOffset(strides, offset)) ||
      ShapedType::isDynamic(offset) ||
      llvm::any_of(strides, ShapedType::isDynamic) || offset < 0)
    return std::nullopt;
  int64_t last = offset;
  for (auto [size, stride] : llvm::zip(type.getShape(), strides)) {
    if (size == 0)
      return std::nullopt;
    last += (size - 1) * stride;
  }
  return std::make_pair(offset, last);
}

} // namespace mlir::spmd

#endif // SPMD_CODEGEN_STATICEXTENT_H
