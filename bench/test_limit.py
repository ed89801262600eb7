#!/usr/bin/env python3
"""test_limit.py — the bench_limit test: bench/run.py's limit on a machine given
here (no probe runs), so its arithmetic is checked, not this host's speed.

- machine(): the `ws:` lines of `machine --ws` are read, and run.py asks for
  every case's recurrent weights' size;
- step_seconds: a dependent step reads its weights at the fastest rate any probe
  (the forward sweep or the forward-and-back working sets) read a working set at
  least as large at; a probe below the weights' size does not count; a smaller
  working set is never slower; the bound names the levels the weights span;
- best_of keeps the better of two probes' rates at each size;
- limit_ms: max(FLOPs / peak, steps x step) for a chain and a balanced tree.

usage: test_limit.py
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run  # noqa: E402

MIB = 1 << 20
FAILS = []


def check(cond, what):
    if not cond:
        FAILS.append(what)
        print("FAIL: " + what)


def near(a, b):
    return abs(a - b) <= 1e-9 * max(abs(a), abs(b), 1e-30)


def fake_machine():
    """A host like the Zen 5 of bench/README.md: 48 KiB L1, 1 MiB L2, a large L3."""
    return {
        "cache": {1: 48 * 1024, 2: MIB, 3: 512 * MIB},
        "peak": 200.0,
        "sweep": [(256 * 1024, 180.0), (512 * 1024, 226.0), (MIB, 130.0),
                  (2 * MIB, 95.0), (4 * MIB, 95.0), (64 * MIB, 50.0)],
        "ws": [(256 * 1024, 181.0), (768 * 1024, 218.0), (MIB, 177.0),
               (3 * MIB, 127.0), (4 * MIB, 121.0)],
    }


def test_parse():
    text = "\n".join([
        "cpu: vendor=AuthenticAMD family=26 model=AMD EPYC",
        "cache: level=1 bytes=49152 source=cpuid", "cache: level=2 bytes=1048576 source=cpuid",
        "clock: ghz=3.6 cpuinfo_mhz=2096",
        "fma: lanes=16 ports=2 theory_gflops=230.4 source=table", "peak: gflops=236.0",
        "bw: level=L2 bytes=524288 gbps=226.0", "sweep: bytes=1048576 gbps=130.0",
        "ws: bytes=1048576 gbps=177.0", "ws: bytes=4194304 gbps=121.0",
        "blas: corename=SkylakeX sgemm1_gflops=210.0 sgemm2_gflops=400.0",
    ])
    asked = []

    def fake_sh(cmd, env=None, timeout=0):
        asked.append(cmd)
        return text

    saved = run.sh
    run.sh = fake_sh
    try:
        m = run.machine("/nowhere", True, "1", {})
    finally:
        run.sh = saved
    check(m["ws"] == [(MIB, 177.0), (4 * MIB, 121.0)], "machine() reads the ws lines: %r"
          % (m["ws"],))
    cmd = asked[0]
    check("--ws" in cmd, "machine() passes --ws: %r" % (cmd,))
    sizes = [int(x) for x in cmd[cmd.index("--ws") + 1].split(",")]
    want = {4 * run.REC_FLOATS[model](H) for _, model, H, _, _ in run.cases()}
    check(set(sizes) == want and sizes == sorted(sizes),
          "--ws asks for every case's weights once, in order: %r" % (sizes,))
    check(MIB in sizes and 4 * MIB in sizes, "treelstm H=256 and H=512's weights probed")


def test_step():
    m = fake_machine()
    # 1 MiB: the ws probe at 1 MiB (177) beats the forward sweep there (130), and the
    # 768 KiB probe (218) and the L2's 512 KiB (226) are smaller sets: they do not count
    t, where = run.step_seconds(MIB, m)
    check(near(t, MIB / 177e9), "1 MiB at 177 GB/s: %g s" % t)
    check(where == "L2+L3", "1 MiB in a 1 MiB L2 spans L2+L3: %s" % where)
    # 512 KiB: the best at 512 KiB or above is the forward sweep's 226
    t, where = run.step_seconds(512 * 1024, m)
    check(near(t, 512 * 1024 / 226e9), "512 KiB at 226 GB/s: %g s" % t)
    check(where == "L2", "512 KiB lives in the L2: %s" % where)
    # 300 KiB: no probe at that size; the envelope above it is 226 (sweep, 512 KiB)
    t, _ = run.step_seconds(300 * 1024, m)
    check(near(t, 300 * 1024 / 226e9), "300 KiB at the 512 KiB sweep's rate: %g s" % t)
    # 3 MiB: the ws probe's 127 at 3 MiB, above the sweep's 95 at 4 MiB
    t, _ = run.step_seconds(3 * MIB, m)
    check(near(t, 3 * MIB / 127e9), "3 MiB at 127 GB/s: %g s" % t)
    # monotone: the rate never falls as the working set shrinks
    sizes = [16 * 1024 * k for k in range(1, 400)]
    rates = [s / run.step_seconds(s, m)[0] for s in sizes]
    check(all(a >= b * (1 - 1e-9) for a, b in zip(rates, rates[1:])),
          "the rate is non-increasing in the weights' size")
    t, where = run.step_seconds(32 * 1024, m)
    check(where == "L1", "32 KiB in a 48 KiB L1: %s" % where)


def test_best_of():
    a, b = fake_machine(), fake_machine()
    for m in (a, b):
        m.update({"fma_loop": 200.0, "bw": {"L2": 226.0}, "sgemm1": 180.0, "sgemm2": 350.0})
    b["ws"] = [(s, g + (10 if s == MIB else -10)) for s, g in b["ws"]]
    m = run.best_of(a, b)
    got = dict(m["ws"])
    check(got[MIB] == 187.0 and got[4 * MIB] == 121.0,
          "best_of keeps the better ws rate at each size: %r" % (m["ws"],))


def test_limit():
    m = fake_machine()
    chain = [[]] + [[i - 1] for i in range(1, 50)]  # 50 nodes, 49 dependent steps
    lim, bound = run.limit_ms("treelstm", 256, 1, [chain], m)
    step = MIB / 177e9
    fl = run.flops("treelstm", 256, chain) / 200e9
    check(near(lim, max(fl, 49 * step) * 1e3), "chain: %g ms" % lim)
    check(bound == "L2+L3", "the chain's bound is the weights': %s" % bound)
    # ten trees of 64 leaves and 32 nodes over them: FLOP-bound
    bal = [[] for _ in range(64)] + [[2 * i, 2 * i + 1] for i in range(32)]
    lim, bound = run.limit_ms("treelstm", 256, 10, [bal] * 10, m)
    fl = 10 * run.flops("treelstm", 256, bal) / 200e9
    check(bound == "FMA" and near(lim, fl * 1e3), "ten trees of 64 leaves: %g ms, %s" % (lim, bound))
    # treefc on a right-branching tree of 33 leaves: each step waits for its right
    # child only, and W_0 h_0 of the leaf on the left could run before; a step
    # needs the half of W that multiplies h_1, 512 KiB at H=512
    rb = [[]] + [x for i in range(32) for x in ([], [2 * i + 1, 2 * i])]
    lim, _ = run.limit_ms("treefc", 512, 1, [rb], m)
    fl = run.flops("treefc", 512, rb) / 200e9
    step = run.step_seconds(512 * 512 * 4, m)[0]
    check(run.num_levels(rb) == 33, "the right-branching tree has 33 levels")
    check(near(lim, max(fl, 32 * step) * 1e3),
          "treefc steps read one half of W: %g ms, not %g" % (
              lim, max(fl, 32 * run.step_seconds(2 * 512 * 512 * 4, m)[0]) * 1e3))
    # mvrnn: all of W (both halves need both children) and half of WM
    check(run.REC_FLOATS["mvrnn"](64) == 3 * 64 * 64, "mvrnn steps read W and half of WM")


def main():
    test_parse()
    test_step()
    test_best_of()
    test_limit()
    if FAILS:
        print("%d failed" % len(FAILS))
        return 1
    print("bench limit: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
