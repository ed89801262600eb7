#!/usr/bin/env bash
# Sets up, builds and runs every test of ctx.
#   scripts/test.sh              the normal build (build/), warnings as errors
#   scripts/test.sh --sanitize   the same suite under ASan + UBSan (build-asan/)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh

build=build
flags=(-DCTX_WERROR=ON)
if [ "${1:-}" = "--sanitize" ]; then
  build=build-asan
  flags+=(-DCTX_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug)
fi
cmake -S . -B "$build" -G Ninja "${flags[@]}" >/dev/null
cmake --build "$build"
# A 32 MB quarantine (ASan's default: 256 MB) holds a freed block back from
# reuse for 32 MB of later frees. Most of what a test frees is LLVM's compile-
# time churn, and with the default every run faulted in ~300 MB of fresh pages:
# differential_jit_no_cse took 163 s alone on a Zen 5 host, 116 s at 32 MB.
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:quarantine_size_mb=32
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# The tests' compiled kernels go to a kernel cache of this build, emptied
# first (codegen/cg_cache.c): a kernel many tests run (the same model and
# optimization settings on other inputs, thread counts, engines) is compiled
# once, and nothing is written to the user's own cache.
export CTX_CACHE_DIR="$PWD/$build/kernel-cache"
rm -rf "$CTX_CACHE_DIR"
ctest --test-dir "$build" --output-on-failure --no-tests=error -j"$(nproc)"
