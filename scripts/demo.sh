#!/usr/bin/env bash
# Sets up, builds, and runs ctx's main job on its built-in default: checking
# every model and schedule of the model zoo in examples/, printing the
# TreeLSTM model in canonical form, then running TreeLSTM compiled (the
# float32 kernel, JIT-compiled for this CPU) on the bundled sample
# (examples/data/sst_sample.ptb) with the seeded default weights, timed, and
# cross-checking its outputs against the float64 reference interpreter's
# (docs/testing.md's tolerances: |jit - interp| <= 1e-5 + 1e-4 |interp|).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake -S . -B build -G Ninja >/dev/null
cmake --build build --target ctx >/dev/null
ctx=./build/driver/ctx
for f in examples/*.ctx examples/*.sched; do
  "$ctx" check "$f"
  echo "ok    $f"
done
echo
"$ctx" fmt examples/treelstm.ctx
echo
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# the compiled model: a summary of its outputs, then the time per batch of 4
# trees and the throughput (the run is repeated for a steadier median)
"$ctx" run examples/treelstm.ctx
"$ctx" run examples/treelstm.ctx --batch 4 --repeat 50 --time --output "$out/jit.npy" | grep -v '^ran:'
echo
"$ctx" run examples/treelstm.ctx --interp --output "$out/interp.npy" >/dev/null
/usr/bin/python3 - "$out/jit.npy" "$out/interp.npy" <<'PY'
import sys
import numpy as np
jit, ref = np.load(sys.argv[1]), np.load(sys.argv[2])
assert jit.shape == ref.shape, (jit.shape, ref.shape)
err = np.abs(jit.astype(np.float64) - ref)
bad = int((err > 1e-5 + 1e-4 * np.abs(ref)).sum())
print("cross-check: compiled (float32) vs interpreter (float64): %d x %d outputs, "
      "max |diff| %.2e, %d outside 1e-5 + 1e-4 |ref|" % (ref.shape + (err.max(), bad)))
sys.exit(1 if bad else 0)
PY
