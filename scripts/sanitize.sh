#!/usr/bin/env bash
# The sanitizer build: spmd-opt, spmd-gpu-opt and spmd-fuzz compiled with
# clang-22, -fsanitize=address,undefined and libFuzzer's coverage, in
# build-sanitize/ (ccache'd). Sourced (by test.sh, fuzz.sh) it only sets up and
# builds, exporting SPMD_SANITIZE_BUILD; run, it also runs every lit test that
# uses only the compilers and FileCheck under the sanitizers:
#
#   bash scripts/sanitize.sh            # build + sanitized lit subset
#
# Needs scripts/setup.sh first (sourced here when SPMD_PYTHON is unset).
set -euo pipefail
_here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if [ -z "${SPMD_PYTHON:-}" ]; then
  source "$_here/setup.sh"
fi
SPMD_SANITIZE_BUILD=${SPMD_SANITIZE_BUILD:-$SPMD_ROOT/build-sanitize}

_missing=()
for pkg in clang-22 libclang-rt-22-dev libfuzzer-22-dev; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" ||
    _missing+=("$pkg")
done
if ((${#_missing[@]})); then
  echo "[spmd sanitize] installing: ${_missing[*]}" >&2
  DEBIAN_FRONTEND=noninteractive apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    "${_missing[@]}" >/dev/null
fi

if [ ! -f "$SPMD_SANITIZE_BUILD/build.ninja" ]; then
  echo "[spmd sanitize] configuring $SPMD_SANITIZE_BUILD" >&2
  mkdir -p "$SPMD_SANITIZE_BUILD"
  cmake -S "$SPMD_ROOT" -B "$SPMD_SANITIZE_BUILD" -G Ninja \
    -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER=/usr/lib/llvm-22/bin/clang \
    -DCMAKE_CXX_COMPILER=/usr/lib/llvm-22/bin/clang++ \
    -DSPMD_SANITIZE=address,undefined -DSPMD_FUZZER=ON \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit \
    -DPython3_EXECUTABLE="$SPMD_PYTHON" \
    -DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache \
    -DCMAKE_EXE_LINKER_FLAGS="-fuse-ld=lld" \
    -DCMAKE_SHARED_LINKER_FLAGS="-fuse-ld=lld" \
    >"$SPMD_SANITIZE_BUILD/configure.log" 2>&1 ||
    { cat "$SPMD_SANITIZE_BUILD/configure.log"; exit 1; }
fi
echo "[spmd sanitize] building spmd-opt spmd-gpu-opt spmd-fuzz" >&2
targets=(spmd-opt spmd-gpu-opt spmd-fuzz)
ninja -C "$SPMD_SANITIZE_BUILD" "${targets[@]}" >&2
export SPMD_SANITIZE_BUILD

# Run (not sourced): the sanitized lit subset.
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  mapfile -t sanitized < <("$SPMD_PYTHON" "$SPMD_ROOT/scripts/sanitizer_tests.py" \
    "$SPMD_ROOT/test" --under "$SPMD_SANITIZE_BUILD/test")
  exec "${SPMD_LIT[@]}" -sv "$@" "${sanitized[@]}"
fi
