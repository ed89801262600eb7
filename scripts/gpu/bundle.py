#!/usr/bin/python3
"""bundle.py — writes the GPU check's self-contained bundle (scripts/gpu-check.sh
prepare DIR; docs/cuda.md). Runs here, where ctx is built; the bundle runs on a
machine with a CUDA driver and a GPU but without LLVM or ctx.

    bundle.py --ctx CTX --gpu-run GPU_RUN --out DIR [--quick] [--only MODEL]
              [--target cpu]

DIR gets:
  lib/NAME/        `ctx build --target cuda` of each model x dims (PTX embedded,
                   the runtime inside), one per distinct -D set
  cases/K/         a correctness case: weights (safetensors), input, and the
                   interpreter's expected outputs (ctx run --interp, float64)
  lat/K/           a latency case (H 256 / 512, B 1 / 10 structures; seeded
                   default weights): the input
  probe/K/         a schedule probe: one input timed under three CUDA schedules
                   (PROBES), each its own library: what a grid loop costs or
                   saves on this GPU, per dependency level
  cases.json       what to run and compare, with ctx's CPU latency of each
                   latency case measured here (ctx run --time)
  gpu_run, deps/   the harness and the shared libraries it needs (libjansson)
  run.sh, check.py, torch_eager.py, zoo.py   the runner, the comparison and
                   PyTorch eager on the GPU (the oracle's equations in torch)
The correctness cases are the differential test's (lang-tests/oracle), minus
those needing a vocabulary file; --quick leaves out the ~100,000-node chains,
--only keeps one model's cases. --target cpu builds the libraries for the CPU
instead: the same bundle then checks itself on a machine without a GPU
(check.py directly; the gpu_bundle_on_cpu test).
"""

import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
ORACLE = os.path.join(REPO, "lang-tests", "oracle")
sys.path.insert(0, ORACLE)

import differential  # noqa: E402
import make_data  # noqa: E402
import zoo  # noqa: E402

MAX_BYTES = 64 << 20


def run(argv, **kw):
    r = subprocess.run(argv, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        raise SystemExit("bundle.py: %s failed (exit %d):\n%s" % (
            " ".join(argv), r.returncode, r.stderr))
    return r.stdout


def lib_for(a, libs, model, dims, sched=None):
    """The library of [model] at [dims], built once; [sched]: (name, the text of
    a `schedule MODEL for cuda` block, more ctx build arguments), applied on the
    cuda target only."""
    key = model + "".join("-%s%s" % kv for kv in sorted(dims.items()))
    if sched:
        key += "-" + sched[0]
    if key not in libs:
        out = os.path.join(a.out, "lib", key)
        os.makedirs(os.path.dirname(out), exist_ok=True)
        argv = [a.ctx, "build", "--target", a.target, os.path.join(REPO, "examples",
                model + ".ctx"), "-o", out] + differential.dim_args(dims)
        if sched and a.target == "cuda":
            path = out + ".cuda.sched"
            with open(path, "w") as f:
                f.write(sched[1])
            argv += ["-s", path] + sched[2]
        run(argv)
        if sched and a.target == "cuda":
            os.remove(path)
        for f in os.listdir(out):  # only the shared library travels
            if f != "lib%s.so" % model:
                os.remove(os.path.join(out, f))
        libs[key] = os.path.relpath(out, a.out)
    return libs[key]


def correctness_cases(a, libs):
    cases = []
    for i, c in enumerate(differential.all_cases()):
        if c.shape == "vocab" or (a.quick and (c.n or 0) >= differential.DEEP - 1):
            continue
        if a.only and c.model != a.only:
            continue
        d = os.path.join(a.out, "cases", str(i))
        os.makedirs(d)
        f = differential.Files(c, d)
        seed = differential.case_seed(1, c)
        make_data.main(differential.weights_argv(c, f, seed))
        make_data.main(differential.input_argv(c, f, seed))
        argv = [a.ctx, "run", os.path.join(REPO, "examples", c.model + ".ctx"), "--interp",
                "--output", f.ref] + differential.run_args(c, f)
        run(argv)
        cases.append({"name": c.name, "model": c.model, "lib": lib_for(a, libs, c.model, c.dims),
                      "dir": os.path.relpath(d, a.out), "format": c.fmt,
                      "all_nodes": c.all_nodes})
    return cases


def latency_input(model, dims, count, rng, nprng):
    """[count] structures of typical size for [model]: (text, format)."""
    if model == "childsum":
        trees = [make_data.random_binary(rng, make_data.sst_leaves(rng)) for _ in range(count)]
        return make_data.write_node_trees(trees, rng, dims["V"]), "nodes"
    if model == "dagrnn":
        return make_data.write_dags([make_data.grid_dag(6, 6)] * count, rng, nprng,
                                    dims["H"]), "nodes"
    if model == "seqlstm":
        return make_data.write_sequences([25] * count, rng, dims["V"]), "nodes"
    trees = [make_data.random_binary(rng, make_data.sst_leaves(rng)) for _ in range(count)]
    return make_data.write_ptb(trees, rng, dims["V"]), "ptb"


def cpu_median_us(a, model, dims, path, fmt):
    out = run([a.ctx, "run", os.path.join(REPO, "examples", model + ".ctx"), "--input", path,
               "--format", fmt, "--repeat", "30", "--time", "--output", os.devnull] +
              differential.dim_args(dims))
    m = re.search(r"median_ms=([0-9.]+)", out)
    return float(m.group(1)) * 1000 if m else None


def latency_cases(a, libs):
    cases = []
    for model in sorted(m for m in zoo.MODELS if not a.only or m == a.only):
        hs = (32, 64) if model == "mvrnn" else (256, 512)  # mvrnn: H x H per word
        for h in hs:
            dims = {"H": h} if model == "dagrnn" else {"H": h, "V": 1000}
            for count in (1, 10):
                d = os.path.join(a.out, "lat", "%s-H%d-B%d" % (model, h, count))
                os.makedirs(d)
                rng, nprng = random.Random(h * 100 + count), np.random.default_rng(h + count)
                text, fmt = latency_input(model, dims, count, rng, nprng)
                path = os.path.join(d, "input.txt")
                with open(path, "w") as f:
                    f.write(text)
                cases.append({"model": model, "H": h, "B": count, "dims": dims,
                              "lib": lib_for(a, libs, model, dims),
                              "dir": os.path.relpath(d, a.out), "format": fmt,
                              "cpu_us": cpu_median_us(a, model, dims, path, fmt)})
    return cases


# Schedule probes: one input timed under three CUDA schedules. `warp` keeps a
# level's sums on the blocks of its nodes (a chain of one-node levels runs
# without grid barriers); `grid` moves them into a loop over the whole grid
# and, where the rest of the node's body is elementwise, fuses it there (one
# grid barrier a level); `split` is `grid` without that fusion
# (--disable=grid-fusion: the sums over the grid, then the node's block, two
# grid barriers a level). On a long chain of small steps (grid - warp) per
# level is what a grid level costs beyond a block level (its barrier); on
# treelstm at B = 1 it is what spreading a level's weights over every
# multiprocessor saves (what sched_gpu.c's GRID_MIN_MACS estimates), and
# (grid - split) per level what the fusion saves or costs.
GRID_SCHED = "schedule %s for cuda {\n  specialize leaf\n  bind node to block, i to grid\n}\n"
PROBE_SCHEDS = {
    "warp": ("schedule %s for cuda {\n  specialize leaf\n  bind node to block, i to warp\n}\n",
             []),
    "grid": (GRID_SCHED, []),
    "split": (GRID_SCHED, ["--disable=grid-fusion"]),
    "nodewarp": ("schedule %s for cuda {\n  specialize leaf\n  bind node to warp\n}\n", []),
}
PROBES = [  # (model, H, structures, their shape)
    ("seqlstm", 32, 1, "chain"),
    ("treelstm", 256, 1, "sst"),
    ("treelstm", 512, 1, "sst"),
    ("treelstm", 256, 10, "sst"),
    ("treelstm", 64, 100, "sst"),  # many small nodes a level: where nodes on warps may pay
]


def tree_levels(t):
    """Dependency levels of a tree of make_data: its height, leaves at 1."""
    depth = {}
    for k in range(len(t)):  # children before parents (make_data adds them so)
        depth[k] = 1 + max((depth[c] for c in t.children[k]), default=0)
    return depth[t.root]


def probe_cases(a, libs):
    cases = []
    for model, h, count, shape in PROBES:
        if a.only and model != a.only:
            continue
        dims = {"H": h, "V": 1000}
        d = os.path.join(a.out, "probe", "%s-H%d-B%d" % (model, h, count))
        os.makedirs(d)
        rng = random.Random(h * 100 + count + 7)
        if shape == "chain":
            text, fmt, levels = make_data.write_sequences([400], rng, 1000), "nodes", 400
        else:
            trees = [make_data.random_binary(rng, make_data.sst_leaves(rng)) for _ in range(count)]
            text, fmt = make_data.write_ptb(trees, rng, 1000), "ptb"
            levels = max(tree_levels(t) for t in trees)
        with open(os.path.join(d, "input.txt"), "w") as f:
            f.write(text)
        for name in sorted(PROBE_SCHEDS):
            text, args = PROBE_SCHEDS[name]
            lib = lib_for(a, libs, model, dims, (name, text % model, args))
            cases.append({"model": model, "H": h, "B": count, "dims": dims, "sched": name,
                          "levels": levels, "lib": lib, "dir": os.path.relpath(d, a.out),
                          "format": fmt})
    return cases


def copy_harness(a):
    shutil.copy(a.gpu_run, os.path.join(a.out, "gpu_run"))
    deps = os.path.join(a.out, "deps")
    os.makedirs(deps)
    for line in run(["ldd", a.gpu_run]).splitlines():
        m = re.match(r"\s*(libjansson\S*) => (\S+)", line)
        if m:
            shutil.copy(m.group(2), os.path.join(deps, m.group(1)))
    for f in ("run.sh", "check.py", "torch_eager.py"):
        shutil.copy(os.path.join(HERE, f), os.path.join(a.out, f))
    shutil.copy(os.path.join(ORACLE, "zoo.py"), os.path.join(a.out, "zoo.py"))
    os.chmod(os.path.join(a.out, "run.sh"), 0o755)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ctx", required=True)
    ap.add_argument("--gpu-run", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", choices=sorted(zoo.MODELS))
    ap.add_argument("--target", choices=("cuda", "cpu"), default="cuda")
    a = ap.parse_args()
    if os.path.exists(a.out) and os.listdir(a.out):
        raise SystemExit("bundle.py: %s exists and is not empty" % a.out)
    os.makedirs(a.out, exist_ok=True)
    libs = {}
    cases = correctness_cases(a, libs)
    lat = latency_cases(a, libs)
    probes = probe_cases(a, libs)
    with open(os.path.join(a.out, "cases.json"), "w") as f:
        json.dump({"cases": cases, "latency": lat, "probes": probes}, f, indent=1)
    copy_harness(a)
    size = sum(os.path.getsize(os.path.join(r, x)) for r, _, fs in os.walk(a.out) for x in fs)
    print("bundle %s: %d correctness cases, %d latency cases, %d schedule probes, %d libraries, "
          "%.1f MiB" % (a.out, len(cases), len(lat), len(probes), len(libs), size / 2**20))
    if size > MAX_BYTES:
        raise SystemExit("bundle.py: the bundle is over 64 MiB")


if __name__ == "__main__":
    main()
