#!/usr/bin/python3
"""zoo.py — an independent float64 reference implementation of the ctx model zoo.

The test oracle that `ctx run --interp` is compared with (differential.py). It
shares no code with ctx: its own readers for bracketed trees and node lists
(docs/formats.md), its own safetensors reader, and one function per model written
from the equations in docs/models.md. Weights are float32 in the file and are
widened to float64 (exactly); everything is then computed in float64 (or, for the
self-checks, in numpy's longdouble).

Evaluation is iterative: each structure's nodes are put in a dependency order by
Kahn's algorithm, so a 100,000-node chain needs no recursion. A node's state is
dropped once every node that reads it has been computed.

    zoo.py MODEL --input FILE --format ptb|nodes [--vocab FILE]
           --weights W.safetensors [-D NAME=VALUE ...] [--all-nodes] --output OUT.npy

Exit codes follow ctx: 0 ok, 2 bad command line, 3 bad input data or weights.
"""

import argparse
import json
import re
import struct
import sys
import types
from collections import deque

import numpy as np


class OracleError(Exception):
    """A user error: the message is complete, the exit code says its kind."""

    def __init__(self, message, code=3):
        super().__init__(message)
        self.code = code


def input_error(path, line, message):
    return OracleError(f"{path}:{line}: error: {message}")


# ---------------------------------------------------------------------------
# Activations and helpers (dtype-generic: float64 or longdouble)

def sigmoid(x):
    with np.errstate(over="ignore"):
        return 1 / (1 + np.exp(-x))


def tanh(x):
    return np.tanh(x)


def relu(x):
    return np.maximum(x, 0)


def cat(*parts):
    """[a; b]: concatenation along the first axis."""
    return np.concatenate(parts, axis=0)


# ---------------------------------------------------------------------------
# The models: one function per model, from docs/models.md.
# Each takes the parameters `m` (attributes named as the parameters, plus the
# dims), the node's value (a word id, a feature vector, or None), and the states
# of the nodes it depends on (children / predecessors / previous element), and
# returns the node's state.

def treefc(m, w, kids):
    # leaf: h = Emb[w];  internal: h = relu(W·[h_0; h_1] + b)
    if not kids:
        return m.Emb[w]
    h_0, h_1 = kids
    return relu(m.W @ cat(h_0, h_1) + m.b)


def treegru(m, w, kids):
    # leaf: h = Emb[w]
    if not kids:
        return m.Emb[w]
    H = m.H
    h_0, h_1 = kids
    s = h_0 + h_1
    g = sigmoid(m.U_rz @ s + m.b_rz)
    r, z = g[0:H], g[H:2 * H]
    h_tilde = tanh(m.U_h @ (r * s) + m.b_h)
    return z * s + (1 - z) * h_tilde


def treelstm(m, w, kids):
    H = m.H
    if not kids:
        g = m.Emb[w] + m.b_iou
    else:
        (h_0, c_0), (h_1, c_1) = kids
        s = h_0 + h_1
        g = m.U_iou @ s + m.b_iou
    i = sigmoid(g[0:H])
    o = sigmoid(g[H:2 * H])
    u = tanh(g[2 * H:3 * H])
    if not kids:
        c = i * u
    else:
        f_0 = sigmoid(m.U_f @ h_0 + m.b_f)
        f_1 = sigmoid(m.U_f @ h_1 + m.b_f)
        c = i * u + f_0 * c_0 + f_1 * c_1
    h = o * tanh(c)
    return (h, c)


def narytreelstm(m, w, kids):
    # Tai et al.'s binary N-ary TreeLSTM: per-child matrices in every gate
    H = m.H
    if not kids:
        g = m.Emb[w] + m.b_iou
    else:
        (h_0, c_0), (h_1, c_1) = kids
        hh = cat(h_0, h_1)
        g = m.U_iou @ hh + m.b_iou
    i = sigmoid(g[0:H])
    o = sigmoid(g[H:2 * H])
    u = tanh(g[2 * H:3 * H])
    if not kids:
        c = i * u
    else:
        f_0 = sigmoid(m.U_f0 @ hh + m.b_f)
        f_1 = sigmoid(m.U_f1 @ hh + m.b_f)
        c = i * u + f_0 * c_0 + f_1 * c_1
    h = o * tanh(c)
    return (h, c)


def childsum(m, w, kids):
    H = m.H
    x = m.Emb[w]
    s = np.zeros(H, dtype=m.dtype)
    for h_k, _ in kids:
        s = s + h_k
    g = m.W_iou @ x + m.U_iou @ s + m.b_iou
    i = sigmoid(g[0:H])
    o = sigmoid(g[H:2 * H])
    u = tanh(g[2 * H:3 * H])
    c = i * u
    for h_k, c_k in kids:
        f_k = sigmoid(m.W_f @ x + m.U_f @ h_k + m.b_f)
        c = c + f_k * c_k
    h = o * tanh(c)
    return (h, c)


def mvrnn(m, w, kids):
    # leaf: a = Emb[w], A = EmbM[w]
    if not kids:
        return (m.Emb[w], m.EmbM[w])
    (a, A), (b, B) = kids
    p = tanh(m.W @ cat(B @ a, A @ b) + m.b)
    # P[i,j] = Σ_k WM[i,k]·A[k,j] + Σ_k WM[i,H+k]·B[k,j]
    P = m.WM @ cat(A, B)
    return (p, P)


def dagrnn(m, x, preds):
    # h = tanh(W·x + Σ_{p ∈ preds(n)} U·h_p + b)
    acc = m.W @ x
    for h_p in preds:
        acc = acc + m.U @ h_p
    return tanh(acc + m.b)


def seqlstm(m, w, prev):
    H = m.H
    if prev:
        (h_prev, c_prev), = prev
    else:                          # h_{-1} = c_{-1} = 0
        h_prev = np.zeros(H, dtype=m.dtype)
        c_prev = np.zeros(H, dtype=m.dtype)
    g = m.Emb[w] + m.U @ h_prev + m.b
    i = sigmoid(g[0:H])
    f = sigmoid(g[H:2 * H])
    u = tanh(g[2 * H:3 * H])
    o = sigmoid(g[3 * H:4 * H])
    c = f * c_prev + i * u
    h = o * tanh(c)
    return (h, c)


# ---------------------------------------------------------------------------
# The model table: dims, parameters, input conventions.

class Model:
    """kind: the structure the model recurses over; reads: 'leaf-words' (one word
    id at leaves), 'words' (one word id at every node) or 'features' (D floats at
    every node); max_deps(d): the most children/predecessors a node may have;
    binary: internal nodes have exactly two children."""

    def __init__(self, name, dims, params, kind, reads, max_deps, step, output,
                 binary=False):
        self.name, self.dims, self.params = name, dims, params
        self.kind, self.reads, self.max_deps = kind, reads, max_deps
        self.step, self.output, self.binary = step, output, binary


def _h(state):
    return state


def _first(state):
    return state[0]


MODELS = {
    "treefc": Model(
        "treefc", {"H": 256, "V": 20000},
        lambda d: [("Emb", (d["V"], d["H"])), ("W", (d["H"], 2 * d["H"])),
                   ("b", (d["H"],))],
        "tree", "leaf-words", lambda d: 2, treefc, _h, binary=True),
    "treegru": Model(
        "treegru", {"H": 256, "V": 20000},
        lambda d: [("Emb", (d["V"], d["H"])), ("U_rz", (2 * d["H"], d["H"])),
                   ("b_rz", (2 * d["H"],)), ("U_h", (d["H"], d["H"])),
                   ("b_h", (d["H"],))],
        "tree", "leaf-words", lambda d: 2, treegru, _h, binary=True),
    "treelstm": Model(
        "treelstm", {"H": 256, "V": 20000},
        lambda d: [("Emb", (d["V"], 3 * d["H"])), ("U_iou", (3 * d["H"], d["H"])),
                   ("b_iou", (3 * d["H"],)), ("U_f", (d["H"], d["H"])),
                   ("b_f", (d["H"],))],
        "tree", "leaf-words", lambda d: 2, treelstm, _first, binary=True),
    "narytreelstm": Model(
        "narytreelstm", {"H": 256, "V": 20000},
        lambda d: [("Emb", (d["V"], 3 * d["H"])), ("U_iou", (3 * d["H"], 2 * d["H"])),
                   ("b_iou", (3 * d["H"],)), ("U_f0", (d["H"], 2 * d["H"])),
                   ("U_f1", (d["H"], 2 * d["H"])), ("b_f", (d["H"],))],
        "tree", "leaf-words", lambda d: 2, narytreelstm, _first, binary=True),
    "childsum": Model(
        "childsum", {"H": 256, "V": 20000, "K": 8},
        lambda d: [("Emb", (d["V"], d["H"])), ("W_iou", (3 * d["H"], d["H"])),
                   ("U_iou", (3 * d["H"], d["H"])), ("b_iou", (3 * d["H"],)),
                   ("W_f", (d["H"], d["H"])), ("U_f", (d["H"], d["H"])),
                   ("b_f", (d["H"],))],
        "tree", "words", lambda d: d["K"], childsum, _first),
    "mvrnn": Model(
        "mvrnn", {"H": 64, "V": 20000},
        lambda d: [("Emb", (d["V"], d["H"])), ("EmbM", (d["V"], d["H"], d["H"])),
                   ("W", (d["H"], 2 * d["H"])), ("b", (d["H"],)),
                   ("WM", (d["H"], 2 * d["H"]))],
        "tree", "leaf-words", lambda d: 2, mvrnn, _first, binary=True),
    "dagrnn": Model(
        "dagrnn", {"H": 256, "D": None},       # D defaults to H
        lambda d: [("W", (d["H"], d["D"])), ("U", (d["H"], d["H"])),
                   ("b", (d["H"],))],
        "dag", "features", lambda d: 2, dagrnn, _h),
    "seqlstm": Model(
        "seqlstm", {"H": 256, "V": 20000},
        lambda d: [("Emb", (d["V"], 4 * d["H"])), ("U", (4 * d["H"], d["H"])),
                   ("b", (4 * d["H"],))],
        "sequence", "words", lambda d: 1, seqlstm, _first),
}


def resolve_dims(model, overrides):
    """The model's dims after -D overrides ({name: int}); unknown names are errors."""
    for name in overrides:
        if name not in model.dims:
            raise OracleError(f"zoo.py: error: model '{model.name}' has no dim "
                              f"'{name}' (dims: {', '.join(model.dims)})", code=2)
    d = {}
    for name, default in model.dims.items():
        d[name] = overrides.get(name, default)
    if d.get("D", 0) is None:
        d["D"] = d["H"]
    return d


def param_shapes(model_name, dims):
    """[(name, shape)] in declaration order, for the given resolved dims."""
    return MODELS[model_name].params(dims)


# ---------------------------------------------------------------------------
# Inputs. A structure is a kind plus its nodes in the input's own order; a node
# has a name for messages, the line it came from, its raw value tokens and the
# indices (into the structure's node list) of the nodes it depends on.

class Node:
    __slots__ = ("name", "line", "values", "deps")

    def __init__(self, name, line, values, deps):
        self.name, self.line, self.values, self.deps = name, line, values, deps


class Structure:
    def __init__(self, kind, line, fmt):
        self.kind, self.line, self.fmt = kind, line, fmt
        self.nodes = []


_PTB_TOKEN = re.compile(r"\(|\)|[^\s()]+")


def read_ptb(path):
    """Bracketed trees, one per line; nodes in pre-order (order of '(')."""
    structures = []
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            text = line.strip()
            if not text or text.startswith("#"):
                continue
            structures.append(_parse_ptb_line(path, lineno, text, len(structures)))
    if not structures:
        raise input_error(path, 1, "empty input: no trees")
    return structures


def _parse_ptb_line(path, lineno, text, index):
    st = Structure("tree", lineno, "ptb")
    nodes, stack = st.nodes, []
    tokens = _PTB_TOKEN.findall(text)
    root_done = False
    k = 0
    while k < len(tokens):
        tok = tokens[k]
        where = f"tree {index}"
        if tok == "(":
            if root_done:
                raise input_error(path, lineno, f"{where}: text after the tree's "
                                  "closing ')'")
            if k + 1 >= len(tokens) or tokens[k + 1] in ("(", ")"):
                raise input_error(path, lineno, f"{where}: expected a label "
                                  "after '('")
            node = Node(str(len(nodes)), lineno, [], [])
            if stack:
                parent = nodes[stack[-1]]
                if parent.values:
                    raise input_error(path, lineno, f"{where}, node {parent.name}: "
                                      "a node holds either one token or child nodes")
                parent.deps.append(len(nodes))
            stack.append(len(nodes))
            nodes.append(node)
            k += 2
            continue
        if tok == ")":
            if not stack:
                raise input_error(path, lineno, f"{where}: unbalanced ')'")
            node = nodes[stack.pop()]
            if not node.values and not node.deps:
                raise input_error(path, lineno, f"{where}, node {node.name}: "
                                  "empty node")
            root_done = not stack
        else:
            if not stack:
                raise input_error(path, lineno, f"{where}: token '{tok}' outside "
                                  "a node")
            node = nodes[stack[-1]]
            if node.values or node.deps:
                raise input_error(path, lineno, f"{where}, node {node.name}: "
                                  "a node holds either one token or child nodes")
            node.values.append(tok)
        k += 1
    if stack:
        raise input_error(path, lineno, f"tree {index}: missing ')'")
    return st


_INT = re.compile(r"[0-9]+")
KINDS = ("tree", "dag", "sequence")


def read_nodes(path):
    """Node lists: 'tree' / 'dag' / 'sequence' lines, then `ID VALUE... [: DEP...]`."""
    structures, raw_deps = [], []
    kind = None
    lineno = 0
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            text = line.split("#", 1)[0].strip()
            if not text:
                continue
            if text in KINDS:
                if kind is not None and text != kind:
                    raise input_error(path, lineno, f"mixed structure kinds: "
                                      f"'{text}' after '{kind}'")
                kind = text
                if structures:
                    _finish_nodes(path, structures[-1], raw_deps, len(structures) - 1)
                structures.append(Structure(text, lineno, "nodes"))
                raw_deps = []
                continue
            if not structures:
                raise input_error(path, lineno, "node line before any 'tree', 'dag' "
                                  "or 'sequence' line")
            st = structures[-1]
            head, colon, tail = text.partition(":")
            fields = head.split()
            if not fields or not _INT.fullmatch(fields[0]):
                raise input_error(path, lineno, f"structure {len(structures) - 1}: "
                                  "expected a non-negative integer node id, found "
                                  f"'{fields[0] if fields else ':'}'")
            deps = tail.split()
            for dep in deps:
                if not _INT.fullmatch(dep):
                    raise input_error(path, lineno, f"structure {len(structures) - 1}"
                                      f", node {fields[0]}: bad dependency '{dep}'")
            if st.kind == "sequence" and deps:
                raise input_error(path, lineno, f"structure {len(structures) - 1}, "
                                  f"node {fields[0]}: sequence elements list no "
                                  "dependencies")
            st.nodes.append(Node(str(int(fields[0])), lineno, fields[1:], []))
            raw_deps.append([int(dep) for dep in deps])
    if not structures:
        raise input_error(path, max(lineno, 1), "empty input: no structures")
    _finish_nodes(path, structures[-1], raw_deps, len(structures) - 1)
    return structures


def _finish_nodes(path, st, raw_deps, index):
    """Resolves dependency ids to node indices; checks ids are unique."""
    if not st.nodes:
        raise input_error(path, st.line, f"structure {index}: no nodes")
    where = {}
    for k, node in enumerate(st.nodes):
        if int(node.name) in where:
            raise input_error(path, node.line, f"structure {index}: duplicate node "
                              f"id {node.name}")
        where[int(node.name)] = k
    for node, deps in zip(st.nodes, raw_deps):
        for dep in deps:
            if dep not in where:
                raise input_error(path, node.line, f"structure {index}, node "
                                  f"{node.name}: unknown dependency id {dep}")
            if where[dep] in node.deps:
                raise input_error(path, node.line, f"structure {index}, node "
                                  f"{node.name}: dependency {dep} listed twice")
            node.deps.append(where[dep])


def read_vocab(path):
    """One word per line, id = line number from 0 (the first occurrence wins)."""
    vocab = {}
    with open(path, encoding="utf-8") as f:
        for k, line in enumerate(f):
            vocab.setdefault(line.strip(), k)
    return vocab


def read_input(path, fmt, vocab_path=None):
    structures = read_ptb(path) if fmt == "ptb" else read_nodes(path)
    vocab = read_vocab(vocab_path) if vocab_path else None
    return structures, vocab


# ---------------------------------------------------------------------------
# Validation against a model: the structure kind, arities, tree shape, acyclicity,
# per-node values. Produces what evaluation needs.

class Prepared:
    """deps[i]: dependency indices; order: a dependency order of all nodes;
    values[i]: the node's model input; outputs: nodes nobody depends on, in order."""

    def __init__(self, deps, order, values, outputs, users):
        self.deps, self.order, self.values = deps, order, values
        self.outputs, self.users = outputs, users


def prepare(model, d, st, index, path, vocab=None, dtype=np.float64):
    where = f"structure {index}"
    if st.kind != model.kind:
        raise input_error(path, st.line, f"{where}: model '{model.name}' takes "
                          f"{model.kind} inputs, found a {st.kind}")
    n = len(st.nodes)
    if st.kind == "sequence":
        deps = [[k - 1] if k > 0 else [] for k in range(n)]
    else:
        deps = [node.deps for node in st.nodes]
    _check_arity(model, d, st, deps, where, path)
    users = [0] * n
    for ds in deps:
        for j in ds:
            users[j] += 1
    if st.kind == "tree":
        _check_tree(st, users, where, path)
    order = _dependency_order(st, deps, where, path)
    values = [_node_value(model, d, st.nodes[k], not deps[k], where, path, vocab,
                          st.fmt, dtype) for k in range(n)]
    outputs = [k for k in range(n) if users[k] == 0]
    return Prepared(deps, order, values, outputs, users)


def _check_arity(model, d, st, deps, where, path):
    limit = model.max_deps(d)
    what = {"tree": "children", "dag": "predecessors", "sequence": "predecessors"}
    for node, ds in zip(st.nodes, deps):
        if len(ds) > limit:
            raise input_error(path, node.line, f"{where}, node {node.name}: "
                              f"{len(ds)} {what[st.kind]}, more than the model's "
                              f"maximum of {limit}")
        if model.binary and len(ds) == 1:
            raise input_error(path, node.line, f"{where}, node {node.name}: one "
                              f"child; model '{model.name}' needs 0 or 2")


def _check_tree(st, users, where, path):
    roots = [k for k in range(len(users)) if users[k] == 0]
    for k, count in enumerate(users):
        if count > 1:
            raise input_error(path, st.nodes[k].line, f"{where}, node "
                              f"{st.nodes[k].name}: two parents")
    if len(roots) != 1:
        line = st.nodes[roots[1]].line if roots else st.line
        raise input_error(path, line, f"{where}: a tree needs exactly one root, "
                          f"found {len(roots)}")


def _dependency_order(st, deps, where, path):
    """Kahn's algorithm: every node after all the nodes it depends on."""
    n = len(deps)
    waiting = [len(ds) for ds in deps]
    users = [[] for _ in range(n)]
    for k, ds in enumerate(deps):
        for j in ds:
            users[j].append(k)
    ready = deque(k for k in range(n) if waiting[k] == 0)
    order = []
    while ready:
        k = ready.popleft()
        order.append(k)
        for u in users[k]:
            waiting[u] -= 1
            if waiting[u] == 0:
                ready.append(u)
    if len(order) != n:
        stuck = next(k for k in range(n) if waiting[k] > 0)
        raise input_error(path, st.nodes[stuck].line, f"{where}: cycle through "
                          f"node {st.nodes[stuck].name}")
    return order


def _node_value(model, d, node, is_leaf, where, path, vocab, fmt, dtype):
    here = f"{where}, node {node.name}"
    vals = node.values
    if model.reads == "features":
        if len(vals) != d["D"]:
            raise input_error(path, node.line, f"{here}: expected {d['D']} feature "
                              f"values, found {len(vals)}")
        try:
            x = np.array([float(v) for v in vals], dtype=np.float64)
        except ValueError:
            raise input_error(path, node.line, f"{here}: bad feature value") from None
        # x is declared f32: round to float32, then widen (generated inputs are
        # exactly representable, so a reader keeping float64 agrees).
        return x.astype(np.float32).astype(dtype)
    needed = model.reads == "words" or is_leaf
    if len(vals) > 1 or (needed and not vals):
        expect = "one word" if needed else "at most one word"
        raise input_error(path, node.line, f"{here}: expected {expect}, found "
                          f"{len(vals)} values")
    if not vals:
        return None
    return _word_id(vals[0], d, here, path, node.line, vocab if fmt == "ptb" else None)


def _word_id(tok, d, here, path, line, vocab):
    if vocab is not None:
        if tok not in vocab:
            raise input_error(path, line, f"{here}: word '{tok}' not in the "
                              "vocabulary")
        w = vocab[tok]
    else:
        if not re.fullmatch(r"-?[0-9]+", tok):
            raise input_error(path, line, f"{here}: expected an integer word id, "
                              f"found '{tok}'")
        w = int(tok)
    if not 0 <= w < d["V"]:
        raise input_error(path, line, f"{here}: word id {w} outside [0, {d['V']})")
    return w


# ---------------------------------------------------------------------------
# Weights: safetensors.

_ST_DTYPE_SIZES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4,
                   "I16": 2, "I8": 1, "U8": 1, "BOOL": 1}


def read_safetensors(path):
    """{name: float32 ndarray} of an F32-only safetensors file (checked)."""
    with open(path, "rb") as f:
        blob = f.read()
    if len(blob) < 8:
        raise OracleError(f"{path}: error: truncated safetensors file (no header)")
    (n,) = struct.unpack("<Q", blob[:8])
    if 8 + n > len(blob):
        raise OracleError(f"{path}: error: truncated safetensors header")
    try:
        header = json.loads(blob[8:8 + n].decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise OracleError(f"{path}: error: bad safetensors header: {e}") from None
    if not isinstance(header, dict):
        raise OracleError(f"{path}: error: bad safetensors header: not an object")
    data = blob[8 + n:]
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        tensors[name] = _read_tensor(path, name, info, data)
    return tensors


def _read_tensor(path, name, info, data):
    try:
        dtype, shape = info["dtype"], tuple(info["shape"])
        begin, end = info["data_offsets"]
    except (KeyError, TypeError, ValueError):
        raise OracleError(f"{path}: error: tensor '{name}': malformed header "
                          "entry") from None
    if dtype != "F32":
        raise OracleError(f"{path}: error: tensor '{name}': dtype {dtype}, "
                          "expected F32")
    if any(not isinstance(s, int) or s < 0 for s in shape):
        raise OracleError(f"{path}: error: tensor '{name}': bad shape {list(shape)}")
    count = int(np.prod(shape, dtype=np.int64))
    if not (0 <= begin <= end <= len(data)):
        raise OracleError(f"{path}: error: tensor '{name}': data offsets "
                          f"[{begin}, {end}) outside the {len(data)}-byte data "
                          "(truncated file?)")
    if end - begin != 4 * count:
        raise OracleError(f"{path}: error: tensor '{name}': {end - begin} bytes for "
                          f"shape {list(shape)} ({4 * count} expected)")
    return np.frombuffer(data, dtype="<f4", count=count, offset=begin).reshape(shape)


def load_params(model, d, path, dtype=np.float64):
    """The model's parameters from a safetensors file, checked against the param
    list, widened to dtype; returned as a namespace with the dims."""
    tensors = read_safetensors(path)
    expected = model.params(d)
    names = [name for name, _ in expected]
    for name, shape in expected:
        if name not in tensors:
            raise OracleError(f"{path}: error: missing tensor '{name}'")
        got = tuple(tensors[name].shape)
        if got != tuple(shape):
            raise OracleError(f"{path}: error: tensor '{name}' has shape "
                              f"{list(got)}, expected {list(shape)}")
    for name in tensors:
        if name not in names:
            raise OracleError(f"{path}: error: unexpected tensor '{name}' (model "
                              f"'{model.name}' has no such parameter)")
    m = types.SimpleNamespace(**d)
    m.dtype = dtype
    for name in names:
        setattr(m, name, tensors[name].astype(dtype))
    return m


# ---------------------------------------------------------------------------
# Evaluation.

def evaluate_structure(model, m, prep, all_nodes):
    """The outputs of one structure: every node's (listing order) or the outputs'."""
    n = len(prep.deps)
    state = [None] * n
    remaining = list(prep.users)
    per_node = [None] * n if all_nodes else None
    for k in prep.order:
        ds = prep.deps[k]
        state[k] = model.step(m, prep.values[k], [state[j] for j in ds])
        if all_nodes:
            per_node[k] = model.output(state[k])
        for j in ds:                      # free a state once all its users ran
            remaining[j] -= 1
            if remaining[j] == 0:
                state[j] = None
    if all_nodes:
        return per_node
    return [model.output(state[k]) for k in prep.outputs]


def evaluate(model_name, input_path, fmt, weights_path, overrides=None,
             all_nodes=False, vocab_path=None, dtype=np.float64):
    """The oracle: an array [num_outputs, ...] of dtype (see the module doc)."""
    if model_name not in MODELS:
        raise OracleError(f"zoo.py: error: unknown model '{model_name}' "
                          f"(models: {', '.join(MODELS)})", code=2)
    model = MODELS[model_name]
    d = resolve_dims(model, overrides or {})
    structures, vocab = read_input(input_path, fmt, vocab_path)
    preps = [prepare(model, d, st, k, input_path, vocab, dtype)
             for k, st in enumerate(structures)]
    m = load_params(model, d, weights_path, dtype)
    rows = []
    for prep in preps:
        rows.extend(evaluate_structure(model, m, prep, all_nodes))
    return np.stack(rows).astype(dtype)


# ---------------------------------------------------------------------------
# Command line.

def parse_dims(items):
    """['H=16', 'V=50'] -> {'H': 16, 'V': 50}."""
    dims = {}
    for item in items or []:
        name, eq, value = item.partition("=")
        if not eq or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) or \
                not re.fullmatch(r"[0-9]+", value) or int(value) <= 0:
            raise OracleError(f"zoo.py: error: bad -D '{item}': expected "
                              "NAME=VALUE with a positive integer VALUE", code=2)
        dims[name] = int(value)
    return dims


def main(argv=None):
    ap = argparse.ArgumentParser(
        prog="zoo.py", description="float64 reference implementation of the "
        "ctx model zoo (docs/models.md)")
    ap.add_argument("model", choices=sorted(MODELS))
    ap.add_argument("--input", required=True)
    ap.add_argument("--format", required=True, choices=["ptb", "nodes"])
    ap.add_argument("--vocab", help="vocabulary for bracketed trees")
    ap.add_argument("--weights", required=True, help="safetensors file")
    ap.add_argument("-D", dest="dims", action="append", metavar="NAME=VALUE",
                    help="override a dim")
    ap.add_argument("--all-nodes", action="store_true",
                    help="every node's output, not just the roots/sinks")
    ap.add_argument("--output", required=True, help="float64 .npy to write")
    args = ap.parse_args(argv)
    try:
        out = evaluate(args.model, args.input, args.format, args.weights,
                       parse_dims(args.dims), args.all_nodes, args.vocab)
    except OracleError as e:
        print(e, file=sys.stderr)
        return e.code
    except OSError as e:
        print(f"zoo.py: error: {e}", file=sys.stderr)
        return 3
    np.save(args.output, np.ascontiguousarray(out, dtype=np.float64))
    return 0


if __name__ == "__main__":
    sys.exit(main())
