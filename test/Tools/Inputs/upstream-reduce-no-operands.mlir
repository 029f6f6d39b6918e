// Upstream MLIR 22 crashes (a null dereference in linalg.reduce's verifier)
// on a linalg.reduce with neither inputs nor inits; found by spmd-fuzz from
// a mutated spmd-blocked-full-reductions.mlir. The generic form is below.
func.func @f(%acc: memref<f32>) {
  linalg.reduce dimensions = [1]
    (%in: f32, %a: f32) {
      %s = arith.addf %in, %a : f32
      linalg.yield %s : f32
    }
  return
}
