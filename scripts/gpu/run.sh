#!/bin/sh
# run.sh — the GPU check, on a machine with a CUDA driver and a GPU (docs/cuda.md):
# every case of cases.json on the GPU against the interpreter's outputs, then a
# latency table. The last line is `N passed, N failed`. Exit 0 when all
# passed, 1 on a failure, 77 where no CUDA driver or GPU is present.
here=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH="$here/deps${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if ! "$here/gpu_run" --probe; then
  echo "skipped: no CUDA driver or GPU here"
  exit 77
fi
exec python3 "$here/check.py" "$here"
