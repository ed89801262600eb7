#!/usr/bin/python3
"""gen_sst.py — seeded benchmark inputs shaped like the Stanford Sentiment Treebank.

Writes, into OUTDIR (formats: docs/formats.md):
  sst.ptb          N random binary trees as PTB lines: sentence lengths drawn from a
                   clipped gamma (mean ~19 words, 2..56), split so that a node with m
                   leaves either peels off one word (right-branching, as English
                   parses mostly are; p = 0.5) or splits uniformly; heights ~10 on
                   average, up to ~30 — like SST. Word ids < VOCAB (default 20000).
  sst_v256.ptb     the same trees with word ids mod 256 (mvrnn runs with V = 256
                   so that its [V, H, H] word matrices stay at 4-16 MiB)
  bal.ptb          N complete binary trees of 16 leaves (31 nodes, height 4), random
                   words: the balanced shape, whose levels are wide
  sized_L.ptb      with --sizes L,..: N SST-like trees of exactly L leaves each
  dep.nodes        N dependency-like n-ary trees (childsum): one node per word, a
                   word on every node, at most 8 children, parents mostly nearby
  grid_D.nodes     N 10x10 grid DAGs (dagrnn), D features per node for each D of
                   --features (a list), each a multiple of 1/1024 in [-1, 1) (exact
                   in float32 and float64)
  seq.nodes        N sequences of 100 word ids (seqlstm)
Usage: gen_sst.py OUTDIR [--count N] [--seed S] [--features D,..] [--sizes L,..] [--stats]
"""
import argparse
import os
import re
import sys

import numpy as np


def sentence_lengths(rng, n):
    raw = rng.gamma(shape=3.2, scale=19.0 / 3.2, size=n)
    return np.clip(np.rint(raw), 2, 56).astype(int)


def binary_tree(rng, nleaves, vocab):
    """A PTB line for a random binary tree with [nleaves] leaves, and its height."""
    # Iterative: a stack of (leaf count, depth) tasks; output tokens in pre-order.
    out = []
    height = 0
    stack = [("node", nleaves, 0)]
    while stack:
        kind, m, depth = stack.pop()
        if kind == "close":
            out.append(")")
            continue
        height = max(height, depth)
        label = int(rng.integers(0, 5))
        if m == 1:
            out.append("(%d %d)" % (label, int(rng.integers(0, vocab))))
            continue
        if rng.random() < 0.55:
            left = 1 if rng.random() < 0.8 else m - 1
        else:
            left = 1 + int(rng.integers(0, m - 1))
        out.append("(%d" % label)
        stack.append(("close", 0, 0))
        stack.append(("node", m - left, depth + 1))
        stack.append(("node", left, depth + 1))
    text = ""
    for tok in out:
        if tok == ")":
            text += ")"
        else:
            text += (" " if text and not text.endswith("(") else "") + tok
    return text, height


def complete_tree(rng, height, vocab):
    """A PTB line for a complete binary tree of [height] (2^height leaves)."""
    if height == 0:
        return "(%d %d)" % (int(rng.integers(0, 5)), int(rng.integers(0, vocab)))
    return "(%d %s %s)" % (int(rng.integers(0, 5)), complete_tree(rng, height - 1, vocab),
                           complete_tree(rng, height - 1, vocab))


def dep_tree(rng, n, arity=8):
    """Parents for nodes 1..n-1 of a dependency-like tree (node 0 the root)."""
    kids = [0] * n
    parent = [-1] * n
    for i in range(1, n):
        while True:
            # mostly attach to a recent node, sometimes anywhere before
            if rng.random() < 0.7:
                p = i - 1 - int(min(rng.geometric(0.5) - 1, i - 1))
            else:
                p = int(rng.integers(0, i))
            if kids[p] < arity:
                break
        parent[i] = p
        kids[p] += 1
    return parent


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("outdir")
    ap.add_argument("--count", type=int, default=100)
    ap.add_argument("--seed", type=int, default=2021)
    ap.add_argument("--vocab", type=int, default=20000)
    ap.add_argument("--features", default="256")
    ap.add_argument("--sizes", default="")
    ap.add_argument("--grid", type=int, default=10)
    ap.add_argument("--seqlen", type=int, default=100)
    ap.add_argument("--stats", action="store_true")
    a = ap.parse_args()
    os.makedirs(a.outdir, exist_ok=True)
    rng = np.random.default_rng(a.seed)

    lens = sentence_lengths(rng, a.count)
    lines, heights = [], []
    for m in lens:
        text, h = binary_tree(rng, int(m), a.vocab)
        lines.append(text)
        heights.append(h)
    with open(os.path.join(a.outdir, "sst.ptb"), "w") as f:
        f.write("\n".join(lines) + "\n")
    # same trees, word ids mod 256 (for mvrnn at V = 256)
    small = [re.sub(r"\((\d+) (\d+)\)", lambda mo: "(%s %d)" % (mo.group(1), int(mo.group(2)) % 256), t)
             for t in lines]
    with open(os.path.join(a.outdir, "sst_v256.ptb"), "w") as f:
        f.write("\n".join(small) + "\n")
    with open(os.path.join(a.outdir, "bal.ptb"), "w") as f:
        f.write("".join(complete_tree(rng, 4, a.vocab) + "\n" for _ in range(a.count)))

    with open(os.path.join(a.outdir, "dep.nodes"), "w") as f:
        for m in sentence_lengths(rng, a.count):
            parent = dep_tree(rng, int(m))
            kids = [[] for _ in range(m)]
            for i in range(1, m):
                kids[parent[i]].append(i)
            f.write("tree\n")
            for i in range(m):
                dep = (" : " + " ".join(map(str, kids[i]))) if kids[i] else ""
                f.write("%d %d%s\n" % (i, int(rng.integers(0, a.vocab)), dep))

    g = a.grid
    for d in [int(v) for v in a.features.split(",")]:
        with open(os.path.join(a.outdir, "grid_%d.nodes" % d), "w") as f:
            for _ in range(a.count):
                f.write("dag\n")
                x = rng.integers(-1024, 1024, size=(g * g, d)) / 1024.0
                for r in range(g):
                    for c in range(g):
                        i = r * g + c
                        preds = ([str(i - g)] if r else []) + ([str(i - 1)] if c else [])
                        vals = " ".join(repr(float(v)) for v in x[i])
                        f.write("%d %s%s\n" % (i, vals, (" : " + " ".join(preds)) if preds else ""))

    with open(os.path.join(a.outdir, "seq.nodes"), "w") as f:
        for _ in range(a.count):
            f.write("sequence\n")
            words = rng.integers(0, a.vocab, size=a.seqlen)
            f.write("".join("%d %d\n" % (i, w) for i, w in enumerate(words)))

    # after the others, so that adding sizes leaves every other file as it was
    for m in [int(v) for v in a.sizes.split(",") if v]:
        with open(os.path.join(a.outdir, "sized_%d.ptb" % m), "w") as f:
            f.write("".join(binary_tree(rng, m, a.vocab)[0] + "\n" for _ in range(a.count)))

    if a.stats:
        print("sst.ptb: %d trees, words mean %.1f max %d, nodes mean %.1f, height mean %.1f max %d"
              % (a.count, lens.mean(), lens.max(), (2 * lens - 1).mean(), np.mean(heights), max(heights)),
              file=sys.stderr)


if __name__ == "__main__":
    main()
