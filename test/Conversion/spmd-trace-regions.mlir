// RUN: spmd-opt %s --spmd-trace-regions | FileCheck %s

// Consecutive work from one user line (and torch.nn module line) is one
// region; a new line starts another; ops with no user frame (PyTorch's own
// code only, or hand-written MLIR) get none; private functions are left
// alone.
// CHECK-DAG: llvm.mlir.global internal constant @[[R0:__spmd_region_[0-9]+]]("/home/u/model.py:12|/x/torch/nn/modules/linear.py:125\00")
// CHECK-DAG: llvm.mlir.global internal constant @[[R1:__spmd_region_[0-9]+]]("/home/u/model.py:13\00")
// CHECK-LABEL: func.func @step
// CHECK: %[[N0:.*]] = llvm.mlir.addressof @[[R0]] : !llvm.ptr
// CHECK-NEXT: %[[T0:.*]] = call @spmdTraceBegin(%[[N0]]) : (!llvm.ptr) -> i64
// CHECK-NEXT: call @work(%{{.*}}) : (memref<4xf32>) -> ()
// CHECK-NEXT: memref.alloc
// CHECK-NEXT: call @work
// CHECK-NEXT: call @spmdTraceEnd(%[[T0]], %[[N0]]) : (i64, !llvm.ptr) -> ()
// CHECK-NEXT: %[[N1:.*]] = llvm.mlir.addressof @[[R1]] : !llvm.ptr
// CHECK-NEXT: %[[T1:.*]] = call @spmdTraceBegin(%[[N1]]) : (!llvm.ptr) -> i64
// CHECK-NEXT: memref.copy
// CHECK-NEXT: call @spmdTraceEnd(%[[T1]], %[[N1]])
// CHECK-NEXT: call @work(%{{.*}}) : (memref<4xf32>) -> ()
// CHECK-NEXT: return
// CHECK-LABEL: func.func private @helper
// CHECK-NOT: spmdTrace
// CHECK: return
#user12 = loc("/home/u/model.py":12:0)
#user13 = loc("/home/u/model.py":13:0)
#linear = loc("/x/torch/nn/modules/linear.py":125:0)
#fx = loc("/x/torch/fx/proxy.py":236:0)
func.func private @work(memref<4xf32>)
func.func @step(%a: memref<4xf32>, %b: memref<4xf32>) {
  call @work(%a) : (memref<4xf32>) -> () loc(callsite(#linear at #user12))
  %c = memref.alloc() : memref<4xf32>
  call @work(%b) : (memref<4xf32>) -> () loc(callsite(#fx at callsite(#linear at #user12)))
  memref.copy %a, %b : memref<4xf32> to memref<4xf32> loc(#user13)
  call @work(%c) : (memref<4xf32>) -> () loc(#fx)
  return
}
func.func private @helper(%a: memref<4xf32>) {
  call @work(%a) : (memref<4xf32>) -> () loc(#user12)
  return
}
