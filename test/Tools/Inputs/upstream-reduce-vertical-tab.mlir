// A vertical tab inside `dimensions = [...]` (found by spmd-fuzz in CI): the
// lexer stops at it ("unexpected character") and upstream linalg.reduce's
// parser then sets a null attribute. Recognised and skipped by spmd-fuzz.
func.func @f(%x: memref<4x8xf32>, %r: memref<4xf32>) {
  linalg.reduce ins(%x : memref<4x8xf32>) outs(%r : memref<4xf32>) dimensions = [1]
    (%in: f32, %a: f32) {
      %s = arith.addf %in, %a : f32
      linalg.yield %s : f32
    }
  return
}
