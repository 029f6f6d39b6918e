// RUN: spmd-gpu-opt %s --spmd-gpu-kernels-to-host --split-input-file --verify-diagnostics | FileCheck %s

// A kernel becomes a host function looping over blocks (z, y, x) and
// threads (z, y, x); the ids become the loop indices, the dimensions the
// extra arguments, global_id block * block_dim + thread. The module becomes
// a binary whose image names it; the launch still refers to it.
// CHECK-LABEL: func.func @host(
// CHECK: gpu.launch_func @scale_kernel::@scale_kernel
// CHECK: gpu.binary @scale_kernel [#gpu.object<#nvvm.target, bin = "spmd-emulated-kernels:scale_kernel\00">]
// CHECK-NOT: gpu.module
// CHECK-LABEL: func.func @__spmd_emu_impl_scale_kernel__scale_kernel(
// CHECK-SAME: %[[A:[a-z0-9_]+]]: memref<1024xf32>, %[[F:[a-z0-9_]+]]: f32, %[[GX:[a-z0-9_]+]]: index, %[[GY:[a-z0-9_]+]]: index, %[[GZ:[a-z0-9_]+]]: index, %[[BX:[a-z0-9_]+]]: index, %[[BY:[a-z0-9_]+]]: index, %[[BZ:[a-z0-9_]+]]: index)
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[GZ]]
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[GY]]
// CHECK: scf.for %[[BID:.*]] = %{{.*}} to %[[GX]]
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[BZ]]
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[BY]]
// CHECK: scf.for %[[TID:.*]] = %{{.*}} to %[[BX]]
// CHECK: scf.execute_region {
// CHECK: %[[BASE:.*]] = arith.muli %[[BID]], %[[BX]]
// CHECK: %[[I:.*]] = arith.addi %[[BASE]], %[[TID]]
// CHECK: %[[V:.*]] = memref.load %[[A]][%[[I]]]
// CHECK: arith.mulf %[[V]], %[[F]]
// CHECK: memref.store
// CHECK: scf.yield
module attributes {gpu.container_module} {
  func.func @host(%a: memref<1024xf32>, %f: f32) {
    %c4 = arith.constant 4 : index
    %c1 = arith.constant 1 : index
    %c256 = arith.constant 256 : index
    gpu.launch_func @scale_kernel::@scale_kernel blocks in (%c4, %c1, %c1) threads in (%c256, %c1, %c1) args(%a : memref<1024xf32>, %f : f32)
    return
  }
  gpu.module @scale_kernel {
    gpu.func @scale_kernel(%a: memref<1024xf32>, %f: f32) kernel {
      %bid = gpu.block_id x
      %bdim = gpu.block_dim x
      %tid = gpu.thread_id x
      %base = arith.muli %bid, %bdim : index
      %i = arith.addi %base, %tid : index
      %v = memref.load %a[%i] : memref<1024xf32>
      %s = arith.mulf %v, %f : f32
      memref.store %s, %a[%i] : memref<1024xf32>
      gpu.return
    }
  }
}

// -----

// gpu.global_id and the grid size.
// CHECK-LABEL: func.func @__spmd_emu_impl_ids__ids(
// CHECK-SAME: %[[OUT:[a-z0-9_]+]]: memref<8xindex>, %[[GX:[a-z0-9_]+]]: index, %{{[a-z0-9]+}}: index, %{{[a-z0-9]+}}: index, %[[BX:[a-z0-9_]+]]: index,
// CHECK: scf.for %[[BID:.*]] = %{{.*}} to %[[GX]]
// CHECK: scf.for %[[TID:.*]] = %{{.*}} to %[[BX]]
// CHECK: %[[M:.*]] = arith.muli %[[BID]], %[[BX]]
// CHECK: %[[G:.*]] = arith.addi %[[M]], %[[TID]]
// CHECK: memref.store %[[GX]], %[[OUT]][%[[G]]]
module attributes {gpu.container_module} {
  gpu.module @ids {
    gpu.func @ids(%out: memref<8xindex>) kernel {
      %g = gpu.global_id x
      %n = gpu.grid_dim x
      memref.store %n, %out[%g] : memref<8xindex>
      gpu.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @sync {
    gpu.func @sync(%a: memref<8xf32>) kernel {
      // expected-error @below {{'gpu.barrier' in kernel @sync::@sync is not supported by the GPU emulator}}
      gpu.barrier
      gpu.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @shared {
    // expected-error @below {{kernel @shared::@shared uses workgroup or private memory}}
    gpu.func @shared(%a: memref<8xf32>) workgroup(%tile: memref<8xf32, #gpu.address_space<workgroup>>) kernel {
      gpu.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @calls {
    func.func @helper() {
      return
    }
    gpu.func @calls() kernel {
      // expected-error @below {{kernel @calls::@calls calls a function; not supported by the emulator}}
      func.call @helper() : () -> ()
      gpu.return
    }
  }
}

// -----

// Shuffles at the top level of a kernel (a warp's butterfly): the body runs
// phase by phase, each for every thread of the block before the next; the
// values a later phase uses (the shuffled operand too) are kept per thread,
// and a shuffle reads its partner lane's (lane ^ offset, within width and
// the block).
// CHECK-LABEL: func.func @__spmd_emu_impl_warp_sum__warp_sum(
// CHECK: arith.muli
// CHECK-NEXT: %[[N:.*]] = arith.muli %{{.*}}, %{{.*}} : index
// CHECK-NEXT: %[[KEEP:.*]] = memref.alloca(%[[N]]) : memref<?xf32>
// CHECK: scf.for
// Phase 0: each thread's value, kept.
// CHECK: scf.execute_region {
// CHECK: %[[V:.*]] = memref.load %{{.*}}[%{{.*}}] : memref<64xf32>
// CHECK: memref.store %[[V]], %[[KEEP]][%[[T0:.*]]] : memref<?xf32>
// Phase 1: the partner's value.
// CHECK: scf.execute_region {
// CHECK: %[[OWN:.*]] = memref.load %[[KEEP]][%[[T1:.*]]] : memref<?xf32>
// CHECK: %[[LANE:.*]] = arith.remui %[[T1]], %{{.*}} : index
// CHECK: %[[P:.*]] = arith.xori %[[LANE]], %{{.*}} : index
// CHECK: %[[SRC:.*]] = arith.addi %{{.*}}, %[[P]] : index
// CHECK: %[[PICK:.*]] = scf.if %{{.*}} -> (f32) {
// CHECK: memref.load %[[KEEP]][%[[SRC]]]
// CHECK: } else {
// CHECK: scf.yield %[[OWN]]
// CHECK: arith.addf %[[PICK]], %[[OWN]]
// CHECK-NOT: gpu.shuffle
module attributes {gpu.container_module} {
  gpu.module @warp_sum {
    gpu.func @warp_sum(%a: memref<64xf32>, %out: memref<64xf32>) kernel {
      %tid = gpu.thread_id x
      %v = memref.load %a[%tid] : memref<64xf32>
      %c16 = arith.constant 16 : i32
      %c32 = arith.constant 32 : i32
      %other, %valid = gpu.shuffle xor %v, %c16, %c32 : f32
      %s = arith.addf %other, %v : f32
      memref.store %s, %out[%tid] : memref<64xf32>
      gpu.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @nested {
    // expected-error @below {{kernel @nested::@nested shuffles inside a loop or branch; not supported by the GPU emulator}}
    gpu.func @nested(%a: memref<64xf32>, %n: index) kernel {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c16 = arith.constant 16 : i32
      %c32 = arith.constant 32 : i32
      scf.for %i = %c0 to %n step %c1 {
        %v = memref.load %a[%i] : memref<64xf32>
        %other, %valid = gpu.shuffle xor %v, %c16, %c32 : f32
        memref.store %other, %a[%i] : memref<64xf32>
      }
      gpu.return
    }
  }
}
