#!/usr/bin/env python3
"""Generates the optimizer golden tests from torch.optim.

For each configuration it writes `<name>.mlir`, a lit test that runs three
steps of `spmd.sgd` / `spmd.adam` (decomposed by spmd-opt, lowered by
upstream MLIR, run by mlir-runner), and `<name>.golden.json`, the parameters
and optimizer state torch.optim (foreach=True) holds after the same three
steps. Tensors travel as float32 bit patterns, so nothing is lost in text.

Regenerate with the project's interpreter (after scripts/setup.sh):
    $SPMD_PYTHON test/Integration/Optimizers/gen_goldens.py
"""

import json
import os
import struct

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
SHAPES = [(4, 3), (5,)]
STEPS = 3

SGD = {
    "sgd_plain": dict(lr=0.1),
    "sgd_momentum": dict(lr=0.1, momentum=0.9),
    "sgd_dampening": dict(lr=0.05, momentum=0.9, dampening=0.3),
    "sgd_nesterov": dict(lr=0.1, momentum=0.8, nesterov=True),
    "sgd_weight_decay": dict(lr=0.1, momentum=0.9, weight_decay=0.01),
    "sgd_maximize": dict(lr=0.1, momentum=0.5, weight_decay=0.02, maximize=True),
    "sgd_weight_decay_no_momentum": dict(lr=0.2, weight_decay=0.1),
}
ADAM = {
    "adam_plain": ("Adam", dict(lr=1e-2)),
    "adam_betas_eps": ("Adam", dict(lr=3e-2, betas=(0.8, 0.95), eps=1e-6)),
    "adam_amsgrad": ("Adam", dict(lr=1e-2, amsgrad=True)),
    "adam_maximize": ("Adam", dict(lr=1e-2, maximize=True)),
    "adam_weight_decay": ("Adam", dict(lr=1e-2, weight_decay=0.1)),
    "adamw": ("AdamW", dict(lr=1e-2, weight_decay=0.1)),
    "adamw_amsgrad_maximize": ("AdamW", dict(lr=1e-2, weight_decay=0.05, amsgrad=True, maximize=True)),
}


def bits(t):
    """The float32 bit patterns of a tensor, as signed ints (printMemrefI32)."""
    flat = t.detach().to(torch.float32).reshape(-1).tolist()
    return [struct.unpack("<i", struct.pack("<f", v))[0] for v in flat]


def tensor_type(shape):
    return "tensor<" + "".join(f"{d}x" for d in shape) + "f32>"


def dense(t):
    raw = struct.pack(f"<{t.numel()}f", *t.detach().reshape(-1).tolist())
    return f'dense<"0x{raw.hex().upper()}"> : {tensor_type(t.shape)}'


def hyper_attrs(kind, opts):
    attrs = {"lr": opts["lr"]}
    if kind == "sgd":
        for key in ("momentum", "dampening", "weight_decay"):
            if opts.get(key, 0.0) != 0.0:
                attrs[key] = opts[key]
        units = [k for k in ("nesterov", "maximize") if opts.get(k)]
    else:
        beta1, beta2 = opts.get("betas", (0.9, 0.999))
        attrs.update(beta1=beta1, beta2=beta2, eps=opts.get("eps", 1e-8),
                     weight_decay=opts.get("weight_decay", 0.0))
        units = [k for k in ("amsgrad", "maximize") if opts.get(k)]
        if opts["class"] == "AdamW":
            units.append("decoupled_weight_decay")
    parts = [f"{k} = {float(v):.17e} : f64" for k, v in attrs.items()] + units
    return "{" + ", ".join(parts) + "}"


def run_torch(kind, opts):
    torch.manual_seed(0)
    params = [torch.nn.Parameter(torch.randn(s)) for s in SHAPES]
    initial = [p.detach().clone() for p in params]
    grads = [[torch.randn(s) for s in SHAPES] for _ in range(STEPS)]
    torch_opts = {k: v for k, v in opts.items() if k != "class"}
    if kind == "sgd":
        opt = torch.optim.SGD(params, foreach=True, **torch_opts)
    else:
        opt = getattr(torch.optim, opts["class"])(params, foreach=True, **torch_opts)
    for step_grads in grads:
        for p, g in zip(params, step_grads):
            p.grad = g.clone()
        opt.step()
    return initial, grads, params, opt


def state_lists(kind, opts, params, opt):
    """(name, tensors) of the op's results, in result order."""
    lists = [("param", list(params))]
    if kind == "sgd":
        if opts.get("momentum", 0.0) != 0.0:
            lists.append(("momentum_buffer", [opt.state[p]["momentum_buffer"] for p in params]))
            lists.append(("step", [torch.tensor(float(STEPS))]))
    else:
        lists.append(("exp_avg", [opt.state[p]["exp_avg"] for p in params]))
        lists.append(("exp_avg_sq", [opt.state[p]["exp_avg_sq"] for p in params]))
        if opts.get("amsgrad"):
            lists.append(("max_exp_avg_sq", [opt.state[p]["max_exp_avg_sq"] for p in params]))
        lists.append(("step", [opt.state[p]["step"] for p in params]))
    return lists


def emit_test(name, kind, opts, initial, grads, results):
    n = len(SHAPES)
    ptypes = [tensor_type(s) for s in SHAPES]
    state_types = []  # types of the state operands, in op order
    operand_groups = []  # (keyword, [arg names])
    args = [f"%p{i}: {t}" for i, t in enumerate(ptypes)]
    args += [f"%g{i}: {t}" for i, t in enumerate(ptypes)]
    result_types = [t for _, ts in results for t in (tensor_type(x.shape) for x in ts)]
    if kind == "sgd":
        has_momentum = opts.get("momentum", 0.0) != 0.0
        clauses = f"params [{', '.join(f'%p{i}' for i in range(n))}] grads [{', '.join(f'%g{i}' for i in range(n))}]"
        if has_momentum:
            args += [f"%b{i}: {t}" for i, t in enumerate(ptypes)] + ["%s: tensor<f32>"]
            clauses += f" momentum_buffers [{', '.join(f'%b{i}' for i in range(n))}] step %s"
            state_init = [("zeros", t) for t in ptypes] + [("zeros", "tensor<f32>")]
        else:
            state_init = []
        op = "spmd.sgd"
    else:
        lists = ["m", "v"] + (["x"] if opts.get("amsgrad") else [])
        for l in lists:
            args += [f"%{l}{i}: {t}" for i, t in enumerate(ptypes)]
        args += [f"%s{i}: tensor<f32>" for i in range(n)]
        clauses = (f"params [{', '.join(f'%p{i}' for i in range(n))}] grads [{', '.join(f'%g{i}' for i in range(n))}]"
                   f" exp_avgs [{', '.join(f'%m{i}' for i in range(n))}] exp_avg_sqs [{', '.join(f'%v{i}' for i in range(n))}]")
        if opts.get("amsgrad"):
            clauses += f" max_exp_avg_sqs [{', '.join(f'%x{i}' for i in range(n))}]"
        clauses += f" steps [{', '.join(f'%s{i}' for i in range(n))}]"
        state_init = [("zeros", t) for _ in lists for t in ptypes] + [("zeros", "tensor<f32>")] * n
        op = "spmd.adam"
    k = len(result_types)
    lines = [
        f"// Generated by gen_goldens.py from torch.optim (torch {torch.__version__}); do not edit.",
        f"// {name}: {opts}",
        "// RUN: spmd-opt %s --spmd-decompose-optimizers --spmd-decompose-foreach \\",
        "// RUN: | %lower-to-llvm-cpu | %run-cpu \\",
        "// RUN: | %spmd_python %S/check_golden.py %S/" + name + ".golden.json",
        "",
        f"func.func @step({', '.join(args)}) -> ({', '.join(result_types)}) {{",
        f"  %r:{k} = {op} {clauses} {hyper_attrs(kind, opts)} : {', '.join(ptypes)}",
        f"  return {', '.join(f'%r#{i}' for i in range(k))} : {', '.join(result_types)}",
        "}",
        "",
        "func.func private @printMemrefI32(tensor<*xi32>) attributes {llvm.emit_c_interface}",
        "",
        "func.func @main() {",
    ]
    for i, t in enumerate(initial):
        lines.append(f"  %p{i}_0 = arith.constant {dense(t)}")
    state = []
    for j, (_, t) in enumerate(state_init):
        lines.append(f"  %st{j}_0 = arith.constant dense<0.0> : {t}")
        state.append((f"%st{j}", t))
    arg_types = [a.split(": ")[1] for a in args]
    for step in range(STEPS):
        for i, g in enumerate(grads[step]):
            lines.append(f"  %g{i}_{step} = arith.constant {dense(g)}")
        operands = [f"%p{i}_{step}" for i in range(n)] + [f"%g{i}_{step}" for i in range(n)]
        operands += [f"{s}_{step}" for s, _ in state]
        lines.append(f"  %out{step}:{k} = func.call @step({', '.join(operands)}) : ({', '.join(arg_types)}) -> ({', '.join(result_types)})")
        for i in range(n):
            lines.append(f"  %p{i}_{step + 1} = tensor.cast %out{step}#{i} : {ptypes[i]} to {ptypes[i]}")
        for j, (s, t) in enumerate(state):
            lines.append(f"  {s}_{step + 1} = tensor.cast %out{step}#{n + j} : {t} to {t}")
    for i, t in enumerate(result_types):
        it = t.replace("f32>", "i32>")
        lines.append(f"  %bits{i} = arith.bitcast %out{STEPS - 1}#{i} : {t} to {it}")
        lines.append(f"  %u{i} = tensor.cast %bits{i} : {it} to tensor<*xi32>")
        lines.append(f"  func.call @printMemrefI32(%u{i}) : (tensor<*xi32>) -> ()")
    lines += ["  return", "}", ""]
    with open(os.path.join(HERE, name + ".mlir"), "w") as f:
        f.write("\n".join(lines))


def main():
    configs = [(name, "sgd", dict(opts, **{"class": "SGD"})) for name, opts in SGD.items()]
    configs += [(name, "adam", dict(opts, **{"class": cls})) for name, (cls, opts) in ADAM.items()]
    for name, kind, opts in configs:
        initial, grads, params, opt = run_torch(kind, opts)
        results = state_lists(kind, opts, params, opt)
        emit_test(name, kind, opts, initial, grads, results)
        golden = {
            "source": f"torch.optim.{opts['class']}(foreach=True) torch {torch.__version__}",
            "outputs": [{"name": f"{lname}{i}", "bits": bits(t)}
                        for lname, ts in results for i, t in enumerate(ts)],
        }
        with open(os.path.join(HERE, name + ".golden.json"), "w") as f:
            json.dump(golden, f, indent=1)
            f.write("\n")
        print("wrote", name)


if __name__ == "__main__":
    main()
