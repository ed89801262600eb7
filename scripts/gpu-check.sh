#!/bin/sh
# gpu-check.sh — the CUDA backend on a GPU (docs/cuda.md, TESTING.md).
#
#   scripts/gpu-check.sh prepare DIR   here, with ctx built (build/ or $CTX_BUILD):
#                                      write the self-contained bundle (<= 64 MiB)
#   DIR/run.sh                         on the GPU machine (a CUDA driver, Python 3
#                                      with NumPy; no LLVM, no ctx): every zoo
#                                      model x input class on the GPU against the
#                                      interpreter, a latency table, and last
#                                      `N passed, N failed`; 77 without a GPU
#   scripts/gpu-check.sh [--quick]     both here: prepare into a temporary
#                                      directory and run it (77: no GPU here)
#
# --quick leaves out the ~100,000-node chains.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
build=${CTX_BUILD:-$root/build}
ctx=$build/driver/ctx
gpu_run=$build/lang-tests/gpu_run
quick=""
prepare() {
  for f in "$ctx" "$gpu_run"; do
    [ -x "$f" ] || { echo "gpu-check: $f not built (cmake --build build)" >&2; exit 2; }
  done
  /usr/bin/python3 "$root/scripts/gpu/bundle.py" --ctx "$ctx" --gpu-run "$gpu_run" --out "$1" $quick
}
if [ "${1:-}" = "prepare" ]; then
  [ $# -ge 2 ] || { echo "usage: gpu-check.sh prepare DIR [--quick]" >&2; exit 2; }
  [ "${3:-}" = "--quick" ] && quick=--quick
  prepare "$2"
  exit 0
fi
[ "${1:-}" = "--quick" ] && quick=--quick
if ! "$gpu_run" --probe >/dev/null 2>&1; then
  "$gpu_run" --probe || true
  echo "skipped: no CUDA driver or GPU on this machine (prepare a bundle and run it on one)"
  exit 77
fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
prepare "$dir/bundle"
"$dir/bundle/run.sh"
