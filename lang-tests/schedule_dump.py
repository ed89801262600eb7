#!/usr/bin/env python3
"""`ctx check --dump=schedule` round-trips (docs/language.md, "The schedule
applied").

For every model of examples/ — with the default schedule, with each
optimization the default plan can lose turned off, and with every cpu
schedule file shipped for it — the printed schedule, given back with -s, must
give the same --dump=ilir as the compilation it was printed from, pass `ctx
check` without a diagnostic, and print itself again unchanged (but for its
first comment line, which says where it came from)."""
import argparse
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OPTS = ["specialize-leaf", "register-tile", "hoist-products", "hoist-invariant",
        "dense-scratch", "fuse-epilogue", "all-deps", "share-weights", "hoist-local",
        "interchange", "direct-results", "leaf-views", "balance-levels", "hoist-products,hoist-local",
        "register-tile,fuse-epilogue"]
# schedule files for example models: (model, schedule, extra flags)
FILES = [("examples/treelstm.ctx", "examples/treelstm.cpu.sched", []),
         ("lang-tests/engines/invariant.ctx", "lang-tests/engines/invariant.loops.sched", []),
         ("lang-tests/engines/childsum_for.ctx", "lang-tests/engines/childsum_for.loops.sched",
          []),
         ("lang-tests/sched/model.ctx", "lang-tests/sched/tile_per_op.sched", ["-D", "H=4"]),
         ("examples/mvrnn.ctx", "lang-tests/sched/tile_rows.sched", ["-D", "H=16", "-D", "V=20"]),
         ("examples/mvrnn.ctx", "lang-tests/sched/tile_rows_level.sched",
          ["-D", "H=16", "-D", "V=20"])]
# (model, schedule, flags, the register tiles' shapes in --dump=ilir, in order)
TILES = [("lang-tests/sched/model.ctx", "lang-tests/sched/tile_per_op.sched", ["-D", "H=4"],
          ["2 x 32", "4 x 16", "4 x 16"]),
         ("examples/mvrnn.ctx", "lang-tests/sched/tile_rows.sched", ["-D", "H=16", "-D", "V=20"],
          ["2 x 32", "4 x 16"]),
         ("examples/mvrnn.ctx", "lang-tests/sched/tile_rows_level.sched",
          ["-D", "H=16", "-D", "V=20"], ["3 x 16", "3 x 16"]),
         # the default plan's level tile fits the CPU: 4 rows where 64 outputs
         # need more registers than AVX2 has (codegen narrows the block and
         # regrows the rows), 6 with AVX-512's 32 (sched_fit_default_tile)
         ("examples/mvrnn.ctx", None, ["--cpu", "x86-64-v3", "-D", "H=16", "-D", "V=20"],
          ["6 x 64", "4 x 64"]),
         ("examples/mvrnn.ctx", None, ["--cpu", "x86-64-v4", "-D", "H=16", "-D", "V=20"],
          ["6 x 64", "6 x 64"])]


def ctx(binary, *args):
    r = subprocess.run([binary, "check", *args], capture_output=True, text=True)
    return r.returncode, r.stdout, r.stderr


def body(text):
    return text.split("\n", 1)[1]


def check(binary, model, flags, tmp, label):
    rc, sched, err = ctx(binary, "--dump=schedule", *flags, model)
    if rc or err:
        return f"{label}: --dump=schedule failed ({rc}): {err.strip()}"
    path = os.path.join(tmp, "dumped.sched")
    with open(path, "w") as f:
        f.write(sched)
    base = [a for i, a in enumerate(flags)
            if a != "-s" and (i == 0 or flags[i - 1] != "-s")]
    _, want, _ = ctx(binary, "--dump=ilir", *flags, model)
    rc, got, err = ctx(binary, "--dump=ilir", *base, "-s", path, model)
    if rc or err:
        return f"{label}: the dumped schedule does not apply ({rc}): {err.strip()}\n{sched}"
    if got != want:
        return f"{label}: the dumped schedule gives another kernel\n{sched}"
    rc, again, err = ctx(binary, "--dump=schedule", *base, "-s", path, model)
    if rc or err or body(again) != body(sched):
        return f"{label}: the dump of the dump differs\n{sched}\n---\n{again}{err}"
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ctx", required=True)
    a = ap.parse_args()
    models = [os.path.join(d, f) for d in ("examples", "lang-tests/engines")
              for f in sorted(os.listdir(os.path.join(ROOT, d))) if f.endswith(".ctx")]
    cases = []
    for m in models:
        path = os.path.join(ROOT, m)
        cases.append((path, [], f"{m} default"))
        for opt in OPTS:
            cases.append((path, [f"--disable={opt}"], f"{m} --disable={opt}"))
    files = list(FILES)
    for sub in ("zoo", "recur"):  # the zoo's schedules the engines test runs
        for sched in sorted(os.listdir(os.path.join(ROOT, "lang-tests/engines", sub))):
            model = "examples/%s.ctx" % sched.split(".")[0]
            files.append((model, "lang-tests/engines/%s/%s" % (sub, sched), []))
    for model, sched, flags in files:
        cases.append((os.path.join(ROOT, model), flags + ["-s", os.path.join(ROOT, sched)],
                      f"{model} -s {sched}"))
    failed = 0
    for model, sched, flags, want in TILES:
        given = ["-s", os.path.join(ROOT, sched)] if sched else []
        _, ilir, err = ctx(a.ctx, "--dump=ilir", *flags, *given, os.path.join(ROOT, model))
        got = re.findall(r"register tile (\d+ x \d+)", ilir)
        if got != want:
            failed += 1
            print(f"FAIL {sched}: register tiles {got}, want {want} {err}")
    with tempfile.TemporaryDirectory() as tmp:
        for path, flags, label in cases:
            msg = check(a.ctx, path, flags, tmp, label)
            if msg:
                failed += 1
                print("FAIL", msg)
    print(f"{len(cases) - failed} of {len(cases)} round trips hold")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
