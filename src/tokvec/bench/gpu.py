"""The GPU benchmark of the input layer: eager, compiled, fused and copy, against the bandwidth limit.

Chapter 10.1, "Making it fast on a GPU", reads its results. Run it on one CUDA GPU::

    python -m tokvec.bench kernels --out src/tokvec/bench/results/gpu-<name>.json

For each configuration it times, in the same run and on the same inputs:

* ``eager``    -- the source tutorials' expression ``emb(ids) * sqrt(d) + PE[:T]`` with PE in the embedding dtype;
* ``compiled`` -- ``torch.compile`` of that expression;
* ``fused``    -- :func:`tokvec.fused.fused_embedding` (needs CUDA and Triton; skipped elsewhere);
* ``copy``     -- ``out.copy_(src)`` of an output-sized tensor: the practical bandwidth ceiling.

Before timing, every contender but the copy is checked elementwise against the layer computed in
float64 (``rtol = atol`` from :data:`TOLERANCE`); a wrong result is refused, not timed. Then, in
``repeats`` rounds, each contender is called once from a cold cache (a buffer larger than the L2
cache is overwritten first), in an order shuffled anew every round, so that a drift of the
GPU's clock or temperature is spread over all of them. Two times are reported:

* ``median_ms``, the median of CUDA-event times (:func:`_time_once`): the GPU's time for the
  kernels, as ``triton.testing.do_bench`` measures it. The flush keeps the GPU busy while Python
  queues the call, so launch overhead is hidden: this is the number to read against the bytes.
  ``gbps`` = the fused kernel's algorithmic bytes (:func:`tokvec.bench.roofline.bytes_moved`,
  positional table in float32, the same count for eager, compiled and fused) / ``median_ms``.
* ``wall_ms``, for a decoding step (``T = 1``) only, else None: the wall-clock time per call of
  ``wall_calls`` calls back to back, device synchronised at both ends (:func:`_wall_ms`), as a
  loop of decoding steps pays it, Python and launches included. The chapter's claim that a
  decoding step is overhead-bound is tested by ``wall_ms`` against ``median_ms``.

The result is a list of records with the keys ``device, torch, impl, dtype, batch, seq_len,
d_model, vocab_size, median_ms, gbps, wall_ms``.

No GPU was available when this was written: on a CPU it runs (``--device cpu``, small
``--configs``) only so the tests can check what it measures; its numbers there mean little.
"""

import argparse
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence

import torch

from tokvec import fused as fused_mod
from tokvec.arrays import sinusoidal_table_numpy
from tokvec.bench.common import synchronize, write
from tokvec.bench.roofline import FUSED_TABLE_DTYPE, bytes_moved
from tokvec.environment import cpu_name

__all__ = ["CONFIGS", "IMPLS", "TOLERANCE", "main", "run_kernels"]

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


#: Elementwise tolerance (``rtol = atol``) of each contender against the float64 reference, per
#: output dtype: a few roundings of the dtype, so that a result that drops the positional table
#: (|PE| up to 1) is refused while eager's three roundings and the fused kernel's one pass.
TOLERANCE = {"float32": 2**-20, "float16": 2**-8, "bfloat16": 2**-6}


def _time_once(fn: Callable[[], object], device: torch.device, flush: torch.Tensor) -> float:
    """Milliseconds of one call of ``fn``, after overwriting ``flush`` (a cold cache).

    On a CUDA GPU the time is read from CUDA events around the call: the GPU's time between
    them. The flush keeps the GPU busy while Python queues the call, so this is the kernels'
    time, without the launch overhead (what ``triton.testing.do_bench`` measures too); for
    that overhead see :func:`_wall_ms`. Elsewhere the clock is read, the device synchronised.
    """
    flush.zero_()
    if device.type == "cuda":
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize(device)
        return start.elapsed_time(end)
    synchronize(device)
    start = time.perf_counter()
    fn()
    synchronize(device)
    return (time.perf_counter() - start) * 1e3


def _wall_ms(fn: Callable[[], object], device: torch.device, calls: int) -> float:
    """Wall-clock milliseconds per call over ``calls`` back-to-back calls, device synchronised at
    both ends: what a loop of decoding steps pays, Python and launches included."""
    synchronize(device)
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    synchronize(device)
    return (time.perf_counter() - start) * 1e3 / calls


def _interleaved(fns: dict[str, Callable[[], object]], measure: Callable[[Callable[[], object]], float],
                 rounds: int, warmup: int, rng: random.Random) -> tuple[dict[str, list[float]], list[str]]:
    """``warmup`` untimed calls of each function, then ``rounds`` rounds that ``measure`` each
    once, in an order shuffled anew every round (so a drift of the machine is spread over all of
    them). Returns each function's times and the order in which they were measured."""
    for fn in fns.values():
        for _ in range(warmup):
            fn()
    names, times, order = list(fns), {name: [] for name in fns}, []
    for _ in range(rounds):
        rng.shuffle(names)
        for name in names:
            times[name].append(measure(fns[name]))
            order.append(name)
    return times, order


def _check(name: str, got: torch.Tensor, weight: torch.Tensor, ids: torch.Tensor, table64: torch.Tensor,
           scale: float, dtype_name: str) -> None:
    """Refuse ``got`` unless every element is within ``TOLERANCE`` of ``weight[ids] * scale + table``
    computed in float64 (in pieces of the batch, so the float64 copy stays small)."""
    tol = TOLERANCE[dtype_name]
    B, T, d = got.shape
    step = max(1, 2**26 // (T * d))
    for b in range(0, B, step):
        ref = weight[ids[b:b + step]].double() * scale + table64                     # (b, T, d)
        part = got[b:b + step].double()
        if not torch.allclose(part, ref, rtol=tol, atol=tol):
            worst = float(((part - ref).abs() / (1 + ref.abs())).max())
            raise RuntimeError(f"{name} differs from the float64 reference by more than rtol = atol = {tol:.3g} "
                               f"(worst |error| / (1 + |ref|) = {worst:.3g}) at B={B}, T={T}, d={d}, "
                               f"{dtype_name}: refusing to time a wrong result")


def run_kernels(configs: Sequence[tuple[int, int, int, int, str]], device: str | torch.device = "cuda", *,
                impls: Sequence[str] = IMPLS, repeats: int = 50, warmup: int = 5, flush_mb: int = 256,
                wall_calls: int = 50, seed: int = 0, log: Callable[[str], None] | None = None) -> list[dict]:
    """Time each implementation on each configuration; return one record per (configuration, impl).

    Every contender but the copy is first checked elementwise against the float64 reference
    (:data:`TOLERANCE`). Then ``repeats`` rounds time each once from a cold cache, in a shuffled
    order (seeded by ``seed``); for a decoding step (``T = 1``) as many rounds also time
    ``wall_calls`` calls back to back with the clock (:func:`_wall_ms`).
    """
    device = torch.device(device)
    unknown = set(impls) - set(IMPLS)
    if unknown:
        raise ValueError(f"unknown implementations {sorted(unknown)}; choose from {IMPLS}")
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else cpu_name()
    flush = torch.empty(flush_mb * 2**20 // 4, dtype=torch.float32, device=device)
    rng = random.Random(seed)
    records = []
    for B, T, d, V, dtype_name in configs:
        dtype = getattr(torch, dtype_name)
        g = torch.Generator(device="cpu").manual_seed(seed)
        weight = torch.randn(V, d, generator=g).to(device=device, dtype=dtype)           # (V, d)
        ids = torch.randint(0, V, (B, T), generator=g).to(device)                         # (B, T)
        table64 = torch.from_numpy(sinusoidal_table_numpy(T, d)).to(device)                # (T, d) float64
        pe = table64.to(dtype)                                                             # the seeds' dtype
        pe32 = table64.to(getattr(torch, FUSED_TABLE_DTYPE))                               # for the fused kernel
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
        fns = {impl: fns[impl] for impl in IMPLS if impl in impls and impl in fns}
        for impl in ("eager", "compiled", "fused"):
            if impl in fns:
                _check(impl, fns[impl](), weight, ids, table64, scale, dtype_name)
        times, _ = _interleaved(fns, lambda fn: _time_once(fn, device, flush), repeats, warmup, rng)
        walls = (_interleaved(fns, lambda fn: _wall_ms(fn, device, wall_calls), repeats, 0, rng)[0]
                 if T == 1 else {})
        one_pass = bytes_moved(B, T, d, dtype_name, impl="fused", table_dtype=FUSED_TABLE_DTYPE)
        for impl in fns:
            median = statistics.median(times[impl])
            wall = round(statistics.median(walls[impl]), 5) if impl in walls else None
            moved = bytes_moved(B, T, d, dtype_name, impl="copy") if impl == "copy" else one_pass
            records.append({"device": name, "torch": torch.__version__, "impl": impl, "dtype": dtype_name,
                            "batch": B, "seq_len": T, "d_model": d, "vocab_size": V,
                            "median_ms": round(median, 5), "gbps": round(moved / (median / 1e3) / 1e9, 2),
                            "wall_ms": wall})
            if log:
                wall_text = f" {wall * 1e3:8.1f} us/step wall" if wall is not None else ""
                log(f"{impl:>8} {dtype_name:>8} B={B:<3} T={T:<5} d={d:<5} V={V:<6} "
                    f"{median:9.4f} ms {records[-1]['gbps']:9.1f} GB/s{wall_text}")
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
