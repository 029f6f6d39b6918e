#map = affine_map<(d0, d1, d2) -> (d0, d2)>
#map1 = affine_map<(d0, d1, d2) -> (d1, d2)>
#map2 = affine_map<(d0, d1, d2) -> (d0, d1)>
#map3 = affine_map<(d0, d1) -> (d0, d1)>
#map4 = affine_map<(d0, d1, d2) -> (d2, d0)>
#map5 = affine_map<(d0, d1, d2) -> (d2, d1)>
module {
  spmd.mesh @dp(shape = 2)
  spmd.state @fc1.weight : tensor<8x6xf32> role = param
  spmd.state @fc1.weight.exp_avg : tensor<8x6xf32> role = optimizer_state
  spmd.state @fc1.weight.exp_avg_sq : tensor<8x6xf32> role = optimizer_state
  spmd.state @fc1.weight.step : tensor<f32> role = optimizer_state
  spmd.state @fc2.weight : tensor<6x8xf32> role = param
  spmd.state @fc2.weight.exp_avg : tensor<6x8xf32> role = optimizer_state
  spmd.state @fc2.weight.exp_avg_sq : tensor<6x8xf32> role = optimizer_state
  spmd.state @fc2.weight.step : tensor<f32> role = optimizer_state
  func.func @init(%arg0: tensor<8x6xf32> {spmd.spec = #spmd.spec<@dp, [replicate]>}, %arg1: tensor<6x8xf32> {spmd.spec = #spmd.spec<@dp, [replicate]>}) {
    spmd.store %arg0 to @fc1.weight : tensor<8x6xf32>
    spmd.store %arg1 to @fc2.weight : tensor<6x8xf32>
    return
  }
  func.func @train_step(%arg0: tensor<8x6xf32> {spmd.spec = #spmd.spec<@dp, [replicate]>}, %arg1: tensor<8x6xf32> {spmd.spec = #spmd.spec<@dp, [replicate]>}) -> (tensor<f32> {spmd.spec = #spmd.spec<@dp, [replicate]>}) {
    %cst = arith.constant dense<0.0416666679> : tensor<4x6xf32>
    %cst_0 = arith.constant dense<4.800000e+01> : tensor<f32>
    %cst_1 = arith.constant 0.000000e+00 : f32
    %0 = spmd.local_slice %arg0 on @dp axes = [0] dim = 0 : tensor<8x6xf32> -> tensor<4x6xf32>
    %1 = spmd.local_slice %arg1 on @dp axes = [0] dim = 0 : tensor<8x6xf32> -> tensor<4x6xf32>
    %2 = spmd.load @fc1.weight : tensor<8x6xf32>
    %3 = spmd.load @fc2.weight : tensor<6x8xf32>
    %4 = tensor.empty() : tensor<4x8xf32>
    %5 = linalg.fill ins(%cst_1 : f32) outs(%4 : tensor<4x8xf32>) -> tensor<4x8xf32>
    %6 = linalg.matmul indexing_maps = [#map, #map1, #map2] ins(%0, %2 : tensor<4x6xf32>, tensor<8x6xf32>) outs(%5 : tensor<4x8xf32>) -> tensor<4x8xf32>
    %7 = tensor.empty() : tensor<4x8xf32>
    %8 = linalg.generic {indexing_maps = [#map3, #map3], iterator_types = ["parallel", "parallel"]} ins(%6 : tensor<4x8xf32>) outs(%7 : tensor<4x8xf32>) {
    ^bb0(%in: f32, %out: f32):
      %37 = arith.maximumf %in, %cst_1 : f32
      linalg.yield %37 : f32
    } -> tensor<4x8xf32>
    %9 = tensor.empty() : tensor<4x6xf32>
    %10 = linalg.fill ins(%cst_1 : f32) outs(%9 : tensor<4x6xf32>) -> tensor<4x6xf32>
    %11 = linalg.matmul indexing_maps = [#map, #map1, #map2] ins(%8, %3 : tensor<4x8xf32>, tensor<6x8xf32>) outs(%10 : tensor<4x6xf32>) -> tensor<4x6xf32>
    %12 = tensor.empty() : tensor<4x6xf32>
    %13 = linalg.sub ins(%11, %1 : tensor<4x6xf32>, tensor<4x6xf32>) outs(%12 : tensor<4x6xf32>) -> tensor<4x6xf32>
    %14 = linalg.mul ins(%13, %13 : tensor<4x6xf32>, tensor<4x6xf32>) outs(%12 : tensor<4x6xf32>) -> tensor<4x6xf32>
    %15 = tensor.empty() : tensor<f32>
    %16 = linalg.fill ins(%cst_1 : f32) outs(%15 : tensor<f32>) -> tensor<f32>
    %reduced = linalg.reduce ins(%14 : tensor<4x6xf32>) outs(%16 : tensor<f32>) dimensions = [0, 1] 
      (%in: f32, %init: f32) {
        %37 = arith.addf %in, %init : f32
        linalg.yield %37 : f32
      }
    %17 = arith.divf %reduced, %cst_0 : tensor<f32>
    %18 = spmd.all_reduce %17 on @dp axes = [0] sum : tensor<f32> -> tensor<f32>
    %19 = arith.mulf %13, %cst : tensor<4x6xf32>
    %20 = linalg.matmul ins(%19, %3 : tensor<4x6xf32>, tensor<6x8xf32>) outs(%5 : tensor<4x8xf32>) -> tensor<4x8xf32>
    %21 = tensor.empty() : tensor<6x8xf32>
    %22 = linalg.fill ins(%cst_1 : f32) outs(%21 : tensor<6x8xf32>) -> tensor<6x8xf32>
    %23 = linalg.matmul indexing_maps = [#map4, #map5, #map2] ins(%19, %8 : tensor<4x6xf32>, tensor<4x8xf32>) outs(%22 : tensor<6x8xf32>) -> tensor<6x8xf32>
    %24 = linalg.generic {indexing_maps = [#map3, #map3, #map3], iterator_types = ["parallel", "parallel"]} ins(%20, %6 : tensor<4x8xf32>, tensor<4x8xf32>) outs(%7 : tensor<4x8xf32>) {
    ^bb0(%in: f32, %in_2: f32, %out: f32):
      %37 = arith.cmpf ogt, %in_2, %cst_1 : f32
      %38 = arith.select %37, %in, %cst_1 : f32
      linalg.yield %38 : f32
    } -> tensor<4x8xf32>
    %25 = tensor.empty() : tensor<8x6xf32>
    %26 = linalg.fill ins(%cst_1 : f32) outs(%25 : tensor<8x6xf32>) -> tensor<8x6xf32>
    %27 = linalg.matmul indexing_maps = [#map4, #map5, #map2] ins(%24, %0 : tensor<4x8xf32>, tensor<4x6xf32>) outs(%26 : tensor<8x6xf32>) -> tensor<8x6xf32>
    %28 = spmd.load @fc1.weight.exp_avg : tensor<8x6xf32>
    %29 = spmd.load @fc1.weight.exp_avg_sq : tensor<8x6xf32>
    %30 = spmd.load @fc1.weight.step : tensor<f32>
    %31 = spmd.load @fc2.weight.exp_avg : tensor<6x8xf32>
    %32 = spmd.load @fc2.weight.exp_avg_sq : tensor<6x8xf32>
    %33 = spmd.load @fc2.weight.step : tensor<f32>
    %34 = spmd.all_reduce %27 on @dp axes = [0] sum : tensor<8x6xf32> -> tensor<8x6xf32>
    %35 = spmd.all_reduce %23 on @dp axes = [0] sum : tensor<6x8xf32> -> tensor<6x8xf32>
    %36:8 = spmd.adam params [%2, %3] grads [%34, %35] exp_avgs [%28, %31] exp_avg_sqs [%29, %32] steps [%30, %33] {decoupled_weight_decay, lr = 1.000000e-02 : f64, weight_decay = 1.000000e-02 : f64} : tensor<8x6xf32>, tensor<6x8xf32>
    spmd.store %36#0 to @fc1.weight : tensor<8x6xf32>
    spmd.store %36#1 to @fc2.weight : tensor<6x8xf32>
    spmd.store %36#2 to @fc1.weight.exp_avg : tensor<8x6xf32>
    spmd.store %36#3 to @fc2.weight.exp_avg : tensor<6x8xf32>
    spmd.store %36#4 to @fc1.weight.exp_avg_sq : tensor<8x6xf32>
    spmd.store %36#5 to @fc2.weight.exp_avg_sq : tensor<6x8xf32>
    spmd.store %36#6 to @fc1.weight.step : tensor<f32>
    spmd.store %36#7 to @fc2.weight.step : tensor<f32>
    return %18 : tensor<f32>
  }
  func.func @dump() -> (tensor<8x6xf32> {spmd.spec = #spmd.spec<@dp, [replicate]>}, tensor<6x8xf32> {spmd.spec = #spmd.spec<@dp, [replicate]>}, tensor<8x6xf32> {spmd.spec = #spmd.spec<@dp, [replicate]>}, tensor<6x8xf32> {spmd.spec = #spmd.spec<@dp, [replicate]>}, tensor<8x6xf32> {spmd.spec = #spmd.spec<@dp, [replicate]>}, tensor<6x8xf32> {spmd.spec = #spmd.spec<@dp, [replicate]>}, tensor<f32> {spmd.spec = #spmd.spec<@dp, [replicate]>}, tensor<f32> {spmd.spec = #spmd.spec<@dp, [replicate]>}) {
    %0 = spmd.load @fc1.weight : tensor<8x6xf32>
    %1 = spmd.load @fc2.weight : tensor<6x8xf32>
    %2 = spmd.load @fc1.weight.exp_avg : tensor<8x6xf32>
    %3 = spmd.load @fc2.weight.exp_avg : tensor<6x8xf32>
    %4 = spmd.load @fc1.weight.exp_avg_sq : tensor<8x6xf32>
    %5 = spmd.load @fc2.weight.exp_avg_sq : tensor<6x8xf32>
    %6 = spmd.load @fc1.weight.step : tensor<f32>
    %7 = spmd.load @fc2.weight.step : tensor<f32>
    return %0, %1, %2, %3, %4, %5, %6, %7 : tensor<8x6xf32>, tensor<6x8xf32>, tensor<8x6xf32>, tensor<6x8xf32>, tensor<8x6xf32>, tensor<6x8xf32>, tensor<f32>, tensor<f32>
  }
  func.func private @printMemrefF32(tensor<*xf32> {bufferization.access = "read"}) attributes {llvm.emit_c_interface}
  func.func private @spmdWorldRank() -> i32
  func.func @main() {
    %c0_i32 = arith.constant 0 : i32
    %cst = arith.constant dense<[[0.406486362, 0.487952799, 0.248306155, 0.292731494, -0.00244383817, -0.19650948], [0.150586724, -0.356230229, 0.333009303, 0.226808429, 0.467562169, 0.118441418], [0.265271753, 0.0422894657, -0.16397886, 0.0899369716, -0.323633492, 0.0333219282], [0.279550284, 0.125047207, -0.225928918, 0.171858966, 0.238902375, 0.334678173], [0.254885167, -0.112912364, 0.0357558094, -0.296893328, 0.0417762175, 0.0322606824], [0.329596221, 0.256066412, -0.0986855551, 0.434060276, -0.151394784, -0.249573335], [0.356148243, -0.0089667309, -0.207004666, 0.190172821, 0.440163732, 0.196568042], [0.0577779338, 0.126885816, -0.292110384, 3.748790e-01, 0.486470491, 0.431233525]]> : tensor<8x6xf32>
    %cst_0 = arith.constant dense<[[0.217341602, -0.276148379, 0.269694507, -0.0621400699, 0.397789598, -0.1659455, -0.471212715, 7.551980e-03], [-0.0338182673, 0.41666159, 0.258111745, -0.153849781, -0.0898705274, 0.0649279132, -0.119315222, 0.0771003067], [0.0493634567, -0.0541302226, -0.274645239, -0.187457442, -0.00982567109, -0.135853812, -0.390834808, 0.394469261], [0.31382966, -0.461127728, 0.254585505, -0.120364979, -0.0897896289, 0.0117183533, -0.190185055, -0.282318652], [-0.18488124, 0.195213243, 0.156556979, -0.173681468, 0.36896351, 0.488403469, -0.00282858987, -0.392483264], [0.313290775, -0.450150728, 0.489942461, 0.481518507, -0.373096079, -0.0214421935, 0.389469177, 0.393026352]]> : tensor<6x8xf32>
    %cst_1 = arith.constant dense<[[0.165234521, -0.873349249, -0.994223296, -0.693969965, -0.380121082, 0.576986432], [-0.625853539, 0.391256899, -0.309574366, -0.805808126, 0.666137099, -0.541590452], [-0.0545552522, 0.0109257605, -0.763080775, -0.317985356, -0.49225983, -0.474030882], [0.802063465, 0.613617659, -0.217303917, 0.630878925, 0.922128498, -0.692846238], [-0.0927671343, 0.662252784, -0.336112052, 0.0818130448, 0.400906086, -0.446080446], [-0.779457331, 0.718408048, 0.679408133, -0.59994036, -0.947363674, 0.778639197], [0.12794672, 0.246927947, -0.128204927, 0.742229461, 0.95407927, 0.390894115], [-0.404523402, 0.817193508, 0.660480976, 5.378890e-01, -0.917365729, 0.632045209]]> : tensor<8x6xf32>
    %cst_2 = arith.constant dense<[[0.077037245, 0.500813901, 0.857215166, 0.93133235, -0.763940274, -0.579802752], [-0.518991709, -5.358770e-01, 0.579524159, 0.212313518, -0.639460564, 7.058110e-01], [0.144810975, 0.498854488, -5.961340e-01, -0.313510269, 0.291107744, 0.523870528], [-0.258109212, -0.0220953282, 0.964387953, -0.738112032, -0.672260761, -0.459719032], [-0.223734125, 0.564883888, -0.109719254, -0.578682184, 0.506391525, 0.76010698], [0.309690624, -0.6223163, 0.585501611, -0.594579279, -0.593881667, -0.166318655], [-0.758615314, 0.188181624, 0.120110638, 0.0162790436, 0.041325666, -0.603657722], [0.0522809811, -0.0355273895, -0.00367910462, -0.823691666, -5.059560e-01, 0.331774414]]> : tensor<8x6xf32>
    call @init(%cst, %cst_0) : (tensor<8x6xf32>, tensor<6x8xf32>) -> ()
    %0 = call @spmdWorldRank() : () -> i32
    %1 = arith.cmpi eq, %0, %c0_i32 : i32
    %2 = call @train_step(%cst_1, %cst_2) : (tensor<8x6xf32>, tensor<8x6xf32>) -> tensor<f32>
    scf.if %1 {
      %cast = tensor.cast %2 : tensor<f32> to tensor<*xf32>
      func.call @printMemrefF32(%cast) : (tensor<*xf32>) -> ()
    }
    %3 = call @train_step(%cst_1, %cst_2) : (tensor<8x6xf32>, tensor<8x6xf32>) -> tensor<f32>
    scf.if %1 {
      %cast = tensor.cast %3 : tensor<f32> to tensor<*xf32>
      func.call @printMemrefF32(%cast) : (tensor<*xf32>) -> ()
    }
    %4 = call @train_step(%cst_1, %cst_2) : (tensor<8x6xf32>, tensor<8x6xf32>) -> tensor<f32>
    scf.if %1 {
      %cast = tensor.cast %4 : tensor<f32> to tensor<*xf32>
      func.call @printMemrefF32(%cast) : (tensor<*xf32>) -> ()
    }
    %5:8 = call @dump() : () -> (tensor<8x6xf32>, tensor<6x8xf32>, tensor<8x6xf32>, tensor<6x8xf32>, tensor<8x6xf32>, tensor<6x8xf32>, tensor<f32>, tensor<f32>)
    scf.if %1 {
      %cast = tensor.cast %5#0 : tensor<8x6xf32> to tensor<*xf32>
      func.call @printMemrefF32(%cast) : (tensor<*xf32>) -> ()
      %cast_3 = tensor.cast %5#1 : tensor<6x8xf32> to tensor<*xf32>
      func.call @printMemrefF32(%cast_3) : (tensor<*xf32>) -> ()
      %cast_4 = tensor.cast %5#2 : tensor<8x6xf32> to tensor<*xf32>
      func.call @printMemrefF32(%cast_4) : (tensor<*xf32>) -> ()
      %cast_5 = tensor.cast %5#3 : tensor<6x8xf32> to tensor<*xf32>
      func.call @printMemrefF32(%cast_5) : (tensor<*xf32>) -> ()
      %cast_6 = tensor.cast %5#4 : tensor<8x6xf32> to tensor<*xf32>
      func.call @printMemrefF32(%cast_6) : (tensor<*xf32>) -> ()
      %cast_7 = tensor.cast %5#5 : tensor<6x8xf32> to tensor<*xf32>
      func.call @printMemrefF32(%cast_7) : (tensor<*xf32>) -> ()
      %cast_8 = tensor.cast %5#6 : tensor<f32> to tensor<*xf32>
      func.call @printMemrefF32(%cast_8) : (tensor<*xf32>) -> ()
      %cast_9 = tensor.cast %5#7 : tensor<f32> to tensor<*xf32>
      func.call @printMemrefF32(%cast_9) : (tensor<*xf32>) -> ()
    }
    return
  }
}

