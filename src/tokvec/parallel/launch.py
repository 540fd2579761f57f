"""Running the layers in a group of processes: ``run_group`` on this machine, or ``torchrun``.

Taught in the chapter "The embedding across processes" (``vocab_parallel``).

* :func:`run_group` starts ``W`` fresh processes joined in a ``gloo`` group on 127.0.0.1 (as
  ``torch.multiprocessing.spawn`` does), runs a function in each and returns their results;
* ``torchrun --standalone --nproc-per-node 2 -m tokvec.parallel`` lets PyTorch's launcher start
  the processes instead: each reads ``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``MASTER_ADDR`` and
  ``MASTER_PORT`` from its environment (``init_method="env://"``), the way real training jobs
  start; :func:`main` runs :func:`self_check` and rank 0 prints a short report.
"""

from __future__ import annotations

import datetime
import os
import pickle
import queue as queue_module
import shutil
import socket
import sys
import tempfile
import time
import traceback
from collections.abc import Callable

import torch
import torch.distributed as dist
from torch import nn

from tokvec import validate
from tokvec.parallel.collectives import communication_bytes
from tokvec.parallel.layer import VocabParallelEmbedding
from tokvec.parallel.loss import vocab_parallel_cross_entropy

__all__ = ["compare_with_embedding", "loopback_environment", "main", "run_group", "self_check"]

_LAUNCHER_VARIABLES = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")


def _loopback_interface() -> str | None:
    """The loopback interface's name (``lo`` on Linux, ``lo0`` on macOS), for gloo."""
    try:
        return next((name for _, name in socket.if_nameindex() if name.startswith("lo")), None)
    except OSError:
        return None


def loopback_environment() -> dict[str, str]:
    """``{"GLOO_SOCKET_IFNAME": "lo"}`` (``lo0`` on macOS): the variable that keeps gloo on loopback.

    Without it gloo binds to the address this machine's hostname resolves to, which may be a
    network interface (and on macOS may bring up a firewall prompt); it falls back to loopback
    only when that fails. :func:`run_group` and :func:`main` set it, and the across-processes chapter's
    ``torchrun`` helper passes it to the processes it starts. Empty when no loopback interface
    is found. Taught in the chapter "The embedding across processes".
    """
    interface = _loopback_interface()
    return {"GLOO_SOCKET_IFNAME": interface} if interface else {}


def _use_loopback() -> None:
    for name, value in loopback_environment().items():
        os.environ.setdefault(name, value)                 # gloo talks over loopback only


def _worker(rank: int, world_size: int, rendezvous: str, timeout: float, fn: Callable, args: tuple,
            results) -> None:
    _use_loopback()
    try:
        dist.init_process_group("gloo", init_method=rendezvous, rank=rank, world_size=world_size,
                                timeout=datetime.timedelta(seconds=timeout))
    except BaseException:                                   # no group: say so, and why
        results.put((rank, "init", traceback.format_exc()))
        return
    try:
        value = fn(rank, world_size, *args)
        try:
            payload = pickle.dumps(value)                  # here, so that a bad value is this rank's error
        except Exception as error:
            raise TypeError(f"the return value of {getattr(fn, '__name__', fn)!s} on rank {rank}, a "
                            f"{type(value).__name__}, cannot be pickled to be sent back ({error}); return "
                            f"plain Python values (numbers, lists, dicts) or tensors") from None
        results.put((rank, "ok", payload))
    except BaseException:                                  # report it to the parent, then exit
        results.put((rank, "error", traceback.format_exc()))
    finally:
        results.close()
        results.join_thread()                              # sent before the others see this rank go
        dist.destroy_process_group()


def _stop(processes, grace: float = 2.0) -> None:
    """Terminate every process that is still running, all together, then wait for all of them."""
    processes = [process for process in processes if process.pid is not None]   # started ones only
    for process in processes:
        if process.is_alive():
            process.terminate()
    deadline = time.monotonic() + grace
    for process in processes:
        process.join(timeout=max(0.0, deadline - time.monotonic()))
    for process in processes:
        if process.is_alive():
            process.kill()
    for process in processes:
        process.join()


def _check_importable(fn: Callable) -> None:
    """Refuse, before any process starts, a function that a fresh interpreter cannot import by name."""
    import importlib

    module_name = getattr(fn, "__module__", None)
    qualname = getattr(fn, "__qualname__", "")
    reason = None
    if "<lambda>" in qualname or "<locals>" in qualname:
        reason = "it is a lambda or is defined inside another function"
    elif module_name == "__main__" and not hasattr(sys.modules.get("__main__"), "__file__"):
        reason = "it is defined in a notebook cell or an interactive session"
    elif module_name is None or getattr(importlib.import_module(module_name), qualname, None) is not fn:
        reason = f"it cannot be found as {module_name}.{qualname}"
    if reason is not None:
        raise TypeError(f"run_group cannot run {qualname or fn!r}: {reason}. run_group starts fresh "
                        f"interpreters that import fn by name; put it at the top level of a .py file "
                        f"(in a notebook, e.g. with %%writefile) and import it from there")


def run_group(fn: Callable, world_size: int, *args, timeout: float = 120.0) -> list:
    """Run ``fn(rank, world_size, *args)`` in ``world_size`` new processes joined in a gloo group.

    The processes meet through a file in a fresh temporary folder (``init_method="file://..."``,
    no port to pick) and talk over 127.0.0.1 only. Returns the ``world_size`` return values, by
    rank. Fails fast, stopping every process at once:

    * a rank that raises (or returns a value that cannot be pickled) raises ``RuntimeError`` with
      its rank and its traceback, as soon as it happens, followed by the errors of other ranks
      that arrived by then (often consequences: "Connection closed by peer");
    * a rank that cannot join the group raises ``RuntimeError`` saying ``init_process_group``
      failed, with its traceback; one that dies without a word (killed, ``os._exit``, or aborted
      by gloo, exit code -6, when the ranks call a collective with different sizes) raises
      ``RuntimeError`` with its exit code;
    * a group that does not finish within ``timeout`` seconds (a hang in a collective) raises
      ``TimeoutError``.

    ``fn`` must be importable (a module-level function), since each process starts a fresh
    interpreter (``spawn``). What ``torch.multiprocessing.spawn`` does, with a timeout and the
    rank in every message. Taught in the chapter "The embedding across processes".
    """
    import multiprocessing

    world_size = validate.positive_int(world_size, "world_size")
    if not callable(fn):
        raise TypeError(f"fn must be a module-level function fn(rank, world_size, *args), got "
                        f"{type(fn).__name__} {fn!r:.40}")
    _check_importable(fn)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout < float("inf"):
        raise ValueError(f"timeout must be a number of seconds > 0, got {timeout!r:.40}")
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    folder = tempfile.mkdtemp(prefix="tokvec-group-")
    rendezvous = "file://" + os.path.join(folder, "rendezvous")
    processes = [context.Process(target=_worker, daemon=True,
                                 args=(rank, world_size, rendezvous, timeout + 30, fn, args, results))
                 for rank in range(world_size)]
    collected: dict[int, tuple[str, object]] = {}
    silent: list[int] = []
    try:
        for process in processes:
            process.start()
        deadline = time.monotonic() + timeout
        while len(collected) < world_size:
            try:
                rank, status, value = results.get(timeout=max(0.05, min(0.5, deadline - time.monotonic())))
                collected[rank] = (status, value)
                if status != "ok":                          # fail fast: a little grace for the others
                    _drain(results, collected, seconds=0.2)
                    break
                continue
            except queue_module.Empty:
                pass
            if _silent(processes, collected):
                _drain(results, collected, seconds=0.2)     # it may have reported just before dying
                if _silent(processes, collected):
                    break
            if time.monotonic() > deadline:
                raise TimeoutError(f"the group of {world_size} processes did not finish within {timeout} s "
                                   f"(ranks done: {sorted(collected)}); a collective call is probably "
                                   f"waiting for a rank that never reaches it")
        silent = _silent(processes, collected)              # before the others are stopped
    finally:
        _stop(processes)
        shutil.rmtree(folder, ignore_errors=True)
    failures = {rank: (status, value) for rank, (status, value) in collected.items() if status != "ok"}
    if failures or silent:                                 # the cause first: a silent death, then by arrival
        codes = [processes[r].exitcode for r in silent]
        parts = [f"rank(s) {silent} of {world_size} died without reporting (exit codes {codes}; a negative "
                 f"code is the signal that killed it)"] if silent else []
        for rank, (status, message) in failures.items():
            what = "init_process_group failed" if status == "init" else "raised"
            parts.append(f"rank {rank} of {world_size} {what}:\n{message.rstrip()}")
        raise RuntimeError("\n\n".join(parts))
    return [pickle.loads(collected[rank][1]) for rank in range(world_size)]


def _silent(processes, collected: dict) -> list[int]:
    """The ranks whose process has ended without a report."""
    return [rank for rank, process in enumerate(processes) if process.exitcode is not None and rank not in collected]


def _drain(results, collected: dict, seconds: float) -> None:
    """Collect whatever the other ranks report within ``seconds``."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            rank, status, value = results.get(timeout=max(0.01, end - time.monotonic()))
            collected[rank] = (status, value)
        except queue_module.Empty:
            return


# --- the checks of the chapter "The embedding across processes" ------------------------------

def compare_with_embedding(rank: int, world_size: int, vocab_size: int, d_model: int,
                           batch_shape: tuple[int, ...] = (2, 6), max_len: int = 16, seed: int = 0) -> dict:
    """One rank's run of the across-processes chapter's check, for :func:`run_group`: the layer against
    ``nn.Embedding``.

    Every rank builds the same full table and ids from ``seed``, loads its rows, and compares
    the forward output and its own rows' gradient with a single-process ``nn.Embedding``. It
    also returns its partial lookup (before the all-reduce), the bytes the all-reduce sums, and
    its sinusoidal position table, built locally (:func:`tokvec.layers.sinusoidal_table`).
    Taught in the chapter "The embedding across processes".
    """
    from tokvec.layers import sinusoidal_table

    vocab_size = validate.positive_int(vocab_size, "vocab_size")
    d_model = validate.positive_int(d_model, "d_model")
    max_len = validate.positive_int(max_len, "max_len")
    validate.table_size(vocab_size, d_model, ("vocab_size", "d_model"), validate.ARRAY_TABLE_LIMIT)
    if not isinstance(batch_shape, tuple) or not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0
                                                     for n in batch_shape):
        raise TypeError(f"batch_shape must be a tuple of ints >= 0 such as (2, 6), got {batch_shape!r:.40}")
    g = torch.Generator().manual_seed(seed)
    full = torch.randn(vocab_size, d_model, generator=g)
    ids = torch.randint(0, vocab_size, batch_shape, generator=g)
    layer = VocabParallelEmbedding(vocab_size, d_model)
    layer.load_full_weight(full)
    reference = nn.Embedding.from_pretrained(full.clone(), freeze=False)
    partial = layer._partial(ids).detach()
    out, expected = layer(ids), reference(ids)
    grad_out = torch.randn(out.shape, generator=g)
    (out * grad_out).sum().backward()
    (expected * grad_out).sum().backward()
    start, end = layer.vocab_range
    return {"rank": rank, "vocab_range": layer.vocab_range, "ids": ids.tolist(),
            "partial": partial.tolist(), "out": out.detach().tolist(),
            "forward_max_error": float((out - expected).detach().abs().max()),
            "grad_max_error": float((layer.weight.grad - reference.weight.grad[start:end]).abs().max())
            if end > start else 0.0,
            "own_ids": int(((ids >= start) & (ids < end)).sum()),
            "allreduce_bytes": out.numel() * out.element_size(),
            "positions": sinusoidal_table(max_len, d_model).tolist()}


def _max_error(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a.detach() - b.detach()).abs().max()) if a.numel() else 0.0


def self_check(rank: int, world_size: int, vocab_size: int = 50, d_model: int = 8, seq_len: int = 12,
               batch: int = 2, seed: int = 0) -> dict:
    """Every claim of the across-processes chapter, checked on this rank of the current group; returns the errors.

    Run by ``python -m tokvec.parallel`` (under :func:`run_group`, or ``torchrun``). With the
    same ``seed`` on every rank: (1) the shards put together equal the table of a world of one;
    (2) embedding -> ``nn.Linear`` -> tied logits -> :func:`vocab_parallel_cross_entropy` gives
    the single-process loss, and gradients for this rank's rows and for the linear layer, with
    some targets ignored; (3) the same with ``sequence_parallel=True`` (``seq_len`` must be a
    multiple of ``world_size``) and ``check_ids_agree=True``. Every value is a maximum absolute error against a
    single-process model in float64, except the byte counts. Taught in the chapter "The
    embedding across processes".
    """
    vocab_size = validate.positive_int(vocab_size, "vocab_size")
    d_model = validate.positive_int(d_model, "d_model")
    seq_len = validate.positive_int(seq_len, "seq_len")
    batch = validate.positive_int(batch, "batch")
    validate.table_size(vocab_size, d_model, ("vocab_size", "d_model"), validate.ARRAY_TABLE_LIMIT)
    report = {"rank": rank, "world_size": world_size}

    torch.manual_seed(seed)                                  # (1) the same table whatever W
    layer = VocabParallelEmbedding(vocab_size, d_model, dtype=torch.float64)
    torch.manual_seed(seed)
    full = nn.Embedding(vocab_size, d_model, dtype=torch.float64).weight.detach()
    start, end = layer.vocab_range
    report["vocab_range"] = layer.vocab_range
    report["init_max_error"] = _max_error(layer.weight, full[start:end])

    g = torch.Generator().manual_seed(seed + 1)
    ids = torch.randint(0, vocab_size, (batch, seq_len), generator=g)
    target = torch.randint(0, vocab_size, (batch, seq_len), generator=g)
    target[0, 0] = -100                                       # an ignored position (padding)
    linear_weight = torch.randn(d_model, d_model, generator=g, dtype=torch.float64) / d_model ** 0.5

    reference = nn.Embedding.from_pretrained(full.clone(), freeze=False)
    ref_linear = nn.Linear(d_model, d_model, bias=False, dtype=torch.float64)
    with torch.no_grad():
        ref_linear.weight.copy_(linear_weight)
    logits = ref_linear(reference(ids)) @ reference.weight.T  # (B, T, V)
    ref_loss = nn.functional.cross_entropy(logits.flatten(0, 1), target.flatten())
    ref_loss.backward()

    for name, sequence_parallel in (("", False), ("sp_", True)):  # (2) and (3)
        layer = VocabParallelEmbedding(vocab_size, d_model, dtype=torch.float64,
                                       sequence_parallel=sequence_parallel, check_ids_agree=sequence_parallel)
        layer.load_full_weight(full)
        linear = nn.Linear(d_model, d_model, bias=False, dtype=torch.float64)
        with torch.no_grad():
            linear.weight.copy_(linear_weight)
        hidden = linear(layer(ids))                          # (B, T, d), or (B, T/W, d)
        loss = vocab_parallel_cross_entropy(layer.output_logits(hidden), target, group=layer.group)
        loss.backward()
        linear_grad = linear.weight.grad
        if sequence_parallel and world_size > 1:             # each rank saw T/W positions only
            dist.all_reduce(linear_grad, group=layer.group)
        report[name + "loss_error"] = abs(loss.item() - ref_loss.item())
        report[name + "table_grad_max_error"] = _max_error(layer.weight.grad, reference.weight.grad[start:end])
        report[name + "linear_grad_max_error"] = _max_error(linear_grad, ref_linear.weight.grad)
    numel = batch * seq_len * d_model
    report["all_reduce_bytes"] = communication_bytes("all_reduce", numel, world_size, 8)
    report["reduce_scatter_bytes"] = communication_bytes("reduce_scatter", numel, world_size, 8)
    return report


def _print_report(reports: list[dict]) -> None:
    world_size = len(reports)
    for r in reports:
        start, end = r["vocab_range"]
        errors = {k: v for k, v in r.items() if k.endswith("error")}
        print(f"world {world_size}, rank {r['rank']}: rows [{start:>2}, {end:>2}), largest error "
              f"{max(errors.values()):.1e} over {len(errors)} checks")
    first = reports[0]
    print(f"world {world_size}: the embedding's all-reduce sends {first['all_reduce_bytes']:.0f} bytes per rank, "
          f"its sequence-parallel reduce-scatter {first['reduce_scatter_bytes']:.0f}")


def _launched_by_torchrun() -> bool:
    return all(name in os.environ for name in ("RANK", "WORLD_SIZE"))


def _environment_int(name: str, low: int, high: int | None = None) -> int:
    value = os.environ.get(name)
    try:
        number = int(value)
    except (TypeError, ValueError):
        number = None
    if number is None or number < low or (high is not None and number > high):
        limit = f"{low}..{high}" if high is not None else f">= {low}"
        raise ValueError(f"the environment variable {name} must be an int {limit}, got {value!r}; start "
                         f"this module with torchrun (torchrun --standalone --nproc-per-node 2 -m "
                         f"tokvec.parallel), which sets {', '.join(_LAUNCHER_VARIABLES)}")
    return number


def main(argv: list[str] | None = None) -> list[dict]:
    """``python -m tokvec.parallel [world_size ...]``, or ``torchrun ... -m tokvec.parallel``.

    Under ``torchrun`` (``RANK`` and ``WORLD_SIZE`` set), this process joins the launcher's group
    (``init_method="env://"``, which reads ``MASTER_ADDR`` and ``MASTER_PORT``), runs
    :func:`self_check`, and rank 0 prints every rank's result; ``LOCAL_RANK`` is this process's
    number on its machine (the GPU it would use with ``nccl``). Otherwise it starts a group of
    each size given (default 2, 3 and 4) with :func:`run_group`. Returns the reports (under
    torchrun, every rank's). Taught in the chapter "The embedding across processes".
    """
    import sys

    argv = sys.argv[1:] if argv is None else argv
    if _launched_by_torchrun():
        world_size = _environment_int("WORLD_SIZE", 1)
        rank = _environment_int("RANK", 0, world_size - 1)
        local_rank = _environment_int("LOCAL_RANK", 0, world_size - 1) if "LOCAL_RANK" in os.environ else rank
        for name in ("MASTER_ADDR", "MASTER_PORT"):
            if name not in os.environ:
                raise ValueError(f"the environment variable {name} is not set; start this module with torchrun, "
                                 f"which sets {', '.join(_LAUNCHER_VARIABLES)}")
        _use_loopback()
        dist.init_process_group("gloo", init_method="env://")
        try:
            report = self_check(rank, world_size, seq_len=4 * world_size)
            report["local_rank"] = local_rank
            reports = [None] * world_size
            dist.all_gather_object(reports, report)
        finally:
            dist.destroy_process_group()
        if rank == 0:
            print(f"torchrun: {world_size} processes, gloo, init_method env:// "
                  f"({os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']})")
            _print_report(reports)
        return reports
    try:
        sizes = [validate.positive_int(int(a), "world_size") for a in argv] or [2, 3, 4]
    except ValueError as error:
        raise SystemExit(f"usage: python -m tokvec.parallel [world_size ...], e.g. 2 3 4 ({error})") from None
    reports = []
    for world_size in sizes:
        group_reports = run_group(self_check, world_size, 50, 8, 4 * world_size)
        _print_report(group_reports)
        reports += group_reports
    return reports
