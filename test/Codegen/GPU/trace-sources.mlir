// RUN: spmd-gpu-opt %s --spmd-gpu-trace-sources | FileCheck %s
// RUN: spmd-gpu-opt %s --spmd-gpu-trace-sources --spmd-gpu-stream-order | FileCheck %s --check-prefix=ORDER

// Each launch and GPU runtime compute call (GEMM) is preceded by the name of
// the user's code at its location (one global per name); a launch whose
// location has no user frame gets a null source; collectives and state
// lookups get none; the calls need no host wait (stream-ordered).
// CHECK-DAG: llvm.mlir.global internal constant @[[S0:__spmd_source_[0-9]+]]("/home/u/model.py:12|/x/torch/nn/modules/linear.py:125\00")
// CHECK-DAG: llvm.mlir.global internal constant @[[S1:__spmd_source_[0-9]+]]("/home/u/spmd/model.py:13\00")
// CHECK-LABEL: func.func @step
// CHECK: %[[A0:.*]] = llvm.mlir.addressof @[[S0]] : !llvm.ptr
// CHECK-NEXT: call @spmdGpuTraceSource(%[[A0]]) : (!llvm.ptr) -> ()
// CHECK-NEXT: gpu.launch_func @kernels::@fill
// CHECK-NEXT: %[[A1:.*]] = llvm.mlir.addressof @[[S0]] : !llvm.ptr
// CHECK-NEXT: call @spmdGpuTraceSource(%[[A1]])
// CHECK-NEXT: call @spmdGpuSgemm
// CHECK-NEXT: %[[Z:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK-NEXT: call @spmdGpuTraceSource(%[[Z]])
// CHECK-NEXT: gpu.launch_func @kernels::@fill
// CHECK-NEXT: %[[A2:.*]] = llvm.mlir.addressof @[[S1]] : !llvm.ptr
// CHECK-NEXT: call @spmdGpuTraceSource(%[[A2]])
// CHECK-NEXT: gpu.launch_func @kernels::@fill
// CHECK-NEXT: call @spmdAllReduceStart
// CHECK-NEXT: return
// CHECK: func.func private @spmdGpuTraceSource(!llvm.ptr)
// ORDER-LABEL: func.func @step
// ORDER-NOT: gpu.wait [
// ORDER: call @spmdGpuSgemm
// ORDER-NOT: gpu.wait [
// ORDER: call @spmdAllReduceStart
// ORDER-NEXT: gpu.wait [
#user12 = loc("/home/u/model.py":12:0)
#user13 = loc("/home/u/spmd/model.py":13:0)
#linear = loc("/x/torch/nn/modules/linear.py":125:0)
#bridge = loc("/x/site-packages/spmd/_trace.py":80:0)
#fx = loc("/x/torch/fx/proxy.py":236:0)
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
  func.func @step(%i: i32, %f: f32, %a: i64, %buf: memref<4xf32>) {
    %c1 = arith.constant 1 : index
    gpu.launch_func @kernels::@fill blocks in (%c1, %c1, %c1)
        threads in (%c1, %c1, %c1) args(%buf : memref<4xf32>)
        loc(callsite(#linear at callsite(#user12 at #bridge)))
    call @spmdGpuSgemm(%i, %i, %i, %i, %i, %i, %f, %a, %i, %a, %i, %f, %a, %i)
        : (i32, i32, i32, i32, i32, i32, f32, i64, i32, i64, i32, f32, i64, i32) -> ()
        loc(callsite(#linear at callsite(#user12 at #bridge)))
    gpu.launch_func @kernels::@fill blocks in (%c1, %c1, %c1)
        threads in (%c1, %c1, %c1) args(%buf : memref<4xf32>)
        loc(callsite(#fx at #bridge))
    gpu.launch_func @kernels::@fill blocks in (%c1, %c1, %c1)
        threads in (%c1, %c1, %c1) args(%buf : memref<4xf32>)
        loc(callsite(#user13 at #bridge))
    %h = call @spmdAllReduceStart(%a, %a, %a, %i, %i, %a, %a)
        : (i64, i64, i64, i32, i32, i64, i64) -> i64
        loc(callsite(#user12 at #bridge))
    return
  }
}
