"""What a median of the whole call cannot separate: page faults, the checks alone, the layer's parts.

Taught in the chapter "What vectorization buys" (``vectorization``); the allocator's side (thresholds,
page faults, huge pages) in the appendix "Memory and the allocator" (``appendix_allocator``). Run it as a
script::

    python -m tokvec.bench parts                      # printed as a table
    python -m tokvec.bench parts --out results.json   # ... and written to a JSON file

Measurements beside the timing run of :mod:`tokvec.bench.cpu`, not inside it:

* :func:`count_faults` -- the minor page faults each call takes (``ru_minflt`` of
  ``getrusage``, read before and after every call), for the contenders of
  :func:`tokvec.bench.cpu.contenders` in the same shuffled rounds as :func:`tokvec.bench.cpu.run`.
  A minor fault is the kernel handing the process a page it has not touched before, zeroed.
  glibc's ``malloc`` first looks for a free block, or free space at the top of its heap, big
  enough; only when none fits does its *mmap threshold* decide: a request at or above it gets a
  mapping of its own, unmapped when the block is freed, so such a tensor is fresh memory on every
  call that finds no free block for it (``mapped=True`` records, per call, which it was:
  :func:`glibc_heap`). The threshold starts at 128 KiB and rises: when a block that was itself
  mmapped is freed, and it is larger than the threshold and at most
  ``DEFAULT_MMAP_THRESHOLD_MAX`` (32 MiB with 64-bit glibc), the threshold becomes that block's
  size and the trim threshold twice that. The size counts malloc's header and alignment
  slack, so a tensor of exactly 32 MiB stays above it too. Smaller blocks are served from the heap
  and, once the heap has grown to fit them (a few calls: ``faults_max``), reused: a steady state,
  hence medians. :func:`main` counts twice: as the library runs by default, and, as the control,
  in a fresh process started with :data:`KEEP_LARGE_BLOCKS` (no block gets a mapping of its own;
  the child checks that the setting took effect; where it did not, or cannot be checked, the run
  goes on without the control and says why under ``control``). The counts of the two runs differ
  only in the allocator's choice; their times come from two processes, not interleaved, and move
  between runs.
* :func:`alternate_allocators` -- the default, the control and PyTorch's huge pages
  (:data:`HUGE_PAGES`) in fresh processes that take turns, at one size and for a few
  contenders: the time a fresh page costs, as a range.
* :func:`time_checks` -- :func:`tokvec.validate.check_ids` alone on the ids of each size, with
  warm caches (calls back to back) and, as a cache-eviction control, each call right after a
  single-threaded NumPy write of a small buffer (512 KiB) or of one larger than the last-level
  cache (48 MiB).
* :func:`time_layer_parts` -- what :class:`tokvec.layers.TransformerEmbedding` adds to the
  arithmetic it shares with ``in_place``, part by part, in one tight loop at small sizes.
* :func:`time_copy` -- ``dst.copy_(src)`` into a kept tensor and ``src.clone()`` into a fresh one,
  output-sized: the yardstick of a roofline (what one thread reaches reading and writing memory),
  and fresh memory without anything else.
* :func:`time_threads` -- eager contenders on one thread and on every core, in the same rounds,
  with no other work and with one busy process per core: what an unpinned thread count does to
  the times on a shared machine.

Everything but :func:`time_threads` runs on ``--threads`` threads, 1 by default, as
``python -m tokvec.bench`` does.

Every timing record holds the minimum over its calls as well as the median: on a shared machine
load only ever adds time, so the minimum (or a low quantile) is the number least disturbed by it,
as long as the code itself always does the same work.
"""

from __future__ import annotations

import argparse
import ctypes
import functools
import json
import math
import os
import platform
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import torch

from tokvec.bench.common import describe, load_average, summary, time_call, write
from tokvec.bench.cpu import CONTENDERS as CPU_CONTENDERS
from tokvec.bench.cpu import DEFAULT_SIZES, call_order, contenders
from tokvec.layers import TransformerEmbedding
from tokvec.validate import check_ids

__all__ = ["CHECK_BEFORE", "HUGE_PAGES", "KEEP_LARGE_BLOCKS", "ControlNotRun", "alternate_allocators", "count_faults",
           "count_faults_in_subprocess", "glibc_heap", "keeps_large_blocks", "main", "memory_setting",
           "time_checks", "time_copy", "time_layer_parts", "time_threads"]

#: The control's allocator setting (an environment variable that glibc reads at start-up): no
#: block gets a mapping of its own (``mmap_max=0``: every request, however large, is served from
#: the process's heap), and free memory at the top of the heap goes back to the kernel only
#: above 1 GiB (``trim_threshold``; with the default, 128 KiB, freeing a large block at the top
#: would hand its pages back, and the next call would fault them in again). glibc accepts both
#: values in every version that has tunables (2.26 and later); raising ``mmap_threshold``
#: instead would not do: glibc refuses a value above its 32 MiB maximum in some versions (2.33
#: and 2.34 among them) and keeps 128 KiB. :func:`count_faults_in_subprocess` checks in the
#: child that the setting took effect (:func:`keeps_large_blocks`) and refuses the run
#: otherwise. A setting for measuring, not for a service: PyTorch asks for 64-byte aligned
#: blocks, which glibc carves out of a slightly larger free block, so the heap can grow for some
#: calls before a freed block fits the next request.
KEEP_LARGE_BLOCKS = "GLIBC_TUNABLES=glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=1073741824"

#: PyTorch's own switch (c10's CPU allocator reads it): a tensor of 2 MiB or more is aligned to the
#: page (4 KiB, not 2 MiB) and given ``madvise(MADV_HUGEPAGE)``, so that one fault
#: can map a 2 MiB huge page where the system grants them on request (transparent huge pages
#: ``madvise`` or ``always``). The block's ends, which do not fill an aligned 2 MiB stretch, still
#: come in 4 KiB pages, about 2 MiB of them per tensor: a 48 MiB output takes some 536 faults.
HUGE_PAGES = "THP_MEM_ALLOC_ENABLE=1"


def minor_faults() -> int:
    """Minor page faults of this process so far, all its threads together."""
    import resource  # Unix only; imported here so the module imports anywhere

    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def _summary(ts: list[float]) -> dict:
    """Minimum, 10th percentile, median and 90th percentile of times in milliseconds (rounded to
    10 ns), and their count: :func:`tokvec.bench.common.summary`."""
    return summary(ts, digits=5)


def _faults_and_times(fns: dict, rounds: int, mapped: bool = False) -> tuple[dict, dict, dict]:
    """Call every function once per round, in :func:`call_order`; each call's minor page faults
    and its time in milliseconds, by key. With ``mapped``, also how many more blocks with a
    mapping of their own glibc held while the call's output was alive than before the call
    (:func:`glibc_heap`; None without glibc); the output then stays alive until after the count,
    so the time leaves out its free."""
    faults = {key: [] for key in fns}
    times = {key: [] for key in fns}
    fresh = {key: [] for key in fns}
    for _, key in call_order(list(fns), rounds):
        out = None
        heap = glibc_heap() if mapped else None
        before = minor_faults()
        start = time.perf_counter()
        if mapped:
            out = fns[key]()
        else:
            fns[key]()                                           # freed inside the timing
        stop = time.perf_counter()
        faults[key].append(minor_faults() - before)
        times[key].append((stop - start) * 1e3)
        if mapped:
            fresh[key].append(None if heap is None else glibc_heap()["mapped_blocks"] - heap["mapped_blocks"])
            del out
    return faults, times, fresh


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


_MALLINFO_FIELDS = ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
                    "fordblks", "keepcost")


class _Mallinfo2(ctypes.Structure):
    """glibc's ``struct mallinfo2`` (``mallinfo(3)``, glibc 2.33 and later), every field a ``size_t``."""
    _fields_ = [(name, ctypes.c_size_t) for name in _MALLINFO_FIELDS]


class _Mallinfo(ctypes.Structure):
    """glibc's older ``struct mallinfo``, every field an ``int``: a byte count above 2 GiB wraps,
    but ``hblks``, a count of blocks, is exact."""
    _fields_ = [(name, ctypes.c_int) for name in _MALLINFO_FIELDS]


@functools.cache
def _mallinfo(names: tuple[str, ...] = ("mallinfo2", "mallinfo")) -> Callable[[], ctypes.Structure] | None:
    """glibc's ``mallinfo2`` (2.33 and later), else its ``mallinfo`` (every version: Ubuntu 20.04's
    2.31, RHEL 8's 2.28), the first of ``names`` it has; None where the C library is not glibc
    (another library's ``mallinfo``, if it has one, need not count what glibc's does)."""
    if platform.libc_ver()[0] != "glibc":
        return None
    try:
        libc = ctypes.CDLL(None)                              # the process's own C library
    except (OSError, TypeError):
        return None
    for name in names:
        fn = getattr(libc, name, None)
        if fn is not None:
            fn.restype = _Mallinfo2 if name == "mallinfo2" else _Mallinfo
            return fn
    return None


def glibc_heap() -> dict | None:
    """What glibc's ``malloc`` holds now, by its own count (``mallinfo2``, or ``mallinfo`` before
    glibc 2.33: ``mallinfo(3)``): ``heap_bytes`` (``arena``: the memory its heaps hold from the
    kernel, free blocks included; with ``mallinfo``, wrong above 2 GiB) and ``mapped_blocks``
    (``hblks``: live blocks that have a mapping of their own). Take it before and after a call,
    with the call's output still alive: one more mapped block means the output got fresh pages;
    none means it came from the heap. None where the C library is not glibc."""
    fn = _mallinfo()
    if fn is None:
        return None
    info = fn()
    return {"heap_bytes": info.arena, "mapped_blocks": info.hblks}


def keeps_large_blocks(nbytes: int = 48 * 2**20) -> bool | None:
    """Whether this process's ``malloc`` serves a block of ``nbytes`` (default 48 MiB, the layer's
    largest output) from its heap rather than a mapping of its own: a float32 tensor of that
    size is allocated and glibc's count of mapped blocks read before and after (:func:`glibc_heap`).
    In a fresh process the heap holds no free block that large, so the answer is the
    allocator's setting: False by default, True under :data:`KEEP_LARGE_BLOCKS` when glibc
    accepted it. None where the C library is not glibc (nothing to read)."""
    before = glibc_heap()
    if before is None:
        return None
    block = torch.empty(nbytes // 4, dtype=torch.float32)
    after = glibc_heap()
    del block
    return after["mapped_blocks"] == before["mapped_blocks"]


def count_faults(sizes: Sequence[tuple[int, int, int]] = DEFAULT_SIZES, *, vocab_size: int = 4096,
                 repeats: int = 100, warmup: int = 3, seed: int = 0, compile: bool = True,
                 malloc: str = "default", impls: Sequence[str] | None = None, mapped: bool = False,
                 threads: int | None = None, log: Callable[[str], None] | None = None) -> list[dict]:
    """Minor page faults and time per call, for every CPU contender but pure Python, at every size.

    The contenders are those of :func:`tokvec.bench.cpu.run` (or only ``impls``) and are called
    the same way: all warmed up, then ``repeats`` rounds of one call each in the order of
    :func:`tokvec.bench.cpu.call_order`, under ``torch.inference_mode()``: shuffled round by round as
    in the timing run, though neither into the same order nor after the same history (no pure
    Python here, and ``repeats`` rounds, 100 by default, where the committed timing run has 50).
    A record holds ``malloc`` (a label for the
    allocator setting of this process), ``impl, batch, seq_len, d_model, vocab_size, out_bytes``
    (of the float32 output), ``faults_median, faults_min, faults_max`` (per call, over the
    rounds), ``min_ms, median_ms`` and ``repeats``. With ``mapped``, each record also holds
    ``calls``: per call, in its round's order, ``[faults, mapped]``, where ``mapped`` is how many
    more blocks with a mapping of their own glibc held while the call's output was alive (1 for
    an output that got fresh pages, 0 for one from the heap; None without glibc:
    :func:`glibc_heap`). It tells why a call took the faults it took; the outputs then stay
    alive until after the count, so the times leave out their free. ``threads``, if given, is
    PyTorch's thread count for the run (``torch.set_num_threads``, restored afterwards).
    """
    records = []
    previous = torch.get_num_threads()
    if threads:
        torch.set_num_threads(threads)
    with torch.inference_mode():
        for B, T, d in sizes:
            chosen = [(name, fn) for name, _, _, fn in contenders(
                B, T, d, vocab_size, seed, [torch.device("cpu")], python_limit=0, compile=compile)
                if impls is None or name in impls]
            for _, fn in chosen:                                 # warm up (and compile) everyone
                for _ in range(warmup):
                    fn()
            faults, times, fresh = _faults_and_times(dict(chosen), repeats, mapped)   # as in cpu.run
            for name, _ in chosen:
                f, ts = faults[name], times[name]
                records.append({"malloc": malloc, "impl": name, "batch": B, "seq_len": T, "d_model": d,
                                "vocab_size": vocab_size, "out_bytes": B * T * d * 4,
                                "faults_median": statistics.median(f), "faults_min": min(f),
                                "faults_max": max(f), "min_ms": round(min(ts), 4),
                                "median_ms": round(statistics.median(ts), 4), "repeats": len(ts)})
                if mapped:
                    records[-1]["calls"] = [list(c) for c in zip(f, fresh[name])]
                if log:
                    log(f"{malloc[:14]:>14} {name:>10}  B={B:<3} T={T:<4} d={d:<4} faults/call "
                        f"{statistics.median(f):8.0f}  (output {B * T * d * 4 / 2**20:4.0f} MiB)  "
                        f"min {min(ts):8.3f} ms")
    torch.set_num_threads(previous)
    return records


class ControlNotRun(RuntimeError):
    """The allocator control did not take effect in its process, or could not be checked there."""


def count_faults_in_subprocess(environment: str = KEEP_LARGE_BLOCKS, **kwargs) -> list[dict]:
    """:func:`count_faults` in a fresh Python process with one more environment variable
    (``"NAME=value"``), which the C library or PyTorch reads only at start-up; ``malloc`` is set
    to it. An empty ``environment`` runs the default allocator (``malloc`` is ``"default"``).

    For the control (:data:`KEEP_LARGE_BLOCKS`) the child first checks that the setting took
    effect (:func:`keeps_large_blocks`, before anything else is allocated) and the run is refused
    with :class:`ControlNotRun` if it did not, or cannot be checked (not glibc): its counts would
    then be those of the default allocator under the control's name."""
    env = dict(os.environ)
    if environment:
        name, value = environment.split("=", 1)
        env[name] = value
    kwargs = {**kwargs, "malloc": environment or "default"}
    code = ("import json, sys; from tokvec.bench.parts import count_faults, keeps_large_blocks; "
            "keeps = keeps_large_blocks(); "
            "kw = json.loads(sys.argv[1]); kw['sizes'] = [tuple(s) for s in kw['sizes']]; "
            "records = count_faults(**kw) if keeps or sys.argv[2] != 'control' else []; "
            "print(json.dumps({'keeps_large_blocks': keeps, 'records': records}))")
    kwargs.setdefault("sizes", DEFAULT_SIZES)
    kwargs["sizes"] = [list(s) for s in kwargs["sizes"]]
    control = "control" if environment == KEEP_LARGE_BLOCKS else "other"
    done = subprocess.run([sys.executable, "-c", code, json.dumps(kwargs), control], env=env,
                          capture_output=True, text=True, check=True)
    child = json.loads(done.stdout.strip().splitlines()[-1])
    if control == "control" and not child["keeps_large_blocks"]:
        why = ("the C library is not glibc, so it cannot be checked"
               if child["keeps_large_blocks"] is None else
               "a 48 MiB tensor still got a mapping of its own")
        raise ControlNotRun(f"the allocator control did not take effect ({why}): {environment} "
                           f"changes nothing here, so there is no control run to compare with")
    return child["records"]


def alternate_allocators(size: tuple[int, int, int] = DEFAULT_SIZES[-1], *, pairs: int = 5,
                         impls: Sequence[str] = ("in_place", "layer"), repeats: int = 20, warmup: int = 10,
                         vocab_size: int = 4096, seed: int = 0,
                         environments: Sequence[str] = ("", KEEP_LARGE_BLOCKS, HUGE_PAGES),
                         threads: int | None = None, log: Callable[[str], None] | None = None) -> list[dict]:
    """:func:`count_faults` at one ``size`` for ``impls``, in fresh processes that take turns,
    ``pairs`` times: the default allocator, the control (:data:`KEEP_LARGE_BLOCKS`), PyTorch's
    huge pages (:data:`HUGE_PAGES`), the default, the control, ... So a slow minute of the
    machine falls on every setting, and every turn gives its own time per fault. ``warmup`` calls
    first, enough for the control's heap to settle. The records are those of
    :func:`count_faults` with ``pair`` (the turn: 0, 1, ...) added."""
    records = []
    for pair in range(pairs):
        for environment in environments:
            done = count_faults_in_subprocess(environment, sizes=[size], impls=list(impls), repeats=repeats,
                                              warmup=warmup, vocab_size=vocab_size, seed=seed, compile=False,
                                              threads=threads)
            for r in done:
                records.append({**r, "pair": pair})
                if log:
                    log(f"turn {pair} {r['malloc'][:14]:>14} {r['impl']:>10} faults/call "
                        f"{r['faults_median']:8.0f}  min {r['min_ms']:8.3f} ms")
    return records


#: The contenders of :func:`time_threads`: NumPy (one thread whatever PyTorch is told: the
#: control) and three eager PyTorch ones.
THREAD_CONTENDERS = ("numpy", "tutorial", "in_place", "layer")

#: A busy process of :func:`time_threads`: pure Python that says it has started, then never sleeps.
_SPIN = "print('spinning', flush=True)\nwhile True: pass"


def time_threads(sizes: Sequence[tuple[int, int, int]] = DEFAULT_SIZES[:2], *,
                 threads: Sequence[int] | None = None, busy: Sequence[int] | None = None, rounds: int = 400,
                 warmup: int = 10, vocab_size: int = 4096, seed: int = 0,
                 log: Callable[[str], None] | None = None) -> list[dict]:
    """What the number of PyTorch threads does to the times, on a quiet machine and a busy one.

    For every entry of ``busy``, that many other processes run pure Python that never sleeps
    (each has said it is running before the first round; all are killed after the last), and at
    every size each of
    :data:`THREAD_CONTENDERS` is called at every thread count of ``threads``
    (``torch.set_num_threads`` before each call, untimed), once per round, in an order shuffled
    every round with a seeded generator. So the thread counts are compared in the same rounds,
    under the same load. With as many busy processes as cores, a PyTorch operation large enough
    to split over two threads (ATen's grain size is 32,768 elements) must wait at its end for a
    thread that the kernel has given to a busy process; one thread never waits for another.
    NumPy runs one thread whatever PyTorch is told, so its times are the control. Only eager
    contenders: ``torch.compile``'s code keeps the thread count it was compiled with.

    A record holds ``impl, threads, busy, batch, seq_len, d_model, vocab_size`` and the times
    of :func:`tokvec.bench.common.summary`. The thread count in force before is restored.
    ``threads`` defaults to 1 and the number of cores, ``busy`` to 0 and the number of cores."""
    cores = os.cpu_count() or 2
    threads = (1, cores) if threads is None else tuple(threads)
    busy = (0, cores) if busy is None else tuple(busy)
    names = [name for name in CPU_CONTENDERS if name in THREAD_CONTENDERS]
    previous = torch.get_num_threads()
    records = []
    order = random.Random(seed)
    try:
        for n_busy in busy:
            spinners = [subprocess.Popen([sys.executable, "-c", _SPIN], stdout=subprocess.PIPE, text=True)
                        for _ in range(n_busy)]
            try:
                for spinner in spinners:                               # each one is spinning now
                    spinner.stdout.readline()
                with torch.inference_mode():
                    for B, T, d in sizes:
                        fns = {name: fn for name, _, _, fn in contenders(
                            B, T, d, vocab_size, seed, [torch.device("cpu")], python_limit=0, compile=False)
                            if name in names}
                        keys = [(name, n) for name in names for n in threads]
                        for name, n in keys:
                            torch.set_num_threads(n)
                            for _ in range(warmup):
                                fns[name]()
                        times = {key: [] for key in keys}
                        for _ in range(rounds):
                            order.shuffle(keys)
                            for name, n in keys:
                                torch.set_num_threads(n)
                                start = time.perf_counter()
                                fns[name]()
                                times[(name, n)].append((time.perf_counter() - start) * 1e3)
                        for name in names:
                            for n in threads:
                                spread = summary(times[(name, n)], digits=5)
                                records.append({"impl": name, "threads": n, "busy": n_busy, "batch": B,
                                                "seq_len": T, "d_model": d, "vocab_size": vocab_size,
                                                **spread})
                                if log:
                                    log(f"busy {n_busy} threads {n} {name:>10}  B={B:<3} T={T:<4} d={d:<4} "
                                        f"median {spread['median_ms']:8.3f} ms  p90 {spread['p90_ms']:8.3f} ms")
            finally:
                for spinner in spinners:
                    spinner.kill()
                    spinner.wait()
                    spinner.stdout.close()
    finally:
        torch.set_num_threads(previous)
    return records


#: The cache-eviction control of :func:`time_checks`: what each timed call of ``check_ids`` comes
#: right after, and how many bytes a single-threaded NumPy ``fill`` writes there (untimed). The
#: machine's last-level cache is 32 MiB (:func:`memory_setting` records it).
CHECK_BEFORE = {"nothing": 0, "write 512 KiB": 512 * 2**10, "write 48 MiB": 48 * 2**20}


def time_checks(sizes: Sequence[tuple[int, int, int]] = DEFAULT_SIZES, *, vocab_size: int = 4096,
                rounds: int = 20, calls: int = 50, cold_calls: int = 10, seed: int = 0,
                log: Callable[[str], None] | None = None) -> list[dict]:
    """:func:`tokvec.validate.check_ids` alone on the ``(B, T)`` ids of every size, in ``rounds``
    rounds (the sizes take turns, so load hits them alike). Each round times, per size and per
    entry of :data:`CHECK_BEFORE`: ``calls`` calls back to back (``"nothing"``: warm caches, the
    best case), ``calls`` calls each right after writing a 512 KiB buffer, and ``cold_calls``
    calls each right after writing a 48 MiB one, which evicts the last-level cache (the writes are
    untimed, one thread, no allocation). A record holds ``impl`` ("checks"), ``before``,
    ``written_bytes``, ``batch, seq_len, d_model, vocab_size, ids``, ``min_ms, p10_ms, median_ms``
    and ``repeats``."""
    ids = {}
    for B, T, d in sizes:
        gen = torch.Generator().manual_seed(seed)                  # the ids of cpu.contenders
        ids[(B, T, d)] = torch.randint(0, vocab_size, (B, T), generator=gen)
    buffers = {name: np.ones(n // 4, dtype=np.float32) for name, n in CHECK_BEFORE.items() if n}
    before = {name: None if name not in buffers else (lambda b=buffers[name]: b.fill(1.0))
              for name in CHECK_BEFORE}
    times = {(size, name): [] for size in sizes for name in CHECK_BEFORE}
    with torch.inference_mode():
        for r in range(rounds):
            for size in sizes:
                x, T = ids[size], size[1]
                for name in CHECK_BEFORE:
                    n = cold_calls if CHECK_BEFORE[name] > 2**20 else calls
                    times[(size, name)] += time_call(lambda x=x, T=T: check_ids(x, vocab_size, T), repeats=n,
                                                     warmup=3 if r == 0 else 0, before=before[name])
    records = []
    for ((B, T, d), name), ts in times.items():
        spread = _summary(ts)
        records.append({"impl": "checks", "before": name, "written_bytes": CHECK_BEFORE[name], "batch": B,
                        "seq_len": T, "d_model": d, "vocab_size": vocab_size, "ids": B * T, **spread})
        if log:
            log(f"checks after {name:>13}  B={B:<3} T={T:<4} ({B * T:6} ids)  min {min(ts) * 1e3:7.1f} us  "
                f"p10 {spread['p10_ms'] * 1e3:7.1f} us  median {statistics.median(ts) * 1e3:7.1f} us")
    return records


#: The parts of :func:`time_layer_parts`, in the order of its records.
LAYER_PARTS = ("tutorial", "in_place", "layer", "forward", "check_ids", "dropout")


def _layer_parts(B: int, T: int, d: int, V: int, seed: int) -> dict[str, Callable[[], object]]:
    """The callables of :func:`time_layer_parts` at one size, on the inputs of ``cpu.contenders``."""
    gen = torch.Generator().manual_seed(seed)
    x = torch.randint(0, V, (B, T), generator=gen)                                # (B, T) int64
    torch.manual_seed(seed)
    lay = TransformerEmbedding(V, d, T, dropout=0.1).eval()
    emb, pe, scale = lay.token, lay.pe, math.sqrt(d)
    out = lay(x)                                                                   # (B, T, d)

    def in_place():
        rows = emb(x)
        return torch.add(pe[:T], rows, alpha=scale, out=rows)

    return {"tutorial": lambda: emb(x) * math.sqrt(d) + pe[:T], "in_place": in_place,
            "layer": lambda: lay(x), "forward": lambda: lay.forward(x),
            "check_ids": lambda: check_ids(x, V, T), "dropout": lambda: lay.dropout(out)}


def time_layer_parts(sizes: Sequence[tuple[int, int, int]] = DEFAULT_SIZES[:2], *, vocab_size: int = 4096,
                     rounds: int = 3000, warmup: int = 50, seed: int = 0,
                     log: Callable[[str], None] | None = None) -> list[dict]:
    """What the layer adds to ``in_place``, part by part: each part timed in the same tight loop.

    At each size, with the ids, weights and table of :func:`tokvec.bench.cpu.contenders`, under
    ``torch.inference_mode()``, every round calls each of :data:`LAYER_PARTS` once, in an order
    shuffled every round with a seeded generator:

    * ``tutorial``, ``in_place``, ``layer`` -- as in :func:`tokvec.bench.cpu.contenders`;
    * ``forward``   -- ``layer.forward(ids)``: the layer without its own ``nn.Module`` call, so
      ``layer - forward`` is the cost of that call;
    * ``check_ids`` -- :func:`tokvec.validate.check_ids` on the ids, as the layer calls it;
    * ``dropout``   -- ``layer.dropout(out)`` in eval mode: a second module call, which returns its
      input.

    Only small sizes: there the parts are comparable with the whole, and nothing large runs in
    between, so caches stay warm (the best case of every part). A record holds ``impl, batch,
    seq_len, d_model, vocab_size, min_ms, p10_ms, median_ms, repeats``.
    """
    records = []
    order = random.Random(seed)
    with torch.inference_mode():
        for B, T, d in sizes:
            fns = _layer_parts(B, T, d, vocab_size, seed)
            names = list(LAYER_PARTS)
            for name in names:
                for _ in range(warmup):
                    fns[name]()
            times = {name: [] for name in names}
            for _ in range(rounds):
                order.shuffle(names)
                for name in names:
                    start = time.perf_counter()
                    fns[name]()
                    times[name].append((time.perf_counter() - start) * 1e3)
            for name in LAYER_PARTS:
                ts = times[name]
                records.append({"impl": name, "batch": B, "seq_len": T, "d_model": d, "vocab_size": vocab_size,
                                **_summary(ts)})
                if log:
                    log(f"layer part {name:>9}  B={B:<3} T={T:<4} d={d:<4} min {min(ts) * 1e3:7.1f} us  "
                        f"median {statistics.median(ts) * 1e3:7.1f} us")
    return records


def time_copy(sizes: Sequence[tuple[int, int, int]] = DEFAULT_SIZES, *, rounds: int = 100, warmup: int = 5,
              log: Callable[[str], None] | None = None) -> list[dict]:
    """An output-sized float32 copy at every size, two ways, in ``rounds`` rounds that each call
    both at every size (in the shuffled order of :func:`tokvec.bench.cpu.call_order`):

    * ``copy_`` -- ``dst.copy_(src)`` into a tensor kept from call to call: one read and one write
      of the output's bytes and nothing else, the yardstick of a roofline (a floor only for a
      kernel that must read from memory as many bytes as it writes; one whose inputs sit in the
      cache can beat it);
    * ``clone`` -- ``src.clone()``: the same copy into a new tensor, freed inside the timing, so
      ``clone - copy_`` is what the allocation costs, fresh pages included where there are any.

    A record holds ``impl, batch, seq_len, d_model, out_bytes, moved_bytes`` (read plus written),
    ``faults_median, min_ms, median_ms, repeats``."""
    fns = {}
    for B, T, d in sizes:
        src = torch.rand(B, T, d, generator=torch.Generator().manual_seed(0))       # (B, T, d) float32
        dst = torch.empty_like(src)
        fns[("copy_", B, T, d)] = lambda src=src, dst=dst: dst.copy_(src)
        fns[("clone", B, T, d)] = lambda src=src: src.clone()
    with torch.inference_mode():
        for fn in fns.values():
            for _ in range(warmup):
                fn()
        faults, times, _ = _faults_and_times(fns, rounds)
    records = []
    for (name, B, T, d), ts in times.items():
        out_bytes = B * T * d * 4
        records.append({"impl": name, "batch": B, "seq_len": T, "d_model": d, "out_bytes": out_bytes,
                        "moved_bytes": 2 * out_bytes, "faults_median": statistics.median(faults[(name, B, T, d)]),
                        "min_ms": round(min(ts), 5), "median_ms": round(statistics.median(ts), 5),
                        "repeats": len(ts)})
        if log:
            log(f"{name:>6}  B={B:<3} T={T:<4} d={d:<4} faults/call {statistics.median(faults[(name, B, T, d)]):7.0f}  "
                f"min {min(ts):8.3f} ms  {2 * out_bytes / min(ts) / 1e6:6.1f} GB/s")
    return records


def main(argv: Sequence[str] | None = None) -> dict:
    """The command line of ``python -m tokvec.bench parts``."""
    argv = sys.argv[1:] if argv is None else list(argv)
    from tokvec.bench.cpu import _parse_size

    parser = argparse.ArgumentParser(prog="python -m tokvec.bench parts", description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=_parse_size, nargs="+", default=list(DEFAULT_SIZES), metavar="BxTxd",
                        help="sizes of the page-fault count and the copies")
    parser.add_argument("--check-sizes", type=_parse_size, nargs="+", default=list(DEFAULT_SIZES),
                        metavar="BxTxd", help="sizes of the checks timed alone")
    parser.add_argument("--vocab-size", type=int, default=4096)
    parser.add_argument("--repeats", type=int, default=100, help="rounds of the page-fault count")
    parser.add_argument("--pairs", type=int, default=5,
                        help="turns of default/control/huge-page processes (0: none)")
    parser.add_argument("--pair-size", type=_parse_size, default=DEFAULT_SIZES[-1], metavar="BxTxd")
    parser.add_argument("--check-rounds", type=int, default=20)
    parser.add_argument("--check-calls", type=int, default=50, help="calls per round and condition")
    parser.add_argument("--check-cold-calls", type=int, default=10, help="... right after the 48 MiB write")
    parser.add_argument("--part-sizes", type=_parse_size, nargs="+", default=list(DEFAULT_SIZES[:2]),
                        metavar="BxTxd", help="sizes of the layer taken apart")
    parser.add_argument("--part-rounds", type=int, default=3000)
    parser.add_argument("--copy-rounds", type=int, default=100)
    parser.add_argument("--thread-sizes", type=_parse_size, nargs="+", default=list(DEFAULT_SIZES[:2]),
                        metavar="BxTxd", help="sizes of the thread comparison")
    parser.add_argument("--thread-rounds", type=int, default=400)
    parser.add_argument("--busy", type=int, nargs="+", default=None,
                        help="busy processes beside the thread comparison (default: 0, then one per core)")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch.set_num_threads, as in python -m tokvec.bench (0: PyTorch's own choice)")
    parser.add_argument("--no-compile", action="store_true", help="leave torch.compile out")
    parser.add_argument("--out", default=None, help="write the results as JSON to this file")
    args = parser.parse_args(argv)
    os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")            # as in cpu.main
    if args.threads:                        # here and in every child process (count_faults)
        torch.set_num_threads(args.threads)
    threads = args.threads or None
    load_before = load_average()
    options = {"vocab_size": args.vocab_size, "repeats": args.repeats, "compile": not args.no_compile,
               "threads": threads}
    faults = count_faults(args.sizes, **options, log=print)
    control = {"run": True}
    try:
        faults += count_faults_in_subprocess(KEEP_LARGE_BLOCKS, sizes=args.sizes, **options)
    except ControlNotRun as err:            # the rest of the run does not need it: go on without
        control = {"run": False, "reason": str(err)}
        print(f"control not run: {err}")
    for r in faults:
        if r["malloc"] == KEEP_LARGE_BLOCKS:
            print(f"{'control':>14} {r['impl']:>10}  B={r['batch']:<3} T={r['seq_len']:<4} d={r['d_model']:<4} "
                  f"faults/call {r['faults_median']:8.0f}  min {r['min_ms']:8.3f} ms")
    settings = ("", KEEP_LARGE_BLOCKS, HUGE_PAGES) if control["run"] else ("", HUGE_PAGES)
    alternating = alternate_allocators(args.pair_size, pairs=args.pairs, vocab_size=args.vocab_size,
                                       environments=settings, threads=threads, log=print)
    checks = time_checks(args.check_sizes, vocab_size=args.vocab_size, rounds=args.check_rounds,
                         calls=args.check_calls, cold_calls=args.check_cold_calls, log=print)
    layer_parts = time_layer_parts(args.part_sizes, vocab_size=args.vocab_size, rounds=args.part_rounds,
                                   log=print)
    copies = time_copy(args.sizes, rounds=args.copy_rounds, log=print)
    by_threads = time_threads(args.thread_sizes, busy=args.busy, rounds=args.thread_rounds,
                              vocab_size=args.vocab_size, log=print)
    # how busy the machine was (runnable processes, averaged over 1, 5 and 15 minutes): the times
    # above are minima and medians taken while other programs may have shared the cores (the
    # busy processes of the thread comparison are part of this run, and count in "after")
    load = {"before": load_before, "after": load_average()}
    result = {**describe(" ".join(["python -m tokvec.bench parts", *argv])), "memory": memory_setting(),
              "load_average": load, "control": control, "faults": faults, "alternating": alternating, "checks": checks,
              "layer_parts": layer_parts, "copy": copies, "threads": by_threads}
    if args.out:
        write(result, args.out)
        print(f"wrote {len(faults)} fault, {len(alternating)} alternating, {len(checks)} check, "
              f"{len(layer_parts)} layer-part, {len(copies)} copy and {len(by_threads)} thread records "
              f"to {args.out}")
    return result
