"""spmd.explain: what spmd.compile makes of a train step, without running it.

Traces the step as its first call would, distributes it with spmd-opt, and
reads the local program back with `spmd-opt --spmd-report-collectives`:
per parameter its placement and the collectives that reduce its gradient,
every collective of a step (kind, group, bytes per rank, overlapped or
not), the compile phases' times, and where each stage's MLIR was kept
(`SPMD_DUMP=DIR`, or a new directory), and on the CPU target the memory
plan: the local program lowered as its build would lower it, up to the
LLVM dialect, where spmd-plan-memory left its planned peak. Nothing is
built or executed, and the model and optimizer are not changed.
"""

import json
import os
import re
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List

from . import _device, _memory, _progress, _runtime, _toolchain
from ._program import ENTRY


@dataclass
class Explanation:
    """The result of spmd.explain; `str()` is the printed report."""
    world: int
    meshes: Dict[str, List[int]]
    # name -> {"role", "local", "global", "placement", "bytes"}
    state: Dict[str, dict]
    # in program order: {"op", "reduction", "mesh", "axes", "types",
    # "bytes", "async", "feeds"}
    collectives: List[dict]
    compile_times: Dict[str, float]
    stages: Dict[str, str] = field(default_factory=dict)
    # Threads per rank for BLAS and kernels, and why (_runtime.threads).
    threads: str = ""
    # The memory plan of one rank (CPU target): bytes of "state", its
    # "parameters", "gradients", "optimizer_state", "other"; the planned
    # "transient_peak" and its "activations", "whole_gradients",
    # "communication"; "peak" (state + transient) and the "limit".
    memory: Dict[str, int] = field(default_factory=dict)
    # spmd.Auto's choice (_auto.AutoPlan), None for a strategy given by hand.
    auto: object = None

    def collectives_of(self, name: str) -> List[dict]:
        """The collectives whose results reach state `name`."""
        return [c for c in self.collectives if name in c["feeds"]]

    def own_collectives(self, name: str) -> List[tuple]:
        """The collectives that carry state `name` alone, as (collective,
        None), or as a piece of a bucket, as (bucket, piece)."""
        own = []
        for c in self.collectives_of(name):
            if c["feeds"] == [name]:
                own.append((c, None))
                continue
            pieces = [p for p in c.get("pieces", []) if p["feeds"] == [name]]
            if pieces:
                own.append((c, pieces[0]))
        return own

    def __str__(self) -> str:
        kib = lambda b: f"{b / 1024:.1f} KiB"  # noqa: E731
        lines = [f"spmd.explain: {self.world} ranks, meshes "
                 + ", ".join(f"@{m} {shape}"
                             for m, shape in self.meshes.items())]
        if self.threads:
            lines.append(f"threads per rank: {self.threads}")
        params = {n: s for n, s in self.state.items() if s["role"] == "param"}
        lines.append(f"parameters ({len(params)}):")
        width = max((len(n) for n in params), default=0)
        for name, s in params.items():
            needs = ", ".join(
                f"{c['op']}{' ' + c['reduction'] if 'reduction' in c else ''}"
                f" {kib(c['bytes'])}" + (
                    f" (its {kib(piece['bytes'])} of a bucket of "
                    f"{len(c['pieces'])})" if piece else "")
                for c, piece in self.own_collectives(name)) or "none"
            lines.append(f"  {name:<{width}}  {s['global']:<24} "
                         f"{s['placement']:<12} {needs}")
        total = sum(c["bytes"] for c in self.collectives)
        lines.append(f"collectives per step: {len(self.collectives)}, "
                     f"{kib(total)} per rank")
        for c in self.collectives:
            red = f" {c['reduction']}" if "reduction" in c else ""
            lines.append(
                f"  {c['op']}{red} on @{c['mesh']} axes {c['axes']} "
                f"{' '.join(c['types'])} {c['bytes']} B"
                f"{' (overlapped)' if c['async'] else ''}"
                f" -> {', '.join(c['feeds']) or '-'}")
        if self.memory:
            m = self.memory
            mib = lambda b: f"{b / 2**20:.1f} MiB"  # noqa: E731
            lines.append(
                f"memory plan per rank: peak {mib(m['peak'])} of a limit of "
                f"{mib(m['limit'])} = state {mib(m['state'])} (parameters "
                f"{mib(m['parameters'])}, gradients {mib(m['gradients'])}, "
                f"optimizer state {mib(m['optimizer_state'])}, other "
                f"{mib(m['other'])}) + transient {mib(m['transient_peak'])} "
                f"at its peak (activations {mib(m['activations'])}, whole "
                f"gradients {mib(m['whole_gradients'])}, communication "
                f"{mib(m['communication'])})")
        if self.auto is not None:
            lines.append(str(self.auto))
        lines.append("compile phases (s): " + ", ".join(
            f"{k} {v:.2f}" for k, v in self.compile_times.items()))
        for stage, path in self.stages.items():
            lines.append(f"{stage}: {path}")
        return "\n".join(lines)


def _placement(local: str, global_: str) -> str:
    """Replicate when the local type is the global one, else the sharded
    dimensions."""
    if local == global_:
        return "Replicate()"
    dims = lambda t: t.split("<", 1)[1].rsplit("x", 1)[0].split("x")  # noqa
    sharded = [i for i, (a, b) in enumerate(zip(dims(local), dims(global_)))
               if a != b]
    return ", ".join(f"Shard({d})" for d in sharded) or "sharded"


def _states(report: List[dict]) -> Dict[str, dict]:
    return {e["name"]: e for e in report if e["kind"] == "state"}


def _report(spmd_opt: Path, module: Path) -> List[dict]:
    proc = subprocess.run(
        [str(spmd_opt), str(module), "--spmd-report-collectives",
         "-o", os.devnull], capture_output=True, text=True)
    if proc.returncode != 0:
        raise _toolchain.CompileError(
            "spmd-opt --spmd-report-collectives failed:\n"
            + proc.stderr.strip())
    return [json.loads(line) for line in proc.stdout.splitlines() if line]


def explain(step, *args, **kwargs) -> Explanation:
    """What `step` (a function decorated with @spmd.compile) becomes for
    these arguments on this job's ranks, without building or running it.
    Prints the report on rank 0 and returns it as an Explanation."""
    from .api import CompiledStep
    if not isinstance(step, CompiledStep):
        raise TypeError("spmd.explain takes a step decorated with "
                        "@spmd.compile()")
    log = _progress.CompileLog(getattr(step.fn, "__name__", "step"),
                               _runtime.rank())
    with _progress.compiling(log):
        if step.auto is not None and step.auto_plan is None:
            step._choose(args, kwargs)
        _, program = step._trace(args, kwargs)
        step._traces = step._index = None
        pipeline = step.pipeline()
        dump = os.environ.get("SPMD_DUMP")
        where = Path(dump) if dump else Path(
            tempfile.mkdtemp(prefix="spmd-explain-"))
        where = where / f"explain-{_runtime.rank()}"
        where.mkdir(parents=True, exist_ok=True)
        spmd_opt = _toolchain.build_dir() / "bin" / "spmd-opt"
        local = _report(spmd_opt,
                        _toolchain.distribute(program.text, pipeline, where))
        global_ = _states(_report(spmd_opt, where / "global.mlir"))
        plan = None
        if _runtime.target() == _device.CPU:
            plan = _plan(spmd_opt, where)
    state = {}
    for name, s in _states(local).items():
        g = global_.get(name, s)["type"]
        state[name] = {"role": s["role"], "local": s["type"], "global": g,
                       "placement": _placement(s["type"], g),
                       "bytes": s["bytes"]}
    memory = {}
    if plan is not None:
        categories = {"parameters": 0, "gradients": 0, "optimizer_state": 0,
                      "other": 0}
        for s in state.values():
            key = _memory.CATEGORY.get(s["role"], "other")
            categories[key] += s["bytes"]
        total = sum(categories.values())
        memory = dict(categories, state=total, transient_peak=plan[0],
                      activations=plan[1], whole_gradients=plan[2],
                      communication=plan[3], peak=total + plan[0],
                      limit=_memory.memory_limit())
    result = Explanation(
        threads=_runtime.threads(),
        world=_runtime.world_size(),
        meshes={e["name"]: e["shape"] for e in local if e["kind"] == "mesh"},
        state=state,
        collectives=[e for e in local if e["kind"] == "collective"],
        compile_times=log.as_dict(),
        stages={"global program": str(where / "global.mlir"),
                "local program": str(where / "local.mlir")},
        memory=memory, auto=step.auto_plan)
    if _runtime.rank() == 0:
        print(result, flush=True)
    return result


def _plan(spmd_opt: Path, where: Path):
    """The entry's memory plan (transient peak, activations, whole
    gradients, communication), from the local program lowered to the LLVM
    dialect as its build would lower it (where/llvm.mlir)."""
    tool, lowering = _toolchain.LOWERING["cpu"]
    _toolchain._run([spmd_opt.parent / tool, where / "local.mlir", *lowering,
                     "-o", where / "llvm.mlir"], f"{tool} {lowering[0]}",
                    where)
    text = (where / "llvm.mlir").read_text()
    match = re.search(r"@__spmd_memory_plan_" + re.escape(ENTRY)
                      + r"\(dense<(\[[-0-9, ]+\]|-?[0-9]+)>", text)
    if not match:
        return None
    values = json.loads(match.group(1))
    return values if isinstance(values, list) else [values] * 4
