#!/bin/sh
# bench/plot.sh — latency against tree size (bench/plot.py), after the same setup
# and build as bench/run.sh. usage: bench/plot.sh [--model M] [--H N] [--sizes L,..]
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
"$ROOT/bench/setup.sh"
CTX=${CTX:-$ROOT/build/driver/ctx}
if [ ! -x "$CTX" ]; then
  [ -f "$ROOT/build/CMakeCache.txt" ] || cmake -S "$ROOT" -B "$ROOT/build" >/dev/null
  cmake --build "$ROOT/build" --target ctx -j"$(nproc)" >/dev/null
fi
make -s -C "$ROOT/bench" OUT="$ROOT/build-bench"
exec /usr/bin/python3 "$ROOT/bench/plot.py" --ctx "$CTX" --bin "$ROOT/build-bench" \
  --work "$ROOT/build-bench/work" "$@"
