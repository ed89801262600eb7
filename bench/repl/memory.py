#!/usr/bin/env python3
"""memory.py — peak RSS of scripted ctx repl sessions of growing length.

Each session repeats one block of 10 commands (a def redefined, :run with the
new JIT module, a `let` and an expression each compiled and called, :reload,
a dim changed with :set, :interp, a tree added and the input cleared) until
it has N commands, and is piped into `ctx repl` (no terminal). The peak RSS
of each session (ru_maxrss of the finished process) is printed for N = 100,
300 and 1,000; a flat line means that the JIT modules, builds and values of
replaced definitions are released. With --check the script fails when the
1,000-command session's peak exceeds the 100-command one's by more than 10 %
plus 8 MiB (allocator noise), and when any session printed an error.
"""
import argparse
import os
import subprocess
import sys

BLOCK = [
    "def mix(a: f32[H], c: f32[H]) -> f32[H] {{\n  return {act}(W @ (a + c) + b)\n}}",
    ":run",
    "let v = Emb[{k}]",
    "mix(v, v * 0.5)",
    ":reload",
    ":set H={h}",
    ":run",
    ":interp",
    ":tree (1 (2 {k}) (3 4))",
    ":clear",
]


def session(n):
    cmds = []
    i = 0
    while len(cmds) < n:
        for line in BLOCK:
            if len(cmds) == n:
                break
            cmds.append(line.format(act="tanh" if i % 2 else "sigmoid", k=i % 10,
                                    h=16 if i % 2 else 8))
        i += 1
    return "\n".join(cmds) + "\n"


def peak_kib(ctx, root, n):
    p = subprocess.Popen([ctx, "repl", "lang-tests/repl/data/tiny.ctx", "--threads", "1"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, cwd=root)
    p.stdin.write(session(n).encode())
    p.stdin.close()
    out = p.stdout.read().decode()
    err = p.stderr.read().decode()
    _, status, usage = os.wait4(p.pid, 0)
    return status, usage.ru_maxrss, out, err


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ctx", required=True)
    ap.add_argument("--root", default=os.path.join(os.path.dirname(__file__), "..", ".."))
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    rows = []
    ok = True
    for n in (100, 300, 1000):
        status, kib, out, err = peak_kib(a.ctx, a.root, n)
        runs = out.count("model tiny:")
        rows.append((n, kib, runs))
        if status != 0 or err.strip():
            ok = False
            print("session of %d commands: status %d, stderr:\n%s" % (n, status, err[:2000]))
    print("| commands | runs printed | peak RSS (MiB) |")
    print("|---:|---:|---:|")
    for n, kib, runs in rows:
        print("| %d | %d | %.1f |" % (n, runs, kib / 1024))
    growth = rows[-1][1] - rows[0][1]
    print("growth from 100 to 1,000 commands: %.1f MiB" % (growth / 1024))
    if a.check and rows[-1][1] > rows[0][1] * 1.10 + 8 * 1024:
        ok = False
        print("FAIL: peak RSS grows with the session's length")
    return 0 if ok or not a.check else 1


if __name__ == "__main__":
    sys.exit(main())
