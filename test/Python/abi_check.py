#!/usr/bin/env python3
"""The runtime ABI is listed once (include/Spmd/Runtime/RuntimeFunctions.def,
GpuRuntimeFunctions.def) and generated three ways: the C prototypes of
SpmdRuntime.h / SpmdGpuRuntime.h (the preprocessor), the compiler's call
table (the declarations convert-spmd-to-runtime and the codegen passes
emit), and the ctypes declarations of the Python bridge (its own parser of
the .def, python/spmd/_abi.py, and its dtype codes). This checks the
generated outputs against the preprocessed headers, so that a generator that
reads the list differently fails a test instead of corrupting arguments at
run time.

    spmd-opt ... --convert-spmd-to-runtime | abi_check.py PREPROCESSED_HEADER...

Reads the compiler's `func.func private @spmd...` declarations from stdin;
prints one line per check.
"""

import ctypes
import re
import sys

C_TYPES = {"int64_t": "i64", "int32_t": "i32", "double": "f64", "float": "f32",
           "size_t": "i64", "void": None}


def c_type(text):
    text = text.strip()
    if "*" in text or text.startswith(("SpmdStore", "SpmdRegionHook")):
        return "ptr"  # pointers and the callback typedefs
    words = [w for w in text.replace("const", "").split()]
    return C_TYPES.get(words[0], words[0]) if words else None


def header_functions(paths):
    functions, dtypes = {}, {}
    for path in paths:
        text = open(path).read()
        text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
        text = re.sub(r"//[^\n]*", "", text)
        for m in re.finditer(r"([A-Za-z_][\w\s\*]*?)\b(spmd\w+|_mlir_memref_to_llvm_\w+)\s*"
                             r"\(([^)]*)\)\s*;",
                             text):
            params = [p for p in m.group(3).split(",")
                      if p.strip() and p.strip() != "void"]
            # Drop the parameter names: the type is what comes before them.
            types = [c_type(re.sub(r"\b\w+\s*$", "", p) if
                            len(p.split()) > 1 else p) for p in params]
            functions[m.group(2)] = (c_type(m.group(1)), types)
        for m in re.finditer(r"SPMD_(\w+)\s*=\s*(\d+)", text):
            dtypes[m.group(1)] = int(m.group(2))
    return functions, dtypes


def compiler_functions(mlir):
    found = {}
    for m in re.finditer(r"func\.func private @(spmd\w+)\(([^)]*)\)"
                         r"(?:\s*->\s*([\w!.]+))?", mlir):
        params = [p.strip() for p in m.group(2).split(",") if p.strip()]
        norm = lambda t: "ptr" if "ptr" in t else t  # noqa: E731
        found[m.group(1)] = (norm(m.group(3)) if m.group(3) else None,
                             [norm(p) for p in params])
    return found


class _Function:
    argtypes = None
    restype = ctypes.c_int  # ctypes' default

    def __call__(self, *args):
        return 1


class _Recorder:
    """Stands in for the loaded library: records what the bridge declares."""

    def __init__(self, *args, **kwargs):
        self.functions = {}

    def __getattr__(self, name):
        return self.functions.setdefault(name, _Function())


def ctypes_type(t):
    if t is None:
        return None
    if t in (ctypes.c_int64, ctypes.c_longlong):
        return "i64"
    if t in (ctypes.c_int32, ctypes.c_int):
        return "i32"
    if t is ctypes.c_size_t:
        return "i64"
    if t is ctypes.c_float:
        return "f32"
    if t is ctypes.c_double:
        return "f64"
    if t in (ctypes.c_char_p, ctypes.c_void_p) or \
            getattr(t, "_flags_", 0) & ctypes._FUNCFLAG_CDECL or \
            (isinstance(t, type) and issubclass(t, ctypes._Pointer)):
        return "ptr"
    return repr(t)


def python_functions():
    from spmd import _runtime
    recorder = _Recorder()
    saved = (_runtime.ctypes.CDLL, _runtime.atexit.register,
             _runtime._report_uncaught_exceptions, _runtime._lib)
    _runtime.ctypes.CDLL = lambda *a, **k: recorder
    _runtime.atexit.register = lambda *a, **k: None
    _runtime._report_uncaught_exceptions = lambda lib: None
    _runtime._lib = None
    try:
        _runtime.runtime()
        # The GPU target's own calls (SpmdGpuRuntime.h), declared when it
        # loads libSpmdGpuRuntime.
        from spmd import _device
        _device.Gpu(recorder, mirrored=True)
    finally:
        (_runtime.ctypes.CDLL, _runtime.atexit.register,
         _runtime._report_uncaught_exceptions, _runtime._lib) = saved
    found = {}
    for name, f in recorder.functions.items():
        if f.argtypes is None and f.restype is ctypes.c_int:
            continue  # only called, nothing declared
        found[name] = (ctypes_type(f.restype) if f.restype is not ctypes.c_int
                       else "i32", [ctypes_type(a) for a in f.argtypes or []],
                       f.argtypes is not None)
    return found


def main():
    header, dtypes = header_functions(sys.argv[1:])
    bad = 0

    def compare(where, name, result, params, check_params=True):
        nonlocal bad
        if name not in header:
            print(f"{where}: {name} is not declared in the header")
            bad += 1
            return
        want_result, want_params = header[name]
        if result != want_result or (check_params and params != want_params):
            print(f"{where}: {name}({', '.join(map(str, params))}) -> {result}"
                  f" vs the header's ({', '.join(map(str, want_params))}) -> "
                  f"{want_result}")
            bad += 1

    emitted = compiler_functions(sys.stdin.read())
    for name, (result, params) in sorted(emitted.items()):
        compare("compiler", name, result, params)
    print(f"compiler: {len(emitted)} runtime functions checked")
    declared = python_functions()
    for name, (result, params, has_args) in sorted(declared.items()):
        compare("python", name, result, params, has_args)
    print(f"python: {len(declared)} runtime functions checked")
    import torch
    from spmd._program import DTYPE_CODE
    names = {torch.float32: "F32", torch.float64: "F64", torch.int32: "I32",
             torch.int64: "I64", torch.bfloat16: "BF16", torch.float16: "F16",
             torch.bool: "BOOL"}
    for dtype, code in DTYPE_CODE.items():
        if dtypes.get(names[dtype]) != code:
            print(f"python: dtype {dtype} is {code}, the header's "
                  f"SPMD_{names[dtype]} is {dtypes.get(names[dtype])}")
            bad += 1
    print(f"python: {len(DTYPE_CODE)} dtype codes checked")
    print("ABI: OK" if not bad else f"ABI: {bad} MISMATCHES")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
