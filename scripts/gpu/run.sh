#!/bin/sh
# run.sh — the GPU check, on a machine with a CUDA driver and a GPU (docs/cuda.md):
# every case of cases.json on the GPU against the interpreter's outputs, then a
# latency table, within about 5 minutes (check.py's deadline). The last line is
# `N passed, N failed`. Exit 0 when all passed, 1 on a failure (a harness that
# cannot run here included), 77 where no CUDA driver or GPU is present.
here=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH="$here/deps${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# the driver's cache of JIT-compiled kernels, in the bundle (writable: the
# outputs go there too): each library's PTX is compiled once, not once per
# process, whatever HOME is on that machine
export CUDA_CACHE_PATH="${CUDA_CACHE_PATH:-$here/jit-cache}"
[ -x "$here/gpu_run" ] || chmod +x "$here/gpu_run" 2>/dev/null
"$here/gpu_run" --probe
rc=$?
if [ "$rc" = 77 ]; then
  echo "skipped: no CUDA driver or GPU here"
  exit 77
elif [ "$rc" != 0 ]; then
  # not the probe's answer: the harness itself does not run on this machine
  echo "run.sh: $here/gpu_run --probe exited $rc (the harness does not run here)"
  echo "0 passed, 1 failed"
  exit 1
fi
# unbuffered: every line is out as soon as it is known, even if this is cut off
exec python3 -u "$here/check.py" "$here"
