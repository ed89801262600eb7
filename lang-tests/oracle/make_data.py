#!/usr/bin/python3
"""make_data.py — seeded generators of weights and inputs for the model zoo.

Writes test files in the formats of docs/formats.md: safetensors weights (F32,
uniform in [-scale, scale], parameters in declaration order, with a __metadata__
entry) and inputs of every shape class in docs/testing.md. Everything is a
function of the seed (Python's `random.Random` for structure and word ids, numpy's
`default_rng` for weights and features), so a failing case is reproduced by
rerunning the printed command.

    make_data.py --weights OUT.safetensors MODEL [-D NAME=VALUE ...] [--seed S]
                 [--scale A]
    make_data.py --input OUT --shape CLASS [--model MODEL] [-D NAME=VALUE ...]
                 [--seed S] [--n N] [--grid RxC] [--vocab-out VOCAB]
    make_data.py --list-shapes

Feature values are multiples of 1/256 in [-2, 2]: exactly representable in float32
and printed exactly, so readers that parse them as float32 or as float64 agree.
"""

import argparse
import json
import random
import string
import struct
import sys

import numpy as np

import zoo


# ---------------------------------------------------------------------------
# Weights.

def make_weights(model_name, dims, seed, scale=0.5):
    """[(name, float32 array)] in declaration order, uniform in [-scale, scale]."""
    model = zoo.MODELS[model_name]
    d = zoo.resolve_dims(model, dims)
    rng = np.random.default_rng(seed)
    return [(name, rng.uniform(-scale, scale, size=shape).astype(np.float32))
            for name, shape in model.params(d)]


def write_safetensors(path, tensors, metadata=None):
    """Writes [(name, float32 array)] as safetensors (header padded to 8 bytes)."""
    header, offset = {}, 0
    if metadata:
        header["__metadata__"] = {k: str(v) for k, v in metadata.items()}
    blobs = []
    for name, array in tensors:
        blob = np.ascontiguousarray(array, dtype="<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(array.shape),
                        "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for blob in blobs:
            f.write(blob)


# ---------------------------------------------------------------------------
# Trees: children lists, a root, and a word id for every node.

class Tree:
    def __init__(self):
        self.children = []

    def add(self, kids=()):
        self.children.append(list(kids))
        return len(self.children) - 1

    def __len__(self):
        return len(self.children)


def _set_root(tree, root):
    tree.root = root
    return tree


def single_tree():
    t = Tree()
    return _set_root(t, t.add())


def random_binary(rng, leaves):
    """A uniformly shaped random bracketing: merge random adjacent pairs."""
    t = Tree()
    items = [t.add() for _ in range(leaves)]
    while len(items) > 1:
        k = rng.randrange(len(items) - 1)
        items[k:k + 2] = [t.add(items[k:k + 2])]
    return _set_root(t, items[0])


def caterpillar(rng, leaves):
    """A maximally deep binary tree: every internal node has a leaf child, on a
    random side."""
    t = Tree()
    cur = t.add()
    for _ in range(leaves - 1):
        leaf = t.add()
        cur = t.add([cur, leaf] if rng.random() < 0.5 else [leaf, cur])
    return _set_root(t, cur)


def complete_binary(height):
    t = Tree()
    level = [t.add() for _ in range(2 ** height)]
    while len(level) > 1:
        level = [t.add(level[k:k + 2]) for k in range(0, len(level), 2)]
    return _set_root(t, level[0])


def nary_chain(nodes):
    """Node k has the single child k + 1: depth `nodes`."""
    t = Tree()
    for k in range(nodes):
        t.add([k + 1] if k + 1 < nodes else [])
    return _set_root(t, 0)


def random_nary(rng, nodes, arity):
    """A random tree of `nodes` nodes, at most `arity` children per node; the
    root has exactly min(arity, nodes - 1) children (the maximum is exercised)."""
    t = Tree()
    t.add()
    open_nodes = [0]                       # nodes with room for another child
    for k in range(1, nodes):
        if k <= arity:
            parent = 0
        elif rng.random() < 0.5:           # near the newest nodes: depth
            parent = open_nodes[max(0, len(open_nodes) - 1 - rng.randrange(4))]
        else:
            parent = open_nodes[rng.randrange(len(open_nodes))]
        t.children[parent].append(t.add())
        open_nodes.append(k)
        if len(t.children[parent]) == arity:
            open_nodes.remove(parent)
    return _set_root(t, 0)


def sst_leaves(rng):
    """A sentence length like the Stanford Sentiment Treebank's (mean ~20)."""
    return max(1, min(60, 1 + int(rng.gammavariate(2.5, 8.0))))


def tree_words(rng, tree, vocab_size):
    return [rng.randrange(vocab_size) for _ in range(len(tree))]


def write_ptb(trees, rng, vocab_size, words_of=None):
    """Bracketed trees, one per line; leaves carry words, labels random 0..4."""
    lines = []
    for t in trees:
        words = tree_words(rng, t, vocab_size)
        parts = []
        stack = [("node", t.root)]
        while stack:                       # iterative: chains are 100,000 deep
            what, item = stack.pop()
            if what == "text":
                parts.append(item)
                continue
            label = rng.randrange(5)
            if not t.children[item]:
                w = words[item] if words_of is None else words_of[words[item]]
                parts.append(f"({label} {w})")
                continue
            parts.append(f"({label}")
            stack.append(("text", ")"))
            for kid in reversed(t.children[item]):
                stack.append(("node", kid))
                stack.append(("text", " "))
        lines.append("".join(parts))
    return "\n".join(lines) + "\n"


def _listing(rng, n, shuffle):
    """(order of listing, id of each node): shuffled with sparse ids, or as is."""
    order = list(range(n))
    if not shuffle:
        return order, order
    rng.shuffle(order)
    ids = rng.sample(range(10 * n + 10), n)
    return order, ids


def write_node_trees(trees, rng, vocab_size, shuffle=False, leaf_words_only=False,
                     comment=None):
    """Trees as node lists, a word on every node (or on leaves only)."""
    out = [f"# {comment}"] if comment else []
    for t in trees:
        words = tree_words(rng, t, vocab_size)
        order, ids = _listing(rng, len(t), shuffle)
        out.append("tree")
        for k in order:
            kids = t.children[k]
            line = str(ids[k])
            if not (kids and leaf_words_only):
                line += f" {words[k]}"
            if kids:
                line += " : " + " ".join(str(ids[c]) for c in kids)
            out.append(line)
        out.append("")
    return "\n".join(out)


# ---------------------------------------------------------------------------
# DAGs: predecessor lists (at most 2 per node), a D-vector per node.

def grid_dag(rows, cols):
    """Node (r, c) = r*cols + c depends on (r-1, c) and (r, c-1)."""
    preds = []
    for r in range(rows):
        for c in range(cols):
            p = []
            if r > 0:
                p.append((r - 1) * cols + c)
            if c > 0:
                p.append(r * cols + c - 1)
            preds.append(p)
    return preds


def chain_dag(nodes):
    return [[k - 1] if k > 0 else [] for k in range(nodes)]


def random_dag(rng, nodes):
    """Each node takes 0-2 distinct predecessors among earlier nodes, mostly
    recent ones: shared predecessors, several sources and sinks."""
    preds = [[]]
    for k in range(1, nodes):
        want = rng.choices([0, 1, 2], weights=[1, 4, 5])[0]
        p = set()
        for _ in range(want):
            back = min(k, 1 + int(rng.expovariate(0.3)))
            p.add(k - back)
        preds.append(sorted(p, key=lambda _: rng.random()))
    return preds


def features(nprng, count, dim):
    """Multiples of 1/256 in [-2, 2]: exact in float32 and in decimal."""
    return nprng.integers(-512, 513, size=(count, dim)) / 256.0


def write_dags(dags, rng, nprng, dim, shuffle=False):
    out = []
    for preds in dags:
        x = features(nprng, len(preds), dim)
        order, ids = _listing(rng, len(preds), shuffle)
        out.append("dag")
        for k in order:
            line = str(ids[k]) + "".join(f" {float(v)!r}" for v in x[k])
            if preds[k]:
                line += " : " + " ".join(str(ids[p]) for p in preds[k])
            out.append(line)
        out.append("")
    return "\n".join(out)


def write_sequences(lengths, rng, vocab_size, sparse_ids=False):
    out = []
    for n in lengths:
        _, ids = _listing(rng, n, sparse_ids)
        out.append("sequence")
        for k in range(n):
            out.append(f"{ids[k]} {rng.randrange(vocab_size)}")
        out.append("")
    return "\n".join(out)


# ---------------------------------------------------------------------------
# Vocabulary for bracketed trees with words.

SPECIAL_WORDS = [",", ".", "'s", "n't", "--", "...", "-LRB-", "-RRB-", "`", "''",
                 "&", "%", "$", "1.5", "3/4", "well-made", "Ca", "!"]


def make_vocab(rng, size):
    words, seen = [], set()
    for w in SPECIAL_WORDS[:size]:
        words.append(w)
        seen.add(w)
    while len(words) < size:
        w = "".join(rng.choice(string.ascii_lowercase)
                    for _ in range(rng.randint(2, 8)))
        if w not in seen:
            seen.add(w)
            words.append(w)
    rng.shuffle(words)
    return words


# ---------------------------------------------------------------------------
# Shape classes: name -> (format, structure kind, what --n means, generator).
# A generator takes (rng, nprng, dims, n, grid) and returns the file's text.

def _ptb(trees_of):
    return lambda rng, nprng, d, n, grid: write_ptb(trees_of(rng, n), rng, d["V"])


def _batch_binary(rng):
    return [single_tree(), random_binary(rng, 2), random_binary(rng, 3),
            random_binary(rng, 500), complete_binary(4), caterpillar(rng, 300),
            single_tree()] + [random_binary(rng, sst_leaves(rng)) for _ in range(4)]


def _batch_nary(rng, arity):
    star = Tree()
    star.add(range(1, arity + 1))
    for _ in range(arity):
        star.add()
    _set_root(star, 0)
    return [single_tree(), star, nary_chain(50), random_nary(rng, 300, arity),
            random_nary(rng, 5, arity), random_nary(rng, 2, arity), single_tree()]


def _batch_dags(rng):
    return [[[]], grid_dag(1, 6), grid_dag(6, 1), grid_dag(5, 7),
            random_dag(rng, 40), [[]], random_dag(rng, 200)]


def _vocab_ptb(rng, nprng, d, n, grid, vocab=None):
    trees = [random_binary(rng, sst_leaves(rng)) for _ in range(n)]
    return write_ptb(trees, rng, d["V"], words_of=vocab)


def _grid_text(rng, nprng, d, n, grid):
    rows, cols = grid
    return write_dags([grid_dag(rows, cols)], rng, nprng, d["D"])


SHAPES = {
    # bracketed binary trees, words at the leaves
    "single": ("ptb", "tree", "-", _ptb(lambda rng, n: [single_tree()])),
    "chain": ("ptb", "tree", "nodes (leaves = (n+1)/2), default 1001",
              _ptb(lambda rng, n: [caterpillar(rng, (n + 1) // 2)])),
    "complete": ("ptb", "tree", "height, default 6",
                 _ptb(lambda rng, n: [complete_binary(n)])),
    "random": ("ptb", "tree", "trees of SST-like sizes, default 25",
               _ptb(lambda rng, n: [random_binary(rng, sst_leaves(rng))
                                    for _ in range(n)])),
    "batch": ("ptb", "tree", "-", _ptb(lambda rng, n: _batch_binary(rng))),
    "vocab": ("ptb", "tree", "trees (words through --vocab-out), default 25",
              _vocab_ptb),
    # node-list trees
    "bintree-nodes": ("nodes", "tree", "trees, default 10; shuffled, sparse ids, "
                      "words on every node",
                      lambda rng, nprng, d, n, grid: write_node_trees(
                          [random_binary(rng, sst_leaves(rng)) for _ in range(n)],
                          rng, d["V"], shuffle=True)),
    "bintree-nodes-leafwords": (
        "nodes", "tree", "trees, default 10; words on leaves only",
        lambda rng, nprng, d, n, grid: write_node_trees(
            [random_binary(rng, sst_leaves(rng)) for _ in range(n)],
            rng, d["V"], shuffle=True, leaf_words_only=True)),
    "tree-single": ("nodes", "tree", "-", lambda rng, nprng, d, n, grid:
                    write_node_trees([single_tree()], rng, d["V"])),
    "tree-chain": ("nodes", "tree", "nodes, default 1000",
                   lambda rng, nprng, d, n, grid:
                   write_node_trees([nary_chain(n)], rng, d["V"])),
    "nary": ("nodes", "tree", "nodes per tree, default 200; 3 trees, arity <= K",
             lambda rng, nprng, d, n, grid: write_node_trees(
                 [random_nary(rng, n, d["K"]) for _ in range(3)], rng, d["V"],
                 shuffle=True)),
    "tree-batch": ("nodes", "tree", "-", lambda rng, nprng, d, n, grid:
                   write_node_trees(_batch_nary(rng, d["K"]), rng, d["V"],
                                    shuffle=True)),
    # DAGs with D features per node
    "dag-single": ("nodes", "dag", "-", lambda rng, nprng, d, n, grid:
                   write_dags([[[]]], rng, nprng, d["D"])),
    "dag-chain": ("nodes", "dag", "nodes, default 1000",
                  lambda rng, nprng, d, n, grid:
                  write_dags([chain_dag(n)], rng, nprng, d["D"])),
    "grid": ("nodes", "dag", "--grid RxC, default 12x15", _grid_text),
    "dag-random": ("nodes", "dag", "nodes, default 300; shuffled, sparse ids",
                   lambda rng, nprng, d, n, grid: write_dags(
                       [random_dag(rng, n)], rng, nprng, d["D"], shuffle=True)),
    "dag-batch": ("nodes", "dag", "-", lambda rng, nprng, d, n, grid:
                  write_dags(_batch_dags(rng), rng, nprng, d["D"], shuffle=True)),
    # sequences
    "seq-single": ("nodes", "sequence", "-", lambda rng, nprng, d, n, grid:
                   write_sequences([1], rng, d["V"])),
    "seq": ("nodes", "sequence", "length, default 100",
            lambda rng, nprng, d, n, grid: write_sequences([n], rng, d["V"])),
    "seq-batch": ("nodes", "sequence", "-; sparse, unordered ids",
                  lambda rng, nprng, d, n, grid: write_sequences(
                      [1, 2, 100, 37, 1, 250], rng, d["V"], sparse_ids=True)),
}

DEFAULT_N = {"chain": 1001, "complete": 6, "random": 25, "vocab": 25,
             "bintree-nodes": 10, "bintree-nodes-leafwords": 10,
             "tree-chain": 1000, "nary": 200, "dag-chain": 1000,
             "dag-random": 300, "seq": 100}


def shape_format(shape):
    return SHAPES[shape][0]


def input_dims(model_name, overrides):
    """The dims an input generator needs (V, K, D) from a model or from -D."""
    if model_name:
        return zoo.resolve_dims(zoo.MODELS[model_name], overrides)
    d = {"V": 20000, "K": 8}
    d.update(overrides)
    if "D" not in d and "H" in d:
        d["D"] = d["H"]
    return d


def make_input(path, shape, dims, seed, n=None, grid=(12, 15), vocab_out=None):
    """Writes an input of a shape class; with vocab_out (class 'vocab') also the
    vocabulary file."""
    rng = random.Random(seed)
    nprng = np.random.default_rng(seed)
    n = DEFAULT_N.get(shape) if n is None else n
    kind = SHAPES[shape][1]
    if kind == "dag" and "D" not in dims:
        raise SystemExit("make_data.py: error: DAG inputs need -D D=... "
                         "(or --model dagrnn)")
    if shape == "vocab":
        if not vocab_out:
            raise SystemExit("make_data.py: error: --shape vocab needs --vocab-out")
        words = make_vocab(rng, dims["V"])
        with open(vocab_out, "w", encoding="utf-8") as f:
            f.write("\n".join(words) + "\n")
        text = _vocab_ptb(rng, nprng, dims, n, grid, vocab=words)
    else:
        text = SHAPES[shape][3](rng, nprng, dims, n, grid)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


# ---------------------------------------------------------------------------
# Command line.

def main(argv=None):
    ap = argparse.ArgumentParser(prog="make_data.py",
                                 description="seeded test data for the model zoo")
    what = ap.add_mutually_exclusive_group(required=True)
    what.add_argument("--weights", metavar="OUT.safetensors",
                      help="write weights for MODEL")
    what.add_argument("--input", metavar="OUT", help="write an input file")
    what.add_argument("--list-shapes", action="store_true")
    ap.add_argument("model", nargs="?", help="the model (weights; optional for "
                    "inputs: its dims supply V, K, D)")
    ap.add_argument("--model", dest="model_opt", help="same as the positional MODEL")
    ap.add_argument("-D", dest="dims", action="append", metavar="NAME=VALUE")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--scale", type=float, default=0.5,
                    help="weights uniform in [-scale, scale] (default 0.5)")
    ap.add_argument("--shape", choices=sorted(SHAPES))
    ap.add_argument("--n", type=int, help="size (meaning depends on the shape)")
    ap.add_argument("--grid", default="12x15", help="RxC for --shape grid")
    ap.add_argument("--vocab-out", help="vocabulary file to write (--shape vocab)")
    args = ap.parse_args(argv)
    if args.list_shapes:
        for name, (fmt, kind, size, _) in SHAPES.items():
            print(f"{name:24} {fmt:6} {kind:9} --n: {size}")
        return 0
    model = args.model or args.model_opt
    if model is not None and model not in zoo.MODELS:
        ap.error(f"unknown model '{model}'")
    try:
        dims = zoo.parse_dims(args.dims)
        if args.weights:
            if model is None:
                ap.error("--weights needs MODEL")
            tensors = make_weights(model, dims, args.seed, args.scale)
            write_safetensors(args.weights, tensors,
                              {"generator": "make_data.py", "model": model,
                               "seed": args.seed, "scale": args.scale})
            return 0
        if args.shape is None:
            ap.error("--input needs --shape")
        rows, _, cols = args.grid.partition("x")
        make_input(args.input, args.shape, input_dims(model, dims), args.seed,
                   args.n, (int(rows), int(cols)), args.vocab_out)
    except zoo.OracleError as e:
        print(e, file=sys.stderr)
        return e.code
    return 0


if __name__ == "__main__":
    sys.exit(main())
