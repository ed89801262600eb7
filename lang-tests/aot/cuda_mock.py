#!/usr/bin/python3
"""cuda_mock.py — the CUDA runtime (runtime/ctxrt_cuda.c) end to end without a
GPU: `ctx build --target cuda` libraries run by gpu_run against the mock
driver (mock_cuda.c), which checks every allocation, copy and launch and runs
the CPU build of the same CUDA-scheduled kernel (`ctx build --target cuda
--on-cpu`) in place of the PTX. Outputs are compared with `ctx run --interp`
(docs/testing.md's float32 tolerances), for every zoo model on a batch of
structures (roots and all nodes), treelstm with each node on a warp (`bind
node to warp`), and treelstm with its CUDA schedule, at H=8
and at H=64, where the schedule caches 64 KB of weights in shared memory:
above the 48 KB a kernel gets without the opt-in, which the mock (as the
driver) refuses unless the runtime set the function's
MAX_DYNAMIC_SHARED_SIZE_BYTES first; and treelstm at H=32 under a schedule
that spreads each level's sums over the whole grid (`bind i to grid`), which
must launch every co-resident block (the mock's 4 SMs x 2). Each launch's
dynamic shared memory and grid are reported by the mock and checked against
the case's bounds. The GPU a model runs on: device 0 by default; with two
mock GPUs, CTXRT_CUDA_DEVICE=1 (a built library) and `ctx run --target cuda
--device 1` run on device 1 with the interpreter's outputs, and a number that
is not a GPU of the machine is an error naming it. Prints one line per case
and `N passed, N failed`; exits 1 on a failure.

    cuda_mock.py --ctx CTX --gpu-run GPU_RUN --mock LIBMOCK.so
"""

import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "lang-tests", "oracle"))

import make_data  # noqa: E402

SCHED = ["-s", os.path.join(REPO, "examples", "treelstm.cuda.sched")]
GRID = ["-s", "GRID"]  # the grid schedule, written in main()
GRID_TEXT = "schedule treelstm for cuda {\n  specialize leaf\n  bind node to block, i to grid\n}\n"
WARPS = ["-s", "WARPS"]  # nodes on warps, written in main()
WARPS_TEXT = "schedule treelstm for cuda {\n  specialize leaf\n  bind node to warp\n}\n"
DEFAULT_SHARED = 48 * 1024  # dynamic shared memory per block without the opt-in
CO_RESIDENT = 4 * 2  # mock_cuda.c: SMS x PER_SM

# model, dims, shape class, extra ctx flags, (min, max) dynamic shared memory
# every launch must ask for
CASES = [
    ("treefc", {"H": 16, "V": 50}, "batch", [], (0, DEFAULT_SHARED)),
    ("treegru", {"H": 12, "V": 50}, "batch", [], (0, DEFAULT_SHARED)),
    ("treelstm", {"H": 16, "V": 50}, "batch", [], (0, DEFAULT_SHARED)),
    # U_iou and U_f cached: (3 * 8 * 8 + 8 * 8) * 4 bytes
    ("treelstm", {"H": 8, "V": 50}, "random", SCHED, (1024, 1024)),
    # (3 * 64 * 64 + 64 * 64) * 4 bytes = 64 KB: the opt-in path
    ("treelstm", {"H": 64, "V": 50}, "random", SCHED, (65536, 65536)),
    ("mvrnn", {"H": 8, "V": 50}, "batch", [], (0, DEFAULT_SHARED)),
    ("childsum", {"H": 12, "V": 50, "K": 4}, "tree-batch", [], (0, DEFAULT_SHARED)),
    ("dagrnn", {"H": 16}, "dag-batch", [], (0, DEFAULT_SHARED)),
    ("seqlstm", {"H": 16, "V": 50}, "seq-batch", [], (0, DEFAULT_SHARED)),
    # a caterpillar of 13 nodes: 7 leaves, every level narrower than the grid
    ("treelstm", {"H": 32, "V": 50}, "chain", GRID, (0, 0)),
    # each node on a warp (`bind node to warp`): one tree of 20 leaves,
    # launched 3 blocks of 8 warps (not min(20, co-resident) = 8)
    ("treelstm", {"H": 32, "V": 50}, "random", WARPS, (0, 0)),
]


def dims_args(d):
    return [x for k, v in d.items() for x in ("-D", "%s=%s" % (k, v))]


def widest_level(path, fmt):
    """The most nodes of one dependency level of the trees in [path]
    (bracketed): the leaves are one level, an inner node's is its height."""
    assert fmt == "ptb"
    counts = {}
    for line in open(path):
        toks = line.replace("(", " ( ").replace(")", " ) ").split()
        stack = []  # per open node: its children's heights
        for t in toks:
            if t == "(":
                stack.append([])
            elif t == ")":
                kids = stack.pop()
                h = 1 + max(kids) if kids else 0
                counts[h] = counts.get(h, 0) + 1
                if stack:
                    stack[-1].append(h)
    return max(counts.values())


def check(a, tmp, i, model, dims, shape, extra, shared):
    d = os.path.join(tmp, str(i))
    os.makedirs(d)
    src = os.path.join(REPO, "examples", model + ".ctx")
    inp = os.path.join(d, "input.txt")
    make_data.make_input(inp, shape, make_data.input_dims(model, dims), seed=i + 1,
                         n=13 if extra == GRID else 1 if extra == WARPS else None)
    fmt = make_data.shape_format(shape)
    all_blocks = extra == GRID
    if all_blocks:
        extra = ["-s", os.path.join(tmp, "treelstm.grid.cuda.sched")]
    warps = 0
    if extra == WARPS:  # the blocks a launch needs: a block per 8 nodes (warps)
        extra = ["-s", os.path.join(tmp, "treelstm.warps.cuda.sched")]
        warps = -(-widest_level(inp, fmt) // 8)
    gpu, cpu = os.path.join(d, "gpu"), os.path.join(d, "cpu")
    flags = dims_args(dims) + extra
    for out, more in ((gpu, []), (cpu, ["--on-cpu"])):
        subprocess.run([a.ctx, "build", "--target", "cuda", src, "-o", out] + more + flags,
                       check=True, capture_output=True)
    nbufs = subprocess.run([a.ctx, "check", "--target", "cuda", "--dump=ilir", src] + flags,
                           check=True, capture_output=True, text=True).stdout.count("\n  buf ")
    report = os.path.join(d, "launches.txt")
    env = dict(os.environ, CTXRT_CUDA_DRIVER=a.mock, MOCK_CUDA_NBUFS=str(nbufs),
               MOCK_CUDA_KERNEL_LIB=os.path.join(cpu, "lib%s.so" % model),
               MOCK_CUDA_REPORT=report)
    fails = []
    for all_nodes in (False, True):
        tail = ["--all-nodes"] if all_nodes else []
        got_p, ref_p = os.path.join(d, "got.npy"), os.path.join(d, "ref.npy")
        # --repeat 2: more launches of the same model (the counter zeroed again,
        # the batch's buffers reused)
        r = subprocess.run([a.gpu_run, gpu, model, "--input", inp, "--format", fmt,
                            "--output", got_p, "--repeat", "2"] + tail, env=env,
                           capture_output=True, text=True)
        if r.returncode != 0:
            fails.append("gpu_run exit %d: %s" % (r.returncode, r.stderr.strip()))
            continue
        subprocess.run([a.ctx, "run", src, "--interp", "--input", inp, "--format", fmt,
                        "--output", ref_p] + tail + dims_args(dims), check=True,
                       capture_output=True)
        got, ref = np.load(got_p), np.load(ref_p)
        if got.shape != ref.shape or not np.allclose(got, ref, rtol=1e-4, atol=1e-5):
            fails.append("%s differs from the interpreter" % ("all nodes" if all_nodes else
                                                              "roots"))
    # every launch's dynamic shared memory within the case's bounds (and there
    # were launches: two runs of --repeat 2, at least two each)
    launched, grids = [], []
    if os.path.exists(report):
        with open(report) as f:
            words = [line.split() for line in f if line.startswith("shared ")]
        launched, grids = [int(w[1]) for w in words], [int(w[3]) for w in words]
        if any(w[5] != "0" for w in words):
            fails.append("launches on devices %s, expected device 0" % sorted({w[5] for w in words}))
    if all_blocks and any(g != CO_RESIDENT for g in grids):
        fails.append("grids of %s blocks, expected every co-resident block (%d)"
                     % (sorted(set(grids)), CO_RESIDENT))
    if warps and sorted(set(grids)) != [warps]:
        fails.append("grids of %s blocks, expected %d (a block per 8 nodes of the widest level)"
                     % (sorted(set(grids)), warps))
    lo, hi = shared
    if not fails and len(launched) < 4:
        fails.append("%d launches reported, expected at least 4" % len(launched))
    bad = sorted({n for n in launched if not lo <= n <= hi})
    if bad:
        fails.append("launches with %s bytes of dynamic shared memory, expected %d to %d"
                     % (", ".join(map(str, bad)), lo, hi))
    return fails


def device_cases(a, tmp):
    """(name, failures) of the GPU choice, on case 0's libraries (treefc)."""
    model, dims, shape = CASES[0][:3]
    d = os.path.join(tmp, "0")
    src = os.path.join(REPO, "examples", model + ".ctx")
    inp, fmt = os.path.join(d, "input.txt"), make_data.shape_format(shape)
    ref = os.path.join(d, "device_ref.npy")
    subprocess.run([a.ctx, "run", src, "--interp", "--input", inp, "--format", fmt,
                    "--output", ref] + dims_args(dims), check=True, capture_output=True)
    cases = []

    def run(name, cmd, ordinal, gpus, expect):
        """[cmd] with [gpus] mock GPUs and CTXRT_CUDA_DEVICE=[ordinal] (None:
        unset): on device [expect] with the interpreter's outputs, or (a str)
        failing with that message."""
        report, got = os.path.join(d, "device_launches.txt"), os.path.join(d, "device_got.npy")
        for f in (report, got):
            if os.path.exists(f):
                os.remove(f)
        env = dict(os.environ, CTXRT_CUDA_DRIVER=a.mock, MOCK_CUDA_DEVICES=str(gpus),
                   MOCK_CUDA_KERNEL_LIB=os.path.join(d, "cpu", "lib%s.so" % model),
                   MOCK_CUDA_REPORT=report)
        env.pop("CTXRT_CUDA_DEVICE", None)
        if ordinal is not None:
            env["CTXRT_CUDA_DEVICE"] = ordinal
        r = subprocess.run(cmd + ["--output", got], env=env, capture_output=True, text=True)
        fails = []
        if isinstance(expect, str):
            if r.returncode == 0 or expect not in r.stderr:
                fails.append("exit %d, stderr %r; expected a failure saying %r"
                             % (r.returncode, r.stderr.strip(), expect))
        elif r.returncode != 0:
            fails.append("exit %d: %s" % (r.returncode, r.stderr.strip()))
        else:
            with open(report) as f:
                used = {line.split()[5] for line in f if line.startswith("shared ")}
            if used != {str(expect)}:
                fails.append("launched on devices %s, expected %d" % (sorted(used), expect))
            g, want = np.load(got), np.load(ref)
            if g.shape != want.shape or not np.allclose(g, want, rtol=1e-4, atol=1e-5):
                fails.append("differs from the interpreter")
        cases.append(("device: " + name, fails))

    lib = [a.gpu_run, os.path.join(d, "gpu"), model, "--input", inp, "--format", fmt]
    ctx_run = [a.ctx, "run", "--target", "cuda", src, "--input", inp, "--format", fmt] + \
        dims_args(dims)
    run("library, CTXRT_CUDA_DEVICE=1 of 2", lib, "1", 2, 1)
    run("library, CTXRT_CUDA_DEVICE unset, 2 GPUs", lib, None, 2, 0)
    run("library, CTXRT_CUDA_DEVICE=2 of 2", lib, "2", 2,
        "CTXRT_CUDA_DEVICE=2: not a GPU of this machine (the CUDA driver lists 2: 0 to 1)")
    run("library, CTXRT_CUDA_DEVICE=x", lib, "x", 1,
        "CTXRT_CUDA_DEVICE=x: not a GPU of this machine (the CUDA driver lists one: 0)")
    run("ctx run --device 1 of 2", ctx_run + ["--device", "1"], None, 2, 1)
    run("ctx run --device 1 over CTXRT_CUDA_DEVICE=0", ctx_run + ["--device", "1"], "0", 2, 1)
    run("ctx run --device 1 of 1", ctx_run + ["--device", "1"], None, 1,
        "CTXRT_CUDA_DEVICE=1: not a GPU of this machine (the CUDA driver lists one: 0)")
    return cases


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ctx", required=True)
    ap.add_argument("--gpu-run", required=True)
    ap.add_argument("--mock", required=True)
    a = ap.parse_args()
    passed = failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "treelstm.grid.cuda.sched"), "w") as f:
            f.write(GRID_TEXT)
        with open(os.path.join(tmp, "treelstm.warps.cuda.sched"), "w") as f:
            f.write(WARPS_TEXT)
        for i, (model, dims, shape, extra, shared) in enumerate(CASES):
            name = "%s %s %s %s" % (model, shape, " ".join("%s=%s" % kv for kv in dims.items()),
                                    " ".join(os.path.basename(x) for x in extra))
            fails = check(a, tmp, i, model, dims, shape, extra, shared)
            print("%s %s%s" % ("FAIL" if fails else "ok  ", name,
                               ": " + "; ".join(fails) if fails else ""))
            passed += not fails
            failed += bool(fails)
        for name, fails in device_cases(a, tmp):
            print("%s %s%s" % ("FAIL" if fails else "ok  ", name,
                               ": " + "; ".join(fails) if fails else ""))
            passed += not fails
            failed += bool(fails)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
