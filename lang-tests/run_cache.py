#!/usr/bin/env python3
"""ctx run's kernel cache (codegen/cg_cache.c) from the command line: where
it lives (CTX_CACHE_DIR, XDG_CACHE_HOME, HOME), that a second run of the
same kernel is a hit (it touches its entry) with the same outputs, that
--no-cache, CTX_CACHE_DIR=off and --interp leave it alone, and that other
dims are another entry; ctx repl's models use it too (its expressions do
not).

usage: run_cache.py --ctx CTX --model MODEL.ctx
"""
import argparse
import os
import subprocess
import sys
import tempfile

OLD = 1_000_000_000  # an mtime in 2001: an entry not used since


def entries(d):
    if not os.path.isdir(d):
        return []
    return sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".kernel"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ctx", required=True)
    ap.add_argument("--model", required=True)
    a = ap.parse_args()
    failures = []

    def check(cond, what):
        print(("ok   " if cond else "FAIL ") + what)
        if not cond:
            failures.append(what)

    with tempfile.TemporaryDirectory() as tmp:
        home = os.path.join(tmp, "home")
        os.mkdir(home)
        base = {k: v for k, v in os.environ.items()
                if k not in ("CTX_CACHE_DIR", "XDG_CACHE_HOME")}
        base["HOME"] = home

        def run(name, *extra, env=None):
            out = os.path.join(tmp, name + ".npy")
            p = subprocess.run([a.ctx, "run", a.model, "--threads", "1", "--output", out,
                                *extra], env=env or base, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
            if p.returncode != 0:
                print(p.stderr)
            check(p.returncode == 0, f"{name}: ctx run exits 0")
            return open(out, "rb").read() if os.path.exists(out) else b""

        d = os.path.join(tmp, "cache")
        env = dict(base, CTX_CACHE_DIR=d)
        first = run("first", env=env)
        e = entries(d)
        check(len(e) == 1, "CTX_CACHE_DIR: the first run stores one entry")
        check(not os.path.exists(os.path.join(home, ".cache")), "nothing under HOME")
        os.utime(e[0], (OLD, OLD))
        second = run("second", env=env)
        check(second == first, "a hit gives the same outputs")
        check(entries(d) == e and os.stat(e[0]).st_mtime > OLD,
              "the second run is a hit (it touched the entry)")
        os.utime(e[0], (OLD, OLD))
        third = run("no-cache", "--no-cache", env=env)
        check(third == first and os.stat(e[0]).st_mtime == OLD,
              "--no-cache compiles without reading the cache")
        run("interp", "--interp", env=env)
        check(entries(d) == e and os.stat(e[0]).st_mtime == OLD, "--interp leaves it alone")
        run("other-dims", "-D", "H=8", env=env)
        check(len(entries(d)) == 2, "other dims are another entry")

        run("off", env=dict(base, CTX_CACHE_DIR="off"))
        check(not os.path.exists(os.path.join(home, ".cache")), "CTX_CACHE_DIR=off: no cache")
        run("home", env=base)
        check(len(entries(os.path.join(home, ".cache", "ctx", "kernels"))) == 1,
              "default: HOME/.cache/ctx/kernels")
        xdg = os.path.join(tmp, "xdg")
        run("xdg", env=dict(base, XDG_CACHE_HOME=xdg))
        check(len(entries(os.path.join(xdg, "ctx", "kernels"))) == 1,
              "XDG_CACHE_HOME/ctx/kernels when it is set")

        # ctx repl keeps its models' kernels there too, not its expressions'
        def repl(name, env):
            p = subprocess.run([a.ctx, "repl", a.model, "--threads", "1"],
                               input="sigmoid(1.0)\n:run\n", env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
            check(p.returncode == 0 and "time: jit_ms=" in p.stdout, f"{name}: ctx repl runs")
            return [l for l in p.stdout.splitlines() if not l.startswith("time:")]
        rd = os.path.join(tmp, "repl-cache")
        r1 = repl("repl-first", dict(base, CTX_CACHE_DIR=rd))
        e = entries(rd)
        check(len(e) == 1, "ctx repl stores its model's kernel, one entry (no expression's)")
        if e:
            os.utime(e[0], (OLD, OLD))
        r2 = repl("repl-second", dict(base, CTX_CACHE_DIR=rd))
        check(r2 == r1 and entries(rd) == e and e and os.stat(e[0]).st_mtime > OLD,
              "ctx repl's second session is a hit, with the same outputs")
        at_home = entries(os.path.join(home, ".cache", "ctx", "kernels"))
        repl("repl-off", dict(base, CTX_CACHE_DIR="off"))
        check(entries(os.path.join(home, ".cache", "ctx", "kernels")) == at_home,
              "ctx repl, CTX_CACHE_DIR=off: no entry stored")

        ro = os.path.join(tmp, "file")
        open(ro, "w").close()
        last = run("unusable", env=dict(base, CTX_CACHE_DIR=os.path.join(ro, "sub")))
        check(last == first, "a directory that cannot be made: no cache, same outputs")

    print(f"{'FAILED' if failures else 'passed'}: {len(failures)} of the checks failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
