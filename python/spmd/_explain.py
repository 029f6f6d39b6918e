"""spmd.explain: what spmd.compile makes of a train step, without running it.

Traces the step as its first call would, distributes it with spmd-opt, and
reads the local program back with `spmd-opt --spmd-report-collectives`:
per parameter its placement and the collectives that reduce its gradient,
every collective of a step (kind, group, bytes per rank, overlapped or
not), the compile phases' times, and where each stage's MLIR was kept
(`SPMD_DUMP=DIR`, or a new directory). Nothing is built or executed, and
the model and optimizer are not changed.
"""

import json
import os
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List

from . import _progress, _runtime, _toolchain


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
        _, program = step._trace(args, kwargs)
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
    state = {}
    for name, s in _states(local).items():
        g = global_.get(name, s)["type"]
        state[name] = {"role": s["role"], "local": s["type"], "global": g,
                       "placement": _placement(s["type"], g),
                       "bytes": s["bytes"]}
    result = Explanation(
        threads=_runtime.threads(),
        world=_runtime.world_size(),
        meshes={e["name"]: e["shape"] for e in local if e["kind"] == "mesh"},
        state=state,
        collectives=[e for e in local if e["kind"] == "collective"],
        compile_times=log.as_dict(),
        stages={"global program": str(where / "global.mlir"),
                "local program": str(where / "local.mlir")})
    if _runtime.rank() == 0:
        print(result, flush=True)
    return result
