#!/usr/bin/python3
"""ablation.py — what each schedule primitive is worth, on every zoo model.

For each model (H = 256; mvrnn H = 64, V = 256; dagrnn D = H) and batch size,
on one thread pinned to one CPU, the same seeded inputs and weights as
bench/run.py: the default schedule; each default pass turned off in turn
(--disable); the recursion primitives where ctx has them (unroll_recursion 1,
2, 3; refactor_recursion: a schedule of the default's directives plus the
primitive); and the schedule `ctx tune` finds with a budget of --budget
seconds. Every configuration runs in alternating rounds (default, then each
other, repeated), its median per batch is the median over the rounds, and its
outputs are checked against `ctx run --interp` on the same input. The table
gives each configuration's latency over the default's (> 1: slower without
it, or with it).

Usage: bench/ablation.sh [--quick] [--only MODEL] [--budget S] [--no-tune] [--batches 1,10]
                         [--no-passes] [--no-prims] [--rounds N]
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PY = "/usr/bin/python3"
MODELS = [  # label, model, dims, input file
    ("treefc", "treefc", ["-D", "H=256"], "sst.ptb"),
    ("treegru", "treegru", ["-D", "H=256"], "sst.ptb"),
    ("treelstm", "treelstm", ["-D", "H=256"], "sst.ptb"),
    ("childsum", "childsum", ["-D", "H=256"], "dep.nodes"),
    ("mvrnn", "mvrnn", ["-D", "H=64", "-D", "V=256"], "sst_v256.ptb"),
    ("dagrnn", "dagrnn", ["-D", "H=256", "-D", "D=256"], "grid_256.nodes"),
    ("seqlstm", "seqlstm", ["-D", "H=256"], "seq.nodes"),
]
PASSES = ["specialize-leaf", "register-tile", "share-weights", "fuse-epilogue", "all-deps",
          "hoist-local", "hoist-products", "direct-results", "leaf-views", "dense-scratch", "interchange",
          "vector-math", "balance-levels"]
# the recursion primitives, added to the default schedule (when ctx has them)
PRIMS = [("unroll_recursion 1", "unroll_recursion 1"), ("unroll_recursion 2", "unroll_recursion 2"),
         ("unroll_recursion 3", "unroll_recursion 3"), ("refactor", "refactor_recursion")]


def sh(cmd, timeout=3600):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def median_of(text):
    m = re.search(r"time: median_ms=([\d.]+)", text or "")
    return float(m.group(1)) if m else None


def check(got, ref):
    try:
        a, r = np.load(got).astype(np.float64), np.load(ref)
    except (OSError, ValueError):
        return "no output"
    if a.shape != r.shape:
        return "shape %s" % (a.shape,)
    worst = float(np.max(np.abs(a - r) / (1e-4 + 1e-4 * np.abs(r))))
    return "ok" if worst <= 1 else "%.2gx tol" % worst


def configs(a, ctx, mctx, dims, work, label, tuned):
    """(name, extra ctx run args) for every configuration of one model."""
    out = [("default", [])]
    out += [("-" + p, ["--disable=" + p]) for p in (PASSES if not a.no_passes else [])]
    _, dump, _ = sh([ctx, "check", "--dump=schedule", mctx] + dims)
    for name, directive in (PRIMS if not a.no_prims else []):
        path = os.path.join(work, "%s.%s.sched" % (label, name.replace(" ", "")))
        with open(path, "w") as f:
            f.write(dump.replace("  persist\n", "  persist\n  %s\n" % directive))
        rc, _, err = sh([ctx, "check", mctx] + dims + [path])
        if "not applied" in err or "unknown" in err:
            out.append((name, None))       # ctx does not have the primitive
        elif rc != 0:
            out.append((name, "model"))    # the model does not take it (an error says why)
        else:
            out.append((name, ["-s", path]))
    if tuned:
        out.append(("tuned", ["-s", tuned]))
    return out


def tune(a, ctx, mctx, dims, common, batch, work, label):
    out = os.path.join(work, "%s.B%d.tuned.sched" % (label, batch))
    cmd = ["taskset", "-c", a.cpu, ctx, "tune", mctx] + dims + common + [
        "--batch", str(batch), "--threads", "1", "--budget", str(a.budget), "-o", out]
    rc, so, se = sh(cmd)
    if rc:
        sys.stderr.write("ablation: ctx tune failed: %s\n%s" % (" ".join(cmd), se[-2000:]))
        return None, None
    return out, so.strip()


def run_model(a, ctx, data, work, row):
    label, model, dims, inp = row
    mctx = os.path.join(ROOT, "examples", model + ".ctx")
    wts = os.path.join(work, "%s.safetensors" % label)
    if not os.path.exists(wts):
        sh([PY, os.path.join(HERE, "data", "gen_weights.py"), model] + dims + ["-o", wts])
    common = ["--input", os.path.join(data, inp), "--weights", wts]
    ref = os.path.join(work, "%s.ref.npy" % label)
    sh([ctx, "run", mctx] + dims + common + ["--interp", "--output", ref])
    results = []
    for batch in a.batches:
        tuned, line = (None, None) if a.no_tune else tune(a, ctx, mctx, dims, common, batch,
                                                          work, label)
        cfgs = configs(a, ctx, mctx, dims, work, label, tuned)
        runnable = [(n, e) for n, e in cfgs if isinstance(e, list)]
        times = {name: [] for name, _ in runnable}
        checks = {}
        for rnd in range(a.rounds):
            for name, extra in runnable:
                got = os.path.join(work, "got.npy")
                cmd = ["taskset", "-c", a.cpu, ctx, "run", mctx] + dims + common + extra + [
                    "--batch", str(batch), "--threads", "1", "--time", "--repeat",
                    str(a.repeat), "--output", got]
                rc, so, se = sh(cmd)
                ms = median_of(so) if rc == 0 else None
                if ms is None:
                    sys.stderr.write("ablation: failed: %s\n%s" % (" ".join(cmd), se[-1500:]))
                else:
                    times[name].append(ms)
                if rnd == 0:
                    checks[name] = check(got, ref) if rc == 0 else "failed"
        med = {n: float(np.median(t)) for n, t in times.items() if t}
        results.append({"model": label, "batch": batch, "median_ms": med, "checks": checks,
                        "unavailable": [n for n, e in cfgs if e is None],
                        "not_for_model": [n for n, e in cfgs if e == "model"], "tune": line})
        sys.stderr.write("ablation: %s B=%d done\n" % (label, batch))
    return results


def print_table(results, rounds):
    names = []
    for r in results:
        for n in list(r["median_ms"]) + r["unavailable"] + r["not_for_model"]:
            if n != "default" and n not in names:
                names.append(n)
    print("| model | B | default ms | " + " | ".join(names) + " |")
    print("|---|---|---|" + "---|" * len(names))
    for r in results:
        d = r["median_ms"].get("default")
        cells = []
        for n in names:
            if n in r["unavailable"]:
                cells.append("n/a")
            elif n in r["not_for_model"]:
                cells.append("—")
            elif n in r["median_ms"] and d:
                bad = r["checks"].get(n, "ok") != "ok"
                cells.append("%.2f%s" % (r["median_ms"][n] / d, " ✗" if bad else ""))
            else:
                cells.append("-")
        print("| %s | %d | %s | %s |" % (r["model"], r["batch"], "%.3f" % d if d else "-",
                                         " | ".join(cells)))
    print()
    print("latency over the default's (median per batch, %d alternating rounds, one thread "
          "pinned; > 1: slower); -PASS: --disable=PASS; tuned: ctx tune's schedule; ✗: "
          "outputs not within 1e-4 + 1e-4|x| of the interpreter's; n/a: ctx does not have "
          "the primitive; —: the model does not take it (ctx check says why)" % rounds)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ctx", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", default="")
    ap.add_argument("--budget", type=float, default=60)
    ap.add_argument("--no-tune", action="store_true")
    ap.add_argument("--cpu", default=str(os.cpu_count() - 1))
    ap.add_argument("--json")
    ap.add_argument("--batches", default="1,10", help="batch sizes, e.g. 10 or 1,10")
    ap.add_argument("--no-passes", action="store_true",
                    help="leave out the columns of the default passes turned off")
    ap.add_argument("--no-prims", action="store_true",
                    help="leave out the columns of the recursion primitives")
    ap.add_argument("--rounds", type=int, default=0, dest="nrounds",
                    help="alternating rounds (default 3 with --quick, else 5)")
    a = ap.parse_args()
    count = 30 if a.quick else 100
    a.rounds, a.repeat = (3, 3) if a.quick else (5, 5)
    if a.nrounds > 0:
        a.rounds = a.nrounds
    a.batches = [int(b) for b in a.batches.split(",")]
    data = os.path.join(a.work, "data-%d" % count)
    os.makedirs(data, exist_ok=True)
    if not os.path.exists(os.path.join(data, "seq.nodes")):
        sh([PY, os.path.join(HERE, "data", "gen_sst.py"), data, "--count", str(count),
            "--features", "256"])
    load0 = os.getloadavg()[0]
    t0 = time.time()
    results = []
    for row in MODELS:
        if not a.only or a.only in row[0]:
            results += run_model(a, a.ctx, data, a.work, row)
    print("ablation: %d structures per input, one thread on cpu %s, load average %.2f at the "
          "start and %.2f at the end, %.0f s; ctx tune budget %g s per model and batch\n" % (
              count, a.cpu, load0, os.getloadavg()[0], time.time() - t0, a.budget))
    print_table(results, a.rounds)
    for r in results:
        if r["tune"]:
            print("  %s B=%d: %s" % (r["model"], r["batch"], r["tune"]))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
