#!/usr/bin/env python3
"""speed.py — ctx repl's latency from pressing Enter to the printed result.

TreeLSTM (H = 256) with one sample tree, stdin a pipe: each sample writes one
input and waits for the line that ends its result.
  edit:       `rec cell` redefined (two versions in turn: a new model every
              time), then :run, which JIT-compiles and runs it: from writing
              the definition to the run's `time:` line
  expression: `sigmoid(U_f @ h + b_f)` (compiled and called through libffi
              each time): from writing it to its printed value
  run:        :run of an unchanged model (no compile)
  kernel:     :time 200 on examples/data/sst_sample.ptb (8 trees, 218 nodes)
With --cpu instead: the process CPU time (user + sys) per edit -> JIT -> run
and per expression, from sessions of 10 of them against one of none (the
latency an idle core would see: the REPL's work is serial).
Medians, p10 and p90 over --samples samples after two warm-ups, for the
REPL's JIT (O3 without register tiles, fast instruction selection) and, with
CTX_REPL_JIT=full, ctx run's (O3, register tiles, the full code generator).
"""
import argparse
import os
import statistics
import subprocess
import sys
import time


def uncached():
    """The environment without the kernel cache: an edit's two versions would
    otherwise come from it after their first compile, and "edit" would time
    a lookup instead of the JIT."""
    env = dict(os.environ)
    env["CTX_CACHE_DIR"] = "off"
    return env


CELL = """rec cell(n: t) -> (h: f32[H], c: f32[H]) {{
  if leaf(n) {{
    let g = Emb[words[n]] + b_iou
    let c = iou_input(g)
    return (iou_output(g, c), c)
  }}
  let (h0, c0) = cell(n.child[0])
  let (h1, c1) = cell(n.child[1])
  let g  = U_iou @ (h0 + h1) + b_iou
  let f0 = sigmoid(U_f @ h0 + b_f)
  let f1 = sigmoid(U_f @ h1 + b_f)
  let c  = iou_input(g) + f0 * c0 + f1 * c1{extra}
  return (iou_output(g, c), c)
}}"""


class Repl:
    def __init__(self, ctx, root, env):
        self.p = subprocess.Popen([ctx, "repl", "examples/treelstm.ctx", "--threads", "1"],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, cwd=root, env=env)

    def send(self, text, until):
        t0 = time.perf_counter()
        self.p.stdin.write((text + "\n").encode())
        self.p.stdin.flush()
        while True:
            line = self.p.stdout.readline().decode()
            if not line:
                raise RuntimeError("ctx repl ended")
            if line.startswith("error") or ": error:" in line:
                raise RuntimeError(line)
            if line.startswith(until):
                return (time.perf_counter() - t0) * 1e3, line


def stats(xs):
    xs = sorted(xs)
    return statistics.median(xs), xs[(len(xs) - 1) // 10], xs[len(xs) - 1 - (len(xs) - 1) // 10]


def cpu_session(n, edits, expr):
    lines = [":tree (3 (2 17) (4 (2 5) (3 9)))", "let h = Emb[17][0:256]", ":run"]
    for i in range(n):
        if edits:
            lines += [CELL.format(extra="" if i % 2 else " + 0.0 * c0"), ":run"]
        if expr:
            lines += ["sigmoid(U_f @ h + b_f)"]
    return "\n".join(lines) + "\n"


def cpu_ms(a, text):
    p = subprocess.Popen([a.ctx, "repl", "examples/treelstm.ctx", "--threads", "1"],
                         stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, cwd=a.root, env=uncached())
    p.stdin.write(text.encode())
    p.stdin.close()
    _, _, ru = os.wait4(p.pid, 0)
    return (ru.ru_utime + ru.ru_stime) * 1e3


def cpu_main(a):
    n = 10
    base = min(cpu_ms(a, cpu_session(0, False, False)) for _ in range(3))
    edit = min(cpu_ms(a, cpu_session(n, True, False)) for _ in range(3))
    expr = min(cpu_ms(a, cpu_session(n, False, True)) for _ in range(3))
    print("CPU per edit -> JIT -> run: %.1f ms; per expression: %.1f ms"
          % ((edit - base) / n, (expr - base) / n))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ctx", required=True)
    ap.add_argument("--root", default=os.path.join(os.path.dirname(__file__), "..", ".."))
    ap.add_argument("--samples", type=int, default=20)
    ap.add_argument("--cpu", action="store_true")
    a = ap.parse_args()
    if a.cpu:
        return cpu_main(a)
    r = Repl(a.ctx, a.root, uncached())
    r.send(":tree (3 (2 17) (4 (2 5) (3 9)))", "1 tree")
    r.send("let h = Emb[17][0:256]", "h : ")
    edit, expr, run, jit, kernel = [], [], [], [], []
    for i in range(a.samples + 2):
        extra = "" if i % 2 else " + 0.0 * c0"
        r.p.stdin.write((CELL.format(extra=extra) + "\n").encode())
        ms, line = r.send(":run", "time: ")
        ms2, line2 = r.send("sigmoid(U_f @ h + b_f)", "f32[256] = ")
        ms3, line3 = r.send(":run", "time: ")
        if i < 2:
            continue
        edit.append(ms)
        expr.append(ms2)
        run.append(ms3)
        jit.append(float(line.split("jit_ms=")[1].split()[0]))
        kernel.append(float(line3.split("run_ms=")[1].split()[0]))
    r.p.stdin.close()
    r.p.wait()
    r = Repl(a.ctx, a.root, uncached())
    r.send(":input examples/data/sst_sample.ptb", "input:")
    _, line = r.send(":time 200", "time: ")
    r.p.stdin.close()
    r.p.wait()
    jit_kind = "full (as ctx run)" if os.environ.get("CTX_REPL_JIT") == "full" else "the REPL's"
    print("treelstm H=256, one tree of 5 nodes, %d samples, JIT %s" % (a.samples, jit_kind))
    print("| latency (ms) | median | p10 | p90 |")
    print("|---|---:|---:|---:|")
    for name, xs in (("edit -> JIT -> run", edit), ("  of which JIT (jit_ms)", jit),
                     ("expression", expr), (":run, nothing changed", run),
                     ("  of which the kernel (run_ms)", kernel)):
        m, lo, hi = stats(xs)
        print("| %s | %.1f | %.1f | %.1f |" % (name, m, lo, hi))
    print("8 trees (sst_sample.ptb), :time 200: " + line.strip())
    return 0


if __name__ == "__main__":
    sys.exit(main())
