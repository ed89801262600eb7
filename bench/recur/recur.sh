#!/bin/sh
# recur.sh — the recursion primitives' effect (docs/language.md, "Applying a
# schedule (CPU)"): treelstm H=256 B=1 and B=10, seqlstm H=256 B=10, under
# the default plan, the base schedule beside this script, and the base with
# unroll_recursion 2 and with refactor_recursion, on one and two threads.
# Configurations alternate round by round; each cell is the median over the
# rounds of `ctx run --time`'s median batch latency. Also prints the
# dependency steps (levels, and level ends with a barrier) from --profile.
#
#   bench/recur/recur.sh [ROUNDS]     (default 5; CTX=path/to/ctx)
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
CTX=${CTX:-$ROOT/build/driver/ctx}
ROUNDS=${1:-5}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

variants() { # model: the schedules measured
  base=$HERE/$1.base.sched
  sed 's/^}$/  unroll_recursion 2\n}/' "$base" > "$TMP/$1.unroll2.sched"
  sed 's/^}$/  refactor_recursion\n}/' "$base" > "$TMP/$1.refactor.sched"
  echo "default base:$base unroll2:$TMP/$1.unroll2.sched refactor:$TMP/$1.refactor.sched"
}

case_args() { # case: model, -D flags, input
  case $1 in
  treelstm-B1) echo "treelstm --gen binary:leaves=20,count=40,seed=1 --batch 1" ;;
  treelstm-B10) echo "treelstm --gen binary:leaves=20,count=40,seed=1 --batch 10" ;;
  seqlstm-B10) echo "seqlstm --gen sequence:length=20,count=40,seed=1 --batch 10" ;;
  esac
}

ctx_case() { # case variant threads, then ctx run's options; prints its output
  c=$1 v=$2 t=$3
  shift 3
  set -- $(case_args "$c") "$@"
  m=$1
  shift
  s=""
  [ "$v" != default ] && s="-s ${v#*:}"
  "$CTX" run "$ROOT/examples/$m.ctx" -D H=256 -D V=1000 "$@" $s --threads "$t" \
    --output /dev/null 2>/dev/null
}

run_one() { # case variant threads: the median ms per batch
  ctx_case "$1" "$2" "$3" --repeat 5 --time | sed -n 's/^time: median_ms=\([0-9.]*\).*/\1/p'
}

steps() { # case variant threads: the profile's steps line
  ctx_case "$1" "$2" "$3" --repeat 1 --profile | sed -n 's/^steps: //p'
}

echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for c in treelstm-B1 treelstm-B10 seqlstm-B10; do
  m=${c%-*}
  vs=$(variants "$m")
  for t in 1 2; do
    for v in $vs; do : > "$TMP/$c.$t.${v%%:*}"; done
    r=0
    while [ $r -lt "$ROUNDS" ]; do
      for v in $vs; do run_one "$c" "$v" "$t" >> "$TMP/$c.$t.${v%%:*}"; done
      r=$((r + 1))
    done
    for v in $vs; do
      med=$(sort -n "$TMP/$c.$t.${v%%:*}" | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
      echo "$c threads=$t ${v%%:*} median_ms=$med $(steps "$c" "$v" "$t")"
    done
  done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
