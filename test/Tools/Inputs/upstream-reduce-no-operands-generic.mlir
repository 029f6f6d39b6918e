// The generic form of upstream-reduce-no-operands.mlir: no operands.
"func.func"() <{function_type = () -> (), sym_name = "f"}> ({
  "linalg.reduce"() <{dimensions = array<i64: 0>}> ({
  ^bb0(%in: f32, %a: f32):
    %s = arith.addf %in, %a : f32
    linalg.yield %s : f32
  }) : () -> ()
  "func.return"() : () -> ()
}) : () -> ()
