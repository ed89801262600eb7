"""ctx — run models compiled by `ctx build` from Python.

Pure Python over ctypes: no build step, NumPy only. A library made by

    ctx build examples/treelstm.ctx -D H=64 -o out

is loaded with `ctx.load("out/libtreelstm.so")`; the model runs on trees
given as bracketed strings, node-list text, lists of nodes or NumPy arrays and
returns NumPy arrays (float32, one row per structure: its root / sink / last
element, shaped [rows, ...] like `ctx run --output`). Weights come from a
safetensors file or a dict of NumPy arrays (converted to float32), or are the
seeded defaults `ctx run` uses.

    import ctx
    m = ctx.load("out/libtreelstm.so", weights={"Emb": emb, ...})
    h = m.run(["(3 (2 17) (4 (2 5) (3 901)))", "(0 7)"])     # shape [2, 64]

Every run takes all_nodes=True for a row per node in the input's order (ctx
run --all-nodes) instead of one per structure. CoNLL-U text runs with
m.run_conllu(text, vocab=words, column="FORM") (ctx run --format conllu
--vocab); bracketed trees take vocab= too.

Errors raise CtxError carrying the library's message (`FILE:LINE: error:
...`) and its code; the library's note that a weights file's F64, F16 or
BF16 tensors were converted to float32 is Model.note (and a UserWarning). A
model is used by one thread at a time.
"""
import ctypes
import json
import os
import re
import struct
import tempfile
import warnings

import numpy as np

__all__ = ["CtxError", "Model", "load", "read_safetensors", "write_safetensors"]

_ERRLEN = 1024
_KINDS = {1: "tree", 2: "dag", 3: "sequence"}


class CtxError(Exception):
    """A failure the library reported: [code] is its NAME_ERR_* value (1 I/O,
    2 syntax, 3 invalid input or weights, 4 bad argument, 5 out of memory)."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code
        self.message = message


# ---- safetensors -------------------------------------------------------------

def write_safetensors(path, tensors):
    """Writes the dict [tensors] (name -> array) as an F32 safetensors file:
    tensors in the dict's order, data contiguous, the header padded to 8."""
    meta, blobs, off = {}, [], 0
    for name, value in tensors.items():
        a = np.ascontiguousarray(np.asarray(value, dtype="<f4"))
        b = a.tobytes()
        meta[name] = {"dtype": "F32", "shape": list(a.shape),
                      "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    head = json.dumps(meta, separators=(",", ":")).encode()
    head += b" " * (-len(head) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(head)) + head)
        for b in blobs:
            f.write(b)


def read_safetensors(path):
    """The tensors of an F32 / F64 / F16 safetensors file as a dict of NumPy
    arrays (in the file's dtype)."""
    dtypes = {"F32": "<f4", "F64": "<f8", "F16": "<f2"}
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    meta = json.loads(data[8:8 + n])
    out = {}
    for name, t in meta.items():
        if name == "__metadata__":
            continue
        if t["dtype"] not in dtypes:
            raise CtxError(4, f"{path}: tensor '{name}' has dtype '{t['dtype']}'")
        lo, hi = t["data_offsets"]
        out[name] = np.frombuffer(data[8 + n + lo:8 + n + hi],
                                  dtype=dtypes[t["dtype"]]).reshape(t["shape"]).copy()
    return out


# ---- the library -------------------------------------------------------------

_i32p = ctypes.POINTER(ctypes.c_int32)
_f64p = ctypes.POINTER(ctypes.c_double)


def _declare(lib, name):
    """Sets the C signatures of the NAME_ functions of [lib]."""
    def fn(suffix, restype, *argtypes):
        f = getattr(lib, f"{name}_{suffix}")
        f.restype, f.argtypes = restype, list(argtypes)
        return f
    vp, cp, sz = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t
    fns = {
        "create": fn("create", ctypes.c_int, cp, ctypes.POINTER(vp), cp, sz),
        "create_seeded": fn("create_seeded", ctypes.c_int, ctypes.c_uint64,
                            ctypes.POINTER(vp), cp, sz),
        "run_ptb": fn("run_ptb", ctypes.c_int, vp, cp, sz, cp, sz),
        "run_nodes": fn("run_nodes", ctypes.c_int, vp, cp, sz, cp, sz),
        "run_conllu": fn("run_conllu", ctypes.c_int, vp, cp, sz, cp, cp, sz),
        "set_vocab": fn("set_vocab", ctypes.c_int, vp, cp, sz, cp, cp, sz),
        "set_all_nodes": fn("set_all_nodes", None, vp, ctypes.c_int),
        "run_arrays": fn("run_arrays", ctypes.c_int, vp, ctypes.c_int32, _i32p, _i32p,
                         _i32p, _f64p, cp, sz),
        "num_outputs": fn("num_outputs", ctypes.c_int64, vp),
        "output": fn("output", ctypes.POINTER(ctypes.c_float), vp, ctypes.c_int64),
        "output_size": fn("output_size", ctypes.c_int64),
        "output_shape": fn("output_shape", ctypes.c_int, ctypes.POINTER(ctypes.c_int64)),
        "num_values": fn("num_values", ctypes.c_int),
        "kind": fn("kind", ctypes.c_int),
        "set_threads": fn("set_threads", ctypes.c_int, vp, ctypes.c_int, cp, sz),
        "destroy": fn("destroy", None, vp),
    }
    if hasattr(lib, f"{name}_run_heads"):
        fns["run_heads"] = fn("run_heads", ctypes.c_int, vp, ctypes.c_int32, _i32p, _i32p,
                              _f64p, cp, sz)
    return fns


def _i32(a, what):
    a = np.asarray(a)
    if a.size and not np.issubdtype(a.dtype, np.integer):
        raise CtxError(4, f"error: {what} must hold integers, found {a.dtype}")
    if a.size and (a.min() < -2**31 or a.max() >= 2**31):
        raise CtxError(4, f"error: {what} holds values outside int32")
    return np.ascontiguousarray(a, dtype=np.int32).reshape(-1)


def _ptr(a, ctype):
    return a.ctypes.data_as(ctypes.POINTER(ctype))


class Model:
    """A model of a library built by `ctx build`.

    [path] the shared library (libNAME.so); [name] the symbol prefix
    (default: NAME from the file name); [weights] None (the seeded defaults
    of [seed]), a safetensors path, or a dict name -> array (float32 after
    conversion, shapes as the model's header lists them); [threads] 0 for
    the default (every core, or CTXRT_THREADS).
    """

    def __init__(self, path, weights=None, seed=0, threads=0, name=None):
        if name is None:
            m = re.fullmatch(r"lib(\w+)\.so(\.\d+)*", os.path.basename(path))
            if not m:
                raise CtxError(4, f"error: cannot tell the model's name from '{path}'; "
                                  "give name=")
            name = m.group(1)
        self.name = name
        self._lib = ctypes.CDLL(os.path.abspath(path))
        self._f = _declare(self._lib, name)
        self._m = None
        self.note = ""  # the library's note on the weights (converted tensors), or ""
        handle = ctypes.c_void_p()
        if weights is None:
            self._call("create_seeded", ctypes.c_uint64(seed), ctypes.byref(handle))
        elif isinstance(weights, dict):
            with tempfile.TemporaryDirectory() as tmp:
                file = os.path.join(tmp, "weights.safetensors")
                write_safetensors(file, weights)
                self._call("create", file.encode(), ctypes.byref(handle), path=file,
                           label="weights")
        else:
            self._call("create", os.fsencode(weights), ctypes.byref(handle))
        self._m = handle
        if self.note:
            warnings.warn(self.note, stacklevel=3)
        if threads:
            self._call("set_threads", self._m, int(threads))
        dims = (ctypes.c_int64 * 8)()
        rank = self._f["output_shape"](dims)
        self.output_shape = tuple(dims[d] for d in range(rank))
        self.num_values = self._f["num_values"]()
        self.kind = _KINDS[self._f["kind"]()]

    # -- plumbing
    def _call(self, fn, *args, path=None, label=None):
        err = ctypes.create_string_buffer(_ERRLEN)
        rc = self._f[fn](*args, err, _ERRLEN)
        msg = err.value.decode("utf-8", "replace")
        if path and label:  # the temporary file's name means nothing to the caller
            msg = msg.replace(path, label)
        if rc != 0:
            raise CtxError(rc, msg)
        if fn == "create":  # on success, the note of converted tensors or ""
            self.note = msg

    def _mode(self, all_nodes, vocab=None, unk=None):
        """Sets the next run's rows (all nodes or the structures') and vocabulary."""
        self._f["set_all_nodes"](self._m, 1 if all_nodes else 0)
        if vocab is None:
            if unk is not None:
                raise CtxError(4, "error: unk needs a vocab")
            self._call("set_vocab", self._m, None, 0, None)
            return
        if isinstance(vocab, (str, bytes, os.PathLike)):
            with open(vocab, "rb") as f:
                data = f.read()
        else:
            data = "".join(str(w) + "\n" for w in vocab).encode()
        self._call("set_vocab", self._m, data, len(data),
                   None if unk is None else str(unk).encode())

    def _outputs(self):
        rows = self._f["num_outputs"](self._m)
        size = self._f["output_size"]()
        out = np.empty((rows, size), dtype=np.float32)
        if rows:
            ptr = self._f["output"](self._m, 0)
            out[:] = np.ctypeslib.as_array(ptr, shape=(rows, size))
        return out.reshape((rows,) + self.output_shape)

    # -- running
    def run(self, trees, all_nodes=False):
        """Runs the model and returns its outputs, shape [rows, ...]: a row per
        structure (its root / sink / last element), or with [all_nodes] a row
        per node in the input's order (ctx run --all-nodes). [trees]
        is bracketed text (one tree a line), a list of bracketed strings,
        node-list text (docs/formats.md: it starts with 'tree', 'dag' or
        'sequence'), or a list of structures, each a list of nodes given as
        (values, deps): values a number or a sequence of num_values numbers
        (None: none), deps the indices of the node's children / predecessors
        within its structure."""
        if isinstance(trees, (str, bytes)):
            text = trees.decode() if isinstance(trees, bytes) else trees
            head = text.lstrip()
            first = re.sub(r"#.*", "", head).split(None, 1)
            if first and first[0] in ("tree", "dag", "sequence"):
                return self.run_nodes(text, all_nodes=all_nodes)
            return self.run_ptb(text, all_nodes=all_nodes)
        trees = list(trees)
        if all(isinstance(t, str) for t in trees):
            return self.run_ptb("\n".join(t.strip() for t in trees) + "\n",
                                all_nodes=all_nodes)
        return self.run_structures(trees, all_nodes=all_nodes)

    def run_ptb(self, text, vocab=None, unk=None, all_nodes=False):
        """Bracketed trees, one a line, integer word ids at the leaves, or
        words of [vocab] (see run_conllu)."""
        data = text.encode() if isinstance(text, str) else bytes(text)
        self._mode(all_nodes, vocab, unk)
        self._call("run_ptb", self._m, data, len(data))
        return self._outputs()

    def run_nodes(self, text, all_nodes=False):
        """Node lists (docs/formats.md)."""
        data = text.encode() if isinstance(text, str) else bytes(text)
        self._mode(all_nodes)
        self._call("run_nodes", self._m, data, len(data))
        return self._outputs()

    def run_conllu(self, text, vocab=None, column="FORM", unk=None, all_nodes=False):
        """CoNLL-U dependency trees (ctx run --format conllu): one tree per
        sentence, a node per word, its word the [column] FORM, LEMMA, UPOS
        or XPOS (ctx run --conllu-column) looked up in [vocab] (a path to a
        file of one word a line, or a sequence of words: id = position;
        None: the column holds integer ids), words not in it taking [unk]'s
        id when given (ctx run --unk)."""
        data = text.encode() if isinstance(text, str) else bytes(text)
        self._mode(all_nodes, vocab, unk)
        self._call("run_conllu", self._m, data, len(data), str(column).encode())
        return self._outputs()

    def _values(self, values, total):
        v = np.ascontiguousarray(np.asarray(values, dtype=np.float64)).reshape(-1)
        if v.size != total * self.num_values:
            raise CtxError(4, f"error: {v.size} values for {total} nodes, expected "
                              f"{self.num_values} per node ({total * self.num_values})")
        return v

    def run_arrays(self, num_nodes, num_deps=None, deps=None, values=(), all_nodes=False):
        """Structures as arrays (NAME_run_arrays): num_nodes[s] per structure;
        per node (structures one after the other) num_deps[n] and its
        dependencies concatenated in deps (indices within the structure), and
        num_values values (those of internal nodes ignored for a model that
        reads values at leaves). Sequences need no num_deps and deps: each
        element depends on the one before it."""
        nn = _i32(num_nodes, "num_nodes")
        total = int(nn.astype(np.int64).sum()) if nn.size else 0
        if self.kind == "sequence" and num_deps is None and deps is None:
            num_deps = np.minimum(np.concatenate([np.arange(n) for n in nn] or [[]]), 1)
            deps = np.concatenate([np.arange(n - 1) for n in nn if n > 0] or [[]])
        if num_deps is None or deps is None:
            raise CtxError(4, f"error: '{self.kind}' structures need num_deps and deps")
        nd, d = _i32(num_deps, "num_deps"), _i32(deps, "deps")
        if nd.size != total:
            raise CtxError(4, f"error: {nd.size} dependency counts for {total} nodes")
        if d.size != (int(nd.astype(np.int64).clip(min=0).sum()) if nd.size else 0):
            raise CtxError(4, f"error: {d.size} dependencies, num_deps sums to "
                              f"{int(nd.sum()) if nd.size else 0}")
        v = self._values(values, total)
        self._mode(all_nodes)
        self._call("run_arrays", self._m, len(nn), _ptr(nn, ctypes.c_int32),
                   _ptr(nd, ctypes.c_int32), _ptr(d, ctypes.c_int32),
                   _ptr(v, ctypes.c_double))
        return self._outputs()

    def run_heads(self, num_nodes, heads, values, all_nodes=False):
        """Trees as parent arrays (NAME_run_heads): heads[n] the parent's index
        within the tree, -1 for the root; children in index order."""
        if "run_heads" not in self._f:
            raise CtxError(4, f"error: parent arrays describe trees, but the model "
                              f"reads '{self.kind}' structures")
        nn, h = _i32(num_nodes, "num_nodes"), _i32(heads, "heads")
        total = int(nn.astype(np.int64).sum()) if nn.size else 0
        if h.size != total:
            raise CtxError(4, f"error: {h.size} heads for {total} nodes")
        v = self._values(values, total)
        self._mode(all_nodes)
        self._call("run_heads", self._m, len(nn), _ptr(nn, ctypes.c_int32),
                   _ptr(h, ctypes.c_int32), _ptr(v, ctypes.c_double))
        return self._outputs()

    def run_structures(self, structures, all_nodes=False):
        """A list of structures, each a list of (values, deps) nodes (see run)."""
        num_nodes, num_deps, deps, values = [], [], [], []
        for s in structures:
            num_nodes.append(len(s))
            for vals, ds in s:
                ds = list(ds or ())
                num_deps.append(len(ds))
                deps.extend(ds)
                if vals is None:
                    vals = [0.0] * self.num_values
                values.extend(np.atleast_1d(np.asarray(vals, dtype=np.float64)).tolist())
        return self.run_arrays(num_nodes, num_deps, deps, values, all_nodes=all_nodes)

    # -- lifetime
    def close(self):
        """Frees the model (also done when it is garbage-collected)."""
        if self._m:
            self._f["destroy"](self._m)
            self._m = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        if getattr(self, "_m", None):
            self.close()


def load(path, weights=None, seed=0, threads=0, name=None):
    """Model(path, ...): see Model."""
    return Model(path, weights=weights, seed=seed, threads=threads, name=name)
