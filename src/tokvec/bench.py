"""What vectorization buys: time the same input layer in pure Python, NumPy and PyTorch.

Taught in chapter 10, "What vectorization buys" (``10_vectorization``). Run it as a script::

    python -m tokvec.bench                      # the default sizes, results printed as a table
    python -m tokvec.bench --out results.json   # ... and written to a JSON file

Every implementation computes ``emb(ids) * sqrt(d) + PE[:T]`` for the same ids and the same
table, so the times compare like with like:

* ``python``  -- :func:`tokvec.reference.embed`, one sequence at a time (float64, pure Python);
* ``numpy``   -- :func:`tokvec.arrays.embed_numpy` (float32);
* ``seed``    -- the seeds' eager PyTorch expression ``emb(x) * math.sqrt(d) + pe[:T]``, no checks;
* ``layer``   -- :class:`tokvec.layers.TransformerEmbedding` in eval mode, input checks included;
* ``fused``   -- the layer's arithmetic alone, ``torch.add(pe[:T], emb(x), alpha=sqrt(d))``: one
  kernel for the multiply and the add, and no input checks. ``seed`` against ``fused`` measures
  the fusion, ``fused`` against ``layer`` the cost of the checks.

``seed``, ``layer`` and ``fused`` run on the CPU, and also on ``cuda`` or ``mps`` when present. Each size
runs a few warm-up calls of every implementation, then ``repeats`` timed rounds that call each
implementation once (interleaved, so noise hits all alike; a GPU is synchronised before the
clock is read), and reports the median. The JSON file records the machine, the
versions and the command, so a number is never separated from where it was measured.
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import torch

from tokvec import reference
from tokvec.arrays import check_ids, embed_numpy, sinusoidal_table_numpy
from tokvec.display import versions
from tokvec.layers import TransformerEmbedding

__all__ = ["DEFAULT_SIZES", "RESULTS_DIR", "cpu_name", "load", "machine", "main", "run", "time_call"]

#: (batch B, sequence length T, model width d): from a toy batch to the one named in issue 4.
DEFAULT_SIZES: tuple[tuple[int, int, int], ...] = ((1, 32, 32), (4, 128, 128), (16, 128, 512), (16, 512, 512))


def cpu_name() -> str:
    """The CPU model as the operating system names it (``platform.processor()`` is often empty)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine() -> dict:
    """Where the numbers come from: CPU model, cores PyTorch uses, GPU name (or None)."""
    gpu = torch.cuda.get_device_name() if torch.cuda.is_available() else (
        "Apple MPS" if torch.backends.mps.is_available() else None)
    return {"cpu": cpu_name(), "cpu_count": os.cpu_count(), "torch_threads": torch.get_num_threads(),
            "gpu": gpu, "system": platform.system(), "machine": platform.machine()}


def _synchronize(dev: torch.device) -> None:
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)
    elif dev.type == "mps":
        torch.mps.synchronize()


def time_call(fn: Callable[[], object], *, repeats: int, warmup: int, dev: torch.device | None = None) -> list[float]:
    """Call ``fn`` ``warmup`` times untimed, then ``repeats`` times; return each time in milliseconds.

    On a GPU, kernels run asynchronously: the device is synchronised before each clock read, so
    a time covers the work, not only its launch.
    """
    dev = dev or torch.device("cpu")
    for _ in range(warmup):
        fn()
    _synchronize(dev)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        _synchronize(dev)
        times.append((time.perf_counter() - start) * 1e3)
    return times


def _implementations(B: int, T: int, d: int, V: int, seed: int, devices: Sequence[torch.device],
                     python_limit: int):
    """Yield ``(impl, device, dtype, fn)`` for one size; all share ids, weights and table."""
    gen = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, V, (B, T), generator=gen)                    # (B, T) int64
    torch.manual_seed(seed)
    layer = TransformerEmbedding(V, d, T, dropout=0.1).eval()           # weight (V, d) float32
    weight = layer.token.weight.detach()
    if B * T * d <= python_limit:
        W_e = reference.transpose((weight.double() * math.sqrt(d)).tolist())  # d x V, paper layout
        W_p = reference.transpose(sinusoidal_table_numpy(T, d).tolist())      # d x T
        rows = ids.tolist()
        yield "python", "cpu", "float64", lambda: [reference.embed(x, W_e, W_p) for x in rows]
    ids_np, weight_np = ids.numpy(), weight.numpy()
    table_np = sinusoidal_table_numpy(T, d, dtype=np.float32)
    yield "numpy", "cpu", "float32", lambda: embed_numpy(ids_np, weight_np, table_np)
    for dev in devices:
        lay = copy.deepcopy(layer).to(dev)                               # same weights, on dev
        x, emb, pe = ids.to(dev), lay.token, lay.pe                      # the seeds' pieces, same numbers

        def seed_eager(x=x, emb=emb, pe=pe):
            return emb(x) * math.sqrt(d) + pe[:T]                        # three kernels, no checks

        def fused(x=x, emb=emb, pe=pe):
            return torch.add(pe[:T], emb(x), alpha=math.sqrt(d))          # the layer's arithmetic, no checks

        yield "seed", dev.type, "float32", seed_eager
        yield "layer", dev.type, "float32", lambda lay=lay, x=x: lay(x)
        yield "fused", dev.type, "float32", fused
        # the layer's input check alone, on the same ids: how much of layer - fused it explains
        yield "checks", dev.type, "int64", lambda x=x: check_ids(x, V, T)


def run(sizes: Sequence[tuple[int, int, int]] = DEFAULT_SIZES, *, vocab_size: int = 4096, repeats: int = 20,
        warmup: int = 3, devices: Sequence[str] | None = None, python_limit: int = 2**22, seed: int = 0,
        log: Callable[[str], None] | None = None) -> list[dict]:
    """Time every implementation at every size; return one record per (size, implementation).

    A record holds ``impl, device, dtype, batch, seq_len, d_model, vocab_size, median_ms, min_ms,
    repeats`` and ``tokens_per_s``. Pure Python runs only where ``B*T*d <= python_limit`` (it
    would take minutes above) and with at most 3 repeats (and 1 warm-up call). ``devices`` defaults to the CPU plus
    the GPU found by :func:`tokvec.layers.device`, if any.

    The calls are interleaved: after every implementation has warmed up, each round times one
    call of each, so a disturbance (another program taking a core for a moment) hits all of them
    alike instead of spoiling the median of whichever happened to be running. The order rotates
    from round to round, so no implementation always runs right after the same neighbour (one
    that leaves large temporary tensors behind slows the next call down: with a fixed order the
    layer, always timed after the seeds' three-tensor expression, looked 0.3 ms slower than the
    same arithmetic at 16x512x512).
    """
    if devices is None:
        from tokvec.layers import device
        devices = ["cpu"] + ([device().type] if device().type != "cpu" else [])
    devs = [torch.device(name) for name in devices]
    records = []
    with torch.inference_mode():
        for B, T, d in sizes:
            impls = list(_implementations(B, T, d, vocab_size, seed, devs, python_limit))
            rounds = {impl: min(repeats, 3) if impl[0] == "python" else repeats for impl in impls}
            for impl in impls:                                   # warm up everyone first
                time_call(impl[3], repeats=0, warmup=1 if impl[0] == "python" else warmup,
                          dev=torch.device(impl[1]))
            times = {impl: [] for impl in impls}
            for r in range(repeats):                             # interleaved: one call of each per round,
                for impl in impls[r % len(impls):] + impls[:r % len(impls)]:  # starting one further each round
                    if r < rounds[impl]:
                        times[impl] += time_call(impl[3], repeats=1, warmup=0, dev=torch.device(impl[1]))
            for (impl, dev, dtype, _), ts in times.items():
                median = statistics.median(ts)
                records.append({"impl": impl, "device": dev, "dtype": dtype, "batch": B, "seq_len": T,
                                "d_model": d, "vocab_size": vocab_size, "median_ms": round(median, 4),
                                "min_ms": round(min(ts), 4), "repeats": len(ts),
                                "tokens_per_s": round(B * T / (median / 1e3))})
                if log:
                    log(f"{impl:>6} {dev:>4}  B={B:<3} T={T:<4} d={d:<4} median {median:10.3f} ms")
    return records


#: The committed results of the course repository (``benchmarks/results``), next to ``src/``.
RESULTS_DIR = Path(__file__).resolve().parents[2] / "benchmarks" / "results"


def load(path) -> dict:
    """Read a results file written by ``python -m tokvec.bench --out``.

    ``path`` is a file path, or the bare name of a committed file such as
    ``"cpu-2core-xeon.json"``, looked up in :data:`RESULTS_DIR` (so a notebook finds it from
    any working directory).
    """
    path = Path(path)
    if not path.exists() and path.name == str(path) and (RESULTS_DIR / path).exists():
        path = RESULTS_DIR / path
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def _parse_size(text: str) -> tuple[int, int, int]:
    try:
        B, T, d = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"a size is BxTxd, e.g. 16x512x512; got {text!r}") from None
    if min(B, T, d) < 1:
        raise argparse.ArgumentTypeError(f"B, T and d must be positive, got {text!r}")
    return B, T, d


def main(argv: Sequence[str] | None = None) -> dict | list:
    """The command line; ``python -m tokvec.bench kernels ...`` runs :mod:`tokvec.kernelbench` (GPU)."""
    if (sys.argv[1:] if argv is None else list(argv))[:1] == ["kernels"]:
        from tokvec import kernelbench
        return kernelbench.main(None if argv is None else list(argv)[1:])
    parser = argparse.ArgumentParser(prog="python -m tokvec.bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=_parse_size, nargs="+", default=list(DEFAULT_SIZES), metavar="BxTxd")
    parser.add_argument("--vocab-size", type=int, default=4096)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--devices", nargs="+", default=None, help="default: cpu and the GPU if present")
    parser.add_argument("--threads", type=int, default=None, help="torch.set_num_threads (default: unchanged)")
    parser.add_argument("--out", default=None, help="write the results as JSON to this file")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    records = run(args.sizes, vocab_size=args.vocab_size, repeats=args.repeats, warmup=args.warmup,
                  devices=args.devices, log=print)
    argv_used = sys.argv[1:] if argv is None else list(argv)
    result = {"command": " ".join(["python -m tokvec.bench", *argv_used]), "machine": machine(),
              "versions": versions(("numpy", "torch", "tokvec")), "records": records}
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            json.dump(result, f, indent=1)
            f.write("\n")
        print(f"wrote {len(records)} records to {args.out}")
    return result


if __name__ == "__main__":
    main()
