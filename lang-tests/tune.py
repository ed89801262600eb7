#!/usr/bin/env python3
"""ctx tune on a tiny budget (docs/tune.md): it finishes, writes a schedule
that `ctx check` accepts without a diagnostic, and that schedule, applied
with -s, reproduces the interpreter's outputs on the sample and on other
inputs. Bad command lines and samples fail with a message. Speed is not
judged here (bench/ablation.py does that)."""
import argparse
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CASES = [  # model, dims, sample, other inputs, budget (s)
    ("treelstm", ["-D", "H=32"], "binary:leaves=9,count=3", "binary:leaves=15,count=4,seed=7", 6),
    ("childsum", ["-D", "H=16"], "nary:nodes=20,arity=4,count=3",
     "nary:nodes=30,arity=5,count=2,seed=3", 6),
    # two tiled products (mv.mm3 and the node-internal P) and few tile shapes at
    # H = 16: the budget reaches the products' own shapes
    ("mvrnn", ["-D", "H=16", "-D", "V=20"], "binary:leaves=6,count=3",
     "binary:leaves=9,count=2,seed=5", 20),
]


def run(*args, **kw):
    return subprocess.run(list(args), capture_output=True, text=True, **kw)


def tune_case(ctx, model, dims, sample, other, budget, tmp):
    path = os.path.join(ROOT, "examples", model + ".ctx")
    out = os.path.join(tmp, model + ".tuned.sched")
    r = run(ctx, "tune", path, *dims, "--gen", sample, "--threads", "1", "--budget", str(budget),
            "-o", out)
    if r.returncode:
        return f"{model}: ctx tune failed ({r.returncode}): {r.stderr}"
    if "tune: " not in r.stderr or "tuned: " + model not in r.stdout:
        return f"{model}: no progress or result line:\n{r.stdout}{r.stderr}"
    defaults = re.findall(r"\(default ([0-9.]+) ms\)", r.stderr)
    if not defaults or any(float(d) <= 0 for d in defaults):
        return f"{model}: a progress line without the default's time:\n{r.stderr}"
    text = open(out).read()
    if "candidates measured" not in text or "default" not in text:
        return f"{model}: the schedule's comments do not say what was tried:\n{text}"
    if "\n# failed: " in text:
        return f"{model}: candidates failed to build or run:\n{text}"
    searched = re.search(r"own \(OP: tile\): (.*)\n", text)
    if model == "mvrnn" and (not searched or sorted(searched.group(1).split(", ")) != ["P", "mv.mm3"]):
        return f"{model}: the products' own tile shapes were not searched:\n{text}"
    r = run(ctx, "check", path, *dims, out)
    if r.returncode or r.stderr:
        return f"{model}: ctx check rejects the tuned schedule: {r.stderr}"
    for gen in (sample, other):
        want, got = os.path.join(tmp, "want.npy"), os.path.join(tmp, "got.npy")
        r1 = run(ctx, "run", path, *dims, "--gen", gen, "--interp", "--output", want)
        r2 = run(ctx, "run", path, *dims, "--gen", gen, "-s", out, "--threads", "2",
                 "--output", got)
        if r1.returncode or r2.returncode:
            return f"{model}: runs failed: {r1.stderr}{r2.stderr}"
        a, b = np.load(want), np.load(got)
        if a.shape != b.shape or not np.allclose(b, a, rtol=1e-4, atol=1e-4):
            return f"{model} on {gen}: the tuned schedule's outputs differ, max " \
                   f"{np.max(np.abs(a - b)) if a.shape == b.shape else a.shape}"
    return None


def bad_cases(ctx, tmp):
    path = os.path.join(ROOT, "examples", "treelstm.ctx")
    bad_input = os.path.join(tmp, "bad.ptb")
    with open(bad_input, "w") as f:
        f.write("(1 (2 3)\n")
    cases = [  # args, exit code, stderr text
        ([path, "-o", "x.sched"], 2, "the sample"),
        ([path, "--gen", "binary:leaves=3", "--budget", "0", "-o", "x.sched"], 2, "--budget"),
        ([path, "--gen", "binary:leaves=3"], 2, "-o FILE"),
        ([path, "--gen", "binary:leaves=3", "--time", "-o", "x.sched"], 2, "does not apply"),
        ([path, "--input", bad_input, "-D", "V=10", "-o", os.path.join(tmp, "x.sched")], 3,
         "bad.ptb"),
    ]
    errors = []
    for args, code, text in cases:
        r = run(ctx, "tune", *args)
        if r.returncode != code or text not in r.stderr:
            errors.append(f"ctx tune {' '.join(args)}: exit {r.returncode} (want {code}), "
                          f"stderr {r.stderr!r} lacks {text!r}")
    return errors


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ctx", required=True)
    a = ap.parse_args()
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for model, dims, sample, other, budget in CASES:
            msg = tune_case(a.ctx, model, dims, sample, other, budget, tmp)
            print("FAIL " + msg if msg else f"ok {model}")
            failed += msg is not None
        for msg in bad_cases(a.ctx, tmp):
            print("FAIL " + msg)
            failed += 1
    print(f"{'FAILED' if failed else 'passed'}: {failed} failures")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
