#!/bin/sh
# bench/run.sh — ctx against its baselines, side by side in one run.
# Installs the bench-only packages (bench/setup.sh), builds ctx (the main CMake
# build, build/) and the bench programs (bench/Makefile, into build-bench/),
# generates seeded SST-like inputs and weights, measures the machine's limits, runs
# every case for ctx and the baselines in alternating rounds, checks each against
# the float64 interpreter and prints the table (bench/README.md). Every measurement
# also goes to build-bench/work/results.json (bench/plot.py reads it).
# usage: bench/run.sh [--quick] [--only MODEL]      (--quick: ~4 minutes)
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
"$ROOT/bench/setup.sh"
. "$ROOT/bench/ctx.sh"
make -s -C "$ROOT/bench" OUT="$ROOT/build-bench"
exec /usr/bin/python3 "$ROOT/bench/run.py" --ctx "$CTX" \
  --bin "$ROOT/build-bench" --work "$ROOT/build-bench/work" \
  --json "$ROOT/build-bench/work/results.json" "$@"
