#!/usr/bin/python3
"""engines.py — the compiled kernel against the float64 interpreter, on models
outside the zoo.

The oracle (oracle/differential.py) checks the zoo models against an
independent implementation; the models in lang-tests/engines/ exercise what
the zoo does not (operators that do not depend on the node, schedules, ...).
For each model, each `# gen: SPEC` line in it and each configuration below
(and `-s S` for each schedule S named MODEL.*.sched beside it), runs

    ctx run MODEL --gen SPEC --all-nodes --output OUT.npz [CONFIG]

and compares every node's output, every field of a tuple output, with the
interpreter's (`--interp`): |got - ref| <= atol + rtol * |ref|
(docs/testing.md's float32 tolerances). A `# same-as: OTHER.ctx [FLAGS]` line
(OTHER relative to the source tree) says that the model computes what OTHER
does: the interpreter's outputs of both must agree to 1e-9 on every spec. A
model with a tuple output is also written with `--output OUT.npy` once, which
must give OUT.FIELD.npy per field with the .npz's arrays. Prints one line per
case and `N passed, N failed`; exits 1 on a failure.

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

# Every optimization off in turn (OPT-FLAGS in ra/ra.h), and one and two threads;
# a kernel for an L2 of 1 KiB, whose weights exceed it everywhere: wide tiles,
# and levels balanced at run time (balance-levels) on one and two threads.
CONFIGS = [[], ["--threads", "1"], ["--threads", "2"]] + [
    ["--disable=" + o] for o in (
        "concat-split", "product-ops", "interchange", "specialize-leaf", "register-tile",
        "vector-math", "cse", "hoist-products", "dense-scratch", "hoist-invariant",
        "fuse-epilogue", "all-deps", "share-weights", "hoist-local", "direct-results", "leaf-views",
        "balance-levels")] + [
    ["--l2=1K", "--threads", "1"], ["--l2=1K", "--threads", "2"], CUDA_ON_CPU]


# Models elsewhere with their schedules: (model, -D flags, gen spec, schedules).
EXAMPLES = [
    ("examples/treelstm.ctx", ["-D", "H=16", "-D", "V=50"], "binary:leaves=9,count=4",
     ["examples/treelstm.cpu.sched", "examples/treelstm.cuda.sched"]),
]


# The zoo under the recursion primitives: each model with a schedule of one
# directive (unroll_recursion 1, 2, 3; refactor_recursion where the model has
# a product to refactor) on one and two threads; treelstm and seqlstm, whose
# phases depend most on the thread count and batch, also on three and four
# threads, under the full schedules beside them (lang-tests/engines/recur/),
# and at several batch sizes; those full schedules also with balance_levels
# for an L2 of 1 KiB, so that their (register-tiled) level weights exceed it
# and the runtime balances the levels under the phases and place groups.
# Races show as wrong numbers.
RECUR_ZOO = [
    ("treefc", ["-D", "H=16", "-D", "V=50"],
     ["binary:leaves=9,count=4", "nary:nodes=40,arity=2,count=3,vocab=50,seed=4"]),
    ("treegru", ["-D", "H=12", "-D", "V=50"], ["binary:leaves=9,count=4"]),
    ("treelstm", ["-D", "H=16", "-D", "V=50"],
     ["binary:leaves=9,count=1", "binary:leaves=9,count=4", "binary:leaves=30,count=10",
      "complete:height=4,count=3"]),
    ("narytreelstm", ["-D", "H=12", "-D", "V=50"], ["binary:leaves=9,count=4"]),
    ("mvrnn", ["-D", "H=8", "-D", "V=50"], ["binary:leaves=9,count=4"]),
    ("childsum", ["-D", "H=12", "-D", "V=50", "-D", "K=4"], ["nary:nodes=40,arity=4,count=3"]),
    ("dagrnn", ["-D", "H=16"], ["grid:rows=4,cols=5,count=2"]),
    ("seqlstm", ["-D", "H=16", "-D", "V=50"],
     ["sequence:length=12,count=1", "sequence:length=12,count=10",
      "sequence:length=7,count=5"]),
]
NOTHING_TO_REFACTOR = {"mvrnn"}  # lang-tests/sched/bad_refactor_none.sched
RECUR_MANY = {"treelstm", "seqlstm"}


def recur_cases(root, tmp):
    """(model, dims, spec, configs) of RECUR_ZOO, its schedules written to [tmp]."""
    cases = []
    for model, dims, specs in RECUR_ZOO:
        dirs = ["unroll_recursion 1", "unroll_recursion 2", "unroll_recursion 3"]
        if model not in NOTHING_TO_REFACTOR:
            dirs.append("refactor_recursion")
        scheds = []
        for i, d in enumerate(dirs):
            path = os.path.join(tmp, "%s.recur%d.sched" % (model, i))
            with open(path, "w") as f:
                f.write("schedule %s for cpu {\n  %s\n}\n" % (model, d))
            scheds.append(path)
        full = sorted(glob.glob(os.path.join(HERE, "engines", "recur", model + ".*.sched")))
        scheds += full
        threads = ["1", "2", "3", "4"] if model in RECUR_MANY else ["1", "2"]
        configs = [["-s", x, "--threads", t] for x in scheds for t in threads]
        for x in full:
            with open(x) as f:
                text = f.read()
            path = os.path.join(tmp, "balanced." + os.path.basename(x))
            with open(path, "w") as f:
                f.write(text[:text.rindex("}")] + "  balance_levels\n}\n")
            configs += [["-s", path, "--l2=1K", "--threads", t] for t in threads]
        for spec in specs:
            cases.append((os.path.join(root, "examples", model + ".ctx"), dims, spec, configs))
    return cases


# The zoo under the schedules of lang-tests/engines/zoo/MODEL.*.sched (parallel
# over an output axis, arity specialization) on 1, 2 and 3 threads, on inputs
# whose nodes have mixed arities (so that every group's loop and the loop over
# the rest run): (model, -D flags, gen spec).
SMALL = ["-D", "H=16", "-D", "V=50"]
ZOO = [
    ("treelstm", SMALL, "nary:nodes=40,arity=2,count=3,vocab=50,seed=1"),
    ("narytreelstm", SMALL, "nary:nodes=40,arity=2,count=3,vocab=50,seed=2"),
    ("childsum", SMALL + ["-D", "K=6"], "nary:nodes=60,arity=6,count=3,vocab=50,seed=3"),
    ("treefc", SMALL, "nary:nodes=40,arity=2,count=3,vocab=50,seed=4"),
    ("treegru", SMALL, "nary:nodes=40,arity=2,count=3,vocab=50,seed=5"),
    ("mvrnn", ["-D", "H=8", "-D", "V=50"], "nary:nodes=30,arity=2,count=2,vocab=50,seed=6"),
    ("dagrnn", ["-D", "H=16"], "grid:rows=4,cols=5,count=2,features=16,seed=7"),
    ("seqlstm", SMALL, "sequence:length=12,count=3,vocab=50,seed=8"),
]


def zoo_cases(root):
    cases = []
    for model, dims, spec in ZOO:
        scheds = sorted(glob.glob(os.path.join(HERE, "engines", "zoo", model + ".*.sched")))
        configs = [["-s", x, "--threads", t] for x in scheds for t in ("1", "2", "3")]
        cases.append((os.path.join(root, "examples", model + ".ctx"), dims, spec, configs))
    return cases


# The zoo under a CUDA schedule that spreads every level's movable sums over
# the whole grid (`bind i to grid`: sched_gpu.c, split_grid), run on the CPU
# (--on-cpu) on 1 and 2 threads. H = 32: a sum needs 32 terms to go to a
# warp.
GRID_DIMS = ["-D", "H=32", "-D", "V=50"]
GRID_ZOO = [
    ("treelstm", GRID_DIMS, ["binary:leaves=9,count=1", "binary:leaves=9,count=4"]),
    ("narytreelstm", GRID_DIMS, ["nary:nodes=30,arity=2,count=3,vocab=50,seed=2"]),
    ("treegru", GRID_DIMS, ["binary:leaves=9,count=4"]),
    ("treefc", GRID_DIMS, ["binary:leaves=9,count=4"]),
    ("childsum", GRID_DIMS + ["-D", "K=4"], ["nary:nodes=30,arity=4,count=3"]),
    ("mvrnn", GRID_DIMS, ["binary:leaves=9,count=2"]),
    ("dagrnn", ["-D", "H=32", "-D", "D=32"], ["grid:rows=4,cols=5,count=2"]),
    ("seqlstm", GRID_DIMS, ["sequence:length=12,count=1", "sequence:length=7,count=5"]),
]


# the models whose grid levels fuse (sched_gpu.c, fuse_level; docs/cuda.md)
GRID_FUSED = ("treelstm", "narytreelstm", "treefc", "seqlstm")


# Nodes on warps (`bind node to warp`: ILIR_BIND_NODE_WARP), a node's sums
# on its warp's lanes by default or each lane's own (`i to thread`).
WARP_BINDS = {"warps": "bind node to warp", "lanes": "bind node to warp, i to thread"}


def grid_cases(root, tmp):
    cases = []
    for model, dims, specs in GRID_ZOO:
        path = os.path.join(tmp, "%s.grid.cuda.sched" % model)
        with open(path, "w") as f:
            f.write("schedule %s for cuda {\n  specialize leaf\n  bind node to block, i to grid\n}\n"
                    % model)
        configs = [sched_args(path) + ["--threads", t] for t in ("1", "2")]
        if model in GRID_FUSED:  # the same levels left split (two grid barriers)
            configs.append(sched_args(path) + ["--disable=grid-fusion", "--threads", "2"])
        for kind, bind in WARP_BINDS.items():
            wpath = os.path.join(tmp, "%s.%s.cuda.sched" % (model, kind))
            with open(wpath, "w") as f:
                f.write("schedule %s for cuda {\n  specialize leaf\n  %s\n}\n" % (model, bind))
            configs.append(sched_args(wpath) + ["--threads", "2"])
        for spec in specs:
            cases.append((os.path.join(root, "examples", model + ".ctx"), dims, spec, configs))
    return cases


def sched_args(path):
    """-s PATH, with the CUDA flags for a CUDA schedule (NAME.cuda.sched)."""
    return ["-s", path] + (CUDA_ON_CPU if path.endswith(".cuda.sched") else [])


def directive(path, name):
    with open(path) as f:
        return [line.split(":", 1)[1].strip() for line in f if line.startswith(name)]


def gen_specs(path):
    return directive(path, "# gen:")


def run(ctx, model, spec, extra, out):
    cmd = [ctx, "run", model, "--gen", spec, "--all-nodes", "--output", out] + extra
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        raise RuntimeError("%s: exit %d\n%s" % (" ".join(cmd), r.returncode, r.stderr))
    if not out.endswith(".npz"):
        return np.load(out) if os.path.exists(out) else None
    with np.load(out) as z:
        return {k: z[k] for k in z.files}


def compare(got, ref, rtol, atol):
    """'' when the arrays of [got] match those of [ref], else why not."""
    if sorted(got) != sorted(ref):
        return "arrays %s, want %s" % (sorted(got), sorted(ref))
    for k in ref:
        if got[k].shape != ref[k].shape:
            return "%s: shape %s, want %s" % (k, got[k].shape, ref[k].shape)
        if not np.allclose(got[k], ref[k], rtol=rtol, atol=atol, equal_nan=True):
            return "%s: max |diff| %g" % (k, float(np.max(np.abs(got[k] - ref[k]))))
    return ""


def extra_checks(ctx, model, spec, ref, tmp):
    """The `# same-as:` models and, for a tuple output, OUT.FIELD.npy: a list
    of (name, why) with why '' on success."""
    root = os.path.dirname(HERE)
    results = []
    for line in directive(model, "# same-as:"):
        words = line.split()
        other = os.path.join(root, words[0])
        name = "%s %s same as %s" % (os.path.basename(model), spec, words[0])
        try:
            want = run(ctx, other, spec, words[1:] + ["--interp"], os.path.join(tmp, "o.npz"))
            why = compare(ref, want, 1e-9, 1e-9)
        except RuntimeError as e:
            why = str(e)
        results.append((name, why))
    if len(ref) > 1:
        name = "%s %s --output OUT.npy" % (os.path.basename(model), spec)
        stem = os.path.join(tmp, "split")
        try:
            if run(ctx, model, spec, ["--interp"], stem + ".npy") is not None:
                raise RuntimeError("a tuple output written to %s.npy" % stem)
            why = compare({k: np.load("%s.%s.npy" % (stem, k)) for k in ref}, ref, 0, 0)
        except (RuntimeError, OSError) as e:
            why = str(e)
        results.append((name, why))
    return results


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ctx", required=True)
    ap.add_argument("--rtol", type=float, default=1e-4)
    ap.add_argument("--atol", type=float, default=1e-5)
    ap.add_argument("--recur", action="store_true",
                    help="the zoo under the recursion primitives only")
    ap.add_argument("--zoo", action="store_true", help="only the zoo's schedules")
    ap.add_argument("--own", action="store_true",
                    help="only the models of lang-tests/engines/ and EXAMPLES (not the zoo's "
                    "schedules, not the recursion primitives): CTest runs the three parts as "
                    "engines, engines_zoo and engines_recur, side by side")
    ap.add_argument("models", nargs="*")
    a = ap.parse_args()
    if a.own + a.zoo + a.recur > 1:
        ap.error("--own, --zoo and --recur are parts: give one")
    models = a.models or ([] if a.recur or a.zoo else
                          sorted(glob.glob(os.path.join(HERE, "engines", "*.ctx"))))
    cases = []  # (model, dims, spec, configs)
    for model in models:
        specs = gen_specs(model)
        if not specs:
            cases.append((model, [], None, []))
        scheds = sorted(glob.glob(model[:-len(".ctx")] + ".*.sched"))
        for spec in specs:
            cases.append((model, [], spec, CONFIGS + [sched_args(x) for x in scheds]))
    if not a.models and not a.recur:
        root = os.path.dirname(HERE)
        for model, dims, spec, scheds in [] if a.zoo else EXAMPLES:
            cases.append((os.path.join(root, model), dims, spec,
                          [sched_args(os.path.join(root, x)) for x in scheds]))
        cases += [] if a.own else zoo_cases(root)
    passed = failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        if (not a.models and not a.zoo and not a.own) or a.recur:
            cases += recur_cases(os.path.dirname(HERE), tmp)
        if not a.models and not a.recur and not a.own:
            cases += grid_cases(os.path.dirname(HERE), tmp)
        out = os.path.join(tmp, "out.npz")
        for model, dims, spec, configs in cases:
            if spec is None:
                print("FAIL %s: no `# gen:` line" % model)
                failed += 1
                continue
            ref = run(a.ctx, model, spec, dims + ["--interp"], out)
            checks = extra_checks(a.ctx, model, spec, ref, tmp)
            for extra in configs:
                extra = dims + extra
                name = "%s %s %s" % (os.path.basename(model), spec,
                                     " ".join(os.path.basename(x) for x in extra))
                try:
                    why = compare(run(a.ctx, model, spec, extra, out), ref, a.rtol, a.atol)
                except RuntimeError as e:
                    why = str(e)
                checks.append((name, why))
            for name, why in checks:
                print("%s %s%s" % ("FAIL" if why else "ok  ", name, ": " + why if why else ""))
                passed += not why
                failed += bool(why)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
