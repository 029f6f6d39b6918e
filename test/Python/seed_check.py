#!/usr/bin/env python3
"""PyTorch's own tests of torch.distributed._spmd (test_tracing.py,
test_data_parallel.py, test_transformation.py), ported to spmd.compile
and written as the seed wrote them: steps that return nothing, no
zero_grad where the seed had none (gradients accumulate across calls, as
in eager), foreach/fused optimizers. Each case runs on the ranks of the
mpirun job, each rank with its shard of the global batch, against the same
step in eager PyTorch on one device over the global batch in this process:
parameters, gradients (`.grad`), optimizer state and returned values must
agree after every call. Plus what the port found: any torch.optim
optimizer, gradient accumulation across calls, and no global-batch-shaped
value in a data-parallel local program.

    mpirun -np 2 python3 seed_check.py GROUP     (tracing | data_parallel |
                                                 transformation | optimizers)
"""

import argparse
import copy
import re
import sys

import torch
import torch.nn as nn

import spmd

RANK, WORLD = spmd.rank(), spmd.world_size()
TOL = 1e-5
failures = []


def local(t):
    """This rank's rows of a global batch."""
    rows = t.shape[0] // WORLD
    return t[RANK * rows:(RANK + 1) * rows].clone()


def deviation(a, b) -> float:
    if a is None or b is None:
        return 0.0 if a is None and b is None else float("inf")
    if tuple(a.shape) != tuple(b.shape):
        return float("inf")
    scale = max(1.0, float(b.abs().max())) if b.numel() else 1.0
    return float((a.double() - b.double()).abs().max()) / scale \
        if a.numel() else 0.0


def full_grads(model):
    """Whole gradients on every rank (fully_shard: gathered from chunks)."""
    sharded = spmd._sharding.sharded_params(model)
    mesh = spmd._sharding._MODELS.get(model, {}).get("mesh", ())
    out = {}
    for n, p in model.named_parameters():
        g = p.grad
        if g is not None and n in sharded:
            g = spmd._sharding.gather(g, *sharded[n], mesh)
        out[n] = g
    return out


def compare(label, model, opt, ref_model, ref_opt, extra=()):
    """Parameters, .grad, optimizer state and `extra` ((name, got, want))
    of the compiled model against eager's."""
    if opt is not None:
        state, ostate = spmd.full_state_dict(model, opt)
    else:
        state, ostate = spmd.full_state_dict(model), None
    worst, where = 0.0, ""
    checks = [(f"param {k}", state[k], v)
              for k, v in ref_model.state_dict().items()]
    grads = full_grads(model)
    checks += [(f"grad {n}", grads[n], p.grad)
               for n, p in ref_model.named_parameters()]
    if ostate is not None:
        ref_state = ref_opt.state_dict()["state"]
        for index, entries in ref_state.items():
            got = ostate["state"].get(index, {})
            for key, want in entries.items():
                if isinstance(want, torch.Tensor):
                    checks.append((f"state {index}.{key}", got.get(key),
                                   want.reshape(want.shape)))
                elif got.get(key) != want:
                    checks.append((f"state {index}.{key}", None,
                                   torch.zeros(1)))
    checks += list(extra)
    for name, got, want in checks:
        if isinstance(got, torch.Tensor) and got.dim() == 0 and \
                isinstance(want, torch.Tensor):
            want = want.reshape(())
        d = deviation(got, want)
        if d > worst:
            worst, where = d, name
    ok = worst <= TOL
    if not ok:
        failures.append(label)
    if RANK == 0:
        print(f"{label}: {'OK' if ok else 'MISMATCH'} max deviation "
              f"{worst:.2e}{' at ' + where if where else ''}", flush=True)
    return ok


# Local programs checked for values of the global batch's shape, and those
# found (the data-parallel contract: each rank holds and computes its rows).
programs_checked = [0]


def global_batch_values(label, compiled):
    """Types of rank >= 2 in `compiled`'s local programs whose leading
    dimension is the global batch (no test model has a dimension of that
    size); each program with one is a failure."""
    pipeline = compiled.pipeline()[len("builtin.module("):-1]
    for executable in compiled.cache.values():
        batch = [i.global_shape[0] for i in executable.traced.inputs
                 if i.global_shape and i.global_shape != i.local_shape]
        if not batch:
            continue
        local_ir = spmd.run_passes(executable.program.text, pipeline)
        # Rank >= 2 (a bias of the batch's size may be sliced to it).
        found = len(re.findall(rf"tensor<{batch[0]}x\d", local_ir))
        if not found:
            programs_checked[0] += 1
        else:
            failures.append(f"{label} global batch")
            if RANK == 0:
                print(f"{label}: {found} global-batch-shaped types in a "
                      "local program", flush=True)


def run_pair(label, step, build, batches, mode=None, compiled_step=None,
             check_each=True):
    """`step` compiled (spmd.compile(parallel_mode=mode)) on this rank's
    shards and eagerly on the global batches, call by call."""
    model, opt = build()
    ref_model, ref_opt = copy.deepcopy((model, opt))
    compiled = compiled_step or spmd.compile(parallel_mode=mode)(step)
    for i, batch in enumerate(batches):
        got = compiled(model, opt, *[local(t) for t in batch])
        want = step(ref_model, ref_opt, *batch)
        extra = _returned(got, want)
        if check_each or i == len(batches) - 1:
            compare(f"{label} call {i + 1}", model, opt, ref_model, ref_opt,
                    extra)
    global_batch_values(label, compiled)
    return compiled, model, opt


def _returned(got, want):
    """The returned structures must match: tensors by value, the rest by
    equality."""
    gl, gs = torch.utils._pytree.tree_flatten(got)
    wl, ws = torch.utils._pytree.tree_flatten(want)
    if gs != ws:
        return [("returned structure", None, torch.zeros(1))]
    out = []
    for i, (g, w) in enumerate(zip(gl, wl)):
        if isinstance(w, torch.Tensor):
            out.append((f"returned {i}", g, w.detach()))
        elif g != w:
            out.append((f"returned {i}", None, torch.zeros(1)))
    return out


def batches(n, *shapes, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return [[torch.randn(*s, generator=gen) for s in shapes]
            for _ in range(n)]


# --- test_tracing.py: TraceTrainStepTest --------------------------------


def sum_backward_step(mod, opt, inp):
    """The seed's train step: no zero_grad, no return."""
    mod(inp).sum().backward()
    opt.step()


def linear_sgd(foreach=True, bias=True):
    def build():
        torch.manual_seed(1)
        mod = nn.Linear(10, 10, bias=bias)
        return mod, torch.optim.SGD(mod.parameters(), lr=0.01,
                                    foreach=foreach)
    return build


def materialized(build, step=sum_backward_step):
    """The seed's _test_optimizer: one eager step to materialize the
    optimizer state, then zero_grad."""
    def wrapped():
        mod, opt = build()
        step(mod, opt, torch.randn(4, 10, generator=torch.Generator()
                                   .manual_seed(9)))
        opt.zero_grad()
        return mod, opt
    return wrapped


def test_train_step_simple():
    def train_step(mod, opt, inp):
        mod(inp).sum().backward()
        return [p.grad for p in mod.parameters()]

    def build():
        torch.manual_seed(0)
        return nn.Linear(10, 10), None
    run_pair("test_train_step_simple", train_step, build,
             batches(3, (4, 10)))


def test_sgd():
    run_pair("test_sgd", sum_backward_step, materialized(linear_sgd()),
             batches(3, (4, 10)))


def adam(foreach=False, fused=False, bias=False):
    def build():
        torch.manual_seed(0)
        mod = nn.Linear(10, 10, bias=bias)
        # The seed's capturable=True needs CUDA in eager on the CPU.
        return mod, torch.optim.Adam(mod.parameters(), lr=0.01,
                                     foreach=foreach, fused=fused)
    return build


def test_adam_foreach():
    run_pair("test_adam_foreach", sum_backward_step,
             materialized(adam(foreach=True)), batches(3, (4, 10)))


def test_adam_fused():
    run_pair("test_adam_fused", sum_backward_step,
             materialized(adam(fused=True)), batches(3, (4, 10)))


class DataDependentModule(nn.Module):
    """Untraceable (data-dependent shapes), as the seed's."""

    def forward(self, x):
        positive = x[x >= 0]
        return torch.cat([positive, x[x < 0]]).reshape(x.shape)


class Identity(nn.Module):
    def forward(self, x):
        return x + 0.0


class DummyModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = nn.Linear(10, 10)
        self.ddm = DataDependentModule()
        self.l2 = nn.Linear(10, 10)
        self.relu = nn.ReLU()

    def forward(self, x):
        return self.relu(self.l2(self.ddm(self.l1(x))))


class DDMOverride(spmd.Override):
    def __init__(self):
        self.replaced = []

    def replacement(self, fqn, submodule):
        if isinstance(submodule, DataDependentModule):
            self.replaced.append(fqn)
            return Identity()
        return submodule


def test_train_step_override():
    override = DDMOverride()

    def train_step(mod, opt, inp):
        mod(inp).sum().backward()
        opt.step()

    def build():
        torch.manual_seed(0)
        mod = DummyModel()
        return mod, torch.optim.SGD(mod.parameters(), lr=0.01,
                                    foreach=False)
    model, opt = build()
    ref_model, ref_opt = copy.deepcopy((model, opt))
    ref_model.ddm = Identity()
    compiled = spmd.compile(module_override=[override])(train_step)
    for i, (inp,) in enumerate(batches(2, (4, 10))):
        compiled(model, opt, local(inp))
        train_step(ref_model, ref_opt, inp)
        compare(f"test_train_step_override call {i + 1}", model, opt,
                ref_model, ref_opt)
    if override.replaced != ["ddm"]:
        failures.append("test_train_step_override replacement")


def test_gm_cache_and_transformation():
    """The seed checked that a second call reuses the compiled graph. With
    gradients accumulated across calls (no zero_grad in the step), the
    second call adds into the first one's `.grad`: one more program, then
    every later call reuses it."""
    compiled, _, _ = run_pair(
        "test_gm_cache_and_transformation", sum_backward_step,
        materialized(adam()), batches(4, (4, 10)), check_each=False)
    programs = len(compiled.cache)
    if RANK == 0:
        print(f"test_gm_cache_and_transformation: {programs} programs for "
              "4 calls")
    if programs != 2:
        failures.append("test_gm_cache_and_transformation programs")


def test_expand_dimension():
    """The backward of .sum() over a global batch of 6: no value of the
    global batch's shape in the local program (run_pair checks every
    program): each rank's rows of the ones times its inputs, then an
    all-reduce, as DDP; the bias gradient a constant."""
    run_pair("test_expand_dimension", sum_backward_step,
             materialized(linear_sgd()), batches(2, (6, 10)))


# --- test_data_parallel.py ----------------------------------------------


class SimpleMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.net1 = nn.Linear(50, 32)
        self.relu = nn.ReLU()
        self.net2 = nn.Linear(32, 8)

    def forward(self, x):
        return torch.sigmoid(self.net2(self.relu(self.net1(x))))


def dp_train_step(model, optim, inputs, labels):
    """The seed's train_step: zero_grad first, returns the loss."""
    optim.zero_grad()
    loss = (model(inputs) - labels).sum()
    loss.backward()
    optim.step()
    return loss


def dp_case(label, make_opt, mode, model_cls=SimpleMLP):
    def build():
        torch.manual_seed(0)
        mod = model_cls()
        opt = make_opt(mod.parameters())
        # "need one step to warm up optimizers", as the seed.
        dp_train_step(mod, opt, *batches(1, (12, 50), (12, 8), seed=5)[0])
        opt.zero_grad()
        return mod, opt
    run_pair(label, dp_train_step, build, batches(2, (12, 50), (12, 8)),
             spmd.DataParallel(mode))


SGD_CONFIGS = [{"lr": 0.1}, {"lr": 0.1, "momentum": 0.9},
               {"lr": 0.1, "momentum": 0.9, "foreach": True}]


def test_replicate_sgd():
    for i, config in enumerate(SGD_CONFIGS):
        dp_case(f"test_replicate_sgd[{i}]",
                lambda p, c=config: torch.optim.SGD(p, **c), "replicate")


def test_replicate_adam_fused():
    dp_case("test_replicate_adam_fused",
            lambda p: torch.optim.Adam(p, lr=0.1, fused=True), "replicate")


def test_fully_shard_sgd():
    for i, config in enumerate(SGD_CONFIGS):
        dp_case(f"test_fully_shard_sgd[{i}]",
                lambda p, c=config: torch.optim.SGD(p, **c), "fully_shard")


def test_fully_shard_adam_fused():
    dp_case("test_fully_shard_adam_fused",
            lambda p: torch.optim.Adam(p, lr=0.1, fused=True), "fully_shard")


class WrapperModule(nn.Module):
    def __init__(self):
        super().__init__()
        self.mlp = SimpleMLP()

    def forward(self, x):
        output = self.mlp(x)
        new_output = output.clone().view(-1)
        squeezed_out = new_output.squeeze()
        unsqueezed_out = squeezed_out.unsqueeze(0)
        return output + 0.1 * unsqueezed_out.view(output.shape[0], -1)


def test_data_parallel_batch_dim_analysis():
    for mode in ("replicate", "fully_shard"):
        dp_case(f"test_data_parallel_batch_dim_analysis[{mode}]",
                lambda p: torch.optim.SGD(p, lr=0.1), mode, WrapperModule)


# --- test_transformation.py ---------------------------------------------


class LayeredModel(nn.Module):
    """The seed's DummyModel(layers, dim), smaller."""

    def __init__(self, layers=3, dim=16):
        super().__init__()
        modules = []
        for _ in range(layers):
            modules.extend([nn.Linear(dim, dim), nn.ReLU()])
        self.mod = nn.Sequential(*modules)

    def forward(self, x):
        return self.mod(x)


def transformation_case(label, foreach, fused):
    def train_step(model, optim, batch):
        model(batch).sum().backward()
        optim.step()
        optim.zero_grad()

    def build():
        torch.manual_seed(0)
        model = LayeredModel()
        optim = torch.optim.Adam(model.parameters(), lr=0.01,
                                 foreach=foreach, fused=fused)
        model(torch.randn(8, 16)).sum().backward()
        optim.step()
        optim.zero_grad()
        return model, optim
    compiled, _, _ = run_pair(label, train_step, build,
                              batches(5, (8, 16)), check_each=False)
    if len(compiled.cache) != 1:
        failures.append(f"{label} programs")


def test_basic_transformation():
    transformation_case("test_basic_transformation", True, False)


def test_graph_optimization_with_fused():
    transformation_case("test_graph_optimization_with_fused", False, True)


# --- Beyond the seed: any optimizer, gradients across calls -------------


class SignMomentum(torch.optim.Optimizer):
    """A user-written optimizer: sign of a momentum buffer (lazily
    initialized state, a tensor step counter, a Python constant)."""

    def __init__(self, params, lr=0.01, beta=0.9):
        super().__init__(params, {"lr": lr, "beta": beta})

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if not state:
                    state["buf"] = torch.zeros_like(p)
                    state["step"] = torch.zeros(())
                    state["kind"] = "sign"
                state["step"] += 1
                buf = state["buf"]
                buf.mul_(group["beta"]).add_(p.grad, alpha=1 - group["beta"])
                p.add_(buf.sign() * (-group["lr"]) / state["step"].sqrt())


OPTIMIZERS = {
    "SGD": lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9),
    "Adam": lambda p: torch.optim.Adam(p, lr=0.01),
    "AdamW": lambda p: torch.optim.AdamW(p, lr=0.01),
    "Adagrad": lambda p: torch.optim.Adagrad(p, lr=0.05, lr_decay=0.01),
    "RMSprop": lambda p: torch.optim.RMSprop(p, lr=0.01, momentum=0.5),
    "Adamax": lambda p: torch.optim.Adamax(p, lr=0.01),
    "NAdam": lambda p: torch.optim.NAdam(p, lr=0.01),
    "RAdam": lambda p: torch.optim.RAdam(p, lr=0.01),
    "Adadelta": lambda p: torch.optim.Adadelta(p, lr=0.5),
    "ASGD": lambda p: torch.optim.ASGD(p, lr=0.01, t0=2),
    "Rprop": lambda p: torch.optim.Rprop(p, lr=0.01),
    "SignMomentum": lambda p: SignMomentum(p, lr=0.01),
}


class SmallMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(6, 12)
        self.fc2 = nn.Linear(12, 3)

    def forward(self, x):
        return self.fc2(torch.tanh(self.fc1(x)))


def mse_step(model, opt, x, y):
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    opt.zero_grad()
    return loss


def test_optimizers(names, mode="replicate"):
    """Every optimizer on 4 calls of the MLP, lr halved between calls (a
    scheduler): an option the step computes with as a tensor is a run-time
    value (no recompile)."""
    for name in names:
        def build(name=name):
            torch.manual_seed(0)
            model = SmallMLP()
            return model, OPTIMIZERS[name](model.parameters())
        model, opt = build()
        ref_model, ref_opt = copy.deepcopy((model, opt))
        compiled = spmd.compile(parallel_mode=spmd.DataParallel(mode))(
            mse_step)
        worst_ok = True
        for i, (x, y) in enumerate(batches(4, (8, 6), (8, 3))):
            got = compiled(model, opt, local(x), local(y))
            want = mse_step(ref_model, ref_opt, x, y)
            worst_ok &= compare(f"optimizer {name} ({mode}) call {i + 1}",
                                model, opt, ref_model, ref_opt,
                                [("loss", got, want.detach())])
            for g, rg in zip(opt.param_groups, ref_opt.param_groups):
                g["lr"] *= 0.5
                rg["lr"] *= 0.5
        global_batch_values(f"optimizer {name} ({mode})", compiled)
        if RANK == 0:
            runtime = sorted({k for opts in getattr(
                opt, "_spmd_runtime_options", (None, {}))[1].values()
                for k, _ in opts})
            print(f"optimizer {name} ({mode}): {len(compiled.cache)} "
                  f"programs; run-time options: {', '.join(runtime) or '-'}",
                  flush=True)


def test_grad_accumulation():
    """Gradient accumulation across calls: two compiled backward-only
    calls (micro-batches), then a compiled optimizer step, and the same
    with an eager opt.step() on the gradients a compiled call left."""
    def accumulate(model, x, y):
        (nn.functional.mse_loss(model(x), y) / 2).backward()

    def update(model, opt):
        opt.step()
        opt.zero_grad()

    for eager_update in (False, True):
        torch.manual_seed(0)
        model = SmallMLP()
        opt = torch.optim.AdamW(model.parameters(), lr=0.01)
        ref_model, ref_opt = copy.deepcopy((model, opt))
        c_acc = spmd.compile()(accumulate)
        c_upd = spmd.compile()(update)
        label = "test_grad_accumulation" + (
            "[eager opt.step]" if eager_update else "")
        for i, (x, y) in enumerate(batches(4, (8, 6), (8, 3))):
            c_acc(model, local(x), local(y))
            accumulate(ref_model, x, y)
            if i % 2 == 1:
                compare(f"{label} micro-batch {i + 1}", model, opt,
                        ref_model, ref_opt)
                if eager_update:
                    update(model, opt)
                else:
                    c_upd(model, opt)
                update(ref_model, ref_opt)
                compare(f"{label} update {i // 2 + 1}", model, opt,
                        ref_model, ref_opt)


def test_grads_kept():
    """zero_grad(set_to_none=False) at the end keeps zeroed gradients;
    a step without zero_grad under fully_shard leaves each rank its chunk
    of the gradient (as FSDP2)."""
    def zeroed(model, opt, x, y):
        nn.functional.mse_loss(model(x), y).backward()
        opt.step()
        opt.zero_grad(set_to_none=False)

    def build():
        torch.manual_seed(0)
        model = SmallMLP()
        return model, torch.optim.SGD(model.parameters(), lr=0.1,
                                      momentum=0.9)
    run_pair("test_grads_kept[set_to_none=False]", zeroed, build,
             batches(3, (8, 6), (8, 3)))

    def accumulating(model, opt, x, y):
        nn.functional.mse_loss(model(x), y).backward()
        opt.step()
    compiled, model, _ = run_pair(
        "test_grads_kept[fully_shard]", accumulating, build,
        batches(3, (8, 6), (8, 3)), spmd.DataParallel("fully_shard"))
    shapes = [tuple(p.grad.shape) == tuple(p.shape)
              for p in model.parameters()]
    if not all(shapes):
        failures.append("test_grads_kept chunk shapes")


def test_returns():
    """Steps may return nothing, numbers, strings and mixes with tensors;
    what is not is named with its position."""
    def nothing(model, opt, x, y):
        mse_step(model, opt, x, y)

    def mixed(model, opt, x, y):
        loss = mse_step(model, opt, x, y)
        return {"loss": loss, "tokens": x.shape[0], "note": "ok",
                "none": None, "pair": (loss * 2, 3.5)}

    def build():
        torch.manual_seed(0)
        model = SmallMLP()
        return model, torch.optim.SGD(model.parameters(), lr=0.1)
    run_pair("test_returns[None]", nothing, build, batches(2, (8, 6), (8, 3)))
    model, opt = build()
    ref_model, ref_opt = copy.deepcopy((model, opt))
    compiled = spmd.compile()(mixed)
    for i, (x, y) in enumerate(batches(2, (8, 6), (8, 3))):
        got = compiled(model, opt, local(x), local(y))
        # The traced step sees the global batch (x.shape[0] == 8), as the
        # contract says.
        want = mixed(ref_model, ref_opt, x, y)
        compare(f"test_returns[mixed] call {i + 1}", model, opt, ref_model,
                ref_opt, _returned(got, want))


def expect_error(label, step, build, args, *needles):
    """`step` must fail to compile with an UnsupportedError whose message
    holds every needle; prints the message's first line."""
    model, opt = build()
    try:
        spmd.compile()(step)(model, opt, *args)
    except spmd.UnsupportedError as err:
        text = str(err)
        ok = all(n in text for n in needles)
        if RANK == 0:
            print(f"{label}: {'OK' if ok else 'WRONG MESSAGE'}: "
                  f"{text.splitlines()[0]}", flush=True)
        if not ok:
            failures.append(label)
        return
    failures.append(label)
    if RANK == 0:
        print(f"{label}: compiled, but must not", flush=True)


def test_errors():
    """What cannot be compiled says what and why."""
    x, y = local(torch.randn(8, 6)), local(torch.randn(8, 3))

    def with_closure(model, opt, x, y):
        def closure():
            opt.zero_grad()
            loss = nn.functional.mse_loss(model(x), y)
            loss.backward()
            return loss
        opt.step(closure)

    def lbfgs():
        torch.manual_seed(0)
        model = SmallMLP()
        return model, torch.optim.LBFGS(model.parameters())
    expect_error("error LBFGS", with_closure, lbfgs, (x, y),
                 "LBFGS.step(closure) cannot be compiled", "closure")

    def adafactor():
        torch.manual_seed(0)
        model = SmallMLP()
        return model, torch.optim.Adafactor(model.parameters(), lr=0.01)
    expect_error("error Adafactor", mse_step, adafactor, (x, y),
                 "Adafactor.step() cannot be traced", ".item()")

    def returns_module(model, opt, x, y):
        loss = mse_step(model, opt, x, y)
        return {"loss": loss, "model": model}

    def sgd():
        torch.manual_seed(0)
        model = SmallMLP()
        return model, torch.optim.SGD(model.parameters(), lr=0.1)
    expect_error("error returned module", returns_module, sgd, (x, y),
                 "returns a SmallMLP at ['model']")

    class SparseBag(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(10, 4, sparse=True)

        def forward(self, tokens):
            return self.emb(tokens).sum()

    def sparse_step(model, opt, tokens):
        model(tokens).backward()
        opt.step()
        opt.zero_grad()

    def sparse_adam():
        torch.manual_seed(0)
        model = SparseBag()
        return model, torch.optim.SparseAdam(model.parameters(), lr=0.1)
    expect_error("error SparseAdam", sparse_step, sparse_adam,
                 (local(torch.tensor([[1, 2], [3, 4]])),),
                 "SparseAdam takes sparse gradients")


GROUPS = {
    "tracing": [test_train_step_simple, test_sgd, test_adam_foreach,
                test_adam_fused, test_train_step_override,
                test_gm_cache_and_transformation, test_expand_dimension],
    "data_parallel": [test_replicate_sgd, test_replicate_adam_fused,
                      test_fully_shard_sgd, test_fully_shard_adam_fused,
                      test_data_parallel_batch_dim_analysis],
    "transformation": [test_basic_transformation,
                       test_graph_optimization_with_fused],
    "gradients": [test_grad_accumulation, test_grads_kept, test_returns,
                  test_errors],
    "optimizers": [lambda: test_optimizers(
        ["SGD", "Adam", "AdamW", "Adagrad", "RMSprop", "Adamax", "NAdam"])],
    "optimizers2": [lambda: test_optimizers(
        ["RAdam", "Adadelta", "ASGD", "Rprop", "SignMomentum"]),
        lambda: test_optimizers(["Adagrad", "SignMomentum"],
                                "fully_shard")],
}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("group", choices=sorted(GROUPS))
    args = parser.parse_args()
    for case in GROUPS[args.group]:
        case()
    if RANK == 0:
        print(f"{args.group}: {programs_checked[0]} local programs without "
              "values of the global batch's shape" if programs_checked[0]
              else f"{args.group}: no local program checked")
        print(f"{args.group}: "
              f"{'FAILED ' + ', '.join(failures) if failures else 'all OK'}")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
