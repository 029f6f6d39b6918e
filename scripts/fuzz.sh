#!/usr/bin/env bash
# Fuzzes the compiler: spmd-fuzz (tools/spmd-fuzz, libFuzzer + ASan/UBSan)
# parses, verifies and runs --spmd-distribute --spmd-lower-to-cpu on mutated
# programs, seeded from every test case in test/ and guided by the spmd
# keyword dictionary.
#
#   bash scripts/fuzz.sh [SECONDS] [JOBS]   # default 60 s, 1 job
#
# The corpus grows in build-sanitize/fuzz/corpus across runs. A crash leaves
# its input in build-sanitize/fuzz/crash-* and fails the run: turn it into a
# test in test/Malformed (or a positive test) before fixing it. Prints the
# number of executions; SPMD_FUZZ_XML=FILE also writes a JUnit report.
set -euo pipefail
seconds=${1:-60}
jobs=${2:-1}
source "$(dirname "${BASH_SOURCE[0]}")/sanitize.sh"

fuzz_dir="$SPMD_SANITIZE_BUILD/fuzz"
corpus="$fuzz_dir/corpus"
seeds="$fuzz_dir/seeds"
mkdir -p "$corpus" "$seeds"
# One seed per test case (split at `// -----`), refreshed every run.
"$SPMD_PYTHON" - "$SPMD_ROOT/test" "$seeds" <<'PY'
import pathlib, sys
root, out = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
for old in out.glob("*.mlir"):
    old.unlink()
n = 0
for path in sorted(root.rglob("*.mlir")):
    for i, case in enumerate(path.read_text(errors="replace").split("// -----")):
        lines = [l for l in case.splitlines() if "RUN:" not in l]
        text = "\n".join(lines).strip()
        if text:
            (out / f"{path.stem}-{i}.mlir").write_text(text + "\n")
            n += 1
print(f"[spmd fuzz] {n} seeds from {root}", file=sys.stderr)
PY

log="$fuzz_dir/last-run.log"
start=$(date +%s)
status=0
(cd "$fuzz_dir" &&
 ASAN_OPTIONS=allow_user_poisoning=0:detect_leaks=0 \
 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
 "$SPMD_SANITIZE_BUILD/bin/spmd-fuzz" "$corpus" "$seeds" \
   -dict="$SPMD_ROOT/tools/spmd-fuzz/spmd.dict" \
   -max_total_time="$seconds" -max_len=8192 -timeout=30 -rss_limit_mb=4096 \
   -print_final_stats=1 -artifact_prefix="$fuzz_dir/" \
   $([ "$jobs" -gt 1 ] && echo "-fork=$jobs -ignore_crashes=0") \
) >"$log" 2>&1 || status=$?
elapsed=$(( $(date +%s) - start ))
execs=$({ grep -o "stat::number_of_executed_units: *[0-9]*" "$log" || true; } |
  awk '{s += $2} END {print s + 0}')
if [ "$execs" = 0 ]; then
  # -fork mode reports progress lines instead of final stats.
  execs=$({ grep -o "^#[0-9]*" "$log" || true; } | tail -1 | tr -d '#')
fi
echo "[spmd fuzz] ${execs:-0} executions in ${elapsed} s; corpus: $(ls "$corpus" | wc -l) inputs; log: $log"
crashes=$(ls "$fuzz_dir" | grep -E '^(crash|leak|timeout|oom)-' || true)
if [ "$status" -ne 0 ] || [ -n "$crashes" ]; then
  echo "[spmd fuzz] FAILED (exit $status):" >&2
  grep -E "ERROR: (AddressSanitizer|libFuzzer|UndefinedBehaviorSanitizer)|runtime error|LLVM ERROR|SUMMARY" "$log" | head -5 >&2 || true
  # The stack and the input itself: a CI machine's crash file is gone once
  # the run ends, and its log is all there is to reproduce it from.
  grep -E "^ +#[0-9]+ 0x" "$log" | head -25 >&2 || true
  for c in $crashes; do
    echo "  input: $fuzz_dir/$c ($(wc -c <"$fuzz_dir/$c") bytes), base64:" >&2
    head -c 6000 "$fuzz_dir/$c" | base64 >&2
  done
  status=1
fi
if [ -n "${SPMD_FUZZ_XML:-}" ]; then
  "$SPMD_PYTHON" - "$SPMD_FUZZ_XML" "$status" "$execs" "$seconds" "$log" <<'PY'
import sys
from xml.sax.saxutils import escape
path, status, execs, seconds, log = sys.argv[1:]
body = ""
if status != "0":
    tail = open(log, errors="replace").read()[-4000:]
    body = f'<failure message="spmd-fuzz found a crash">{escape(tail)}</failure>'
open(path, "w").write(
    '<?xml version="1.0"?><testsuites><testsuite name="spmd-fuzz" tests="1">'
    f'<testcase classname="spmd-fuzz" name="fuzz {seconds} s ({execs} executions)">'
    f"{body}</testcase></testsuite></testsuites>\n")
PY
fi
exit "$status"
