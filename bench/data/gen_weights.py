#!/usr/bin/python3
"""gen_weights.py — seeded weights for a zoo model as an F32 safetensors file.

Tensor names and shapes are the parameter names of docs/models.md, in declaration
order; every element uniform in [-0.1, 0.1] from numpy's default_rng(SEED).
Usage: gen_weights.py MODEL [-D H=256] [-D V=20000] [-D K=8] [-D D=H] [--seed S] -o W.safetensors
"""
import argparse
import json
import struct
import sys

import numpy as np


def params(model, d):
    H, V = d["H"], d["V"]
    D = d.get("D", H)
    table = {
        "treefc": [("Emb", [V, H]), ("W", [H, 2 * H]), ("b", [H])],
        "treegru": [("Emb", [V, H]), ("U_rz", [2 * H, H]), ("b_rz", [2 * H]),
                    ("U_h", [H, H]), ("b_h", [H])],
        "treelstm": [("Emb", [V, 3 * H]), ("U_iou", [3 * H, H]), ("b_iou", [3 * H]),
                     ("U_f", [H, H]), ("b_f", [H])],
        "childsum": [("Emb", [V, H]), ("W_iou", [3 * H, H]), ("U_iou", [3 * H, H]),
                     ("b_iou", [3 * H]), ("W_f", [H, H]), ("U_f", [H, H]), ("b_f", [H])],
        "mvrnn": [("Emb", [V, H]), ("EmbM", [V, H, H]), ("W", [H, 2 * H]), ("b", [H]),
                  ("WM", [H, 2 * H])],
        "dagrnn": [("W", [H, D]), ("U", [H, H]), ("b", [H])],
        "seqlstm": [("Emb", [V, 4 * H]), ("U", [4 * H, H]), ("b", [4 * H])],
    }
    if model not in table:
        sys.exit("gen_weights.py: unknown model '%s'" % model)
    return table[model]


def write_safetensors(path, tensors):
    header, off = {}, 0
    for name, arr in tensors:
        n = arr.size * 4
        header[name] = {"dtype": "F32", "shape": list(arr.shape), "data_offsets": [off, off + n]}
        off += n
    js = json.dumps(header, separators=(",", ":")).encode()
    js += b" " * (-len(js) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(js)))
        f.write(js)
        for _, arr in tensors:
            f.write(np.ascontiguousarray(arr, dtype="<f4").tobytes())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("-D", action="append", default=[], metavar="NAME=VALUE")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("-o", "--output", required=True)
    a = ap.parse_args()
    dims = {"H": 64 if a.model == "mvrnn" else 256, "V": 20000, "K": 8}
    for kv in a.D:
        k, v = kv.split("=", 1)
        dims[k] = int(v)
    rng = np.random.default_rng(a.seed)
    tensors = [(name, rng.uniform(-0.1, 0.1, size=shape).astype(np.float32))
               for name, shape in params(a.model, dims)]
    write_safetensors(a.output, tensors)


if __name__ == "__main__":
    main()
