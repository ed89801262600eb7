#!/usr/bin/env bash
# Builds the libFuzzer targets with clang and runs each for a share of
# SECONDS (default 60). Fails on any crash, hang or sanitizer report.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
total=${1:-60}
CC=clang-19 cmake -S . -B build-fuzz -G Ninja -DCTX_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build-fuzz
mapfile -t targets < <(find build-fuzz -type f -perm -u+x -name '*fuzz_*' | sort)
[ ${#targets[@]} -gt 0 ] || { echo "fuzz: no targets built"; exit 1; }
each=$(( total / ${#targets[@]} ))
[ "$each" -ge 10 ] || each=10
for t in "${targets[@]}"; do
  name=$(basename "$t")
  # seeds: <stage>/fuzz/corpus/<what>, for a target named [prefix_]fuzz_<what>
  seeds=$(find . -path './build*' -prune -o -type d -path '*/fuzz/corpus/*' \
            -name "${name##*fuzz_}" -print | head -n 1)
  work=$(mktemp -d)
  echo "fuzz: $name for ${each}s (seeds: ${seeds:-none})"
  "$t" -max_total_time="$each" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
       "$work" ${seeds:+"$seeds"} > "$work.log" 2>&1 || { tail -n 40 "$work.log"; exit 1; }
  grep -E '^(Done|stat::number_of_executed_units)' "$work.log" | head -n 2
  rm -rf "$work" "$work.log"
done
echo "fuzz: no crash"
