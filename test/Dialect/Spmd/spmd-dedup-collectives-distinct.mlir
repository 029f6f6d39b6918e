// RUN: spmd-opt %s --spmd-dedup-collectives | FileCheck %s

// Collectives on different operands are different collectives, however many
// share a hash bucket (regression: operands were once ignored on equality).

spmd.mesh @dp(shape = 4)
// CHECK-LABEL: func.func @distinct_operands
// CHECK-COUNT-96: spmd.all_reduce
// CHECK-COUNT-96: spmd.local_slice
func.func @distinct_operands(%a0: tensor<4xf32>, %a1: tensor<4xf32>, %a2: tensor<4xf32>, %a3: tensor<4xf32>, %a4: tensor<4xf32>, %a5: tensor<4xf32>, %a6: tensor<4xf32>, %a7: tensor<4xf32>, %a8: tensor<4xf32>, %a9: tensor<4xf32>, %a10: tensor<4xf32>, %a11: tensor<4xf32>, %a12: tensor<4xf32>, %a13: tensor<4xf32>, %a14: tensor<4xf32>, %a15: tensor<4xf32>, %a16: tensor<4xf32>, %a17: tensor<4xf32>, %a18: tensor<4xf32>, %a19: tensor<4xf32>, %a20: tensor<4xf32>, %a21: tensor<4xf32>, %a22: tensor<4xf32>, %a23: tensor<4xf32>, %a24: tensor<4xf32>, %a25: tensor<4xf32>, %a26: tensor<4xf32>, %a27: tensor<4xf32>, %a28: tensor<4xf32>, %a29: tensor<4xf32>, %a30: tensor<4xf32>, %a31: tensor<4xf32>, %a32: tensor<4xf32>, %a33: tensor<4xf32>, %a34: tensor<4xf32>, %a35: tensor<4xf32>, %a36: tensor<4xf32>, %a37: tensor<4xf32>, %a38: tensor<4xf32>, %a39: tensor<4xf32>, %a40: tensor<4xf32>, %a41: tensor<4xf32>, %a42: tensor<4xf32>, %a43: tensor<4xf32>, %a44: tensor<4xf32>, %a45: tensor<4xf32>, %a46: tensor<4xf32>, %a47: tensor<4xf32>, %a48: tensor<4xf32>, %a49: tensor<4xf32>, %a50: tensor<4xf32>, %a51: tensor<4xf32>, %a52: tensor<4xf32>, %a53: tensor<4xf32>, %a54: tensor<4xf32>, %a55: tensor<4xf32>, %a56: tensor<4xf32>, %a57: tensor<4xf32>, %a58: tensor<4xf32>, %a59: tensor<4xf32>, %a60: tensor<4xf32>, %a61: tensor<4xf32>, %a62: tensor<4xf32>, %a63: tensor<4xf32>, %a64: tensor<4xf32>, %a65: tensor<4xf32>, %a66: tensor<4xf32>, %a67: tensor<4xf32>, %a68: tensor<4xf32>, %a69: tensor<4xf32>, %a70: tensor<4xf32>, %a71: tensor<4xf32>, %a72: tensor<4xf32>, %a73: tensor<4xf32>, %a74: tensor<4xf32>, %a75: tensor<4xf32>, %a76: tensor<4xf32>, %a77: tensor<4xf32>, %a78: tensor<4xf32>, %a79: tensor<4xf32>, %a80: tensor<4xf32>, %a81: tensor<4xf32>, %a82: tensor<4xf32>, %a83: tensor<4xf32>, %a84: tensor<4xf32>, %a85: tensor<4xf32>, %a86: tensor<4xf32>, %a87: tensor<4xf32>, %a88: tensor<4xf32>, %a89: tensor<4xf32>, %a90: tensor<4xf32>, %a91: tensor<4xf32>, %a92: tensor<4xf32>, %a93: tensor<4xf32>, %a94: tensor<4xf32>, %a95: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>) {
  %r0 = spmd.all_reduce %a0 on @dp axes = [0] sum : tensor<4xf32> -> tensor<4xf32>
  %r1 = spmd.all_reduce %a1 on @dp axes = [0] sum : tensor<4xf32> -> tensor<4xf32>
  %r2 = spmd.all_reduce %a2 on @dp axes = [0] sum : tensor<4xf32> -> tensor<4xf32>
  %r3 = spmd.all_reduce %a3 on @dp axes = [0] sum : tensor<4xf32> -> tensor<4xf32>
  %r4 = spmd.all_reduce %a4 on @dp axes = [0] sum : tensor<4xf32> -> tensor<4xf32>
  %r5 = spmd.all_reduce %a5 on @dp axes = [0] sum : tensor<4xf32> -> tensor<4xf32>
  %r6 = spmd.all_reduce %a6 on @dp axes = [0] sum : tensor<4xf32> -> tensor<4xf32>
  %r7 = spmd.all_reduce %a7 on @dp axes = [0] sum : tensor<4xf32> -> tensor<4xf32>
  %r8 = spmd.all_reduce %a8 on @dp axes = [0] sum : tensor<4xf32> -> tensor<4xf32>
  %r9 = spmd.all_reduce %a9 on @dp axes = [0] sum : tensor<4xf32> -> tensor<4xf32>
  %r10 = spmd.all_reduce %a10 on @dp axes = [0] sum : tensor<4xf32> -> tensor<4xf32>
  %r11 = spmd.all_reduce %a11 on @dp axes = [0] sum : tensor<4xf32> -> tensor<4xf32>
  %r12 = spmd.all_reduce %a12 on @dp axes = [0] sum : tensor<4xf32> -> tensor<4xf32>
  %r13 = spmd.all_reduce %a13 on @dp axes = [0] sum : tensor<4xf32> -> tensor<4xf32>
  %r14 = spmd.all_reduce %a14 on @dp axes = [0] sum : tensor<4xf32> -> tensor<4xf32>
  %r15 = spmd.all_reduce %a15 on @dp axes = [0] sum : tensor<4xf32> -> tensor<4xf32>
  %r16 = spmd.all_reduce %a16 on @dp axes = [0] sum : tensor<4xf32> -> tensor<4xf32>
  %r17 = spmd.all_reduce %a17 on @dp axes = [0] sum : tensor<4xf32> -> tensor<4xf32>
  %r18 = spmd.all_reduce %a18 on @dp axes = [0] sum : tensor<4xf32> -> tensor<4xf32>
  %r19 = spmd.all_reduce %a19 on @dp axes = [0] sum : tensor<4xf32> -> tensor<4xf32>
  %r20 = spmd.all_reduce %a20 on @dp axes = [0] sum : tensor<4xf32> -> tensor<4xf32>
  %r21 = spmd.all_reduce %a21 on @dp axes = [0] sum : tensor<4xf32> -> tensor<4xf32>
  %r22 = spmd.all_reduce %a22 on @dp axes = [0] sum : tensor<4xf32> -> tensor<4xf32>
  %r23 = spmd.all_reduce %a23 on @dp axes = [0] sum : tensor<4xf32> -> tensor<4xf32>
  %r24 = spmd.all_reduce %a24 on @dp axes = [0] sum : tensor<4xf32> -> tensor<4xf32>
  %r25 = spmd.all_reduce %a25 on @dp axes = [0] sum : tensor<4xf32> -> tensor<4xf32>
  %r26 = spmd.all_reduce %a26 on @dp axes = [0] sum : tensor<4xf32> -> tensor<4xf32>
  %r27 = spmd.all_reduce %a27 on @dp axes = [0] sum : tensor<4xf32> -> tensor<4xf32>
  %r28 = spmd.all_reduce %a28 on @dp axes = [0] sum : tensor<4xf32> -> tensor<4xf32>
  %r29 = spmd.all_reduce %a29 on @dp axes = [0] sum : tensor<4xf32> -> tensor<4xf32>
  %r30 = spmd.all_reduce %a30 on @dp axes = [0] sum : tensor<4xf32> -> tensor<4xf32>
  %r31 = spmd.all_reduce %a31 on @dp axes = [0] sum : tensor<4xf32> -> tensor<4xf32>
  %r32 = spmd.all_reduce %a32 on @dp axes = [0] sum : tensor<4xf32> -> tensor<4xf32>
  %r33 = spmd.all_reduce %a33 on @dp axes = [0] sum : tensor<4xf32> -> tensor<4xf32>
  %r34 = spmd.all_reduce %a34 on @dp axes = [0] sum : tensor<4xf32> -> tensor<4xf32>
  %r35 = spmd.all_reduce %a35 on @dp axes = [0] sum : tensor<4xf32> -> tensor<4xf32>
  %r36 = spmd.all_reduce %a36 on @dp axes = [0] sum : tensor<4xf32> -> tensor<4xf32>
  %r37 = spmd.all_reduce %a37 on @dp axes = [0] sum : tensor<4xf32> -> tensor<4xf32>
  %r38 = spmd.all_reduce %a38 on @dp axes = [0] sum : tensor<4xf32> -> tensor<4xf32>
  %r39 = spmd.all_reduce %a39 on @dp axes = [0] sum : tensor<4xf32> -> tensor<4xf32>
  %r40 = spmd.all_reduce %a40 on @dp axes = [0] sum : tensor<4xf32> -> tensor<4xf32>
  %r41 = spmd.all_reduce %a41 on @dp axes = [0] sum : tensor<4xf32> -> tensor<4xf32>
  %r42 = spmd.all_reduce %a42 on @dp axes = [0] sum : tensor<4xf32> -> tensor<4xf32>
  %r43 = spmd.all_reduce %a43 on @dp axes = [0] sum : tensor<4xf32> -> tensor<4xf32>
  %r44 = spmd.all_reduce %a44 on @dp axes = [0] sum : tensor<4xf32> -> tensor<4xf32>
  %r45 = spmd.all_reduce %a45 on @dp axes = [0] sum : tensor<4xf32> -> tensor<4xf32>
  %r46 = spmd.all_reduce %a46 on @dp axes = [0] sum : tensor<4xf32> -> tensor<4xf32>
  %r47 = spmd.all_reduce %a47 on @dp axes = [0] sum : tensor<4xf32> -> tensor<4xf32>
  %r48 = spmd.all_reduce %a48 on @dp axes = [0] sum : tensor<4xf32> -> tensor<4xf32>
  %r49 = spmd.all_reduce %a49 on @dp axes = [0] sum : tensor<4xf32> -> tensor<4xf32>
  %r50 = spmd.all_reduce %a50 on @dp axes = [0] sum : tensor<4xf32> -> tensor<4xf32>
  %r51 = spmd.all_reduce %a51 on @dp axes = [0] sum : tensor<4xf32> -> tensor<4xf32>
  %r52 = spmd.all_reduce %a52 on @dp axes = [0] sum : tensor<4xf32> -> tensor<4xf32>
  %r53 = spmd.all_reduce %a53 on @dp axes = [0] sum : tensor<4xf32> -> tensor<4xf32>
  %r54 = spmd.all_reduce %a54 on @dp axes = [0] sum : tensor<4xf32> -> tensor<4xf32>
  %r55 = spmd.all_reduce %a55 on @dp axes = [0] sum : tensor<4xf32> -> tensor<4xf32>
  %r56 = spmd.all_reduce %a56 on @dp axes = [0] sum : tensor<4xf32> -> tensor<4xf32>
  %r57 = spmd.all_reduce %a57 on @dp axes = [0] sum : tensor<4xf32> -> tensor<4xf32>
  %r58 = spmd.all_reduce %a58 on @dp axes = [0] sum : tensor<4xf32> -> tensor<4xf32>
  %r59 = spmd.all_reduce %a59 on @dp axes = [0] sum : tensor<4xf32> -> tensor<4xf32>
  %r60 = spmd.all_reduce %a60 on @dp axes = [0] sum : tensor<4xf32> -> tensor<4xf32>
  %r61 = spmd.all_reduce %a61 on @dp axes = [0] sum : tensor<4xf32> -> tensor<4xf32>
  %r62 = spmd.all_reduce %a62 on @dp axes = [0] sum : tensor<4xf32> -> tensor<4xf32>
  %r63 = spmd.all_reduce %a63 on @dp axes = [0] sum : tensor<4xf32> -> tensor<4xf32>
  %r64 = spmd.all_reduce %a64 on @dp axes = [0] sum : tensor<4xf32> -> tensor<4xf32>
  %r65 = spmd.all_reduce %a65 on @dp axes = [0] sum : tensor<4xf32> -> tensor<4xf32>
  %r66 = spmd.all_reduce %a66 on @dp axes = [0] sum : tensor<4xf32> -> tensor<4xf32>
  %r67 = spmd.all_reduce %a67 on @dp axes = [0] sum : tensor<4xf32> -> tensor<4xf32>
  %r68 = spmd.all_reduce %a68 on @dp axes = [0] sum : tensor<4xf32> -> tensor<4xf32>
  %r69 = spmd.all_reduce %a69 on @dp axes = [0] sum : tensor<4xf32> -> tensor<4xf32>
  %r70 = spmd.all_reduce %a70 on @dp axes = [0] sum : tensor<4xf32> -> tensor<4xf32>
  %r71 = spmd.all_reduce %a71 on @dp axes = [0] sum : tensor<4xf32> -> tensor<4xf32>
  %r72 = spmd.all_reduce %a72 on @dp axes = [0] sum : tensor<4xf32> -> tensor<4xf32>
  %r73 = spmd.all_reduce %a73 on @dp axes = [0] sum : tensor<4xf32> -> tensor<4xf32>
  %r74 = spmd.all_reduce %a74 on @dp axes = [0] sum : tensor<4xf32> -> tensor<4xf32>
  %r75 = spmd.all_reduce %a75 on @dp axes = [0] sum : tensor<4xf32> -> tensor<4xf32>
  %r76 = spmd.all_reduce %a76 on @dp axes = [0] sum : tensor<4xf32> -> tensor<4xf32>
  %r77 = spmd.all_reduce %a77 on @dp axes = [0] sum : tensor<4xf32> -> tensor<4xf32>
  %r78 = spmd.all_reduce %a78 on @dp axes = [0] sum : tensor<4xf32> -> tensor<4xf32>
  %r79 = spmd.all_reduce %a79 on @dp axes = [0] sum : tensor<4xf32> -> tensor<4xf32>
  %r80 = spmd.all_reduce %a80 on @dp axes = [0] sum : tensor<4xf32> -> tensor<4xf32>
  %r81 = spmd.all_reduce %a81 on @dp axes = [0] sum : tensor<4xf32> -> tensor<4xf32>
  %r82 = spmd.all_reduce %a82 on @dp axes = [0] sum : tensor<4xf32> -> tensor<4xf32>
  %r83 = spmd.all_reduce %a83 on @dp axes = [0] sum : tensor<4xf32> -> tensor<4xf32>
  %r84 = spmd.all_reduce %a84 on @dp axes = [0] sum : tensor<4xf32> -> tensor<4xf32>
  %r85 = spmd.all_reduce %a85 on @dp axes = [0] sum : tensor<4xf32> -> tensor<4xf32>
  %r86 = spmd.all_reduce %a86 on @dp axes = [0] sum : tensor<4xf32> -> tensor<4xf32>
  %r87 = spmd.all_reduce %a87 on @dp axes = [0] sum : tensor<4xf32> -> tensor<4xf32>
  %r88 = spmd.all_reduce %a88 on @dp axes = [0] sum : tensor<4xf32> -> tensor<4xf32>
  %r89 = spmd.all_reduce %a89 on @dp axes = [0] sum : tensor<4xf32> -> tensor<4xf32>
  %r90 = spmd.all_reduce %a90 on @dp axes = [0] sum : tensor<4xf32> -> tensor<4xf32>
  %r91 = spmd.all_reduce %a91 on @dp axes = [0] sum : tensor<4xf32> -> tensor<4xf32>
  %r92 = spmd.all_reduce %a92 on @dp axes = [0] sum : tensor<4xf32> -> tensor<4xf32>
  %r93 = spmd.all_reduce %a93 on @dp axes = [0] sum : tensor<4xf32> -> tensor<4xf32>
  %r94 = spmd.all_reduce %a94 on @dp axes = [0] sum : tensor<4xf32> -> tensor<4xf32>
  %r95 = spmd.all_reduce %a95 on @dp axes = [0] sum : tensor<4xf32> -> tensor<4xf32>
  %s0 = spmd.local_slice %a0 on @dp axes = [0] dim = 0 : tensor<4xf32> -> tensor<1xf32>
  %s1 = spmd.local_slice %a1 on @dp axes = [0] dim = 0 : tensor<4xf32> -> tensor<1xf32>
  %s2 = spmd.local_slice %a2 on @dp axes = [0] dim = 0 : tensor<4xf32> -> tensor<1xf32>
  %s3 = spmd.local_slice %a3 on @dp axes = [0] dim = 0 : tensor<4xf32> -> tensor<1xf32>
  %s4 = spmd.local_slice %a4 on @dp axes = [0] dim = 0 : tensor<4xf32> -> tensor<1xf32>
  %s5 = spmd.local_slice %a5 on @dp axes = [0] dim = 0 : tensor<4xf32> -> tensor<1xf32>
  %s6 = spmd.local_slice %a6 on @dp axes = [0] dim = 0 : tensor<4xf32> -> tensor<1xf32>
  %s7 = spmd.local_slice %a7 on @dp axes = [0] dim = 0 : tensor<4xf32> -> tensor<1xf32>
  %s8 = spmd.local_slice %a8 on @dp axes = [0] dim = 0 : tensor<4xf32> -> tensor<1xf32>
  %s9 = spmd.local_slice %a9 on @dp axes = [0] dim = 0 : tensor<4xf32> -> tensor<1xf32>
  %s10 = spmd.local_slice %a10 on @dp axes = [0] dim = 0 : tensor<4xf32> -> tensor<1xf32>
  %s11 = spmd.local_slice %a11 on @dp axes = [0] dim = 0 : tensor<4xf32> -> tensor<1xf32>
  %s12 = spmd.local_slice %a12 on @dp axes = [0] dim = 0 : tensor<4xf32> -> tensor<1xf32>
  %s13 = spmd.local_slice %a13 on @dp axes = [0] dim = 0 : tensor<4xf32> -> tensor<1xf32>
  %s14 = spmd.local_slice %a14 on @dp axes = [0] dim = 0 : tensor<4xf32> -> tensor<1xf32>
  %s15 = spmd.local_slice %a15 on @dp axes = [0] dim = 0 : tensor<4xf32> -> tensor<1xf32>
  %s16 = spmd.local_slice %a16 on @dp axes = [0] dim = 0 : tensor<4xf32> -> tensor<1xf32>
  %s17 = spmd.local_slice %a17 on @dp axes = [0] dim = 0 : tensor<4xf32> -> tensor<1xf32>
  %s18 = spmd.local_slice %a18 on @dp axes = [0] dim = 0 : tensor<4xf32> -> tensor<1xf32>
  %s19 = spmd.local_slice %a19 on @dp axes = [0] dim = 0 : tensor<4xf32> -> tensor<1xf32>
  %s20 = spmd.local_slice %a20 on @dp axes = [0] dim = 0 : tensor<4xf32> -> tensor<1xf32>
  %s21 = spmd.local_slice %a21 on @dp axes = [0] dim = 0 : tensor<4xf32> -> tensor<1xf32>
  %s22 = spmd.local_slice %a22 on @dp axes = [0] dim = 0 : tensor<4xf32> -> tensor<1xf32>
  %s23 = spmd.local_slice %a23 on @dp axes = [0] dim = 0 : tensor<4xf32> -> tensor<1xf32>
  %s24 = spmd.local_slice %a24 on @dp axes = [0] dim = 0 : tensor<4xf32> -> tensor<1xf32>
  %s25 = spmd.local_slice %a25 on @dp axes = [0] dim = 0 : tensor<4xf32> -> tensor<1xf32>
  %s26 = spmd.local_slice %a26 on @dp axes = [0] dim = 0 : tensor<4xf32> -> tensor<1xf32>
  %s27 = spmd.local_slice %a27 on @dp axes = [0] dim = 0 : tensor<4xf32> -> tensor<1xf32>
  %s28 = spmd.local_slice %a28 on @dp axes = [0] dim = 0 : tensor<4xf32> -> tensor<1xf32>
  %s29 = spmd.local_slice %a29 on @dp axes = [0] dim = 0 : tensor<4xf32> -> tensor<1xf32>
  %s30 = spmd.local_slice %a30 on @dp axes = [0] dim = 0 : tensor<4xf32> -> tensor<1xf32>
  %s31 = spmd.local_slice %a31 on @dp axes = [0] dim = 0 : tensor<4xf32> -> tensor<1xf32>
  %s32 = spmd.local_slice %a32 on @dp axes = [0] dim = 0 : tensor<4xf32> -> tensor<1xf32>
  %s33 = spmd.local_slice %a33 on @dp axes = [0] dim = 0 : tensor<4xf32> -> tensor<1xf32>
  %s34 = spmd.local_slice %a34 on @dp axes = [0] dim = 0 : tensor<4xf32> -> tensor<1xf32>
  %s35 = spmd.local_slice %a35 on @dp axes = [0] dim = 0 : tensor<4xf32> -> tensor<1xf32>
  %s36 = spmd.local_slice %a36 on @dp axes = [0] dim = 0 : tensor<4xf32> -> tensor<1xf32>
  %s37 = spmd.local_slice %a37 on @dp axes = [0] dim = 0 : tensor<4xf32> -> tensor<1xf32>
  %s38 = spmd.local_slice %a38 on @dp axes = [0] dim = 0 : tensor<4xf32> -> tensor<1xf32>
  %s39 = spmd.local_slice %a39 on @dp axes = [0] dim = 0 : tensor<4xf32> -> tensor<1xf32>
  %s40 = spmd.local_slice %a40 on @dp axes = [0] dim = 0 : tensor<4xf32> -> tensor<1xf32>
  %s41 = spmd.local_slice %a41 on @dp axes = [0] dim = 0 : tensor<4xf32> -> tensor<1xf32>
  %s42 = spmd.local_slice %a42 on @dp axes = [0] dim = 0 : tensor<4xf32> -> tensor<1xf32>
  %s43 = spmd.local_slice %a43 on @dp axes = [0] dim = 0 : tensor<4xf32> -> tensor<1xf32>
  %s44 = spmd.local_slice %a44 on @dp axes = [0] dim = 0 : tensor<4xf32> -> tensor<1xf32>
  %s45 = spmd.local_slice %a45 on @dp axes = [0] dim = 0 : tensor<4xf32> -> tensor<1xf32>
  %s46 = spmd.local_slice %a46 on @dp axes = [0] dim = 0 : tensor<4xf32> -> tensor<1xf32>
  %s47 = spmd.local_slice %a47 on @dp axes = [0] dim = 0 : tensor<4xf32> -> tensor<1xf32>
  %s48 = spmd.local_slice %a48 on @dp axes = [0] dim = 0 : tensor<4xf32> -> tensor<1xf32>
  %s49 = spmd.local_slice %a49 on @dp axes = [0] dim = 0 : tensor<4xf32> -> tensor<1xf32>
  %s50 = spmd.local_slice %a50 on @dp axes = [0] dim = 0 : tensor<4xf32> -> tensor<1xf32>
  %s51 = spmd.local_slice %a51 on @dp axes = [0] dim = 0 : tensor<4xf32> -> tensor<1xf32>
  %s52 = spmd.local_slice %a52 on @dp axes = [0] dim = 0 : tensor<4xf32> -> tensor<1xf32>
  %s53 = spmd.local_slice %a53 on @dp axes = [0] dim = 0 : tensor<4xf32> -> tensor<1xf32>
  %s54 = spmd.local_slice %a54 on @dp axes = [0] dim = 0 : tensor<4xf32> -> tensor<1xf32>
  %s55 = spmd.local_slice %a55 on @dp axes = [0] dim = 0 : tensor<4xf32> -> tensor<1xf32>
  %s56 = spmd.local_slice %a56 on @dp axes = [0] dim = 0 : tensor<4xf32> -> tensor<1xf32>
  %s57 = spmd.local_slice %a57 on @dp axes = [0] dim = 0 : tensor<4xf32> -> tensor<1xf32>
  %s58 = spmd.local_slice %a58 on @dp axes = [0] dim = 0 : tensor<4xf32> -> tensor<1xf32>
  %s59 = spmd.local_slice %a59 on @dp axes = [0] dim = 0 : tensor<4xf32> -> tensor<1xf32>
  %s60 = spmd.local_slice %a60 on @dp axes = [0] dim = 0 : tensor<4xf32> -> tensor<1xf32>
  %s61 = spmd.local_slice %a61 on @dp axes = [0] dim = 0 : tensor<4xf32> -> tensor<1xf32>
  %s62 = spmd.local_slice %a62 on @dp axes = [0] dim = 0 : tensor<4xf32> -> tensor<1xf32>
  %s63 = spmd.local_slice %a63 on @dp axes = [0] dim = 0 : tensor<4xf32> -> tensor<1xf32>
  %s64 = spmd.local_slice %a64 on @dp axes = [0] dim = 0 : tensor<4xf32> -> tensor<1xf32>
  %s65 = spmd.local_slice %a65 on @dp axes = [0] dim = 0 : tensor<4xf32> -> tensor<1xf32>
  %s66 = spmd.local_slice %a66 on @dp axes = [0] dim = 0 : tensor<4xf32> -> tensor<1xf32>
  %s67 = spmd.local_slice %a67 on @dp axes = [0] dim = 0 : tensor<4xf32> -> tensor<1xf32>
  %s68 = spmd.local_slice %a68 on @dp axes = [0] dim = 0 : tensor<4xf32> -> tensor<1xf32>
  %s69 = spmd.local_slice %a69 on @dp axes = [0] dim = 0 : tensor<4xf32> -> tensor<1xf32>
  %s70 = spmd.local_slice %a70 on @dp axes = [0] dim = 0 : tensor<4xf32> -> tensor<1xf32>
  %s71 = spmd.local_slice %a71 on @dp axes = [0] dim = 0 : tensor<4xf32> -> tensor<1xf32>
  %s72 = spmd.local_slice %a72 on @dp axes = [0] dim = 0 : tensor<4xf32> -> tensor<1xf32>
  %s73 = spmd.local_slice %a73 on @dp axes = [0] dim = 0 : tensor<4xf32> -> tensor<1xf32>
  %s74 = spmd.local_slice %a74 on @dp axes = [0] dim = 0 : tensor<4xf32> -> tensor<1xf32>
  %s75 = spmd.local_slice %a75 on @dp axes = [0] dim = 0 : tensor<4xf32> -> tensor<1xf32>
  %s76 = spmd.local_slice %a76 on @dp axes = [0] dim = 0 : tensor<4xf32> -> tensor<1xf32>
  %s77 = spmd.local_slice %a77 on @dp axes = [0] dim = 0 : tensor<4xf32> -> tensor<1xf32>
  %s78 = spmd.local_slice %a78 on @dp axes = [0] dim = 0 : tensor<4xf32> -> tensor<1xf32>
  %s79 = spmd.local_slice %a79 on @dp axes = [0] dim = 0 : tensor<4xf32> -> tensor<1xf32>
  %s80 = spmd.local_slice %a80 on @dp axes = [0] dim = 0 : tensor<4xf32> -> tensor<1xf32>
  %s81 = spmd.local_slice %a81 on @dp axes = [0] dim = 0 : tensor<4xf32> -> tensor<1xf32>
  %s82 = spmd.local_slice %a82 on @dp axes = [0] dim = 0 : tensor<4xf32> -> tensor<1xf32>
  %s83 = spmd.local_slice %a83 on @dp axes = [0] dim = 0 : tensor<4xf32> -> tensor<1xf32>
  %s84 = spmd.local_slice %a84 on @dp axes = [0] dim = 0 : tensor<4xf32> -> tensor<1xf32>
  %s85 = spmd.local_slice %a85 on @dp axes = [0] dim = 0 : tensor<4xf32> -> tensor<1xf32>
  %s86 = spmd.local_slice %a86 on @dp axes = [0] dim = 0 : tensor<4xf32> -> tensor<1xf32>
  %s87 = spmd.local_slice %a87 on @dp axes = [0] dim = 0 : tensor<4xf32> -> tensor<1xf32>
  %s88 = spmd.local_slice %a88 on @dp axes = [0] dim = 0 : tensor<4xf32> -> tensor<1xf32>
  %s89 = spmd.local_slice %a89 on @dp axes = [0] dim = 0 : tensor<4xf32> -> tensor<1xf32>
  %s90 = spmd.local_slice %a90 on @dp axes = [0] dim = 0 : tensor<4xf32> -> tensor<1xf32>
  %s91 = spmd.local_slice %a91 on @dp axes = [0] dim = 0 : tensor<4xf32> -> tensor<1xf32>
  %s92 = spmd.local_slice %a92 on @dp axes = [0] dim = 0 : tensor<4xf32> -> tensor<1xf32>
  %s93 = spmd.local_slice %a93 on @dp axes = [0] dim = 0 : tensor<4xf32> -> tensor<1xf32>
  %s94 = spmd.local_slice %a94 on @dp axes = [0] dim = 0 : tensor<4xf32> -> tensor<1xf32>
  %s95 = spmd.local_slice %a95 on @dp axes = [0] dim = 0 : tensor<4xf32> -> tensor<1xf32>
  return %r0, %r1, %r2, %r3, %r4, %r5, %r6, %r7, %r8, %r9, %r10, %r11, %r12, %r13, %r14, %r15, %r16, %r17, %r18, %r19, %r20, %r21, %r22, %r23, %r24, %r25, %r26, %r27, %r28, %r29, %r30, %r31, %r32, %r33, %r34, %r35, %r36, %r37, %r38, %r39, %r40, %r41, %r42, %r43, %r44, %r45, %r46, %r47, %r48, %r49, %r50, %r51, %r52, %r53, %r54, %r55, %r56, %r57, %r58, %r59, %r60, %r61, %r62, %r63, %r64, %r65, %r66, %r67, %r68, %r69, %r70, %r71, %r72, %r73, %r74, %r75, %r76, %r77, %r78, %r79, %r80, %r81, %r82, %r83, %r84, %r85, %r86, %r87, %r88, %r89, %r90, %r91, %r92, %r93, %r94, %r95, %s0, %s1, %s2, %s3, %s4, %s5, %s6, %s7, %s8, %s9, %s10, %s11, %s12, %s13, %s14, %s15, %s16, %s17, %s18, %s19, %s20, %s21, %s22, %s23, %s24, %s25, %s26, %s27, %s28, %s29, %s30, %s31, %s32, %s33, %s34, %s35, %s36, %s37, %s38, %s39, %s40, %s41, %s42, %s43, %s44, %s45, %s46, %s47, %s48, %s49, %s50, %s51, %s52, %s53, %s54, %s55, %s56, %s57, %s58, %s59, %s60, %s61, %s62, %s63, %s64, %s65, %s66, %s67, %s68, %s69, %s70, %s71, %s72, %s73, %s74, %s75, %s76, %s77, %s78, %s79, %s80, %s81, %s82, %s83, %s84, %s85, %s86, %s87, %s88, %s89, %s90, %s91, %s92, %s93, %s94, %s95 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>
}
