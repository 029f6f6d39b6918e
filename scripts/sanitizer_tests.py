#!/usr/bin/env python3
"""Prints a lit --filter regex naming the tests that run a compiler (spmd-opt,
spmd-gpu-opt) and nothing else but FileCheck and shell glue (not, count,
split-file, sed, diff): the tests the sanitizer build runs
(scripts/sanitize.sh).

    sanitizer_tests.py TEST_DIR [--list | --under BUILD_TEST_DIR]

--under prints the tests' paths in a build's test folder (one a line), for
lit to run exactly those (no excluded tests in its report).
"""

import pathlib
import re
import shlex
import sys

ALLOWED = {"spmd-opt", "spmd-gpu-opt", "FileCheck", "not", "count",
           "split-file", "sed", "cat", "echo", "diff", "spmd-fuzz"}
COMPILERS = {"spmd-opt", "spmd-gpu-opt", "spmd-fuzz"}
RUN = re.compile(r"^\s*(?://|#)\s*RUN:\s?(.*)$")


def run_lines(path):
    lines, pending = [], ""
    for line in path.read_text(errors="replace").splitlines():
        m = RUN.match(line)
        if not m:
            continue
        text = pending + m.group(1)
        if text.rstrip().endswith("\\"):
            pending = text.rstrip()[:-1] + " "
            continue
        pending = ""
        lines.append(text)
    return lines


def commands(line):
    """The program of each stage of a RUN line (after env and not)."""
    for stage in re.split(r"\|\||&&|\||;", line):
        try:
            words = shlex.split(stage, comments=False)
        except ValueError:
            yield "<unparsable>"
            continue
        words = [w for w in words if not re.match(r"^[A-Z_]+=", w)]
        while words and words[0] in ("env", "not", "--crash"):
            words = words[1:]
        words = [w for w in words if not (w.startswith("<") or
                                          w.startswith(">") or w == "2>&1")]
        if words:
            yield words[0]


def selected(root):
    for path in sorted(root.rglob("*")):
        if path.suffix not in (".mlir", ".test") or "Inputs" in path.parts:
            continue
        used = {c for line in run_lines(path) for c in commands(line)}
        if used & COMPILERS and used <= ALLOWED:
            yield path.relative_to(root).as_posix()


def main(argv):
    root = pathlib.Path(argv[0])
    tests = list(selected(root))
    if "--list" in argv:
        print("\n".join(tests))
    elif "--under" in argv:
        build = pathlib.Path(argv[argv.index("--under") + 1])
        print("\n".join(str(build / t) for t in tests))
    else:
        print(":: (" + "|".join(re.escape(t) for t in tests) + ")$")
    return 0 if tests else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
