// Upstream MLIR 22 crashes (ASan: a wild NamedAttrList) parsing
// linalg.matmul's custom form with a non-dictionary in `<...>` after its
// `indexing_maps = [...]`; found by spmd-fuzz (CI) from a mutated
// spmd-distribute.mlir.
func.func @f(%a: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
     <32.0> : tensor<f32>
  return %a : tensor<4x8xf32>
}
