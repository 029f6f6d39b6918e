#!/usr/bin/env python3
"""Prints the global spmd program spmd.compile builds for bench/gpt.py's
train step (its CONFIG: small or large, or tiny for the GPU emulator; AdamW;
the whole batch on a mesh of one rank), for bench/gpu/build.sh to compile
for one GPU. With --flags, prints the step driver's macros for it instead.

    python3 emit_gpt.py [small|large|tiny|gpt2] [--flags]

gpt2: bench/gpt2.py's GPT-2 124M (nanoGPT-shaped, AdamW with decay
groups), global batch 4 of 128 tokens; its driver compares the loss only.
"""

import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # bench/: gpt.py

import gpt  # noqa: E402
import spmd  # noqa: E402
from spmd import _importer, _program, _trace  # noqa: E402


# The emulator runs kernels thread by thread on the CPU: the device check's
# dry run uses this size.
TINY = dict(layers=2, heads=2, dim=32, block=16, vocab=65, batch=4)


GPT2 = dict(batch=4, block=128, vocab=50257)


def main():
    name = sys.argv[1] if len(sys.argv) > 1 else "small"
    if name == "gpt2":
        return emit_gpt2()
    cfg = TINY if name == "tiny" else gpt.CONFIGS[name]
    if "--flags" in sys.argv:
        # bridge_step_main.cpp: tokens in, next tokens as targets.
        print(f"-DROWS={cfg['batch']} -DXC={cfg['block']} -DX_I64=1 "
              f"-DX_RANGE={cfg['vocab']} -DYC={cfg['block']} -DY_I64=1 "
              f"-DY_RANGE={cfg['vocab']} -DADAM_EPS=1e-3")
        return
    model = gpt.build_model(cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x = torch.zeros(cfg["batch"], cfg["block"], dtype=torch.int64)
    traced = _trace.trace(gpt.train_step, (model, opt, x, x), {}, 1,
                          spmd.Shard(0))
    imported = _importer.import_graph(traced.graph, _program.CALLEE)
    print(_program.build(traced, imported, 1).text)


def emit_gpt2():
    import gpt2
    if "--flags" in sys.argv:
        print(f"-DROWS={GPT2['batch']} -DXC={GPT2['block']} -DX_I64=1 "
              f"-DX_RANGE={GPT2['vocab']} -DYC={GPT2['block']} -DY_I64=1 "
              f"-DY_RANGE={GPT2['vocab']} -DONLY_OUTPUTS -DTOLERANCE=1e-4")
        return
    model = gpt2.gpt2()
    opt = gpt2.adamw(model)
    x = torch.zeros(GPT2["batch"], GPT2["block"], dtype=torch.int64)
    traced = _trace.trace(gpt2.train_step, (model, opt, x, x), {}, 1,
                          spmd.Shard(0))
    imported = _importer.import_graph(traced.graph, _program.CALLEE)
    print(_program.build(traced, imported, 1).text)


if __name__ == "__main__":
    main()
