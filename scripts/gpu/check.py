#!/usr/bin/python3
"""check.py — the GPU half of the GPU check (run.sh runs it; docs/cuda.md).

For every correctness case of cases.json: gpu_run on the case's library (ctx
build --target cuda) and input, its float32 outputs compared with the
interpreter's float64 ones: |got - ref| <= 1e-5 + 1e-4 |ref| (docs/testing.md,
CUDA). Then the latency cases: ctx on the GPU (gpu_run --repeat, medians of
what a user waits for: linearization, copies, the kernel), ctx on the CPU
(measured where the bundle was made) and PyTorch eager on the GPU
(torch_eager.py, where `import torch` works). Then the schedule probes: one
input under three CUDA schedules (bundle.py, PROBES), and the differences
per dependency level. Prints one line per case, the tables, and last `N passed,
N failed`.

The whole check keeps to about 5 minutes whatever the GPU does: every run has
a timeout within the time left, correctness cases not started by CHECK_S are
failed as not run, and latency cases not started by TOTAL_S are left out of
the table (a hung kernel costs one timeout, not one per case).

    check.py BUNDLE_DIR
"""

import ctypes
import json
import os
import subprocess
import sys
import time

import numpy as np

RTOL, ATOL = 1e-4, 1e-5
CHECK_S, TOTAL_S = 200, 285  # seconds from the start: correctness, everything
CASE_S, LATENCY_S = 60, 60   # the most one run may take
START = time.monotonic()


def left(until):
    return until - (time.monotonic() - START)


def hold_gpu():
    """Keeps the GPU initialized while this process lives: device 0's primary
    context retained through the driver (ctypes). Without it, on a machine
    whose driver is not in persistence mode, the driver deinitializes the GPU
    each time the last client exits, and every one of the ~100 gpu_run
    processes would pay the initialization again (1-3 s each: the ECC scrub),
    more than the whole check's time. The context (and the libcuda handle)
    is kept until exit. Returns a note for the log."""
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
        dev, ctx = ctypes.c_int(0), ctypes.c_void_p()
        r = cuda.cuInit(0) or cuda.cuDeviceGet(ctypes.byref(dev), 0) or \
            cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev)
    except (OSError, AttributeError) as e:
        return "GPU not held open (%s)" % e
    if r:
        return "GPU not held open (CUDA driver error %d)" % r
    hold_gpu.held = (cuda, ctx)
    return "GPU held open for the run (device 0's primary context)"


def gpu_run(root, case, extra, timeout):
    d = os.path.join(root, case["dir"])
    argv = [os.path.join(root, "gpu_run"), os.path.join(root, case["lib"]), case["model"],
            "--input", os.path.join(d, "input.txt"), "--format", case["format"]] + extra
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout)


def check_case(root, case):
    d = os.path.join(root, case["dir"])
    got_path = os.path.join(d, "got.npy")
    extra = ["--weights", os.path.join(d, "weights.safetensors"), "--output", got_path]
    if case["all_nodes"]:
        extra.append("--all-nodes")
    budget = min(CASE_S, left(CHECK_S))
    if budget < 1:
        return "not run: past the check's %d s for correctness" % CHECK_S
    try:
        r = gpu_run(root, case, extra, budget)
    except subprocess.TimeoutExpired:
        return "timed out after %.0f s" % budget
    except OSError as e:  # the harness cannot be started
        return "gpu_run: %s" % e
    if r.returncode != 0:
        return "exit %d: %s" % (r.returncode, r.stderr.strip())
    got, ref = np.load(got_path), np.load(os.path.join(d, "ref.npy"))
    if got.shape != ref.shape:
        return "shape %s, want %s" % (got.shape, ref.shape)
    bad = ~np.isclose(got, ref, rtol=RTOL, atol=ATOL, equal_nan=True)
    if bad.any():
        return "%d elements off, max |diff| %g" % (bad.sum(), np.max(np.abs(got - ref)))
    return None


def median_us(r):
    for line in r.stdout.splitlines():
        if line.startswith("time_us:"):
            return float(line.split("median=")[1].split()[0])
    return None


def timed_us(root, c, budget, label):
    """gpu_run's median over 200 calls of case [c], or None (the reason printed)."""
    try:
        r = gpu_run(root, c, ["--repeat", "200"], budget)
    except (subprocess.TimeoutExpired, OSError) as e:
        print("gpu_run %s: %s" % (label, e))
        return None
    if r.returncode != 0:
        print("gpu_run %s: exit %d: %s" % (label, r.returncode, r.stderr.strip()))
        return None
    return median_us(r)


def latency(root, cases):
    sys.path.insert(0, root)
    try:
        import torch_eager
        torch_ok = torch_eager.available()
    except Exception:  # no torch, or no CUDA in it
        torch_ok = False
    print("\nlatency per call, microseconds (median):")
    print("%-9s %4s %3s %12s %12s %12s %9s %9s" % ("model", "H", "B", "ctx GPU", "ctx CPU",
                                                   "torch GPU", "CPU/GPU", "torch/GPU"))
    for i, c in enumerate(cases):
        budget = min(LATENCY_S, left(TOTAL_S))
        if budget < 1:
            print("(%d latency cases left out: past the check's %d s)" % (len(cases) - i,
                                                                         TOTAL_S))
            break
        gpu = timed_us(root, c, budget, "%s H=%d B=%d" % (c["model"], c["H"], c["B"]))
        t = None
        if torch_ok and left(TOTAL_S) > 10:
            try:
                t = torch_eager.median_us(c["model"], os.path.join(root, c["dir"], "input.txt"),
                                          c["format"], c["dims"])
            except Exception as e:  # report, keep going
                print("torch_eager %s: %s" % (c["model"], e))
        cpu = c.get("cpu_us")
        fmt = lambda v: "%12.1f" % v if v else "%12s" % "-"  # noqa: E731
        ratio = lambda x, y: "%9.1f" % (x / y) if x and y else "%9s" % "-"  # noqa: E731
        print("%-9s %4d %3d %s %s %s %s %s" % (c["model"], c["H"], c["B"], fmt(gpu), fmt(cpu),
                                               fmt(t), ratio(cpu, gpu), ratio(t, gpu)))


def probes(root, cases):
    """The schedule probes: each input's median under each schedule (nodewarp:
    `bind node to warp`), and per level (grid - warp) / levels, what a grid
    level costs (> 0) or saves (< 0), and (grid - split) / levels, what the
    fusion of its elementwise rest does."""
    if not cases:
        return
    print("\nschedule probes, microseconds per call (median); per level: (grid - warp) and "
          "(grid - split) / levels:")
    print("%-9s %4s %3s %6s %10s %10s %10s %10s %10s %10s" % (
        "model", "H", "B", "levels", "warp", "grid", "split", "nodewarp", "grid-warp",
        "grid-split"))
    got = {}
    for c in cases:
        key = (c["model"], c["H"], c["B"])
        budget = min(LATENCY_S, left(TOTAL_S))
        us = None
        if budget >= 1:
            us = timed_us(root, c, budget, "%s H=%d B=%d %s" % (c["model"], c["H"], c["B"],
                                                                c["sched"]))
        got.setdefault(key, {"levels": c["levels"]})[c["sched"]] = us
    fmt = lambda v: "%10.1f" % v if v else "%10s" % "-"  # noqa: E731
    for (model, h, b), g in got.items():
        w, gr, sp, nw = g.get("warp"), g.get("grid"), g.get("split"), g.get("nodewarp")
        per = lambda x: "%10.2f" % ((gr - x) / g["levels"]) if x and gr else "%10s" % "-"  # noqa: E731
        print("%-9s %4d %3d %6d %s %s %s %s %s %s" % (model, h, b, g["levels"], fmt(w), fmt(gr),
                                                      fmt(sp), fmt(nw), per(w), per(sp)))


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(__file__))
    with open(os.path.join(root, "cases.json")) as f:
        spec = json.load(f)
    print("check.py: " + hold_gpu())
    passed = failed = 0
    for case in spec["cases"]:
        try:
            why = check_case(root, case)
        except Exception as e:  # an unreadable output, say: this case fails, not the run
            why = "%s: %s" % (type(e).__name__, e)
        print("%s %s%s" % ("ok  " if why is None else "FAIL", case["name"],
                           "" if why is None else ": " + why))
        passed += why is None
        failed += why is not None
    try:
        latency(root, spec["latency"])
    except Exception as e:  # the table is informative; the last line must come
        print("latency table cut short: %s: %s" % (type(e).__name__, e))
    try:
        probes(root, spec.get("probes", []))
    except Exception as e:  # likewise
        print("schedule probes cut short: %s: %s" % (type(e).__name__, e))
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
