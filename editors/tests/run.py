#!/usr/bin/env python3
"""Runs one editor-grammar test (CTest: editors.vscode, editors.vim, editors.emacs).

  run.py vscode|vim|emacs [--root ROOT] [--tool PATH] [--workdir DIR]

Writes the expectations of the reference tokenizer (ctxlex.py) for every
examples/*.ctx, examples/*.sched and editors/tests/fixtures/* file, then runs
the editor's own check on them:
  vscode  node editors/vscode/test/grammar-test.js (vscode-textmate, vscode-oniguruma)
  vim     vim -Nu NONE -i NONE -es ... -S editors/tests/vim_check.vim
  emacs   emacs -Q --batch -L editors/emacs -l editors/tests/ctx-mode-test.el
          -f ert-run-tests-batch-and-exit
Exits 77 (CTest SKIP_RETURN_CODE) when the tool or the node modules cannot be
found, 1 when a check fails, 0 when all pass.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True
sys.path.insert(0, HERE)
import ctxlex  # noqa: E402

SKIP = 77
TIMEOUT = 300


def skip(msg):
    print("SKIP: " + msg)
    sys.exit(SKIP)


def find_tool(given, name):
    if given and os.path.isfile(given) and os.access(given, os.X_OK):
        return given
    found = shutil.which(name)
    if not found:
        skip(f"{name} not found on PATH" + (f" (nor at {given})" if given else ""))
    return found


def run(cmd, env=None, cwd=None):
    print("+ " + " ".join(cmd), flush=True)
    try:
        p = subprocess.run(cmd, env=env, cwd=cwd, stdin=subprocess.DEVNULL,
                           timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        print(f"FAIL: timed out after {TIMEOUT}s")
        return 1
    return p.returncode


def test_vscode(root, tool, expect):
    node = find_tool(tool, "node")
    testdir = os.path.join(root, "editors", "vscode", "test")
    for mod in ("vscode-textmate", "vscode-oniguruma"):
        if not os.path.isdir(os.path.join(testdir, "node_modules", mod)):
            skip(f"node module {mod} not installed: run `npm ci` in {testdir}")
    return run([node, os.path.join(testdir, "grammar-test.js"), expect], cwd=testdir)


def test_vim(root, tool, expect, workdir):
    vim = find_tool(tool, "vim")
    log = os.path.join(workdir, "vim-check.log")
    vimdir = os.path.join(root, "editors", "vim")

    def vimstr(s):
        return "'" + s.replace("'", "''") + "'"
    rc = run([vim, "-Nu", "NONE", "-i", "NONE", "-es",
              "-c", "let g:ctx_vimdir = " + vimstr(vimdir),
              "-c", "let g:ctx_expect = " + vimstr(expect),
              "-c", "let g:ctx_log = " + vimstr(log),
              "-S", os.path.join(HERE, "vim_check.vim")], cwd=workdir)
    if os.path.exists(log):
        with open(log, encoding="utf-8") as f:
            sys.stdout.write(f.read())
    else:
        print("FAIL: vim wrote no report (did vim_check.vim run?)")
        return 1
    return rc


def test_emacs(root, tool, expect):
    emacs = find_tool(tool, "emacs")
    env = dict(os.environ, CTX_EXPECT=expect)
    return run([emacs, "-Q", "--batch", "-L", os.path.join(root, "editors", "emacs"),
                "-l", os.path.join(HERE, "ctx-mode-test.el"),
                "-f", "ert-run-tests-batch-and-exit"], env=env)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("editor", choices=["vscode", "vim", "emacs"])
    ap.add_argument("--root", default=os.path.dirname(os.path.dirname(HERE)))
    ap.add_argument("--tool", default="", help="path of node / vim / emacs")
    ap.add_argument("--workdir", default="", help="where to write scratch files")
    a = ap.parse_args()
    root = os.path.abspath(a.root)
    if a.workdir:
        os.makedirs(a.workdir, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="ctx-editors-", dir=a.workdir or None) as tmp:
        expect = os.path.join(tmp, "expectations.json")
        with open(expect, "w", encoding="utf-8") as f:
            json.dump(ctxlex.expectations(root), f)
        if a.editor == "vscode":
            rc = test_vscode(root, a.tool, expect)
        elif a.editor == "vim":
            rc = test_vim(root, a.tool, expect, tmp)
        else:
            rc = test_emacs(root, a.tool, expect)
    if rc == SKIP:
        return SKIP
    return 0 if rc == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
