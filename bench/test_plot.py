#!/usr/bin/python3
"""test_plot.py — the plot_profile test: bench/plot.py --profile on the text of real
`ctx run --profile` runs (treefc on one thread, treelstm on two, and two runs of several
batches: treegru each batch twice, treefc each batch once), generated here.

It checks what was drawn, not times (benchmarks are not tests): the PNG is a PNG of
a chart per profile, each chart's bars are the profile's regions without
sub-regions, labelled by the profile's names in its order (the levels' node loops
among them), and their ms add up to the run's ms (the profile's rows add up to
their parents); a file without a profile is refused with a message. Exits 77
(skipped) when matplotlib is missing.

usage: test_plot.py --ctx PATH/TO/ctx --tmp DIR
"""
import argparse
import json
import os
import shutil
import struct
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ctx", required=True)
    ap.add_argument("--tmp", required=True)
    a = ap.parse_args()
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print("skipped: no matplotlib (Debian python3-matplotlib)")
        return 77
    shutil.rmtree(a.tmp, ignore_errors=True)
    os.makedirs(a.tmp)
    runs = [("treefc", ["--threads", "1"]), ("treelstm", ["--threads", "2"]),
            ("treegru", ["--threads", "1", "--batch", "2"]),
            ("treefc", ["--threads", "1", "--batch", "3", "--repeat", "1"])]
    files = []
    for i, (model, extra) in enumerate(runs):
        path = os.path.join(a.tmp, "%d.%s.prof" % (i, model))
        with open(path, "w") as f:
            subprocess.run([a.ctx, "run", os.path.join(ROOT, "examples", model + ".ctx"),
                            "-D", "H=32", "--gen", "binary:leaves=9,count=6,seed=2",
                            "--profile"] + extra, stdout=f, check=True)
        files.append(path)
    out = os.path.join(a.tmp, "profile.png")
    r = subprocess.run([sys.executable, os.path.join(HERE, "plot.py"), "--profile"] + files +
                       ["--out", out], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    print(r.stdout.strip())
    with open(out, "rb") as f:
        png = f.read(24)
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and png[12:16] == b"IHDR", "not a PNG"
    width, height = struct.unpack(">II", png[16:24])
    assert width >= 600 and height >= 400, (width, height)
    with open(os.path.splitext(out)[0] + ".json") as f:
        charts = json.load(f)
    assert [c["model"] for c in charts] == ["treefc", "treelstm", "treegru", "treefc"], charts
    assert [c["threads"] for c in charts] == [1, 2, 1, 1]
    # 6 trees: 3 batches of 2, each twice (its faster run shown); 2 batches of 3, once
    assert [(c["runs"], c["of"]) for c in charts[2:]] == [(3, 6), (2, 2)], charts
    for c, path in zip(charts, files):
        check_chart(c, open(path).read())
    # not a profile: a message naming the file, a failing exit
    bad = os.path.join(a.tmp, "bad.txt")
    with open(bad, "w") as f:
        f.write("ran: engine=jit threads=1 weights=seed:0 schedule=default output=summary\n")
    r = subprocess.run([sys.executable, os.path.join(HERE, "plot.py"), "--profile", bad,
                        "--out", os.path.join(a.tmp, "bad.png")], capture_output=True, text=True)
    assert r.returncode != 0 and "bad.txt: no `ctx run --profile` output" in r.stderr, r.stderr
    print("plot_profile ok")
    return 0


def check_chart(chart, text):
    """The bars of [chart] against the profile table in [text]."""
    lines = text.splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith("profile: model "))
    table = []
    for line in lines[start + 2:]:
        name = line.strip()
        if not name:
            break
        cells = line.split()
        if "%" not in line:
            break
        # name: everything before the ms/run column (the first number followed by a share)
        pct = next(i for i, c in enumerate(cells) if c.endswith("%"))
        table.append((len(line) - len(line.lstrip(" ")), " ".join(cells[:pct - 1]),
                      float(cells[pct - 1])))
    leaves = [n for i, (d, n, _) in enumerate(table)
              if i + 1 == len(table) or table[i + 1][0] <= d]
    labels = [b["label"] for b in chart["bars"]]
    assert labels == leaves, (labels, leaves)
    assert "linearization" in labels
    assert any(b["group"].endswith("levels") for b in chart["bars"]), chart["bars"]
    run_ms = table[0][2]
    total = sum(b["ms"] for b in chart["bars"])
    assert abs(total - run_ms) <= 1e-4 * len(labels) + 1e-3 * run_ms, (total, run_ms)


if __name__ == "__main__":
    sys.exit(main())
