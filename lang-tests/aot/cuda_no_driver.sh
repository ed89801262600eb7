#!/bin/sh
# cuda_no_driver.sh — `ctx run --target cuda` and a `ctx build --target cuda`
# library on a machine without a CUDA driver (docs/cuda.md): the documented
# message and exit 3 (ctx run), the library's message (aot_run: exit 1),
# never a crash; the same against the toolkit's stub libcuda.so, whose every
# call fails with 34, where the toolkit is installed.
#
#   cuda_no_driver.sh CTX AOT_RUN SOURCE_DIR
set -u
ctx=$1 aot=$2 src=$3
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fails=0
expect() { # WHAT WANT-RC WANT-STDERR-LINE RC
  if [ "$4" != "$2" ] || ! grep -qxF "$3" "$tmp/err"; then
    echo "FAIL $1: exit $4 (want $2), stderr:"; cat "$tmp/err"; fails=$((fails + 1))
  else
    echo "ok   $1"
  fi
}
model=$src/examples/treelstm.ctx
export CTXRT_CUDA_DRIVER=/nonexistent/libcuda.so.1
"$ctx" run --target cuda -D H=16 "$model" >/dev/null 2>"$tmp/err"
expect "ctx run --target cuda, no driver" 3 \
  "ctx: error: no CUDA driver (/nonexistent/libcuda.so.1 not found)" $?
if ! "$ctx" build --target cuda -D H=16 "$model" -o "$tmp/lib" >/dev/null 2>"$tmp/err"; then
  echo "FAIL ctx build --target cuda:"; cat "$tmp/err"; exit 1
fi
grep -q 'treelstm_ptx, "ctx_treelstm_kernel", 256' "$tmp/lib/treelstm_model.c" ||
  { echo "FAIL the library's descriptor names no PTX"; fails=$((fails + 1)); }
"$aot" "$tmp/lib" treelstm --input "$src/examples/data/sst_sample.ptb" --output "$tmp/o.npy" \
  >/dev/null 2>"$tmp/err"
expect "the built library, no driver" 1 \
  "aot_run: error: error: no CUDA driver (/nonexistent/libcuda.so.1 not found)" $?
stub=/usr/local/cuda/lib64/stubs/libcuda.so
if [ -r "$stub" ]; then
  export CTXRT_CUDA_DRIVER=$stub
  "$ctx" run --target cuda -D H=16 "$model" >/dev/null 2>"$tmp/err"
  expect "ctx run --target cuda, stub driver" 3 \
    "ctx: error: CUDA driver: cuInit failed: CUDA_ERROR_STUB_LIBRARY (34)" $?
else
  echo "note: $stub absent (no CUDA toolkit): stub case skipped"
fi
[ "$fails" = 0 ]
