#!/usr/bin/env python3
"""export_torch.py — a PyTorch model's weights as a ctx weights file.

ctx reads weights from a safetensors file holding one float32 tensor per
parameter of the model, named and shaped as `ctx params MODEL.ctx` lists them.
This script takes a PyTorch state_dict (a file torch.save wrote, of a
state_dict or of a whole module) to such a file; docs/pytorch.md explains the
layouts (nn.Linear, nn.LSTM, nn.GRU, embeddings folded into the leaf
projections) with worked examples.

Command line:

    python3 tools/export_torch.py STATE.pt OUT.safetensors NAME=EXPR... \\
        [--model MODEL.ctx [-D NAME=VALUE]...] [--ctx PATH/TO/ctx]

Each NAME=EXPR makes the ctx parameter NAME from the state_dict:

    KEY                       the tensor KEY as it is       U_f=cell.U_f.weight
    sum(A, B, ...)            elementwise sum (two biases)  b=sum(lstm.bias_ih_l0,lstm.bias_hh_l0)
    fold(E, W[, B])           E·Wᵀ (+ B): an embedding      Emb=fold(emb.weight,cell.W_iou.weight)
                              folded into a linear leaf projection
    rows(A, B, ...)           stacked along the first axis (gates)
    cols(A, B, ...)           side by side along the last axis ([U_0, U_1] acting on [h_0; h_1])
    T(A)                      transposed
    slice(A, BEGIN, END)      rows BEGIN..END-1 (one gate of a stacked weight)
    zeros(KEY)                zeros shaped like KEY

With --model, the names and shapes are checked against `ctx params MODEL.ctx
--json` (the -D values given) before anything is written, and every problem
is listed. Exit codes: 0 ok, 1 a bad mapping or a mismatch, 2 bad arguments.

As a library (sys.path.insert(0, "tools"); import export_torch):
    linear(m) -> (W, b)              nn.Linear: W [out, in] is ctx's layout as it is
    lstm(m, layer=0) -> dict         nn.LSTM: W [4H, in], U [4H, H], b = b_ih + b_hh,
                                     gates i, f, g, o (ctx's i, f, u, o)
    gru(m, layer=0) -> dict          nn.GRU: W_rz, U_rz, b_rz (r and z, biases summed),
                                     W_n, b_in, U_n, b_hn (kept apart: r multiplies
                                     U_n·h + b_hn)
    fold_embedding(E, W, b=None)     E·Wᵀ + b
    save(path, tensors)              a dict {name: array} as F32 safetensors, in order
    check(tensors, model, defines)   the problems against `ctx params --json`

Only the standard library, NumPy and PyTorch are needed (torch only to read .pt).
"""
import argparse
import json
import re
import struct
import subprocess
import sys

import numpy as np


# ---------------------------------------------------------------------------
# Layouts

def as_array(t):
    """A tensor (torch or NumPy) as a float64 NumPy array."""
    if hasattr(t, "detach"):
        t = t.detach().cpu().double().numpy()
    return np.asarray(t, dtype=np.float64)


def linear(m):
    """nn.Linear y = W·x + b: W is [out, in], ctx's `W @ x` layout, as it is."""
    b = None if m.bias is None else as_array(m.bias)
    return as_array(m.weight), b


def lstm(m, layer=0):
    """nn.LSTM layer [layer] (one direction): the gates stacked i, f, g, o, which
    are ctx's i, f, u, o (seqlstm, nn.lstm's lstm_cell); the two biases folded."""
    sfx = "_l%d" % layer
    W = as_array(getattr(m, "weight_ih" + sfx))
    U = as_array(getattr(m, "weight_hh" + sfx))
    b = np.zeros(U.shape[0])
    if m.bias:
        b = as_array(getattr(m, "bias_ih" + sfx)) + as_array(getattr(m, "bias_hh" + sfx))
    return {"W": W, "U": U, "b": b}


def gru(m, layer=0):
    """nn.GRU layer [layer]: PyTorch stacks the gates r, z, n. r and z take
    W·x + U·h with both biases, which fold into one; n is
    tanh(W_n·x + b_in + r ⊙ (U_n·h + b_hn)), so its two biases stay apart."""
    sfx = "_l%d" % layer
    W = as_array(getattr(m, "weight_ih" + sfx))
    U = as_array(getattr(m, "weight_hh" + sfx))
    H = U.shape[1]
    bi = as_array(getattr(m, "bias_ih" + sfx)) if m.bias else np.zeros(3 * H)
    bh = as_array(getattr(m, "bias_hh" + sfx)) if m.bias else np.zeros(3 * H)
    return {"W_rz": W[:2 * H], "U_rz": U[:2 * H], "b_rz": bi[:2 * H] + bh[:2 * H],
            "W_n": W[2 * H:], "b_in": bi[2 * H:], "U_n": U[2 * H:], "b_hn": bh[2 * H:]}


def fold_embedding(E, W, b=None):
    """An embedding followed by a linear map, as one table: row w of the result
    is W·E[w] + b. For models whose leaf computation is linear in the word's
    vector (treelstm's Emb [V, 3H] = E·W_iouᵀ + b)."""
    out = as_array(E) @ as_array(W).T
    return out if b is None else out + as_array(b)


# ---------------------------------------------------------------------------
# safetensors

def save(path, tensors):
    """Writes {name: array} as a safetensors file of F32 tensors, in dict order,
    contiguous from offset 0, the header padded with spaces to 8 bytes."""
    header, blobs, at = {}, [], 0
    for name, value in tensors.items():
        a = np.ascontiguousarray(as_array(value), dtype="<f4")
        header[name] = {"dtype": "F32", "shape": list(a.shape),
                        "data_offsets": [at, at + a.nbytes]}
        blobs.append(a.tobytes())
        at += a.nbytes
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)


# ---------------------------------------------------------------------------
# Checking against the model

def model_params(model, defines=(), ctx="ctx"):
    """[(name, shape)] of `ctx params MODEL --json` with the -D values [defines]."""
    cmd = [ctx, "params", model, "--json"]
    for d in defines:
        cmd += ["-D", d]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        raise MappingError("%s failed:\n%s" % (" ".join(cmd), p.stderr.strip()))
    return [(q["name"], tuple(q["shape"])) for q in json.loads(p.stdout)["params"]]


def check(tensors, model, defines=(), ctx="ctx"):
    """Every problem of [tensors] against the parameters of [model]: missing,
    mis-shaped and extra names, one line each (empty when they fit)."""
    want = model_params(model, defines, ctx)
    problems = []
    for name, shape in want:
        if name not in tensors:
            problems.append("missing parameter '%s' (shape %s)" % (name, list(shape)))
        elif tuple(as_array(tensors[name]).shape) != shape:
            problems.append("'%s' has shape %s, the model wants %s"
                            % (name, list(as_array(tensors[name]).shape), list(shape)))
    names = {n for n, _ in want}
    problems += ["'%s' is not a parameter of the model" % n for n in tensors if n not in names]
    return problems


# ---------------------------------------------------------------------------
# The mapping language of the command line

class MappingError(Exception):
    pass


TOKEN = re.compile(r"\s*(?:([A-Za-z_][\w.]*)|(-?\d+)|(.))")


def _tokens(text):
    pos, out = 0, []
    while pos < len(text):
        m = TOKEN.match(text, pos)
        if not m or m.end() == pos:
            break
        pos = m.end()
        if m.group(1) is not None:
            out.append(("name", m.group(1)))
        elif m.group(2) is not None:
            out.append(("int", int(m.group(2))))
        elif m.group(3).strip():
            out.append(("punct", m.group(3)))
    return out


def _combine(fn, args, where):
    arrays = [a for a in args if isinstance(a, np.ndarray)]
    try:
        if fn == "sum":
            return sum(arrays[1:], arrays[0])
        if fn == "fold":
            if len(arrays) not in (2, 3):
                raise MappingError("%s: fold takes E, W and maybe B" % where)
            return fold_embedding(*arrays)
        if fn == "rows":
            return np.concatenate(arrays, axis=0)
        if fn == "cols":
            return np.concatenate(arrays, axis=-1)
        if fn == "T":
            return arrays[0].T
        if fn == "zeros":
            return np.zeros_like(arrays[0])
        if fn == "slice":
            return arrays[0][args[1]:args[2]]
    except (ValueError, IndexError) as e:
        raise MappingError("%s: %s" % (where, e))
    raise MappingError("%s: unknown function '%s' (sum, fold, rows, cols, T, slice, zeros)"
                       % (where, fn))


def _close_keys(name, state):
    """Keys of [state] that look like [name]: one is the other with a module
    path in front, else they share a component other than weight and bias."""
    close = [k for k in state if name.endswith("." + k) or k.endswith("." + name)]
    if close:
        return close
    parts = set(name.split(".")) - {"weight", "bias"}
    return [k for k in state if parts & set(k.split("."))]


def evaluate(expr, state, where="expression"):
    """The array [expr] (the mapping language above) makes from [state]."""
    toks = _tokens(expr)
    pos = [0]

    def peek():
        return toks[pos[0]] if pos[0] < len(toks) else ("end", None)

    def take(kind, value=None):
        t = peek()
        if t[0] != kind or (value is not None and t[1] != value):
            raise MappingError("%s: expected %s in '%s'" % (where, value or kind, expr))
        pos[0] += 1
        return t[1]

    def term():
        if peek()[0] == "int":
            return take("int")
        name = take("name")
        if peek() == ("punct", "("):
            take("punct", "(")
            args = [term()]
            while peek() == ("punct", ","):
                take("punct", ",")
                args.append(term())
            take("punct", ")")
            return _combine(name, args, where)
        if name not in state:
            close = _close_keys(name, state)
            hint = " (the state_dict has %s)" % ", ".join(close[:4]) if close else ""
            raise MappingError("%s: no key '%s' in the state_dict%s" % (where, name, hint))
        return as_array(state[name])

    value = term()
    if peek()[0] != "end" or not isinstance(value, np.ndarray):
        raise MappingError("%s: cannot read '%s'" % (where, expr))
    return value


def load_state(path):
    """The state_dict in the file [path] (torch.save of a state_dict or a module)."""
    import torch
    obj = torch.load(path, map_location="cpu")
    if hasattr(obj, "state_dict"):
        obj = obj.state_dict()
    if not isinstance(obj, dict):
        raise MappingError("%s holds no state_dict" % path)
    return obj


def main(argv=None):
    ap = argparse.ArgumentParser(
        description="a PyTorch state_dict as a ctx weights file (F32 safetensors)",
        epilog="EXPR: KEY, sum(A, B), fold(E, W[, B]), rows(...), cols(...), T(A), "
               "slice(A, BEGIN, END), zeros(A); see docs/pytorch.md")
    ap.add_argument("state", help="a file of torch.save (a state_dict or a module)")
    ap.add_argument("out", help="the safetensors file to write")
    ap.add_argument("mapping", nargs="+", metavar="NAME=EXPR",
                    help="a ctx parameter and how to make it from the state_dict")
    ap.add_argument("--model", help="check the result against this .ctx model first")
    ap.add_argument("-D", action="append", default=[], metavar="NAME=VALUE",
                    help="the dims of --model, as for ctx")
    ap.add_argument("--ctx", default="ctx", help="the ctx program (default: ctx on PATH)")
    a = ap.parse_args(argv)
    try:
        state = load_state(a.state)
        tensors = {}
        for item in a.mapping:
            name, eq, expr = item.partition("=")
            if not eq or not name:
                raise MappingError("expected NAME=EXPR, found '%s'" % item)
            if name in tensors:
                raise MappingError("parameter '%s' given twice" % name)
            tensors[name] = evaluate(expr, state, name)
        if a.model:
            problems = check(tensors, a.model, a.D, a.ctx)
            if problems:
                raise MappingError("the weights do not fit %s:\n  %s"
                                   % (a.model, "\n  ".join(problems)))
        save(a.out, tensors)
    except MappingError as e:
        print("export_torch: error: %s" % e, file=sys.stderr)
        return 1
    print("wrote %s: %s" % (a.out, ", ".join("%s %s" % (n, list(t.shape))
                                             for n, t in tensors.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
