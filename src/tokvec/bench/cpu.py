"""What vectorization buys: time the same input layer in pure Python, NumPy and PyTorch.

Taught in the chapter "What vectorization buys" (``vectorization``). Run it as a script::

    python -m tokvec.bench                      # the default sizes, results printed as a table
    python -m tokvec.bench --out results.json   # ... and written to a JSON file

Every contender computes ``emb(ids) * sqrt(d) + PE[:T]`` for the same ids and the same table,
so the times compare like with like:

* ``python``     -- :func:`tokvec.reference.embed`, one sequence at a time (float64, pure Python);
* ``numpy``      -- :func:`tokvec.arrays.embed_numpy` (float32);
* ``tutorial``   -- the source tutorials' expression ``emb(x) * math.sqrt(d) + pe[:T]``: three
  operations, two output-sized temporaries, no checks;
* ``scaled_add`` -- ``torch.add(pe[:T], emb(x), alpha=sqrt(d))``: the multiply and the add in
  one operation, one temporary besides the output;
* ``in_place``   -- the same ``torch.add`` written into the gathered rows (``out=``): no
  temporary at all. This is the arithmetic of :class:`tokvec.layers.TransformerEmbedding`;
* ``layer``      -- :class:`tokvec.layers.TransformerEmbedding` in eval mode, input checks included;
* ``checks``     -- :func:`tokvec.validate.check_ids` alone, on the same ids;
* ``compiled``   -- ``torch.compile`` of the tutorials' expression (``--no-compile`` leaves it out;
  compiling takes some seconds per size).

The PyTorch contenders run on the CPU, and also on ``cuda`` or ``mps`` when present, on one
thread unless told otherwise (``threads``; ``torch.utils.benchmark.Timer`` pins one thread by
default too): with two threads on a busy two-core machine every parallel region waits for a
descheduled thread, and the medians say more about the machine than the code (the vectorization chapter shows
it, from ``python -m tokvec.bench parts``). Each size runs a few warm-up calls of every
contender, then ``repeats`` timed rounds that call each one once (interleaved, so a slow moment
of the machine hits all alike), in an order shuffled every round by a seeded generator
(:func:`call_order`), so no contender follows the same neighbour in most rounds. A record holds
the minimum, the 10th percentile, the median and the 90th percentile. Each timed call includes
freeing its result (it is dropped inside the timing). The JSON file records the machine, the
versions, the command and the load average before and after, so a number is never separated
from where it was measured.
"""

from __future__ import annotations

import argparse
import copy
import math
import os
import random
import sys
from collections.abc import Callable, Sequence

import numpy as np
import torch

from tokvec import reference
from tokvec.arrays import embed_numpy, sinusoidal_table_numpy
from tokvec.bench.common import describe, load_average, summary, time_call, write
from tokvec.layers import TransformerEmbedding, device
from tokvec.validate import check_ids

__all__ = ["CONTENDERS", "DEFAULT_SIZES", "call_order", "contenders", "main", "run"]

#: (batch B, sequence length T, model width d): from a toy batch to 16 sequences of GPT-2 small's
#: context length and width (its vocabulary is not: every size uses ``vocab_size``, 4,096 by default).
DEFAULT_SIZES: tuple[tuple[int, int, int], ...] = (
    (1, 32, 32), (4, 128, 128), (16, 128, 512), (16, 512, 512), (16, 1024, 768))

#: Every contender, in the order of the records.
CONTENDERS = ("python", "numpy", "tutorial", "scaled_add", "in_place", "layer", "checks", "compiled")


def contenders(B: int, T: int, d: int, V: int, seed: int, devices: Sequence[torch.device],
               python_limit: int, compile: bool = True):
    """Yield ``(name, device, dtype, fn)`` for one size; all share ids, weights and table."""
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
        x, emb, pe = ids.to(dev), lay.token, lay.pe                      # the same numbers
        scale = math.sqrt(d)

        def tutorial(x=x, emb=emb, pe=pe):
            return emb(x) * math.sqrt(d) + pe[:T]                        # three operations

        def scaled_add(x=x, emb=emb, pe=pe, scale=scale):
            return torch.add(pe[:T], emb(x), alpha=scale)                # one, plus the gather

        def in_place(x=x, emb=emb, pe=pe, scale=scale):
            rows = emb(x)
            return torch.add(pe[:T], rows, alpha=scale, out=rows)         # into the gathered rows

        yield "tutorial", dev.type, "float32", tutorial
        yield "scaled_add", dev.type, "float32", scaled_add
        yield "in_place", dev.type, "float32", in_place
        yield "layer", dev.type, "float32", lambda lay=lay, x=x: lay(x)
        yield "checks", dev.type, "int64", lambda x=x: check_ids(x, V, T)
        if compile:
            yield "compiled", dev.type, "float32", torch.compile(tutorial, dynamic=False)


def call_order(impls: Sequence, repeats: int, rounds: dict | None = None,
               seed: int = 0) -> list[tuple[int, object]]:
    """The timed calls of :func:`run` in the order they are made: ``(round, contender)`` pairs.

    Every round calls each contender once, in an order shuffled with ``random.Random(seed)``,
    so that across the rounds each contender follows every other about equally often (a fixed
    order would give it the same neighbour every time, and a neighbour that leaves cold caches
    or a large freed tensor behind would slow it alone). A contender with fewer ``rounds`` (pure
    Python at the larger sizes: 3) sits out the rounds after its last.
    """
    rounds = rounds or {}
    order = random.Random(seed)
    calls = []
    for r in range(repeats):
        chosen = [impl for impl in impls if r < rounds.get(impl, repeats)]
        order.shuffle(chosen)
        calls += [(r, impl) for impl in chosen]
    return calls


def run(sizes: Sequence[tuple[int, int, int]] = DEFAULT_SIZES, *, vocab_size: int = 4096, repeats: int = 20,
        warmup: int = 3, devices: Sequence[str] | None = None, python_limit: int = 2**22,
        python_rounds_limit: int = 2**16, threads: int | None = 1, seed: int = 0, compile: bool = True,
        python_apart: bool = False, log: Callable[[str], None] | None = None) -> list[dict]:
    """Time every contender at every size; return one record per (size, contender).

    A record holds ``impl, device, dtype, batch, seq_len, d_model, vocab_size, threads``, the
    times ``min_ms, p10_ms, median_ms, p90_ms`` (:func:`tokvec.bench.common.summary`),
    ``repeats`` and ``tokens_per_s`` (from the median). Pure Python runs only where
    ``B*T*d <= python_limit`` (it would take minutes above), with 1 warm-up call, and in every
    round only where ``B*T*d <= python_rounds_limit`` (above, 3 rounds: a call takes a quarter
    of a second or more there). ``devices`` defaults to the CPU plus the GPU found by
    :func:`tokvec.layers.device`, if any. ``threads`` is the number of threads PyTorch may use
    (``torch.set_num_threads``, restored afterwards; None leaves it as it is); ``compiled`` is
    compiled under it too, since the generated code keeps the thread count it was compiled with.

    The calls are interleaved: after every contender has warmed up, each round times one call of
    each, in an order shuffled every round (:func:`call_order`), so a disturbance (another
    program taking a core for a moment) hits all of them alike and no contender always follows
    the same one.

    ``python_apart`` takes pure Python out of the rounds: after each size's rounds it is timed in
    a block of its own, its calls back to back. A control for what its long calls (12 ms at
    4x128x128, where the others take well under one) do to the contenders that follow them in
    the rounds; the other contenders run the same rounds, in another shuffled order.
    """
    if devices is None:
        devices = ["cpu"] + ([device().type] if device().type != "cpu" else [])
    devs = [torch.device(name) for name in devices]
    previous = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(threads)
    records = []
    try:
        with torch.inference_mode():
            for B, T, d in sizes:
                impls = list(contenders(B, T, d, vocab_size, seed, devs, python_limit, compile))
                python_rounds = repeats if B * T * d <= python_rounds_limit else min(repeats, 3)
                rounds = {impl: python_rounds if impl[0] == "python" else repeats for impl in impls}
                for impl in impls:                               # warm up (and compile) everyone first
                    time_call(impl[3], repeats=0, warmup=1 if impl[0] == "python" else warmup, dev=impl[1])
                times = {impl: [] for impl in impls}
                apart = [impl for impl in impls if python_apart and impl[0] == "python"]
                in_rounds = [impl for impl in impls if impl not in apart]
                for _, impl in call_order(in_rounds, repeats, rounds, seed):   # one call of each per round
                    times[impl] += time_call(impl[3], repeats=1, warmup=0, dev=impl[1])
                for impl in apart:                                   # after the rounds, back to back
                    times[impl] += time_call(impl[3], repeats=rounds[impl], warmup=0, dev=impl[1])
                for (impl, dev, dtype, _), ts in times.items():
                    spread = summary(ts)
                    records.append({"impl": impl, "device": dev, "dtype": dtype, "batch": B, "seq_len": T,
                                    "d_model": d, "vocab_size": vocab_size, "threads": torch.get_num_threads(),
                                    **spread, "tokens_per_s": round(B * T / (spread["median_ms"] / 1e3))})
                    if log:
                        log(f"{impl:>10} {dev:>4}  B={B:<3} T={T:<4} d={d:<4} median {spread['median_ms']:10.3f} ms"
                            f"  p90 {spread['p90_ms']:10.3f} ms")
    finally:
        torch.set_num_threads(previous)
    return records


def _parse_size(text: str) -> tuple[int, int, int]:
    try:
        B, T, d = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"a size is BxTxd, e.g. 16x512x512; got {text!r}") from None
    if min(B, T, d) < 1:
        raise argparse.ArgumentTypeError(f"B, T and d must be positive, got {text!r}")
    return B, T, d


def main(argv: Sequence[str] | None = None) -> dict:
    """The command line of ``python -m tokvec.bench``."""
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = argparse.ArgumentParser(prog="python -m tokvec.bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=_parse_size, nargs="+", default=list(DEFAULT_SIZES), metavar="BxTxd")
    parser.add_argument("--vocab-size", type=int, default=4096)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--devices", nargs="+", default=None, help="default: cpu and the GPU if present")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch.set_num_threads for the run (default 1; 0 leaves PyTorch's own choice)")
    parser.add_argument("--seed", type=int, default=0, help="the ids, the weights and the order of the rounds")
    parser.add_argument("--no-compile", action="store_true", help="leave torch.compile out")
    parser.add_argument("--python-apart", action="store_true",
                        help="time pure Python after each size's rounds, not in them (a control)")
    parser.add_argument("--out", default=None, help="write the results as JSON to this file")
    args = parser.parse_args(argv)
    # torch.compile compiles in this process: no pool of compile workers idling beside the clock
    os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")
    if args.threads:                        # for the whole process, so machine() records it too
        torch.set_num_threads(args.threads)
    load_before = load_average()
    records = run(args.sizes, vocab_size=args.vocab_size, repeats=args.repeats, warmup=args.warmup,
                  devices=args.devices, threads=None, seed=args.seed, compile=not args.no_compile,
                  python_apart=args.python_apart, log=print)
    # how busy the machine was (runnable processes, averaged over 1, 5 and 15 minutes)
    load = {"before": load_before, "after": load_average()}
    result = {**describe(" ".join(["python -m tokvec.bench", *argv])), "load_average": load,
              "records": records}
    if args.out:
        write(result, args.out)
        print(f"wrote {len(records)} records to {args.out}")
    return result
