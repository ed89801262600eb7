#!/usr/bin/python3
"""tuple_test.py — the aot_tuple test: `ctx build` a model with a tuple output
(lang-tests/run/output_tuple.ctx), build tuple_main.c against the generated
header's per-field accessors, run it on bracketed trees, and compare each
field with `ctx run --output OUT.npz` (the JIT: equal to float32 rounding) and
`ctx run --interp` (docs/testing.md's tolerances).

  tuple_test.py --ctx CTX --cc CC [--cflags FLAGS] --src SOURCE_DIR --tmp DIR
"""
import argparse
import os
import shlex
import shutil
import subprocess
import sys

import numpy as np


def run(cmd, env=None):
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        sys.exit("FAIL: %s: exit %d\n%s%s" % (" ".join(cmd), p.returncode, p.stdout, p.stderr))
    return p.stdout


def main():
    ap = argparse.ArgumentParser()
    for k in ("ctx", "cc", "src", "tmp"):
        ap.add_argument("--" + k, required=True)
    ap.add_argument("--cflags", default="")
    a = ap.parse_args()
    shutil.rmtree(a.tmp, ignore_errors=True)
    os.makedirs(a.tmp)
    model = os.path.join(a.src, "lang-tests", "run", "output_tuple.ctx")
    trees = os.path.join(a.tmp, "trees.ptb")
    with open(trees, "w") as f:
        f.write("(1 (2 3) (4 (5 1) (0 2)))\n(3 4)\n(0 (1 2) (3 (4 5) (0 (1 2) (3 4))))\n")
    out = os.path.join(a.tmp, "out")
    run([a.ctx, "build", model, "-o", out], env=dict(os.environ, CC=a.cc))
    header = open(os.path.join(out, "pair.h")).read()
    for decl in ("pair_output_h(", "pair_output_c_size(void)", "pair_output_c_offset(void)"):
        if decl not in header:
            sys.exit("FAIL: pair.h lacks %s" % decl)
    exe = os.path.join(a.tmp, "tuple_main")
    run(shlex.split(a.cc) + shlex.split(a.cflags) + [
        "-std=c11", "-Wall", "-Wextra", "-Werror", "-I", out,
        os.path.join(a.src, "lang-tests", "aot", "tuple_main.c"), "-L", out, "-lpair",
        "-Wl,-rpath," + out, "-o", exe])
    got = {"h": [], "c": []}
    for line in run([exe, trees]).splitlines():
        head, _, vals = line.partition(":")
        row, field = head.split()
        got[field].append([float(v) for v in vals.split()])
    for engine, extra, rtol, atol in (("jit", [], 1e-6, 1e-7), ("interp", ["--interp"], 1e-4, 1e-5)):
        npz = os.path.join(a.tmp, engine + ".npz")
        run([a.ctx, "run", model, "--input", trees, "--output", npz] + extra)
        with np.load(npz) as z:
            if sorted(z.files) != ["c", "h"]:
                sys.exit("FAIL: %s has %s" % (npz, z.files))
            for k in ("h", "c"):
                g = np.array(got[k])
                if g.shape != z[k].shape or not np.allclose(g, z[k], rtol=rtol, atol=atol):
                    sys.exit("FAIL: field %s of the library vs ctx run %s:\n%s\n%s"
                             % (k, engine, g, z[k]))
                if np.max(np.abs(g)) < 1e-3:
                    sys.exit("FAIL: field %s is all zeros" % k)
    print("aot_tuple: fields h and c of 3 trees match ctx run (jit, interp)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
