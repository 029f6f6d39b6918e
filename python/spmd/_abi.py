"""The runtime's C ABI, as the Python bridge calls it.

Read from the one list of it, include/Spmd/Runtime/RuntimeFunctions.def and
GpuRuntimeFunctions.def (the same file the C headers and the compiler's call
table are generated from; the build copies them into
<build>/include/Spmd/Runtime): every function's ctypes signature, the
element-type and reduction codes, and the mesh packing. Nothing here is
written by hand but the C types of the .def's type names.
"""

import ctypes
import re
from functools import lru_cache
from pathlib import Path

from ._toolchain import build_dir

# The callbacks' typedefs of SpmdRuntime.h.
STORE_SET = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_char_p, ctypes.c_void_p,
                             ctypes.c_int64)
STORE_GET = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_char_p, ctypes.c_void_p,
                             ctypes.c_int64, ctypes.POINTER(ctypes.c_int64))
STORE_WAIT = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_char_p, ctypes.c_int64)
REGION_HOOK = ctypes.CFUNCTYPE(None, ctypes.c_char_p)

# The .def's type names.
CTYPES = {
    "Void": None,
    "I32": ctypes.c_int32,
    "I64": ctypes.c_int64,
    "F32": ctypes.c_float,
    "F64": ctypes.c_double,
    "Str": ctypes.c_char_p,
    "I64Ptr": ctypes.POINTER(ctypes.c_int64),
    "Size": ctypes.c_size_t,
    "VoidPtr": ctypes.c_void_p,
    "StoreSet": STORE_SET,
    "StoreGet": STORE_GET,
    "StoreWait": STORE_WAIT,
    "RegionHook": REGION_HOOK,
}

_FILES = ("RuntimeFunctions.def", "GpuRuntimeFunctions.def")


def _def_folder() -> Path:
    """The build's copy (what the built runtime was compiled from), else the
    checkout's."""
    checkout = (Path(__file__).resolve().parents[2] / "include" / "Spmd" /
                "Runtime")
    try:
        built = build_dir() / "include" / "Spmd" / "Runtime"
    except Exception:  # no build found: _toolchain says so when it matters
        return checkout
    return built if (built / _FILES[0]).exists() else checkout


def _balanced(text: str, start: int) -> int:
    """The index just past the parenthesis that closes the one at `start`."""
    depth = 0
    for i in range(start, len(text)):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
            if depth == 0:
                return i + 1
    raise ValueError("unbalanced parentheses in the runtime's .def")


def _split_top(text: str):
    """`text`'s comma-separated parts outside parentheses."""
    parts, depth, current = [], 0, ""
    for c in text:
        if c == "," and depth == 0:
            parts.append(current.strip())
            current = ""
            continue
        depth += c == "("
        depth -= c == ")"
        current += c
    parts.append(current.strip())
    return parts


def parse(text: str, macros=None):
    """The entries of one .def file: (functions {name: (result, [(type,
    name)])}, dtypes {name: code}, reductions, constants, macros)."""
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = text.replace("\\\n", " ")
    macros = dict(macros or {})
    for m in re.finditer(r"^#define\s+(SPMD_\w+_ARGS)\s+(\(.*)$", text,
                         flags=re.M):
        macros[m.group(1)] = m.group(2).strip()
    functions = {}
    for m in re.finditer(r"^SPMD_RUNTIME_FUNCTION\(", text, flags=re.M):
        body = text[m.end() - 1:_balanced(text, m.end() - 1)][1:-1]
        name, result, params = _split_top(body)
        params = macros.get(params, params)
        args = re.findall(r"SPMD_ARG\(\s*(\w+)\s*,\s*(\w+)\s*\)", params)
        functions[name] = (result, args)
    entries = {}
    for kind in ("DTYPE", "REDUCTION", "CONSTANT"):
        entries[kind] = {
            m.group(1): int(m.group(2), 0)
            for m in re.finditer(rf"^SPMD_{kind}\(\s*(\w+)\s*,\s*(\w+)\s*\)",
                                 text, flags=re.M)}
    return (functions, entries["DTYPE"], entries["REDUCTION"],
            entries["CONSTANT"], macros)


@lru_cache(maxsize=None)
def table():
    """Every runtime function, element type, reduction and constant."""
    functions, dtypes, reductions, constants, macros = {}, {}, {}, {}, {}
    folder = _def_folder()
    for name in _FILES:
        f, d, r, c, macros = parse((folder / name).read_text(), macros)
        functions.update(f)
        dtypes.update(d)
        reductions.update(r)
        constants.update(c)
    return functions, dtypes, reductions, constants


def declare(lib):
    """Sets the ctypes signature of every runtime function `lib` exports
    (libSpmdRuntime, or libSpmdGpuRuntime with its own); returns their
    names."""
    declared = []
    for name, (result, args) in table()[0].items():
        try:
            fn = getattr(lib, name)
        except AttributeError:
            continue  # the other target's function
        fn.restype = CTYPES[result]
        fn.argtypes = [CTYPES[t] for t, _ in args]
        declared.append(name)
    return declared


def dtype_code(name: str) -> int:
    """The element-type code of SPMD_<name> (F32, I64, ...)."""
    return table()[1][name]


def reduction_code(name: str) -> int:
    """The reduction code of SPMD_<name> (SUM, MAX, ...)."""
    return table()[2][name]


def pack_mesh(shape) -> int:
    """A mesh shape as the runtime takes it (spmdMeshWithAxis)."""
    constants = table()[3]
    bits, most = constants["MESH_AXIS_BITS"], constants["MESH_MAX_AXES"]
    if len(shape) > most or any(not 0 < s < (1 << bits) for s in shape):
        raise ValueError(f"the runtime takes meshes of up to {most} axes of "
                         f"1 to {(1 << bits) - 1} ranks, not {list(shape)}")
    packed = 0
    for axis, size in enumerate(shape):
        packed |= size << (bits * axis)
    return packed
