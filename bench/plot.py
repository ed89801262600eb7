#!/usr/bin/python3
"""plot.py — latency against tree size, ctx and every baseline, as a PNG; or
(--profile) where the time of a run goes, from `ctx run --profile` output.

Generates seeded SST-like trees of exactly L leaves for each L of --sizes, runs
each size the way bench/run.py runs a case (the same five implementations in
alternating rounds, checked against the interpreter, one thread pinned; the limit
of bench/README.md), and plots median latency per batch against nodes per tree,
for B = 1 and B = 10, log-log, with the limit dashed. The measurements go to
OUT.json beside OUT.png.

usage: bench/plot.sh [--model treelstm] [--H 256] [--sizes 2,4,...] [--out FILE.png]
   or: plot.py --ctx CTX --bin DIR --work DIR [same options]

--profile draws, from the text of `ctx run --profile` (driver/driver_profile.c;
nothing is measured again), one horizontal bar chart per file: the ms per run of
every region without sub-regions (linearization, each prologue loop, each node
loop of the levels, the rests), labelled as the profile labels them, their share
of the run beside each bar. What was drawn goes to OUT.json beside OUT.png.

usage: plot.py --profile FILE... [--label TEXT]... [--out FILE.png]
"""
import argparse
import json
import os
import re
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


# ---- the per-level profile (--profile) -------------------------------------------------

# "profile: model M, R run(s) (the faster half of N[: each of B batches' ...]), T thread(s)
# [ (...)]; cycle counter G GHz", or "(every run: B batches, once each)" where --repeat 1
# left none out (then N is R)
PROFILE_HEAD = re.compile(r"^profile: model (\S+), (\d+) runs? \((?:the faster half of (\d+)"
                          r"(?:: [^)]*)?|every run: [^)]*)\), (\d+) threads?")
# a region's row: indent (two blanks a level), name, ms/run, share, then MFLOP/run,
# GFLOP/s, MB/run ('-' or '?' where there are none) and optionally "N nodes|levels|runs"
PROFILE_ROW = re.compile(
    r"^( *)(.+?) +(-?[0-9.]+) +(-?[0-9.]+)% +([0-9.]+|-|\?) +([0-9.]+|-|\?) +([0-9.]+|-)"
    r"(?: +([0-9.]+) (nodes|levels|runs))?$")


def parse_profile(text, what):
    """The profile in [text] (ctx run's output; other lines are skipped) as a dict: model,
    runs, threads and rows [{depth, name, path, ms, share, leaf}]; SystemExit when none."""
    lines = text.splitlines()
    start = next((i for i, l in enumerate(lines) if PROFILE_HEAD.match(l)), None)
    if start is None or start + 1 >= len(lines) or not lines[start + 1].startswith("region"):
        sys.exit("plot: %s: no `ctx run --profile` output (a 'profile: model ...' line and "
                 "its table)" % what)
    head = PROFILE_HEAD.match(lines[start])
    rows, parents = [], []
    for line in lines[start + 2:]:
        m = PROFILE_ROW.match(line)
        if not m:
            break
        depth = len(m.group(1)) // 2
        del parents[depth:]
        rows.append({"depth": depth, "name": m.group(2), "path": parents + [m.group(2)],
                     "ms": float(m.group(3)), "share": float(m.group(4))})
        parents.append(m.group(2))
    if not rows or rows[0]["name"] != "run":
        sys.exit("plot: %s: the profile's table has no 'run' row" % what)
    for i, r in enumerate(rows):
        r["leaf"] = i + 1 == len(rows) or rows[i + 1]["depth"] <= r["depth"]
    return {"model": head.group(1), "runs": int(head.group(2)),
            "of": int(head.group(3) or head.group(2)),
            "threads": int(head.group(4)), "rows": rows}


def profile_main(argv):
    ap = argparse.ArgumentParser(prog="plot.py --profile")
    ap.add_argument("--profile", nargs="+", required=True, metavar="FILE",
                    help="text of ctx run --profile, one model/config a file ('-': stdin)")
    ap.add_argument("--label", action="append", default=[],
                    help="a title for each file's chart (default: the profile's model, "
                         "threads and the file's name)")
    ap.add_argument("--out", default=os.path.join(HERE, "profile.png"))
    a = ap.parse_args(argv)
    if a.label and len(a.label) != len(a.profile):
        ap.error("give one --label per profile file (%d files, %d labels)"
                 % (len(a.profile), len(a.label)))
    charts = []
    for i, path in enumerate(a.profile):
        text = sys.stdin.read() if path == "-" else open(path).read()
        p = parse_profile(text, path)
        p["title"] = a.label[i] if a.label else "%s, %d thread%s (%s)" % (
            p["model"], p["threads"], "" if p["threads"] == 1 else "s", os.path.basename(path))
        p["bars"] = [r for r in p["rows"] if r["leaf"]]
        charts.append(p)
    draw_profiles(charts, a.out)
    with open(os.path.splitext(a.out)[0] + ".json", "w") as f:
        json.dump([{"title": c["title"], "model": c["model"], "threads": c["threads"],
                    "runs": c["runs"], "of": c["of"],
                    "bars": [{"label": b["name"], "group": " / ".join(b["path"][1:-1]),
                              "ms": b["ms"], "share": b["share"]} for b in c["bars"]]}
                   for c in charts], f, indent=1)
    print("wrote %s: %s" % (a.out, "; ".join("%s, %d regions" % (c["title"], len(c["bars"]))
                                             for c in charts)))


def draw_profiles(charts, out):
    """One horizontal bar chart per profile, stacked, the bars in the profile's order and
    coloured by the region they belong to (kernel prologue, levels, ...)."""
    heights = [0.8 + 0.28 * len(c["bars"]) for c in charts]
    fig, axes = plt.subplots(len(charts), 1, figsize=(10, sum(heights) + 0.4), squeeze=False,
                             gridspec_kw={"height_ratios": heights})
    palette = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax, c in zip(axes[:, 0], charts):
        groups = []
        for b in c["bars"]:
            g = " / ".join(b["path"][1:-1]) or "run"
            if g not in groups:
                groups.append(g)
        y = list(range(len(c["bars"])))[::-1]
        for yi, b in zip(y, c["bars"]):
            g = " / ".join(b["path"][1:-1]) or "run"
            col = palette[groups.index(g) % len(palette)]
            ax.barh(yi, b["ms"], color=col, label=g if g not in ax.get_legend_handles_labels()[1]
                    else None)
            ax.text(b["ms"], yi, " %.1f%%" % b["share"], va="center", fontsize=7)
        ax.set_yticks(y)
        ax.set_yticklabels(["  " * (b["depth"] - 1) + b["name"] for b in c["bars"]], fontsize=7)
        ax.set_xlabel("ms per run (%d run%s of %d)"
                      % (c["runs"], "" if c["runs"] == 1 else "s", c["of"]), fontsize=8)
        ax.set_title(c["title"], fontsize=9)
        ax.set_xlim(0, max([b["ms"] for b in c["bars"]] + [1e-6]) * 1.18)
        ax.grid(True, axis="x", alpha=0.3)
        ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    plt.close(fig)


# ---- latency against tree size -----------------------------------------------------------

def main():
    if "--profile" in sys.argv[1:]:
        return profile_main(sys.argv[1:])
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
