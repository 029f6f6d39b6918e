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
