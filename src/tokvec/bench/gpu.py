"""The GPU benchmark of the input layer: eager, compiled, fused and copy, against the bandwidth limit.

Chapter 10.1, "Making it fast on a GPU", reads its results. Run it on one CUDA GPU::

    python -m tokvec.bench kernels --out src/tokvec/bench/results/gpu-<name>.json

For each configuration it times, in the same run and on the same inputs:

* ``eager``    -- the source tutorials' expression ``emb(ids) * sqrt(d) + PE[:T]`` with PE in the embedding dtype;
* ``compiled`` -- ``torch.compile`` of that expression;
* ``fused``    -- :func:`tokvec.fused.fused_embedding` (needs CUDA and Triton; skipped elsewhere);
* ``copy``     -- ``out.copy_(src)`` of an output-sized tensor: the practical bandwidth ceiling.

Each timed call starts with a cold cache (a buffer larger than the L2 cache is overwritten first),
the device is synchronised around the call (CUDA events on a GPU), and the median of ``repeats``
calls is reported, with ``gbps`` = algorithmic bytes (:func:`tokvec.bench.roofline.bytes_moved`: what a
single pass must move, the same count for eager, compiled and fused) / median time. Before timing,
``compiled`` and ``fused`` are checked against ``eager``. The result is a list of records with the
keys ``device, torch, impl, dtype, batch, seq_len, d_model, vocab_size, median_ms, gbps``.

No GPU was available when this was written: on a CPU it runs (``--device cpu``, small
``--configs``) only so the tests can check what it measures; its numbers there mean little.
"""

import argparse
import statistics
import sys
from collections.abc import Callable, Sequence

import torch

from tokvec import fused as fused_mod
from tokvec.arrays import sinusoidal_table_numpy
from tokvec.bench.common import time_call, write
from tokvec.bench.roofline import bytes_moved
from tokvec.environment import cpu_name

__all__ = ["CONFIGS", "IMPLS", "main", "run_kernels"]

IMPLS = ("eager", "compiled", "fused", "copy")

#: Named sets of (batch, seq_len, d_model, vocab_size, dtype). ``models``: the shapes of real
#: models (Llama-2-7B: d 4096, V 32000; Llama 3 8B: V 128256; GPT-2 small: d 768), training
#: batches and one decoding step; ``tiny``: for trying the code path on a CPU.
CONFIGS: dict[str, list[tuple[int, int, int, int, str]]] = {
    "models": [(64, 2048, 4096, 32000, "bfloat16"),
               (8, 2048, 4096, 128256, "bfloat16"),
               (8, 2048, 4096, 128256, "float32"),
               (32, 512, 768, 32000, "float32"),
               (64, 1, 4096, 32000, "bfloat16")],          # T = 1: one decoding step
    "tiny": [(2, 5, 24, 50, "float32"), (3, 1, 16, 40, "bfloat16")],
}


def _time(fn: Callable[[], object], device: torch.device, flush: torch.Tensor, repeats: int,
          warmup: int) -> list[float]:
    """Milliseconds per call, each call after overwriting ``flush`` (a cold cache).

    On a CUDA GPU the time is read from CUDA events around the call; elsewhere
    :func:`tokvec.bench.common.time_call` reads the clock.
    """
    if device.type != "cuda":
        return time_call(fn, repeats=repeats, warmup=warmup, dev=device, before=flush.zero_)
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        flush.zero_()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize(device)
        times.append(start.elapsed_time(end))
    return times


def run_kernels(configs: Sequence[tuple[int, int, int, int, str]], device: str | torch.device = "cuda", *,
                impls: Sequence[str] = IMPLS, repeats: int = 50, warmup: int = 5, flush_mb: int = 256,
                seed: int = 0, log: Callable[[str], None] | None = None) -> list[dict]:
    """Time each implementation on each configuration; return one record per (configuration, impl)."""
    device = torch.device(device)
    unknown = set(impls) - set(IMPLS)
    if unknown:
        raise ValueError(f"unknown implementations {sorted(unknown)}; choose from {IMPLS}")
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else cpu_name()
    flush = torch.empty(flush_mb * 2**20 // 4, dtype=torch.float32, device=device)
    records = []
    for B, T, d, V, dtype_name in configs:
        dtype = getattr(torch, dtype_name)
        g = torch.Generator(device="cpu").manual_seed(seed)
        weight = torch.randn(V, d, generator=g).to(device=device, dtype=dtype)           # (V, d)
        ids = torch.randint(0, V, (B, T), generator=g).to(device)                         # (B, T)
        table64 = torch.from_numpy(sinusoidal_table_numpy(T, d))                           # (T, d) float64
        pe = table64.to(device=device, dtype=dtype)                                        # the seeds' dtype
        pe32 = table64.to(device=device, dtype=torch.float32)                              # for the fused kernel
        scale = d ** 0.5

        def eager(weight=weight, ids=ids, pe=pe, scale=scale):
            return torch.nn.functional.embedding(ids, weight) * scale + pe                 # three kernels

        src, dst = torch.empty(B, T, d, dtype=dtype, device=device), torch.empty(B, T, d, dtype=dtype, device=device)
        fns = {"eager": eager, "copy": lambda src=src, dst=dst: dst.copy_(src)}
        if "compiled" in impls:
            fns["compiled"] = torch.compile(eager, dynamic=False)
        if "fused" in impls and fused_mod.available(device):
            fns["fused"] = lambda weight=weight, ids=ids, pe32=pe32, scale=scale: fused_mod.fused_embedding(
                ids, weight, pe32, scale, check=False)          # ids valid by construction: randint(0, V)
        elif "fused" in impls and log:
            log(f"fused skipped on {device}: it needs a CUDA GPU and Triton")
        expected = eager().float()
        for impl in ("compiled", "fused"):
            if impl in fns:
                tol = 0.02 * float(expected.abs().max()) if dtype == torch.bfloat16 else 1e-4
                if not torch.allclose(fns[impl]().float(), expected, rtol=0, atol=tol):
                    raise RuntimeError(f"{impl} differs from eager by more than {tol:.3g} at B={B}, T={T}, "
                                       f"d={d}, {dtype_name}: refusing to time a wrong result")
        algorithmic = bytes_moved(B, T, d, dtype_name, impl="fused")
        for impl in [i for i in IMPLS if i in impls and i in fns]:
            median = statistics.median(_time(fns[impl], device, flush, repeats, warmup))
            moved = bytes_moved(B, T, d, dtype_name, impl="copy") if impl == "copy" else algorithmic
            records.append({"device": name, "torch": torch.__version__, "impl": impl, "dtype": dtype_name,
                            "batch": B, "seq_len": T, "d_model": d, "vocab_size": V,
                            "median_ms": round(median, 5), "gbps": round(moved / (median / 1e3) / 1e9, 2)})
            if log:
                log(f"{impl:>8} {dtype_name:>8} B={B:<3} T={T:<5} d={d:<5} V={V:<6} "
                    f"{median:9.4f} ms {records[-1]['gbps']:9.1f} GB/s")
    return records


def main(argv: Sequence[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(prog="python -m tokvec.bench kernels", description=__doc__.split("\n\n")[0])
    parser.add_argument("--configs", choices=sorted(CONFIGS), default="models")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--impls", nargs="+", default=list(IMPLS), choices=IMPLS)
    parser.add_argument("--repeats", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--out", default=None, help="write the list of records as JSON to this file")
    args = parser.parse_args(sys.argv[2:] if argv is None else list(argv))
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        parser.error("no CUDA GPU here: this benchmark is meant for one (use --device cpu --configs tiny to try it)")
    records = run_kernels(CONFIGS[args.configs], args.device, impls=args.impls, repeats=args.repeats,
                          warmup=args.warmup, log=print)
    if args.out:
        write(records, args.out)
        argv_used = sys.argv[1:] if argv is None else ["kernels", *argv]
        print(f"wrote {len(records)} records to {args.out} (command: python -m tokvec.bench {' '.join(argv_used)})")
    return records
