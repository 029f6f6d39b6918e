// Upstream MLIR 22 crashes (ASan: a wild NamedAttrList) parsing a linalg
// op's custom form with a non-dictionary in `<...>` after its name; found
// by spmd-fuzz from a mutated spmd-distribute.mlir.
func.func @f(%a: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = linalg.matmul <f32>, tensor<4x8xf32>
  return %a : tensor<4x8xf32>
}
