"""FX graph -> linalg-on-tensors text, through torch-mlir.

torch-mlir carries its own LLVM, so the module crosses into spmd's LLVM 22
as text (with locations: the FX nodes' stack traces become file:line
locations, which spmd-opt's diagnostics then point at). Until it is printed
it is worked on as IR objects: custom ops replaced, dialects checked, the
function made private (docs/Rationale.md, "IR as text, edited as objects").
What torch-mlir cannot lower, and what it lowers outside the dialects spmd
compiles (e.g. `tm_tensor.scan` for cumsum), is reported here with the op
and the user's source line.

torch-mlir is imported on the first import, not with `spmd` (a process
whose programs are all cached never loads it: _import_cache.py).
"""

import re
import warnings

import torch

from ._errors import UnsupportedError
from ._trace import user_frame

# Dialects of linalg-on-tensors IR that spmd-opt parses, distributes and
# lowers.
SUPPORTED_DIALECTS = {"arith", "math", "linalg", "tensor", "func", "cf",
                      "spmd"}

# The bridge's custom ops (python/spmd/_attention.py), as torch-mlir imports
# them, and the spmd ops they become.
_CUSTOM_OPS = {
    "torch.spmd.attention": "spmd.attention",
    "torch.spmd.attention_backward": "spmd.attention_grad",
    "torch.spmd.optimization_barrier": "spmd.optimization_barrier",
}

_OWN = re.compile(r"/(torch|torch_mlir|spmd)/")


def _user_location(loc_text: str):
    files = re.findall(r'"([^"]+)":(\d+):\d+', loc_text)
    for path, line in files:  # callsite(callee at caller): innermost first
        if not _OWN.search(path) and not path.startswith("<"):
            return f"{path}:{line}"
    return None


def _source_line(location: str) -> str:
    path, line = location.rsplit(":", 1)
    try:
        with open(path) as f:
            code = f.read().splitlines()[int(line) - 1].strip()
        return f"{location}: {code}"
    except (OSError, IndexError, ValueError):
        return location


def _aten_ops_at(graph, location):
    """The aten ops of `graph` whose user frame is `location`."""
    ops = []
    for node in graph.graph.nodes:
        trace = node.meta.get("stack_trace") or ""
        frames = re.findall(r'File "([^"]+)", line (\d+)', trace)
        # Called from the user's line itself, not from a module it calls:
        # the innermost frame of the user's code, with no torch module
        # below it.
        inner = [i for i, (path, _) in enumerate(frames)
                 if not _OWN.search(path) and not path.startswith("<")]
        if node.op == "call_function" and inner and \
                isinstance(node.target, torch._ops.OpOverload) and \
                "/torch/nn/modules/" not in "".join(
                    p for p, _ in frames[inner[-1] + 1:]) and \
                f"{frames[inner[-1]][0]}:{frames[inner[-1]][1]}" == location:
            name = str(node.target).rsplit(".", 1)[0]
            if name not in ops:
                ops.append(name)
    return ops


# What a user can do about an op the pipeline cannot compile.
_OUTSIDE_HINT = ("compute it outside the compiled step (before or after the "
                 "call), or swap the module that calls it for a traceable "
                 "one with an spmd.Override")


def _walk(root):
    """`root` and every op nested in it, outermost first: the bindings'
    walk, collected (callers replace and erase ops as they go)."""
    from torch_mlir import ir
    found = []

    def visit(op):
        found.append(op)
        return ir.WalkResult.ADVANCE
    root.walk(visit, ir.WalkOrder.PRE_ORDER)
    return found


def _check_dialects(module, graph):
    for op in _walk(module.operation):
        dialect = op.name.split(".", 1)[0]
        if dialect in SUPPORTED_DIALECTS or op.name == "builtin.module":
            continue
        # A location prints inline (file:line pairs, innermost first);
        # these bindings have no accessors for its parts.
        where = _user_location(str(op.location))
        aten = _aten_ops_at(graph, where) if where else []
        raise UnsupportedError(
            f"spmd.compile: torch-mlir lowers "
            f"{' / '.join(aten) if aten else 'an op'} to {op.name}, which "
            "spmd cannot compile (it takes linalg, tensor, arith and math)"
            + (f"\n  at {_source_line(where)}" if where else ""),
            hint=_OUTSIDE_HINT)


def _frame_of_op(graph, op):
    """`file:line` of the user's frame of the first `op` node in `graph`."""
    for node in graph.graph.nodes:
        if node.op == "call_function" and str(node.target).startswith(
                op + "."):
            location = user_frame(node.meta.get("stack_trace"))
            if location:
                return location.split(": ", 1)[0]
    return None


def _import_error(diagnostics, err: Exception, graph: torch.fx.GraphModule):
    """A torch-mlir failure, with the aten op and the user's source line."""
    errors = [(loc, msg) for severity, loc, msg in diagnostics
              if severity == "error"] or [("", str(err))]
    loc, message = errors[0]
    ops = re.findall(r"torch\.aten\.([a-z_0-9]+)", message)
    location = _user_location(loc) or _user_location(message)
    op = f"aten.{ops[0]}" if ops else None
    if op is not None and op.endswith("_backward"):
        # A backward op is traced at `loss.backward()`; its forward op's
        # line says which of the user's lines it differentiates.
        location = _frame_of_op(graph, op[:-len("_backward")]) or location
    if location is None and op is not None:
        location = _frame_of_op(graph, op)
    first = message.splitlines()[0] if message else ""
    raise UnsupportedError(
        f"spmd.compile: torch-mlir cannot lower {op or 'the traced graph'} "
        "to linalg"
        + (f"\n  at {_source_line(location)}" if location else "")
        + f"\n  torch-mlir: {first.strip()[:300]}",
        hint=_OUTSIDE_HINT) from None


def _uses_custom_ops(graph) -> bool:
    return any(node.op == "call_function" and
               str(node.target).split(".")[0] == "spmd"
               for node in graph.graph.nodes)


def _custom_ops_to_calls(module):
    """Replaces each `torch.operator` of a bridge custom op by a call of a
    private declaration taking its tensors (torch-mlir converts calls' types
    like any other); returns {callee: (spmd op, scale, causal)}."""
    from torch_mlir import ir
    calls = {}
    operators = [op for op in _walk(module.operation)
                 if op.name == "torch.operator"]
    for op in operators:
        name = ir.StringAttr(op.attributes["name"]).value
        if name not in _CUSTOM_OPS:
            continue
        tensors, scalars = [], []
        for value in op.operands:
            if str(value.type).startswith("!torch.vtensor"):
                tensors.append(value)
            elif not str(value.type).startswith("!torch.none"):
                scalars.append(value.owner.attributes["value"])
        callee = f"__spmd_custom_op_{len(calls)}"
        # The attention ops' scalars: scale, is_causal (the barrier has none).
        calls[callee] = (_CUSTOM_OPS[name],
                         ir.FloatAttr(scalars[0]).value if scalars else None,
                         ir.BoolAttr(scalars[1]).value if scalars else False)
        signature = ir.FunctionType.get([t.type for t in tensors],
                                        [r.type for r in op.results])
        with ir.InsertionPoint.at_block_begin(module.body), op.location:
            ir.Operation.create("func.func", regions=1, attributes={
                "sym_name": ir.StringAttr.get(callee),
                "function_type": ir.TypeAttr.get(signature),
                "sym_visibility": ir.StringAttr.get("private")})
        with ir.InsertionPoint(op), op.location:
            call = ir.Operation.create(
                "func.call", results=[r.type for r in op.results],
                operands=tensors,
                attributes={"callee": ir.FlatSymbolRefAttr.get(callee)})
        for old, new in zip(op.results, call.results):
            old.replace_all_uses_with(new)
        op.erase()
    return calls


def _lower_with_calls(module):
    """torch-mlir's torch -> linalg-on-tensors lowering, but for its final
    backend-contract check, which refuses calls (the custom ops' are
    checked by _check_dialects and replaced after)."""
    from torch_mlir.compiler_utils import run_pipeline_with_repro_report
    from torch_mlir.passmanager import PassManager
    run_pipeline_with_repro_report(
        module, "builtin.module(func.func(torch-match-quantized-custom-ops), "
        "torchdynamo-export-to-torch-backend-pipeline{ extra-library=})",
        "Lowering TorchFX IR -> Torch Backend IR")
    with module.context:
        full = str(PassManager.parse(
            "builtin.module(torch-backend-to-linalg-on-tensors-backend-"
            "pipeline{allow-non-finites=True})"))
    check = ",torch-verify-linalg-on-tensors-backend-contract)"
    if not full.endswith(check):
        raise UnsupportedError(
            "spmd.compile: this torch-mlir's linalg pipeline does not end "
            "with its backend-contract check; the attention op cannot be "
            f"imported:\n  {full[-200:]}",
            hint="install the torch-mlir of requirements.txt, or set "
            "SPMD_ATTENTION=math")
    run_pipeline_with_repro_report(
        module, full[:-len(check)] + ")",
        "Lowering Torch Backend IR -> Linalg-on-Tensors Backend IR")


def _calls_to_spmd_ops(module, calls):
    """The calls of _custom_ops_to_calls as the spmd ops (created
    unregistered in torch-mlir's context; spmd-opt reads them), and their
    declarations erased."""
    from torch_mlir import ir
    for op in _walk(module.operation):
        if op.name != "func.call":
            continue
        callee = ir.FlatSymbolRefAttr(op.attributes["callee"]).value
        if callee not in calls:
            continue
        name, scale, causal = calls[callee]
        attributes = {}
        if scale is not None:
            attributes["scale"] = ir.FloatAttr.get_f64(scale)
        if causal:
            attributes["causal"] = ir.UnitAttr.get()
        with ir.InsertionPoint(op), op.location:
            spmd_op = ir.Operation.create(
                name, results=[r.type for r in op.results],
                operands=list(op.operands), attributes=attributes)
        for old, new in zip(op.results, spmd_op.results):
            old.replace_all_uses_with(new)
        op.erase()
    for op in _functions(module):
        if ir.StringAttr(op.attributes["sym_name"]).value in calls:
            op.erase()


def _functions(module):
    """The module's top-level `func.func` ops, as operations (an OpView's
    `name` is the function's symbol, not the op's name)."""
    return [op.operation for op in module.body.operations
            if op.operation.name == "func.func"]


def _functions_text(module, name: str) -> str:
    """The module's functions as text, `name` made private (the program's
    entry calls it; spmd-opt inlines it), each printed on its own: with
    locations and affine maps inline, so the text goes into the program's
    module as it is."""
    from torch_mlir import ir
    found = False
    for op in _functions(module):
        if ir.StringAttr(op.attributes["sym_name"]).value == name:
            op.attributes["sym_visibility"] = ir.StringAttr.get("private")
            found = True
    if not found:
        raise UnsupportedError(
            f"spmd.compile: the imported module has no function @{name}")
    return "\n".join(op.get_asm(enable_debug_info=True)
                     for op in module.body.operations)


def _inline_literals():
    """torch-mlir importer hooks that give a constant tensor of the graph
    its data inline (a dense elements attribute) instead of a
    `dense_resource` blob: a blob lives in the module's resource section,
    which a function printed on its own (_functions_text) leaves out."""
    import numpy as np
    from torch_mlir import ir
    from torch_mlir.extras.fx_importer import (TORCH_DTYPE_TO_MLIR_TYPE,
                                               TORCH_DTYPE_TO_NPY_TYPE,
                                               FxImporterHooks)

    class Hooks(FxImporterHooks):
        def resolve_literal(self, gni, literal, info):
            if not isinstance(literal, torch.Tensor) or literal.numel() <= 1:
                return None  # torch-mlir's own: a splat, or not a tensor
            if literal.dtype in (torch.bfloat16, torch.float16):
                # numpy has no bfloat16: the same 16 bits, typed by MLIR.
                data = np.array(literal.view(torch.int16).tolist(),
                                dtype=np.int16)
            else:
                # tolist(): .numpy() refuses under make_fx's fake mode.
                data = np.array(literal.tolist()).astype(
                    TORCH_DTYPE_TO_NPY_TYPE[literal.dtype])
            value = ir.DenseElementsAttr.get(
                data, type=TORCH_DTYPE_TO_MLIR_TYPE[literal.dtype](),
                shape=list(literal.shape))
            return ir.Operation.create(
                "torch.vtensor.literal",
                results=[gni._cc.tensor_to_vtensor_type(literal)],
                attributes={"value": value}).result

    return Hooks()


def import_graph(graph: torch.fx.GraphModule, name: str) -> str:
    """linalg-on-tensors text of `graph`: a private function `name` (and
    any it calls), for the program's module (_program.build)."""
    from torch_mlir import fx, ir
    from torch_mlir.dialects import torch as torch_dialect
    from torch_mlir.extras.fx_importer import FxImporter
    context = ir.Context()
    torch_dialect.register_dialect(context)
    diagnostics = []

    def collect(diagnostic):
        severity = str(diagnostic.severity).rsplit(".", 1)[-1].lower()
        diagnostics.append((severity, str(diagnostic.location),
                            diagnostic.message))
        return True  # handled: torch-mlir's stderr stays quiet
    context.attach_diagnostic_handler(collect)
    try:
        with warnings.catch_warnings():
            # torch-mlir's importer uses pytree APIs torch 2.10 deprecates.
            warnings.simplefilter("ignore", FutureWarning)
            calls = None
            importer = FxImporter(context=context, hooks=_inline_literals())
            if _uses_custom_ops(graph):
                module = fx.stateless_fx_import(
                    graph, output_type="raw", model_name=name,
                    fx_importer=importer)
                with context:
                    calls = _custom_ops_to_calls(module)
                _lower_with_calls(module)
            else:
                module = fx.stateless_fx_import(
                    graph, output_type="linalg-on-tensors", model_name=name,
                    fx_importer=importer)
    except UnsupportedError:
        raise
    except Exception as err:  # torch-mlir raises its own compiler errors
        _import_error(diagnostics, err, graph)
    with context:
        context.allow_unregistered_dialects = True  # the spmd ops
        if calls:
            _calls_to_spmd_ops(module, calls)
        _check_dialects(module, graph)
        return _functions_text(module, name)
