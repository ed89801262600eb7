"""torch_eager.py — PyTorch eager on the GPU for the GPU check's latency table
(check.py; docs/cuda.md): the oracle's model equations (zoo.py, one function
per model) evaluated node by node with torch tensors on the GPU, as a
straightforward PyTorch implementation of a recursive model runs. zoo.py's
numpy calls go to torch through a small stand-in for its `np`. Weights are
random (only the time is used); the time is the whole input per call, inputs
already parsed, with torch.cuda.synchronize() at the end.
"""

import contextlib
import time
import types

import torch

import zoo

_real_np = zoo.np


def available():
    return torch.cuda.is_available()


def _shim():
    dev = torch.device("cuda")
    return types.SimpleNamespace(
        exp=torch.exp, tanh=torch.tanh, errstate=lambda **kw: contextlib.nullcontext(),
        maximum=lambda x, y: torch.clamp_min(x, y),
        concatenate=lambda parts, axis=0: torch.cat(parts, axis),
        zeros=lambda n, dtype=None: torch.zeros(n, device=dev))


def _params(model, d):
    m = types.SimpleNamespace(**d)
    m.dtype = torch.float32
    g = torch.Generator(device="cpu").manual_seed(0)
    for name, shape in model.params(d):
        t = (torch.rand(shape, generator=g) - 0.5) * 0.2
        setattr(m, name, t.to("cuda"))
    return m


def median_us(model_name, path, fmt, dims, reps=20):
    model = zoo.MODELS[model_name]
    d = zoo.resolve_dims(model, dims)
    structures, vocab = zoo.read_input(path, fmt, None)
    preps = [zoo.prepare(model, d, st, k, path, vocab, _real_np.float32)
             for k, st in enumerate(structures)]
    for p in preps:  # feature vectors to the GPU; word ids stay ints
        p.values = [torch.as_tensor(v, device="cuda") if isinstance(v, _real_np.ndarray) else v
                    for v in p.values]
    m = _params(model, d)
    zoo.np = _shim()
    try:
        times = []
        for r in range(reps + 2):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for p in preps:
                zoo.evaluate_structure(model, m, p, False)
            torch.cuda.synchronize()
            if r >= 2:  # two warm-up calls
                times.append((time.perf_counter() - t0) * 1e6)
    finally:
        zoo.np = _real_np
    times.sort()
    return times[len(times) // 2]
