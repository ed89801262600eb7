#!/usr/bin/python3
"""differential.py — the model zoo under `ctx run` against the independent oracle.

For every model and every shape class that applies to it, generates seeded weights
and an input (make_data.py), runs `ctx run examples/MODEL.ctx --interp ...` and the
oracle (zoo.py), and compares element by element:
|got - ref| <= atol + rtol*|ref|, NaN/Inf positions exact (docs/testing.md).
Prints one line per case and finally `N passed, N failed`; exits 1 on a failure,
2 on a bad command line. On a failure it prints the seed and the exact commands
that regenerate the files and rerun both sides.

    differential.py --ctx PATH/TO/ctx [--models M ...] [--shapes S ...] [-k TEXT]
                    [--workdir DIR] [--rtol R] [--atol A] [--ctx-args ARGS]
                    [--seed S] [--timeout SEC] [--quick] [--list] [--self-check]
                    [--aot-run PATH/TO/aot_run]

--aot-run checks the libraries of `ctx build` instead: each model (with each
case's dims and --ctx-args) is built once and run by lang-tests/aot/aot_run.c.
--ctx-args replaces the default `--interp` (for a float32 backend, with looser
--rtol/--atol); write it with '=': `--ctx-args='--target cpu'`. --quick skips the
~100,000-node chains and the moderate-size cases. --self-check needs no ctx: it
checks every case is well conditioned, i.e. the float64 oracle agrees with a
longdouble evaluation of the same case far inside the tolerance, so that a
failure means a wrong result and not rounding noise amplified by the model.
"""

import argparse
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import zlib

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import make_data  # noqa: E402
import zoo  # noqa: E402

REPO = os.path.dirname(os.path.dirname(HERE))
PYTHON = "/usr/bin/python3"


class Case:
    """One model on one input. dims: the -D overrides passed to every tool."""

    def __init__(self, model, shape, dims, n=None, grid=None, all_nodes=False,
                 scale=0.5, tag=""):
        self.model, self.shape, self.dims = model, shape, dims
        self.n, self.grid, self.all_nodes = n, grid, all_nodes
        self.scale, self.tag = scale, tag
        parts = [model, shape] + (["all-nodes"] if all_nodes else []) + \
            ([tag] if tag else [])
        self.name = "/".join(parts)

    @property
    def fmt(self):
        return make_data.shape_format(self.shape)


# Small dims per model; the deep chains (about 100,000 nodes) use smaller weights
# so that the recurrence is contractive and rounding differences cannot grow
# along the chain (see --self-check).
SMALL = {
    "treefc": {"H": 16, "V": 50},
    "treegru": {"H": 12, "V": 50},
    "treelstm": {"H": 16, "V": 50},
    "narytreelstm": {"H": 12, "V": 50},
    "mvrnn": {"H": 8, "V": 50},
    "childsum": {"H": 12, "V": 50, "K": 4},
    "dagrnn": {"H": 16},
    "seqlstm": {"H": 16, "V": 50},
}
DEEP = 100000
DEEP_SCALE = 0.1


def all_cases():
    cases = []
    for model in ("treefc", "treegru", "treelstm", "narytreelstm", "mvrnn"):
        d = SMALL[model]
        cases += [
            Case(model, "single", d),
            Case(model, "chain", d, n=DEEP - 1, scale=DEEP_SCALE),
            Case(model, "complete", d, n=7),
            Case(model, "random", d, n=25),
            Case(model, "random", d, n=25, all_nodes=True),
            Case(model, "batch", d),
            Case(model, "bintree-nodes", d, n=10),
            Case(model, "bintree-nodes", d, n=10, all_nodes=True),
        ]
    cases += [
        Case("treefc", "vocab", SMALL["treefc"], n=25),
        Case("treelstm", "bintree-nodes-leafwords", SMALL["treelstm"], n=10),
        Case("treelstm", "random", {"H": 256, "V": 1000}, n=10, scale=0.1,
             tag="moderate"),
        Case("mvrnn", "random", {"H": 64, "V": 200}, n=10, scale=0.1,
             tag="moderate"),
        # Sizes that leave every remainder of the register tiles: products of
        # 144 and 72 (treegru), 120 and 40 (treelstm) outputs, with more nodes
        # per level than a tile holds; mvrnn's 21 x 21 matrix products (tiles
        # of rows inside a node).
        Case("treegru", "random", {"H": 72, "V": 50}, n=25, scale=0.3,
             tag="tiles"),
        Case("treelstm", "random", {"H": 40, "V": 50}, n=25, scale=0.3,
             tag="tiles"),
        Case("narytreelstm", "random", {"H": 40, "V": 50}, n=25, scale=0.3,
             tag="tiles"),
        Case("mvrnn", "random", {"H": 21, "V": 50}, n=25, scale=0.3,
             tag="tiles"),
    ]
    d = SMALL["childsum"]
    cases += [
        Case("childsum", "tree-single", d),
        Case("childsum", "tree-chain", d, n=DEEP, scale=DEEP_SCALE),
        Case("childsum", "nary", d, n=200),
        Case("childsum", "nary", d, n=200, all_nodes=True),
        Case("childsum", "nary", {"H": 12, "V": 50}, n=300, tag="K8"),
        Case("childsum", "tree-batch", d),
        Case("childsum", "bintree-nodes", d, n=10),
    ]
    d = SMALL["dagrnn"]
    cases += [
        Case("dagrnn", "dag-single", d),
        Case("dagrnn", "dag-chain", d, n=DEEP, scale=DEEP_SCALE),
        Case("dagrnn", "grid", d, grid=(12, 15)),
        Case("dagrnn", "grid", d, grid=(12, 15), all_nodes=True),
        Case("dagrnn", "dag-random", d, n=300),
        Case("dagrnn", "dag-random", d, n=300, all_nodes=True),
        Case("dagrnn", "dag-batch", d),
        Case("dagrnn", "dag-random", {"H": 12, "D": 5}, n=200, tag="D5"),
        Case("dagrnn", "grid", {"H": 128}, grid=(20, 20), scale=0.1,
             tag="moderate"),
    ]
    d = SMALL["seqlstm"]
    cases += [
        Case("seqlstm", "seq-single", d),
        Case("seqlstm", "seq", d, n=100),
        Case("seqlstm", "seq", d, n=100, all_nodes=True),
        Case("seqlstm", "seq", d, n=DEEP, scale=DEEP_SCALE, tag="deep"),
        Case("seqlstm", "seq-batch", d),
        Case("seqlstm", "seq-batch", d, all_nodes=True),
    ]
    return cases


def case_seed(base, case):
    """A stable per-case seed: the same case gets the same data on every run."""
    return base * 1000003 + zlib.crc32(case.name.encode()) % 1000003


# ---------------------------------------------------------------------------
# Commands. Every file of a case is made by a command line that is printed on
# failure, and run in-process here through the same argv.

def dim_args(dims):
    out = []
    for name, value in dims.items():
        out += ["-D", f"{name}={value}"]
    return out


class Files:
    def __init__(self, case, folder):
        self.dir = folder
        self.weights = os.path.join(folder, "weights.safetensors")
        self.input = os.path.join(folder, "input.txt")
        self.vocab = os.path.join(folder, "vocab.txt") if case.shape == "vocab" \
            else None
        self.got = os.path.join(folder, "got.npy")
        self.ref = os.path.join(folder, "ref.npy")


def weights_argv(case, f, seed):
    return ["--weights", f.weights, case.model] + dim_args(case.dims) + \
        ["--seed", str(seed), "--scale", repr(case.scale)]


def input_argv(case, f, seed):
    argv = ["--input", f.input, "--shape", case.shape, "--model", case.model] + \
        dim_args(case.dims) + ["--seed", str(seed)]
    if case.n is not None:
        argv += ["--n", str(case.n)]
    if case.grid is not None:
        argv += ["--grid", f"{case.grid[0]}x{case.grid[1]}"]
    if f.vocab:
        argv += ["--vocab-out", f.vocab]
    return argv


def run_args(case, f):
    """The arguments ctx run and zoo.py share after the model."""
    argv = ["--weights", f.weights, "--input", f.input, "--format", case.fmt]
    if f.vocab:
        argv += ["--vocab", f.vocab]
    argv += dim_args(case.dims)
    if case.all_nodes:
        argv.append("--all-nodes")
    return argv


def oracle_argv(case, f):
    return [case.model] + run_args(case, f) + ["--output", f.ref]


def ctx_argv(ctx, ctx_args, examples, case, f):
    return [ctx, "run", os.path.join(examples, case.model + ".ctx")] + ctx_args + \
        run_args(case, f) + ["--output", f.got]


def aot_build_argv(args, case, libdir):
    """ctx build of the case's model (with its dims and --ctx-args) into libdir."""
    return [args.ctx, "build", os.path.join(args.examples, case.model + ".ctx"), "-o",
            libdir] + dim_args(case.dims) + args.ctx_args


def aot_argv(args, case, f, libdir):
    """The built library run by aot_run on the case's files."""
    argv = [args.aot_run, libdir, case.model, "--weights", f.weights, "--input", f.input,
            "--format", case.fmt]
    if f.vocab:
        argv += ["--vocab", f.vocab]
    if case.all_nodes:
        argv.append("--all-nodes")
    return argv + ["--output", f.got]


def aot_libdir(args, case, root):
    """The library of the case's model and dims, built once per run."""
    libdir = os.path.join(root, "aot-" + case.model + "".join(
        f"-{k}{v}" for k, v in sorted(case.dims.items())))
    if not os.path.exists(os.path.join(libdir, f"lib{case.model}.so")):
        proc = subprocess.run(aot_build_argv(args, case, libdir), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, timeout=args.timeout)
        if proc.returncode != 0:
            return None, proc.stderr.decode(errors="replace").strip()
    return libdir, None


def run_argv(args, case, f, folder):
    """How the case runs: ctx run, or (--aot-run) the built library."""
    if not args.aot_run:
        return ctx_argv(args.ctx, args.ctx_args, args.examples, case, f), None
    libdir, why = aot_libdir(args, case, os.path.dirname(folder))
    return (aot_argv(args, case, f, libdir), None) if libdir else (None, why)


def shown(script, argv):
    return " ".join(shlex.quote(a) for a in [PYTHON, os.path.join(HERE, script)]
                    + argv)


def make_files(case, f, seed):
    os.makedirs(f.dir, exist_ok=True)
    if make_data.main(weights_argv(case, f, seed)) != 0:
        raise RuntimeError("make_data.py --weights failed")
    if make_data.main(input_argv(case, f, seed)) != 0:
        raise RuntimeError("make_data.py --input failed")


# ---------------------------------------------------------------------------
# Comparison.

def compare(got, ref, rtol, atol):
    """None when got matches ref, else a one-line reason."""
    if got.shape != ref.shape:
        return f"shape {list(got.shape)}, expected {list(ref.shape)}"
    g = got.astype(np.float64)
    r = ref.astype(np.float64)
    finite = np.isfinite(g) & np.isfinite(r)
    same_special = (np.isnan(g) & np.isnan(r)) | \
        (np.isinf(g) & np.isinf(r) & (np.sign(g) == np.sign(r)))
    with np.errstate(invalid="ignore", over="ignore"):
        err = np.where(finite, np.abs(g - r), 0.0)
        bound = atol + rtol * np.abs(r)
    bad = np.where(finite, err > bound, ~same_special)
    if not bad.any():
        return None
    ratio = np.where(finite, err / bound, np.inf)
    worst = np.unravel_index(int(np.argmax(np.where(bad, ratio, -1.0))), g.shape)
    return (f"{int(bad.sum())} of {g.size} elements differ; worst at "
            f"{list(map(int, worst))}: got {g[worst]!r}, expected {r[worst]!r} "
            f"(|diff| {abs(g[worst] - r[worst]):.3g})")


def error_ratio(got, ref, rtol, atol):
    """max |got - ref| / (atol + rtol*|ref|) over the finite elements."""
    g, r = got.astype(np.float64), ref.astype(np.float64)
    finite = np.isfinite(g) & np.isfinite(r)
    return float(np.max(np.where(finite, np.abs(g - r) / (atol + rtol * np.abs(r)),
                                 0.0)))


# ---------------------------------------------------------------------------
# Running the cases.

def run_case(case, args, folder):
    seed = case_seed(args.seed, case)
    f = Files(case, folder)
    t0 = time.time()
    make_files(case, f, seed)
    if zoo.main(oracle_argv(case, f)) != 0:
        return False, seed, f, "the oracle rejected the generated input", t0
    ref = np.load(f.ref)
    cmd, why = run_argv(args, case, f, folder)
    if cmd is None:
        return False, seed, f, f"ctx build failed: {why}", t0
    if os.path.exists(f.got):              # a rerun in --workdir: no stale result
        os.remove(f.got)
    try:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              timeout=args.timeout)
    except subprocess.TimeoutExpired:
        return False, seed, f, f"ctx timed out after {args.timeout} s", t0
    if proc.returncode != 0:
        tail = proc.stderr.decode(errors="replace").strip().splitlines()[-5:]
        return False, seed, f, (f"ctx exited with {proc.returncode}: " +
                                " | ".join(tail)), t0
    if not os.path.exists(f.got):
        return False, seed, f, "ctx wrote no output", t0
    try:
        got = np.load(f.got)
    except (ValueError, OSError) as e:
        return False, seed, f, f"unreadable output: {e}", t0
    if "--interp" in args.ctx_args and got.dtype != np.float64:
        return False, seed, f, f"dtype {got.dtype}, expected float64", t0
    if got.dtype not in (np.float32, np.float64):
        return False, seed, f, f"dtype {got.dtype}, expected float32/64", t0
    why = compare(got, ref, args.rtol, args.atol)
    return why is None, seed, f, why, t0


def report_failure(case, args, seed, f, why):
    print(f"  seed {seed}: {why}")
    print("  reproduce:")
    print(f"    {shown('make_data.py', weights_argv(case, f, seed))}")
    print(f"    {shown('make_data.py', input_argv(case, f, seed))}")
    print(f"    {shown('zoo.py', oracle_argv(case, f))}")
    if args.aot_run:
        libdir = aot_libdir(args, case, os.path.dirname(f.dir))[0] or "LIBDIR"
        print("    " + " ".join(shlex.quote(a) for a in aot_build_argv(args, case, libdir)))
        print("    " + " ".join(shlex.quote(a) for a in aot_argv(args, case, f, libdir)))
    else:
        print("    " + " ".join(shlex.quote(a) for a in
                                 ctx_argv(args.ctx, args.ctx_args, args.examples,
                                          case, f)))


def self_check_case(case, args, folder):
    """The oracle in float64 against longdouble: how much of the tolerance does
    rounding alone use?"""
    seed = case_seed(args.seed, case)
    f = Files(case, folder)
    make_files(case, f, seed)
    common = dict(overrides=case.dims, all_nodes=case.all_nodes,
                  vocab_path=f.vocab)
    ref = zoo.evaluate(case.model, f.input, case.fmt, f.weights, **common)
    exact = zoo.evaluate(case.model, f.input, case.fmt, f.weights,
                         dtype=np.longdouble, **common)
    ratio = error_ratio(ref, exact, args.rtol, args.atol)
    scale = float(np.max(np.abs(ref)))
    return ratio, scale, ref.shape


SELF_CHECK_LIMIT = 0.01     # rounding may use at most 1% of the tolerance


def parse_args(argv):
    ap = argparse.ArgumentParser(prog="differential.py",
                                 description="ctx run against the zoo oracle")
    ap.add_argument("--ctx", help="the ctx binary")
    ap.add_argument("--models", nargs="+", choices=sorted(zoo.MODELS))
    ap.add_argument("--shapes", nargs="+", choices=sorted(make_data.SHAPES))
    ap.add_argument("-k", dest="match", help="only cases whose name contains TEXT")
    ap.add_argument("--workdir", help="keep every case's files here")
    ap.add_argument("--examples", default=os.path.join(REPO, "examples"),
                    help="where MODEL.ctx live (default: the repo's examples/)")
    ap.add_argument("--rtol", type=float, default=1e-9)
    ap.add_argument("--atol", type=float, default=1e-9)
    ap.add_argument("--ctx-args", default="--interp",
                    help="how to run ctx (default '--interp')")
    ap.add_argument("--aot-run", help="instead of ctx run: build each model with "
                    "`ctx build` (with --ctx-args) and run the library with this "
                    "aot_run program (lang-tests/aot/aot_run.c)")
    ap.add_argument("--seed", type=int, default=1, help="base seed")
    ap.add_argument("--timeout", type=float, default=600,
                    help="seconds per ctx run")
    ap.add_argument("--quick", action="store_true",
                    help="skip the ~100,000-node chains and the moderate-size cases")
    ap.add_argument("--list", action="store_true", help="list the cases")
    ap.add_argument("--self-check", action="store_true",
                    help="check the cases' conditioning (no ctx needed)")
    args = ap.parse_args(argv)
    args.ctx_args = shlex.split(args.ctx_args)
    if not (args.list or args.self_check):
        if not args.ctx:
            ap.error("--ctx is required")
        if not (os.path.isfile(args.ctx) and os.access(args.ctx, os.X_OK)):
            ap.error(f"--ctx {args.ctx}: not an executable file")
        args.ctx = os.path.abspath(args.ctx)
        if args.aot_run:
            args.aot_run = os.path.abspath(args.aot_run)
    return args


def selected(args):
    out = []
    for case in all_cases():
        if args.models and case.model not in args.models:
            continue
        if args.shapes and case.shape not in args.shapes:
            continue
        if args.match and args.match not in case.name:
            continue
        if args.quick and ((case.n or 0) >= DEEP - 1 or case.tag == "moderate"):
            continue
        out.append(case)
    return out


def main(argv=None):
    args = parse_args(argv)
    cases = selected(args)
    if args.list:
        for case in cases:
            print(f"{case.name:40} {case.fmt:5} dims {case.dims} scale {case.scale}")
        return 0
    root = os.path.abspath(args.workdir) if args.workdir else \
        tempfile.mkdtemp(prefix="ctx-differential-")
    passed = failed = 0
    for k, case in enumerate(cases):
        folder = os.path.join(root, f"{k:02d}-" + case.name.replace("/", "-"))
        t0 = time.time()
        if args.self_check:
            ratio, scale, shape = self_check_case(case, args, folder)
            ok = ratio <= SELF_CHECK_LIMIT
            print(f"{'ok  ' if ok else 'FAIL'} {case.name}: rounding uses "
                  f"{ratio:.2e} of the tolerance, max |out| {scale:.3g}, "
                  f"shape {list(shape)} ({time.time() - t0:.1f} s)")
        else:
            ok, seed, f, why, t0 = run_case(case, args, folder)
            print(f"{'ok  ' if ok else 'FAIL'} {case.name} (seed {seed}, "
                  f"{time.time() - t0:.1f} s)")
            if not ok:
                report_failure(case, args, seed, f, why)
        sys.stdout.flush()
        passed += ok
        failed += not ok
        if ok and not args.workdir:
            shutil.rmtree(folder, ignore_errors=True)
    if not args.workdir:
        if failed:
            print(f"files of the failed cases kept in {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
