#!/usr/bin/env python3
"""Imports a PyTorch MLP through torch-mlir (FX importer → linalg-on-tensors)
and prints it ready for spmd-opt: a mesh and a batch-sharded input spec
added to the text torch-mlir prints (IR crosses the LLVM boundary as text).
"""

import re

import torch
from torch_mlir import fx


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(8, 16)
        self.fc2 = torch.nn.Linear(16, 4)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


torch.manual_seed(0)
module = fx.export_and_import(MLP(), torch.randn(32, 8),
                              output_type="linalg-on-tensors",
                              func_name="forward")
text = str(module)
text = text.replace("module {", "module {\n  spmd.mesh @dp(shape = 2)", 1)
text = re.sub(r"func\.func @forward\(%arg0: (tensor<32x8xf32>)\)",
              r"func.func @forward(%arg0: \1 {spmd.spec = #spmd.spec<@dp, [shard<0>]>})",
              text)
print(text)
