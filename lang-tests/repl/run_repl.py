#!/usr/bin/env python3
"""run_repl.py — golden transcripts of `ctx repl` (one .repl file per invocation).

A transcript holds the input and the expected output in one file:

  # TEXT                 before the first input line: a comment, or a directive
                         (other lines there: output before the first input)
  # args: ARGS           the arguments after `ctx repl` ({root}: the source tree)
  # env: NAME=VALUE      an environment variable for the run ({root}, {tmp} as below)
  # exit: N              the exit code (default 0)
  > TEXT                 an input line (`>` alone: an empty one)
  anything else          the next line of output (stdout and stderr merged, in
                         order); `{*}` in it matches any text, and a line `{...}`
                         any number of lines up to the next expected one;
                         numbers may differ in their last printed digit (the
                         JIT's float32 sums round differently on other CPUs)

Input lines may use {tmp} (a fresh directory) and {root}. ctx repl runs in the
source tree's root with stdin a pipe (no prompt: one result per input item)
and HOME in {tmp} (no history file of the user's is read or written). A test
passes when every output line matches and the exit code is as expected.
"""
import argparse
import os
import re
import shlex
import subprocess
import sys
import tempfile

TIMEOUT = 300


def parse(path):
    t = {"args": "", "env": {}, "exit": 0, "input": [], "expect": []}
    started = False
    with open(path, encoding="utf-8") as f:
        for line in f.read().split("\n"):
            if line.startswith("> ") or line == ">":
                started = True
                t["input"].append(line[2:])
            elif not started and line.startswith("#"):
                m = re.match(r"#\s*(args|env|exit):\s?(.*)$", line)
                if m and m.group(1) == "args":
                    t["args"] = m.group(2)
                elif m and m.group(1) == "env":
                    k, _, v = m.group(2).partition("=")
                    t["env"][k] = v
                elif m:
                    t["exit"] = int(m.group(2))
            else:
                t["expect"].append(line)
    while t["expect"] and t["expect"][-1] == "":
        t["expect"].pop()
    return t


NUMBER = re.compile(r"-?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


def numbers_close(want, got):
    """Equal but for numbers that differ in the last of 4 printed digits:
    float32 sums in the JIT may round differently on another CPU."""
    if NUMBER.sub("#", want) != NUMBER.sub("#", got):
        return False
    for w, g in zip(NUMBER.findall(want), NUMBER.findall(got)):
        if not re.search(r"[.eE]", w + g):
            if w != g:  # shapes, counts, line numbers: exact
                return False
            continue
        w, g = float(w), float(g)
        if abs(w - g) > 2e-3 * max(abs(w), abs(g)) + 1e-9:
            return False
    return True


def line_matches(want, got):
    parts = [re.escape(p) for p in want.split("{*}")]
    if re.fullmatch(".*".join(parts), got) is not None:
        return True
    return "{*}" not in want and numbers_close(want, got)


def compare(want, got, i=0, j=0):
    """The first mismatch as a message, or None. `{...}` tries every place
    where the line after it matches (backtracking)."""
    while i < len(want):
        if want[i] == "{...}":
            if i + 1 == len(want):
                return None
            first = None
            for k in range(j, len(got)):
                if line_matches(want[i + 1], got[k]):
                    msg = compare(want, got, i + 1, k)
                    if msg is None:
                        return None
                    first = first or msg
            return first or "no output line matches %r (after {...})" % want[i + 1]
        if j >= len(got):
            return "output ended; expected %r (line %d of the expected output)" % (want[i], i + 1)
        if not line_matches(want[i], got[j]):
            return "output line %d:\n  got:  %r\n  want: %r" % (j + 1, got[j], want[i])
        i += 1
        j += 1
    if j < len(got):
        return "unexpected output from line %d on: %r" % (j + 1, got[j])
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ctx", required=True)
    ap.add_argument("--root", required=True, help="the source tree")
    ap.add_argument("test")
    a = ap.parse_args()
    t = parse(a.test)
    with tempfile.TemporaryDirectory() as tmp:
        def sub(s):
            return s.replace("{root}", a.root).replace("{tmp}", tmp)
        env = dict(os.environ, HOME=tmp)
        env.pop("EDITOR", None)
        for k, v in t["env"].items():
            env[k] = sub(v)
        stdin = "".join(sub(l) + "\n" for l in t["input"])
        cmd = [a.ctx, "repl"] + [sub(x) for x in shlex.split(t["args"])]
        try:
            p = subprocess.run(cmd, input=stdin.encode(), stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, cwd=a.root, env=env, timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            print("FAIL %s: timed out after %d s" % (a.test, TIMEOUT))
            return 1
        out = p.stdout.decode("utf-8", "replace").replace(tmp, "{tmp}").split("\n")
    if out and out[-1] == "":
        out.pop()
    failures = []
    if p.returncode != t["exit"]:
        failures.append("exit code %d, expected %d" % (p.returncode, t["exit"]))
    msg = compare(t["expect"], out)
    if msg:
        failures.append(msg)
    if failures:
        print("FAIL %s:\n%s\n--- output:\n%s" % (a.test, "\n".join(failures), "\n".join(out)))
        return 1
    print("ok %s" % a.test)
    return 0


if __name__ == "__main__":
    sys.exit(main())
