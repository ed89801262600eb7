#!/usr/bin/env python3
"""make_weights.py — writes the safetensors files of the `ctx run` tests.

    python3 lang-tests/run/data/make_weights.py     # rewrites the *.safetensors here

All for models/tree.ctx (Emb [10, 2], W [2, 4], b [2]); the values are fixed
multiples of 1/16 (exact in float32), so the expected outputs can be checked
by hand or with the oracle (zoo.py treefc -D H=2 -D V=10).
  good        the three tensors, F32
  truncated   good with its last 4 bytes cut off
  missing     no 'b'
  extra       good plus a tensor 'c' the model does not declare
  misshaped   'W' of shape [4, 2]
  f16         'b' with dtype F16
"""
import json
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


def tensor(shape, start):
    n = 1
    for d in shape:
        n *= d
    return shape, [((start + k) % 9 - 4) / 16.0 for k in range(n)]


def encode(tensors, dtypes=None):
    """Bytes of a safetensors file: header length, JSON header, data."""
    header, data = {}, b""
    for name, (shape, values) in tensors.items():
        dtype = (dtypes or {}).get(name, "F32")
        if dtype == "F16":
            raw = struct.pack("<%de" % len(values), *values)
        else:
            raw = struct.pack("<%df" % len(values), *values)
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + data


def main():
    good = {"Emb": tensor([10, 2], 0), "W": tensor([2, 4], 3), "b": tensor([2], 5)}
    files = {
        "good": encode(good),
        "truncated": encode(good)[:-4],
        "missing": encode({k: v for k, v in good.items() if k != "b"}),
        "extra": encode(dict(good, c=tensor([3], 1))),
        "misshaped": encode(dict(good, W=tensor([4, 2], 3))),
        "f16": encode(good, {"b": "F16"}),
    }
    for name, data in files.items():
        with open(os.path.join(HERE, name + ".safetensors"), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
