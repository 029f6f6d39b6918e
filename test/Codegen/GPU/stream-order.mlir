// RUN: spmd-gpu-opt %s --spmd-gpu-stream-order --split-input-file --verify-diagnostics | FileCheck %s

// One token chain through allocations, launches, copies and frees; runtime
// calls that order themselves on the program stream (cuBLAS, collectives)
// need no wait; a host read of device data waits first; the end waits once.
// CHECK-LABEL: func.func @step
// CHECK-NEXT: call @spmdGpuProgramBegin() : () -> ()
// CHECK-NOT: gpu.
// CHECK: %[[T0:.*]] = gpu.wait async
// CHECK-NEXT: %[[BUF:.*]], %[[T1:.*]] = gpu.alloc async [%[[T0]]] () : memref<4xf32>
// CHECK-NEXT: %[[T2:.*]] = gpu.launch_func async [%[[T1]]] @kernels::@fill
// CHECK-NEXT: call @spmdGpuSgemm
// CHECK-NEXT: %[[H:.*]] = call @spmdAllReduceStart
// CHECK-NEXT: call @spmdWait(%[[H]])
// CHECK-NEXT: %[[HOST:.*]] = memref.alloca() : memref<4xf32>
// CHECK-NEXT: %[[T3:.*]] = gpu.memcpy async [%[[T2]]] %[[HOST]], %[[BUF]]
// CHECK-NEXT: gpu.wait [%[[T3]]]
// CHECK-NEXT: memref.load %[[HOST]]
// CHECK-NEXT: %[[T4:.*]] = gpu.wait async
// CHECK-NEXT: %[[T5:.*]] = gpu.dealloc async [%[[T4]]] %[[BUF]]
// CHECK-NEXT: gpu.wait [%[[T5]]]
// CHECK-NEXT: call @spmdGpuProgramEnd() : () -> ()
// CHECK-NEXT: return
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @fill(%out: memref<4xf32>) kernel {
      %c0 = arith.constant 0 : index
      %one = arith.constant 1.0 : f32
      memref.store %one, %out[%c0] : memref<4xf32>
      gpu.return
    }
  }
  func.func private @spmdGpuSgemm(i32, i32, i32, i32, i32, i32, f32, i64, i32, i64, i32, f32, i64, i32)
  func.func private @spmdAllReduceStart(i64, i64, i64, i32, i32, i64, i64) -> i64
  func.func private @spmdWait(i64)
  func.func @step(%i: i32, %f: f32, %a: i64) -> f32 {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %buf = gpu.alloc () : memref<4xf32>
    gpu.launch_func @kernels::@fill blocks in (%c1, %c1, %c1)
        threads in (%c1, %c1, %c1) args(%buf : memref<4xf32>)
    call @spmdGpuSgemm(%i, %i, %i, %i, %i, %i, %f, %a, %i, %a, %i, %f, %a, %i)
        : (i32, i32, i32, i32, i32, i32, f32, i64, i32, i64, i32, f32, i64, i32) -> ()
    %h = call @spmdAllReduceStart(%a, %a, %a, %i, %i, %a, %a)
        : (i64, i64, i64, i32, i32, i64, i64) -> i64
    call @spmdWait(%h) : (i64) -> ()
    %host = memref.alloca() : memref<4xf32>
    gpu.memcpy %host, %buf : memref<4xf32>, memref<4xf32>
    %v = memref.load %host[%c0] : memref<4xf32>
    gpu.dealloc %buf : memref<4xf32>
    return %v : f32
  }
}

// -----

// A loop on the host that launches a kernel each step: each iteration is
// ordered on its own, after a wait before the loop; a function without
// GPU ops is left alone.
// CHECK-LABEL: func.func @loop
// CHECK: call @spmdGpuProgramBegin()
// CHECK: %[[B:.*]], %[[T:.*]] = gpu.alloc async
// CHECK-NEXT: gpu.wait [%[[T]]]
// CHECK-NEXT: scf.for
// CHECK-NEXT: %[[T0:.*]] = gpu.wait async
// CHECK-NEXT: %[[T1:.*]] = gpu.launch_func async [%[[T0]]]
// CHECK-NEXT: gpu.wait [%[[T1]]]
// CHECK-NEXT: }
// CHECK-NEXT: call @spmdGpuProgramEnd()
// CHECK-LABEL: func.func @host_only
// CHECK-NEXT: arith.addf
// CHECK-NEXT: return
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @fill(%out: memref<4xf32>) kernel {
      gpu.return
    }
  }
  func.func @loop(%n: index) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %buf = gpu.alloc () : memref<4xf32>
    scf.for %i = %c0 to %n step %c1 {
      gpu.launch_func @kernels::@fill blocks in (%c1, %c1, %c1)
          threads in (%c1, %c1, %c1) args(%buf : memref<4xf32>)
    }
    return
  }
  func.func @host_only(%x: f32) -> f32 {
    %y = arith.addf %x, %x : f32
    return %y : f32
  }
}

// -----

// Host code that already has asynchronous GPU ops (gpu-async-region ran
// first) is refused.
module attributes {gpu.container_module} {
  func.func @twice() {
    // expected-error @+1 {{spmd-gpu-stream-order: the host code already has gpu.wait ops}}
    %t = gpu.wait async
    %buf, %t1 = gpu.alloc async [%t] () : memref<4xf32>
    gpu.wait [%t1]
    return
  }
}
