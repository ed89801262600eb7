#!/usr/bin/env python3
"""ctx run --profile and --perf-map (driver/driver_profile.c).

The profile's structure, not its times (benchmarks are not tests): every
region of the kernel (each top-level statement, each statement of a levels
loop, as --dump=ilir shows them) has a row, named by what it stores; the
rows of every group add up to their parent's share; the FLOPs of treefc and
treelstm are docs/models.md's (2 per multiply-add: 4H^2 and 10H^2 per
internal node) on one and two threads; the weight bytes of a level's
product are its weight block once per level; the outputs with --profile
equal the outputs without it and match the interpreter; `--batch 1` takes
refactor_recursion for treefc only; of batches of different sizes, every
batch counts once (each its faster run of two), so the FLOPs per run are
the mean over all of them, not over the smaller batches that a faster half
of all the runs would be. --perf-map writes
/tmp/perf-PID.map lines that name the kernel with a well-formed range;
--perf-jitdump a jitdump naming it; the kernel of --dump=llvm carries no
instrumentation.

Usage: profile.py --ctx PATH/TO/ctx
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
H = 64
DIMS = ["-D", f"H={H}", "-D", "V=50"]
# 5 binary trees of 7 leaves: 35 leaves and 30 internal nodes per run
GEN = ["--gen", "binary:leaves=7,count=5,seed=3"]
LEAVES, INTERNAL = 35, 30
# multiply-adds per internal node (docs/models.md)
MADDS = {"treefc": 2 * H * H, "treelstm": 5 * H * H}

ROW = re.compile(
    r"^( *)(.+?) +(-?[0-9.]+) +(-?[0-9.]+)% +([0-9.]+|-|\?) +([0-9.]+|-|\?) +([0-9.]+|-)"
    r"(?: +([0-9.]+) (nodes|levels|runs))?$")

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def run(ctx, args, **kw):
    return subprocess.run([ctx] + args, capture_output=True, text=True, **kw)


def regions_of_ilir(ctx, model):
    """[(depth, statement text)] of the kernel's profiled statements."""
    out = run(ctx, ["check", "--dump=ilir"] + DIMS + [model]).stdout
    regions, in_levels = [], False
    for line in out.splitlines():
        if line.startswith(("kernel", "  buf", "  output")):
            continue
        if line and not line.startswith((" ", "}")):
            in_levels = line.startswith("for l in levels")
            regions.append([2, line])
        elif in_levels and line.startswith("  ") and not line.startswith(("   ", "  }")):
            regions.append([3, line])
        elif regions:
            regions[-1][1] += "\n" + line
    return regions


def stores(stmt):
    """The buffers [stmt]'s text stores."""
    return set(re.findall(r"^ *([A-Za-z_][A-Za-z0-9_.]*)\[.*\] = ", stmt, re.M))


def parse(text):
    """The profile's header and rows: (depth, name, ms, share, mflop, per, unit)."""
    lines = text.splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith("profile: "))
    rows = []
    for line in lines[start + 2:]:
        m = ROW.match(line)
        if not m:
            check(line.startswith("time: ") or
                  re.match(r"steps: levels_per_run=[0-9.]+ barriers_per_run=[0-9.]+$", line),
                  f"unparsed profile line {line!r}")
            continue
        depth = len(m.group(1)) // 2
        mflop = float(m.group(5)) if m.group(5) not in "-?" else None
        per = float(m.group(8)) if m.group(8) else None
        rows.append((depth, m.group(2), float(m.group(3)), float(m.group(4)), mflop,
                     per, m.group(9), m.group(7)))
    return lines[start], rows


def check_sums(rows, label):
    """Each row's share is the sum of its children's (rounding: 0.1% each)."""
    for i, (depth, name, _, share, *_rest) in enumerate(rows):
        kids = []
        for r in rows[i + 1:]:
            if r[0] <= depth:
                break
            if r[0] == depth + 1:
                kids.append(r[3])
        if kids:
            total = sum(kids)
            check(abs(total - share) <= 0.1 * len(kids) + 0.05,
                  f"{label}: children of '{name}' add up to {total:.1f}%, not {share:.1f}%")


def check_profile(ctx, name, threads):
    model = os.path.join(ROOT, "examples", name + ".ctx")
    label = f"{name} on {threads} thread(s)"
    with tempfile.TemporaryDirectory() as tmp:
        prof_npy, plain_npy, ref_npy = (os.path.join(tmp, n) for n in ("p.npy", "j.npy", "i.npy"))
        common = ["run", model] + DIMS + GEN
        p = run(ctx, common + ["--threads", str(threads), "--repeat", "3", "--profile",
                               "--output", prof_npy])
        check(p.returncode == 0, f"{label}: exit {p.returncode}: {p.stderr}")
        if p.returncode:
            return
        run(ctx, common + ["--threads", str(threads), "--output", plain_npy], check=True)
        run(ctx, common + ["--interp", "--output", ref_npy], check=True)
        got, plain, ref = np.load(prof_npy), np.load(plain_npy), np.load(ref_npy)
        check(got.shape == ref.shape and np.allclose(got, ref, rtol=1e-4, atol=1e-5),
              f"{label}: outputs with --profile differ from the interpreter's")
        check(np.allclose(got, plain, rtol=1e-4, atol=1e-5),
              f"{label}: outputs with --profile differ from those without")
    head, rows = parse(p.stdout)
    check(re.match(rf"profile: model {name}, 2 runs \(the faster half of 3\), {threads} "
                   r"threads?", head) is not None,
          f"{label}: header {head!r}")
    check((threads > 1) == ("thread 0's time" in head), f"{label}: header {head!r}")
    names = [r[1] for r in rows]
    for want in ("run", "linearization", "buffers and output rows", "kernel"):
        check(want in names, f"{label}: no row '{want}'")
    check(rows[0][1] == "run" and abs(rows[0][3] - 100) < 0.05, f"{label}: run row {rows[0]}")
    check_sums(rows, label)
    # every region of the kernel, in order, named by the buffers it stores
    want = regions_of_ilir(ctx, model)
    got = [r for r in rows if r[0] >= 2 and not r[1].startswith("(rest")]
    check(len(got) == len(want), f"{label}: {len(got)} region rows, ILIR has {len(want)}")
    for (depth, stmt), row in zip(want, got):
        check(depth == row[0], f"{label}: '{row[1]}' at depth {row[0]}, not {depth}")
        named = {n.split(" (tile")[0] for n in row[1].split(" + ")}
        if depth == 3:
            check(named == stores(stmt),
                  f"{label}: '{row[1]}' names other buffers than {stmt!r} stores")
            check(("register tile" in stmt) == ("(tile " in row[1]),
                  f"{label}: '{row[1]}' and the tile of {stmt!r}")
    # FLOPs: docs/models.md's count over the internal nodes of a run
    flops = 2 * MADDS[name] * INTERNAL / 1e6
    run_row = rows[0]
    check(run_row[4] is not None and abs(run_row[4] - flops) <= 0.0015,
          f"{label}: {run_row[4]} MFLOP per run, docs/models.md says {flops:.3f}")
    leaf = [r for r in rows if r[1] == "leaf level"]
    inner = [r for r in rows if r[1] == "inner levels"]
    check(len(leaf) == 1 and len(inner) == 1, f"{label}: leaf and inner level rows")
    if leaf and inner:
        i = rows.index(inner[0])
        kid = rows[i + 1]
        check(kid[6] == "nodes" and kid[5] == INTERNAL, f"{label}: inner nodes {kid}")
        check(rows[rows.index(leaf[0]) + 1][5] == LEAVES, f"{label}: leaf nodes")
        if name == "treefc":  # W [H, 2H] read once per level, b [H] too
            levels = inner[0][5]
            mb = levels * (2 * H * H + H) * 4 / 1e6
            check(abs(float(kid[7]) - mb) <= 0.0015,
                  f"{label}: {kid[7]} MB of weights per run, not {mb:.3f}")


def check_zoo(ctx):
    """Every model of the zoo profiles: the rows add up, and every FLOP count
    is known (a loop over a node's dependencies that only adds rows has
    none, whatever its trip count)."""
    for f in sorted(os.listdir(os.path.join(ROOT, "examples"))):
        if not f.endswith(".ctx"):
            continue
        p = run(ctx, ["run", os.path.join(ROOT, "examples", f), "-D", "H=16",
                      "--threads", "1", "--profile", "--output", os.devnull])
        check(p.returncode == 0, f"{f}: exit {p.returncode}: {p.stderr}")
        if p.returncode:
            continue
        _, rows = parse(p.stdout)
        check_sums(rows, f)
        check(all(r[4] != "?" for r in rows) and "?" not in p.stdout.split("\n", 2)[2],
              f"{f}: a FLOP count is unknown")


def check_perf_map(ctx):
    model = os.path.join(ROOT, "examples", "treefc.ctx")
    proc = subprocess.Popen([ctx, "run", model] + DIMS + GEN + ["--perf-map", "--output",
                                                                os.devnull],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _, err = proc.communicate()
    path = f"/tmp/perf-{proc.pid}.map"
    check(proc.returncode == 0, f"--perf-map: exit {proc.returncode}: {err}")
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    except OSError as e:
        check(False, f"--perf-map: {e}")
        return
    finally:
        if os.path.exists(path):
            os.remove(path)
    kernel = []
    for line in lines:
        m = re.match(r"^([0-9a-f]+) ([0-9a-f]+) (\S+)$", line)
        check(m is not None, f"--perf-map: malformed line {line!r}")
        if m and m.group(3) == "ctx_treefc_kernel":
            kernel.append((int(m.group(1), 16), int(m.group(2), 16)))
    check(len(kernel) == 1, f"--perf-map: {len(kernel)} lines name the kernel: {lines}")
    for start, size in kernel:
        check(start >= 0x10000 and 16 <= size < (1 << 24) and start + size < (1 << 48),
              f"--perf-map: kernel at {start:#x}, {size} bytes")


def check_jitdump(ctx):
    """--perf-jitdump: LLVM's jitdump under $JITDUMPDIR naming the kernel
    (this LLVM has perf support, or ctx says it has none); outputs unchanged."""
    model = os.path.join(ROOT, "examples", "treefc.ctx")
    with tempfile.TemporaryDirectory() as tmp:
        out, ref = os.path.join(tmp, "j.npy"), os.path.join(tmp, "i.npy")
        env = dict(os.environ, JITDUMPDIR=tmp)
        p = run(ctx, ["run", model] + DIMS + GEN + ["--perf-jitdump", "--output", out], env=env)
        check(p.returncode == 0, f"--perf-jitdump: exit {p.returncode}: {p.stderr}")
        if "no perf support" in p.stderr:
            print("note: this LLVM has no perf support; no jitdump to check")
            return
        run(ctx, ["run", model] + DIMS + GEN + ["--interp", "--output", ref], check=True)
        check(np.allclose(np.load(out), np.load(ref), rtol=1e-4, atol=1e-5),
              "--perf-jitdump: outputs differ from the interpreter's")
        dumps = [os.path.join(d, f) for d, _, fs in os.walk(tmp) for f in fs
                 if re.match(r"jit-[0-9]+\.dump$", f)]
        check(len(dumps) == 1, f"--perf-jitdump: dumps {dumps}")
        for path in dumps:
            with open(path, "rb") as f:
                data = f.read()
            check(data[:4] == b"DTiJ", f"--perf-jitdump: {path} has no jitdump magic")
            check(b"ctx_treefc_kernel\0" in data, f"--perf-jitdump: {path} names no kernel")


def check_batch_one(ctx):
    """`ctx run --batch 1 --threads 1` compiles treefc's default plan with
    refactor_recursion (its products per child place: driver/pipeline.c,
    batch_one_kernel): the profile's regions name W.refactored0 and 1, the
    outputs match the interpreter's; on two threads, at --batch 2, and for
    treelstm (whose refactored U_iou (h0 + h1) would multiply the work) at
    --batch 1, the plain default's."""
    with tempfile.TemporaryDirectory() as tmp:
        for name, batch, want in (("treefc", "1", True), ("treefc", "2", False),
                                  ("treelstm", "1", False)):
            model = os.path.join(ROOT, "examples", name + ".ctx")
            ref = os.path.join(tmp, name + ".ref.npy")
            run(ctx, ["run", model] + DIMS + GEN + ["--interp", "--output", ref], check=True)
            for threads in ("1", "2"):
                out = os.path.join(tmp, name + ".npy")
                p = run(ctx, ["run", model] + DIMS + GEN + ["--batch", batch, "--threads", threads,
                                                            "--profile", "--output", out])
                label = f"{name} --batch {batch} --threads {threads}"
                check(p.returncode == 0, f"{label}: exit {p.returncode}: {p.stderr}")
                if p.returncode:
                    continue
                got = "W.refactored0" in p.stdout and "W.refactored1" in p.stdout
                one = want and threads == "1"
                check(got == one and (one or "refactored" not in p.stdout),
                      f"{label}: refactored products {'missing' if one else 'present'}")
                check(np.allclose(np.load(out), np.load(ref), rtol=1e-4, atol=1e-5),
                      f"{label}: outputs differ from the interpreter's")


def right_branching(leaves, word):
    """A PTB tree of [leaves] leaves (word ids from [word], below V=50), each
    internal node's right child the rest of the tree."""
    if leaves == 1:
        return f"(0 {word % 50})"
    return f"(0 (0 {word % 50}) {right_branching(leaves - 1, word + 7)})"


def check_batches(ctx):
    """--batch 1 over trees of 2, 12, 3 and 10 leaves: each batch's faster half."""
    sizes = [2, 12, 3, 10]
    model = os.path.join(ROOT, "examples", "treefc.ctx")
    with tempfile.TemporaryDirectory() as tmp:
        ptb = os.path.join(tmp, "sizes.ptb")
        with open(ptb, "w") as f:
            f.writelines(right_branching(n, 3 * i) + "\n" for i, n in enumerate(sizes))
        common = ["run", model] + DIMS + ["--input", ptb, "--batch", "1", "--threads", "1",
                                          "--profile", "--output", os.path.join(tmp, "o.npy")]
        for extra, shown, which in (
                ([], 4, "the faster half of 8: each of 4 batches' faster 1 of 2"),
                (["--repeat", "1"], 4, "every run: 4 batches, once each"),
                (["--repeat", "4"], 8, "the faster half of 16: each of 4 batches' faster 2 of 4")):
            label = "batches " + (" ".join(extra) or "(default repeat)")
            p = run(ctx, common + extra)
            check(p.returncode == 0, f"{label}: exit {p.returncode}: {p.stderr}")
            if p.returncode:
                continue
            head, rows = parse(p.stdout)
            check(head.startswith(f"profile: model treefc, {shown} runs ({which}), 1 thread;"),
                  f"{label}: header {head!r}")
            flops = 2 * MADDS["treefc"] * sum(n - 1 for n in sizes) / len(sizes) / 1e6
            check(rows and rows[0][4] is not None and abs(rows[0][4] - flops) <= 0.0015,
                  f"{label}: {rows[0][4] if rows else None} MFLOP per run, the mean over "
                  f"every batch is {flops:.3f}")


def check_plain_kernel(ctx):
    model = os.path.join(ROOT, "examples", "treelstm.ctx")
    ir = run(ctx, ["check", "--dump=llvm"] + DIMS + [model]).stdout
    check("define" in ir and "readcyclecounter" not in ir and ".prof" not in ir,
          "--dump=llvm: the kernel without --profile carries instrumentation")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ctx", required=True)
    ctx = ap.parse_args().ctx
    for name in ("treefc", "treelstm"):
        for threads in (1, 2):
            check_profile(ctx, name, threads)
    check_zoo(ctx)
    check_perf_map(ctx)
    check_jitdump(ctx)
    check_batch_one(ctx)
    check_batches(ctx)
    check_plain_kernel(ctx)
    print(f"{len(failures)} failed" if failures else "all profile checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
