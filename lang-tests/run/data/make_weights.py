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
  f16         'b' with dtype F16 (read, converted to F32)
  bf16        'W' with dtype BF16 and 'Emb' F64 (read, converted to F32)
  i64         'b' with dtype I64 (refused)
  several     'Emb' named 'enc.Emb.weight', 'W' of shape [4, 2], no 'b', and an
              extra 'c': every problem at once
  h3v12       the shapes of the model with -D H=3 -D V=12
  derived_h5  for models/derived.ctx: 'E' [10, 15], its shape with -D H=5
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
        elif dtype == "BF16":  # the top half of each float32 (exact for these values)
            raw = b"".join(struct.pack("<f", v)[2:] for v in values)
        elif dtype == "F64":
            raw = struct.pack("<%dd" % len(values), *values)
        elif dtype == "I64":
            raw = struct.pack("<%dq" % len(values), *[int(v * 16) for v in values])
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
        "bf16": encode(good, {"W": "BF16", "Emb": "F64"}),
        "i64": encode(good, {"b": "I64"}),
        "several": encode({"enc.Emb.weight": good["Emb"], "W": tensor([4, 2], 3),
                           "c": tensor([3], 1)}),
        "derived_h5": encode({"E": tensor([10, 15], 2)}),
        "h3v12": encode({"Emb": tensor([12, 3], 0), "W": tensor([3, 6], 3),
                         "b": tensor([3], 5)}),
    }
    for name, data in files.items():
        with open(os.path.join(HERE, name + ".safetensors"), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
