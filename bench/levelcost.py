#!/usr/bin/python3
"""bench/levelcost.py — what a dependency level costs beyond its nodes' work.

`ctx run --profile` times, inside every levels loop, each node loop and the
rest: the level loop itself, its barrier and, on several threads, the wait
for the slowest thread (`(rest: level loop, barriers)`). This script sums
those rows over a run and divides by the run's levels, for every zoo model
on generated inputs (`--gen`: the cost does not depend on the weights, so
the seeded ones serve):

- at H = 16 the nodes' work is a few hundred nanoseconds a level, so the
  figure is the fixed cost of a level: loop control, and with two threads
  the barrier's round trip between the cores;
- at the bench's H (256; mvrnn 64) it adds what the threads' shares of a
  level differ by (the wait for the slower one).

usage: bench/levelcost.py [--ctx CTX] [--rounds N] [--batch B] [--only MODEL]
Prints a markdown table; medians of N runs of `--repeat 50` each. On a machine
with one CPU the two-thread columns say n/a.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# model, dims at the small H and at the bench's H, the input (B structures)
MODELS = [
    ("treefc", "binary:leaves=20"),
    ("treegru", "binary:leaves=20"),
    ("treelstm", "binary:leaves=20"),
    ("childsum", "nary:nodes=20,arity=4"),
    ("mvrnn", "binary:leaves=20"),
    ("dagrnn", "grid:rows=10,cols=10"),
    ("seqlstm", "sequence:length=50"),
]


def dims(model, h):
    d = ["-D", "H=%d" % h]
    if model == "mvrnn":
        d += ["-D", "V=256"]  # EmbM is V x H x H: the default V's table is 330 MB at H = 64
    if model == "dagrnn":
        d += ["-D", "D=%d" % h]
    return d


def profile(ctx, model, h, gen, batch, threads):
    """(levels, barriers, rest ms, kernel ms) per run of one `ctx run --profile`:
    one thread on the last CPU, two on the first two."""
    cpus = str((os.cpu_count() or 1) - 1) if threads == 1 else "0,1"
    cmd = ["taskset", "-c", cpus, ctx, "run", os.path.join(ROOT, "examples", model + ".ctx")]
    cmd += dims(model, h) + ["--gen", "%s,count=%d" % (gen, batch), "--batch", str(batch),
                             "--threads", str(threads), "--repeat", "50", "--profile"]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    rest = sum(float(m.group(1)) for m in
               re.finditer(r"^\s+\(rest: level loop, barriers\)\s+([\d.]+)", out, re.M))
    kernel = float(re.search(r"^\s+kernel\s+([\d.]+)", out, re.M).group(1))
    steps = re.search(r"levels_per_run=([\d.]+) barriers_per_run=([\d.]+)", out)
    return float(steps.group(1)), float(steps.group(2)), rest, kernel


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ctx", default=os.path.join(ROOT, "build", "driver", "ctx"))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--batch", type=int, default=10)
    ap.add_argument("--only", help="the models whose name contains this")
    a = ap.parse_args()
    models = [m for m in MODELS if not a.only or a.only in m[0]]
    if not models:
        sys.exit("levelcost: no zoo model matches --only %s" % a.only)
    two = (os.cpu_count() or 1) >= 2
    print("| model | H | levels | barriers | 1 thread: µs a level | 2 threads: µs a level | "
          "2 threads: share of the kernel |")
    print("|---|---|---|---|---|---|---|")
    for model, gen in models:
        for h in (16, 64 if model == "mvrnn" else 256):
            cell = {}
            for threads in (1, 2) if two else (1,):
                runs = [profile(a.ctx, model, h, gen, a.batch, threads) for _ in range(a.rounds)]
                per_level = statistics.median(r[2] / r[0] * 1000 for r in runs)
                share = statistics.median(r[2] / r[3] for r in runs)
                cell[threads] = (runs[0][0], runs[0][1], "%.2f" % per_level,
                                 "%.1f%%" % (100 * share))
            levels, barriers = cell[1][0], cell[2][1] if two else cell[1][1]
            print("| %s | %d | %.1f | %.1f | %s | %s | %s |" %
                  (model, h, levels, barriers, cell[1][2], cell[2][2] if two else "n/a",
                   cell[2][3] if two else "n/a"), flush=True)


if __name__ == "__main__":
    main()
