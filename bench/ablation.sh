#!/bin/sh
# bench/ablation.sh — each schedule primitive's effect on every zoo model, and
# ctx tune against the default (bench/ablation.py; bench/README.md "Ablation").
# usage: bench/ablation.sh [--quick] [--only MODEL] [--budget SECONDS] [--no-tune]
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
"$ROOT/bench/setup.sh"
. "$ROOT/bench/ctx.sh"
mkdir -p "$ROOT/build-bench/ablation"
exec /usr/bin/python3 "$ROOT/bench/ablation.py" --ctx "$CTX" \
  --work "$ROOT/build-bench/ablation" --json "$ROOT/build-bench/ablation/results.json" "$@"
