#!/usr/bin/env python3
"""make_samples.py — writes the bundled samples `ctx run` uses without --input.

    python3 examples/data/make_samples.py      # rewrites the three files here

Seeded (random.Random(2024)), so the files are reproducible; `ctx run --help`
says which model gets which sample. Word ids lie in [0, 20000), the zoo's
default vocabulary size.
  sst_sample.ptb     8 SST-style bracketed binary trees of 3..20 words, labels 0..4
  tree_sample.nodes  4 trees of 6..14 nodes, up to 3 children, a word on every node
  seq_sample.nodes   4 sequences of 5..12 words
"""
import os
import random

HERE = os.path.dirname(os.path.abspath(__file__))
V = 20000


def ptb_tree(rng, words):
    """A random binary bracketing of [words] (a list of ids), SST labels."""
    if len(words) == 1:
        return "(%d %d)" % (rng.randrange(5), words[0])
    cut = rng.randrange(1, len(words))
    return "(%d %s %s)" % (rng.randrange(5), ptb_tree(rng, words[:cut]),
                           ptb_tree(rng, words[cut:]))


def nary_tree(rng, n):
    """Node lines of a random tree of n nodes, at most 3 children each."""
    children = {0: []}
    for i in range(1, n):
        parent = rng.choice([p for p in children if len(children[p]) < 3])
        children[parent].append(i)
        children[i] = []
    lines = []
    for i in range(n):
        deps = " : " + " ".join(map(str, children[i])) if children[i] else ""
        lines.append("%d %d%s" % (i, rng.randrange(V), deps))
    return lines


def main():
    rng = random.Random(2024)
    with open(os.path.join(HERE, "sst_sample.ptb"), "w") as f:
        f.write("# ctx run's bundled sample: SST-style binary trees, word ids < 20000\n")
        for _ in range(8):
            words = [rng.randrange(V) for _ in range(rng.randint(3, 20))]
            f.write(ptb_tree(rng, words) + "\n")
    with open(os.path.join(HERE, "tree_sample.nodes"), "w") as f:
        f.write("# ctx run's bundled sample: trees of up to 3 children, a word on "
                "every node\n")
        for _ in range(4):
            f.write("tree\n" + "\n".join(nary_tree(rng, rng.randint(6, 14))) + "\n")
    with open(os.path.join(HERE, "seq_sample.nodes"), "w") as f:
        f.write("# ctx run's bundled sample: sequences of word ids < 20000\n")
        for _ in range(4):
            f.write("sequence\n")
            for i in range(rng.randint(5, 12)):
                f.write("%d %d\n" % (i, rng.randrange(V)))


if __name__ == "__main__":
    main()
