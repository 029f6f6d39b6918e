#!/usr/bin/env python3
"""Prints the global spmd program spmd.compile builds for a train_check.py
case (traced, imported through torch-mlir, wrapped with state, specs and the
optimizer op), for a mesh of WORLD ranks, without compiling or running it.

    python3 emit_program.py CASE [WORLD] [bf16|f16|fully_shard]
        (bf16/f16: forward under autocast; fully_shard: that parallel style)
"""

import sys

import torch

import spmd
from spmd import _importer, _program, _trace, api
import train_check


def main():
    case = sys.argv[1]
    world = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    model, opt, loss_fn = train_check.setup(case)

    option = sys.argv[3] if len(sys.argv) > 3 else None
    fully_shard = option == "fully_shard"
    kind = None if fully_shard else option
    train_step = train_check.make_step(loss_fn, kind)
    x, y = train_check.data(case, torch.Generator().manual_seed(1))
    local = train_check.GLOBAL_BATCH // world
    traced = _trace.trace(train_step, (model, opt, x[:local], y[:local]), {},
                          world, spmd.Shard(0))
    imported = _importer.import_graph(traced.graph, _program.CALLEE)
    mesh, _, layouts, _ = api._layouts(spmd.DataParallel(
        parallel_style="fully_shard" if fully_shard else "replicate"),
        model, world)
    print(_program.build(traced, imported, world, mesh=mesh, layouts=layouts,
                         gather_first_axis=fully_shard).text)


if __name__ == "__main__":
    main()
