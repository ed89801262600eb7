#!/usr/bin/python3
"""run.py — runs every bench case for ctx, the OpenBLAS baseline and the PyTorch
eager baseline on the same inputs and weights, checks each against the float64
reference interpreter, and prints one table (bench/README.md explains it).

Called by bench/run.sh after setup and build; usage:
  run.py --ctx CTX --bin DIR --work DIR [--quick] [--only SUBSTR]
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PY = "/usr/bin/python3"

# model -> (input file, weights re-read per gemm level in floats as f(H), extra dims)
INPUT = {"treefc": "sst.ptb", "treegru": "sst.ptb", "treelstm": "sst.ptb",
         "mvrnn": "sst_v1000.ptb", "childsum": "dep.nodes", "dagrnn": "grid.nodes",
         "seqlstm": "seq.nodes"}
WFLOATS = {"treefc": lambda H: 2 * H * H, "treegru": lambda H: 3 * H * H,
           "treelstm": lambda H: 4 * H * H, "childsum": lambda H: 8 * H * H,
           "mvrnn": lambda H: 4 * H * H, "dagrnn": lambda H: 2 * H * H,
           "seqlstm": lambda H: 4 * H * H}


def cases(quick):
    out = []
    for m in ("treefc", "treegru", "treelstm"):
        for H in (256, 512):
            out.append((m, H))
    for m in ("childsum", "mvrnn"):
        for H in (64, 128):
            out.append((m, H))
    out += [("dagrnn", 256), ("seqlstm", 256)]
    return out


def dims(model, H):
    d = ["-D", "H=%d" % H]
    if model == "mvrnn":
        d += ["-D", "V=1000"]
    return d


# ---- structure statistics (for the machine limit) -------------------------------

def structs_of(path):
    """Per structure: (children lists). PTB or node lists."""
    out = []
    if path.endswith(".ptb"):
        for line in open(path):
            if not line.strip():
                continue
            kids, stack = [], []
            for tok in re.findall(r"\(|\)|[^\s()]+", line):
                if tok == "(":
                    kids.append([])
                    if stack:
                        kids[stack[-1]].append(len(kids) - 1)
                    stack.append(len(kids) - 1)
                elif tok == ")":
                    stack.pop()
            out.append(kids)
        return out
    cur = None
    for line in open(path):
        t = line.split("#")[0].replace(":", " : ").split()
        if not t:
            continue
        if t[0] in ("tree", "dag", "sequence"):
            cur = {"seq": t[0] == "sequence", "deps": []}
            out.append(cur)
            continue
        cur["deps"].append([int(x) for x in t[t.index(":") + 1:]] if ":" in t else [])
    res = []
    for s in out:
        n = len(s["deps"])
        res.append([[i - 1] if i else [] for i in range(n)] if s["seq"] else s["deps"])
    return res


def levels(kids):
    lv = [None] * len(kids)
    for start in range(len(kids)):
        stack = [start]
        while stack:
            n = stack[-1]
            if lv[n] is not None:
                stack.pop()
                continue
            pend = [k for k in kids[n] if lv[k] is None]
            if pend:
                stack += pend
            else:
                lv[n] = 1 + max((lv[k] for k in kids[n]), default=-1)
                stack.pop()
    return max(lv) + 1


def flops(model, H, kids):
    n = len(kids)
    inner = sum(1 for k in kids if k)
    edges = sum(len(k) for k in kids)
    mac = {"treefc": 2 * H * H * inner, "treegru": 3 * H * H * inner,
           "treelstm": 5 * H * H * inner,
           "childsum": 4 * H * H * n + 3 * H * H * inner + H * H * edges,
           "mvrnn": (4 * H * H + 2 * H ** 3) * inner,
           "dagrnn": H * H * n + H * H * inner, "seqlstm": 4 * H * H * inner}[model]
    return 2 * mac


def limit_ms(model, H, batch, structs, peak, bw):
    wbytes = 4 * WFLOATS[model](H)
    bwv = next((g for size, g in bw if size >= wbytes), bw[-1][1])
    lims = []
    for i in range(0, len(structs), batch):
        b = structs[i:i + batch]
        lv = max(levels(k) for k in b)
        gemm_levels = lv if model in ("childsum", "dagrnn") else lv - 1
        f = sum(flops(model, H, k) for k in b)
        lims.append(max(f / (peak * 1e9), wbytes * gemm_levels / (bwv * 1e9)) * 1e3)
    return statistics.median(lims)


# ---- running --------------------------------------------------------------------

def sh(cmd, timeout=900):
    t0 = time.time()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=timeout)
    if p.returncode:
        sys.stderr.write("bench: failed (%.1fs): %s\n%s%s" % (time.time() - t0, " ".join(cmd),
                                                           p.stdout[-2000:], p.stderr[-2000:]))
        return None
    return p.stdout


def medians(text):
    """[(batch_size, threads or None, median_ms)] from `time:` lines."""
    out = []
    for m in re.finditer(r"time: median_ms=([\d.]+).*?batch_size=(\d+)(?: threads=(\d+))?",
                         text or ""):
        out.append((int(m.group(2)), int(m.group(3)) if m.group(3) else None,
                    float(m.group(1))))
    return out


def close(got, ref):
    try:
        a, r = np.load(got), np.load(ref)
    except (OSError, ValueError):
        return "n/a"
    if a.shape != r.shape:
        return "FAIL"
    return "PASS" if np.allclose(a, r, rtol=1e-4, atol=1e-5) else "FAIL"


def head_structs(src, dst, n):
    """The first n structures of src into dst."""
    lines, count, ptb = [], 0, src.endswith(".ptb")
    for line in open(src):
        t = line.strip()
        starts = t.startswith("(") if ptb else t in ("tree", "dag", "sequence")
        if starts:
            count += 1
            if count > n:
                break
        lines.append(line)
    with open(dst, "w") as f:
        f.writelines(lines)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ctx", required=True)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", default="")
    a = ap.parse_args()
    q = a.quick
    count = 30 if q else 100
    reps = 2 if q else 5
    ncheck = 2 if q else 10
    work = a.work
    data = os.path.join(work, "data")
    os.makedirs(data, exist_ok=True)
    sh([PY, os.path.join(HERE, "data", "gen_sst.py"), data, "--count", str(count),
        "--features", "256", "--stats"])

    peak_out = sh([os.path.join(a.bin, "sgemm_peak")] + (["--quick"] if q else []))
    peaks = {int(t): float(g) for t, g in re.findall(r"peak: threads=(\d+) gflops=([\d.]+)",
                                                      peak_out)}
    bw = [(int(s), float(g)) for s, g in re.findall(r"bw: bytes=(\d+) gbps=([\d.]+)", peak_out)]
    print("machine: sgemm peak %.1f GFLOP/s (1 thread), %.1f (2 threads); read bandwidth "
          "%.0f GB/s (<=1 MiB), %.0f GB/s (4 MiB), %.0f GB/s (64 MiB)"
          % (peaks[1], peaks[2], bw[4][1], bw[6][1], bw[-1][1]), flush=True)

    help_text = subprocess.run([a.ctx, "run", "--help"], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True).stdout
    ctx_timed = "--time" in help_text
    if not ctx_timed:
        print("note: this ctx has no compiled backend with --time: ctx columns are n/a")

    rows = []
    for model, H in cases(q):
        if a.only and a.only not in "%s H=%d" % (model, H):
            continue
        inp = os.path.join(data, INPUT[model])
        tag = "%s_H%d" % (model, H)
        wts = os.path.join(work, tag + ".safetensors")
        d = dims(model, H)
        sh([PY, os.path.join(HERE, "data", "gen_weights.py"), model] + d + ["-o", wts])
        mctx = os.path.join(ROOT, "examples", model + ".ctx")
        structs = structs_of(inp)
        # correctness on the first ncheck structures, in batches of up to 10
        chk = os.path.join(work, tag + ".check" + os.path.splitext(inp)[1])
        head_structs(inp, chk, ncheck)
        ref = os.path.join(work, tag + ".ref.npy")
        sh([a.ctx, "run", mctx, "--interp", "--input", chk, "--weights", wts, "--output", ref]
           + d)
        outs = {k: os.path.join(work, "%s.%s.npy" % (tag, k))
                for k in ("ctx", "aot", "blas", "torch")}
        for f in outs.values():
            if os.path.exists(f):
                os.remove(f)
        aot_dir = os.path.join(work, tag + ".aot")
        if ctx_timed:
            sh([a.ctx, "run", mctx, "--input", chk, "--weights", wts, "--batch", "10",
                "--output", outs["ctx"]] + d)
            sh([a.ctx, "build", mctx, "-o", aot_dir] + d)
            sh([os.path.join(a.bin, "aot_time"), aot_dir, model, "--input", chk,
                "--weights", wts, "--batch", "10", "--repeat", "1", "--output", outs["aot"]])
        sh([os.path.join(a.bin, "blas_tree"), model, "--input", chk, "--weights", wts,
            "--batch", "10", "--repeat", "1", "--output", outs["blas"]] + d)
        sh([PY, os.path.join(HERE, "baselines", "torch_eager.py"), model, "--input", chk,
            "--weights", wts, "--batch", "10", "--repeat", "1", "--output", outs["torch"]] + d)
        check = "/".join(close(outs[k], ref) if (k not in ("ctx", "aot") or ctx_timed)
                         else "n/a" for k in ("ctx", "aot", "blas", "torch"))
        # timings
        tr = medians(sh([PY, os.path.join(HERE, "baselines", "torch_eager.py"), model,
                         "--input", inp, "--weights", wts, "--batch", "1,10",
                         "--threads", "1,2,2", "--repeat", str(reps)] + d))
        for batch in (1, 10):
            r = {"case": "%s H=%d B=%d" % (model, H, batch), "check": check}
            for t in (1, 2, 2) if ctx_timed else ():
                m = medians(sh([a.ctx, "run", mctx, "--input", inp, "--weights", wts,
                                "--batch", str(batch), "--repeat", str(reps), "--time",
                                "--threads", str(t)] + d))
                if m:
                    k = "ctx%d" % t
                    r[k] = min(r.get(k, 1e30), m[0][2])
            if ctx_timed:
                m = medians(sh([os.path.join(a.bin, "aot_time"), aot_dir, model, "--input",
                                inp, "--weights", wts, "--batch", str(batch), "--repeat",
                                str(reps), "--threads", "1"]))
                if m:
                    r["aot1"] = m[0][2]
            for t in (1, 2, 2):
                m = medians(sh([os.path.join(a.bin, "blas_tree"), model, "--input", inp,
                                "--weights", wts, "--batch", str(batch), "--repeat", str(reps),
                                "--threads", str(t)] + d))
                if m:
                    k = "blas%d" % t
                    r[k] = min(r.get(k, 1e30), m[0][2])
            for bs, t, ms in tr:
                if bs == batch:
                    k = "torch%d" % t
                    r[k] = min(r.get(k, 1e30), ms)
            r["limit"] = limit_ms(model, H, batch, structs, peaks[1], bw)
            rows.append(r)
            print_row(r, first=len(rows) == 1)
    print()
    print("medians per batch in ms (2-thread columns: the better of two runs); "
          "limit: one core; check: ctx/aot/blas/torch vs the float64 interpreter")


def fmt(v):
    if v is None:
        return "n/a"
    return "%.3g" % v if v < 100 else "%.0f" % v


def ratio(x, y):
    return "%.2f" % (x / y) if x and y else "n/a"


def print_row(r, first):
    cols = ["case", "ctx 1t", "ctx 2t", "aot 1t", "blas 1t", "blas 2t", "torch 1t",
            "torch 2t", "limit", "ctx/limit", "blas/ctx", "torch/ctx", "check"]
    if first:
        print("| " + " | ".join(cols) + " |")
        print("|" + "|".join("---" for _ in cols) + "|")
    c = r.get("ctx1")
    vals = [r["case"], fmt(c), fmt(r.get("ctx2")), fmt(r.get("aot1")), fmt(r.get("blas1")),
            fmt(r.get("blas2")),
            fmt(r.get("torch1")),
            fmt(r.get("torch2")), fmt(r["limit"]), ratio(c, r["limit"]),
            ratio(r.get("blas1"), c), ratio(r.get("torch1"), c), r["check"]]
    print("| " + " | ".join(vals) + " |", flush=True)


if __name__ == "__main__":
    main()
