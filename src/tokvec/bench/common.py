"""What every benchmark shares: the machine, device synchronisation, timers and results files.

A results file is JSON with the command that produced it, the machine and the versions next to
the numbers. The committed ones live in ``tokvec/bench/results/`` (package data, so
:func:`load` finds them in any install, editable or not); new runs are written where ``--out``
says.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from tokvec.environment import cpu_name, versions

__all__ = ["RESULTS_DIR", "describe", "load", "load_average", "machine", "summary", "synchronize", "time_call",
           "write"]

#: The committed results, shipped with the package.
RESULTS_DIR = Path(__file__).resolve().parent / "results"


def machine() -> dict:
    """Where the numbers come from: CPU model, cores PyTorch uses, GPU name (or None)."""
    import torch

    gpu = torch.cuda.get_device_name() if torch.cuda.is_available() else (
        "Apple MPS" if torch.backends.mps.is_available() else None)
    return {"cpu": cpu_name(), "cpu_count": os.cpu_count(), "torch_threads": torch.get_num_threads(),
            "gpu": gpu, "system": platform.system(), "machine": platform.machine()}


def synchronize(dev) -> None:
    """Wait until ``dev`` has finished its queued work (GPU kernels run asynchronously)."""
    if str(dev) == "cpu":                  # nothing queued; and no PyTorch needed for CPU-only timing
        return
    import torch

    dev = torch.device(dev)
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)
    elif dev.type == "mps":
        torch.mps.synchronize()


def time_call(fn: Callable[[], object], *, repeats: int, warmup: int, dev=None,
              before: Callable[[], object] | None = None) -> list[float]:
    """Call ``fn`` ``warmup`` times untimed, then ``repeats`` times; return each time in milliseconds.

    The device is synchronised before each clock read, so a time covers the work, not only its
    launch. ``before`` (untimed) runs ahead of every timed call, e.g. to flush a cache.
    """
    dev = dev or "cpu"
    for _ in range(warmup):
        fn()
    synchronize(dev)
    times = []
    for _ in range(repeats):
        if before is not None:
            before()
            synchronize(dev)
        start = time.perf_counter()
        fn()
        synchronize(dev)
        times.append((time.perf_counter() - start) * 1e3)
    return times


def summary(ts: list[float], digits: int = 4) -> dict:
    """What a list of times (ms) says, rounded: ``min_ms``, ``p10_ms``, ``median_ms``, ``p90_ms``
    and ``repeats``. The 10th and 90th percentiles (``statistics.quantiles``, inclusive) show the
    spread that a median hides: on a busy machine the slow tail moves first."""
    if len(ts) > 1:
        deciles = statistics.quantiles(ts, n=10, method="inclusive")
        p10, p90 = deciles[0], deciles[-1]
    else:
        p10 = p90 = ts[0]
    return {"min_ms": round(min(ts), digits), "p10_ms": round(p10, digits),
            "median_ms": round(statistics.median(ts), digits), "p90_ms": round(p90, digits),
            "repeats": len(ts)}


def load_average() -> list[float] | None:
    """How busy the machine is: runnable processes averaged over 1, 5 and 15 minutes
    (``os.getloadavg``; None where the system has none). Read before and after a run: on a
    machine with ``n`` cores, a load near ``n`` or above means other work shared them."""
    return [round(v, 2) for v in os.getloadavg()] if hasattr(os, "getloadavg") else None


def write(result, path) -> dict | list:
    """Write ``result`` as JSON to ``path`` (indent 1, trailing newline); return it."""
    with open(path, "w", encoding="utf-8") as f:
        json.dump(result, f, indent=1)
        f.write("\n")
    return result


def report(result: dict, out=None) -> dict:
    """The end of every benchmark script: write ``result`` to ``out`` (if given), print it, return it."""
    if out:
        write(result, out)
    print(json.dumps(result, indent=1))
    return result


def load(path) -> dict | list:
    """Read a results file: a path, or the bare name of a committed file such as
    ``"cpu-2core-xeon.json"``, looked up in :data:`RESULTS_DIR` (from any working directory)."""
    path = Path(path)
    if not path.exists() and path.name == str(path) and (RESULTS_DIR / path).exists():
        path = RESULTS_DIR / path
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def describe(command: str, packages=("numpy", "torch", "tokvec")) -> dict:
    """The header of a results file: the command, the machine and the versions."""
    return {"command": command, "machine": machine(), "versions": versions(packages)}
