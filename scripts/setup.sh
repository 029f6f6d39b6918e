#!/usr/bin/env bash
# Installs what is missing, creates (or reuses) the cached Python environment,
# configures and builds. Idempotent: a second run with everything in place only
# runs an incremental build. Meant to be sourced by demo.sh and test.sh, which
# then find SPMD_ROOT, SPMD_BUILD, SPMD_PYTHON and SPMD_LIT set.
set -euo pipefail

SPMD_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SPMD_BUILD=${SPMD_BUILD:-$SPMD_ROOT/build}
SPMD_CACHE=${SPMD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/spmd}
LLVM_PREFIX=/usr/lib/llvm-22

log() { printf '[spmd setup] %s\n' "$*" >&2; }

# --- system packages --------------------------------------------------------
APT_PACKAGES=(
  llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools clang-format-22 lld-22
  cmake ninja-build ccache g++ git
  libopenmpi-dev openmpi-bin libopenblas-dev libgtest-dev libgloo-dev
  python3 python3-venv
)
missing=()
for pkg in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$pkg")
done
if ((${#missing[@]})); then
  log "installing: ${missing[*]}"
  if [ "$(id -u)" -ne 0 ]; then
    log "error: packages are missing and this is not root; run as root"
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# --- Python environment, cached outside the clone ---------------------------
req="$SPMD_ROOT/python/requirements.txt"
key=$(sha256sum "$req" | cut -c1-16)
SPMD_VENV="$SPMD_CACHE/venv-$key"
if [ ! -f "$SPMD_VENV/.complete" ]; then
  log "creating Python environment $SPMD_VENV (first time on this machine: several minutes)"
  rm -rf "$SPMD_VENV"
  mkdir -p "$SPMD_CACHE"
  python3 -m venv "$SPMD_VENV"
  "$SPMD_VENV/bin/pip" install -q --disable-pip-version-check -r "$req"
  touch "$SPMD_VENV/.complete"
fi
SPMD_PYTHON="$SPMD_VENV/bin/python"
# `import spmd` from the environment: this checkout's package, installed
# editable (python/pyproject.toml; the environment is shared by the checkouts
# on this machine, so the last one set up is what a bare `import spmd` gets;
# PYTHONPATH=<checkout>/python picks another). The package finds the compiler
# through SPMD_BUILD, else <its checkout>/build.
site=$("$SPMD_PYTHON" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
rm -f "$site/spmd.pth" # what setup wrote before the package had pyproject.toml
"$SPMD_PYTHON" -c 'import wheel' 2>/dev/null ||
  "$SPMD_PYTHON" -m pip install -q --disable-pip-version-check \
    -r "$SPMD_ROOT/python/build-requirements.txt" >&2
"$SPMD_PYTHON" -m pip install -q --disable-pip-version-check --no-deps \
  --no-build-isolation -e "$SPMD_ROOT/python" >&2
# LLVM's own lit, run by the project's interpreter.
SPMD_LIT=("$SPMD_PYTHON" "$LLVM_PREFIX/bin/lit")

# --- configure and build ----------------------------------------------------
# ccache hashes paths relative to the checkout, so another clone on this
# machine (CI's) reuses what this one compiled.
export CCACHE_BASEDIR="$SPMD_ROOT"
if [ ! -f "$SPMD_BUILD/build.ninja" ] ||
   ! grep -q "^Python3_EXECUTABLE:[A-Z]*=$SPMD_PYTHON\$" "$SPMD_BUILD/CMakeCache.txt"; then
  log "configuring $SPMD_BUILD"
  mkdir -p "$SPMD_BUILD"
  linker_flags=()
  if [ -x "$LLVM_PREFIX/bin/ld.lld" ]; then
    linker_flags=(-DCMAKE_EXE_LINKER_FLAGS="-B$LLVM_PREFIX/bin -fuse-ld=lld"
                  -DCMAKE_SHARED_LINKER_FLAGS="-B$LLVM_PREFIX/bin -fuse-ld=lld")
  fi
  cmake -S "$SPMD_ROOT" -B "$SPMD_BUILD" -G Ninja \
    -DCMAKE_BUILD_TYPE=Release \
    -DMLIR_DIR="$LLVM_PREFIX/lib/cmake/mlir" \
    -DLLVM_EXTERNAL_LIT="$LLVM_PREFIX/bin/lit" \
    -DPython3_EXECUTABLE="$SPMD_PYTHON" \
    -DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache \
    "${linker_flags[@]}" >"$SPMD_BUILD/configure.log" 2>&1 ||
    { cat "$SPMD_BUILD/configure.log"; exit 1; }
  grep "spmd:" "$SPMD_BUILD/configure.log" >&2 || true
fi
log "building"
ninja -C "$SPMD_BUILD" all mlir-doc >&2

export SPMD_ROOT SPMD_BUILD SPMD_PYTHON SPMD_VENV
export PATH="$SPMD_BUILD/bin:$PATH"
