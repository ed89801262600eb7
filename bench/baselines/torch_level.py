#!/usr/bin/python3
"""torch_level.py — the PyTorch baseline batched by dependency level: the zoo's
models (docs/models.md) with the same algebra as the level-batched C baseline.

Per batch, all nodes of the batch's structures are renumbered in level order
(level = 1 + the highest level of the node's children or predecessors), so that a
level's states are one contiguous slice of an [N, H] tensor; each level gathers its
children's states with index_select and runs one addmm per weight matrix:
U·(h_0 + h_1) once per node, treelstm's U_f over both children stacked, childsum's
U_f over all children of the level with index_add_ for the sums, mvrnn's per-node
products as bmm/matmul over the level. Node-independent products of the whole
batch come first, in one product: childsum's [W_iou; W_f]·x (stacked at load),
dagrnn's W·x, the embedding rows of every node.

What is timed: from the batch's schedule (level ranges and index tensors, built
per batch *before* the timer — an advantage PyTorch gets over ctx and the C
baselines, whose linearization is timed) to all root outputs, under
torch.inference_mode(). Command line, time lines and --serve: torch_eager.py.

usage: torch_level.py MODEL --input FILE --weights W.safetensors [-D H=256]
                      [--batch 1,10] [--threads 1,2] [--repeat R] [--output OUT.npy]
                      [--serve]
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_eager  # noqa: E402  (the readers and the driver)


def schedule(structs):
    """The batch in level order: new id of every node, level ranges, for every node
    its children's new ids, the roots' new ids in input order."""
    nodes, level = [], {}
    for si, s in enumerate(structs):
        kids = s["kids"]
        order = torch_eager.post_order(kids, s["outputs"])
        for n in order:
            level[(si, n)] = 1 + max((level[(si, k)] for k in kids[n]), default=-1)
            nodes.append((level[(si, n)], si, n))
    nodes.sort()
    new = {(si, n): i for i, (_, si, n) in enumerate(nodes)}
    starts = [0]
    for i in range(1, len(nodes)):
        if nodes[i][0] != nodes[i - 1][0]:
            starts.append(i)
    starts.append(len(nodes))
    kids = [[new[(si, k)] for k in structs[si]["kids"][n]] for _, si, n in nodes]
    roots = [new[(si, r)] for si, s in enumerate(structs) for r in s["outputs"]]
    return nodes, starts, kids, roots


def lt(v):
    return torch.tensor(v, dtype=torch.long)


def level_batch(model, structs):
    """What a level-batched run of [structs] needs, all tensors."""
    nodes, starts, kids, roots = schedule(structs)
    b = {"N": len(nodes), "roots": lt(roots), "levels": []}
    if "word" in structs[0]:
        b["words"] = lt([structs[si]["word"][n] for _, si, n in nodes])
    if model == "dagrnn":
        b["x"] = torch.stack([structs[si]["x"][n] for _, si, n in nodes])
    for l in range(len(starts) - 1):
        s, e = starts[l], starts[l + 1]
        lv = {"s": s, "e": e}
        if model in ("childsum", "dagrnn"):  # variable arity: children and their parent
            ch = [k for i in range(s, e) for k in kids[i]]
            seg = [i - s for i in range(s, e) for _ in kids[i]]
            lv["ch"], lv["seg"] = lt(ch), lt(seg)
        elif l > 0:
            lv["k0"] = lt([kids[i][0] for i in range(s, e)])
            if model != "seqlstm":
                lv["k1"] = lt([kids[i][1] for i in range(s, e)])
                lv["k01"] = torch.cat((lv["k0"], lv["k1"]))
        b["levels"].append(lv)
    return b


def make_run(model, P, H):
    sig, tanh, sel = torch.sigmoid, torch.tanh, torch.index_select
    T = {k: v.t() for k, v in P.items() if v.dim() == 2}  # transposed views for addmm

    if model == "treefc":
        def run(bt):
            h = torch.empty(bt["N"], H)
            lv0 = bt["levels"][0]
            h[:lv0["e"]] = sel(P["Emb"], 0, bt["words"][:lv0["e"]])
            for lv in bt["levels"][1:]:
                x = torch.cat((sel(h, 0, lv["k0"]), sel(h, 0, lv["k1"])), 1)
                h[lv["s"]:lv["e"]] = torch.relu(torch.addmm(P["b"], x, T["W"]))
            return sel(h, 0, bt["roots"])
    elif model == "treegru":
        def run(bt):
            h = torch.empty(bt["N"], H)
            lv0 = bt["levels"][0]
            h[:lv0["e"]] = sel(P["Emb"], 0, bt["words"][:lv0["e"]])
            for lv in bt["levels"][1:]:
                sm = sel(h, 0, lv["k0"]) + sel(h, 0, lv["k1"])
                g = sig(torch.addmm(P["b_rz"], sm, T["U_rz"]))
                r, z = g[:, :H], g[:, H:]
                ht = tanh(torch.addmm(P["b_h"], r * sm, T["U_h"]))
                h[lv["s"]:lv["e"]] = z * sm + (1 - z) * ht
            return sel(h, 0, bt["roots"])
    elif model == "treelstm":
        def run(bt):
            N = bt["N"]
            h, c = torch.empty(N, H), torch.empty(N, H)
            for li, lv in enumerate(bt["levels"]):
                s, e = lv["s"], lv["e"]
                if li == 0:
                    g = sel(P["Emb"], 0, bt["words"][s:e]) + P["b_iou"]
                    cc = sig(g[:, :H]) * tanh(g[:, 2 * H:])
                else:
                    n = e - s
                    g = torch.addmm(P["b_iou"], sel(h, 0, lv["k0"]) + sel(h, 0, lv["k1"]),
                                    T["U_iou"])
                    f = sig(torch.addmm(P["b_f"], sel(h, 0, lv["k01"]), T["U_f"]))
                    cc = (sig(g[:, :H]) * tanh(g[:, 2 * H:]) + f[:n] * sel(c, 0, lv["k0"])
                          + f[n:] * sel(c, 0, lv["k1"]))
                c[s:e] = cc
                h[s:e] = sig(g[:, H:2 * H]) * tanh(cc)
            return sel(h, 0, bt["roots"])
    elif model == "childsum":
        WX = torch.cat((P["W_iou"], P["W_f"]), 0).t()  # [W_iou; W_f], stacked at load

        def run(bt):
            N = bt["N"]
            h, c = torch.empty(N, H), torch.empty(N, H)
            G0 = torch.mm(sel(P["Emb"], 0, bt["words"]), WX)  # every node at once
            for li, lv in enumerate(bt["levels"]):
                s, e = lv["s"], lv["e"]
                g = G0[s:e, :3 * H] + P["b_iou"]
                if li > 0:
                    hc = sel(h, 0, lv["ch"])
                    hs = torch.zeros(e - s, H).index_add_(0, lv["seg"], hc)
                    g = torch.addmm(g, hs, T["U_iou"])
                cc = sig(g[:, :H]) * tanh(g[:, 2 * H:])
                if li > 0:
                    fx = sel(G0[s:e, 3 * H:] + P["b_f"], 0, lv["seg"])
                    f = sig(torch.addmm(fx, hc, T["U_f"]))
                    cc = cc.index_add_(0, lv["seg"], f * sel(c, 0, lv["ch"]))
                c[s:e] = cc
                h[s:e] = sig(g[:, H:2 * H]) * tanh(cc)
            return sel(h, 0, bt["roots"])
    elif model == "mvrnn":
        def run(bt):
            N = bt["N"]
            p, M = torch.empty(N, H), torch.empty(N, H, H)
            lv0 = bt["levels"][0]
            w = bt["words"][:lv0["e"]]
            p[:lv0["e"]] = sel(P["Emb"], 0, w)
            M[:lv0["e"]] = sel(P["EmbM"], 0, w)
            for lv in bt["levels"][1:]:
                A, B = sel(M, 0, lv["k0"]), sel(M, 0, lv["k1"])
                a, v = sel(p, 0, lv["k0"]), sel(p, 0, lv["k1"])
                x = torch.cat((torch.bmm(B, a.unsqueeze(2)), torch.bmm(A, v.unsqueeze(2))), 1)
                p[lv["s"]:lv["e"]] = tanh(torch.addmm(P["b"], x.squeeze(2), T["W"]))
                M[lv["s"]:lv["e"]] = torch.matmul(P["WM"], torch.cat((A, B), 1))
            return sel(p, 0, bt["roots"])
    elif model == "dagrnn":
        def run(bt):
            h = torch.empty(bt["N"], H)
            pre = torch.addmm(P["b"], bt["x"], T["W"])  # every node at once
            for li, lv in enumerate(bt["levels"]):
                s, e = lv["s"], lv["e"]
                g = pre[s:e]
                if li > 0:
                    hs = torch.zeros(e - s, H).index_add_(0, lv["seg"], sel(h, 0, lv["ch"]))
                    g = torch.addmm(g, hs, T["U"])
                h[s:e] = tanh(g)
            return sel(h, 0, bt["roots"])
    elif model == "seqlstm":
        def run(bt):
            N = bt["N"]
            h, c = torch.empty(N, H), torch.empty(N, H)
            E = sel(P["Emb"], 0, bt["words"]) + P["b"]  # every element's input at once
            for li, lv in enumerate(bt["levels"]):
                s, e = lv["s"], lv["e"]
                g = E[s:e]
                if li > 0:
                    g = torch.addmm(g, sel(h, 0, lv["k0"]), T["U"])
                cc = sig(g[:, :H]) * tanh(g[:, 2 * H:3 * H])
                if li > 0:
                    cc = cc + sig(g[:, H:2 * H]) * sel(c, 0, lv["k0"])
                c[s:e] = cc
                h[s:e] = sig(g[:, 3 * H:]) * tanh(cc)
            return sel(h, 0, bt["roots"])
    else:
        raise SystemExit("torch_level.py: unknown model '%s'" % model)
    return run


def prepare_level(model, P, H, structs, bs):
    batches = [level_batch(model, structs[i:i + bs]) for i in range(0, len(structs), bs)]
    return make_run(model, P, H), batches


if __name__ == "__main__":
    torch_eager.driver("torch_level.py", prepare_level)
