// RUN: spmd-opt %s --spmd-auto-shard="report=true" -verify-diagnostics | FileCheck %s
// RUN: spmd-opt %s --spmd-auto-shard="memory-limit=150000" | FileCheck %s --check-prefix=LIMIT
// RUN: not spmd-opt %s --spmd-auto-shard="memory-limit=100000" 2>&1 | FileCheck %s --check-prefix=NOFIT
// A figure of slow memory makes the update, which sharding divides by the
// ranks, outweigh the extra gather: every parameter is sharded, unlimited.
// RUN: echo '{"gemm_gflops": 50, "memory_gbps": 0.01, "all_reduce_latency_us": 100, "all_reduce_gbps": 2, "all_gather_latency_us": 100, "all_gather_gbps": 2, "reduce_scatter_latency_us": 100, "reduce_scatter_gbps": 2}' > %t.slow.json
// RUN: spmd-opt %s --spmd-auto-shard="calibration=%t.slow.json" | FileCheck %s --check-prefix=SLOW

// A linear layer's weight (64 KiB) and bias trained by AdamW, and an empty
// parameter by SGD, on 4 ranks.
// Unlimited, the default figures (every collective 100 us + 2 GB/s) favour
// one all-reduce over a gather and a reduce-scatter: all replicated
// (264,704 B per rank: each parameter, its gradient and its companions).
// At 150,000 B the weight is sharded (65,536 B, its gathered copy 65,536
// B); the bias, whose chunk saves 1,408 B for 99 us more, is not. 100,000 B
// is below every plan (132,224 B).

module {
  // expected-remark@+1 {{spmd-auto-shard: 0 of 3 parameters sharded along @world axis 0 (0 B of 66048 B); modeled communication and update 0.386 ms (all replicated 0.386 ms); state and gathered copies 264704 B per rank (all replicated 264704 B)}}
  spmd.mesh @world(shape = 4)
  // expected-remark@+1 {{replicated: replicated 0.185 ms, sharded 0.254 ms; memory 262144 -> 65536 bytes per rank (+ 65536 gathered)}}
  spmd.state @"fc.weight" : tensor<128x128xf32> role = param
  spmd.state @"fc.weight.exp_avg" : tensor<128x128xf32> role = optimizer_state
  spmd.state @"fc.weight.exp_avg_sq" : tensor<128x128xf32> role = optimizer_state
  spmd.state @"fc.weight.step" : tensor<f32> role = optimizer_state
  // expected-remark@+1 {{replicated: replicated 0.101 ms, sharded 0.200 ms; memory 2560 -> 640 bytes per rank (+ 512 gathered)}}
  spmd.state @"fc.bias" : tensor<128xf32> role = param
  spmd.state @"fc.bias.exp_avg" : tensor<128xf32> role = optimizer_state
  spmd.state @"fc.bias.exp_avg_sq" : tensor<128xf32> role = optimizer_state
  spmd.state @"fc.bias.step" : tensor<f32> role = optimizer_state
  spmd.state @"fc.bias.grad" : tensor<128xf32> role = gradient
  // An empty parameter saves nothing sharded: replicated.
  // expected-remark@+1 {{replicated: replicated 0.100 ms, sharded 0.200 ms; memory 0 -> 0 bytes per rank (+ 0 gathered)}}
  spmd.state @"empty.weight" : tensor<0x4xf32> role = param
  func.func @train_step(%x: tensor<16x128xf32> {spmd.spec = #spmd.spec<@world, [shard<0>]>}, %dy: tensor<16x128xf32> {spmd.spec = #spmd.spec<@world, [shard<0>]>}) -> tensor<16x128xf32> {
    %w = spmd.load @"fc.weight" : tensor<128x128xf32>
    %b = spmd.load @"fc.bias" : tensor<128xf32>
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<16x128xf32>
    %z = linalg.fill ins(%zero : f32) outs(%e : tensor<16x128xf32>) -> tensor<16x128xf32>
    %y = linalg.matmul ins(%x, %w : tensor<16x128xf32>, tensor<128x128xf32>) outs(%z : tensor<16x128xf32>) -> tensor<16x128xf32>
    %ew = tensor.empty() : tensor<128x128xf32>
    %zw = linalg.fill ins(%zero : f32) outs(%ew : tensor<128x128xf32>) -> tensor<128x128xf32>
    %dw = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (k, m)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>] ins(%x, %dy : tensor<16x128xf32>, tensor<16x128xf32>) outs(%zw : tensor<128x128xf32>) -> tensor<128x128xf32>
    %g = spmd.load @"fc.bias.grad" : tensor<128xf32>
    %m0 = spmd.load @"fc.weight.exp_avg" : tensor<128x128xf32>
    %v0 = spmd.load @"fc.weight.exp_avg_sq" : tensor<128x128xf32>
    %t0 = spmd.load @"fc.weight.step" : tensor<f32>
    %m1 = spmd.load @"fc.bias.exp_avg" : tensor<128xf32>
    %v1 = spmd.load @"fc.bias.exp_avg_sq" : tensor<128xf32>
    %t1 = spmd.load @"fc.bias.step" : tensor<f32>
    %r:8 = spmd.adam params [%w, %b] grads [%dw, %g] exp_avgs [%m0, %m1] exp_avg_sqs [%v0, %v1] steps [%t0, %t1] {lr = 0.01 : f64} : tensor<128x128xf32>, tensor<128xf32>
    spmd.store %r#0 to @"fc.weight" : tensor<128x128xf32>
    spmd.store %r#1 to @"fc.bias" : tensor<128xf32>
    %pe = spmd.load @"empty.weight" : tensor<0x4xf32>
    %ge = arith.constant dense<> : tensor<0x4xf32>
    %ne = spmd.sgd params [%pe] grads [%ge] {lr = 0.1 : f64} : tensor<0x4xf32>
    spmd.store %ne to @"empty.weight" : tensor<0x4xf32>
    return %y : tensor<16x128xf32>
  }
}
// CHECK: spmd.state @fc.weight : tensor<128x128xf32> role = param{{$}}
// CHECK: spmd.state @fc.bias : tensor<128xf32> role = param{{$}}

// LIMIT: spmd.state @fc.weight : tensor<128x128xf32> role = param spec = <@world, [shard<0>]>
// LIMIT: spmd.state @fc.weight.exp_avg : tensor<128x128xf32> role = optimizer_state spec = <@world, [shard<0>]>
// LIMIT: spmd.state @fc.weight.exp_avg_sq : tensor<128x128xf32> role = optimizer_state spec = <@world, [shard<0>]>
// LIMIT: spmd.state @fc.weight.step : tensor<f32> role = optimizer_state{{$}}
// LIMIT: spmd.state @fc.bias : tensor<128xf32> role = param{{$}}
// LIMIT: spmd.state @fc.bias.grad : tensor<128xf32> role = gradient{{$}}
// LIMIT: spmd.state @empty.weight : tensor<0x4xf32> role = param{{$}}
// LIMIT: %[[W:.*]] = spmd.load @fc.weight
// LIMIT-NEXT: %[[WHOLE:.*]] = spmd.redistribute %[[W]] to <@world, [replicate]> : tensor<128x128xf32>
// LIMIT: linalg.matmul ins(%{{.*}}, %[[WHOLE]] :
// LIMIT: spmd.adam params [%[[W]], %{{.*}}] grads

// NOFIT: :[[# @LINE - 57]]:3: error: spmd-auto-shard: the step's state does not fit the memory limit of 100000 bytes per rank: the plan needs 132224 (132224 B, reserve 0 included) with every parameter that saves memory sharded; more ranks on the axis or a smaller model would fit

// SLOW: spmd.state @fc.weight : tensor<128x128xf32> role = param spec = <@world, [shard<0>]>
// SLOW: spmd.state @fc.bias : tensor<128xf32> role = param spec = <@world, [shard<0>]>
// SLOW: spmd.state @fc.bias.grad : tensor<128xf32> role = gradient spec = <@world, [shard<0>]>
// SLOW: spmd.state @empty.weight : tensor<0x4xf32> role = param{{$}}
// The bias's only use is the update: no gather.
// SLOW-NOT: spmd.redistribute %{{.*}} : tensor<128xf32>
