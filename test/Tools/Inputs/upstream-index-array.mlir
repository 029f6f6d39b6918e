func.func @f() attributes {a = array<index: 1, 2>} {
  return
}
