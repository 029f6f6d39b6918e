#!/usr/bin/env python3
"""Prints the global spmd program spmd.compile builds for bench/gpt.py's
train step (its CONFIG: small or large; AdamW; the whole batch on a mesh of
one rank), for bench/gpu/build.sh to compile for one GPU.

    python3 emit_gpt.py [small|large]
"""

import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # bench/: gpt.py

import gpt  # noqa: E402
import spmd  # noqa: E402
from spmd import _importer, _program, _trace  # noqa: E402


def main():
    cfg = gpt.CONFIGS[sys.argv[1] if len(sys.argv) > 1 else "small"]
    model = gpt.build_model(cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x = torch.zeros(cfg["batch"], cfg["block"], dtype=torch.int64)
    traced = _trace.trace(gpt.train_step, (model, opt, x, x), {}, 1,
                          spmd.Shard(0))
    imported = _importer.import_graph(traced.graph, _program.CALLEE)
    print(_program.build(traced, imported, 1).text)


if __name__ == "__main__":
    main()
