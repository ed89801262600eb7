# bench/ctx.sh — sourced by the bench scripts (ROOT set): CTX, the main
# build's binary, built (not reconfigured) when missing or when
# BENCH_REBUILD=1; CTX set beforehand overrides it.
CTX=${CTX:-$ROOT/build/driver/ctx}
if [ ! -x "$CTX" ] || [ "${BENCH_REBUILD:-0}" = 1 ]; then
  [ -f "$ROOT/build/CMakeCache.txt" ] || cmake -S "$ROOT" -B "$ROOT/build" >/dev/null
  cmake --build "$ROOT/build" --target ctx -j"$(nproc)" >/dev/null
fi
