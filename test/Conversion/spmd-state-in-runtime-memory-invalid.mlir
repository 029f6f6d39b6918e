// RUN: spmd-opt %s --spmd-state-in-runtime-memory -split-input-file -verify-diagnostics -allow-unregistered-dialect
// A state the pass cannot move into the runtime's memory: one used other
// than by memref.get_global of the whole buffer, one of a strided layout.

memref.global "public" @"fc.w" : memref<2x3xf32> = dense<0.0> {alignment = 128 : i64, spmd.state_dtype = 0 : i32}

func.func @address_taken() {
  // expected-error @+1 {{spmd-state-in-runtime-memory: state @fc.w is used other than by memref.get_global}}
  "test.use_symbol"() {sym = @"fc.w"} : () -> ()
  return
}

// -----

// expected-error @+1 {{spmd-state-in-runtime-memory: state @v has a non-identity layout or dynamic shape}}
memref.global "public" @v : memref<4xf32, strided<[2]>> = dense<0.0> {alignment = 128 : i64, spmd.state_dtype = 0 : i32}
