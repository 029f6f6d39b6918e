//===- SpmdDialect.h - spmd dialect, attributes and types -------*- C++ -*-===//

#ifndef SPMD_DIALECT_SPMD_IR_SPMDDIALECT_H
#define SPMD_DIALECT_SPMD_IR_SPMDDIALECT_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "Spmd/Dialect/Spmd/IR/SpmdDialect.h.inc"
#include "Spmd/Dialect/Spmd/IR/SpmdEnums.h.inc"

#include "Spmd/Dialect/Spmd/IR/AxisChoice.h"

#include "Spmd/Dialect/Spmd/IR/SpmdAttrInterfaces.h.inc"

#define GET_ATTRDEF_CLASSES
#include "Spmd/Dialect/Spmd/IR/SpmdAttrs.h.inc"

#define GET_TYPEDEF_CLASSES
#include "Spmd/Dialect/Spmd/IR/SpmdTypes.h.inc"

namespace mlir::spmd {

/// The side-effect resource of state symbols: `spmd.load` reads it and
/// `spmd.store` writes it, so loads and stores keep their order.
struct StateResource : public SideEffects::Resource::Base<StateResource> {
  StringRef getName() final { return "spmd.state"; }
};

} // namespace mlir::spmd

#endif // SPMD_DIALECT_SPMD_IR_SPMDDIALECT_H
