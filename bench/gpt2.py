#!/usr/bin/env python3
"""GPT-2 124M at real size: spmd.compile next to eager, DDP, FSDP2 and
torch.compile + DDP, side by side in one run. Not a test: prints figures.

The model is nanoGPT's GPT-2 (12 layers, 12 heads, d=768, vocabulary
50257, context 1024, tied head, GELU(tanh), F.scaled_dot_product_attention
(is_causal=True), no dropout) and its AdamW (lr 6e-4, betas (0.9, 0.95),
weight decay 0.1 on matrices and embeddings, none on biases and norms), one
step = forward, backward, clip-free update, zero_grad. Every mode starts
from the same initialization and data and runs the same steps, one thread
per rank (spmd sizes its own threads: the runtime's share of the cores;
the others get OMP_NUM_THREADS=1 as torchrun gives them):

  * eager: one process, the whole global batch (the loss reference);
  * DDP: torchrun, gloo;
  * FSDP2: torchrun, gloo, torch.distributed.fsdp.fully_shard per block;
  * torch.compile + DDP: torchrun, gloo, inductor;
  * spmd replicate / fully_shard: mpirun, spmd.compile(parallel_mode=...);
    each also once more in a new process (the cached first call).

Per mode: the first call (cold: empty compile caches), the steady step's
median over --steps, tokens per second, peak RSS per rank, and the final
loss against eager's. The floor is the step's useful matmul FLOPs per rank
at the single-thread sgemm rate measured in this run. `--load` runs every
mode again with one busy process per core beside it and prints each mode's
slowdown. `--depth 2,6,12` prints spmd's cold and cached first call per
number of layers (compile time against depth). `--size large` is GPT-2
large (774M parameters: 36 layers, 20 heads, d=1280), whose replicated
AdamW state (12.4 GB per rank) does not fit two ranks in 24 GiB: by
default it runs eager, FSDP2 and spmd fully_shard. Checkpointed variants
run when named: fsdp2+ac (checkpoint_wrapper on every block),
spmd-replicate+ac, spmd-fully_shard+ac (activation_checkpointing=True),
spmd-fully_shard+sac ("selective").

    python3 bench/gpt2.py [--seq 128] [--batch 4] [--ranks 2] [--steps 3]
                          [--layers 12] [--modes eager,ddp,...] [--load]
                          [--depth 2,6,12,24] [--size 124m|large]
"""

import argparse
import json
import multiprocessing
import os
import statistics
import subprocess
import sys
import tempfile
import time

T_START = time.perf_counter()
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODES = ["eager", "ddp", "fsdp2", "compile-ddp", "spmd-replicate",
         "spmd-fully_shard"]
# Activation-checkpointed variants (every block recomputed in the
# backward), run only when named in --modes.
# spmd.Auto, and the hand-written strategy it also weighs that no other
# mode runs (fully_shard without reshard_after_forward); run when named.
AUTO_MODES = ["spmd-auto", "spmd-fully_shard_keep"]
AC_MODES = ["fsdp2+ac", "spmd-replicate+ac", "spmd-fully_shard+ac",
            "spmd-fully_shard+sac"]
# GPT-2 sizes: blocks, heads, width, the modes run by default.
SIZES = {"124m": dict(layers=12, heads=12, dim=768, modes=",".join(MODES)),
         "large": dict(layers=36, heads=20, dim=1280,
                       modes="eager,fsdp2,spmd-fully_shard")}
TORCHRUN = {"ddp", "fsdp2", "compile-ddp", "fsdp2+ac"}
NAMES = {"eager": "eager, 1 process, whole batch", "ddp": "DDP (gloo)",
         "fsdp2": "FSDP2 (fully_shard per block)",
         "compile-ddp": "torch.compile + DDP",
         "spmd-replicate": "spmd replicate",
         "spmd-fully_shard": "spmd fully_shard",
         "fsdp2+ac": "FSDP2, every block checkpointed",
         "spmd-replicate+ac": "spmd replicate, activation_checkpointing",
         "spmd-fully_shard+ac": "spmd fully_shard, activation_checkpointing",
         "spmd-fully_shard+sac": "spmd fully_shard, selective checkpointing",
         "spmd-auto": "spmd.Auto",
         "spmd-fully_shard_keep":
             "spmd fully_shard, reshard_after_forward=False"}


def gpt2(layers=12, heads=12, dim=768, vocab=50257, block=1024):
    """nanoGPT's GPT-2 (model.py), without dropout."""
    import math

    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_attn = nn.Linear(dim, 3 * dim)
            self.c_proj = nn.Linear(dim, dim)

        def forward(self, x):
            B, T, C = x.shape
            q, k, v = self.c_attn(x).split(C, dim=2)
            q, k, v = (t.view(B, T, heads, C // heads).transpose(1, 2)
                       for t in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            return self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_fc = nn.Linear(dim, 4 * dim)
            self.gelu = nn.GELU(approximate="tanh")
            self.c_proj = nn.Linear(4 * dim, dim)

        def forward(self, x):
            return self.c_proj(self.gelu(self.c_fc(x)))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1 = nn.LayerNorm(dim)
            self.attn = Attention()
            self.ln_2 = nn.LayerNorm(dim)
            self.mlp = MLP()

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp(self.ln_2(x))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.transformer = nn.ModuleDict(dict(
                wte=nn.Embedding(vocab, dim), wpe=nn.Embedding(block, dim),
                h=nn.ModuleList([Block() for _ in range(layers)]),
                ln_f=nn.LayerNorm(dim)))
            self.lm_head = nn.Linear(dim, vocab, bias=False)
            self.transformer.wte.weight = self.lm_head.weight
            self.apply(self._init)
            for name, p in self.named_parameters():
                if name.endswith("c_proj.weight"):
                    nn.init.normal_(p, 0.0, 0.02 / math.sqrt(2 * layers))

        @staticmethod
        def _init(m):
            if isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, 0.0, 0.02)
                if m.bias is not None:
                    nn.init.zeros_(m.bias)
            elif isinstance(m, nn.Embedding):
                nn.init.normal_(m.weight, 0.0, 0.02)

        def forward(self, idx):
            T = idx.shape[1]
            pos = torch.arange(T, device=idx.device)
            x = self.transformer.wte(idx) + self.transformer.wpe(pos)
            for block in self.transformer.h:
                x = block(x)
            return self.lm_head(self.transformer.ln_f(x))

    torch.manual_seed(0)
    return GPT()


def adamw(model):
    """nanoGPT's configure_optimizers: decay on tensors of >= 2 dims."""
    import torch
    params = [p for p in model.parameters() if p.requires_grad]
    groups = [{"params": [p for p in params if p.dim() >= 2],
               "weight_decay": 0.1},
              {"params": [p for p in params if p.dim() < 2],
               "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=6e-4, betas=(0.9, 0.95), eps=1e-8)


def train_step(model, opt, x, y):
    import torch.nn.functional as F
    logits = model(x)
    loss = F.cross_entropy(logits.view(-1, logits.size(-1)), y.view(-1))
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    return loss


def useful_flops(layers, dim, vocab, seq, rows):
    """Forward + backward matmul FLOPs of `rows` sequences: 6 per
    parameter of the blocks and the head per token, attention's QK^T and
    AV (full, not halved by causality)."""
    tokens = rows * seq
    per_token = 12 * layers * dim * dim + vocab * dim
    return 6 * tokens * per_token + 12 * layers * seq * dim * tokens


def peak_rss_mib():
    status = open("/proc/self/status").read()
    return int(status.split("VmHWM:")[1].split()[0]) // 1024


def batch(args, world, rank):
    import torch
    gen = torch.Generator().manual_seed(1234)
    x = torch.randint(0, 50257, (args.batch, args.seq), generator=gen)
    y = torch.randint(0, 50257, (args.batch, args.seq), generator=gen)
    rows = args.batch // world
    return (x[rank * rows:(rank + 1) * rows].contiguous(),
            y[rank * rows:(rank + 1) * rows].contiguous())


def worker(args):
    import torch
    mode = args.worker
    import_done = time.perf_counter()
    world, rank = 1, 0
    model = gpt2(layers=args.layers, heads=args.heads, dim=args.dim)
    # One repeated block's parameters, whole (before any sharding): what a
    # gathered block holds; issue #42's transient target counts two.
    block_bytes = sum(p.numel() * p.element_size()
                      for p in model.transformer.h[0].parameters())
    step = train_step
    if mode.startswith("spmd"):
        import spmd
        world, rank = spmd.world_size(), spmd.rank()
        style, _, ac = mode.split("-", 1)[1].replace(
            "-cached", "").partition("+")
        if style == "auto":
            limit = args.memory_limit and int(args.memory_limit * 2**20)
            parallel = spmd.Auto(memory_limit=limit)
        elif style == "fully_shard_keep":
            parallel = spmd.DataParallel("fully_shard",
                                         reshard_after_forward=False)
        else:
            parallel = spmd.DataParallel(style)
        step = spmd.compile(
            parallel_mode=parallel,
            activation_checkpointing={"": False, "ac": "full",
                                      "sac": "selective"}[ac])(train_step)
        opt = adamw(model)
    elif mode in TORCHRUN:
        import torch.distributed as dist
        torch.set_num_threads(1)
        dist.init_process_group("gloo")
        world, rank = dist.get_world_size(), dist.get_rank()
        if mode.startswith("fsdp2"):
            from torch.distributed.fsdp import fully_shard
            if mode == "fsdp2+ac":
                from torch.distributed.algorithms._checkpoint. \
                    checkpoint_wrapper import checkpoint_wrapper
                for i, block in enumerate(model.transformer.h):
                    model.transformer.h[i] = checkpoint_wrapper(block)
            for block in model.transformer.h:
                fully_shard(block)
            fully_shard(model)
        else:
            model = torch.nn.parallel.DistributedDataParallel(model)
            if mode == "compile-ddp":
                model = torch.compile(model)
        opt = adamw(model)
    else:
        torch.set_num_threads(1)
        opt = adamw(model)
    x, y = batch(args, world, rank)
    setup_done = time.perf_counter()
    times = []
    for _ in range(1 + args.steps):
        t0 = time.perf_counter()
        loss = float(step(model, opt, x, y))
        times.append(time.perf_counter() - t0)
    result = dict(mode=mode, rank=rank, world=world, first=times[0],
                  median=statistics.median(times[1:]), rss=peak_rss_mib(),
                  loss=loss, setup=setup_done - import_done,
                  threads=torch.get_num_threads())
    if mode.startswith("spmd"):
        result["phases"] = step.compile_times
        stats = spmd.memory_stats()
        result["plan"] = {k: stats.get(f"planned_{k}_bytes") for k in (
            "transient_peak", "activations", "gradients", "communication")}
        result["block_bytes"] = block_bytes
        if step.auto_plan is not None:
            plan = step.auto_plan
            result["auto"] = dict(
                chosen=plan.chosen.name, limit=plan.limit,
                seconds=plan.seconds, modeled={
                    c.name: dict(step=c.step_s, peak=c.peak, fits=c.fits)
                    for c in plan.candidates})
    with open(f"{args.out}.{rank}", "w") as f:
        json.dump(result, f)


def sgemm_gflops():
    """One core's sgemm rate at a GPT-2-like shape (the floor's yardstick)."""
    import torch
    torch.set_num_threads(1)
    a, b = torch.randn(512, 768), torch.randn(768, 768)
    for _ in range(3):
        a @ b
    n, t0 = 20, time.perf_counter()
    for _ in range(n):
        a @ b
    return n * 2 * 512 * 768 * 768 / (time.perf_counter() - t0) / 1e9


def launch(mode, args, tmp, env, tag=""):
    out = os.path.join(tmp, f"{mode}{tag}")
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", mode,
           "--seq", str(args.seq), "--batch", str(args.batch),
           "--steps", str(args.steps), "--layers", str(args.layers),
           "--heads", str(args.heads), "--dim", str(args.dim),
           "--out", out]
    if args.memory_limit:
        cmd += ["--memory-limit", str(args.memory_limit)]
    ranks = 1 if mode == "eager" else args.ranks
    if mode in TORCHRUN:
        cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone",
               f"--nproc-per-node={ranks}"] + cmd[1:]
    elif ranks > 1 or mode.startswith("spmd"):
        cmd = ["mpirun", "--oversubscribe", "--bind-to", "none", "-np",
               str(ranks)] + cmd
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True,
                          timeout=7200)
    if proc.returncode != 0:
        print(f"{mode} failed (rc {proc.returncode}):\n{proc.stdout[-3000:]}"
              f"\n{proc.stderr[-3000:]}", file=sys.stderr)
        return None
    return [json.load(open(f"{out}.{r}")) for r in range(ranks)]


AUTOGROUP = "/proc/sys/kernel/sched_autogroup_enabled"


class Load:
    """One busy process per core, for --load.

    With the kernel's autogroup scheduling on, cores are shared between
    sessions before processes, and the launchers differ there: torchrun
    starts each worker in a session of its own, mpirun keeps its ranks in
    the caller's, the busy processes' session. DDP's workers then got 2/3
    of a core each and spmd's ranks 1/2 (slowdowns 1.25x and 2.14x on
    2026-12-06; 2.24x and 2.08x with autogroup off). The comparison is of
    the runtimes, so autogroup is turned off while the load runs where this
    process may (root), and restored after; otherwise a line says so."""

    def __enter__(self):
        self.autogroup = None
        try:
            with open(AUTOGROUP) as f:
                self.autogroup = f.read().strip()
            if self.autogroup != "0":
                with open(AUTOGROUP, "w") as f:
                    f.write("0")
            print("--load: autogroup scheduling off (cores shared per "
                  "process, whatever the launcher's sessions)")
        except OSError:
            print("--load: autogroup scheduling "
                  f"{'on' if self.autogroup == '1' else 'unknown'} and not "
                  "changeable here: torchrun's workers (a session each) get "
                  "more of the cores than mpirun's ranks")
            self.autogroup = None
        self.procs = [subprocess.Popen(
            [sys.executable, "-c", "while True: pass"])
            for _ in range(multiprocessing.cpu_count())]
        return self

    def __exit__(self, *exc):
        for p in self.procs:
            p.kill()
            p.wait()
        if self.autogroup not in (None, "0"):
            with open(AUTOGROUP, "w") as f:
                f.write(self.autogroup)
        return False


def run_modes(args, tmp, env, modes, tag=""):
    runs = {}
    for mode in modes:
        runs[mode] = launch(mode, args, tmp, env, tag)
        if mode.startswith("spmd") and runs[mode] and not tag:
            runs[mode + "-cached"] = launch(mode + "-cached", args, tmp,
                                            env, tag)
    return runs


def global_loss(rs) -> float:
    """The global batch's loss: spmd and eager return it on every rank;
    DDP and FSDP2 ranks each see their rows' mean (equal row counts)."""
    return statistics.mean(r["loss"] for r in rs)


def table(args, runs, gflops, title):
    slow = lambda rs, k: max(r[k] for r in rs)  # noqa: E731
    eager = runs.get("eager")
    tokens = args.batch * args.seq
    print(f"\n### {title}")
    print("| mode | first call s | cached first call s | step s (median) "
          "| tokens/s | peak RSS MiB per rank | threads | loss - eager |")
    print("|---|---|---|---|---|---|---|---|")
    for mode in [m for m in MODES + AC_MODES + AUTO_MODES if m in runs]:
        rs = runs[mode]
        if rs is None:
            print(f"| {NAMES[mode]} | failed | | | | | | |")
            continue
        cached = runs.get(mode + "-cached")
        cells = [NAMES[mode], f"{slow(rs, 'first'):.1f}",
                 f"{slow(cached, 'first'):.1f}" if cached else "-",
                 f"{slow(rs, 'median'):.2f}",
                 f"{tokens / slow(rs, 'median'):.0f}",
                 ", ".join(str(r["rss"]) for r in rs),
                 str(rs[0]["threads"]),
                 f"{abs(global_loss(rs) - global_loss(eager)):.1e} ("
                 f"{abs(global_loss(rs) / global_loss(eager) - 1):.0e} "
                 "rel.)" if eager else "n/a"]
        print("| " + " | ".join(cells) + " |")
    rows = args.batch // args.ranks
    floor = useful_flops(args.layers, args.dim, 50257, args.seq, rows) / (
        gflops * 1e9)
    gflop = useful_flops(args.layers, args.dim, 50257, args.seq, rows) / 1e9
    print(f"floor: {gflop:.0f} GFLOP per rank per step at {gflops:.0f} "
          f"GFLOP/s (one core's sgemm, measured now) = {floor:.2f} s")
    t = {m: slow(rs, "median") for m, rs in runs.items() if rs}
    ratios = []
    for a, b in (("spmd-replicate", "ddp"), ("spmd-fully_shard", "fsdp2"),
                 ("spmd-fully_shard+ac", "fsdp2+ac"),
                 ("spmd-fully_shard", "spmd-replicate"),
                 ("spmd-replicate", "compile-ddp")):
        if a in t and b in t:
            ratios.append(f"{NAMES[a]} / {NAMES[b]} {t[a] / t[b]:.2f}")
    if "spmd-replicate" in t:
        ratios.append("spmd replicate / floor "
                      f"{t['spmd-replicate'] / floor:.2f}")
    print("ratios: " + "; ".join(ratios))
    # Imported here: bench/gpu copies this file (for its model) alone.
    from auto_report import auto_report
    auto_report(runs, t)
    for mode in [m for m in MODES + AC_MODES + AUTO_MODES
                 if m.startswith("spmd")]:
        if runs.get(mode):
            step = slow(runs[mode], "median")
            cached = runs.get(mode + "-cached")
            print(f"{NAMES[mode]} first call less one step (compile and "
                  f"load): cold {slow(runs[mode], 'first') - step:.1f} s"
                  + (f", cached {slow(cached, 'first') - step:.1f} s"
                     if cached else ""))
            plan = runs[mode][0].get("plan") or {}
            if plan.get("transient_peak") is not None:
                block = runs[mode][0]["block_bytes"]
                target = (plan["activations"] + 2 * block) * 1.1
                print(f"{NAMES[mode]} memory plan (rank 0, MB): transient "
                      f"peak {plan['transient_peak'] / 1e6:.1f} = "
                      f"activations {plan['activations'] / 1e6:.1f}, "
                      f"gradients {plan['gradients'] / 1e6:.1f}, "
                      f"communication {plan['communication'] / 1e6:.1f}; "
                      f"(activations + two gathered blocks of "
                      f"{block / 1e6:.1f}) x 1.1 = {target / 1e6:.1f}")
            for what, rs in (("", runs[mode]), ("cached ", cached)):
                phases = (rs or [{}])[0].get("phases", {})
                if phases:
                    print(f"{NAMES[mode]} {what}first call by phase (rank "
                          "0, s): " + ", ".join(f"{k} {v:.1f}"
                                               for k, v in phases.items()))
    return t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seq", type=int, default=128,
                    choices=[128, 256, 1024])
    ap.add_argument("--batch", type=int, default=4, help="global batch")
    ap.add_argument("--ranks", type=int, default=2, choices=[2, 4])
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--layers", type=int)
    ap.add_argument("--modes", default=None,
                    help="default: every mode (124m), eager,fsdp2,"
                    "spmd-fully_shard (large)")
    ap.add_argument("--size", default="124m", choices=list(SIZES))
    ap.add_argument("--heads", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--dim", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--load", action="store_true")
    ap.add_argument("--memory-limit", type=float,
                    help="spmd-auto's memory limit, MiB per rank")
    ap.add_argument("--depth", default="",
                    help="comma-separated layer counts: spmd replicate's "
                    "cold and cached first call for each")
    ap.add_argument("--worker")
    ap.add_argument("--out")
    args = ap.parse_args()
    size = SIZES[args.size]
    if args.heads is None:
        args.heads, args.dim = size["heads"], size["dim"]
        if args.layers is None:
            args.layers = size["layers"]
    if args.worker:
        worker(args)
        return
    modes = [m for m in (args.modes or size["modes"]).split(",") if m]
    unknown = [m for m in modes if m not in MODES + AC_MODES + AUTO_MODES]
    if unknown:
        ap.error(f"unknown modes {unknown}: choose from "
                 f"{', '.join(MODES + AC_MODES + AUTO_MODES)}")
    gflops = sgemm_gflops()
    print(f"GPT-2 ({args.layers} layers, d={args.dim}, {args.heads} heads, "
          f"vocabulary 50257, "
          f"tied head, SDPA causal, AdamW decay/no-decay), sequence "
          f"{args.seq}, global batch {args.batch}, {args.ranks} ranks, "
          f"{multiprocessing.cpu_count()} cores")
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1",
                   OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                   SPMD_COMPILE_CACHE=os.path.join(tmp, "spmd-cache"),
                   TORCHINDUCTOR_CACHE_DIR=os.path.join(tmp, "inductor"))
        torch_env = dict(env, OMP_NUM_THREADS="1")
        runs = {}
        for mode in modes:
            runs.update(run_modes(args, tmp, torch_env if not
                                  mode.startswith("spmd") else env, [mode]))
        quiet = table(args, runs, gflops, "quiet machine")
        if args.load:
            with Load():
                loaded = {}
                for mode in modes:
                    loaded.update(run_modes(
                        args, tmp, torch_env if not mode.startswith("spmd")
                        else env, [mode], tag="-load"))
                busy = table(args, loaded, gflops,
                             f"a busy process per core beside it "
                             f"({multiprocessing.cpu_count()})")
            print("slowdown under load: " + ", ".join(
                f"{NAMES[m]} {busy[m] / quiet[m]:.2f}x"
                for m in modes if m in busy and m in quiet))
        for layers in [int(n) for n in args.depth.split(",") if n]:
            depth_args = argparse.Namespace(**dict(vars(args),
                                                   layers=layers, steps=1))
            tag = f"-depth{layers}"
            env_d = dict(env, SPMD_COMPILE_CACHE=os.path.join(tmp, tag))
            cold = launch("spmd-replicate", depth_args, tmp, env_d, tag)
            cached = launch("spmd-replicate-cached", depth_args, tmp, env_d,
                            tag)
            if cold and cached:
                step = max(r['median'] for r in cold)
                first = max(r['first'] for r in cold)
                again = max(r['first'] for r in cached)
                print(f"depth {layers}: spmd replicate first call cold "
                      f"{first:.1f} s, cached {again:.1f} s, step "
                      f"{step:.2f} s; less one step (compile and load): "
                      f"cold {first - step:.1f} s, cached "
                      f"{again - step:.1f} s")


if __name__ == "__main__":
    main()
