#!/usr/bin/python3
"""Self-tests of the oracle (zoo.py), the generators (make_data.py) and the
differential harness (differential.py).

    /usr/bin/python3 -m unittest discover -s lang-tests/oracle -p 'test_*.py'

Each model is checked against a second, deliberately naive implementation: plain
Python floats and loops, written straight from the equations in docs/models.md,
on tiny hand-built inputs. The readers are checked on the examples of
docs/formats.md and on malformed inputs, the safetensors reader on files written
here, the .npy output through numpy.load, and the 100,000-node chain.
"""

import math
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import differential  # noqa: E402
import make_data  # noqa: E402
import zoo  # noqa: E402

PYTHON = "/usr/bin/python3"


# ---------------------------------------------------------------------------
# The naive second implementation: lists of Python floats.

def mat(a):
    return np.asarray(a, dtype=np.float64).tolist()


def matvec(M, x):
    return [sum(M[i][k] * x[k] for k in range(len(x))) for i in range(len(M))]


def add(*vs):
    return [sum(parts) for parts in zip(*vs)]


def mul(a, b):
    return [p * q for p, q in zip(a, b)]


def sig(v):
    return [1.0 / (1.0 + math.exp(-t)) for t in v]


def tnh(v):
    return [math.tanh(t) for t in v]


def naive_treefc(w, word):
    Emb, W, b = w["Emb"], w["W"], w["b"]

    def leaf(x):
        return list(Emb[x])

    def node(h0, h1):
        return [max(0.0, t) for t in add(matvec(W, h0 + h1), b)]
    return leaf, node


def naive_treegru(w, H):
    def leaf(x):
        return list(w["Emb"][x])

    def node(h0, h1):
        s = add(h0, h1)
        g = sig(add(matvec(w["U_rz"], s), w["b_rz"]))
        r, z = g[:H], g[H:]
        ht = tnh(add(matvec(w["U_h"], mul(r, s)), w["b_h"]))
        return [z[i] * s[i] + (1 - z[i]) * ht[i] for i in range(H)]
    return leaf, node


def naive_treelstm(w, H):
    def finish(g, extra):
        i, o, u = sig(g[:H]), sig(g[H:2 * H]), tnh(g[2 * H:])
        c = add(mul(i, u), extra)
        return (mul(o, tnh(c)), c)

    def leaf(x):
        return finish(add(w["Emb"][x], w["b_iou"]), [0.0] * H)

    def node(a, b):
        (h0, c0), (h1, c1) = a, b
        g = add(matvec(w["U_iou"], add(h0, h1)), w["b_iou"])
        f0 = sig(add(matvec(w["U_f"], h0), w["b_f"]))
        f1 = sig(add(matvec(w["U_f"], h1), w["b_f"]))
        return finish(g, add(mul(f0, c0), mul(f1, c1)))
    return leaf, node


def naive_mvrnn(w, H):
    def leaf(x):
        return (list(w["Emb"][x]), [list(r) for r in w["EmbM"][x]])

    def node(left, right):
        (a, A), (b, B) = left, right
        p = tnh(add(matvec(w["W"], matvec(B, a) + matvec(A, b)), w["b"]))
        WM = w["WM"]
        P = [[sum(WM[i][k] * A[k][j] for k in range(H)) +
              sum(WM[i][H + k] * B[k][j] for k in range(H)) for j in range(H)]
             for i in range(H)]
        return (p, P)
    return leaf, node


def naive_childsum(w, H, word, kids):
    x = w["Emb"][word]
    s = add([0.0] * H, *[h for h, _ in kids]) if kids else [0.0] * H
    g = add(matvec(w["W_iou"], x), matvec(w["U_iou"], s), w["b_iou"])
    i, o, u = sig(g[:H]), sig(g[H:2 * H]), tnh(g[2 * H:])
    c = mul(i, u)
    for h_k, c_k in kids:
        f_k = sig(add(matvec(w["W_f"], x), matvec(w["U_f"], h_k), w["b_f"]))
        c = add(c, mul(f_k, c_k))
    return (mul(o, tnh(c)), c)


def naive_dagrnn(w, x, preds):
    acc = matvec(w["W"], x)
    for h in preds:
        acc = add(acc, matvec(w["U"], h))
    return tnh(add(acc, w["b"]))


def naive_seqlstm(w, H, words):
    h, c, hs = [0.0] * H, [0.0] * H, []
    for word in words:
        g = add(w["Emb"][word], matvec(w["U"], h), w["b"])
        i, f = sig(g[:H]), sig(g[H:2 * H])
        u, o = tnh(g[2 * H:3 * H]), sig(g[3 * H:])
        c = add(mul(f, c), mul(i, u))
        h = mul(o, tnh(c))
        hs.append(h)
    return hs


# ---------------------------------------------------------------------------

class TempDir(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="oracle-test-")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def path(self, name):
        return os.path.join(self.dir, name)

    def write(self, name, text):
        with open(self.path(name), "w", encoding="utf-8") as f:
            f.write(text)
        return self.path(name)

    def weights(self, model, dims, seed=5, scale=0.5):
        """Writes weights; returns the path and the tensors as Python lists."""
        tensors = make_data.make_weights(model, dims, seed, scale)
        path = self.path(f"{model}.safetensors")
        make_data.write_safetensors(path, tensors, {"seed": seed})
        return path, {name: mat(a) for name, a in tensors}


class ModelsAgainstNaive(TempDir):
    """Oracle vs the naive implementation on hand-built inputs."""

    # (1 (2 3) (4 (5 1) (6 4))): pre-order 0 root, 1 leaf w3, 2 internal,
    # 3 leaf w1, 4 leaf w4.
    TREE = "(1 (2 3) (4 (5 1) (6 4)))\n(0 2)\n"

    def binary_case(self, model, naive, H=3, V=5):
        dims = {"H": H, "V": V}
        wpath, w = self.weights(model, dims)
        inp = self.write("t.ptb", self.TREE)
        leaf, node = naive(w)
        n3, n4 = leaf(1), leaf(4)
        n2 = node(n3, n4)
        n1 = leaf(3)
        n0 = node(n1, n2)
        single = leaf(2)
        pick = (lambda s: s) if model in ("treefc", "treegru") else (lambda s: s[0])
        got = zoo.evaluate(model, inp, "ptb", wpath, dims)
        want = np.array([pick(n0), pick(single)])
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
        got_all = zoo.evaluate(model, inp, "ptb", wpath, dims, all_nodes=True)
        want_all = np.array([pick(s) for s in (n0, n1, n2, n3, n4, single)])
        np.testing.assert_allclose(got_all, want_all, rtol=1e-12, atol=1e-14)
        self.assertEqual(got.dtype, np.float64)

    def test_treefc(self):
        self.binary_case("treefc", lambda w: naive_treefc(w, None))

    def test_treegru(self):
        self.binary_case("treegru", lambda w: naive_treegru(w, 3))

    def test_treelstm(self):
        self.binary_case("treelstm", lambda w: naive_treelstm(w, 3))

    def test_mvrnn(self):
        self.binary_case("mvrnn", lambda w: naive_mvrnn(w, 3))

    def test_mvrnn_p_matrix_feeds_the_parent(self):
        # A depth-3 tree, so the parent's P of an internal child is used.
        dims = {"H": 2, "V": 4}
        wpath, w = self.weights("mvrnn", dims, seed=11)
        inp = self.write("t.ptb", "(0 (0 (0 (0 1) (0 2)) (0 3)) (0 0))\n")
        leaf, node = naive_mvrnn(w, 2)
        root = node(node(node(leaf(1), leaf(2)), leaf(3)), leaf(0))
        got = zoo.evaluate("mvrnn", inp, "ptb", wpath, dims)
        np.testing.assert_allclose(got, [root[0]], rtol=1e-12, atol=1e-14)

    def test_childsum(self):
        # root 10 (w1) with children 20 (w2, one child 40 (w4)) and 30 (w0);
        # listed out of order, ids sparse.
        dims = {"H": 3, "V": 5, "K": 3}
        wpath, w = self.weights("childsum", dims)
        inp = self.write("t.nodes", "tree\n40 4\n10 1 : 20 30\n30 0\n20 2 : 40\n")
        n40 = naive_childsum(w, 3, 4, [])
        n30 = naive_childsum(w, 3, 0, [])
        n20 = naive_childsum(w, 3, 2, [n40])
        n10 = naive_childsum(w, 3, 1, [n20, n30])
        got = zoo.evaluate("childsum", inp, "nodes", wpath, dims)
        np.testing.assert_allclose(got, [n10[0]], rtol=1e-12, atol=1e-14)
        got_all = zoo.evaluate("childsum", inp, "nodes", wpath, dims, all_nodes=True)
        np.testing.assert_allclose(got_all, [n40[0], n10[0], n30[0], n20[0]],
                                   rtol=1e-12, atol=1e-14)

    def test_childsum_three_children(self):
        dims = {"H": 2, "V": 6, "K": 3}
        wpath, w = self.weights("childsum", dims, seed=9)
        inp = self.write("t.nodes", "tree\n0 5 : 1 2 3\n1 4\n2 3\n3 2\n")
        kids = [naive_childsum(w, 2, x, []) for x in (4, 3, 2)]
        root = naive_childsum(w, 2, 5, kids)
        got = zoo.evaluate("childsum", inp, "nodes", wpath, dims)
        np.testing.assert_allclose(got, [root[0]], rtol=1e-12, atol=1e-14)

    def test_dagrnn_grid_from_formats_md(self):
        dims = {"H": 2, "D": 3}
        wpath, w = self.weights("dagrnn", dims)
        inp = self.write("g.nodes", FORMATS_DAG)
        f32 = lambda v: [float(np.float32(t)) for t in v]  # noqa: E731
        x = [f32([0.1, 0.2, 0.3]), f32([0.4, 0.5, 0.6]), f32([0.7, 0.8, 0.9]),
             f32([1.0, 1.1, 1.2])]
        h0 = naive_dagrnn(w, x[0], [])
        h1 = naive_dagrnn(w, x[1], [h0])
        h2 = naive_dagrnn(w, x[2], [h0])
        h3 = naive_dagrnn(w, x[3], [h1, h2])
        got = zoo.evaluate("dagrnn", inp, "nodes", wpath, dims)
        np.testing.assert_allclose(got, [h3], rtol=1e-12, atol=1e-14)
        got_all = zoo.evaluate("dagrnn", inp, "nodes", wpath, dims, all_nodes=True)
        np.testing.assert_allclose(got_all, [h0, h1, h2, h3], rtol=1e-12,
                                   atol=1e-14)

    def test_dagrnn_sinks_in_listing_order(self):
        # 5 <- 7, 5 <- 3, 7 <- 3: sinks are 5 (listed first) and 9 (alone);
        # D differs from H.
        dims = {"H": 3, "D": 2}
        wpath, w = self.weights("dagrnn", dims)
        inp = self.write("g.nodes", "dag\n5 0.5 -1 : 7 3\n9 2 0.25\n"
                         "7 -0.75 1.5 : 3\n3 1 1\n")
        h3 = naive_dagrnn(w, [1, 1], [])
        h7 = naive_dagrnn(w, [-0.75, 1.5], [h3])
        h5 = naive_dagrnn(w, [0.5, -1], [h7, h3])
        h9 = naive_dagrnn(w, [2, 0.25], [])
        got = zoo.evaluate("dagrnn", inp, "nodes", wpath, dims)
        np.testing.assert_allclose(got, [h5, h9], rtol=1e-12, atol=1e-14)

    def test_seqlstm(self):
        dims = {"H": 3, "V": 100}
        wpath, w = self.weights("seqlstm", dims)
        inp = self.write("s.nodes", FORMATS_SEQ + "sequence\n7 9\n")
        hs = naive_seqlstm(w, 3, [3, 14, 15, 92])
        one = naive_seqlstm(w, 3, [9])
        got = zoo.evaluate("seqlstm", inp, "nodes", wpath, dims)
        np.testing.assert_allclose(got, [hs[-1], one[-1]], rtol=1e-12, atol=1e-14)
        got_all = zoo.evaluate("seqlstm", inp, "nodes", wpath, dims, all_nodes=True)
        np.testing.assert_allclose(got_all, hs + one, rtol=1e-12, atol=1e-14)

    def test_vocab(self):
        dims = {"H": 2, "V": 4}
        wpath, w = self.weights("treefc", dims)
        voc = self.write("v.txt", "the\ncat\n's\n-LRB-\n")
        inp = self.write("t.ptb", "(3 (2 cat) (4 's))\n")
        leaf, node = naive_treefc(w, None)
        got = zoo.evaluate("treefc", inp, "ptb", wpath, dims, vocab_path=voc)
        np.testing.assert_allclose(got, [node(leaf(1), leaf(2))], rtol=1e-12)

    def test_longdouble_agrees(self):
        dims = {"H": 4, "V": 50}
        wpath, _ = self.weights("treelstm", dims)
        inp = self.path("r.ptb")
        make_data.make_input(inp, "random", dims, seed=3, n=5)
        a = zoo.evaluate("treelstm", inp, "ptb", wpath, dims)
        b = zoo.evaluate("treelstm", inp, "ptb", wpath, dims, dtype=np.longdouble)
        self.assertEqual(b.dtype, np.longdouble)
        np.testing.assert_allclose(a, b.astype(np.float64), rtol=1e-13, atol=1e-15)


FORMATS_PTB = "(3 (2 17) (4 (2 5) (3 901)))\n"
FORMATS_TREE = """# a tree with a word on every node (childsum style)
tree
0 17 : 1 2 3
1 5
2 901 : 4
3 6
4 7
"""
FORMATS_DAG = """# a 2x2 grid DAG with a 3-float feature vector per node
dag
0 0.1 0.2 0.3
1 0.4 0.5 0.6 : 0
2 0.7 0.8 0.9 : 0
3 1.0 1.1 1.2 : 1 2
"""
FORMATS_SEQ = """# a sequence of four word ids
sequence
0 3
1 14
2 15
3 92
"""


class Readers(TempDir):
    """The readers on the examples of docs/formats.md."""

    def test_ptb_example(self):
        (st,) = zoo.read_ptb(self.write("a.ptb", "# comment\n\n" + FORMATS_PTB))
        self.assertEqual(st.kind, "tree")
        self.assertEqual([n.values for n in st.nodes],
                         [[], ["17"], [], ["5"], ["901"]])
        self.assertEqual([n.deps for n in st.nodes], [[1, 2], [], [3, 4], [], []])
        self.assertEqual(st.nodes[0].line, 3)

    def test_ptb_spacing_and_labels(self):
        sts = zoo.read_ptb(self.write("a.ptb", "  ( ROOT(NP 17 )(x-y 5))\n(0 3)\n"))
        self.assertEqual(len(sts), 2)
        self.assertEqual([n.values for n in sts[0].nodes], [[], ["17"], ["5"]])

    def test_node_list_tree_example(self):
        (st,) = zoo.read_nodes(self.write("t.nodes", FORMATS_TREE))
        self.assertEqual(st.kind, "tree")
        self.assertEqual([n.name for n in st.nodes], ["0", "1", "2", "3", "4"])
        self.assertEqual([n.values for n in st.nodes],
                         [["17"], ["5"], ["901"], ["6"], ["7"]])
        self.assertEqual([n.deps for n in st.nodes], [[1, 2, 3], [], [4], [], []])

    def test_node_list_dag_and_sequence_examples(self):
        (dag,) = zoo.read_nodes(self.write("d.nodes", FORMATS_DAG))
        self.assertEqual([n.deps for n in dag.nodes], [[], [0], [0], [1, 2]])
        self.assertEqual(dag.nodes[3].values, ["1.0", "1.1", "1.2"])
        (seq,) = zoo.read_nodes(self.write("s.nodes", FORMATS_SEQ))
        self.assertEqual(seq.kind, "sequence")
        self.assertEqual([n.values for n in seq.nodes],
                         [["3"], ["14"], ["15"], ["92"]])

    def test_forward_reference_and_comment_after_node(self):
        (st,) = zoo.read_nodes(self.write("t.nodes",
                                          "tree\n9 1 : 3 # root\n3 2 # leaf\n"))
        self.assertEqual([n.deps for n in st.nodes], [[1], []])
        self.assertEqual(st.nodes[1].values, ["2"])

    def test_vocab_ids_are_line_numbers(self):
        voc = zoo.read_vocab(self.write("v.txt", "a\nb\nc\n"))
        self.assertEqual(voc, {"a": 0, "b": 1, "c": 2})


class InputErrors(TempDir):
    """Malformed inputs: exit code 3 and a FILE:LINE: error: message."""

    def expect_error(self, model, fmt, text, line, fragment, dims=None):
        path = self.write("bad.txt", text)
        wpath, _ = self.weights(model, dims or {"H": 2, "V": 10})
        with self.assertRaises(zoo.OracleError) as cm:
            zoo.evaluate(model, path, fmt, wpath, dims or {"H": 2, "V": 10})
        msg = str(cm.exception)
        self.assertEqual(cm.exception.code, 3)
        self.assertTrue(msg.startswith(f"{path}:{line}: error: "), msg)
        self.assertIn(fragment, msg)

    def test_ptb_errors(self):
        self.expect_error("treefc", "ptb", "(1 (2 3) (4 5)\n", 1, "missing ')'")
        self.expect_error("treefc", "ptb", "(1 (2 3) (4 5)))\n", 1, "unbalanced")
        self.expect_error("treefc", "ptb", "(1 (2 3) (4 5)) (1 2)\n", 1, "after")
        self.expect_error("treefc", "ptb", "(1 3 4)\n", 1, "either one token")
        self.expect_error("treefc", "ptb", "(1 (2 3) 4)\n", 1, "either one token")
        self.expect_error("treefc", "ptb", "(1)\n", 1, "empty node")
        self.expect_error("treefc", "ptb", "((2 3) (2 4))\n", 1, "expected a label")
        self.expect_error("treefc", "ptb", "\n# only a comment\n", 1, "empty input")

    def test_model_errors(self):
        self.expect_error("treefc", "ptb", "(0 1)\n(1 (2 3))\n", 2, "one child")
        self.expect_error("treefc", "ptb", "(1 (2 3) (4 5) (6 7))\n", 1,
                          "3 children, more than the model's maximum of 2")
        self.expect_error("treefc", "ptb", "(0 1)\n(1 (2 3) (4 10))\n", 2,
                          "word id 10 outside [0, 10)")
        self.expect_error("treefc", "ptb", "(1 (2 3) (4 x))\n", 1,
                          "expected an integer word id")
        self.expect_error("childsum", "ptb", "(1 (2 3) (4 5))\n", 1,
                          "expected one word", {"H": 2, "V": 10, "K": 4})
        self.expect_error("seqlstm", "ptb", "(1 2)\n", 1, "takes sequence inputs")

    def test_node_list_errors(self):
        cs = {"H": 2, "V": 10, "K": 2}
        self.expect_error("childsum", "nodes", "0 1\n", 1, "before any")
        self.expect_error("childsum", "nodes", "tree\n0 1 : 1\n0 2\n", 3,
                          "duplicate node id 0", cs)
        self.expect_error("childsum", "nodes", "tree\n0 1 : 5\n", 2,
                          "unknown dependency id 5", cs)
        self.expect_error("childsum", "nodes", "tree\n0 1 : 1 2 3\n1 1\n2 1\n3 1\n",
                          2, "more than the model's maximum of 2", cs)
        self.expect_error("childsum", "nodes", "tree\n0 1 : 2\n1 1 : 2\n2 1\n",
                          4, "two parents", cs)
        self.expect_error("childsum", "nodes", "tree\n0 1\n1 1\n", 3,
                          "exactly one root, found 2", cs)
        self.expect_error("childsum", "nodes", "tree\n0 1\n1 1 : 2\n2 1 : 1\n",
                          3, "cycle through node 1", cs)
        self.expect_error("childsum", "nodes", "tree\n0 1 : 1\n1\n", 3,
                          "expected one word", cs)
        self.expect_error("childsum", "nodes", "tree\n0 1\ndag\n0 1\n", 3,
                          "mixed structure kinds", cs)
        self.expect_error("childsum", "nodes", "tree\n0 1\ntree\n", 3,
                          "no nodes", cs)
        self.expect_error("childsum", "nodes", "tree\nx 1\n", 2,
                          "non-negative integer node id", cs)
        self.expect_error("childsum", "nodes", "tree\n0 1 : 1 1\n1 2\n", 2,
                          "listed twice", cs)
        self.expect_error("childsum", "nodes", "# nothing\n", 1, "empty input", cs)
        dg = {"H": 2, "D": 2}
        self.expect_error("dagrnn", "nodes", "dag\n0 1 2 : 1\n1 1 2 : 0\n", 2,
                          "cycle", dg)
        self.expect_error("dagrnn", "nodes", "dag\n0 1 2 3\n", 2,
                          "expected 2 feature values, found 3", dg)
        self.expect_error("dagrnn", "nodes", "dag\n0 1 zz\n", 2, "bad feature", dg)
        self.expect_error("dagrnn", "nodes", "dag\n0 1 1\n1 1 1\n2 1 1\n"
                          "3 1 1 : 0 1 2\n", 5, "3 predecessors", dg)
        self.expect_error("dagrnn", "nodes", "tree\n0 1 1\n", 1, "takes dag", dg)
        sq = {"H": 2, "V": 10}
        self.expect_error("seqlstm", "nodes", "sequence\n0 1\n1 2 : 0\n", 3,
                          "sequence elements list no dependencies", sq)

    def test_dims_and_cli_errors(self):
        with self.assertRaises(zoo.OracleError) as cm:
            zoo.resolve_dims(zoo.MODELS["dagrnn"], {"V": 3})
        self.assertEqual(cm.exception.code, 2)
        self.assertEqual(zoo.resolve_dims(zoo.MODELS["dagrnn"], {"H": 7}),
                         {"H": 7, "D": 7})
        self.assertEqual(zoo.resolve_dims(zoo.MODELS["mvrnn"], {}),
                         {"H": 64, "V": 20000})
        for bad in (["H"], ["H=0"], ["H=x"], ["=3"]):
            with self.assertRaises(zoo.OracleError):
                zoo.parse_dims(bad)


class Safetensors(TempDir):
    def test_round_trip_and_layout(self):
        tensors = make_data.make_weights("mvrnn", {"H": 3, "V": 4}, seed=2)
        path = self.path("w.safetensors")
        make_data.write_safetensors(path, tensors, {"note": "x"})
        with open(path, "rb") as f:
            blob = f.read()
        (n,) = struct.unpack("<Q", blob[:8])
        self.assertEqual((8 + n) % 8, 0)
        back = zoo.read_safetensors(path)
        self.assertEqual(list(back), [name for name, _ in tensors])
        for name, a in tensors:
            self.assertEqual(back[name].dtype, np.float32)
            np.testing.assert_array_equal(back[name], a)
        self.assertEqual(back["EmbM"].shape, (4, 3, 3))
        self.assertTrue(np.all(np.abs(back["Emb"]) <= 0.5))

    def test_hand_written_file(self):
        # An independent writer: tensors out of declaration order, no padding.
        b = np.array([1.5, -2.0], dtype="<f4").tobytes()
        w = np.arange(4, dtype="<f4").tobytes()
        header = ('{"W":{"dtype":"F32","shape":[2,2],"data_offsets":[8,24]},'
                  '"b":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}').encode()
        path = self.path("h.safetensors")
        with open(path, "wb") as f:
            f.write(struct.pack("<Q", len(header)) + header + b + w)
        t = zoo.read_safetensors(path)
        np.testing.assert_array_equal(t["b"], [1.5, -2.0])
        np.testing.assert_array_equal(t["W"], [[0, 1], [2, 3]])

    def expect_weights_error(self, tensors, fragment, model="treefc",
                             dims=None, raw=None):
        path = self.path("bad.safetensors")
        if raw is not None:
            with open(path, "wb") as f:
                f.write(raw)
        else:
            make_data.write_safetensors(path, tensors)
        with self.assertRaises(zoo.OracleError) as cm:
            zoo.load_params(zoo.MODELS[model], dims or {"H": 2, "V": 3}, path)
        self.assertIn(fragment, str(cm.exception))
        self.assertTrue(str(cm.exception).startswith(path + ": error: "))

    def test_errors_name_the_tensor(self):
        good = make_data.make_weights("treefc", {"H": 2, "V": 3}, seed=1)
        self.expect_weights_error(good[:2], "missing tensor 'b'")
        self.expect_weights_error(good + [("extra", np.zeros(2, np.float32))],
                                  "unexpected tensor 'extra'")
        wrong = [(n, a if n != "W" else np.zeros((2, 3), np.float32))
                 for n, a in good]
        self.expect_weights_error(wrong, "tensor 'W' has shape [2, 3], expected "
                                  "[2, 4]")
        path = self.path("ok.safetensors")
        make_data.write_safetensors(path, good)
        with open(path, "rb") as f:
            blob = f.read()
        self.expect_weights_error(None, "tensor 'b'", raw=blob[:-4])
        self.expect_weights_error(None, "truncated", raw=blob[:5])
        f64 = blob.replace(b'"b":{"dtype":"F32"', b'"b":{"dtype":"F64"')
        self.expect_weights_error(None, "tensor 'b': dtype F64", raw=f64)


class NpyOutputAndCli(TempDir):
    def run_zoo(self, *argv):
        return subprocess.run([PYTHON, os.path.join(HERE, "zoo.py")] + list(argv),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True)

    def test_cli_writes_float64_npy(self):
        wpath, _ = self.weights("treegru", {"H": 5, "V": 20})
        inp = self.write("t.ptb", FORMATS_PTB.replace("901", "19") + "(1 3)\n")
        out = self.path("o.npy")
        proc = self.run_zoo("treegru", "--input", inp, "--format", "ptb",
                            "--weights", wpath, "-D", "H=5", "-D", "V=20",
                            "--output", out)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        a = np.load(out)
        self.assertEqual(a.dtype, np.float64)
        self.assertEqual(a.shape, (2, 5))
        self.assertTrue(a.flags.c_contiguous)
        proc = self.run_zoo("treegru", "--input", inp, "--format", "ptb",
                            "--weights", wpath, "-D", "H=5", "-D", "V=20",
                            "--all-nodes", "--output", out)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(np.load(out).shape, (6, 5))
        with open(out, "rb") as f:
            self.assertEqual(f.read(8), b"\x93NUMPY\x01\x00")

    def test_cli_errors(self):
        wpath, _ = self.weights("treegru", {"H": 5, "V": 20})
        inp = self.write("t.ptb", "(1 (2 3)\n")
        proc = self.run_zoo("treegru", "--input", inp, "--format", "ptb",
                            "--weights", wpath, "-D", "H=5", "-D", "V=20",
                            "--output", self.path("o.npy"))
        self.assertEqual(proc.returncode, 3)
        self.assertIn(f"{inp}:1: error: tree 0: missing ')'", proc.stderr)
        proc = self.run_zoo("treegru", "--input", inp, "--format", "ptb",
                            "--weights", wpath, "-D", "Q=5",
                            "--output", self.path("o.npy"))
        self.assertEqual(proc.returncode, 2)
        self.assertIn("no dim 'Q'", proc.stderr)
        proc = self.run_zoo("treegru", "--input", inp, "--format", "ptb",
                            "--weights", wpath, "--output", self.path("o.npy"))
        self.assertEqual(proc.returncode, 3)
        self.assertFalse(os.path.exists(self.path("o.npy")))


class DeepChains(TempDir):
    """100,000-node chains: no recursion anywhere, and the right numbers."""

    def test_ptb_caterpillar_100000_nodes(self):
        H, V = 3, 7
        dims = {"H": H, "V": V}
        wpath, w = self.weights("treefc", dims, scale=0.1)
        leaves = 50000                              # 99,999 nodes, depth 50,000
        words = [(7 * k + 3) % V for k in range(leaves)]
        text = "(0 " * (leaves - 1) + f"(1 {words[0]})" + \
            "".join(f" (1 {x}))" for x in words[1:]) + "\n"
        inp = self.write("chain.ptb", text)
        got = zoo.evaluate("treefc", inp, "ptb", wpath, dims)
        W, b, Emb = (np.array(w[k]) for k in ("W", "b", "Emb"))
        h = Emb[words[0]]
        for x in words[1:]:
            h = np.maximum(W @ np.concatenate([h, Emb[x]]) + b, 0)
        np.testing.assert_allclose(got, [h], rtol=1e-12, atol=1e-14)
        got_all = zoo.evaluate("treefc", inp, "ptb", wpath, dims, all_nodes=True)
        self.assertEqual(got_all.shape, (2 * leaves - 1, H))
        np.testing.assert_array_equal(got_all[0], got[0])
        np.testing.assert_array_equal(got_all[leaves - 1], Emb[words[0]])

    def test_dag_chain_100000_nodes_listed_backwards(self):
        H, D, n = 3, 2, 100000
        dims = {"H": H, "D": D}
        wpath, w = self.weights("dagrnn", dims, scale=0.1)
        xs = [((k % 5) / 4.0, -((k % 3) / 2.0)) for k in range(n)]
        lines = ["dag"] + [f"{k} {xs[k][0]} {xs[k][1]}" + (f" : {k - 1}" if k else "")
                           for k in reversed(range(n))]
        inp = self.write("chain.nodes", "\n".join(lines) + "\n")
        got = zoo.evaluate("dagrnn", inp, "nodes", wpath, dims)
        W, U, b = (np.array(w[k]) for k in ("W", "U", "b"))
        h = np.tanh(W @ np.array(xs[0]) + b)
        for k in range(1, n):
            h = np.tanh(W @ np.array(xs[k]) + U @ h + b)
        np.testing.assert_allclose(got, [h], rtol=1e-12, atol=1e-14)

    def test_generated_chains(self):
        d = {"H": 2, "V": 5, "K": 3}
        for shape, model, n, count in (("chain", "treelstm", 99999, 99999),
                                       ("tree-chain", "childsum", 100000, 100000),
                                       ("seq", "seqlstm", 100000, 100000)):
            dims = {k: v for k, v in d.items() if k in zoo.MODELS[model].dims}
            inp = self.path(shape + ".txt")
            make_data.make_input(inp, shape, dims, seed=1, n=n)
            (st,) = zoo.read_input(inp, make_data.shape_format(shape))[0]
            self.assertEqual(len(st.nodes), count)
            wpath, _ = self.weights(model, dims, scale=0.1)
            out = zoo.evaluate(model, inp, make_data.shape_format(shape), wpath, dims)
            self.assertEqual(out.shape, (1, 2))
            self.assertTrue(np.all(np.isfinite(out)))


class Generators(TempDir):
    """Every shape class makes an input the oracle accepts, with its shape."""

    def read(self, shape, dims, **kw):
        path = self.path(shape + ".txt")
        make_data.make_input(path, shape, dims, seed=kw.pop("seed", 4), **kw)
        return zoo.read_input(path, make_data.shape_format(shape))[0], path

    def test_every_shape_is_accepted(self):
        model_of = {"tree": "childsum", "dag": "dagrnn", "sequence": "seqlstm"}
        for shape, (fmt, kind, _, _) in make_data.SHAPES.items():
            model = "treelstm" if fmt == "ptb" or shape.startswith("bintree") \
                else model_of[kind]
            dims = {k: v for k, v in {"H": 3, "V": 30, "K": 3}.items()
                    if k in zoo.MODELS[model].dims}
            path = self.path(shape + ".txt")
            vocab = self.path("words.voc") if shape == "vocab" else None
            make_data.make_input(path, shape, zoo.resolve_dims(
                zoo.MODELS[model], dims), seed=6, n=None, vocab_out=vocab)
            wpath, _ = self.weights(model, dims)
            out = zoo.evaluate(model, path, fmt, wpath, dims, vocab_path=vocab)
            self.assertEqual(out.shape[1], 3, shape)
            self.assertTrue(np.all(np.isfinite(out)), shape)

    def test_deterministic(self):
        a, _ = self.read("dag-batch", {"D": 4})
        b, _ = self.read("dag-batch", {"D": 4})
        self.assertEqual([[n.values for n in s.nodes] for s in a],
                         [[n.values for n in s.nodes] for s in b])
        w1 = make_data.make_weights("treelstm", {"H": 3, "V": 5}, seed=8)
        w2 = make_data.make_weights("treelstm", {"H": 3, "V": 5}, seed=8)
        for (n1, a1), (n2, a2) in zip(w1, w2):
            np.testing.assert_array_equal(a1, a2)

    def test_nary_reaches_max_arity(self):
        sts, _ = self.read("nary", {"V": 10, "K": 5}, n=200)
        arity = max(len(n.deps) for s in sts for n in s.nodes)
        self.assertEqual(arity, 5)
        sts, _ = self.read("tree-batch", {"V": 10, "K": 8})
        self.assertEqual(max(len(n.deps) for s in sts for n in s.nodes), 8)
        self.assertEqual(min(len(s.nodes) for s in sts), 1)
        self.assertGreaterEqual(max(len(s.nodes) for s in sts), 300)

    def test_binary_shapes(self):
        (st,), _ = self.read("complete", {"V": 10}, n=5)
        self.assertEqual(len(st.nodes), 63)
        (st,), _ = self.read("chain", {"V": 10}, n=101)
        self.assertEqual(len(st.nodes), 101)
        self.assertEqual(sum(1 for n in st.nodes if n.deps), 50)
        sts, _ = self.read("random", {"V": 10}, n=40)
        self.assertEqual(len(sts), 40)
        sts, _ = self.read("batch", {"V": 10})
        sizes = sorted(len(s.nodes) for s in sts)
        self.assertEqual(sizes[0], 1)
        self.assertGreaterEqual(sizes[-1], 999)
        for s in sts:
            self.assertTrue(all(len(n.deps) in (0, 2) for n in s.nodes))

    def test_dags_share_predecessors(self):
        (st,), path = self.read("dag-random", {"D": 3}, n=300)
        users = [0] * len(st.nodes)
        for n in st.nodes:
            self.assertLessEqual(len(n.deps), 2)
            for j in n.deps:
                users[j] += 1
        self.assertGreater(max(users), 1)                  # shared predecessors
        self.assertGreater(sum(1 for u in users if u == 0), 1)   # several sinks
        self.assertGreater(sum(1 for n in st.nodes if len(n.deps) == 2), 50)
        (grid,), _ = self.read("grid", {"D": 3}, grid=(4, 6))
        self.assertEqual(len(grid.nodes), 24)
        self.assertEqual(grid.nodes[7].deps, [1, 6])     # (1,1) <- (0,1), (1,0)

    def test_features_exact_in_float32(self):
        (st,), _ = self.read("grid", {"D": 6})
        for n in st.nodes:
            for v in n.values:
                x = float(v)
                self.assertEqual(float(np.float32(x)), x)
                self.assertEqual(x * 256, round(x * 256))

    def test_sequences(self):
        sts, _ = self.read("seq", {"V": 10}, n=100)
        self.assertEqual([len(s.nodes) for s in sts], [100])
        sts, _ = self.read("seq-single", {"V": 10})
        self.assertEqual([len(s.nodes) for s in sts], [1])
        sts, _ = self.read("seq-batch", {"V": 10})
        self.assertEqual([len(s.nodes) for s in sts], [1, 2, 100, 37, 1, 250])

    def test_make_data_cli(self):
        out = self.path("w.safetensors")
        proc = subprocess.run([PYTHON, os.path.join(HERE, "make_data.py"),
                               "--weights", out, "childsum", "-D", "H=4",
                               "-D", "V=9", "--seed", "3"],
                              stderr=subprocess.PIPE, text=True)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        t = zoo.read_safetensors(out)
        self.assertEqual(t["Emb"].shape, (9, 4))
        self.assertEqual(t["W_iou"].shape, (12, 4))


FAKE_CTX = """#!/usr/bin/python3
# A stand-in for `ctx run MODEL.ctx --interp ...` that asks the oracle, then
# optionally perturbs the result (PERTURB: relative error to add).
import os, sys
import numpy as np
sys.path.insert(0, {here!r})
import zoo
argv = sys.argv[1:]
assert argv[0] == "run" and argv[2] == "--interp", argv
model = os.path.basename(argv[1])[:-4]
rc = zoo.main([model] + argv[3:])
out = argv[argv.index("--output") + 1]
p = float(os.environ.get("PERTURB", "0"))
if rc == 0 and p:
    a = np.load(out)
    np.save(out, a * (1 + p))
sys.exit(rc)
"""


class Differential(TempDir):
    def test_compare(self):
        c = differential.compare
        r = np.array([[1.0, -2.0, 0.0, np.nan, np.inf]])
        self.assertIsNone(c(r.copy(), r, 1e-9, 1e-9))
        self.assertIsNone(c(r + np.array([[1e-9, -1e-9, 9e-10, 0, 0]]), r, 1e-9,
                            1e-9))
        self.assertIsNotNone(c(r + np.array([[3e-9, 0, 0, 0, 0]]), r, 1e-9, 1e-9))
        self.assertIsNotNone(c(r[:, :4], r, 1e-9, 1e-9))
        g = r.copy()
        g[0, 3] = 1.0
        self.assertIn("worst at [0, 3]", c(g, r, 1e-9, 1e-9))
        g = r.copy()
        g[0, 4] = -np.inf
        self.assertIsNotNone(c(g, r, 1e-9, 1e-9))
        g = r.copy()
        g[0, 0] = np.nan
        self.assertIsNotNone(c(g, r, 1e-9, 1e-9))

    def fake_ctx(self):
        path = self.path("ctx")
        with open(path, "w") as f:
            f.write(FAKE_CTX.format(here=HERE))
        os.chmod(path, 0o755)
        return path

    def run_differential(self, perturb, *extra):
        env = dict(os.environ, PERTURB=str(perturb))
        return subprocess.run([PYTHON, os.path.join(HERE, "differential.py"),
                               "--ctx", self.fake_ctx(), "--workdir",
                               self.path("work")] + list(extra),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, env=env)

    def test_passes_with_a_correct_ctx(self):
        proc = self.run_differential(0, "--quick")
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        lines = proc.stdout.strip().splitlines()
        n = len(differential.selected(differential.parse_args(["--list",
                                                               "--quick"])))
        self.assertGreater(n, 40)
        self.assertEqual(lines[-1], f"{n} passed, 0 failed")

    def test_fails_with_a_wrong_ctx(self):
        proc = self.run_differential(1e-7, "--models", "seqlstm", "dagrnn",
                                     "--quick")
        self.assertEqual(proc.returncode, 1)
        lines = proc.stdout.strip().splitlines()
        self.assertRegex(lines[-1], r"^0 passed, [0-9]+ failed$")
        self.assertIn("FAIL seqlstm/seq-single", proc.stdout)
        self.assertIn("make_data.py --weights", proc.stdout)
        self.assertIn(" run ", proc.stdout)
        # The same perturbation passes a float32-style tolerance.
        proc = self.run_differential(1e-7, "--models", "seqlstm", "--quick",
                                     "--rtol", "1e-4", "--atol", "1e-5")
        self.assertEqual(proc.returncode, 0, proc.stdout)

    def test_self_check_subset(self):
        proc = subprocess.run([PYTHON, os.path.join(HERE, "differential.py"),
                               "--self-check", "--quick", "--models", "treegru",
                               "dagrnn"], stdout=subprocess.PIPE, text=True)
        self.assertEqual(proc.returncode, 0, proc.stdout)


if __name__ == "__main__":
    unittest.main()
