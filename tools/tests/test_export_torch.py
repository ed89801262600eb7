#!/usr/bin/env python3
"""test_export_torch.py — from PyTorch models to ctx, end to end.

Each case writes a model in PyTorch (written here, with PyTorch's own modules:
nn.Embedding, nn.Linear, nn.LSTM), saves its state_dict with torch.save, turns
it into a weights file with tools/export_torch.py's command line (checked
against the .ctx model), runs `ctx run` (the compiled kernel and the
interpreter) on the same inputs and compares the outputs with PyTorch's:

  treelstm       CORTEX's TreeLSTM (examples/treelstm.ctx): the embedding
                 folded into the leaf projection, one U_iou and one U_f
  narytreelstm   Tai et al.'s binary N-ary TreeLSTM (examples/narytreelstm.ctx):
                 per-child matrices side by side (cols)
  seqlstm        nn.Embedding + nn.LSTM (examples/seqlstm.ctx): gate order and
                 the two biases folded
  gru            export_torch.gru's pieces against nn.GRU itself (no zoo model
                 has PyTorch's GRU step; this checks the layout docs/pytorch.md
                 describes)
  errors         a missing key and a mapping that does not fit the model

    test_export_torch.py --ctx build/driver/ctx

Exits 77 (skipped) when PyTorch is not installed.
"""
import argparse
import os
import random
import subprocess
import sys
import tempfile

import numpy as np

try:
    import torch
    from torch import nn
except ImportError:
    print("skip: PyTorch is not installed (python3-torch)")
    sys.exit(77)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXPORT = os.path.join(ROOT, "tools", "export_torch.py")
sys.path.insert(0, os.path.join(ROOT, "tools"))
import export_torch  # noqa: E402

H, V, X = 12, 40, 7          # hidden size, vocabulary, embedding width
RTOL, ATOL = 1e-4, 1e-5      # float32 against float64 (docs/testing.md)


# ---------------------------------------------------------------------------
# The PyTorch models

def iou(g, Hs):
    return torch.sigmoid(g[:Hs]), torch.sigmoid(g[Hs:2 * Hs]), torch.tanh(g[2 * Hs:])


class CortexTreeLSTM(nn.Module):
    """The zoo's treelstm: leaves g = W_iou·E[w] + b_iou; internal nodes
    g = U_iou·(h_0 + h_1) + b_iou, f_k = σ(U_f·h_k + b_f)."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(V, X)
        self.W_iou = nn.Linear(X, 3 * H, bias=False)
        self.U_iou = nn.Linear(H, 3 * H)          # its bias is b_iou, at leaves too
        self.U_f = nn.Linear(H, H)

    def forward(self, t):
        if isinstance(t, int):
            i, o, u = iou(self.W_iou(self.emb(torch.tensor(t))) + self.U_iou.bias, H)
            c = i * u
        else:
            (h0, c0), (h1, c1) = self(t[0]), self(t[1])
            i, o, u = iou(self.U_iou(h0 + h1), H)
            c = (i * u + torch.sigmoid(self.U_f(h0)) * c0
                 + torch.sigmoid(self.U_f(h1)) * c1)
        return o * torch.tanh(c), c


class NaryTreeLSTM(nn.Module):
    """Tai et al.'s N-ary TreeLSTM, N = 2, words at the leaves (x = 0 at
    internal nodes): i, o, u = W·x + U_0·h_0 + U_1·h_1 + b,
    f_k = σ(W_f·x + U_k0·h_0 + U_k1·h_1 + b_f)."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(V, X)
        self.W_iou = nn.Linear(X, 3 * H, bias=False)
        self.U0_iou = nn.Linear(H, 3 * H)          # bias: b_iou
        self.U1_iou = nn.Linear(H, 3 * H, bias=False)
        self.U_f00 = nn.Linear(H, H)               # bias: b_f
        self.U_f01 = nn.Linear(H, H, bias=False)
        self.U_f10 = nn.Linear(H, H, bias=False)
        self.U_f11 = nn.Linear(H, H, bias=False)

    def forward(self, t):
        if isinstance(t, int):
            i, o, u = iou(self.W_iou(self.emb(torch.tensor(t))) + self.U0_iou.bias, H)
            c = i * u
        else:
            (h0, c0), (h1, c1) = self(t[0]), self(t[1])
            i, o, u = iou(self.U0_iou(h0) + self.U1_iou(h1), H)
            f0 = torch.sigmoid(self.U_f00(h0) + self.U_f01(h1))
            f1 = torch.sigmoid(self.U_f10(h0) + self.U_f11(h1) + self.U_f00.bias)
            c = i * u + f0 * c0 + f1 * c1
        return o * torch.tanh(c), c


class SeqLSTM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(V, X)
        self.lstm = nn.LSTM(X, H)

    def forward(self, words):
        _, (h, _) = self.lstm(self.emb(torch.tensor(words)).unsqueeze(1))
        return h[0, 0], None


# ---------------------------------------------------------------------------
# Inputs

def random_tree(rng, leaves):
    if leaves == 1:
        return rng.randrange(V)
    k = rng.randrange(1, leaves)
    return (random_tree(rng, k), random_tree(rng, leaves - k))


def ptb(t):
    return "(0 %d)" % t if isinstance(t, int) else "(0 %s %s)" % (ptb(t[0]), ptb(t[1]))


def write_trees(path, rng):
    trees = [random_tree(rng, n) for n in (1, 2, 3, 5, 8, 13, 21, 34)]
    with open(path, "w") as f:
        f.write("".join(ptb(t) + "\n" for t in trees))
    return trees


def write_sequences(path, rng):
    seqs = [[rng.randrange(V) for _ in range(n)] for n in (1, 2, 5, 17, 40)]
    with open(path, "w") as f:
        for s in seqs:
            f.write("sequence\n" + "".join("%d %d\n" % (i, w) for i, w in enumerate(s)))
    return seqs


# ---------------------------------------------------------------------------

class Runner:
    def __init__(self, ctx, work):
        self.ctx, self.work, self.failures = ctx, work, 0

    def run(self, cmd, want_rc=0):
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if p.returncode != want_rc:
            raise AssertionError("%s: exit %d, wanted %d\n%s%s" % (
                " ".join(cmd), p.returncode, want_rc, p.stdout, p.stderr))
        return p

    def export(self, model, ctx_model, mapping):
        pt = os.path.join(self.work, ctx_model + ".pt")
        st = os.path.join(self.work, ctx_model + ".safetensors")
        torch.save(model.state_dict(), pt)
        self.run([sys.executable, EXPORT, pt, st] + mapping +
                 ["--model", os.path.join(ROOT, "examples", ctx_model + ".ctx"),
                  "-D", "H=%d" % H, "-D", "V=%d" % V, "--ctx", self.ctx])
        return st

    def compare(self, name, model, ctx_model, mapping, inputs, input_path):
        st = self.export(model, ctx_model, mapping)
        with torch.no_grad():
            want = np.stack([model(x)[0].double().numpy() for x in inputs])
        for engine in ([], ["--interp"]):
            out = os.path.join(self.work, "%s%s.npy" % (ctx_model, "".join(engine)))
            self.run([self.ctx, "run", os.path.join(ROOT, "examples", ctx_model + ".ctx"),
                      "-D", "H=%d" % H, "-D", "V=%d" % V, "--input", input_path,
                      "--weights", st, "--output", out] + engine)
            got = np.load(out).astype(np.float64)
            err = np.abs(got - want)
            bad = int((err > ATOL + RTOL * np.abs(want)).sum()) if got.shape == want.shape \
                else -1
            what = "%s %s: %s outputs, max |ctx - torch| %.2e" % (
                name, engine[0] if engine else "--jit", got.shape, err.max())
            print(("ok   " if bad == 0 else "FAIL ") + what)
            self.failures += bad != 0


def case_treelstm(r, rng):
    torch.manual_seed(1)
    trees = write_trees(os.path.join(r.work, "trees.ptb"), rng)
    r.compare("treelstm", CortexTreeLSTM(), "treelstm",
              ["Emb=fold(emb.weight, W_iou.weight)", "U_iou=U_iou.weight",
               "b_iou=U_iou.bias", "U_f=U_f.weight", "b_f=U_f.bias"],
              trees, os.path.join(r.work, "trees.ptb"))


def case_narytreelstm(r, rng):
    torch.manual_seed(2)
    trees = write_trees(os.path.join(r.work, "trees2.ptb"), rng)
    r.compare("narytreelstm", NaryTreeLSTM(), "narytreelstm",
              ["Emb=fold(emb.weight, W_iou.weight)",
               "U_iou=cols(U0_iou.weight, U1_iou.weight)", "b_iou=U0_iou.bias",
               "U_f0=cols(U_f00.weight, U_f01.weight)",
               "U_f1=cols(U_f10.weight, U_f11.weight)", "b_f=U_f00.bias"],
              trees, os.path.join(r.work, "trees2.ptb"))


def case_seqlstm(r, rng):
    torch.manual_seed(3)
    seqs = write_sequences(os.path.join(r.work, "seqs.nodes"), rng)
    r.compare("seqlstm", SeqLSTM(), "seqlstm",
              ["Emb=fold(emb.weight, lstm.weight_ih_l0)", "U=lstm.weight_hh_l0",
               "b=sum(lstm.bias_ih_l0, lstm.bias_hh_l0)"],
              seqs, os.path.join(r.work, "seqs.nodes"))
    # the library's lstm() gives the same three tensors
    torch.manual_seed(3)
    m = SeqLSTM()
    p = export_torch.lstm(m.lstm)
    ok = (np.allclose(p["U"], m.lstm.weight_hh_l0.detach().numpy()) and
          np.allclose(p["b"], (m.lstm.bias_ih_l0 + m.lstm.bias_hh_l0).detach().numpy()))
    print(("ok   " if ok else "FAIL ") + "export_torch.lstm: U, b")
    r.failures += not ok


def case_gru(r):
    torch.manual_seed(4)
    g = nn.GRU(X, H)
    x, h = torch.randn(X), torch.randn(H)
    with torch.no_grad():
        want = g(x.view(1, 1, X), h.view(1, 1, H))[1].view(H).double().numpy()
    p = export_torch.gru(g)
    xs, hs = x.double().numpy(), h.double().numpy()
    sig = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
    rz = sig(p["W_rz"] @ xs + p["U_rz"] @ hs + p["b_rz"])
    rr, z = rz[:H], rz[H:]
    n = np.tanh(p["W_n"] @ xs + p["b_in"] + rr * (p["U_n"] @ hs + p["b_hn"]))
    got = (1 - z) * n + z * hs
    err = np.abs(got - want).max()
    print(("ok   " if err < 1e-5 else "FAIL ") + "export_torch.gru against nn.GRU: "
          "max |diff| %.2e" % err)
    r.failures += err >= 1e-5


def case_errors(r):
    pt = os.path.join(r.work, "treelstm.pt")
    st = os.path.join(r.work, "bad.safetensors")
    model = os.path.join(ROOT, "examples", "treelstm.ctx")
    p = r.run([sys.executable, EXPORT, pt, st, "U_iou=cell.U_iou.weight"], want_rc=1)
    ok = "no key 'cell.U_iou.weight' in the state_dict (the state_dict has U_iou.weight" \
        in p.stderr
    p = r.run([sys.executable, EXPORT, pt, st, "U_iou=T(U_iou.weight)", "b_f=U_f.bias",
               "--model", model, "-D", "H=%d" % H, "-D", "V=%d" % V, "--ctx", r.ctx],
              want_rc=1)
    ok = ok and all(s in p.stderr for s in (
        "missing parameter 'Emb' (shape [%d, %d])" % (V, 3 * H),
        "'U_iou' has shape [%d, %d], the model wants [%d, %d]" % (H, 3 * H, 3 * H, H),
        "missing parameter 'U_f'")) and not os.path.exists(st)
    # ctx itself names the PyTorch spelling of a parameter
    torch.manual_seed(1)
    m = CortexTreeLSTM()
    export_torch.save(st, {"Emb": export_torch.fold_embedding(m.emb.weight, m.W_iou.weight),
                           "cell.U_iou.weight": m.U_iou.weight, "b_iou": m.U_iou.bias,
                           "U_f": m.U_f.weight, "b_f": m.U_f.bias})
    p = r.run([r.ctx, "run", model, "-D", "H=%d" % H, "-D", "V=%d" % V, "--weights", st,
               "--input", os.path.join(r.work, "trees.ptb")], want_rc=3)
    ok = ok and "the file has 'cell.U_iou.weight' [%d, %d]: rename it" % (3 * H, H) in p.stderr
    print(("ok   " if ok else "FAIL ") + "errors: a missing key, a mapping that does not "
          "fit, a PyTorch name")
    r.failures += not ok


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ctx", required=True)
    a = ap.parse_args()
    rng = random.Random(12)
    with tempfile.TemporaryDirectory() as work:
        r = Runner(os.path.abspath(a.ctx), work)
        case_treelstm(r, rng)
        case_narytreelstm(r, rng)
        case_seqlstm(r, rng)
        case_gru(r)
        case_errors(r)
    print("%s" % ("all passed" if not r.failures else "%d failed" % r.failures))
    return 1 if r.failures else 0


if __name__ == "__main__":
    sys.exit(main())
