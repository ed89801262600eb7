#!/usr/bin/env python3
"""run_test.py — the aot_embed test: `ctx build` a model, build embed.c against
the generated header (once with the shared library, once with the static
archive), run it, and compare its printed outputs with `ctx run` (the JIT,
float32: equal to rounding) and `ctx run --interp` (float64: 1e-4 relative,
1e-5 absolute), with the seeded default weights and with a weights file.
Also checks ctx build's command-line errors.

  run_test.py --ctx CTX --cc CC [--cflags FLAGS] --src SOURCE_DIR --tmp DIR
"""
import argparse
import os
import re
import shlex
import shutil
import struct
import subprocess
import sys
import ast
import json
import random

H = 16


def run(cmd, env=None, expect=0):
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode != expect:
        sys.exit(f"FAIL: {' '.join(cmd)}: exit {p.returncode}, wanted {expect}\n"
                 f"{p.stdout}{p.stderr}")
    return p


def parse_rows(text):
    rows = []
    for line in text.splitlines():
        idx, _, vals = line.partition(":")
        assert int(idx) == len(rows), line
        rows.append([float(v) for v in vals.split()])
    return rows


def read_npy(path):
    """The rows of a 2-D '<f4' or '<f8' .npy file (version 1.0, C order)."""
    data = open(path, "rb").read()
    assert data[:6] == b"\x93NUMPY", path
    hlen = struct.unpack("<H", data[8:10])[0]
    head = ast.literal_eval(data[10:10 + hlen].decode())
    assert not head["fortran_order"] and head["descr"] in ("<f4", "<f8"), head
    rows, cols = head["shape"]
    code = "f" if head["descr"] == "<f4" else "d"
    vals = struct.unpack("<%d%s" % (rows * cols, code), data[10 + hlen:])
    return [list(vals[r * cols:(r + 1) * cols]) for r in range(rows)]


def assert_close(got, want, rtol, atol, what, width=H):
    assert len(got) == len(want) and len(got) > 1, (what, len(got), len(want))
    for r, (g, w) in enumerate(zip(got, want)):
        assert len(g) == len(w) == width, (what, r, len(g), len(w))
        for c, (x, y) in enumerate(zip(g, w)):
            if abs(x - y) > atol + rtol * abs(y):
                sys.exit(f"FAIL: {what}: row {r} value {c}: {x!r} vs {y!r}")
    assert max(abs(x) for g in got for x in g) > 1e-3, what  # real numbers, not zeros


def write_weights(header, path, seed, dtype="F32"):
    """Random tensors shaped as the header lists them, as safetensors of
    [dtype] F32 or F64."""
    params = re.findall(r"^ \*   (\w+) \[([\d, ]*)\]$", open(header).read(), re.M)
    assert params, "no parameters listed in the header"
    rng = random.Random(seed)
    meta, blobs, off = {}, [], 0
    for name, dims in params:
        shape = [int(d) for d in dims.split(",")] if dims else []
        n = 1
        for d in shape:
            n *= d
        b = struct.pack("<%d%s" % (n, "d" if dtype == "F64" else "f"),
                        *(rng.random() * 0.4 - 0.2 for _ in range(n)))
        meta[name] = {"dtype": dtype, "shape": shape, "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    head = json.dumps(meta).encode()
    head += b" " * (-len(head) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(head)) + head + b"".join(blobs))


def check_errors(a, model, out):
    ctx = a.ctx
    run([ctx, "build", model], expect=2)
    run([ctx, "build", model, "-o", os.path.join(a.src, "README.md")], expect=2)
    run([ctx, "build", model, "-o", os.path.join(out, "no", "such", "dir")], expect=2)
    env = dict(os.environ, CC="/nonexistent/cc")
    p = run([ctx, "build", model, "-D", f"H={H}", "-o", out + "_nocc"], env=env, expect=70)
    assert "cannot run" in p.stderr and "CC" in p.stderr, p.stderr
    run([ctx, "build", "--help"])
    p = run([ctx, "build", model, "--name", "1x", "-o", out], expect=2)
    assert "not a C identifier" in p.stderr, p.stderr
    p = run([ctx, "build", model, "--name", "ctxrt_x", "-o", out], expect=2)
    assert "starts like the runtime's symbols" in p.stderr, p.stderr
    p = run([ctx, "build", model, "--cpu", "pentium", "-o", out], expect=2)
    assert "give native, generic, x86-64-v3 or x86-64-v4" in p.stderr, p.stderr
    # a runtime library that is not an archive of this host's objects: ctx
    # build, which writes libNAME.a itself, says so (where it looked for the
    # runtime in an empty prefix is where the damaged one goes)
    home = out + "_home"
    os.makedirs(home)
    p = run([ctx, "build", model, "-o", out], env=dict(os.environ, CTX_HOME=home), expect=70)
    lib = re.search(r" at (\S+libctxrt\.a) \(CTX_HOME\)", p.stderr).group(1)
    os.makedirs(os.path.join(home, "include"), exist_ok=True)
    os.makedirs(os.path.dirname(lib), exist_ok=True)
    shutil.copy(os.path.join(a.src, "runtime", "ctxrt.h"), os.path.join(home, "include"))
    open(lib, "w").write("not an archive\n")
    p = run([ctx, "build", model, "-D", f"H={H}", "-o", out],
            env=dict(os.environ, CTX_HOME=home), expect=70)
    assert f"cannot index '{lib}': libctxrt.a is not an ELF object of this host" in p.stderr, \
        p.stderr


def check_converted_note(a, model, trees, header, exe, tmp):
    """F64 weights: treelstm_create's err holds ctx run's note (embed prints
    it), and the outputs are ctx run's with the same file."""
    w64 = os.path.join(tmp, "w64.safetensors")
    write_weights(header, w64, 11, "F64")
    npy = os.path.join(tmp, "w64.npy")
    p = run([a.ctx, "run", model, "-D", f"H={H}", "--input", trees, "--output", npy,
             "--weights", w64])
    notes = [l for l in p.stderr.splitlines() if ": note: " in l]
    assert notes == [f"{w64}: note: 5 tensors converted to float32 from F64"], p.stderr
    got = run([exe, "--weights", w64, trees])
    assert got.stderr.splitlines() == ["embed: " + notes[0]], got.stderr
    assert_close(parse_rows(got.stdout), read_npy(npy), 1e-6, 1e-7, "F64 weights vs ctx run")
    plain = run([exe, trees])  # the seeded defaults: no note
    assert plain.stderr == "", plain.stderr


def ctx_run_rows(a, model, h, trees, tmp):
    npy = os.path.join(tmp, f"ref{h}.npy")
    run([a.ctx, "run", model, "-D", f"H={h}", "--input", trees, "--output", npy])
    return read_npy(npy)


def check_compile_parts(a, model, trees, env):
    """The kernel compiled on one thread (CTX_COMPILE_THREADS=1: one object)
    and in two parts on two (NAME_kernel_part.o beside NAME_kernel.o): the
    .a and the .so of either give the same outputs, bit for bit."""
    rows = []
    for threads in ("1", "2"):
        out = os.path.join(a.tmp, "parts" + threads)
        run([a.ctx, "build", model, "-D", f"H={H}", "-o", out],
            env=dict(env, CTX_COMPILE_THREADS=threads))
        part = os.path.join(out, "treelstm_kernel_part.o")
        assert os.path.exists(part) == (threads == "2"), (threads, os.listdir(out))
        for lib in ("a", "so"):
            exe = os.path.join(out, "embed_" + lib)
            libargs = ([os.path.join(out, "libtreelstm.a"), "-ljansson", "-lm", "-lpthread"]
                       if lib == "a" else ["-L", out, "-ltreelstm", "-Wl,-rpath," + out])
            embed = os.path.join(a.src, "examples", "embed", "embed.c")
            run(shlex.split(a.cc) + shlex.split(a.cflags) + ["-std=c11", "-I", out, embed] +
                libargs + ["-o", exe])
            rows.append(parse_rows(run([exe, trees]).stdout))
    # a rebuild on one thread removes the earlier build's second part
    out = os.path.join(a.tmp, "parts2")
    run([a.ctx, "build", model, "-D", f"H={H}", "-o", out], env=dict(env, CTX_COMPILE_THREADS="1"))
    assert not os.path.exists(os.path.join(out, "treelstm_kernel_part.o")), os.listdir(out)
    for r in rows[1:]:
        assert_close(r, rows[0], 0, 0, "one thread's and two threads' kernel")


def check_two_libraries(a, model, trees, env):
    """treelstm at H=64 as 'a' and H=128 as 'b', both archives in one program."""
    outs = {n: os.path.join(a.tmp, "lib_" + n) for n in ("a", "b")}
    for name, h in (("a", 64), ("b", 128)):
        run([a.ctx, "build", model, "-D", f"H={h}", "--name", name, "-o", outs[name]], env=env)
    exe = os.path.join(a.tmp, "two_models")
    src = os.path.join(a.src, "examples", "embed", "two_models.c")
    run(shlex.split(a.cc) + shlex.split(a.cflags) +
        ["-std=c11", "-Wall", "-Wextra", "-Werror", "-I", outs["a"], "-I", outs["b"], src,
         os.path.join(outs["a"], "liba.a"), os.path.join(outs["b"], "libb.a"),
         "-ljansson", "-lm", "-lpthread", "-o", exe])
    lines = run([exe, trees]).stdout.splitlines()
    for name, h in (("a", 64), ("b", 128)):
        got = parse_rows("\n".join(l[2:] for l in lines if l.startswith(name + " ")))
        assert_close(got, ctx_run_rows(a, model, h, trees, a.tmp), 1e-6, 1e-7,
                     f"two_models {name} (H={h}) vs ctx run", width=h)


def host_has_avx512():
    try:
        return any(l.startswith("flags") and " avx512f" in l for l in open("/proc/cpuinfo"))
    except OSError:
        return False


# The runtime's functions that use AVX or AVX-512 only where the CPU has it
# (ctxrt__to_f32 chooses one per call): a library for any CPU may hold them.
RUNTIME_DISPATCHED = {"to_f32_avx", "to_f32_avx512"}


def wide_registers(path):
    """{function: (zmm, ymm)} of the functions in [path] that use them."""
    found, fn = {}, None
    for line in run(["objdump", "-d", "--no-show-raw-insn", path]).stdout.splitlines():
        m = re.match(r"^[0-9a-f]+ <([^>]+)>:$", line)
        if m:
            fn = m.group(1)
        elif "%zmm" in line or "%ymm" in line:
            z, y = found.get(fn, (False, False))
            found[fn] = (z or "%zmm" in line, y or "%ymm" in line)
    return found


def check_cpu_levels(a, model, trees, env):
    """--cpu generic: no AVX-512 (zmm) nor AVX (ymm) instruction in the
    library outside the runtime's dispatched functions, and the same numbers;
    x86-64-v3: AVX but no AVX-512 there; x86-64-v4 and native on an AVX-512
    host: zmm (so the check can fail)."""
    if not os.uname().machine == "x86_64":
        return
    want = ctx_run_rows(a, model, H, trees, a.tmp)
    for cpu in ("generic", "x86-64-v3", "x86-64-v4", "native"):
        out = os.path.join(a.tmp, "cpu_" + cpu)
        run([a.ctx, "build", model, "-D", f"H={H}", "--cpu", cpu, "-o", out], env=env)
        found = wide_registers(os.path.join(out, "libtreelstm.so"))
        own = [v for f, v in found.items() if f not in RUNTIME_DISPATCHED]
        zmm, ymm = any(z for z, _ in own), any(y for _, y in own)
        if cpu == "generic":
            assert not zmm and not ymm, f"--cpu generic: zmm {zmm}, ymm {ymm}"
        elif cpu == "x86-64-v3":
            assert not zmm and ymm, f"--cpu x86-64-v3: zmm {zmm}, ymm {ymm}"
        elif cpu == "x86-64-v4":
            assert zmm, "--cpu x86-64-v4: no zmm register"
            if not host_has_avx512():
                continue  # built and inspected; it cannot run here
        elif host_has_avx512():
            assert zmm, "--cpu native on an AVX-512 host: no zmm register"
        header = open(os.path.join(out, "treelstm.h")).read()
        assert (cpu in header) == (cpu != "native"), cpu
        exe = os.path.join(a.tmp, "embed_" + cpu)
        run(shlex.split(a.cc) + shlex.split(a.cflags) +
            ["-std=c11", "-I", out, os.path.join(a.src, "examples", "embed", "embed.c"),
             os.path.join(out, "libtreelstm.a"), "-ljansson", "-lm", "-lpthread", "-o", exe])
        got = parse_rows(run([exe, trees]).stdout)
        assert_close(got, want, 1e-5, 1e-6, f"--cpu {cpu} vs ctx run")


def main():
    ap = argparse.ArgumentParser()
    for k in ("ctx", "cc", "src", "tmp"):
        ap.add_argument("--" + k, required=True)
    ap.add_argument("--cflags", default="")
    a = ap.parse_args()
    shutil.rmtree(a.tmp, ignore_errors=True)
    os.makedirs(a.tmp)
    model = os.path.join(a.src, "examples", "treelstm.ctx")
    trees = os.path.join(a.src, "examples", "data", "sst_sample.ptb")
    out = os.path.join(a.tmp, "out dir")  # a blank in the path, as users' paths have
    env = dict(os.environ, CC=a.cc)
    run([a.ctx, "build", model, "-D", f"H={H}", "-o", out], env=env)
    # the archive ctx writes (driver_archive.c) is the same bytes on a rebuild
    # and lists what the system's tools list
    first = open(os.path.join(out, "libtreelstm.a"), "rb").read()
    run([a.ctx, "build", model, "-D", f"H={H}", "-o", out], env=env)
    assert open(os.path.join(out, "libtreelstm.a"), "rb").read() == first, "archive not stable"
    if shutil.which("nm"):
        armap = run(["nm", "--print-armap", os.path.join(out, "libtreelstm.a")]).stdout
        assert re.search(r"^treelstm_run_ptb in treelstm_model\.o$", armap, re.M), armap[:2000]
        assert re.search(r"^ctx_treelstm_kernel in treelstm_kernel\.o$", armap, re.M), armap[:2000]
        assert re.search(r"^ctxrt_model_create in ctxrt_model\.c\.o$", armap, re.M), armap[:2000]
    cc, flags = shlex.split(a.cc), shlex.split(a.cflags)
    embed = os.path.join(a.src, "examples", "embed", "embed.c")
    exe_so, exe_a = os.path.join(a.tmp, "embed_so"), os.path.join(a.tmp, "embed_a")
    run(cc + flags + ["-std=c11", "-Wall", "-Wextra", "-Werror", "-I", out, embed, "-L", out,
                      "-ltreelstm", "-Wl,-rpath," + out, "-o", exe_so])
    run(cc + flags + ["-std=c11", "-I", out, embed, os.path.join(out, "libtreelstm.a"),
                      "-ljansson", "-lm", "-lpthread", "-o", exe_a])
    check_errors(a, model, os.path.join(a.tmp, "bad"))
    weights = os.path.join(a.tmp, "w.safetensors")
    write_weights(os.path.join(out, "treelstm.h"), weights, 7)
    check_converted_note(a, model, trees, os.path.join(out, "treelstm.h"), exe_a, a.tmp)
    for wargs in ([], ["--weights", weights]):
        ref = {}
        for engine in ("jit", "interp"):
            npy = os.path.join(a.tmp, engine + ".npy")
            run([a.ctx, "run", model, "-D", f"H={H}", "--input", trees, "--output", npy] +
                (["--interp"] if engine == "interp" else []) + wargs)
            ref[engine] = read_npy(npy)
        for exe in (exe_so, exe_a):
            got = parse_rows(run([exe] + wargs + [trees]).stdout)
            what = f"{os.path.basename(exe)} {' '.join(wargs) or 'default weights'}"
            assert_close(got, ref["jit"], 1e-6, 1e-7, what + " vs ctx run")
            assert_close(got, ref["interp"], 1e-4, 1e-5, what + " vs ctx run --interp")
            # the same trees passed as arrays: the same forest, bit for bit
            for mode in ("--arrays", "--heads"):
                got_m = parse_rows(run([exe] + wargs + [mode, trees]).stdout)
                assert_close(got_m, got, 0, 0, what + " " + mode)
    # one thread, three threads (more than the cores), CTXRT_THREADS: bit for bit
    for targs, tenv in ((["--threads", "1"], None), (["--threads", "3"], None),
                        ([], dict(os.environ, CTXRT_THREADS="2"))):
        cmd = [exe_a, "--weights", weights] + targs + [trees]
        got_t = parse_rows(run(cmd, env=tenv).stdout)
        assert_close(got_t, got, 0, 0, f"embed_a {targs or tenv['CTXRT_THREADS']} threads")
    p = run([exe_so, "--threads", "-1", trees], expect=1)
    assert "thread count" in p.stderr, p.stderr
    bad = os.path.join(a.tmp, "bad.ptb")
    open(bad, "w").write("(1 (2 x))\n")
    p = run([exe_so, bad], expect=1)
    assert "not an integer id" in p.stderr, p.stderr
    open(bad, "w").write("(1 (2 3) (2 4) (2 5))\n")
    for mode in ("--arrays", "--heads"):
        p = run([exe_so, mode, bad], expect=1)
        assert "arrays: error: structure 1, node 0: 3 children, more than the maximum 2" \
            in p.stderr, p.stderr
    check_two_libraries(a, model, trees, env)
    check_compile_parts(a, model, trees, env)
    check_cpu_levels(a, model, trees, env)
    print(f"aot_embed: ok ({len(got)} trees, H={H}, .so and .a, default and file weights, "
          "text and arrays, two libraries in one program, a kernel in one and two parts, "
          "--cpu levels)")


if __name__ == "__main__":
    main()
