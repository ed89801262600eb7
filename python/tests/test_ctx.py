#!/usr/bin/env python3
"""test_ctx.py — the Python API (python/ctx) against `ctx run` on the same
inputs: treelstm (binary trees, words at leaves) and childsum (n-ary trees, a
word on every node) built with `ctx build`, run from bracketed strings, node
lists (text and Python lists), arrays and parent arrays, CoNLL-U text through
a vocabulary, with a row per structure and per node (all_nodes), with the
seeded weights, a safetensors file (F64 ones noted as converted, as ctx run
notes them) and a dict of arrays; and the errors.

  test_ctx.py --ctx CTX --cc CC --src SOURCE_DIR --tmp DIR
"""
import argparse
import os
import shutil
import json
import struct
import subprocess
import sys
import unittest
import warnings

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


def ctx_run_note(model, dims, inp, weights):
    """The note ctx run prints for [weights] (its line on stderr with ': note: ')."""
    out = os.path.join(A.tmp, "ref.npy")
    p = sh([A.ctx, "run", model] + dims + ["--input", inp, "--output", out,
                                            "--weights", weights])
    notes = [l for l in p.stderr.splitlines() if ": note: " in l]
    assert len(notes) == 1, p.stderr
    return notes[0], np.load(out)


def write_f64(path, tensors):
    """[tensors] as an F64 safetensors file (a PyTorch model saved in double)."""
    meta, blobs, off = {}, [], 0
    for name, a in tensors.items():
        b = np.ascontiguousarray(a, dtype="<f8").tobytes()
        meta[name] = {"dtype": "F64", "shape": list(a.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    head = json.dumps(meta).encode()
    head += b" " * (-len(head) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(head)) + head + b"".join(blobs))


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

    def test_all_nodes(self):
        """all_nodes=True: a row per node in the input's order, ctx run --all-nodes'."""
        want = ctx_run(self.treelstm, ["-D", "H=16"], self.ptb, ["--all-nodes"])
        text = read(self.ptb)
        lines = [l for l in text.splitlines() if l.strip() and not l.startswith("#")]
        with self.ctx.load(os.path.join(self.lib_t, "libtreelstm.so")) as m:
            self.assertEqual(len(want), sum(l.count("(") for l in lines))
            self.close(m.run(text, all_nodes=True), want)
            self.close(m.run(lines, all_nodes=True), want)
            heads, words, sizes = [], [], []
            for l in lines:
                h, w = parse_ptb(l)
                heads, words, sizes = heads + h, words + w, sizes + [len(h)]
            self.close(m.run_heads(sizes, heads, words, all_nodes=True), want)
            self.assertEqual(m.run(text).shape, (len(lines), 16))  # back to the roots
        want = ctx_run(self.childsum, ["-D", "H=8"], self.nodes, ["--all-nodes"])
        m = self.ctx.load(os.path.join(self.lib_c, "libcs.so"))
        self.close(m.run(read(self.nodes), all_nodes=True), want)

    def test_conllu(self):
        """CoNLL-U through a vocabulary (a file or a list), its columns, --unk."""
        data = os.path.join(A.src, "lang-tests", "run", "data")
        conllu, vocab = os.path.join(data, "deps.conllu"), os.path.join(data, "deps_vocab.txt")
        words = [w.strip() for w in read(vocab).splitlines()]
        m = self.ctx.load(os.path.join(self.lib_c, "libcs.so"))
        for column, extra in (("FORM", []), ("LEMMA", ["--conllu-column", "LEMMA"])):
            for all_nodes in (False, True):
                want = ctx_run(self.childsum, ["-D", "H=8"], conllu,
                               ["--vocab", vocab] + extra + (["--all-nodes"] if all_nodes else []))
                self.assertEqual(len(want), 8 if all_nodes else 2)
                self.close(m.run_conllu(read(conllu), vocab=vocab, column=column,
                                        all_nodes=all_nodes), want)
                self.close(m.run_conllu(read(conllu), vocab=words, column=column,
                                        all_nodes=all_nodes), want)
        unk = os.path.join(data, "deps_unk.conllu")
        want = ctx_run(self.childsum, ["-D", "H=8"], unk, ["--vocab", vocab, "--unk", "cat"])
        self.close(m.run_conllu(read(unk), vocab=words, unk="cat"), want)
        E = self.ctx.CtxError
        with self.assertRaises(E) as c:
            m.run_conllu(read(unk), vocab=words)
        self.assertIn("conllu:", c.exception.message)
        self.assertIn("'kitten'", c.exception.message)
        with self.assertRaises(E) as c:
            m.run_conllu(read(conllu), vocab=words, column="DEPREL")
        self.assertEqual(c.exception.code, 4)
        with self.assertRaises(E) as c:  # words without a vocabulary
            m.run_conllu(read(conllu))
        self.assertIn("conllu:", c.exception.message)
        with self.assertRaises(E) as c:
            m.run_conllu(read(unk), vocab=words, unk="kitten")
        self.assertIn("'kitten'", c.exception.message)
        # ids in the FORM column need no vocabulary; the model still runs
        ids = "\n".join("\t".join([str(i), str(w), "_", "_", "_", "_", str(h), "_", "_", "_"])
                        for i, w, h in ((1, 4, 2), (2, 7, 0), (3, 1, 2))) + "\n\n"
        self.assertEqual(m.run_conllu(ids).shape, (1, 8))
        self.assertEqual(m.run_conllu(ids, all_nodes=True).shape, (3, 8))

    def test_converted_weights_note(self):
        """F64 tensors: the library notes the conversion as ctx run does."""
        rng = np.random.default_rng(3)
        shapes = {"Emb": (20000, 48), "U_iou": (48, 16), "b_iou": (48,), "U_f": (16, 16),
                  "b_f": (16,)}
        path = os.path.join(A.tmp, "w64.safetensors")
        write_f64(path, {k: rng.uniform(-0.3, 0.3, s) for k, s in shapes.items()})
        note, want = ctx_run_note(self.treelstm, ["-D", "H=16"], self.ptb, path)
        self.assertEqual(note, f"{path}: note: 5 tensors converted to float32 from F64")
        lib = os.path.join(self.lib_t, "libtreelstm.so")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            m = self.ctx.load(lib, weights=path)
        self.assertEqual(m.note, note)
        self.assertEqual([str(w.message) for w in caught], [note])
        self.close(m.run(read(self.ptb)), want)
        self.assertEqual(self.ctx.load(lib).note, "")  # seeded: nothing converted

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
