#!/usr/bin/env python3
"""Sharded training's memory and speed: spmd.compile replicate vs
fully_shard, next to PyTorch's DDP and FSDP2 (torch.distributed.fsdp.
fully_shard), all on gloo / MPI, one thread per rank, in one run.

The model is state-heavy: LAYERS Linear(WIDTH, WIDTH) (+ ReLU) and AdamW,
so parameters + gradients + optimizer state dominate memory. Per mode and
rank count it prints:
  * state per rank: parameters + optimizer state this rank holds after the
    steps (spmd: the program's state buffers; torch: the local tensors of
    parameters and optimizer state), against one replicated copy;
  * peak RSS per rank (VmHWM), and the steady step median.
The target (issue #15): fully_shard's state per rank <= 1/N of replicate's
+ 10%; its step time <= FSDP2's. `--auto` also runs spmd.Auto (under
`--memory-limit` MiB per rank, default the machine's) and fully_shard
without resharding, and prints Auto's choice against every hand-written
strategy measured (issue #45: its step / the best that fits, and the rank
correlation of modeled against measured steps).

    python3 bench/fsdp.py [--ranks 2 4] [--layers 8] [--width 2048]
    python3 bench/fsdp.py --model gpt-small --batch 16 --ranks 2
    python3 bench/fsdp.py --auto [--memory-limit MIB]
"""

import argparse
import contextlib
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from auto_report import auto_report

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def peak_rss_mib():
    status = open("/proc/self/status").read()
    return int(status.split("VmHWM:")[1].split()[0]) // 1024


def train_step(model, opt, x, y):
    import torch
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    opt.zero_grad()
    return loss


def local_state_bytes(model, opt):
    import torch
    total = 0
    for p in model.parameters():
        t = p.to_local() if hasattr(p, "to_local") else p
        total += t.numel() * t.element_size()
    for st in opt.state.values():
        for v in st.values():
            if isinstance(v, torch.Tensor) and v.dim() >= 1:
                v = v.to_local() if hasattr(v, "to_local") else v
                total += v.numel() * v.element_size()
    return total


def batch(args, torch, world, rank):
    """This rank's rows of the global batch."""
    gen = torch.Generator().manual_seed(1)
    if args.model == "linear":
        x = torch.randn(args.batch, args.width, generator=gen)
        y = torch.randn(args.batch, args.width, generator=gen)
    else:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import gpt
        cfg = gpt.CONFIGS[args.model.split("-", 1)[1]]
        x = torch.randint(0, cfg["vocab"], (args.batch, cfg["block"]),
                          generator=gen)
        y = torch.randint(0, cfg["vocab"], (args.batch, cfg["block"]),
                          generator=gen)
    rows = args.batch // world
    return x[rank * rows:(rank + 1) * rows], y[rank * rows:(rank + 1) * rows]


def collective_calls(explanation):
    """{kind: calls per step} of a step's local program."""
    counts = {}
    for c in explanation.collectives:
        counts[c["op"]] = counts.get(c["op"], 0) + 1
    return counts


def worker(args):
    import torch
    calls = {}
    torch.set_num_threads(1)
    torch.manual_seed(0)
    step = train_step
    if args.model == "linear":
        layers = []
        for _ in range(args.layers):
            layers += [torch.nn.Linear(args.width, args.width),
                       torch.nn.ReLU()]
        model = torch.nn.Sequential(*layers[:-1])
        wrap = [m for m in model if isinstance(m, torch.nn.Linear)]
    else:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import gpt
        cfg = gpt.CONFIGS[args.model.split("-", 1)[1]]
        model = gpt.build_model(cfg)
        step = gpt.train_step
        wrap = list(model.blocks)
    replicated_bytes = 3 * sum(p.numel() * 4 for p in model.parameters())
    if args.worker.startswith("spmd"):
        sys.path.insert(0, os.path.join(ROOT, "python"))
        import spmd
        world, rank = spmd.world_size(), spmd.rank()
        style = args.worker.split("-", 1)[1]
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
        body = step
        if style == "auto":
            limit = args.memory_limit and int(args.memory_limit * 2**20)
            modes = {"bucketed": spmd.Auto(memory_limit=limit)}
        elif style == "fully_shard_keep":
            modes = {"bucketed": spmd.DataParallel(
                "fully_shard", reshard_after_forward=False)}
        else:
            # Collective calls per step, bucketed (the default) and not:
            # the local program has no loops, so its collectives are the
            # calls.
            modes = {"bucketed": spmd.DataParallel(parallel_style=style),
                     "unbucketed": spmd.DataParallel(parallel_style=style,
                                                     bucket_cap_mb=0)}
        steps = {name: spmd.compile(parallel_mode=mode)(body)
                 for name, mode in modes.items()}
        step = steps["bucketed"]
        calls = {}
        for name, s in steps.items():
            with contextlib.redirect_stdout(io.StringIO()):
                calls[name] = collective_calls(spmd.explain(
                    s, model, opt, *batch(args, torch, world, 0)))
    else:
        import torch.distributed as dist
        rank = int(os.environ["OMPI_COMM_WORLD_RANK"])
        world = int(os.environ["OMPI_COMM_WORLD_SIZE"])
        dist.init_process_group("gloo", rank=rank, world_size=world)
        if args.worker == "ddp":
            # DDP's gradient buckets (first 1 MiB, then 25 MiB, in reverse
            # parameter order): its all-reduce calls per step.
            params = list(reversed(list(model.parameters())))
            buckets, _ = dist._compute_bucket_assignment_by_size(
                params, [dist._DEFAULT_FIRST_BUCKET_BYTES, 25 * 1024 * 1024])
            calls = {"bucketed": {"all_reduce": len(buckets)}}
            model = torch.nn.parallel.DistributedDataParallel(model)
        else:
            from torch.distributed.fsdp import fully_shard
            for layer in wrap:
                fully_shard(layer)
            fully_shard(model)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    x, y = batch(args, torch, world, rank)
    times = []
    for _ in range(args.warmup + args.steps):
        t0 = time.perf_counter()
        float(step(model, opt, x, y))
        times.append(time.perf_counter() - t0)
    program_peak = None
    if args.worker.startswith("spmd"):
        # The compiled program's own buffers at their peak (its state
        # aside): gathered parameters, gradients, buckets, activations.
        program_peak = spmd.memory_stats()["transient_peak_bytes"]
    result = dict(rank=rank, median=statistics.median(times[args.warmup:]),
                  rss=peak_rss_mib(), state=local_state_bytes(model, opt),
                  replicated=replicated_bytes, calls=calls,
                  program_peak=program_peak)
    plan = getattr(step, "auto_plan", None)
    if plan is not None:
        result["auto"] = dict(
            chosen=plan.chosen.name, limit=plan.limit, seconds=plan.seconds,
            modeled={c.name: dict(step=c.step_s, peak=c.peak, fits=c.fits)
                     for c in plan.candidates})
    with open(f"{args.out}.{rank}", "w") as f:
        json.dump(result, f)


def launch(mode, ranks, args, tmp):
    out = os.path.join(tmp, f"{mode}-{ranks}")
    cmd = ["mpirun", "--oversubscribe", "--bind-to", "none", "-np",
           str(ranks), sys.executable, os.path.abspath(__file__),
           "--worker", mode, "--out", out, "--model", args.model,
           "--layers", str(args.layers),
           "--width", str(args.width), "--batch", str(args.batch),
           "--steps", str(args.steps), "--warmup", str(args.warmup)]
    if args.memory_limit:
        cmd += ["--memory-limit", str(args.memory_limit)]
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", MASTER_ADDR="127.0.0.1",
               MASTER_PORT=str(29500 + ranks), OMP_NUM_THREADS="1")
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True,
                          timeout=3600)
    if proc.returncode != 0:
        sys.exit(f"{mode} on {ranks} ranks failed:\n{proc.stdout}\n"
                 f"{proc.stderr}")
    return [json.load(open(f"{out}.{r}")) for r in range(ranks)]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--worker")
    parser.add_argument("--out")
    parser.add_argument("--ranks", type=int, nargs="+", default=[2, 4])
    parser.add_argument("--model", default="linear",
                        choices=["linear", "gpt-small", "gpt-large"],
                        help="linear: LAYERS x Linear(WIDTH, WIDTH); gpt-*: "
                        "bench/gpt.py's model (FSDP2 wraps each block)")
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--width", type=int, default=2048)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--auto", action="store_true",
                        help="also spmd.Auto and fully_shard without "
                        "resharding, and Auto's report")
    parser.add_argument("--memory-limit", type=float,
                        help="spmd.Auto's limit, MiB per rank")
    args = parser.parse_args()
    if args.worker:
        return worker(args)
    modes = ["spmd-replicate", "spmd-fully_shard", "ddp", "fsdp2"]
    if args.auto:
        modes[2:2] = ["spmd-fully_shard_keep", "spmd-auto"]
    mib = 1 << 20
    what = (f"{args.layers} x Linear({args.width}, {args.width})"
            if args.model == "linear" else f"bench/gpt.py {args.model}")
    print(f"{what} + AdamW, global batch {args.batch}, 1 thread per rank")
    with tempfile.TemporaryDirectory() as tmp:
        for ranks in args.ranks:
            runs = {m: launch(m, ranks, args, tmp) for m in modes}
            whole = runs["spmd-replicate"][0]["replicated"]
            print(f"\n## {ranks} ranks (parameters + AdamW state, one copy: "
                  f"{whole / mib:.1f} MiB; 1/N: {whole / ranks / mib:.1f} "
                  f"MiB)")
            print("| mode | state per rank MiB (max) | of replicated | peak "
                  "RSS MiB per rank | program buffers' peak MiB (rank 0) | "
                  "steady step ms (median, slowest rank) | collective calls "
                  "per step (bucketed; unbucketed) |")
            print("|---|---|---|---|---|---|---|")

            def show(counts):
                return ", ".join(f"{n} {k}" for k, n in sorted(
                    counts.items())) or "-"
            for m in modes:
                rs = runs[m]
                state = max(r["state"] for r in rs)
                calls = rs[0]["calls"]
                text = show(calls.get("bucketed", {}))
                if "unbucketed" in calls:
                    text += "; " + show(calls["unbucketed"])
                peak = rs[0]["program_peak"]
                print(f"| {m} | {state / mib:.1f} | {state / whole:.3f} | "
                      f"{', '.join(str(r['rss']) for r in rs)} | "
                      f"{'-' if peak is None else f'{peak / mib:.1f}'} | "
                      f"{max(r['median'] for r in rs) * 1e3:.1f} | {text} |")
            t = {m: max(r["median"] for r in runs[m]) for m in modes}
            print(f"ratios: fully_shard / FSDP2 "
                  f"{t['spmd-fully_shard'] / t['fsdp2']:.2f}, replicate / "
                  f"DDP {t['spmd-replicate'] / t['ddp']:.2f} (targets <= 1.0)"
                  f"; fully_shard state / replicate state "
                  f"{max(r['state'] for r in runs['spmd-fully_shard']) / max(r['state'] for r in runs['spmd-replicate']):.3f}"
                  f" (target <= {1 / ranks * 1.1:.3f})")
            if args.auto:
                auto_report(runs, t)


if __name__ == "__main__":
    main()
