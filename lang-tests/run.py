#!/usr/bin/env python3
"""run.py — the ctx language-test runner (one test file per invocation).

A test is a .ctx or .sched file with its expectations written inside it, in
comments (`#` or `//`):

  # expect: TEXT             the next line of stdout is TEXT
  # error: TEXT              an error on this line whose message is TEXT
  # error@+N: TEXT           ... on the line N below (or @-N above)
  # error@+N:COL: TEXT       ... and at column COL
  # note: TEXT / note@+N:    a note (notes are only checked where declared)
  # runtime-error: TEXT      the run fails with exit code 3 and TEXT on stderr
  # flags: FLAGS             extra options for the default command
  # args: ARGS               the whole command line; {file} is the test file,
                             {dir} the directory it is in (for data next to it)
  # exit: N                  the exit code is N (otherwise derived from the above)
  # stderr: TEXT             stderr contains TEXT (for messages without a place)

The default command is `ctx check FLAGS FILE`. A sibling NAME.ast file is the
golden output of `ctx check --dump=ast`. A test passes only when stdout, the
diagnostics and the exit code all match and no unexpected diagnostic appeared.
Every test that expects no error is also checked to print (ctx fmt) to a
fixed point: fmt(fmt(file)) == fmt(file).
"""
import argparse
import os
import re
import shlex
import subprocess
import sys
import tempfile

DIRECTIVE = re.compile(
    r"(?:#|//)\s*(expect|error|note|warning|runtime-error|flags|args|exit|stderr)"
    r"(?:@([+-]\d+))?(?::(\d+))?:\s?(.*)$")
DIAG = re.compile(r"^(.*?):(\d+):(\d+): (error|warning|note): (.*)$")
TIMEOUT = 120


def parse_expectations(path):
    exp = {"stdout": [], "diags": [], "runtime": None, "flags": [], "args": None,
           "exit": None, "stderr": []}
    with open(path, "rb") as f:
        lines = f.read().decode("utf-8", "replace").split("\n")
    for num, line in enumerate(lines, 1):
        m = DIRECTIVE.search(line)
        if not m:
            continue
        kind, rel, col, text = m.group(1), m.group(2), m.group(3), m.group(4).rstrip()
        if kind == "expect":
            exp["stdout"].append(text)
        elif kind in ("error", "note", "warning"):
            target = num + (int(rel) if rel else 0)
            exp["diags"].append((kind, target, int(col) if col else None, text))
        elif kind == "runtime-error":
            exp["runtime"] = text
        elif kind == "flags":
            exp["flags"] += shlex.split(text)
        elif kind == "args":
            exp["args"] = text
        elif kind == "exit":
            exp["exit"] = int(text)
        elif kind == "stderr":
            exp["stderr"].append(text)
    return exp


def run(cmd):
    try:
        p = subprocess.run(cmd, capture_output=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        return None, "", "timed out after %d s" % TIMEOUT
    return (p.returncode, p.stdout.decode("utf-8", "replace"),
            p.stderr.decode("utf-8", "replace"))


def check_diags(exp, stderr, failures):
    got = []
    for line in stderr.split("\n"):
        m = DIAG.match(line)
        if m:
            got.append((m.group(4), int(m.group(2)), int(m.group(3)), m.group(5)))
    check_notes = any(k == "note" for k, _, _, _ in exp["diags"])
    unmatched = list(exp["diags"])
    for g in got:
        if g[0] == "note" and not check_notes:
            continue
        hit = next((e for e in unmatched if e[0] == g[0] and e[1] == g[1]
                    and (e[2] is None or e[2] == g[2]) and e[3] == g[3]), None)
        if hit:
            unmatched.remove(hit)
        else:
            failures.append("unexpected %s at line %d:%d: %s" % (g[0], g[1], g[2], g[3]))
    for e in unmatched:
        where = "line %d" % e[1] + (":%d" % e[2] if e[2] else "")
        failures.append("missing %s at %s: %s" % (e[0], where, e[3]))


def check_fixed_point(ctx, path, failures):
    ext = os.path.splitext(path)[1]
    rc, first, err = run([ctx, "fmt", path])
    if rc != 0:
        failures.append("fmt failed (exit %s): %s" % (rc, err.strip()))
        return
    with tempfile.TemporaryDirectory() as d:
        tmp = os.path.join(d, "printed" + ext)
        with open(tmp, "w") as f:
            f.write(first)
        rc, second, err = run([ctx, "fmt", tmp])
    if rc != 0 or second != first:
        failures.append("fmt is not a fixed point:\n--- first\n%s--- second\n%s%s"
                        % (first, second, err))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ctx", required=True, help="path of the ctx binary")
    ap.add_argument("test", help="the .ctx or .sched test file")
    a = ap.parse_args()
    exp = parse_expectations(a.test)
    if exp["args"] is not None:
        here = os.path.dirname(a.test) or "."
        cmd = [a.ctx] + [x.replace("{file}", a.test).replace("{dir}", here)
                         for x in shlex.split(exp["args"])]
    else:
        cmd = [a.ctx, "check"] + exp["flags"] + [a.test]
    rc, out, err = run(cmd)
    failures = []
    if rc is None:
        failures.append(err)
    else:
        want_rc = 3 if exp["runtime"] else 1 if any(
            k == "error" for k, _, _, _ in exp["diags"]) else 0
        if exp["exit"] is not None:
            want_rc = exp["exit"]
        if rc != want_rc:
            failures.append("exit code %d, expected %d" % (rc, want_rc))
        if rc not in (0, 1, 2, 3):
            failures.append("crashed or internal error (exit %d)" % rc)
        got_out = out.split("\n")
        if got_out and got_out[-1] == "":
            got_out.pop()
        golden = os.path.splitext(a.test)[0] + ".ast"
        if os.path.exists(golden):
            with open(golden) as f:
                want = f.read()
            if out != want:
                failures.append("stdout differs from %s:\n%s" % (golden, out))
        elif got_out != exp["stdout"]:
            failures.append("stdout:\n  got:  %r\n  want: %r" % (got_out, exp["stdout"]))
        for text in exp["stderr"]:
            if text not in err:
                failures.append("stderr lacks: %s" % text)
        if exp["runtime"]:
            if exp["runtime"] not in err:
                failures.append("missing runtime error: %s" % exp["runtime"])
        else:
            check_diags(exp, err, failures)
        if want_rc == 0 and exp["args"] is None:
            check_fixed_point(a.ctx, a.test, failures)
    if failures:
        print("FAIL %s\n  command: %s" % (a.test, " ".join(shlex.quote(c) for c in cmd)))
        for f in failures:
            print("  " + f.replace("\n", "\n  "))
        if err:
            print("  stderr:\n    " + err.rstrip().replace("\n", "\n    "))
        return 1
    print("PASS %s" % a.test)
    return 0


if __name__ == "__main__":
    sys.exit(main())
