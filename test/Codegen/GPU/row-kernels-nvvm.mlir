// REQUIRES: cuda-toolkit
// The warp-per-row kernel on the real path: the butterflies become
// shfl.sync.bfly and ptxas compiles the kernel to a cubin.
// RUN: spmd-gpu-opt %s --mlir-disable-threading --spmd-lower-to-nvvm="cuda-toolkit=%cuda_root" --mlir-print-ir-after-all -o %t.mlir 2>&1 | FileCheck %s
// RUN: FileCheck %s --check-prefix=BIN < %t.mlir
// CHECK-COUNT-10: nvvm.shfl.sync bfly {{.*}} : f32 -> f32
// BIN: gpu.binary @softmax_kernel [#gpu.object<#nvvm.target<O = 3, chip = "sm_90"
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0, 0)>
func.func @softmax(%x: memref<4x40xf32>) -> memref<4x40xf32> {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %max = gpu.alloc () : memref<4x1xf32>
  %e = gpu.alloc () : memref<4x40xf32>
  %sum = gpu.alloc () : memref<4x1xf32>
  %y = gpu.alloc () : memref<4x40xf32>
  linalg.fill ins(%ninf : f32) outs(%max : memref<4x1xf32>)
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<4x40xf32>) outs(%max : memref<4x1xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %m = arith.maximumf %in, %acc : f32
    linalg.yield %m : f32
  }
  linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %max : memref<4x40xf32>, memref<4x1xf32>) outs(%e : memref<4x40xf32>) {
  ^bb0(%in: f32, %m: f32, %out: f32):
    %d = arith.subf %in, %m : f32
    %v = math.exp %d : f32
    linalg.yield %v : f32
  }
  linalg.fill ins(%zero : f32) outs(%sum : memref<4x1xf32>)
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%e : memref<4x40xf32>) outs(%sum : memref<4x1xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %in, %acc : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%e, %sum : memref<4x40xf32>, memref<4x1xf32>) outs(%y : memref<4x40xf32>) {
  ^bb0(%in: f32, %s: f32, %out: f32):
    %v = arith.divf %in, %s : f32
    linalg.yield %v : f32
  }
  return %y : memref<4x40xf32>
}
