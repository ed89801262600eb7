#!/bin/sh
# ptx_check.sh — every zoo model's CUDA kernel (default CUDA schedule, and each
# shipped examples/MODEL.cuda.sched) as PTX: `ctx check --target cuda
# --emit=ptx`, structure checked (one .entry, .target sm_90, the grid
# barrier's atom.add.release.gpu / ld.acquire.gpu and bar.sync, no .extern
# .func; five butterfly shuffles, at least, per loop `--dump=ilir` shows
# bound to warp, none without one),
# then `ptxas --gpu-name sm_90 -v`, which must accept it with no
# spills. Also sm_80 once per model; and treelstm's fused levels wait at one
# grid barrier each (two with --disable=grid-fusion); under `bind node to
# warp` every model's kernel too, with no block barrier but the grid
# barriers'. Exit 77 (skip) where ptxas is absent.
#
#   ptx_check.sh CTX SOURCE_DIR [PTXAS]
set -u
ctx=$1 src=$2 ptxas=${3:-/usr/local/cuda/bin/ptxas}
if [ ! -x "$ptxas" ]; then
  echo "skipped: no ptxas at $ptxas (the CUDA toolkit is not installed)"
  exit 77
fi
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
check() { # NAME ARCH CTX-ARGS...
  name=$1 arch=$2
  shift 2
  if ! "$ctx" check --target cuda --gpu-arch "$arch" --emit=ptx "$@" >"$tmp/k.ptx" 2>"$tmp/err"; then
    echo "FAIL $name: ctx exit $?"; cat "$tmp/err"; fail=$((fail + 1)); return
  fi
  why=""
  [ "$(grep -c '^\.visible \.entry' "$tmp/k.ptx")" = 1 ] || why="not one .entry"
  grep -q "^\.target $arch" "$tmp/k.ptx" || why="$why no .target $arch"
  grep -q 'atom\.add\.release\.gpu\.global\.u32' "$tmp/k.ptx" || why="$why no grid-barrier atom"
  grep -q 'ld\.acquire\.gpu\.global\.u32' "$tmp/k.ptx" || why="$why no acquire load"
  grep -q 'bar\.sync' "$tmp/k.ptx" || why="$why no bar.sync"
  if grep -q '\.extern \.func' "$tmp/k.ptx"; then why="$why an .extern .func"; fi
  warps=$("$ctx" check --target cuda --gpu-arch "$arch" --dump=ilir "$@" 2>/dev/null | grep -c 'bound to warp {')
  shfl=$(grep -c 'shfl\.sync\.bfly\.b32' "$tmp/k.ptx")
  if [ "$warps" = 0 ]; then ok=$([ "$shfl" = 0 ] && echo y)
  else ok=$([ "$shfl" -ge $((5 * warps)) ] && [ $((shfl % 5)) = 0 ] && echo y); fi
  [ "$ok" = y ] || why="$why $shfl shuffles for $warps warp loops"
  if ! "$ptxas" --gpu-name "$arch" -v "$tmp/k.ptx" -o "$tmp/k.cubin" >"$tmp/ptxas" 2>&1; then
    why="$why ptxas rejects it: $(head -3 "$tmp/ptxas")"
  elif ! grep -q ' 0 bytes spill stores, 0 bytes spill loads' "$tmp/ptxas"; then
    why="$why spills: $(grep spill "$tmp/ptxas")"
  fi
  if [ -z "$why" ]; then
    echo "ok   $name: $(grep -o 'Used [0-9]* registers' "$tmp/ptxas")"; pass=$((pass + 1))
  else
    echo "FAIL $name:$why"; fail=$((fail + 1))
  fi
}
for m in "$src"/examples/*.ctx; do
  base=$(basename "$m" .ctx)
  check "$base" sm_90 "$m"
  check "$base sm_80" sm_80 "$m"
  check "$base H=512" sm_90 -D H=512 "$m"
  for s in "$src"/examples/"$base".cuda.sched; do
    [ -f "$s" ] || continue
    check "$base -s $(basename "$s")" sm_90 -s "$s" "$m"
    check "$base -s $(basename "$s") H=8 (cached in shared)" sm_90 -D H=8 -s "$s" "$m"
  done
done
# One grid barrier a level where the level fuses (sched_gpu.c, fuse_level):
# treelstm's level is one grid loop that leaves its barrier to the level's,
# so the PTX holds as many barrier atoms as the kernel has levels loops (the
# leaves' and the rest's), where a split level would add its grid loop's.
barriers() { # NAME SPLIT CTX-ARGS... (SPLIT 1: --disable=grid-fusion, a barrier more a grid loop)
  name=$1 split=$2
  shift 2
  "$ctx" check --target cuda --emit=ptx "$@" >"$tmp/b.ptx" 2>"$tmp/err" &&
    "$ctx" check --target cuda --dump=ilir "$@" >"$tmp/b.ilir" 2>>"$tmp/err"
  atoms=$(grep -c 'atom\.add\.release\.gpu\.global\.u32' "$tmp/b.ptx")
  levels=$(grep -c '^for l in levels' "$tmp/b.ilir")
  grids=$(grep -c 'bound to grid' "$tmp/b.ilir")
  if [ "$grids" -ge 1 ] && [ "$atoms" = $((levels + split * grids)) ]; then
    echo "ok   $name: $atoms grid barriers for $levels levels loops"; pass=$((pass + 1))
  else
    echo "FAIL $name: $atoms grid barriers for $levels levels loops, $grids grid loops"
    cat "$tmp/err"; fail=$((fail + 1))
  fi
}
# Nodes on warps (`bind node to warp`): the warps of a block work on
# different nodes, so the only block barriers (bar.sync) are the grid
# barriers' two each, and a node's loops end at the warp's (bar.warp.sync).
for m in "$src"/examples/*.ctx; do
  base=$(basename "$m" .ctx)
  printf 'schedule %s for cuda {\n  specialize leaf\n  bind node to warp\n}\n' "$base" \
    >"$tmp/$base.warps.cuda.sched"
  printf 'schedule %s for cuda {\n  specialize leaf\n  bind node to warp, i to thread\n}\n' \
    "$base" >"$tmp/$base.lanes.cuda.sched"
  for kind in warps lanes; do
    name="$base bind node to warp ($kind)"
    check "$name" sm_90 -s "$tmp/$base.$kind.cuda.sched" "$m"
    "$ctx" check --target cuda --emit=ptx -s "$tmp/$base.$kind.cuda.sched" "$m" >"$tmp/w.ptx" 2>/dev/null
    atoms=$(grep -c 'atom\.add\.release\.gpu\.global\.u32' "$tmp/w.ptx")
    bars=$(grep -c 'bar\.sync' "$tmp/w.ptx")
    wbars=$(grep -c 'bar\.warp\.sync' "$tmp/w.ptx")
    if [ "$bars" = $((2 * atoms)) ] && [ "$wbars" -ge 1 ]; then
      echo "ok   $name: $bars bar.sync for $atoms grid barriers, $wbars bar.warp.sync"
      pass=$((pass + 1))
    else
      echo "FAIL $name: $bars bar.sync for $atoms grid barriers, $wbars bar.warp.sync"
      fail=$((fail + 1))
    fi
  done
done
barriers "treelstm one barrier a level" 0 "$src/examples/treelstm.ctx"
barriers "treelstm H=512 one barrier a level" 0 -D H=512 "$src/examples/treelstm.ctx"
barriers "treelstm --disable=grid-fusion two a level" 1 --disable=grid-fusion \
  "$src/examples/treelstm.ctx"
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
