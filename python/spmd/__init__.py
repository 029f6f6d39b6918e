"""spmd: compile a PyTorch train step into one SPMD program.

    import spmd

    @spmd.compile()
    def train_step(model, opt, x, y):
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss

    loss = train_step(model, opt, x_local, y_local)  # mpirun -np N python3 ...

The first call traces forward and backward (make_fx), captures the optimizer
as one `spmd.sgd` / `spmd.adam` op per parameter group, imports the graph
through torch-mlir, distributes it with spmd-opt over the MPI ranks, compiles
it and caches the result; later calls with the same shapes run it.
"""

from .api import (Auto, ColwiseParallel, DataParallel, Override,
                  RowwiseParallel, TensorParallel, compile, run_passes)
from ._explain import Explanation, explain
from ._profile import profile
from .placement import Placement, Replicate, Shard, override_placement
from ._errors import UnsupportedError
from ._sharding import (full_state_dict, load_sharded_state_dict,
                        sharded_state_dict)
from ._toolchain import CompileError
from ._memory import memory_stats
from ._runtime import rank, reset_peak_memory_stats, world_size

__all__ = [
    "compile", "Override", "DataParallel", "run_passes", "Placement",
    "Replicate", "Shard", "override_placement", "UnsupportedError",
    "CompileError", "rank", "world_size", "explain", "Explanation",
    "memory_stats", "reset_peak_memory_stats", "profile", "full_state_dict",
    "sharded_state_dict", "load_sharded_state_dict",
    "TensorParallel", "ColwiseParallel", "RowwiseParallel", "Auto",
]
