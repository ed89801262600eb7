#!/usr/bin/env python3
"""The register tiles' accumulators stay in registers (codegen/cg_tile.c).

A tile's inner loop (one step of r: weight vectors times a broadcast x,
added into nprod x rows x vectors accumulators) is sized to fit the vector
registers. It only does if nothing else is held in registers across it: the
epilogues' biases and the constants of sigmoid and tanh, which LLVM hoists
out of every loop they do not change in, are kept out of the tile's function
(cg_tile.c, emit_epilogues). Without that, treelstm at H = 64 kept all 24
accumulators of U_f's tile on the stack, a load and a store beside every
multiply-add.

For the models and sizes where the whole output of a product is one block of
the tile (H = 64 and 96 with AVX-512's blocks of 64 floats; and the same
kernels for AVX2), `ctx check --emit=asm` must show no stack access in the
innermost loops of the kernel's tile functions (NAME.tileN) that do
multiply-adds. The CPU is named (--cpu), so the assembly does not depend on
the host.

Usage: tile_registers.py --ctx PATH/TO/ctx
"""
import argparse
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS = ["treelstm", "narytreelstm"]
SIZES = [64, 96]
CPUS = ["x86-64-v4", "x86-64-v3"]

FUNC = re.compile(r"^([A-Za-z_][\w.]*):")
LABEL = re.compile(r"^(\.LBB\w+):")
JUMP = re.compile(r"^\s+j\w+\s+(\.LBB\w+)")
STACK = re.compile(r"\(%rsp\)")


def functions(asm):
    """{name: [lines]} of the assembly's functions."""
    out, name = {}, None
    for line in asm.split("\n"):
        m = FUNC.match(line)
        if m:
            name = m.group(1)
            out[name] = []
        elif name:
            out[name].append(line)
    return out


def inner_loops(body):
    """The innermost loops of a function: [start, end] line ranges from a
    label to the last backward jump to it that holds no other such loop."""
    labels = {m.group(1): i for i, line in enumerate(body) if (m := LABEL.match(line))}
    loops = []
    for i, line in enumerate(body):
        m = JUMP.match(line)
        if m and m.group(1) in labels and labels[m.group(1)] < i:
            loops.append((labels[m.group(1)], i))
    return [(a, b) for a, b in loops
            if not any(a <= c and d <= b and (c, d) != (a, b) for c, d in loops)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ctx", required=True)
    a = ap.parse_args()
    failures, checked = [], 0
    for model in MODELS:
        for h in SIZES:
            for cpu in CPUS:
                case = f"{model} H={h} --cpu {cpu}"
                r = subprocess.run([a.ctx, "check", os.path.join(ROOT, "examples", model + ".ctx"),
                                    "-D", f"H={h}", "--cpu", cpu, "--emit=asm"],
                                   capture_output=True, text=True)
                if r.returncode != 0:
                    failures.append(f"{case}: exit {r.returncode}: {r.stderr.strip()}")
                    continue
                tiles = {n: b for n, b in functions(r.stdout).items()
                         if re.search(r"\.tile\d+$", n)}
                if not tiles:
                    failures.append(f"{case}: no tile functions in the assembly")
                for name, body in tiles.items():
                    loops = [body[s:e + 1] for s, e in inner_loops(body)]
                    products = [lp for lp in loops if sum("vfmadd" in x for x in lp) >= 8]
                    if not products:
                        failures.append(f"{case}: {name} has no loop of multiply-adds")
                    for lp in products:
                        checked += 1
                        stack = [x.strip() for x in lp if STACK.search(x)]
                        if stack:
                            fmas = sum("vfmadd" in x for x in lp)
                            failures.append(f"{case}: {name}: a loop of {fmas} multiply-adds "
                                            f"with {len(stack)} stack accesses, e.g. {stack[0]}")
    for f in failures:
        print("FAIL", f)
    print(f"{checked} tile loops checked; {'passed' if not failures else 'failed'}: "
          f"{len(failures)} of the checks failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
