#!/bin/sh
# check_install.sh BUILD PREFIX [CFLAGS [PYTHON]] — the install_prefix test:
# `cmake --install BUILD --prefix PREFIX`, then every installed part is where
# the README says and works from there: the installed ctx runs an installed
# example on its bundled sample (compiled and interpreted), and a C program
# compiles and links against the installed header and libctxrt (with CFLAGS:
# the sanitizers of a sanitized build). Then the prefix is moved elsewhere:
# its ctx says it uses the moved prefix's runtime, `ctx build -v` links
# that one, and the library it builds gives ctx run's numbers (compared by
# PYTHON with NumPy, default python3). CTX_HOME overrides the prefix; a ctx
# outside an install prefix and the build tree finds no runtime.
set -eu
build=$1
prefix=$2
cflags=${3:-}
python=${4:-python3}
src=$(cd "$(dirname "$0")/.." && pwd -P)
rm -rf "$prefix"
cmake --install "$build" --prefix "$prefix" >/dev/null
for f in bin/ctx lib/libctxrt.a include/ctxrt.h share/ctx/stdlib/nn/lstm.ctx \
         share/ctx/editors/vim/syntax/ctx.vim share/ctx/editors/emacs/ctx-mode.el \
         share/ctx/editors/vscode/package.json share/ctx/examples/treelstm.ctx \
         share/ctx/examples/data/sst_sample.ptb; do
  [ -f "$prefix/$f" ] || { echo "not installed: $f"; exit 1; }
done
[ ! -e "$prefix/share/ctx/editors/vscode/test" ] || { echo "editor tests installed"; exit 1; }
ctx=$prefix/bin/ctx
"$ctx" --version
out=$("$ctx" run "$prefix/share/ctx/examples/treelstm.ctx" -D H=8 --threads 1)
echo "$out"
echo "$out" | grep -q "^model treelstm: 8 trees, 218 nodes from sst_sample.ptb$"
echo "$out" | grep -q "^ran: engine=jit threads=1 weights=seed:0 schedule=default output=summary$" ||
  echo "$out" | grep -q "^ran: engine=interpreter"
"$ctx" run "$prefix/share/ctx/examples/treelstm.ctx" -D H=8 --interp | grep -q "218 nodes"
cat > "$prefix/use_ctxrt.c" <<'C'
#include <ctxrt.h>
#include <stdio.h>
int main(void) {
  CtxrtParam p = {"W", 2, {2, 3}};
  CtxrtWeights *w;
  CtxrtError err;
  if (ctxrt_weights_create(&p, 1, &w, &err)) return 1;
  ctxrt_weights_init(w, 0);
  printf("%d tensor, %lld values\n", (int)w->count, (long long)w->tensors[0].numel);
  ctxrt_weights_destroy(w);
  return 0;
}
C
${CC:-cc} -std=c11 $cflags -I"$prefix/include" "$prefix/use_ctxrt.c" "$prefix/lib/libctxrt.a" \
  -ljansson -lpthread -lm -o "$prefix/use_ctxrt"
"$prefix/use_ctxrt" | grep -q "^1 tensor, 6 values$"

# The prefix moved to another directory: its ctx builds against its runtime.
moved=$prefix-moved
rm -rf "$moved"
mv "$prefix" "$moved"
moved=$(cd "$moved" && pwd -P)
ctx=$moved/bin/ctx
rt="runtime: $moved/lib/libctxrt.a and $moved/include/ctxrt.h (installed with ctx)"
"$ctx" --version | grep -qxF "$rt" || { echo "moved ctx --version:"; "$ctx" --version; exit 1; }
out=$("$ctx" build "$moved/share/ctx/examples/treelstm.ctx" -D H=8 -o "$moved/lib8" -v)
echo "$out"
echo "$out" | grep -qxF "$rt"
echo "$out" | grep -q "^+ .* -I $moved/include -c $moved/lib8/treelstm_model.c " ||
  { echo "not compiled against $moved/include"; exit 1; }
echo "$out" | grep -q "^+ .* -shared .* $moved/lib/libctxrt.a -ljansson" ||
  { echo "not linked with $moved/lib/libctxrt.a"; exit 1; }
! echo "$out" | grep -e "$build/runtime/" -e "-I $src/runtime " ||
  { echo "ctx build used the build tree's runtime"; exit 1; }
${CC:-cc} -std=c11 $cflags -I"$moved/lib8" "$src/examples/embed/embed.c" \
  "$moved/lib8/libtreelstm.a" -ljansson -lpthread -lm -o "$moved/embed"
sample=$moved/share/ctx/examples/data/sst_sample.ptb
"$moved/embed" "$sample" > "$moved/embed.txt"
"$ctx" run "$moved/share/ctx/examples/treelstm.ctx" -D H=8 --input "$sample" \
  --output "$moved/run.npy" >/dev/null
"$python" - "$moved/embed.txt" "$moved/run.npy" <<'PY'
import sys
import numpy as np
got = np.array([[float(v) for v in l.split(":")[1].split()] for l in open(sys.argv[1])])
want = np.load(sys.argv[2])
assert got.shape == want.shape, (got.shape, want.shape)
assert np.allclose(got, want, rtol=1e-6, atol=1e-7), abs(got - want).max()
print(f"library of the moved prefix = ctx run: {got.shape[0]} rows")
PY
# CTX_HOME names the prefix; a ctx neither in a prefix's bin/ nor in the
# build tree finds no runtime and says where it looked.
CTX_HOME=$moved "$ctx" --version | grep -qxF "runtime: $moved/lib/libctxrt.a and $moved/include/ctxrt.h (CTX_HOME)"
mkdir -p "$moved/elsewhere"
cp "$ctx" "$moved/elsewhere/ctx"
rc=0
"$moved/elsewhere/ctx" build "$moved/share/ctx/examples/treelstm.ctx" -o "$moved/lib9" \
  2>"$moved/err.txt" || rc=$?
cat "$moved/err.txt"
[ "$rc" = 70 ] && grep -q "^ctx: error: cannot find the runtime" "$moved/err.txt"
rc=0
CTX_HOME=$moved/elsewhere "$ctx" build "$moved/share/ctx/examples/treelstm.ctx" -o "$moved/lib9" \
  2>"$moved/err.txt" || rc=$?
[ "$rc" = 70 ] && grep -qF "at $moved/elsewhere/lib/libctxrt.a (CTX_HOME)" "$moved/err.txt"
echo "install ok: $prefix, moved to $moved"
