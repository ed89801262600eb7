#!/usr/bin/python3
"""torch_eager.py — the PyTorch eager baseline: the zoo's models (docs/models.md) run
node by node, the way a straightforward PyTorch implementation recurses.

Reads the same inputs (PTB trees, node lists) and safetensors weights as ctx; parsing
happens before timing. Each batch of --batch structures is timed from parsed
structures in memory to all root outputs: an iterative post-order walk of each
structure (DAGs: a memoised depth-first walk; sequences: a loop), one small
sequence of torch ops per node, under torch.inference_mode(). After one warm-up
pass it runs --repeat passes over all batches. --batch and --threads take comma
lists; one line per (batch, threads) pair, like `ctx run --time`:
  time: median_ms=M p10_ms=P p90_ms=Q batches=N batch_size=B threads=T
--output writes the root outputs (float32 .npy) of the last run. --threads goes to
OpenBLAS (torch's BLAS); torch's own pool stays at one thread (set_threads()).
--serve: see driver(). torch_level.py shares this driver and the readers.

usage: torch_eager.py MODEL --input FILE --weights W.safetensors [-D H=256]
                      [--batch 1,10] [--threads 1,2] [--repeat R] [--output OUT.npy]
                      [--serve]
"""
import argparse
import json
import struct
import sys
import time

import numpy as np
import torch


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        a, b = t["data_offsets"]
        arr = np.frombuffer(data, dtype="<f4", count=(b - a) // 4, offset=8 + n + a)
        out[name] = torch.from_numpy(arr.reshape(t["shape"]).copy())
    return out


def read_ptb(path):
    """Trees as (children lists, word per node, root=0), nodes in pre-order."""
    trees = []
    for line in open(path):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        toks = line.replace("(", " ( ").replace(")", " ) ").split()
        kids, words, stack, i = [], [], [], 0
        while i < len(toks):
            t = toks[i]
            if t == "(":
                node = len(kids)
                kids.append([])
                words.append(-1)
                if stack:
                    kids[stack[-1]].append(node)
                stack.append(node)
                i += 2  # skip the label
                if i + 1 < len(toks) and toks[i] not in "()" and toks[i + 1] == ")":
                    words[node] = int(toks[i])
                    i += 1
            elif t == ")":
                stack.pop()
                i += 1
            else:
                raise SystemExit("torch_eager.py: unexpected token %r" % t)
        trees.append({"kids": kids, "word": words, "outputs": [0]})
    return trees


def read_nodes(path):
    structs, cur = [], None
    for line in open(path):
        line = line.split("#", 1)[0].replace(":", " : ").split()
        if not line:
            continue
        if line[0] in ("tree", "dag", "sequence"):
            cur = {"kind": line[0], "ids": [], "vals": [], "deps": []}
            structs.append(cur)
            continue
        deps = []
        if ":" in line:
            k = line.index(":")
            deps, line = [int(x) for x in line[k + 1:]], line[:k]
        cur["ids"].append(int(line[0]))
        cur["vals"].append(line[1:])
        cur["deps"].append(deps)
    out = []
    for s in structs:
        pos = {i: n for n, i in enumerate(s["ids"])}
        deps = [[pos[d] for d in ds] for ds in s["deps"]]
        n = len(deps)
        if s["kind"] == "sequence":
            deps = [[n - 1] if n else [] for n in range(n)]
        used = set(d for ds in deps for d in ds)
        outputs = [k for k in range(n) if k not in used]
        st = {"kids": deps, "outputs": outputs}
        if s["kind"] == "dag":
            st["x"] = torch.tensor(np.array(s["vals"], dtype=np.float64), dtype=torch.float32)
        else:
            st["word"] = [int(v[0]) for v in s["vals"]]
        out.append(st)
    return out


def post_order(kids, roots):
    """Iterative post-order of the nodes reachable from roots (each once)."""
    order, seen, stack = [], set(), [(r, False) for r in reversed(roots)]
    while stack:
        n, done = stack.pop()
        if done:
            order.append(n)
            continue
        if n in seen:
            continue
        seen.add(n)
        stack.append((n, True))
        for k in reversed(kids[n]):
            if k not in seen:
                stack.append((k, False))
    return order


def make_cell(model, P, H):
    """The per-node function: (node, structure, state dict) -> state of the node."""
    sig, tanh = torch.sigmoid, torch.tanh
    if model == "treefc":
        Emb, W, b = P["Emb"], P["W"], P["b"]

        def cell(n, s, st):
            k = s["kids"][n]
            if not k:
                return Emb[s["word"][n]]
            return torch.relu(torch.addmv(b, W, torch.cat((st[k[0]], st[k[1]]))))
    elif model == "treegru":
        Emb, Urz, brz, Uh, bh = P["Emb"], P["U_rz"], P["b_rz"], P["U_h"], P["b_h"]

        def cell(n, s, st):
            k = s["kids"][n]
            if not k:
                return Emb[s["word"][n]]
            x = st[k[0]] + st[k[1]]
            g = sig(torch.addmv(brz, Urz, x))
            r, z = g[:H], g[H:]
            ht = tanh(torch.addmv(bh, Uh, r * x))
            return z * x + (1 - z) * ht
    elif model == "treelstm":
        Emb, Uiou, biou, Uf, bf = P["Emb"], P["U_iou"], P["b_iou"], P["U_f"], P["b_f"]

        def cell(n, s, st):
            k = s["kids"][n]
            if not k:
                g = Emb[s["word"][n]] + biou
                c = sig(g[:H]) * tanh(g[2 * H:])
                return (sig(g[H:2 * H]) * tanh(c), c)
            (h0, c0), (h1, c1) = st[k[0]], st[k[1]]
            g = torch.addmv(biou, Uiou, h0 + h1)
            f0 = sig(torch.addmv(bf, Uf, h0))
            f1 = sig(torch.addmv(bf, Uf, h1))
            c = sig(g[:H]) * tanh(g[2 * H:]) + f0 * c0 + f1 * c1
            return (sig(g[H:2 * H]) * tanh(c), c)
    elif model == "childsum":
        Emb, Wiou, Uiou, biou = P["Emb"], P["W_iou"], P["U_iou"], P["b_iou"]
        Wf, Uf, bf = P["W_f"], P["U_f"], P["b_f"]

        def cell(n, s, st):
            x = Emb[s["word"][n]]
            k = s["kids"][n]
            g = torch.addmv(biou, Wiou, x)
            if k:
                hs = st[k[0]][0]
                for j in k[1:]:
                    hs = hs + st[j][0]
                g = torch.addmv(g, Uiou, hs)
            c = sig(g[:H]) * tanh(g[2 * H:])
            if k:
                fx = torch.addmv(bf, Wf, x)
                for j in k:
                    hj, cj = st[j]
                    c = c + sig(torch.addmv(fx, Uf, hj)) * cj
            return (sig(g[H:2 * H]) * tanh(c), c)
    elif model == "mvrnn":
        Emb, EmbM, W, b, WM = P["Emb"], P["EmbM"], P["W"], P["b"], P["WM"]

        def cell(n, s, st):
            k = s["kids"][n]
            if not k:
                w = s["word"][n]
                return (Emb[w], EmbM[w])
            (a, A), (v, B) = st[k[0]], st[k[1]]
            p = tanh(torch.addmv(b, W, torch.cat((torch.mv(B, a), torch.mv(A, v)))))
            return (p, torch.mm(WM, torch.cat((A, B), 0)))
    elif model == "dagrnn":
        W, U, b = P["W"], P["U"], P["b"]

        def cell(n, s, st):
            acc = torch.addmv(b, W, s["x"][n])
            for p in s["kids"][n]:
                acc = torch.addmv(acc, U, st[p])
            return tanh(acc)
    elif model == "seqlstm":
        Emb, U, b = P["Emb"], P["U"], P["b"]

        def cell(n, s, st):
            g = Emb[s["word"][n]] + b
            k = s["kids"][n]
            if k:
                hp, cp = st[k[0]]
                g = torch.addmv(g, U, hp)
            i, f, u, o = sig(g[:H]), sig(g[H:2 * H]), tanh(g[2 * H:3 * H]), sig(g[3 * H:])
            c = i * u
            if k:
                c = c + f * cp
            return (o * tanh(c), c)
    else:
        raise SystemExit("torch_eager.py: unknown model '%s'" % model)
    return cell


def run_batch(model, cell, batch):
    outs = []
    for s in batch:
        st = {}
        if model == "seqlstm":
            order = range(len(s["kids"]))
        else:
            order = post_order(s["kids"], s["outputs"])
        for n in order:
            st[n] = cell(n, s, st)
        for r in s["outputs"]:
            h = st[r]
            outs.append(h[0] if isinstance(h, tuple) else h)
    return torch.stack(outs)


def blas_lib():
    """The OpenBLAS that torch loaded (its BLAS), as a ctypes handle, or None."""
    import ctypes
    paths = sorted(set(l.split()[-1] for l in open("/proc/self/maps")
                       if "openblas" in l and ".so" in l))
    paths.sort(key=lambda p: "libopenblas" not in p)  # the library itself first
    for p in paths:
        try:
            lib = ctypes.CDLL(p)
            lib.openblas_get_corename.restype = ctypes.c_char_p
            return lib
        except (OSError, AttributeError):
            continue
    return None


def set_threads(lib, threads):
    """torch's own pool and OpenBLAS's (torch's BLAS, which torch does not size) are
    two pools of spinning threads: both at 2 on two cores ran mvrnn H=128 B=10 at
    600 ms a batch against 54 ms with torch's at 1 and OpenBLAS's at 2 (and 87 the
    other way round), so the matrix products get the threads."""
    torch.set_num_threads(1 if lib is not None else threads)
    if lib is not None:
        lib.openblas_set_num_threads(threads)


def time_batches(run, batches, repeat):
    """Median and percentiles over --repeat passes of every batch, after a warm-up."""
    outs = [run(bt) for bt in batches]
    ms = []
    for _ in range(repeat):
        outs = []
        for bt in batches:
            t0 = time.perf_counter()
            outs.append(run(bt))
            ms.append((time.perf_counter() - t0) * 1e3)
    ms.sort()
    n = len(ms)
    med = ms[n // 2] if n % 2 else (ms[n // 2 - 1] + ms[n // 2]) / 2
    return med, ms[(n - 1) // 10], ms[(n - 1) - (n - 1) // 10], n, outs


def driver(name, prepare):
    """The command line both PyTorch baselines share. [prepare](model, P, H, structs,
    batch size) returns (run, batches): run(batch) -> root outputs [n, H]; whatever
    batches hold was built before the timer.

    With --serve it loads once and then reads commands from stdin, one a line,
    `BATCH THREADS REPEAT [OUT.npy]`, answering each with a time line (the runner
    alternates these with ctx's runs without paying torch's start-up each time)."""
    ap = argparse.ArgumentParser(prog=name)
    ap.add_argument("model")
    ap.add_argument("--input", required=True)
    ap.add_argument("--weights", required=True)
    ap.add_argument("-D", action="append", default=[])
    ap.add_argument("--batch", default="1")
    ap.add_argument("--threads", default="1")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--output")
    ap.add_argument("--serve", action="store_true")
    a = ap.parse_args()
    dims = {"H": 64 if a.model == "mvrnn" else 256}
    for kv in a.D:
        k, v = kv.split("=", 1)
        dims[k] = int(v)
    H = dims["H"]
    P = read_safetensors(a.weights)
    structs = read_ptb(a.input) if a.input.endswith(".ptb") else read_nodes(a.input)
    lib = blas_lib()
    print("blas: corename=%s torch=%s capability=%s" % (
        lib.openblas_get_corename().decode() if lib else "none", torch.__version__,
        torch.__config__.show().split("CPU capability usage:")[-1].split()[0]), flush=True)
    prepared = {}

    def one(bs, threads, repeat, output):
        set_threads(lib, threads)
        if bs not in prepared:
            prepared[bs] = prepare(a.model, P, H, structs, bs)
        run, batches = prepared[bs]
        med, p10, p90, n, outs = time_batches(run, batches, repeat)
        if output:  # before the time line: the runner reads the file once it has that
            np.save(output, torch.cat(outs).numpy().astype(np.float32))
        print("time: median_ms=%.4f p10_ms=%.4f p90_ms=%.4f batches=%d batch_size=%d"
              " threads=%d" % (med, p10, p90, n, bs, threads), flush=True)

    with torch.inference_mode():
        if a.serve:
            for line in sys.stdin:
                f = line.split()
                if f:
                    one(int(f[0]), int(f[1]), int(f[2]), f[3] if len(f) > 3 else None)
            return
        for threads in [int(t) for t in a.threads.split(",")]:
            for bs in [int(x) for x in a.batch.split(",")]:
                one(bs, threads, a.repeat, a.output)


def prepare_eager(model, P, H, structs, bs):
    cell = make_cell(model, P, H)
    batches = [structs[i:i + bs] for i in range(0, len(structs), bs)]
    return (lambda bt: run_batch(model, cell, bt)), batches


if __name__ == "__main__":
    driver("torch_eager.py", prepare_eager)
