"""What a median of the whole call cannot separate: page faults per call, and the checks alone.

Taught in chapter 10, "What vectorization buys" (``10_vectorization``). Run it as a script::

    python -m tokvec.bench parts                      # printed as a table
    python -m tokvec.bench parts --out results.json   # ... and written to a JSON file

Two measurements, each beside the timing run of :mod:`tokvec.bench.cpu`, not inside it:

* :func:`count_faults` -- the minor page faults each call takes (``ru_minflt`` of
  ``getrusage``, read before and after every call), for the contenders of
  :func:`tokvec.bench.cpu.contenders` in the same interleaved rounds as
  :func:`tokvec.bench.cpu.run`. A minor fault is the kernel handing the process a page it has
  not touched before. glibc's ``malloc`` serves a request at or above its mmap threshold (which
  adapts, but never beyond 32 MiB on 64-bit Linux) with fresh pages from the kernel and returns
  them when the block is freed, so such a tensor takes about one fault per 4 KiB page on every
  call. Faults are counts, not times: another program on the machine does not change them.
  :func:`main` runs it twice: as the library runs by default, and, as the control, in a fresh
  process whose glibc keeps blocks up to 128 MiB instead (:data:`KEEP_LARGE_BLOCKS`): the same
  code on the same inputs, only the allocator's choice changed.
* :func:`time_checks` -- :func:`tokvec.validate.check_ids` alone, many calls back to back on
  the ids of each size, with no large contender run in between.

Every record also holds the minimum time over its calls: on a shared machine, load only ever adds
time, so the minimum (or a low quantile) is the number least disturbed by it.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import torch

from tokvec.bench.common import describe, time_call, write
from tokvec.bench.cpu import DEFAULT_SIZES, contenders
from tokvec.validate import check_ids

__all__ = ["KEEP_LARGE_BLOCKS", "count_faults", "count_faults_in_subprocess", "main", "memory_setting",
           "time_checks"]

#: The control's allocator setting (an environment variable read by glibc at start-up): serve
#: blocks up to 128 MiB from the process's own heap, and give free memory back to the kernel
#: only above 1 GiB. A fixed threshold also turns the adaptive one off.
KEEP_LARGE_BLOCKS = "GLIBC_TUNABLES=glibc.malloc.mmap_threshold=134217728:glibc.malloc.trim_threshold=1073741824"


def minor_faults() -> int:
    """Minor page faults of this process so far, all its threads together."""
    import resource  # Unix only; imported here so the module imports anywhere

    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def memory_setting() -> dict:
    """What decides how many faults an allocation takes (page size, C library, transparent huge
    pages), and the largest CPU cache, which decides what fits close to the cores. A value the
    system does not report is None."""
    try:
        with open("/sys/kernel/mm/transparent_hugepage/enabled", encoding="utf-8") as f:
            thp = f.read().split("[", 1)[1].split("]", 1)[0]                  # "always [madvise] never"
    except (OSError, IndexError):
        thp = None
    caches = Path("/sys/devices/system/cpu/cpu0/cache")
    largest = None
    for index in sorted(caches.glob("index*")) if caches.is_dir() else []:
        try:
            level = int((index / "level").read_text())
            size = (index / "size").read_text().strip()                        # e.g. "32768K"
        except (OSError, ValueError):
            continue
        if largest is None or level > largest[0]:
            largest = (level, size)
    return {"page_size": os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else None,
            "libc": " ".join(platform.libc_ver()).strip() or None, "transparent_hugepages": thp,
            "last_cache": f"L{largest[0]} {largest[1]}" if largest else None}


def count_faults(sizes: Sequence[tuple[int, int, int]] = DEFAULT_SIZES, *, vocab_size: int = 4096,
                 repeats: int = 100, warmup: int = 3, seed: int = 0, compile: bool = True,
                 malloc: str = "default", log: Callable[[str], None] | None = None) -> list[dict]:
    """Minor page faults and time per call, for every CPU contender but pure Python, at every size.

    The contenders are those of :func:`tokvec.bench.cpu.run` and are called the same way: all
    warmed up, then ``repeats`` rounds of one call each, the order rotating every round, under
    ``torch.inference_mode()``; so the memory each call finds free is what it found in the
    timing run. A record holds ``malloc`` (a label for the allocator setting of this process),
    ``impl, batch, seq_len, d_model, vocab_size, out_bytes`` (of the float32 output),
    ``faults_median, faults_min, faults_max`` (per call, over the rounds), ``min_ms, median_ms``
    and ``repeats``.
    """
    records = []
    with torch.inference_mode():
        for B, T, d in sizes:
            impls = [(name, fn) for name, _, _, fn in contenders(
                B, T, d, vocab_size, seed, [torch.device("cpu")], python_limit=0, compile=compile)]
            for _, fn in impls:                                  # warm up (and compile) everyone
                for _ in range(warmup):
                    fn()
            faults = {name: [] for name, _ in impls}
            times = {name: [] for name, _ in impls}
            for r in range(repeats):                             # as in cpu.run: rotate the order
                for name, fn in impls[r % len(impls):] + impls[:r % len(impls)]:
                    before = minor_faults()
                    start = time.perf_counter()
                    fn()
                    stop = time.perf_counter()
                    faults[name].append(minor_faults() - before)
                    times[name].append((stop - start) * 1e3)
            for name, _ in impls:
                f, ts = faults[name], times[name]
                records.append({"malloc": malloc, "impl": name, "batch": B, "seq_len": T, "d_model": d,
                                "vocab_size": vocab_size, "out_bytes": B * T * d * 4,
                                "faults_median": statistics.median(f), "faults_min": min(f),
                                "faults_max": max(f), "min_ms": round(min(ts), 4),
                                "median_ms": round(statistics.median(ts), 4), "repeats": len(ts)})
                if log:
                    log(f"{malloc[:14]:>14} {name:>10}  B={B:<3} T={T:<4} d={d:<4} faults/call "
                        f"{statistics.median(f):8.0f}  (output {B * T * d * 4 / 2**20:4.0f} MiB)  "
                        f"min {min(ts):8.3f} ms")
    return records


def count_faults_in_subprocess(environment: str = KEEP_LARGE_BLOCKS, **kwargs) -> list[dict]:
    """:func:`count_faults` in a fresh Python process with one more environment variable
    (``"NAME=value"``), which the C library reads only at start-up; ``malloc`` is set to it."""
    name, value = environment.split("=", 1)
    kwargs = {**kwargs, "malloc": environment}
    code = ("import json, sys; from tokvec.bench.parts import count_faults; "
            "kw = json.loads(sys.argv[1]); kw['sizes'] = [tuple(s) for s in kw['sizes']]; "
            "print(json.dumps(count_faults(**kw)))")
    kwargs.setdefault("sizes", DEFAULT_SIZES)
    kwargs["sizes"] = [list(s) for s in kwargs["sizes"]]
    done = subprocess.run([sys.executable, "-c", code, json.dumps(kwargs)], env={**os.environ, name: value},
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def time_checks(sizes: Sequence[tuple[int, int, int]] = DEFAULT_SIZES, *, vocab_size: int = 4096,
                rounds: int = 20, calls: int = 50, seed: int = 0,
                log: Callable[[str], None] | None = None) -> list[dict]:
    """:func:`tokvec.validate.check_ids` alone on the ``(B, T)`` ids of every size: ``rounds``
    rounds of ``calls`` calls back to back per size (the sizes take turns, so load hits them
    alike). A record holds ``impl`` ("checks"), ``batch, seq_len, d_model, vocab_size, ids``,
    ``min_ms, p10_ms, median_ms`` and ``repeats``."""
    ids = {}
    for B, T, d in sizes:
        gen = torch.Generator().manual_seed(seed)                  # the ids of cpu.contenders
        ids[(B, T, d)] = torch.randint(0, vocab_size, (B, T), generator=gen)
    times = {size: [] for size in sizes}
    with torch.inference_mode():
        for r in range(rounds):
            for size in sizes:
                x, T = ids[size], size[1]
                times[size] += time_call(lambda x=x, T=T: check_ids(x, vocab_size, T), repeats=calls,
                                         warmup=3 if r == 0 else 0)
    records = []
    for (B, T, d), ts in times.items():
        p10 = statistics.quantiles(ts, n=10, method="inclusive")[0]
        records.append({"impl": "checks", "batch": B, "seq_len": T, "d_model": d, "vocab_size": vocab_size,
                        "ids": B * T, "min_ms": round(min(ts), 5), "p10_ms": round(p10, 5),
                        "median_ms": round(statistics.median(ts), 5), "repeats": len(ts)})
        if log:
            log(f"checks alone  B={B:<3} T={T:<4} ({B * T:6} ids)  min {min(ts) * 1e3:7.1f} us  "
                f"p10 {p10 * 1e3:7.1f} us  median {statistics.median(ts) * 1e3:7.1f} us")
    return records


def main(argv: Sequence[str] | None = None) -> dict:
    """The command line of ``python -m tokvec.bench parts``."""
    argv = sys.argv[1:] if argv is None else list(argv)
    from tokvec.bench.cpu import _parse_size

    parser = argparse.ArgumentParser(prog="python -m tokvec.bench parts", description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=_parse_size, nargs="+", default=list(DEFAULT_SIZES), metavar="BxTxd",
                        help="sizes of the page-fault count")
    parser.add_argument("--check-sizes", type=_parse_size, nargs="+", default=list(DEFAULT_SIZES),
                        metavar="BxTxd", help="sizes of the checks timed alone")
    parser.add_argument("--vocab-size", type=int, default=4096)
    parser.add_argument("--repeats", type=int, default=100, help="rounds of the page-fault count")
    parser.add_argument("--check-rounds", type=int, default=20)
    parser.add_argument("--check-calls", type=int, default=50, help="calls back to back per round")
    parser.add_argument("--no-compile", action="store_true", help="leave torch.compile out")
    parser.add_argument("--out", default=None, help="write the results as JSON to this file")
    args = parser.parse_args(argv)
    os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")            # as in cpu.main
    options = {"vocab_size": args.vocab_size, "repeats": args.repeats, "compile": not args.no_compile}
    faults = count_faults(args.sizes, **options, log=print)
    faults += count_faults_in_subprocess(KEEP_LARGE_BLOCKS, sizes=args.sizes, **options)
    for r in faults[len(faults) // 2:]:
        print(f"{'control':>14} {r['impl']:>10}  B={r['batch']:<3} T={r['seq_len']:<4} d={r['d_model']:<4} "
              f"faults/call {r['faults_median']:8.0f}  min {r['min_ms']:8.3f} ms")
    checks = time_checks(args.check_sizes, vocab_size=args.vocab_size, rounds=args.check_rounds,
                         calls=args.check_calls, log=print)
    result = {**describe(" ".join(["python -m tokvec.bench parts", *argv])), "memory": memory_setting(),
              "faults": faults, "checks": checks}
    if args.out:
        write(result, args.out)
        print(f"wrote {len(faults)} fault and {len(checks)} check records to {args.out}")
    return result
