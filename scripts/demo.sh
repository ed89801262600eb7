#!/usr/bin/env bash
# Sets up, builds, and runs ctx's main job on its built-in default: checking
# every model and schedule of the model zoo in examples/, printing the
# TreeLSTM model in canonical form, then running TreeLSTM with the float64
# interpreter on the bundled sample (examples/data/sst_sample.ptb) with the
# seeded default weights.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake -S . -B build -G Ninja >/dev/null
cmake --build build --target ctx >/dev/null
for f in examples/*.ctx examples/*.sched; do
  ./build/driver/ctx check "$f"
  echo "ok    $f"
done
echo
./build/driver/ctx fmt examples/treelstm.ctx
echo
./build/driver/ctx run examples/treelstm.ctx --interp
