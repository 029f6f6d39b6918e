"""spmd.Auto: the compiler chooses the data-parallel strategy of a step.

For the step's first call, rank 0 builds the step's global program once per
candidate strategy (the trace is shared: make_fx runs once), distributes it
and lowers it as its build would (spmd-opt only, no LLVM), and reads off
each candidate's

  * memory: the planned peak per rank (state + spmd-plan-memory's transient
    peak), exact for the program that will run (CPU target);
  * modeled step time: the local program's matmul FLOPs at the machine's
    measured sgemm rate, plus the optimizer's state traffic at its measured
    memory bandwidth, plus each collective of the step (kind, bytes per
    rank, as spmd-report-collectives lists them) at the latency and
    bandwidth measured for that kind on this job's ranks.

It picks the fastest modeled candidate whose peak fits the memory limit
(Auto(memory_limit=...), default SPMD_MEMORY_LIMIT or the machine's memory
over the ranks on it) and tells every rank (one collective): the ranks run
rank 0's choice, so the plan is the same everywhere. The calibration is
measured once per machine, job size, backend and threads per rank, and kept
in the compile cache (calibration-*.json); the choice is kept too, by the
program, the ranks, the limit and the calibration, so a later process
choosing for the same step evaluates nothing. Auto(calibration=...) gives
the figures instead of measuring them: the same figures give the same plan
whatever else runs on the machine at the first call.

Candidates today: DataParallel("replicate"), DataParallel("fully_shard")
with and without reshard_after_forward, on the one-axis mesh of every rank,
and a per-parameter mix: the dialect's spmd-auto-shard pass, given the
replicate program, the limit, the same figures and replicate's planned
activations and communication buffers as its reserve, shards the
parameters whose state must go and keeps the rest replicated
(DataParallel("fully_shard", sharded_params=...,
reshard_after_forward=False)); the mix is weighed as the others are
(lowered, its peak planned), and only when it is neither none nor all of
the parameters. Tensor-parallel plans and other mesh
shapes are not searched (docs/Limits.md).
"""

import contextlib
import hashlib
import json
import math
import os
import platform
import re
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import torch

from . import _abi, _device, _explain, _memory, _progress, _runtime
from . import _toolchain
from ._errors import UnsupportedError

# The calibration's version: a change in what is measured or how makes the
# stored figures stale.
_CALIBRATION_VERSION = 1
# Collective sizes measured (bytes per rank): one small for the latency, one
# large for the bandwidth.
_SMALL, _LARGE = 64 * 1024, 8 * 1024 * 1024
_KINDS = ("all_reduce", "all_gather", "reduce_scatter")
# The stored choice's version: a change in the candidates weighed (2: the
# per-parameter mix) makes stored choices stale.
_DECISION_VERSION = 2


@dataclass
class Candidate:
    """One evaluated strategy: its name, the DataParallel it compiles as,
    the planned peak per rank (bytes; None where the target plans none) and
    the modeled step time by part (seconds)."""
    name: str
    parallel: object
    peak: Optional[int] = None
    state: int = 0
    compute_s: float = 0.0
    optimizer_s: float = 0.0
    communication_s: float = 0.0
    collectives: int = 0
    fits: bool = True
    # The planned activations and communication buffers (rank 0's
    # evaluation only): spmd-auto-shard's reserve for what its model does
    # not count.
    unmodeled: int = 0

    @property
    def step_s(self) -> float:
        return self.compute_s + self.optimizer_s + self.communication_s

    def line(self) -> str:
        peak = "peak not planned" if self.peak is None else \
            f"peak {self.peak / 2**20:,.1f} MiB"
        return (f"{self.name}: modeled step {self.step_s * 1e3:.1f} ms "
                f"(compute {self.compute_s * 1e3:.1f}, optimizer "
                f"{self.optimizer_s * 1e3:.1f}, {self.collectives} "
                f"collectives {self.communication_s * 1e3:.1f}), {peak}"
                + ("" if self.fits else " (over the limit)"))


@dataclass
class AutoPlan:
    """What spmd.Auto chose and why (`str()` is the report spmd.explain
    prints): the candidates best first, the memory limit, the calibration."""
    chosen: Candidate
    candidates: List[Candidate]
    limit: int
    calibration: Dict[str, float]
    from_cache: bool = False
    seconds: float = 0.0

    def __str__(self) -> str:
        c = self.calibration
        lines = [f"spmd.Auto chose {self.chosen.name} (limit "
                 f"{self.limit / 2**20:,.1f} MiB per rank; chosen in "
                 f"{self.seconds:.1f} s"
                 + (", from the cache" if self.from_cache else "") + ")"]
        for cand in self.candidates:
            lines.append(("  * " if cand is self.chosen else "    ")
                         + cand.line())
        lines.append(
            f"  calibration: sgemm {c['gemm_gflops']:.1f} GFLOP/s, memory "
            f"{c['memory_gbps']:.1f} GB/s, " + ", ".join(
                f"{k} {c[k + '_latency_us']:.0f} us + "
                f"{c[k + '_gbps']:.2f} GB/s" for k in _KINDS))
        return "\n".join(lines)


def _common(auto) -> dict:
    return dict(input_batch_dim=auto.input_batch_dim, inputs=auto.inputs,
                bucket_cap_mb=auto.bucket_cap_mb)


def mix_candidate(auto, names: Tuple[str, ...], total: int) -> Candidate:
    """The per-parameter plan sharding `names` (of `total` parameters)."""
    from .api import DataParallel
    return Candidate(
        f"DataParallel('fully_shard', sharded_params=<{len(names)} of "
        f"{total}: spmd-auto-shard>, reshard_after_forward=False)",
        DataParallel("fully_shard", reshard_after_forward=False,
                     sharded_params=names, **_common(auto)))


def candidates(auto) -> List[Candidate]:
    """The hand-written strategies spmd.Auto weighs, as DataParallel
    modes."""
    from .api import DataParallel
    common = _common(auto)
    return [
        Candidate("DataParallel('replicate')",
                  DataParallel("replicate", **common)),
        Candidate("DataParallel('fully_shard')",
                  DataParallel("fully_shard", **common)),
        Candidate("DataParallel('fully_shard', reshard_after_forward=False)",
                  DataParallel("fully_shard", reshard_after_forward=False,
                               **common)),
    ]


# --- calibration -----------------------------------------------------------


def _calibration_key() -> str:
    cpu = ""
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((line.split(":", 1)[1].strip() for line in f
                        if line.startswith("model name")), "")
    except OSError:
        pass
    parts = [_CALIBRATION_VERSION, platform.node(), cpu, os.cpu_count(),
             _runtime.world_size(), _memory._local_ranks(),
             _runtime.backend(), _runtime.target(), torch.get_num_threads()]
    return hashlib.sha256(repr(parts).encode()).hexdigest()[:16]


def _seconds(fn, repeat=3) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def _measure_collective(kind: str, nbytes: int) -> float:
    """Seconds of one `kind` collective over every rank, `nbytes` per rank
    (the input's bytes; as spmd-report-collectives counts them)."""
    lib = _runtime.runtime()
    world = _runtime.world_size()
    f32 = _abi.dtype_code("F32")
    mesh, axes = _runtime._world_mesh()
    count = max(world, nbytes // 4 // world * world)
    source = torch.ones(count)
    if kind == "all_gather":
        out = torch.empty(count * world)
    elif kind == "reduce_scatter":
        out = torch.empty(count // world)
    else:
        out = torch.empty(count)
    src, _ = _runtime.device().staged(source, slot=0)
    dst, _ = _runtime.device().staged(out, slot=1)
    total = _abi.reduction_code("SUM")

    def run():
        if kind == "all_reduce":
            lib.spmdAllReduce(src, dst, count, f32, total, mesh, axes)
        elif kind == "all_gather":
            lib.spmdAllGather(src, dst, 1, count, 1, f32, mesh, axes)
        else:
            lib.spmdReduceScatter(src, dst, 1, count, 1, f32, total, mesh,
                                  axes)
    run()  # first use: connections, registrations
    # Every rank's best of three, the slowest rank's figure.
    return _runtime.all_ranks_max(int(_seconds(run) * 1e9)) / 1e9


def _measure() -> Dict[str, float]:
    """This job's figures (every rank takes part; each gets the slowest
    rank's collective times)."""
    a = torch.randn(1024, 768)
    b = torch.randn(768, 768)
    gemm = _seconds(lambda: torch.mm(a, b))
    x = torch.empty(16 * 2**20 // 4)
    y = torch.empty_like(x)
    x.fill_(1.0)
    y.copy_(x)
    copy = _seconds(lambda: y.copy_(x))
    result = {"gemm_gflops": 2 * 1024 * 768 * 768 / gemm / 1e9,
              # a copy reads and writes each byte
              "memory_gbps": 2 * x.numel() * 4 / copy / 1e9}
    for kind in _KINDS:
        small = _measure_collective(kind, _SMALL)
        large = _measure_collective(kind, _LARGE)
        slope = max(large - small, 1e-9) / (_LARGE - _SMALL)
        result[kind + "_latency_us"] = max(small - slope * _SMALL, 0) * 1e6
        result[kind + "_gbps"] = 1 / slope / 1e9
    return result


_CALIBRATION_KEYS = ("gemm_gflops", "memory_gbps") + tuple(
    k + suffix for k in _KINDS for suffix in ("_latency_us", "_gbps"))


def given_calibration(given) -> Dict[str, float]:
    """spmd.Auto(calibration=...)'s figures, checked: a dict or the path of
    a JSON file holding every key of a measured calibration, each a finite
    number (rates positive, latencies not negative)."""
    where = "spmd.Auto(calibration=...)"
    if isinstance(given, (str, os.PathLike)):
        where = f"spmd.Auto(calibration={str(given)!r})"
        try:
            given = json.loads(Path(given).read_text())
        except (OSError, ValueError) as err:
            raise ValueError(f"{where}: cannot read a JSON calibration: "
                             f"{err}") from None
    if not isinstance(given, dict):
        raise ValueError(f"{where} is a dict or a JSON file's path, got "
                         f"{type(given).__name__}")
    missing = [k for k in _CALIBRATION_KEYS if k not in given]
    unknown = sorted(set(given) - set(_CALIBRATION_KEYS))
    if missing or unknown:
        raise ValueError(
            f"{where}: " + "; ".join(
                part for part in (
                    missing and "missing " + ", ".join(missing),
                    unknown and "unknown " + ", ".join(unknown)) if part)
            + f" (the keys are {', '.join(_CALIBRATION_KEYS)})")
    figures = {}
    for k in _CALIBRATION_KEYS:
        v = given[k]
        ok = isinstance(v, (int, float)) and not isinstance(v, bool) \
            and math.isfinite(v) and (v >= 0 if k.endswith("_us") else v > 0)
        if not ok:
            raise ValueError(f"{where}: {k} is a finite number "
                             + ("not below 0" if k.endswith("_us")
                                else "above 0") + f", got {v!r}")
        figures[k] = float(v)
    return figures


def calibration(given=None) -> Dict[str, float]:
    """The figures to model with: `given` (spmd.Auto(calibration=...),
    already checked) as is, else the job's measured figures, read from the
    compile cache or measured now by every rank (collective: call on every
    rank)."""
    if given is not None:
        return given
    path = _toolchain.cache_dir() / f"calibration-{_calibration_key()}.json"
    stored = None
    if path.exists():
        try:
            stored = json.loads(path.read_text())
        except ValueError:
            stored = None
    # Every rank measures, or none: the collectives need them all.
    if _runtime.all_ranks_min(int(stored is not None)):
        return stored
    with _progress.phase("auto: calibration"):
        measured = _measure()
    if _runtime.rank() == 0:
        _toolchain.write_whole(path, json.dumps(measured).encode())
    return measured


# --- the model -------------------------------------------------------------

_TENSOR = r"tensor<([0-9?x]+)x[a-z0-9]+>"
_MATMUL = re.compile(r"linalg\.(batch_)?matmul\b[^\n]*?ins\((%[\w.]+), "
                     r"(%[\w.]+)\s*:\s*" + _TENSOR + r",\s*" + _TENSOR
                     + r"\)[^\n]*?outs\([^:]*:\s*" + _TENSOR + r"\)")
_DEF = re.compile(r"^\s*(%[\w.]+)(?::\d+)? = ([\w.]+)(.*)$", re.M)
# Ops a one-hot matrix passes through unchanged in value.
_RESHAPES = ("linalg.transpose", "tensor.collapse_shape",
             "tensor.expand_shape", "tensor.cast")


def _dims(text: str) -> List[Optional[int]]:
    return [None if d == "?" else int(d) for d in text.split("x")]


def _operands(rest: str, keyword: str) -> List[tuple]:
    """(name, dims) of an op's `keyword(%a, %b : tensor<..>, tensor<..>)`
    operands that are ranked tensors."""
    match = re.search(keyword + r"\(([^:)]*):([^)]*)\)", rest)
    if not match:
        return []
    names = re.findall(r"%[\w.]+", match.group(1))
    types = re.findall(r"tensor<([0-9?x]+)x[a-z0-9]+>", match.group(2))
    return list(zip(names, (_dims(t) for t in types)))


def _bound(name: str, dim: int, defs: Dict[str, tuple], depth: int = 0):
    """An upper bound of dimension `dim` of the dynamically shaped value
    `name` (fully_shard's uneven chunks: a slice of a static tensor), found
    through slices, transposes and elementwise ops; None if unknown."""
    if depth > 12 or name not in defs:
        return None
    op, rest = defs[name]
    if op == "tensor.extract_slice":
        types = re.search(r":\s*tensor<([0-9?x]+)x[a-z0-9]+>\s+to\s+"
                          r"tensor<([0-9?x]+)x", rest)
        source = re.match(r"\s*(%[\w.]+)", rest)
        if types and source:
            src, dst = _dims(types.group(1)), _dims(types.group(2))
            if len(src) == len(dst):
                return src[dim] if src[dim] is not None else _bound(
                    source.group(1), dim, defs, depth + 1)
        return None
    if op == "linalg.transpose":
        perm = re.search(r"permutation = \[([0-9, ]+)\]", rest)
        ins = _operands(rest, "ins")
        if perm and ins:
            src = int(perm.group(1).split(",")[dim])
            return ins[0][1][src] if ins[0][1][src] is not None else \
                _bound(ins[0][0], src, defs, depth + 1)
        return None
    if op == "linalg.matmul":
        ins = _operands(rest, "ins")
        if len(ins) == 2:
            a, b = ins
            which, d = (a, 0) if dim == 0 else (b, 1)
            return which[1][d] if which[1][d] is not None else _bound(
                which[0], d, defs, depth + 1)
        return None
    # Elementwise ops and fills: an operand of the result's rank (a static
    # 1 there is a broadcast, not the size).
    for keyword in ("ins", "outs"):
        for operand, dims in _operands(rest, keyword):
            if dim < len(dims) and dims[dim] not in (None, 1):
                return dims[dim]
        for operand, dims in _operands(rest, keyword):
            if dim < len(dims) and dims[dim] is None:
                found = _bound(operand, dim, defs, depth + 1)
                if found is not None:
                    return found
    return None


def _one_hot(name: str, defs: Dict[str, tuple], depth: int = 0) -> bool:
    """Whether value `name` is a one-hot matrix: a linalg.generic over a
    boolean tensor (an embedding's lookup or its gradient: the CPU codegen
    turns the matmul that reads it into row gathers or scatter-adds,
    spmd-scatter-one-hot-contractions), seen through reshapes."""
    if depth > 6 or name not in defs:
        return False
    op, rest = defs[name]
    if op == "linalg.generic":
        ins = re.search(r"ins\(([^)]*)\)", rest)
        return bool(ins and re.search(r"x?i1>", ins.group(1)))
    if op in _RESHAPES:
        source = re.search(r"(%[\w.]+)", rest)
        return bool(source) and _one_hot(source.group(1), defs, depth + 1)
    return False


def matmul_flops(local_text: str) -> int:
    """The multiply-adds (x2) of the local program's matmuls per step, but
    for one-hot contractions (no matmul runs for them); a dynamic size (an
    uneven chunk) counts as its upper bound."""
    defs = {m.group(1): (m.group(2), m.group(3))
            for m in _DEF.finditer(local_text)}
    flops = 0
    for match in _MATMUL.finditer(local_text):
        a_name, b_name = match.group(2), match.group(3)
        if _one_hot(a_name, defs) or _one_hot(b_name, defs):
            continue
        a, b, out = (_dims(match.group(i)) for i in (4, 5, 6))
        if match.group(1):  # batch_matmul: static sizes only
            if None in a + b + out:
                continue
            flops += 2 * out[0] * out[1] * a[2] * out[2]
            continue

        def size(*choices):
            for dims, d, name in choices:
                if dims[d] is not None:
                    return dims[d]
            for dims, d, name in choices:
                found = _bound(name, d, defs)
                if found is not None:
                    return found
            return 0
        m = size((a, 0, a_name), (out, 0, None))
        k = size((a, 1, a_name), (b, 0, b_name))
        n = size((b, 1, b_name), (out, 1, None))
        flops += 2 * m * k * n
    return flops


def _model(cand: Candidate, local_text: str, report: List[dict],
           cal: Dict[str, float]):
    states = [e for e in report if e["kind"] == "state"]
    optimizer = sum(s["bytes"] for s in states if s["role"] in
                    ("param", "gradient", "optimizer_state"))
    cand.state = sum(s["bytes"] for s in states)
    cand.compute_s = matmul_flops(local_text) / (cal["gemm_gflops"] * 1e9)
    # The update reads each of these states and writes most: ~2x.
    cand.optimizer_s = 2 * optimizer / (cal["memory_gbps"] * 1e9)
    seconds = 0.0
    collectives = [e for e in report if e["kind"] == "collective"]
    for c in collectives:
        kind = c["op"] if c["op"] in _KINDS else "all_reduce"
        seconds += cal[kind + "_latency_us"] * 1e-6 + \
            c["bytes"] / (cal[kind + "_gbps"] * 1e9)
    cand.communication_s = seconds
    cand.collectives = len(collectives)


def _prepare(step, cand: Candidate, args, kwargs, work: Path):
    """`cand`'s global program and pipeline, and the directory its stages
    go to (this thread: it compiles with the step)."""
    step._use(cand.parallel)
    _, program = step._trace(args, kwargs)
    where = work / re.sub(r"[^a-z_]+", "-", cand.name.lower()).strip("-")
    where.mkdir(parents=True, exist_ok=True)
    return program.text, step.pipeline(), where


def _lower(cand: Candidate, text: str, pipeline: str, where: Path, cal):
    """Distributes and lowers `cand`'s program and reads off its figures
    (spmd-opt processes only: candidates run side by side)."""
    spmd_opt = _toolchain.build_dir() / "bin" / "spmd-opt"
    local = _toolchain.distribute(text, pipeline, where)
    report = _explain._report(spmd_opt, local)
    _model(cand, local.read_text(), report, cal)
    if _runtime.target() == _device.CPU:
        plan = _explain._plan(spmd_opt, where)
        if plan is not None:
            cand.peak = cand.state + plan[0]
            cand.unmodeled = plan[1] + plan[3]


def _workers() -> int:
    """Candidates lowered at once on rank 0: its cores (the other ranks
    sleep in the collective that waits for the choice)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


def _evaluate_all(step, auto, cands: List[Candidate], args, kwargs, cal,
                  limit: int, work: Path, shardable: int, total: int):
    """Weighs the hand-written candidates side by side, then the
    per-parameter mix (its reserve is replicate's plan, the first
    candidate's; `shardable` of the model's `total` parameters may be
    sharded); returns the mix's selection (None: no mix weighed)."""
    prepared = [_prepare(step, c, args, kwargs, work) for c in cands]
    with ThreadPoolExecutor(max_workers=_workers()) as pool:
        futures = [pool.submit(_lower, c, *p, cal)
                   for c, p in zip(cands, prepared)]
        futures[0].result()
        mix = per_parameter(step, args, kwargs, cands[0], limit, cal, work)
        # Only where it is neither hand-written plan (no parameter or every
        # shardable one sharded).
        if mix is not None and 0 < len(mix) < shardable:
            cands.append(mix_candidate(auto, mix, total))
            futures.append(pool.submit(
                _lower, cands[-1], *_prepare(step, cands[-1], args, kwargs,
                                             work), cal))
        else:
            mix = None
        for f in futures:
            f.result()
    return mix


# A parameter state spmd-auto-shard sharded: its symbol, bare or quoted.
_SHARDED_PARAM = re.compile(
    r'^\s*spmd\.state @(?:"((?:[^"\\]|\\.)*)"|([^\s:]+)) : \S+ '
    r'role = param spec = ', re.M)


def _model_of(args, kwargs):
    from torch.utils import _pytree as pytree
    leaves, _ = pytree.tree_flatten((args, kwargs))
    return next((x for x in leaves if isinstance(x, torch.nn.Module)), None)


def per_parameter(step, args, kwargs, replicate: Candidate, limit: int,
                  cal: Dict[str, float], work: Path) -> Optional[tuple]:
    """The parameters spmd-auto-shard shards in the replicate program under
    `limit` (replicate's planned activations and communication buffers kept
    as its reserve), by FQN; None where its plan does not fit either."""
    from .api import _model_prefix
    model = _model_of(args, kwargs)
    if model is None:
        return None
    step._use(replicate.parallel)
    _, program = step._trace(args, kwargs)
    where = work / "spmd-auto-shard"
    where.mkdir(parents=True, exist_ok=True)
    (where / "calibration.json").write_text(json.dumps(cal))
    (where / "global.mlir").write_text(program.text)
    reserve = replicate.unmodeled
    option = (f"--spmd-auto-shard=memory-limit={limit} reserve={reserve} "
              f"calibration={where / 'calibration.json'}")
    spmd_opt = _toolchain.build_dir() / "bin" / "spmd-opt"
    proc = subprocess.run(
        [str(spmd_opt), str(where / "global.mlir"), option, "-o",
         str(where / "sharded.mlir")], capture_output=True, text=True)
    if proc.returncode != 0:
        if "does not fit the memory limit" in proc.stderr:
            return None
        raise _toolchain.CompileError(
            "spmd-opt --spmd-auto-shard failed:\n" + proc.stderr.strip())
    prefix = _model_prefix(model)
    chosen = set()
    for quoted, bare in _SHARDED_PARAM.findall(
            (where / "sharded.mlir").read_text()):
        name = bare or re.sub(r"\\(.)", r"\1", quoted)
        if name.startswith(prefix):
            chosen.add(name[len(prefix):])
    return tuple(n for n, _ in model.named_parameters() if n in chosen)


def _share_selection(model, names: Optional[tuple]) -> Optional[tuple]:
    """Rank 0's per-parameter selection on every rank (one collective over
    the model's parameters, in their order)."""
    params = [n for n, _ in model.named_parameters()]
    if _runtime.rank() == 0:
        chosen = set(names or ())
        values = [int(names is not None)] + [int(n in chosen) for n in params]
    else:
        values = [-1] * (1 + len(params))
    values = _runtime._all_reduce_i64(values, "MAX")
    if not values[0]:
        return None
    return tuple(n for n, v in zip(params, values[1:]) if v)


def _decision_path(step, args, kwargs, limit, cal) -> Path:
    from torch.utils import _pytree as pytree
    leaves, _ = pytree.tree_flatten((args, kwargs))
    model = _model_of(args, kwargs)
    context = step._context(leaves, model) if model is not None else ()
    key = repr((_DECISION_VERSION, context, _runtime.world_size(),
                _runtime.target(), limit, sorted(cal.items()), step.auto,
                step.passes))
    digest = hashlib.sha256(key.encode()).hexdigest()[:24]
    return _toolchain.cache_dir() / f"auto-{digest}.json"


_FIGURES = ("peak", "state", "compute_s", "optimizer_s", "communication_s",
            "collectives")


def _share(cands: List[Candidate]):
    """Rank 0's figures of every candidate on every rank (one collective;
    times in whole nanoseconds)."""
    values = []
    for c in cands:
        for k in _FIGURES:
            v = getattr(c, k)
            values.append(-1 if v is None else
                          int(round(v * 1e9)) if k.endswith("_s") else int(v))
    if _runtime.rank() != 0:
        values = [-2**62] * len(values)
    values = iter(_runtime._all_reduce_i64(values, "MAX"))
    for c in cands:
        for k in _FIGURES:
            v = next(values)
            setattr(c, k, None if v == -1 and k == "peak" else
                    v / 1e9 if k.endswith("_s") else v)


def choose(step, args, kwargs) -> AutoPlan:
    """Rank 0 weighs the candidates for this call's arguments; every rank
    gets its figures and makes the same choice (collective: call on every
    rank)."""
    auto = step.auto
    world = _runtime.world_size()
    if auto.mesh is not None and tuple(auto.mesh) != (world,):
        _runtime.agree_on_failure(UnsupportedError(
            f"spmd.Auto(mesh={tuple(auto.mesh)}): on {world} ranks only the "
            f"one-axis mesh ({world},) is searched today",
            hint="leave mesh=None, or pick a spmd.TensorParallel plan by "
            "hand"))
    limit = auto.memory_limit or _memory.memory_limit()
    start = time.perf_counter()
    cal = calibration(auto.calibration)
    cands = candidates(auto)
    model = _model_of(args, kwargs)
    total = 0 if model is None else len(list(model.parameters()))
    error, from_cache, mix = None, False, None
    if _runtime.rank() == 0:
        try:
            path = _decision_path(step, args, kwargs, limit, cal)
            stored = json.loads(path.read_text()) if path.exists() else None
            if stored is not None:
                if stored.get("sharded_params") is not None:
                    mix = tuple(stored["sharded_params"])
                    cands.append(mix_candidate(auto, mix, total))
                for cand, figures in zip(cands, stored["candidates"]):
                    for k, v in figures.items():
                        setattr(cand, k, v)
                from_cache = True
            else:
                # SPMD_DUMP=DIR keeps each candidate's stages in
                # DIR/auto/<candidate>.
                dump = os.environ.get("SPMD_DUMP")
                with contextlib.ExitStack() as stack:
                    work = Path(dump) / "auto" if dump else Path(
                        stack.enter_context(tempfile.TemporaryDirectory(
                            prefix="spmd-auto-")))
                    shardable = 0 if model is None else sum(
                        p.dim() >= 1 for p in model.parameters())
                    with _progress.phase("auto: candidates"):
                        mix = _evaluate_all(step, auto, cands, args, kwargs,
                                            cal, limit, work, shardable,
                                            total)
                _toolchain.write_whole(path, json.dumps({
                    "candidates": [{k: getattr(c, k) for k in _FIGURES}
                                   for c in cands],
                    "sharded_params": mix}).encode())
        except Exception as err:  # every rank raises it (agree_on_failure)
            error = err
    _runtime.agree_on_failure(error)
    if model is not None:
        mix = _share_selection(model, mix)
        if mix is not None and _runtime.rank() != 0:
            cands.append(mix_candidate(auto, mix, total))
    _share(cands)
    for cand in cands:
        cand.fits = cand.peak is None or cand.peak <= limit
    chosen = cands[_pick(cands, limit)]
    step._use(chosen.parallel)
    return AutoPlan(chosen, sorted(cands, key=lambda c: (not c.fits,
                                                         c.step_s)),
                    limit, cal, from_cache, time.perf_counter() - start)


def _pick(cands: List[Candidate], limit: int) -> int:
    """The fastest modeled candidate that fits; none fitting, a MemoryError
    that gives every candidate's peak."""
    fitting = [i for i, c in enumerate(cands)
               if c.peak is None or c.peak <= limit]
    if not fitting:
        raise MemoryError(
            f"spmd.Auto: no strategy fits the memory limit of "
            f"{limit / 2**20:,.1f} MiB per rank: " + "; ".join(
                f"{c.name} needs {c.peak / 2**20:,.1f} MiB" for c in cands)
            + ". More ranks, a smaller batch or sequence, or "
            "spmd.checkpoint (activations) would lower the peak.")
    return min(fitting, key=lambda i: (cands[i].step_s, i))
