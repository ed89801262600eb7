#!/usr/bin/python3
"""engines.py — the compiled kernel against the float64 interpreter, on models
outside the zoo.

The oracle (oracle/differential.py) checks the zoo models against an
independent implementation; the models in lang-tests/engines/ exercise what
the zoo does not (operators that do not depend on the node, schedules, ...).
For each model, each `# gen: SPEC` line in it and each configuration below
(and `-s S` for each schedule S named MODEL.*.sched beside it), runs

    ctx run MODEL --gen SPEC --all-nodes --output OUT.npy [CONFIG]

and compares every node's output with the interpreter's (`--interp`):
|got - ref| <= atol + rtol * |ref| (docs/testing.md's float32 tolerances).
Prints one line per case and `N passed, N failed`; exits 1 on a failure.

    engines.py --ctx PATH/TO/ctx [MODEL.ctx ...]
"""

import argparse
import glob
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))

# The CUDA-scheduled kernel on the CPU backend (docs/cuda.md).
CUDA_ON_CPU = ["--target", "cuda", "--on-cpu"]

# Every optimization off in turn (OPT-FLAGS in ra/ra.h), and one and two threads.
CONFIGS = [[], ["--threads", "1"], ["--threads", "2"]] + [
    ["--disable=" + o] for o in (
        "concat-split", "product-ops", "interchange", "specialize-leaf", "register-tile",
        "vector-math", "cse", "hoist-products", "dense-scratch", "hoist-invariant",
        "fuse-epilogue")] + [CUDA_ON_CPU]


# Models elsewhere with their schedules: (model, -D flags, gen spec, schedules).
EXAMPLES = [
    ("examples/treelstm.ctx", ["-D", "H=16", "-D", "V=50"], "binary:leaves=9,count=4",
     ["examples/treelstm.cpu.sched", "examples/treelstm.cuda.sched"]),
]


def sched_args(path):
    """-s PATH, with the CUDA flags for a CUDA schedule (NAME.cuda.sched)."""
    return ["-s", path] + (CUDA_ON_CPU if path.endswith(".cuda.sched") else [])


def gen_specs(path):
    with open(path) as f:
        return [line.split(":", 1)[1].strip() for line in f if line.startswith("# gen:")]


def run(ctx, model, spec, extra, out):
    cmd = [ctx, "run", model, "--gen", spec, "--all-nodes", "--output", out] + extra
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        raise RuntimeError("%s: exit %d\n%s" % (" ".join(cmd), r.returncode, r.stderr))
    return np.load(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ctx", required=True)
    ap.add_argument("--rtol", type=float, default=1e-4)
    ap.add_argument("--atol", type=float, default=1e-5)
    ap.add_argument("models", nargs="*")
    a = ap.parse_args()
    models = a.models or sorted(glob.glob(os.path.join(HERE, "engines", "*.ctx")))
    cases = []  # (model, dims, spec, configs)
    for model in models:
        specs = gen_specs(model)
        if not specs:
            cases.append((model, [], None, []))
        scheds = sorted(glob.glob(model[:-len(".ctx")] + ".*.sched"))
        for spec in specs:
            cases.append((model, [], spec, CONFIGS + [sched_args(x) for x in scheds]))
    if not a.models:
        root = os.path.dirname(HERE)
        for model, dims, spec, scheds in EXAMPLES:
            cases.append((os.path.join(root, model), dims, spec,
                          [sched_args(os.path.join(root, x)) for x in scheds]))
    passed = failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "out.npy")
        for model, dims, spec, configs in cases:
            if spec is None:
                print("FAIL %s: no `# gen:` line" % model)
                failed += 1
                continue
            ref = run(a.ctx, model, spec, dims + ["--interp"], out)
            for extra in configs:
                extra = dims + extra
                name = "%s %s %s" % (os.path.basename(model), spec,
                                     " ".join(os.path.basename(x) for x in extra))
                try:
                    got = run(a.ctx, model, spec, extra, out)
                    ok = got.shape == ref.shape and np.allclose(
                        got, ref, rtol=a.rtol, atol=a.atol, equal_nan=True)
                    why = "" if ok else "max |diff| %g" % float(
                        np.max(np.abs(got - ref))) if got.shape == ref.shape else \
                        "shape %s, want %s" % (got.shape, ref.shape)
                except RuntimeError as e:
                    ok, why = False, str(e)
                print("%s %s%s" % ("ok  " if ok else "FAIL", name, "" if ok else ": " + why))
                passed += ok
                failed += not ok
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
