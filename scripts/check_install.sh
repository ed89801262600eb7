#!/bin/sh
# check_install.sh BUILD PREFIX [CFLAGS] — the install_prefix test: `cmake --install
# BUILD --prefix PREFIX`, then every installed part is where the README says
# and works from there: the installed ctx runs an installed example on its
# bundled sample (compiled and interpreted), and a C program compiles and
# links against the installed header and libctxrt (with CFLAGS: the
# sanitizers of a sanitized build).
set -eu
build=$1
prefix=$2
cflags=${3:-}
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
echo "install ok: $prefix"
