"""The GPU benchmark of the input layer: eager, a scaled add, compiled, fused and copy, like for like.

The chapter "Making it fast on a GPU", reads its results. Run it on one CUDA GPU::

    python -m tokvec.bench kernels --out gpu-run.json
    python -m tokvec.bench gpu-validate --out DIR    # this, and every check of the kernel (gpu_validate)

For each configuration it times, in the same run and on the same inputs, the contenders of
:func:`contenders`:

* ``eager``      -- the source tutorials' expression ``emb(ids) * sqrt(d) + PE[:T]``, PE in the
  embedding's dtype: three kernels;
* ``scaled_add`` -- ``torch.add(PE[:T], emb(ids), alpha=sqrt(d))``: a careful eager form, two kernels;
* ``compiled``   -- ``torch.compile`` of what the fused kernel computes: the rows in float32, times
  the scale, plus a float32 PE, rounded once (the same inputs, the same bytes, the same result);
* ``fused``      -- :func:`tokvec.fused.fused_embedding` (needs CUDA and Triton; skipped elsewhere);
* ``copy``       -- ``out.copy_(src)`` of an output-sized tensor: the practical bandwidth ceiling.

Every contender has its own byte count (:func:`tokvec.bench.roofline.bytes_moved`), and its
``gbps`` is its own bytes over its own time. Before timing, every contender but the copy is
checked elementwise against the layer computed in float64 (``rtol = atol`` from
:data:`TOLERANCE`); a wrong result is refused, not timed. Then, in ``repeats`` rounds, each
contender is called once from a cold cache, in an order shuffled anew every round, so that a
drift of the GPU's clock or temperature is spread over all of them (:func:`_interleaved`).

* ``median_ms`` (and ``p10_ms``, ``p90_ms``, every sample in ``times_ms``): CUDA-event times
  around one call (:func:`_time_once`), the GPU's time for the kernels. Before each call a
  buffer larger than the L2 cache is *read* (a flush that leaves no modified lines to write back
  during the timed call), then the GPU is held busy for a moment (``torch.cuda._sleep``) so that
  Python has queued the whole call before the first event is reached: the launch overhead is
  left out for certain, not by luck. ``gpu_validate`` times the older ways beside it (a flush
  that writes, no hold) as a control.
* ``wall_ms``, for a decoding step (``T = 1``) only, else None: the wall-clock time per call of
  ``wall_calls`` calls back to back, device synchronised at both ends (:func:`_wall_ms`), as a
  loop of decoding steps pays it, Python and launches included. :func:`run_decode` measures the
  decoding step in full (each sequence at its own position, CUDA graphs, the raw launch).

The result is a list of records with the keys of :data:`KEYS`.
"""

import argparse
import contextlib
import gc
import math
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence

import torch
import torch.nn.functional as F

from tokvec import fused as fused_mod
from tokvec.arrays import sinusoidal_table_numpy
from tokvec.bench.common import synchronize, write
from tokvec.bench.roofline import FUSED_TABLE_DTYPE, bytes_moved
from tokvec.environment import cpu_name

__all__ = ["CONFIGS", "IMPLS", "KEYS", "TOLERANCE", "contenders", "cuda_graph", "main", "quantiles", "run_decode",
           "run_kernels"]

IMPLS = ("eager", "scaled_add", "compiled", "fused", "copy")

#: The keys of every record :func:`run_kernels` returns.
KEYS = ("device", "torch", "impl", "dtype", "batch", "seq_len", "d_model", "vocab_size", "bytes", "median_ms",
        "p10_ms", "p90_ms", "gbps", "wall_ms", "times_ms")

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
#: (|PE| up to 1) is refused while eager's roundings and the fused kernel's one pass.
TOLERANCE = {"float32": 2**-20, "float16": 2**-8, "bfloat16": 2**-6}

#: Cycles the GPU is held busy before each timed call (``torch.cuda._sleep``): about 1 ms at
#: 2 GHz, far longer than Python takes to queue any contender, so the events never time a launch.
HOLD_CYCLES = 2_000_000


def quantiles(times: Sequence[float]) -> tuple[float, float, float]:
    """The 10th, 50th and 90th percentiles of ``times`` (nearest rank; the median is the true one)."""
    ordered = sorted(times)
    rank = lambda q: ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]  # noqa: E731
    return rank(0.1), statistics.median(ordered), rank(0.9)


def _flush(flush: torch.Tensor, mode: str) -> None:
    """Evict the inputs from the caches: ``"read"`` sums a buffer larger than the L2 (its lines stay
    clean), ``"zero"`` overwrites it (its lines are dirty and written back during the next call),
    ``"none"`` leaves the cache warm."""
    if mode == "read":
        flush.sum()
    elif mode == "zero":
        flush.zero_()
    elif mode != "none":
        raise ValueError(f"flush must be 'read', 'zero' or 'none', got {mode!r}")


def _time_once(fn: Callable[[], object], device: torch.device, flush: torch.Tensor, *, mode: str = "read",
               hold: int = HOLD_CYCLES) -> float:
    """Milliseconds of one call of ``fn``, after a flush of the caches (``mode``, see :func:`_flush`).

    On a CUDA GPU the time is read from CUDA events around the call: the GPU's time between
    them. The GPU is first held busy for ``hold`` cycles, so Python has queued the whole call
    before the GPU reaches the first event: the kernels' time, without the launch overhead (what
    ``triton.testing.do_bench`` measures too); for that overhead see :func:`_wall_ms`. Elsewhere
    the clock is read, the device synchronised.
    """
    _flush(flush, mode)
    if device.type == "cuda":
        if hold:
            torch.cuda._sleep(hold)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
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


@contextlib.contextmanager
def no_gc():
    """Python's garbage collector off for the duration (as ``timeit`` does): a collection in the
    middle of a timed call is a pause of the host, not of the code being timed."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _interleaved(fns: dict[str, Callable[[], object]], measure: Callable[[Callable[[], object]], float],
                 rounds: int, warmup: int, rng: random.Random, *,
                 collect: bool = False) -> tuple[dict[str, list[float]], list[str]]:
    """``warmup`` untimed calls of each function, then ``rounds`` rounds that ``measure`` each
    once, in an order shuffled anew every round (so a drift of the machine is spread over all of
    them), with the garbage collector off (``collect=True`` leaves it on, as a control). Returns
    each function's times and the order in which they were measured."""
    for fn in fns.values():
        for _ in range(warmup):
            fn()
    names, times, order = list(fns), {name: [] for name in fns}, []
    gc.collect()
    with contextlib.nullcontext() if collect else no_gc():
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


def _fused_runs(device: torch.device, interpret: bool) -> bool:
    """Whether the fused contenders run here: compiled on a CUDA GPU, or (``interpret``, on tiny sizes
    only) in Triton's interpreter on the CPU."""
    return fused_mod.available(device) or (interpret and fused_mod.triton is not None and device.type == "cpu")


def contenders(B: int, T: int, d: int, V: int, dtype_name: str, device: torch.device, *, seed: int = 0,
               impls: Sequence[str] = IMPLS, interpret: bool = False, log: Callable[[str], None] | None = None):
    """The contenders for one configuration, on shared inputs: ``(fns, bytes, inputs)``.

    ``fns`` maps each name to a function of no arguments that computes the layer (or copies an
    output-sized tensor); ``bytes`` maps it to the bytes that its own kernels must move
    (:func:`tokvec.bench.roofline.bytes_moved`: eager with its three kernels and PE in the
    embedding's dtype, ``scaled_add`` with two, ``compiled`` and ``fused`` one pass with a float32
    PE); ``inputs`` is ``(weight, ids, table64, scale)`` for the float64 check. ``interpret``: on a
    CPU, run the fused kernel in Triton's interpreter (to try the code path on tiny sizes).
    """
    dtype = getattr(torch, dtype_name)
    g = torch.Generator(device="cpu").manual_seed(seed)
    weight = torch.randn(V, d, generator=g).to(device=device, dtype=dtype)           # (V, d)
    ids = torch.randint(0, V, (B, T), generator=g).to(device)                         # (B, T)
    table64 = torch.from_numpy(sinusoidal_table_numpy(T, d)).to(device)                # (T, d) float64
    pe = table64.to(dtype)                                                             # the tutorials' dtype
    pe32 = table64.to(getattr(torch, FUSED_TABLE_DTYPE))                               # the kernel's
    scale = d ** 0.5

    def eager():
        return F.embedding(ids, weight) * scale + pe                                   # three kernels

    def scaled_add():
        return torch.add(pe, F.embedding(ids, weight), alpha=scale)                    # two kernels

    def one_rounding():
        return (F.embedding(ids, weight).float() * scale + pe32).to(dtype)             # fused's arithmetic

    src, dst = torch.empty(B, T, d, dtype=dtype, device=device), torch.empty(B, T, d, dtype=dtype, device=device)
    fns = {"eager": eager, "scaled_add": scaled_add, "copy": lambda: dst.copy_(src)}
    if "compiled" in impls:
        fns["compiled"] = torch.compile(one_rounding, dynamic=False)
    if "fused" in impls and _fused_runs(device, interpret):
        fns["fused"] = lambda: fused_mod.fused_embedding(ids, weight, pe32, scale, check=False)  # ids valid
    elif "fused" in impls and log:
        log(f"fused skipped on {device}: it needs a CUDA GPU and Triton")
    fns = {impl: fns[impl] for impl in IMPLS if impl in impls and impl in fns}
    counts = {"eager": ("eager", None), "scaled_add": ("in_place", None), "compiled": ("fused", FUSED_TABLE_DTYPE),
              "fused": ("fused", FUSED_TABLE_DTYPE), "copy": ("copy", None)}
    moved = {impl: bytes_moved(B, T, d, dtype_name, impl=counts[impl][0], table_dtype=counts[impl][1])
             for impl in fns}
    return fns, moved, (weight, ids, table64, scale)


def _device_name(device: torch.device) -> str:
    return torch.cuda.get_device_name(device) if device.type == "cuda" else cpu_name()


def _use(device: str | torch.device) -> torch.device:
    """``device`` as a torch.device, made the current CUDA device (events, Triton launches and
    ``torch.cuda._sleep`` act on the current device, whatever the tensors' device is)."""
    device = torch.device(device)
    if device.type == "cuda":
        if device.index is not None:
            torch.cuda.set_device(device)
        device = torch.device("cuda", torch.cuda.current_device())
    return device


def run_kernels(configs: Sequence[tuple[int, int, int, int, str]], device: str | torch.device = "cuda", *,
                impls: Sequence[str] = IMPLS, repeats: int = 50, warmup: int = 5, flush_mb: int = 256,
                wall_calls: int = 50, seed: int = 0, interpret: bool = False,
                log: Callable[[str], None] | None = None) -> list[dict]:
    """Time each implementation on each configuration; return one record per (configuration, impl).

    Every contender but the copy is first checked elementwise against the float64 reference
    (:data:`TOLERANCE`). Then ``repeats`` rounds time each once from a cold cache, in a shuffled
    order (seeded by ``seed``); for a decoding step (``T = 1``) as many rounds also time
    ``wall_calls`` calls back to back with the clock (:func:`_wall_ms`).
    """
    unknown = set(impls) - set(IMPLS)
    if unknown:
        raise ValueError(f"unknown implementations {sorted(unknown)}; choose from {IMPLS}")
    device = _use(device)
    name = _device_name(device)
    flush = torch.ones(flush_mb * 2**20 // 4, dtype=torch.float32, device=device)
    rng = random.Random(seed)
    records = []
    for B, T, d, V, dtype_name in configs:
        fns, moved, (weight, ids, table64, scale) = contenders(B, T, d, V, dtype_name, device, seed=seed,
                                                               impls=impls, interpret=interpret, log=log)
        for impl in fns:
            if impl != "copy":
                _check(impl, fns[impl](), weight, ids, table64, scale, dtype_name)
        times, _ = _interleaved(fns, lambda fn: _time_once(fn, device, flush), repeats, warmup, rng)
        walls = (_interleaved(fns, lambda fn: _wall_ms(fn, device, wall_calls), repeats, 0, rng)[0]
                 if T == 1 else {})
        for impl in fns:
            p10, median, p90 = quantiles(times[impl])
            wall = round(statistics.median(walls[impl]), 5) if impl in walls else None
            records.append({"device": name, "torch": torch.__version__, "impl": impl, "dtype": dtype_name,
                            "batch": B, "seq_len": T, "d_model": d, "vocab_size": V, "bytes": moved[impl],
                            "median_ms": round(median, 5), "p10_ms": round(p10, 5), "p90_ms": round(p90, 5),
                            "gbps": round(moved[impl] / (median / 1e3) / 1e9, 2), "wall_ms": wall,
                            "times_ms": [round(t, 5) for t in times[impl]]})
            if log:
                wall_text = f" {wall * 1e3:8.1f} us/step wall" if wall is not None else ""
                log(f"{impl:>10} {dtype_name:>8} B={B:<3} T={T:<5} d={d:<5} V={V:<6} "
                    f"{median:9.4f} ms [{p10:.4f}, {p90:.4f}] {records[-1]['gbps']:9.1f} GB/s{wall_text}")
        del fns
    return records


def cuda_graph(fn: Callable[[], torch.Tensor], warmup: int = 3):
    """Capture ``fn`` in a CUDA graph; return ``(replay, out)``: ``replay()`` runs every kernel
    ``fn`` launched with one launch from Python and refills ``out``, the tensor ``fn`` returned
    during the capture. ``fn`` must read its inputs from tensors that stay in place (copy new
    inputs into them before a replay) and must not synchronise (no read-back, no check)."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):                          # warm up (allocations, compilation) off the graph
        for _ in range(warmup):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = fn()
    return graph.replay, out


def run_decode(batches: Sequence[int] = (1, 64, 256), d: int = 4096, V: int = 32000, dtype_name: str = "bfloat16",
               device: str | torch.device = "cuda", *, max_len: int = 4096, calls: int = 200, repeats: int = 5,
               flush_mb: int = 256, compile_at: Sequence[int] = (64,), seed: int = 0, interpret: bool = False,
               log: Callable[[str], None] | None = None) -> dict:
    """One decoding step as a server runs it: ``B`` sequences, one new token each, each at its own
    position (``offsets``, drawn in ``0..max_len-1``). Returns, per batch size, the wall-clock
    microseconds per step of each contender (the median of ``repeats`` runs of ``calls`` steps)
    and the GPU time of the kernels alone (CUDA events, median of 30 cold calls):

    * ``layer``: :class:`tokvec.layers.TransformerEmbedding`, ids and offsets checked (one read-back);
    * ``eager``: the expression, ``emb(ids) * sqrt(d) + PE[offsets]``, unchecked (four kernels);
    * ``fused_checked`` / ``fused``: :func:`tokvec.fused.fused_embedding` with and without the checks;
    * ``raw_launch``: the Triton kernel launched directly, arguments prepared once (no wrapper);
    * ``graph_eager`` / ``graph_fused``: the eager expression or the fused call captured in a CUDA
      graph (:func:`cuda_graph`); a step copies the new ids and offsets in and replays;
    * ``compiled_graphs``: ``torch.compile(mode="reduce-overhead")`` of the eager expression,
      which captures CUDA graphs itself (only at the batch sizes of ``compile_at``: it compiles);
    * ``fused_no_split`` (GPU time only): the fused kernel with ``min_programs=1``, the naive grid
      that loops over the whole batch in few programs.

    Without a GPU (``interpret=True``, tiny sizes) the fused contenders run in Triton's
    interpreter and the CUDA-graph ones are left out: a check of the code path, not a measurement.
    """
    device = _use(device)
    flush = torch.ones(flush_mb * 2**20 // 4, dtype=torch.float32, device=device)
    result = {"device": _device_name(device), "d_model": d, "vocab_size": V, "dtype": dtype_name,
              "max_len": max_len, "calls": calls, "repeats": repeats, "batches": {}}
    for B in batches:
        fns, kernels = _decode_contenders(B, d, V, dtype_name, device, max_len=max_len, compile_graphs=B in compile_at,
                                          seed=seed, interpret=interpret)
        with torch.inference_mode():
            for fn in fns.values():
                for _ in range(5):
                    fn()
            walls = {name: [] for name in fns}
            order, rng = list(fns), random.Random(seed + B)
            with no_gc():
                for _ in range(repeats):                       # interleaved: each contender once per round,
                    rng.shuffle(order)                         # in a new order every round
                    for name in order:
                        walls[name].append(_wall_ms(fns[name], device, calls) * 1e3)
            row = {"wall_us": {name: round(statistics.median(w), 2) for name, w in walls.items()},
                   "wall_us_range": {name: [round(min(w), 2), round(max(w), 2)] for name, w in walls.items()}}
            gpu = _interleaved(kernels, lambda fn: _time_once(fn, device, flush), 30, 3, random.Random(seed))[0]
            row["kernel_us"] = {name: round(statistics.median(t) * 1e3, 2) for name, t in gpu.items()}
        result["batches"][str(B)] = row
        if log:
            log(f"decode B={B}: wall us/step " + ", ".join(f"{k} {v}" for k, v in row["wall_us"].items())
                + " | kernel us " + ", ".join(f"{k} {v}" for k, v in row["kernel_us"].items()))
    return result


def _decode_contenders(B: int, d: int, V: int, dtype_name: str, device: torch.device, *, max_len: int,
                       compile_graphs: bool, seed: int, interpret: bool):
    """The contenders of :func:`run_decode` for one batch size, each checked against the float64
    reference: ``(fns, kernels)``, those timed by the clock and those timed by CUDA events."""
    from tokvec.layers import TransformerEmbedding

    dtype, cuda = getattr(torch, dtype_name), device.type == "cuda"
    torch.manual_seed(seed + B)
    layer = TransformerEmbedding(V, d, max_len, dropout=0.0, device=device, dtype=dtype).eval()
    weight, pe, scale = layer.token.weight.detach(), layer.pe, layer.scale              # pe in dtype
    table64 = torch.from_numpy(sinusoidal_table_numpy(max_len, d)).to(device)
    pe32 = table64.float()                                                               # the kernel's
    g = torch.Generator(device="cpu").manual_seed(seed + B)
    ids = torch.randint(0, V, (B, 1), generator=g).to(device)                               # (B, 1)
    offsets = torch.randint(0, max_len, (B,), generator=g).to(device)                       # (B,)

    def eager(ids=ids, offsets=offsets):
        return F.embedding(ids, weight) * scale + pe[offsets][:, None]                      # (B, 1, d)

    def fused(ids=ids, offsets=offsets, check=False, **kw):
        return fused_mod.fused_embedding(ids, weight, pe32, scale, offsets=offsets, check=check, **kw)

    fns = {"layer": lambda: layer(ids, offsets), "eager": eager}
    kernels = {"eager": eager}
    if _fused_runs(device, interpret):
        fns["fused_checked"] = lambda: fused(check=True)
        fns["fused"] = fused
        grid = fused_mod.launch_grid(B, 1, d)
        out = torch.empty(B, 1, d, dtype=dtype, device=device)
        raw_args = (ids, weight, pe32, out, offsets, B, 1, V, max_len, scale, grid.seqs_per_program)
        raw_blocks = {"D": d, "BLOCK_T": grid.block_t, "BLOCK_D": grid.block_d, "PER_SEQUENCE": True}

        def raw_launch():
            fused_mod.kernel(not cuda)[grid.grid](*raw_args, **raw_blocks)
            return out

        fns["raw_launch"] = raw_launch
        kernels.update(fused=fused, fused_no_split=lambda: fused(min_programs=1))
    if cuda:
        static_ids, static_offsets = ids.clone(), offsets.clone()
        graphed = {"graph_eager": lambda: eager(static_ids, static_offsets)}
        if "fused" in fns:
            graphed["graph_fused"] = lambda: fused(static_ids, static_offsets)
        for name, captured in graphed.items():
            replay, static_out = cuda_graph(captured)

            def step(replay=replay, static_out=static_out):
                static_ids.copy_(ids)                      # the new step's inputs, into the graph's
                static_offsets.copy_(offsets)
                replay()
                return static_out

            fns[name] = step
        if compile_graphs:
            compiled = torch.compile(eager, mode="reduce-overhead", dynamic=False)

            def compiled_step():
                torch.compiler.cudagraph_mark_step_begin()      # a new step: the last outputs may be reused
                return compiled(ids, offsets)

            fns["compiled_graphs"] = compiled_step
    reference = weight[ids].double() * scale + table64[offsets][:, None]
    with torch.inference_mode():
        for name, fn in {**fns, **kernels}.items():
            if not torch.allclose(fn().double(), reference, rtol=TOLERANCE[dtype_name], atol=TOLERANCE[dtype_name]):
                raise RuntimeError(f"decode contender {name} differs from the float64 reference at B={B}")
    return fns, kernels


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
