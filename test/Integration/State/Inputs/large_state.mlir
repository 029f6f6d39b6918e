// A step over 3 GiB of state (three 1 GiB parameters): more than the
// default code model reaches in a shared object's globals. It reads the
// last element of each and stores their sum plus one.
spmd.state @"big.a" : tensor<268435456xf32> role = param
spmd.state @"big.b" : tensor<268435456xf32> role = param
spmd.state @"big.c" : tensor<268435456xf32> role = param
spmd.state @"sum" : tensor<f32> role = param

func.func @step() {
  %last = arith.constant 268435455 : index
  %a = spmd.load @"big.a" : tensor<268435456xf32>
  %b = spmd.load @"big.b" : tensor<268435456xf32>
  %c = spmd.load @"big.c" : tensor<268435456xf32>
  %x = tensor.extract %a[%last] : tensor<268435456xf32>
  %y = tensor.extract %b[%last] : tensor<268435456xf32>
  %z = tensor.extract %c[%last] : tensor<268435456xf32>
  %one = arith.constant 1.0 : f32
  %s0 = arith.addf %x, %y : f32
  %s1 = arith.addf %s0, %z : f32
  %s2 = arith.addf %s1, %one : f32
  %t = tensor.from_elements %s2 : tensor<f32>
  spmd.store %t to @"sum" : tensor<f32>
  return
}
