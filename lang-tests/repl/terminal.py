#!/usr/bin/env python3
"""terminal.py — ctx repl on a real terminal, driven under tmux.

Starts `ctx repl examples/treelstm.ctx` in a detached tmux session (HOME in a
fresh directory), types with send-keys and reads the screen with
capture-pane, checking: the prompt; Tab completion of a command (`:par` ->
`:params `), of a model function (`iou_i` -> `iou_input`) and of a file name;
history recall with Up (and that ~/.ctx_history was written); Ctrl-C at the
prompt dropping a half-typed line; Ctrl-C during a long `:time` returning to
the prompt with `interrupted after K of N runs`; Ctrl-D leaving with status 0.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time


class Term:
    def __init__(self, name, env):
        self.name, self.env = name, env

    def tmux(self, *args, check=True):
        return subprocess.run(["tmux"] + list(args), env=self.env, check=check,
                              capture_output=True, text=True).stdout

    def keys(self, *keys):
        self.tmux("send-keys", "-t", self.name, *keys)

    def type(self, text):
        self.tmux("send-keys", "-t", self.name, "-l", text)

    def screen(self):
        return self.tmux("capture-pane", "-p", "-t", self.name, "-S", "-200", check=False)

    def wait_for(self, pred, what, timeout=60):
        end = time.time() + timeout
        while time.time() < end:
            s = self.screen()
            if pred(s):
                return s
            time.sleep(0.1)
        raise AssertionError("timed out waiting for %s; screen:\n%s" % (what, self.screen()))

    def last_line(self):
        lines = [l for l in self.screen().split("\n") if l.strip()]
        return lines[-1] if lines else ""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ctx", required=True)
    ap.add_argument("--root", required=True)
    a = ap.parse_args()
    home = tempfile.mkdtemp()
    sock = os.path.join(home, "tmux.sock")
    env = dict(os.environ, HOME=home, TERM="xterm", TMUX_TMPDIR=home)
    env.pop("TMUX", None)
    name = "ctxrepl"
    status = os.path.join(home, "status")
    t = Term(name, env)
    # the status goes to a file of its own and is renamed into place: the test
    # reads a whole line or nothing (it once read the file between the shell's
    # creating it and writing to it, and reported an empty status)
    cmd = ("trap '' INT; cd %s && %s repl examples/treelstm.ctx -D H=16 -D V=100 --threads 1 "
           "2>>$HOME/stderr.txt; echo exit=$? > %s.part && mv %s.part %s" % (
               a.root, a.ctx, status, status, status))
    t.tmux("-S", sock, "kill-server", check=False)
    t.tmux = (lambda f: (lambda *args, check=True: f("-S", sock, *args, check=check)))(t.tmux)
    t.tmux("new-session", "-d", "-s", name, "-x", "160", "-y", "50", cmd)
    failures = []
    try:
        t.wait_for(lambda s: "ctx>" in s and "loaded examples/treelstm.ctx" in s, "the prompt")
        # completion of a command
        t.type(":par")
        t.keys("Tab")
        t.wait_for(lambda s: "ctx> :params" in s, "':par' completed to ':params'")
        t.keys("Enter")
        t.wait_for(lambda s: "param U_f : f32[16, 16]" in s, ":params output")
        # completion of a function of the model (from the stdlib)
        t.type("iou_i")
        t.keys("Tab")
        t.wait_for(lambda s: "ctx> iou_input" in s, "'iou_i' completed to 'iou_input'")
        t.type("(b_iou)")
        t.keys("Enter")
        t.wait_for(lambda s: "f32[16] = [" in s, "the value of iou_input(b_iou)")
        # completion of a file name
        t.type(":load examples/treel")
        t.keys("Tab")
        t.wait_for(lambda s: "ctx> :load examples/treelstm." in s, "a file name completed")
        t.keys("C-c")  # the line dropped, a fresh prompt
        t.wait_for(lambda s: t.last_line().rstrip() == "ctx>", "a fresh prompt after Ctrl-C")
        # history: Up recalls :params
        t.type(":tree (3 (2 17) (4 (2 5) (3 9)))")
        t.keys("Enter")
        t.wait_for(lambda s: "1 tree, 5 nodes" in s, ":tree")
        t.keys("Up", "Up", "Up")
        t.wait_for(lambda s: t.last_line().endswith("ctx> :params"), "history recall of :params")
        t.keys("C-c")  # drop the recalled line
        t.wait_for(lambda s: t.last_line().rstrip() == "ctx>", "a fresh prompt after Ctrl-C")
        # Ctrl-C during a long :time
        t.type(":time 100000000")
        t.keys("Enter")
        time.sleep(2.0)
        t.keys("C-c")
        s = t.wait_for(lambda s: "interrupted after" in s, "Ctrl-C to stop :time", timeout=60)
        t.wait_for(lambda s: t.last_line().rstrip() == "ctx>", "the prompt after the interrupt")
        if "of 100000000 runs" not in s:
            failures.append("the interrupt message does not name the runs:\n" + s)
        t.keys("C-d")
        end = time.time() + 30
        while not os.path.exists(status) and time.time() < end:
            time.sleep(0.1)
        if not os.path.exists(status):
            failures.append("no exit after Ctrl-D; screen:\n" + t.screen())
        else:
            rc = open(status).read().strip()
            if rc != "exit=0":
                failures.append("exit status after Ctrl-D: %s" % rc)
        hist = os.path.join(home, ".ctx_history")
        if not os.path.exists(hist) or ":params" not in open(hist, errors="replace").read():
            failures.append("~/.ctx_history does not hold ':params'")
    except AssertionError as e:
        failures.append(str(e))
    finally:
        t.tmux("kill-server", check=False)
        if failures and os.path.exists(os.path.join(home, "stderr.txt")):
            failures.append("stderr:\n" + open(os.path.join(home, "stderr.txt")).read()[-3000:])
        shutil.rmtree(home, ignore_errors=True)
    if failures:
        print("FAIL repl_terminal:\n" + "\n".join(failures))
        return 1
    print("ok repl_terminal")
    return 0


if __name__ == "__main__":
    sys.exit(main())
