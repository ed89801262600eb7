#!/usr/bin/env python3
"""test_ctx.py — the Python API (python/ctx) against `ctx run` on the same
inputs: treelstm (binary trees, words at leaves) and childsum (n-ary trees, a
word on every node) built with `ctx build`, run from bracketed strings, node
lists (text and Python lists), arrays and parent arrays, with the seeded
weights, a safetensors file and a dict of arrays; and the errors.

  test_ctx.py --ctx CTX --cc CC --src SOURCE_DIR --tmp DIR
"""
import argparse
import os
import shutil
import subprocess
import sys
import unittest

import numpy as np

A = None  # the command line


def sh(cmd, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if p.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)}: exit {p.returncode}\n{p.stdout}{p.stderr}")
    return p


def ctx_run(model, dims, inp, extra=()):
    """ctx run's outputs (the JIT, float32) as an array."""
    out = os.path.join(A.tmp, "ref.npy")
    sh([A.ctx, "run", model] + dims + ["--input", inp, "--output", out] + list(extra))
    return np.load(out)


def read(path):
    with open(path) as f:
        return f.read()


def parse_ptb(line):
    """A bracketed tree as (heads, words): pre-order, words at the leaves."""
    heads, words, stack, toks = [], [], [], line.replace("(", " ( ").replace(")", " ) ").split()
    i = 0
    while i < len(toks):
        t = toks[i]
        if t == "(":
            heads.append(stack[-1] if stack else -1)
            words.append(0.0)
            stack.append(len(heads) - 1)
            i += 2  # the label
            continue
        if t == ")":
            stack.pop()
        else:
            words[stack[-1]] = float(t)
        i += 1
    return heads, words


class PythonApi(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        sys.path.insert(0, os.path.join(A.src, "python"))
        global ctx
        import ctx  # noqa: F401 (the package under test)
        cls.ctx = ctx
        env = dict(os.environ, CC=A.cc)
        cls.treelstm = os.path.join(A.src, "examples", "treelstm.ctx")
        cls.childsum = os.path.join(A.src, "examples", "childsum.ctx")
        cls.lib_t = os.path.join(A.tmp, "t")
        cls.lib_c = os.path.join(A.tmp, "c")
        sh([A.ctx, "build", cls.treelstm, "-D", "H=16", "-o", cls.lib_t], env=env)
        sh([A.ctx, "build", cls.childsum, "-D", "H=8", "--name", "cs", "-o", cls.lib_c], env=env)
        cls.ptb = os.path.join(A.src, "examples", "data", "sst_sample.ptb")
        cls.nodes = os.path.join(A.src, "examples", "data", "tree_sample.nodes")

    def close(self, got, want):
        self.assertEqual(got.dtype, np.float32)
        self.assertEqual(got.shape, want.shape)
        self.assertGreater(np.abs(want).max(), 1e-3)
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)

    def test_treelstm_text_strings_arrays(self):
        want = ctx_run(self.treelstm, ["-D", "H=16"], self.ptb)
        text = read(self.ptb)
        lines = [l for l in text.splitlines() if l.strip() and not l.startswith("#")]
        with self.ctx.load(os.path.join(self.lib_t, "libtreelstm.so")) as m:
            self.assertEqual((m.name, m.kind, m.num_values, m.output_shape),
                             ("treelstm", "tree", 1, (16,)))
            self.close(m.run(text), want)
            self.close(m.run(lines), want)
            heads, words, sizes = [], [], []
            for l in lines:
                h, w = parse_ptb(l)
                heads += h
                words += w
                sizes.append(len(h))
            got_h = m.run_heads(sizes, heads, words)
            self.close(got_h, want)
            # dependency lists from the parent arrays: children in index order
            num_deps, deps, base = [], [], 0
            for n in sizes:
                hs = heads[base:base + n]
                for i in range(n):
                    kids = [j for j in range(n) if hs[j] == i]
                    num_deps.append(len(kids))
                    deps += kids
                base += n
            got_a = m.run_arrays(np.array(sizes), np.array(num_deps), np.array(deps),
                                 np.array(words))
            np.testing.assert_array_equal(got_a, got_h)

    def test_weights_file_and_dict(self):
        rng = np.random.default_rng(5)
        header = read(os.path.join(self.lib_t, "treelstm.h"))
        shapes = {"Emb": (20000, 48), "U_iou": (48, 16), "b_iou": (48,), "U_f": (16, 16),
                  "b_f": (16,)}
        for name in shapes:
            self.assertIn(f" *   {name} [", header)
        w = {k: rng.uniform(-0.3, 0.3, s) for k, s in shapes.items()}  # float64
        path = os.path.join(A.tmp, "w.safetensors")
        self.ctx.write_safetensors(path, w)
        back = self.ctx.read_safetensors(path)
        np.testing.assert_array_equal(back["U_f"], w["U_f"].astype(np.float32))
        want = ctx_run(self.treelstm, ["-D", "H=16"], self.ptb, ["--weights", path])
        lib = os.path.join(self.lib_t, "libtreelstm.so")
        self.close(self.ctx.load(lib, weights=path).run(read(self.ptb)), want)
        self.close(self.ctx.load(lib, weights=w, threads=2).run(read(self.ptb)), want)
        seeded = ctx_run(self.treelstm, ["-D", "H=16"], self.ptb, ["--seed", "9"])
        self.close(self.ctx.load(lib, seed=9).run(read(self.ptb)), seeded)

    def test_childsum_node_lists(self):
        want = ctx_run(self.childsum, ["-D", "H=8"], self.nodes)
        text = read(self.nodes)
        m = self.ctx.load(os.path.join(self.lib_c, "libcs.so"))
        self.assertEqual((m.name, m.kind, m.output_shape), ("cs", "tree", (8,)))
        self.close(m.run(text), want)
        # the same trees as Python lists: (word, [child indices]) per node
        trees, cur, index = [], None, {}
        for line in text.splitlines():
            line = line.split("#")[0].strip()
            if line == "tree":
                cur, index = [], {}
                trees.append((cur, index))
            elif line:
                left, _, right = line.partition(":")
                nid, word = left.split()
                index[nid] = len(cur)
                cur.append((float(word), right.split()))
        structures = [[(w, [idx[d] for d in ds]) for w, ds in nodes] for nodes, idx in trees]
        self.close(m.run(structures), want)
        m.close()

    def test_sequences(self):
        seqlstm = os.path.join(A.src, "examples", "seqlstm.ctx")
        out = os.path.join(A.tmp, "s")
        sh([A.ctx, "build", seqlstm, "-D", "H=8", "-o", out], env=dict(os.environ, CC=A.cc))
        sample = os.path.join(A.src, "examples", "data", "seq_sample.nodes")
        want = ctx_run(seqlstm, ["-D", "H=8"], sample)
        m = self.ctx.load(os.path.join(out, "libseqlstm.so"))
        self.assertEqual(m.kind, "sequence")
        self.close(m.run(read(sample)), want)
        sizes, words = [], []
        for line in read(sample).splitlines():
            line = line.split("#")[0].split()
            if line == ["sequence"]:
                sizes.append(0)
            elif line:
                sizes[-1] += 1
                words.append(float(line[1]))
        self.close(m.run_arrays(sizes, values=words), want)
        with self.assertRaises(self.ctx.CtxError) as c:
            m.run_heads(sizes, [-1] * sum(sizes), words)
        self.assertIn("reads 'sequence' structures", c.exception.message)

    def test_errors(self):
        E = self.ctx.CtxError
        lib = os.path.join(self.lib_t, "libtreelstm.so")
        m = self.ctx.load(lib)
        with self.assertRaises(E) as c:
            m.run("(1 (2 3) (2 x))")
        self.assertEqual(c.exception.code, 2)
        self.assertIn("ptb:1: error: structure 1, node 2: word 'x' is not an integer id",
                      c.exception.message)
        with self.assertRaises(E) as c:
            m.run_heads([3], [-1, -1, 0], [0, 1, 2])
        self.assertEqual(c.exception.message,
                         "arrays: error: structure 1: several roots, nodes 0 and 1")
        with self.assertRaises(E) as c:
            m.run_arrays([2], [1, 0], [5], [0, 1])
        self.assertIn("dependency 5 outside the structure", c.exception.message)
        with self.assertRaises(E) as c:
            m.run_heads([2], [-1, 0], [0])
        self.assertIn("1 values for 2 nodes", c.exception.message)
        with self.assertRaises(E) as c:
            m.run_heads([2], [-1, 0], [0, 30000])
        self.assertIn("value 1 is word id 30000, outside [0, 20000)", c.exception.message)
        self.assertEqual(m.run("(1 (2 3) (2 4))").shape, (1, 16))  # still usable
        with self.assertRaises(E) as c:
            self.ctx.load(lib, weights={"Emb": np.zeros((20000, 48))})
        self.assertIn("weights: error: missing tensor", c.exception.message)
        with self.assertRaises(E) as c:
            self.ctx.load(lib, weights=os.path.join(A.tmp, "nope.safetensors"))
        self.assertEqual(c.exception.code, 1)
        with self.assertRaises(E):
            self.ctx.load(os.path.join(A.tmp, "weird.so"))


def main():
    global A
    ap = argparse.ArgumentParser()
    for k in ("ctx", "cc", "src", "tmp"):
        ap.add_argument("--" + k, required=True)
    A, rest = ap.parse_known_args()
    shutil.rmtree(A.tmp, ignore_errors=True)
    os.makedirs(A.tmp)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


if __name__ == "__main__":
    main()
