//===- TensorBuffers.h - which tensors will own a buffer -------*- C++ -*-===//
//
// What the passes that lower the step's memory on tensors share
// (spmd-schedule-for-memory, spmd-fuse-elementwise): which tensor ops will be
// views of their operand's buffer, the tensor a view's buffer belongs to, and
// whether that buffer is one the step allocates itself (so its last use frees
// it).
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_CODEGEN_TENSORBUFFERS_H
#define SPMD_CODEGEN_TENSORBUFFERS_H

#include "mlir/IR/Value.h"

namespace mlir::spmd {

/// Bytes of a statically shaped tensor of ints or floats, 0 otherwise.
int64_t staticTensorBytes(Type type);

/// Whether `op` is a tensor op whose result shares its operand's buffer
/// after bufferization (slices, reshapes, casts).
bool isTensorView(Operation *op);

/// The value whose buffer `value` is a view of (itself if none).
Value viewedTensor(Value value);

/// Whether `root` will be a buffer the step allocates itself and reads only
/// as a tensor, so that its last use as a tensor is its last read: not an
/// argument, a constant, an init placeholder (`tensor.empty`), state (a
/// `bufferization.to_tensor` of anything but a `memref.alloc` used before
/// it only), nor a tensor any view of which is taken as a buffer
/// (`bufferization.to_buffer`: a collective's input, read until its wait).
bool ownsBuffer(Value root);

} // namespace mlir::spmd

#endif // SPMD_CODEGEN_TENSORBUFFERS_H
