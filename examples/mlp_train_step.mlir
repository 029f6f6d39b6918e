// A whole training step of a 2-layer MLP (matmul, ReLU, matmul, MSE loss,
// backward pass, SGD with momentum and weight decay as one op), written as a
// single-device program. The batch is split over the data-parallel mesh @dp
// by the two redistributes at the top of @train_step; parameters and
// optimizer state are named state. `main` initializes the parameters, runs
// 5 steps printing the loss, then prints every parameter and buffer.
//
// scripts/demo.sh compiles it twice (mesh of 1 rank = the single-device
// reference, and 2 ranks), runs both and compares them.
spmd.mesh @dp(shape = 2)
spmd.state @"fc1.weight" : tensor<8x6xf32> role = param
spmd.state @"fc1.weight.momentum_buffer" : tensor<8x6xf32> role = optimizer_state
spmd.state @"fc2.weight" : tensor<6x8xf32> role = param
spmd.state @"fc2.weight.momentum_buffer" : tensor<6x8xf32> role = optimizer_state
spmd.state @"optimizer.step" : tensor<f32> role = optimizer_state

func.func @init(%w1: tensor<8x6xf32> {spmd.spec = #spmd.spec<@dp, [replicate]>}, %w2: tensor<6x8xf32> {spmd.spec = #spmd.spec<@dp, [replicate]>}) {
  spmd.store %w1 to @"fc1.weight" : tensor<8x6xf32>
  spmd.store %w2 to @"fc2.weight" : tensor<6x8xf32>
  return
}

func.func @train_step(%xg: tensor<8x6xf32> {spmd.spec = #spmd.spec<@dp, [replicate]>}, %yg: tensor<8x6xf32> {spmd.spec = #spmd.spec<@dp, [replicate]>}) -> (tensor<f32> {spmd.spec = #spmd.spec<@dp, [replicate]>}) {
  %x = spmd.redistribute %xg to <@dp, [shard<0>]> : tensor<8x6xf32>
  %y = spmd.redistribute %yg to <@dp, [shard<0>]> : tensor<8x6xf32>
  %zero = arith.constant 0.0 : f32
  %w1 = spmd.load @"fc1.weight" : tensor<8x6xf32>
  %w2 = spmd.load @"fc2.weight" : tensor<6x8xf32>
  %eh = tensor.empty() : tensor<8x8xf32>
  %zh = linalg.fill ins(%zero : f32) outs(%eh : tensor<8x8xf32>) -> tensor<8x8xf32>
  %h = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>] ins(%x, %w1 : tensor<8x6xf32>, tensor<8x6xf32>) outs(%zh : tensor<8x8xf32>) -> tensor<8x8xf32>
  %g = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%h : tensor<8x8xf32>) outs(%eh : tensor<8x8xf32>) {
  ^bb0(%a: f32, %out: f32):
    %r = arith.maximumf %a, %zero : f32
    linalg.yield %r : f32
  } -> tensor<8x8xf32>
  %ey = tensor.empty() : tensor<8x6xf32>
  %zy = linalg.fill ins(%zero : f32) outs(%ey : tensor<8x6xf32>) -> tensor<8x6xf32>
  %o0 = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>] ins(%g, %w2 : tensor<8x8xf32>, tensor<6x8xf32>) outs(%zy : tensor<8x6xf32>) -> tensor<8x6xf32>
  %o = tensor.cast %o0 : tensor<8x6xf32> to tensor<8x6xf32>
  %d = linalg.sub ins(%o, %y : tensor<8x6xf32>, tensor<8x6xf32>) outs(%ey : tensor<8x6xf32>) -> tensor<8x6xf32>
  %sq = linalg.mul ins(%d, %d : tensor<8x6xf32>, tensor<8x6xf32>) outs(%ey : tensor<8x6xf32>) -> tensor<8x6xf32>
  %e0 = tensor.empty() : tensor<f32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %sum = linalg.reduce ins(%sq : tensor<8x6xf32>) outs(%z0 : tensor<f32>) dimensions = [0, 1]
    (%in: f32, %acc: f32) {
      %s = arith.addf %in, %acc : f32
      linalg.yield %s : f32
    }
  %n = arith.constant dense<48.0> : tensor<f32>
  %loss0 = arith.divf %sum, %n : tensor<f32>
  %loss = spmd.redistribute %loss0 to <@dp, [replicate]> : tensor<f32>
  %c = arith.constant dense<0.041666666666666664> : tensor<8x6xf32>
  %dy = arith.mulf %d, %c : tensor<8x6xf32>
  %dg = linalg.matmul ins(%dy, %w2 : tensor<8x6xf32>, tensor<6x8xf32>) outs(%zh : tensor<8x8xf32>) -> tensor<8x8xf32>
  %ew2 = tensor.empty() : tensor<6x8xf32>
  %zw2 = linalg.fill ins(%zero : f32) outs(%ew2 : tensor<6x8xf32>) -> tensor<6x8xf32>
  %dw2 = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (k, m)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>] ins(%dy, %g : tensor<8x6xf32>, tensor<8x8xf32>) outs(%zw2 : tensor<6x8xf32>) -> tensor<6x8xf32>
  %dh = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%dg, %h : tensor<8x8xf32>, tensor<8x8xf32>) outs(%eh : tensor<8x8xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %p = arith.cmpf ogt, %b, %zero : f32
    %r = arith.select %p, %a, %zero : f32
    linalg.yield %r : f32
  } -> tensor<8x8xf32>
  %ew1 = tensor.empty() : tensor<8x6xf32>
  %zw1 = linalg.fill ins(%zero : f32) outs(%ew1 : tensor<8x6xf32>) -> tensor<8x6xf32>
  %dw1 = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (k, m)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>] ins(%dh, %x : tensor<8x8xf32>, tensor<8x6xf32>) outs(%zw1 : tensor<8x6xf32>) -> tensor<8x6xf32>
  %b1 = spmd.load @"fc1.weight.momentum_buffer" : tensor<8x6xf32>
  %b2 = spmd.load @"fc2.weight.momentum_buffer" : tensor<6x8xf32>
  %st = spmd.load @"optimizer.step" : tensor<f32>
  %r:5 = spmd.sgd params [%w1, %w2] grads [%dw1, %dw2] momentum_buffers [%b1, %b2] step %st {lr = 0.1 : f64, momentum = 0.9 : f64, weight_decay = 0.01 : f64} : tensor<8x6xf32>, tensor<6x8xf32>
  spmd.store %r#0 to @"fc1.weight" : tensor<8x6xf32>
  spmd.store %r#1 to @"fc2.weight" : tensor<6x8xf32>
  spmd.store %r#2 to @"fc1.weight.momentum_buffer" : tensor<8x6xf32>
  spmd.store %r#3 to @"fc2.weight.momentum_buffer" : tensor<6x8xf32>
  spmd.store %r#4 to @"optimizer.step" : tensor<f32>
  return %loss : tensor<f32>
}

func.func @dump() -> (tensor<8x6xf32> {spmd.spec = #spmd.spec<@dp, [replicate]>}, tensor<6x8xf32> {spmd.spec = #spmd.spec<@dp, [replicate]>}, tensor<8x6xf32> {spmd.spec = #spmd.spec<@dp, [replicate]>}, tensor<6x8xf32> {spmd.spec = #spmd.spec<@dp, [replicate]>}, tensor<f32> {spmd.spec = #spmd.spec<@dp, [replicate]>}) {
  %d0 = spmd.load @"fc1.weight" : tensor<8x6xf32>
  %d1 = spmd.load @"fc2.weight" : tensor<6x8xf32>
  %d2 = spmd.load @"fc1.weight.momentum_buffer" : tensor<8x6xf32>
  %d3 = spmd.load @"fc2.weight.momentum_buffer" : tensor<6x8xf32>
  %d4 = spmd.load @"optimizer.step" : tensor<f32>
  return %d0, %d1, %d2, %d3, %d4 : tensor<8x6xf32>, tensor<6x8xf32>, tensor<8x6xf32>, tensor<6x8xf32>, tensor<f32>
}

func.func private @printMemrefF32(tensor<*xf32> {bufferization.access = "read"}) attributes {llvm.emit_c_interface}
func.func private @spmdWorldRank() -> i32

func.func @main() {
  %w1 = arith.constant dense<"0xC9D1993EF6AF3CBE18C44BBE1907F13E9D17883EB4F52FBEA3365EBDD976DC3D051DFB3E7F57DEBE0FFA5CBE1F9ED2BE8A1C8B3ED66DC43DAAFAC6BD4CB74EBE8A826A3E14694EBC77D778BE19BE9F3ECF9BBDBE6BA2973E381E58BEB1E05C3E00B0CCBE16EFD8BE5D4097BE5A7D963E75C1D8BD304F86BD29B4FF3EC5370C3E9CD3983D48C17FBED64DEA3EFF26A5BE858033BE60E6353E4C3AD4BE96EE0D3E07C0A33ED28201BE2A8F113D5935E1BEBDE5CEBE770272BCF5C1DD3E0B182C3E"> : tensor<8x6xf32>
  %w2 = arith.constant dense<"0x0EA871BEA30E553ED71BEF3E24F7F2BDEA0FD2BE72DCE73EAB096CBEEBB946BD552CB03E7CA3C2BD3D7D35BE72A13B3E66A391BECEAD993EE647AF3E84C4B1BE7EF7A3BEFCBB2ABEF785CBBDAC32DA3D9AE80BBE282C133E7C61C53E5BE636BE2FA91CBDA1B09CBC7E2AE4BEB122473EAD98F8BD85E830BE15E4A03E194399BE41EC9B3E11C8263DD18ABF3EE773D3BE983B6BBE222C02BE8D0CE23ED20E913E51E5B33E3BF3833EC772893E59B9B4BE2909A1BE474C953E68B37E3E1B455F3E"> : tensor<6x8xf32>
  %x = arith.constant dense<"0x1D6DAEBDAEC7643FED453F3D8F9B173F3BF7563F4BB6603FB7225D3F2ACB13BF81C62DBF65CD6D3F0F5A61BFA1F471BF5603B4BEE0BF58BE435F883C038DB5BD8841E93E789C51BF7A61ECBEF49F16BEE70E013F6952033F458B5E3E350473BFBEAA2D3F609A973E5C4253BBA620B73ECDB81E3F6AA1DBBDA68F1A3E459141BF8A1D0BBE477123BFA5B6C9BDC330FEBEA33E6EBFF585613F56376E3F3D98ABBE94184A3DE3959B3EDB05523E8E0993BEE935513FC19A563D5444863E2C74023F"> : tensor<8x6xf32>
  %y = arith.constant dense<"0xA4BD4CBE37E1873DA41491BEBAF0223F082C4A3FB7072D3E47C2AF3E8FA81ABFC038B1BE08D30ABF8AE88ABEDC35353F691A7F3E6AA920BEFA4BD73EBB497E3F1FC83ABFF98708BF55FD7B3FE8093E3FAFCFFCBE2C7A51BFCD52323F00E478BD1E557F3F330F26BFE9EA63BF3669D6BDF647603FD7D448BF8C205ABF2DA0903EAA18583E1D057FBF16AC8F3E37BD19B9307F45BF43D46A3F89522B3F48E76ABF18B2C43EEF5D853E507C733FC6826FBFEA06F13EAA333C3F8F2DAE3E251011BE"> : tensor<8x6xf32>
  func.call @init(%w1, %w2) : (tensor<8x6xf32>, tensor<6x8xf32>) -> ()
  %rank = func.call @spmdWorldRank() : () -> i32
  %c0 = arith.constant 0 : i32
  %first = arith.cmpi eq, %rank, %c0 : i32
  %l0 = func.call @train_step(%x, %y) : (tensor<8x6xf32>, tensor<8x6xf32>) -> tensor<f32>
  scf.if %first {
    %u = tensor.cast %l0 : tensor<f32> to tensor<*xf32>
    func.call @printMemrefF32(%u) : (tensor<*xf32>) -> ()
  }
  %l1 = func.call @train_step(%x, %y) : (tensor<8x6xf32>, tensor<8x6xf32>) -> tensor<f32>
  scf.if %first {
    %u = tensor.cast %l1 : tensor<f32> to tensor<*xf32>
    func.call @printMemrefF32(%u) : (tensor<*xf32>) -> ()
  }
  %l2 = func.call @train_step(%x, %y) : (tensor<8x6xf32>, tensor<8x6xf32>) -> tensor<f32>
  scf.if %first {
    %u = tensor.cast %l2 : tensor<f32> to tensor<*xf32>
    func.call @printMemrefF32(%u) : (tensor<*xf32>) -> ()
  }
  %l3 = func.call @train_step(%x, %y) : (tensor<8x6xf32>, tensor<8x6xf32>) -> tensor<f32>
  scf.if %first {
    %u = tensor.cast %l3 : tensor<f32> to tensor<*xf32>
    func.call @printMemrefF32(%u) : (tensor<*xf32>) -> ()
  }
  %l4 = func.call @train_step(%x, %y) : (tensor<8x6xf32>, tensor<8x6xf32>) -> tensor<f32>
  scf.if %first {
    %u = tensor.cast %l4 : tensor<f32> to tensor<*xf32>
    func.call @printMemrefF32(%u) : (tensor<*xf32>) -> ()
  }
  %s:5 = func.call @dump() : () -> (tensor<8x6xf32>, tensor<6x8xf32>, tensor<8x6xf32>, tensor<6x8xf32>, tensor<f32>)
  scf.if %first {
    %u0 = tensor.cast %s#0 : tensor<8x6xf32> to tensor<*xf32>
    func.call @printMemrefF32(%u0) : (tensor<*xf32>) -> ()
    %u1 = tensor.cast %s#1 : tensor<6x8xf32> to tensor<*xf32>
    func.call @printMemrefF32(%u1) : (tensor<*xf32>) -> ()
    %u2 = tensor.cast %s#2 : tensor<8x6xf32> to tensor<*xf32>
    func.call @printMemrefF32(%u2) : (tensor<*xf32>) -> ()
    %u3 = tensor.cast %s#3 : tensor<6x8xf32> to tensor<*xf32>
    func.call @printMemrefF32(%u3) : (tensor<*xf32>) -> ()
    %u4 = tensor.cast %s#4 : tensor<f32> to tensor<*xf32>
    func.call @printMemrefF32(%u4) : (tensor<*xf32>) -> ()
  }
  return
}
