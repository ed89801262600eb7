#!/usr/bin/python3
"""run.py — ctx against the strongest hand-written baselines and against the
machine's physical limit, in one run; bench/README.md says what every column is.

Called by bench/run.sh after setup and build; usage:
  run.py --ctx CTX --bin DIR --work DIR [--quick] [--only MODEL] [--cpu N] [--json F]

Order of work, per case (model, H): seeded weights; the outputs of ctx and of every
baseline on the first structures against `ctx run --interp`; then for B = 1 and 10,
ROUNDS rounds in which every implementation runs once (after its own warm-up pass),
the order rotating from round to round, so that the machine's drifts (others' builds
on a shared machine) fall on all columns alike; a cell is the median of its rounds'
medians per batch.
"""
import argparse
import json
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

# recurrent weights (floats, as f(H)): what every dependent step must read after
# its input is ready (docs/models.md). The step of a node on the longest path
# waits for one child, the last to finish; a product with a part per child reads
# only that child's part then, as the other's could have run earlier: treefc's
# W [H, 2H] is W_0 h_0 + W_1 h_1, of which a step needs one half (H^2), and
# mvrnn's WM [A; B] one half of WM (H^2) besides all of W (2H^2), since both B a
# and A b need both children. treelstm's and childsum's U_f h_k is per child too,
# but the last child's f_k needs all of U_f. Node-independent products
# (childsum's W_iou, W_f, dagrnn's W) run once per batch, off the dependent path.
REC_FLOATS = {"treefc": lambda H: H * H, "treegru": lambda H: 3 * H * H,
              "treelstm": lambda H: 4 * H * H, "childsum": lambda H: 4 * H * H,
              "mvrnn": lambda H: 3 * H * H, "dagrnn": lambda H: H * H,
              "seqlstm": lambda H: 4 * H * H}

IMPLS = ["ctx", "c_level", "c_node", "torch_level", "torch_eager"]
TITLES = {"ctx": "ctx", "c_level": "C level", "c_node": "C per node",
          "torch_level": "PyTorch level", "torch_eager": "PyTorch eager"}


def cases():
    """(label, model, H, input file, extra dims) in table order."""
    out = []
    for m in ("treefc", "treegru", "treelstm"):
        for H in (256, 512):
            out.append((m, m, H, "sst.ptb", []))
    for H in (256, 512):
        out.append(("treelstm bal", "treelstm", H, "bal.ptb", []))
    for H in (256, 512):
        out.append(("childsum", "childsum", H, "dep.nodes", []))
    for H in (64, 128):
        out.append(("mvrnn", "mvrnn", H, "sst_v256.ptb", ["-D", "V=256"]))
    for H in (256, 512):
        out.append(("dagrnn", "dagrnn", H, "grid_%d.nodes" % H, ["-D", "D=%d" % H]))
    for H in (256, 512):
        out.append(("seqlstm", "seqlstm", H, "seq.nodes", []))
    return out


def two_thread_case(model, H):
    return H == (128 if model == "mvrnn" else 512)


# ---- structures (for the limit) ----------------------------------------------------

def structs_of(path):
    """Per structure: its children (or predecessors) lists."""
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
    return [[[i - 1] if i else [] for i in range(len(s["deps"]))] if s["seq"] else s["deps"]
            for s in out]


def num_levels(kids):
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
    """2 x the multiply-adds of docs/models.md with the algebra that saves the most
    (U·(h_0 + h_1), Σ before U); embedding lookups and elementwise work are free."""
    n = len(kids)
    inner = sum(1 for k in kids if k)
    edges = sum(len(k) for k in kids)
    mac = {"treefc": 2 * H * H * inner, "treegru": 3 * H * H * inner,
           "treelstm": 5 * H * H * inner,
           "childsum": 4 * H * H * n + 3 * H * H * inner + H * H * edges,
           "mvrnn": (4 * H * H + 2 * H ** 3) * inner,
           "dagrnn": H * H * n + H * H * inner, "seqlstm": 4 * H * H * inner}[model]
    return 2 * mac


def ws_sizes():
    """The recurrent weights' sizes in bytes of every case, for the machine's
    working-set probe (machine --ws)."""
    return sorted({4 * REC_FLOATS[model](H) for _, model, H, _, _ in cases()})


def step_seconds(wbytes, m):
    """The least time one dependent step can read [wbytes] of weights in: wbytes
    over the fastest rate any probe read a working set at least that large at,
    again and again (a smaller working set is never slower to re-read in the
    best order). The probe at the weights' own size reads them forward and back
    in turn, as ctx's level products do (machine.c, --ws), so it counts what
    the caches really keep of them: 1 MiB of weights in a 1 MiB L2 read at
    166-176 GB/s on a Zen 5, where the L2's probe at half its size read 227.
    Until 2026-12-07 the L2 was taken to keep its whole size of the weights at
    that rate (treelstm H=256 B=1 0.0445 ms a batch, a rate no probe reached).
    Also which levels the weights are read from, e.g. "L2+L3"."""
    rates = [g for b, g in m["ws"] + m["sweep"] if b >= wbytes]
    c = m["cache"]
    if wbytes < c.get(1, 0):
        where = "L1"
    elif wbytes < c.get(2, 0):
        where = "L2"
    elif wbytes < c.get(3, 0):
        where = "L2+L3"
    else:
        where = "L3+DRAM"
    return wbytes / (max(rates) * 1e9), where


def limit_ms(model, H, batch, structs, m):
    """Median over the batches of max(FLOPs / FMA peak, dependent steps x the time a
    step reads the recurrent weights in, step_seconds); which bound won."""
    wbytes = 4 * REC_FLOATS[model](H)
    step, lvl = step_seconds(wbytes, m)
    lims, kinds = [], []
    for i in range(0, len(structs), batch):
        b = structs[i:i + batch]
        steps = max(num_levels(k) for k in b) - 1  # level 0 runs no recurrent product
        f = sum(flops(model, H, k) for k in b) / (m["peak"] * 1e9)
        w = step * steps
        lims.append(max(f, w) * 1e3)
        kinds.append("FMA" if f >= w else lvl)
    return statistics.median(lims), max(set(kinds), key=kinds.count)


# ---- processes --------------------------------------------------------------------

def sh(cmd, env=None, timeout=1800):
    t0 = time.time()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=timeout, env=env)
    if p.returncode:
        sys.stderr.write("bench: failed (%.1fs): %s\n%s%s" % (
            time.time() - t0, " ".join(cmd), p.stdout[-2000:], p.stderr[-2000:]))
        return None
    return p.stdout


def median_of(text):
    m = re.search(r"time: median_ms=([\d.]+)", text or "")
    return float(m.group(1)) if m else None


def baseline_env():
    """The baselines' environment: OpenBLAS on its best kernel for this CPU. Some
    machines force an older one (OPENBLAS_CORETYPE=Haswell, OPENBLAS_L2_SIZE) for
    everything; that is put right here, for the baseline processes only."""
    env = dict(os.environ)
    flags = ""
    for line in open("/proc/cpuinfo"):
        if line.startswith("flags"):
            flags = line
            break
    env["OPENBLAS_CORETYPE"] = "SkylakeX" if " avx512f" in flags else "Haswell"
    env.pop("OPENBLAS_L2_SIZE", None)
    return env


class Server:
    """A PyTorch baseline loaded once (torch_eager.py --serve) and asked for a timing
    line per command, so that it can alternate with ctx at no start-up cost."""

    def __init__(self, script, args, env, cpus):
        self.p = subprocess.Popen(["taskset", "-c", cpus, PY, script] + args + ["--serve"],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                  env=env, bufsize=1)
        self.corename = None
        line = self.p.stdout.readline()
        m = re.search(r"corename=(\S+)", line)
        if m:
            self.corename = m.group(1)

    def ask(self, batch, threads, repeat, out=None):
        if self.p.poll() is not None:
            return None
        self.p.stdin.write("%d %d %d %s\n" % (batch, threads, repeat, out or ""))
        self.p.stdin.flush()
        line = self.p.stdout.readline()
        return median_of(line)

    def close(self):
        if self.p.poll() is None:
            self.p.stdin.close()
            self.p.wait(timeout=60)


def close_to(got, ref, n):
    """How far the first [n] rows of [got] are from the interpreter's: (worst element
    in units of its tolerance, rtol 1e-4 and atol 1e-5; RMS error), or why not."""
    try:
        a, r = np.load(got), np.load(ref)
    except (OSError, ValueError):
        return "no output"
    if a.shape[1:] != r.shape[1:] or a.shape[0] < n:
        return "shape %s" % (a.shape,)
    a, r = a[:n].astype(np.float64), r[:n]
    d = np.abs(a - r)
    return float(np.max(d / (1e-5 + 1e-4 * np.abs(r)))), float(np.sqrt(np.mean(d * d)))


def verdicts(errs):
    """"ok", or why not, for every column of a case from close_to's errors. A column
    beyond the tolerance is still right when the case itself is at float32's edge:
    its RMS error at most twice the smallest of the other float32 columns' (they all
    round the same sums; a wrong result is orders of magnitude off). dagrnn H=512's
    10 x 10 grid sums 1,536-term products over 19 dependent levels: every column,
    the baselines too, lands near the tolerance there."""
    out = {}
    for k, e in errs.items():
        if isinstance(e, str):
            out[k] = e
            continue
        worst, rms = e
        peers = [p[1] for j, p in errs.items()
                 if j.split()[0] != k.split()[0] and not isinstance(p, str)]
        if worst <= 1:
            out[k] = "ok"
        elif peers and rms <= 2 * min(peers) and worst <= 4:
            out[k] = "ok (float32 rounding: %.2gx tol, RMS error %.2gx the best other " \
                     "column's)" % (worst, rms / min(peers))
        else:
            out[k] = "%.2gx tol" % worst
    return out


def head_structs(src, dst, n):
    """The first [n] structures of [src] into [dst]."""
    lines, count, ptb = [], 0, src.endswith(".ptb")
    for line in open(src):
        t = line.strip()
        if t.startswith("(") if ptb else t in ("tree", "dag", "sequence"):
            count += 1
            if count > n:
                break
        lines.append(line)
    with open(dst, "w") as f:
        f.writelines(lines)


# ---- the machine ---------------------------------------------------------------------

def machine(bin_dir, quick, cpu, env):
    out = sh(["taskset", "-c", cpu, os.path.join(bin_dir, "machine"),
              "--ws", ",".join(map(str, ws_sizes()))] + (["--quick"] if quick else []),
             env=env) or ""
    kv = lambda key: dict(re.findall(r"(\w+)=(\S+)", re.search(
        r"^%s: (.*)$" % key, out, re.M).group(1)))
    m = {"raw": out}
    cpu_line = re.search(r"^cpu: vendor=(\S*) family=(\d+) model=(.*)$", out, re.M)
    m["cpu"] = "%s (%s family %s)" % (cpu_line.group(3), cpu_line.group(1), cpu_line.group(2))
    m["cache"] = {int(a): int(b) for a, b in re.findall(r"cache: level=(\d) bytes=(\d+)", out)}
    m["cache_src"] = sorted(set(re.findall(r"cache: level=\d bytes=\d+ source=(\w+)", out)))
    c = kv("clock")
    m["ghz"], m["cpuinfo_mhz"] = float(c["ghz"]), float(c["cpuinfo_mhz"])
    f = kv("fma")
    m["lanes"], m["ports"], m["theory"] = int(f["lanes"]), int(f["ports"]), float(
        f["theory_gflops"])
    m["ports_src"] = re.search(r"source=(.*)$", re.search(r"^fma: .*$", out, re.M).group(0)
                               ).group(1)
    m["peak"] = float(kv("peak")["gflops"])
    m["bw"] = {a: float(g) for a, _, g in re.findall(r"bw: level=(\w+) bytes=(\d+) gbps=([\d.]+)",
                                                     out)}
    m["bw_bytes"] = {a: int(b) for a, b, _ in re.findall(
        r"bw: level=(\w+) bytes=(\d+) gbps=([\d.]+)", out)}
    m["sweep"] = [(int(a), float(g)) for a, g in re.findall(r"sweep: bytes=(\d+) gbps=([\d.]+)",
                                                             out)]
    m["ws"] = [(int(a), float(g)) for a, g in re.findall(r"ws: bytes=(\d+) gbps=([\d.]+)", out)]
    b = kv("blas")
    m["corename"], m["sgemm1"], m["sgemm2"] = b["corename"], float(b["sgemm1_gflops"]), float(
        b["sgemm2_gflops"])
    t = re.search(r"^tile: rows=(\d+) vectors=(\d+) gflops=([\d.]+)$", out, re.M)
    m["tile"] = (int(t.group(1)), int(t.group(2)), float(t.group(3))) if t else None
    return with_peak(m)


def with_peak(m):
    """[m] with "peak", the FMA rate the limit divides by, the fastest of the
    probes that multiply-add at the widest vector: the FMA loop ("fma_loop"),
    the register tile and OpenBLAS's sgemm. Each is a program that ran, so the
    core reaches at least that rate; on a Zen 5 host the tile (probed last)
    read 239 GFLOP/s where the FMA loop (probed first) read 223, whose limit
    then lay 7% too high in every FMA-bound cell."""
    m["fma_loop"] = m.get("fma_loop", m["peak"])
    m["peak"] = max([m["fma_loop"], m["sgemm1"]] + ([m["tile"][2]] if m.get("tile") else []))
    return m


def best_of(m1, m2):
    """The machine of two probes, each rate the better one: a rate is what the
    hardware can do, and a probe that ran beside another tenant of a shared L3 or
    memory bus (a VM) reads low (this kind of host: L3 60 GB/s in one probe, 75 in
    the next; ctx then ran seqlstm's 1 MiB matrix faster than the low one)."""
    m = dict(m1)
    m["fma_loop"] = max(m1["fma_loop"], m2["fma_loop"])
    m["bw"] = {k: max(v, m2["bw"].get(k, 0)) for k, v in m1["bw"].items()}
    for key in ("sweep", "ws"):  # (bytes, GB/s) pairs: the better rate at each size
        two = dict(m2[key])
        m[key] = [(b, max(g, two.get(b, 0))) for b, g in m1[key]]
    m["sgemm1"], m["sgemm2"] = max(m1["sgemm1"], m2["sgemm1"]), max(m1["sgemm2"], m2["sgemm2"])
    if m1.get("tile") and m2.get("tile"):
        m["tile"] = max(m1["tile"], m2["tile"], key=lambda t: t[2])
    m["probes"] = 2
    return with_peak(m)


def blas_variant():
    """Which OpenBLAS build (pthread / openmp / serial) update-alternatives selects."""
    try:
        p = subprocess.run(["update-alternatives", "--query", "libopenblas.so.0-x86_64-linux-gnu"],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        v = re.search(r"^Value: (.*)$", p.stdout, re.M)
        return v.group(1) if v else "?"
    except OSError:
        return "?"


def mib(n):
    return "%g MiB" % (n / 2 ** 20) if n >= 2 ** 20 else "%g KiB" % (n / 1024)


def compile_times(ctx, work, runs=9):
    """Seconds of `ctx build examples/treelstm.ctx` (the issue's compile-time
    yardstick: front end, LLVM, the C compiler and the link; unpinned, as a
    user runs it: the C compiler overlaps LLVM on a second core) and of `ctx
    check` (start-up and front end), medians of [runs] runs after one warm-up.
    The kernel cache plays no part: ctx build does not read it."""
    out = os.path.join(work, "compile-time")
    model = os.path.join(ROOT, "examples", "treelstm.ctx")
    times = {}
    for name, cmd in (("build", [ctx, "build", model, "-o", out]),
                      ("check", [ctx, "check", model])):
        t = []
        for i in range(runs + 1):
            t0 = time.perf_counter()
            if sh(cmd) is None:
                return None
            t.append(time.perf_counter() - t0)
        times[name] = statistics.median(t[1:])
    return times


def header(m, env, ratios_ok):
    lines = [
        "machine: %s; clock %.2f GHz measured (cpuinfo %.0f MHz)" % (
            m["cpu"], m["ghz"], m["cpuinfo_mhz"]),
        "FMA peak (1 thread): %.1f GFLOP/s measured (the fastest of the FMA loop %.1f, the "
        "register tile and sgemm below); theoretical %d lanes x 2 x %d FMA/cycle x %.2f GHz = "
        "%.1f (ports: %s)" % (m["peak"], m["fma_loop"], m["lanes"], m["ports"], m["ghz"],
                              m["theory"], m["ports_src"]),
        ("read bandwidth (1 thread; the better of a probe before the cases and one after): "
         if m.get("probes") == 2 else "read bandwidth (1 thread): ") + ", ".join(
            "%s %.0f GB/s (%s)" % (k, m["bw"][k], mib(m["bw_bytes"][k]))
            for k in ("L1", "L2", "L3", "DRAM")) + "; caches " + ", ".join(
            "L%d %s" % (k, mib(v)) for k, v in sorted(m["cache"].items())) + (
            " (from CPUID: this host has no sysfs cache entries)"
            if "cpuid" in m.get("cache_src", []) else ""),
        "the recurrent weights re-read forward and back in turn (the limit's working sets; "
        "each step at the fastest rate a working set at least as large read): " + ", ".join(
            "%s %.0f GB/s" % (mib(b), g) for b, g in m["ws"]),
        "OpenBLAS (baselines: OPENBLAS_CORETYPE=%s, OPENBLAS_L2_SIZE unset; %s): corename %s,"
        " sgemm 512^3 %.1f GFLOP/s 1 thread (%.0f%% of the FMA peak), %.1f 2 threads" % (
            env["OPENBLAS_CORETYPE"], blas_variant(), m["corename"], m["sgemm1"],
            100 * m["sgemm1"] / m["peak"], m["sgemm2"]),
    ]
    if m.get("tile"):
        rows, vecs, g = m["tile"]
        lines.append("register tile (ctx's level-product loop, %d rows x %d vectors, weights and"
                     " x in L1; beside the limit, not in it): %.1f GFLOP/s, %.0f%% of the FMA peak"
                     % (rows, vecs, g, 100 * g / m["peak"]))
    if m.get("compile"):
        lines.append("compile time (medians of 9, unpinned): `ctx build examples/treelstm.ctx` "
                     "%.3f s, `ctx check examples/treelstm.ctx` %.3f s" % (
                         m["compile"]["build"], m["compile"]["check"]))
    if not ratios_ok:
        lines.append("RATIOS WITHHELD: OpenBLAS's sgemm runs below 70% of the FMA peak (or a "
                     "baseline ran on another kernel): the baselines are not at their best")
    return "\n".join(lines)


# ---- one case -------------------------------------------------------------------------

def run_case(a, c, m, env, data, rounds, reps, ncheck, corenames):
    label, model, H, inp_name, extra = c
    work, inp = a.work, os.path.join(data, inp_name)
    d = ["-D", "H=%d" % H] + extra
    tag = "%s_H%d" % (label.replace(" ", "_"), H)
    wts = os.path.join(work, "%s_H%d%s.safetensors" % (model, H, "".join(
        "_" + e.replace("=", "") for e in extra[1::2])))
    if not os.path.exists(wts):  # deterministic: seeded, kept between runs
        sh([PY, os.path.join(HERE, "data", "gen_weights.py"), model] + d + ["-o", wts + ".tmp"])
        os.replace(wts + ".tmp", wts)
    mctx = os.path.join(ROOT, "examples", model + ".ctx")
    two = two_thread_case(model, H)
    pin1 = ["taskset", "-c", a.cpu]
    pin2 = ["taskset", "-c", "0-%d" % (os.cpu_count() - 1)]
    blas = os.path.join(a.bin, "blas_tree")
    common = ["--input", inp, "--weights", wts] + d
    tl = os.path.join(HERE, "baselines", "torch_level.py")
    te = os.path.join(HERE, "baselines", "torch_eager.py")
    servers = {"torch_level": Server(tl, [model] + common, env, a.cpu),
               "torch_eager": Server(te, [model] + common, env, a.cpu)}
    if two:
        servers["torch_level 2t"] = Server(tl, [model] + common, env, pin2[-1])
    for s in servers.values():
        corenames.add(s.corename)

    def timed(impl, batch, repeat, out=None):
        """One run of [impl]: its median per batch (ms)."""
        threads = 2 if impl.endswith(" 2t") else 1
        base = impl.split(" ")[0]
        pin = pin2 if threads == 2 else pin1
        inp_args = ["--input", inp, "--weights", wts] + d
        io = ["--output", out] if out else []
        if base == "ctx":
            return median_of(sh(pin + [a.ctx, "run", mctx] + inp_args + [
                "--batch", str(batch), "--repeat", str(repeat), "--time", "--threads",
                str(threads)] + io))
        if base in ("c_level", "c_node"):
            txt = sh(pin + [blas, model] + inp_args + [
                "--batch", str(batch), "--repeat", str(repeat), "--threads", str(threads)]
                + (["--per-node"] if base == "c_node" else []) + io, env=env)
            cn = re.search(r"corename=(\S+)", txt or "")
            corenames.add(cn.group(1) if cn else None)
            return median_of(txt)
        return servers[impl].ask(batch, threads, repeat, out)

    impls = IMPLS + (["ctx 2t", "c_level 2t", "torch_level 2t"] if two else [])
    # correctness: every implementation's outputs of its first B = 10 round, the first
    # ncheck rows (the first structures) against the interpreter on those structures
    chk = os.path.join(work, tag + ".check" + os.path.splitext(inp)[1])
    head_structs(inp, chk, ncheck)
    ref = os.path.join(work, tag + ".ref.npy")
    sh([a.ctx, "run", mctx, "--interp", "--input", chk, "--weights", wts, "--output", ref] + d)
    outs = {impl: os.path.join(work, "%s.%s.npy" % (tag, impl.replace(" ", "_")))
            for impl in impls}
    for out in outs.values():
        if os.path.exists(out):
            os.remove(out)
    rows = []
    for batch in (1, 10):
        runs = {k: [] for k in impls}
        for r in range(rounds):
            order = impls[r % len(impls):] + impls[:r % len(impls)]
            for impl in order:
                if impl.endswith(" 2t") and batch != 10:
                    continue
                # the first B = 10 round also writes the outputs the check compares
                out = outs[impl] if batch == 10 and r == 0 else None
                v = timed(impl, batch, reps, out)
                if v is not None:
                    runs[impl].append(v)
        row = {"label": label, "model": model, "H": H, "B": batch,
               "ms": {k: statistics.median(v) for k, v in runs.items() if v},
               "rounds": {k: v for k, v in runs.items() if v}}
        row["limit"], row["bound"] = limit_ms(model, H, batch, structs_of(inp), m)
        rows.append(row)
    for s in servers.values():
        s.close()
    check = verdicts({impl: close_to(outs[impl], ref, ncheck) for impl in impls})
    for row in rows:
        row["check"] = check
    return rows


# ---- the table ----------------------------------------------------------------------------

def fmt(v):
    if v is None:
        return "n/a"
    return "%.3g" % v if v < 100 else "%.0f" % v


def print_table(rows, ratios_ok):
    cols = ["model", "H", "B"] + [TITLES[k] for k in IMPLS] + [
        "limit", "bound", "best baseline ÷ ctx", "ctx ÷ limit", "check"]
    print("| " + " | ".join(cols) + " |")
    print("|" + "|".join("---" for _ in cols) + "|")
    for r in rows:
        ms, lim = r["ms"], r["limit"]
        c = ms.get("ctx")
        base = [ms[k] for k in IMPLS[1:] if k in ms]
        best = min(base) if base else None
        if ratios_ok and c and best:
            win = min((k for k in IMPLS[1:] if k in ms), key=lambda k: ms[k])
            speed = "%.2f (%s)" % (best / c, TITLES[win])
            cl = "%.2f" % (c / lim)
        else:
            speed = cl = "n/a"
        chk = [k for k in IMPLS if not r["check"].get(k, "").startswith("ok")]
        note = "ok" if not chk else "FAIL: " + ", ".join(
            "%s %s" % (TITLES[k], r["check"].get(k, "n/a")) for k in chk)
        note += "".join("; %s %s" % (TITLES[k], r["check"][k][3:]) for k in IMPLS
                        if r["check"].get(k, "").startswith("ok ("))
        below = [TITLES[k] for k in IMPLS if k in ms and ms[k] < lim]
        if below:  # a limit that a program beats is not a limit
            note += "; LIMIT BUG: below the limit: " + ", ".join(below)
        vals = [r["label"], str(r["H"]), str(r["B"])] + [fmt(ms.get(k)) for k in IMPLS] + [
            fmt(lim), r["bound"], speed, cl, note]
        print("| " + " | ".join(vals) + " |", flush=True)


def print_two(rows, ratios_ok):
    two = [r for r in rows if r["B"] == 10 and "ctx 2t" in r["ms"]]
    if not two:
        return
    print()
    print("two threads, B = 10 (ms; speed-up = ctx 1 thread ÷ ctx 2 threads):")
    print()
    cols = ["model", "H", "ctx 1t", "ctx 2t", "C level 2t", "PyTorch level 2t",
            "ctx speed-up", "best 2t baseline ÷ ctx 2t", "check"]
    print("| " + " | ".join(cols) + " |")
    print("|" + "|".join("---" for _ in cols) + "|")
    for r in two:
        ms = r["ms"]
        b2 = [ms[k] for k in ("c_level 2t", "torch_level 2t") if k in ms]
        ok = ratios_ok and b2 and "ctx 2t" in ms
        chk = [k for k in ("ctx 2t", "c_level 2t", "torch_level 2t")
               if not r["check"].get(k, "").startswith("ok")]
        print("| " + " | ".join([
            r["label"], str(r["H"]), fmt(ms.get("ctx")), fmt(ms.get("ctx 2t")),
            fmt(ms.get("c_level 2t")), fmt(ms.get("torch_level 2t")),
            "%.2f" % (ms["ctx"] / ms["ctx 2t"]) if "ctx" in ms and "ctx 2t" in ms else "n/a",
            "%.2f" % (min(b2) / ms["ctx 2t"]) if ok else "n/a",
            "ok" if not chk else "FAIL: " + ", ".join(
                "%s 2t %s" % (TITLES[k.split()[0]], r["check"].get(k, "n/a")) for k in chk)])
              + " |", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ctx", required=True)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", default="", help="run the cases whose model name contains this")
    ap.add_argument("--cpu", default=str(os.cpu_count() - 1),
                    help="the core the one-thread runs are pinned to")
    ap.add_argument("--json", help="also write every measurement here")
    ap.add_argument("--rounds", type=int, default=0,
                    help="alternating rounds per cell (default 3 with --quick, else 5); a "
                         "host whose runs swing needs more")
    a = ap.parse_args()
    q = a.quick
    count, rounds, reps, ncheck = (30, 3, 1, 4) if q else (100, 5, 1, 10)
    if a.rounds > 0:
        rounds = a.rounds
    t_start = time.time()
    load0 = os.getloadavg()[0]
    data = os.path.join(a.work, "data-%d" % count)
    os.makedirs(data, exist_ok=True)
    if not os.path.exists(os.path.join(data, "seq.nodes")):
        sh([PY, os.path.join(HERE, "data", "gen_sst.py"), data, "--count", str(count),
            "--features", "256,512"])
    env = baseline_env()
    m = machine(a.bin, q, a.cpu, env)
    corenames = {m["corename"]}
    rows = []
    selected = [c for c in cases() if not a.only or a.only in c[0]]
    for c in selected:
        rows += run_case(a, c, m, env, data, rounds, reps, ncheck, corenames)
        sys.stderr.write("bench: %s H=%d done (%.0fs)\n" % (c[0], c[2], time.time() - t_start))
    # the machine again, after the cases: the limits from the better of the two
    m = best_of(m, machine(a.bin, q, a.cpu, env))
    m["compile"] = compile_times(a.ctx, a.work)
    for c in selected:
        structs = structs_of(os.path.join(data, c[3]))
        for row in rows:
            if row["label"] == c[0] and row["H"] == c[2]:
                row["limit"], row["bound"] = limit_ms(row["model"], row["H"], row["B"], structs, m)
    want = env["OPENBLAS_CORETYPE"]
    ratios_ok = m["sgemm1"] >= 0.7 * m["peak"] and corenames <= {want}
    print(header(m, env, ratios_ok))
    if corenames - {want}:
        print("baseline processes reported OpenBLAS cores %s (wanted %s)" % (
            sorted(str(x) for x in corenames), want))
    print()
    print_table(rows, ratios_ok)
    print_two(rows, ratios_ok)
    print()
    print("median latency per batch in ms (%d structures per input; %d alternating rounds of "
          "%d pass(es) after a warm-up; one thread pinned to cpu %s); limit: one core; "
          "check: every column against `ctx run --interp` on the first %d structures "
          "(rtol 1e-4, atol 1e-5); %.0f s; load average %.1f at the start, %.1f at the end "
          "(%d cores)" % (count, rounds, reps, a.cpu, ncheck, time.time() - t_start, load0,
                          os.getloadavg()[0], os.cpu_count()))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"machine": {k: v for k, v in m.items() if k != "raw"}, "rows": rows,
                       "quick": q, "count": count, "rounds": rounds}, f, indent=1)


if __name__ == "__main__":
    main()
