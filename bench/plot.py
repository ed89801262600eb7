#!/usr/bin/python3
"""plot.py — latency against tree size, ctx and every baseline, as a PNG.

Generates seeded SST-like trees of exactly L leaves for each L of --sizes, runs
each size the way bench/run.py runs a case (the same five implementations in
alternating rounds, checked against the interpreter, one thread pinned; the limit
of bench/README.md), and plots median latency per batch against nodes per tree,
for B = 1 and B = 10, log-log, with the limit dashed. The measurements go to
OUT.json beside OUT.png.

usage: bench/plot.sh [--model treelstm] [--H 256] [--sizes 2,4,...] [--out FILE.png]
   or: plot.py --ctx CTX --bin DIR --work DIR [same options]
"""
import argparse
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")  # no display: files only
import matplotlib.pyplot as plt  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run  # noqa: E402  (the bench runner: cases, limit, processes)

STYLE = {"ctx": ("k", "o", "-"), "c_level": ("tab:blue", "s", "-"),
         "c_node": ("tab:cyan", "^", "-"), "torch_level": ("tab:red", "D", "-"),
         "torch_eager": ("tab:orange", "v", "-")}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ctx", required=True)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--model", default="treelstm", choices=["treefc", "treegru", "treelstm"])
    ap.add_argument("--H", type=int, default=256)
    ap.add_argument("--sizes", default="2,4,8,16,32,64,128")
    ap.add_argument("--count", type=int, default=20, help="trees per size")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--cpu", default=str(os.cpu_count() - 1))
    ap.add_argument("--out", default=os.path.join(HERE, "latency.png"))
    a = ap.parse_args()
    sizes = [int(s) for s in a.sizes.split(",")]
    data = os.path.join(a.work, "plot-data-%d" % a.count)
    os.makedirs(data, exist_ok=True)
    run.sh([run.PY, os.path.join(HERE, "data", "gen_sst.py"), data, "--count", str(a.count),
            "--features", "8", "--sizes", a.sizes])
    env = run.baseline_env()
    m = run.machine(a.bin, True, a.cpu, env)
    corenames = {m["corename"]}
    rows = []
    for L in sizes:
        c = ("%s L=%d" % (a.model, L), a.model, a.H, "sized_%d.ptb" % L, [])
        for r in run.run_case(a, c, m, env, data, a.rounds, 1, min(4, a.count), corenames):
            r["leaves"] = L
            rows.append(r)
        sys.stderr.write("plot: %d leaves done\n" % L)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.5))
    for ax, batch in zip(axes, (1, 10)):
        rs = [r for r in rows if r["B"] == batch]
        x = [2 * r["leaves"] - 1 for r in rs]
        for k in run.IMPLS:
            col, mk, ls = STYLE[k]
            ax.plot(x, [r["ms"].get(k) for r in rs], color=col, marker=mk, ls=ls,
                    label=run.TITLES[k])
        ax.plot(x, [r["limit"] for r in rs], color="gray", ls="--", label="limit")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("nodes per tree")
        ax.set_ylabel("median latency per batch (ms)")
        ax.set_title("%s H=%d, batch %d, 1 thread" % (a.model, a.H, batch))
        ax.grid(True, which="both", alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.suptitle("%s; FMA peak %.0f GFLOP/s; OpenBLAS %s" % (m["cpu"], m["peak"],
                                                            m["corename"]), fontsize=9)
    fig.tight_layout()
    fig.savefig(a.out, dpi=100)
    with open(os.path.splitext(a.out)[0] + ".json", "w") as f:
        json.dump({"machine": {k: v for k, v in m.items() if k != "raw"}, "rows": rows}, f,
                  indent=1)
    bad = sorted(set(k for r in rows for k, v in r["check"].items() if v != "ok"))
    print("wrote %s%s" % (a.out, ("; check FAILED: " + ", ".join(bad)) if bad else ""))


if __name__ == "__main__":
    main()
