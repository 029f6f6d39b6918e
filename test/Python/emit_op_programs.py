#!/usr/bin/env python3
"""Writes the global program spmd.compile builds for each op_check.py case
(the op with its backward and an SGD step, for a mesh of WORLD ranks) to
DIR/<case>.mlir, without compiling or running them.

    python3 emit_op_programs.py DIR WORLD [CASE ...]
"""

import sys
from pathlib import Path

import torch

import spmd
from spmd import _importer, _program, _trace
import op_check


def main():
    out, world = Path(sys.argv[1]), int(sys.argv[2])
    names = sys.argv[3:] or list(op_check.CASES)
    out.mkdir(parents=True, exist_ok=True)
    local = op_check.BATCH // world
    for name in names:
        op, target = op_check.CASES[name]
        torch.manual_seed(0)
        model = op_check.Model(op)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)

        gen = torch.Generator().manual_seed(1)
        x = torch.randn(op_check.BATCH, op_check.DIM, generator=gen)
        t = (target(gen) if target
             else torch.zeros(op_check.BATCH, dtype=torch.int64))
        traced = _trace.trace(op_check.train_step, (model, opt, x[:local], t[:local]), {},
                              world, spmd.Shard(0))
        imported = _importer.import_graph(traced.graph, _program.CALLEE)
        (out / f"{name}.mlir").write_text(
            _program.build(traced, imported, world).text)
    print(f"{len(names)} programs written to {out}")


if __name__ == "__main__":
    main()
