// RUN: spmd-opt %s --spmd-auto-shard --split-input-file -verify-diagnostics
// RUN: not spmd-opt %s --spmd-auto-shard="axis=1" --split-input-file 2>&1 | FileCheck %s --check-prefix=AXIS
// RUN: not spmd-opt %s --spmd-auto-shard="mesh=dp" --split-input-file 2>&1 | FileCheck %s --check-prefix=NAMED
// RUN: not spmd-opt %s --spmd-auto-shard="calibration=%t.none.json" --split-input-file 2>&1 | FileCheck %s --check-prefix=NOFILE
// RUN: echo '{"gemm_gflops": 50, "memory_gbps": 10}' > %t.short.json
// RUN: not spmd-opt %s --spmd-auto-shard="calibration=%t.short.json" --split-input-file 2>&1 | FileCheck %s --check-prefix=SHORT
// RUN: echo '{"gemm_gflops": 50, "memory_gbps": 0, "all_reduce_latency_us": 1, "all_reduce_gbps": 1, "all_gather_latency_us": 1, "all_gather_gbps": 1, "reduce_scatter_latency_us": 1, "reduce_scatter_gbps": 1}' > %t.zero.json
// RUN: not spmd-opt %s --spmd-auto-shard="calibration=%t.zero.json" --split-input-file 2>&1 | FileCheck %s --check-prefix=ZERO
// RUN: echo '[1, 2]' > %t.list.json
// RUN: not spmd-opt %s --spmd-auto-shard="calibration=%t.list.json" --split-input-file 2>&1 | FileCheck %s --check-prefix=LIST
// RUN: not spmd-opt %s --spmd-auto-shard="memory-limit=-1" --split-input-file 2>&1 | FileCheck %s --check-prefix=NEGATIVE

// NOFILE: error: spmd-auto-shard: calibration '{{.*}}none.json': No such file or directory
// SHORT: error: spmd-auto-shard: calibration '{{.*}}short.json': 'all_reduce_latency_us' is missing or not a number
// ZERO: error: spmd-auto-shard: calibration '{{.*}}zero.json': 'memory_gbps' must be a finite number above 0
// LIST: error: spmd-auto-shard: calibration '{{.*}}list.json': not a JSON object
// NEGATIVE: error: spmd-auto-shard: memory-limit and reserve are bytes, not below 0

// A module without a mesh has nothing to shard over.
// expected-error@+1 {{spmd-auto-shard: the module has 0 meshes; name the one to shard over (mesh=)}}
module {
  spmd.state @"w" : tensor<8xf32> role = param
}

// -----

// Two meshes: which one is not guessed.
module {
  spmd.mesh @dp(shape = 2)
  // expected-error@+1 {{spmd-auto-shard: the module has 2 meshes; name the one to shard over (mesh=)}}
  spmd.mesh @tp(shape = 2)
}

// -----

// One mesh of one axis: fine unless another axis or mesh is named.
// AXIS: :[[# @LINE + 3]]:3: error: spmd-auto-shard: axis 1 of a mesh of 1 axes
// NAMED: :[[# @LINE + 2]]:3: error: spmd-auto-shard: no mesh @dp; the module's: @world
module {
  spmd.mesh @world(shape = 2)
}
