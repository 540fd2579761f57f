"""``python -m tokvec.bench host``: what :func:`tokvec.fused.fused_embedding` costs the CPU per call.

A decoding step moves so few bytes that its time is what the host spends before the GPU starts
(the chapter "Making it fast on a GPU", "One decoding step"). This measures the Python of the wrapper alone: the kernel
launch is replaced by a function that does nothing, so what is left is the argument checks, the
grid, the output's allocation and the dispatch, on CPU tensors (no GPU needed). The unit beside
it is one PyTorch operation on one number. ``--baseline FILE`` times another version of
``tokvec/fused.py`` the same way (e.g. ``git show 70acdda:src/tokvec/fused.py > old.py``), so a
change to the wrapper is measured before and after on one machine::

    python -m tokvec.bench host --baseline old.py --out host.json
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch

from tokvec.bench.common import describe, write

__all__ = ["main", "time_host", "wrapper_costs"]


def time_host(fn: Callable[[], object], calls: int = 20000, repeats: int = 5) -> float:
    """Microseconds per call: the median of ``repeats`` loops of ``calls`` calls, after a warm-up."""
    for _ in range(min(calls, 1000)):
        fn()
    loops = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        loops.append((time.perf_counter() - start) / calls * 1e6)
    return statistics.median(loops)


class _NoLaunch:
    """Stands in for the kernel: ``kernel(interpret)[grid](*args)`` launches nothing."""

    def __getitem__(self, grid):
        return lambda *args, **kwargs: None


@contextlib.contextmanager
def _launch_replaced(module):
    kernel = module.kernel
    module.kernel = lambda interpret: _NoLaunch()
    try:
        yield
    finally:
        module.kernel = kernel


def load_module(path: str | Path, name: str = "tokvec_fused_baseline"):
    """Import another version of ``fused.py`` from a file, beside the installed one."""
    spec = importlib.util.spec_from_file_location(name, Path(path))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def wrapper_costs(module=None, *, batch: int = 64, d_model: int = 4096, vocab_size: int = 32000,
                  max_len: int = 4096, calls: int = 20000, repeats: int = 5) -> dict:
    """Host microseconds per call of ``module.fused_embedding`` (default :mod:`tokvec.fused`) for
    one decoding step of ``batch`` sequences, the launch replaced by nothing: unchecked at
    position 0, unchecked with per-sequence offsets (where the version has them), and checked."""
    if module is None:
        from tokvec import fused as module
    g = torch.Generator().manual_seed(0)
    weight = torch.randn(vocab_size, d_model, generator=g).to(torch.bfloat16)
    table = torch.randn(max_len, d_model, generator=g)
    ids = torch.randint(0, vocab_size, (batch, 1), generator=g)
    offsets = torch.randint(0, max_len, (batch,), generator=g)
    one = torch.ones(1)
    costs = {"one PyTorch operation": time_host(lambda: one + one, calls, repeats)}
    with _launch_replaced(module):
        run = module.fused_embedding
        costs["unchecked"] = time_host(lambda: run(ids, weight, table, 8.0, check=False), calls, repeats)
        try:
            run(ids, weight, table, 8.0, offsets=offsets, check=False)
        except TypeError:                                   # a version without offsets
            pass
        else:
            costs["unchecked, per-sequence offsets"] = time_host(
                lambda: run(ids, weight, table, 8.0, offsets=offsets, check=False), calls, repeats)
        costs["checked"] = time_host(lambda: run(ids, weight, table, 8.0), calls // 4, repeats)
    return {name: round(us, 2) for name, us in costs.items()}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(prog="python -m tokvec.bench host", description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", default=None, help="another version of fused.py to time the same way")
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--out", default=None, help="write the results as JSON to this file")
    args = parser.parse_args(sys.argv[2:] if argv is None else list(argv))
    result = describe("python -m tokvec.bench host " + " ".join(sys.argv[2:] if argv is None else list(argv)),
                      packages=("torch", "triton", "tokvec"))
    result["shape"] = {"batch": 64, "seq_len": 1, "d_model": 4096, "vocab_size": 32000}
    result["us_per_call"] = {"this version": wrapper_costs(calls=args.calls)}
    if args.baseline:
        result["us_per_call"][f"baseline ({Path(args.baseline).name})"] = wrapper_costs(
            load_module(args.baseline), calls=args.calls)
    for version, costs in result["us_per_call"].items():
        print(f"{version}: " + ", ".join(f"{k} {v:.2f} us" for k, v in costs.items()))
    if args.out:
        write(result, args.out)
    return result
