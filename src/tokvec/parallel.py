"""The input layer across processes: a vocabulary-parallel embedding on ``torch.distributed``.

Taught in chapter 13, "The embedding across processes" (``13_vocab_parallel``).

A table of ``vocab_size`` rows is split by rows over the ``world_size`` processes of a group:
rank ``r`` holds the contiguous rows ``[start, end)``, sizes balanced to differ by at most one.
A lookup is done locally (ids outside the slice give zero vectors) and one all-reduce sums the
partial results, so every rank ends with the full ``(..., d_model)`` embeddings. In the backward
pass the all-reduce passes the gradient straight through: each rank already holds the full
gradient of the output, and keeps only the part for its own rows. This is Megatron-LM's
``VocabParallelEmbedding`` (Shoeybi et al., 2019), written to be read.

The same code runs on CPUs (the ``gloo`` backend, used by the course and its tests, on
127.0.0.1) and on GPUs (``nccl``). Without an initialised process group the layer is a world of
one: the whole table, no communication.

``python -m tokvec.parallel`` starts 2 to 4 processes on this machine and checks the layer
against a single-process ``nn.Embedding`` (chapter 13 shows its output).
"""

from __future__ import annotations

import datetime
import os
import queue as queue_module
import socket
import time
from collections.abc import Callable

import torch
import torch.distributed as dist
from torch import nn

from tokvec import validate

__all__ = ["VocabParallelEmbedding"]


def _group_size_and_rank(group) -> tuple[int, int]:
    """``(world_size, rank)`` of ``group``; ``(1, 0)`` when no process group is initialised."""
    if not (dist.is_available() and dist.is_initialized()):
        if group is not None:
            raise ValueError("group was given but torch.distributed has no initialised process group; "
                             "call torch.distributed.init_process_group first, or pass group=None")
        return 1, 0
    return dist.get_world_size(group), dist.get_rank(group)


def _shard(vocab_size: int, world_size: int, rank: int) -> tuple[int, int]:
    """Rows ``[start, end)`` of ``rank``: the first ``vocab_size % world_size`` ranks get one more."""
    base, extra = divmod(vocab_size, world_size)
    start = rank * base + min(rank, extra)
    return start, start + base + (1 if rank < extra else 0)


class _SumOverGroup(torch.autograd.Function):
    """Forward: all-reduce (sum) over the group. Backward: the gradient unchanged.

    Every rank computes the same loss from the same full output, so the gradient arriving here
    is already the full gradient on every rank; summing it again would multiply it by the world
    size (the mistake ``torch.distributed.nn.functional.all_reduce`` makes for this use).
    """

    @staticmethod
    def forward(ctx, partial: torch.Tensor, group) -> torch.Tensor:
        total = partial.clone()
        dist.all_reduce(total, op=dist.ReduceOp.SUM, group=group)
        return total

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        return grad, None


class VocabParallelEmbedding(nn.Module):
    """An ``nn.Embedding(vocab_size, d_model)`` whose rows are split over the ranks of ``group``.

    * ``vocab_range``: ``(start, end)``, the rows this rank holds; sizes differ by at most one,
      any ``vocab_size`` works with any world size (no padding rows; a rank may hold none);
    * ``weight``: the local shard, ``(end - start, d_model)``, initialised ``N(0, 1)`` like
      ``nn.Embedding``; :meth:`load_full_weight` copies this rank's rows from a full table;
    * ``forward(ids)``: ids of any shape ``(...)``, the same on every rank; returns the full
      ``(..., d_model)`` embeddings on every rank.

    Every id is checked on every rank before any communication: an id outside
    ``0 .. vocab_size-1`` raises an ``IndexError`` that names it, on all ranks alike, so the
    group stays in step instead of hanging in a collective (as long as every rank got the same
    ids, which the layer assumes).
    """

    def __init__(self, vocab_size: int, d_model: int, *, group=None, device=None, dtype=None):
        super().__init__()
        self.vocab_size = validate.positive_int(vocab_size, "vocab_size")
        self.d_model = validate.positive_int(d_model, "d_model")
        if dtype is not None:
            validate.torch_floating_dtype(dtype)
        self.group = group
        self.world_size, self.rank = _group_size_and_rank(group)
        validate.table_size(self.vocab_size, self.d_model, ("vocab_size", "d_model"), validate.ARRAY_TABLE_LIMIT)
        self.vocab_range = _shard(self.vocab_size, self.world_size, self.rank)
        rows = self.vocab_range[1] - self.vocab_range[0]
        self.weight = nn.Parameter(torch.empty(rows, self.d_model, device=device, dtype=dtype))
        with torch.no_grad():
            self.weight.normal_(0.0, 1.0)

    @torch.no_grad()
    def load_full_weight(self, weight: torch.Tensor) -> None:
        """Copy this rank's rows ``weight[start:end]`` from a full ``(vocab_size, d_model)`` table."""
        if not isinstance(weight, torch.Tensor):
            raise TypeError(f"weight must be a torch.Tensor of shape ({self.vocab_size}, {self.d_model}), "
                            f"got {type(weight).__name__}")
        if tuple(weight.shape) != (self.vocab_size, self.d_model):
            raise ValueError(f"weight must have the full shape (vocab_size, d_model) = ({self.vocab_size}, "
                             f"{self.d_model}), got {tuple(weight.shape)}; pass the whole table, not a shard")
        start, end = self.vocab_range
        self.weight.copy_(weight[start:end])

    def _check(self, ids) -> None:
        if not isinstance(ids, torch.Tensor):
            raise TypeError(f"ids must be an integer torch.Tensor, got {type(ids).__name__} {ids!r:.40}; "
                            f"wrap it, e.g. torch.tensor(ids)")
        if ids.dtype.is_floating_point or ids.dtype.is_complex or ids.dtype == torch.bool:
            raise TypeError(f"ids must have an integer dtype, got {ids.dtype}; convert with ids.long()")
        if str(ids.dtype) in ("torch.uint16", "torch.uint32", "torch.uint64"):
            raise TypeError(f"ids have dtype {ids.dtype}, which PyTorch cannot look up with; "
                            f"convert with ids.long()")
        if ids.numel() == 0:
            return
        low, high = validate.torch_aminmax(ids.long())
        if low < 0 or high >= self.vocab_size:
            bad = low if low < 0 else high
            where = tuple(int(i) for i in (ids == bad).nonzero()[0])
            raise IndexError(f"token id {bad} at index {where} is out of range: valid ids are "
                             f"0..{self.vocab_size - 1} (vocab_size = {self.vocab_size}); map unknown "
                             f"tokens to <unk> when encoding, or build the layer with a larger vocab_size")

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        partial = self._partial(ids)                        # (..., d_model): zeros for others' ids
        if self.world_size == 1:
            return partial
        return _SumOverGroup.apply(partial, self.group)     # every rank: the full embeddings

    def _partial(self, ids: torch.Tensor) -> torch.Tensor:
        """This rank's share of the output: its rows for its own ids, zero vectors elsewhere."""
        self._check(ids)                                    # on every rank, before any collective
        start, end = self.vocab_range
        outside = (ids < start) | (ids >= end)              # ids held by other ranks
        if end > start:
            local = (ids - start).masked_fill(outside, 0)   # any valid row; zeroed below
            partial = nn.functional.embedding(local, self.weight)
            partial = partial.masked_fill(outside.unsqueeze(-1), 0.0)
        else:                                               # this rank holds no rows
            partial = self.weight.new_zeros(*ids.shape, self.d_model) + self.weight.sum()
        return partial

    def extra_repr(self) -> str:
        return (f"vocab_size={self.vocab_size}, d_model={self.d_model}, vocab_range={self.vocab_range}, "
                f"rank={self.rank} of {self.world_size}")


# --- running a function in a group of processes on this machine ---------------------------------

def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _loopback_interface() -> str | None:
    """The loopback interface's name (``lo`` on Linux, ``lo0`` on macOS), for gloo."""
    try:
        return next((name for _, name in socket.if_nameindex() if name.startswith("lo")), None)
    except OSError:
        return None


def _worker(rank: int, world_size: int, port: int, fn: Callable, args: tuple, results) -> None:
    interface = _loopback_interface()
    if interface and "GLOO_SOCKET_IFNAME" not in os.environ:
        os.environ["GLOO_SOCKET_IFNAME"] = interface        # gloo talks over loopback only
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=world_size, timeout=datetime.timedelta(seconds=60))
    try:
        results.put((rank, "ok", fn(rank, world_size, *args)))
    except BaseException as error:                          # report it to the parent, then exit
        results.put((rank, "error", f"{type(error).__name__}: {error}"))
    finally:
        dist.destroy_process_group()


def run_group(fn: Callable, world_size: int, *args, timeout: float = 120.0) -> list:
    """Run ``fn(rank, world_size, *args)`` in ``world_size`` new processes joined in a gloo group.

    The processes talk over 127.0.0.1 only. Returns the ``world_size`` return values, by rank
    (they must be picklable). If any rank raises, raises ``RuntimeError`` with every rank's
    error; if the group does not finish within ``timeout`` seconds (a hang in a collective),
    kills every process and raises ``TimeoutError``. ``fn`` must be importable (a module-level
    function), since each process starts a fresh interpreter.
    """
    import multiprocessing

    world_size = validate.positive_int(world_size, "world_size")
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    port = _free_port()
    processes = [context.Process(target=_worker, args=(rank, world_size, port, fn, args, results))
                 for rank in range(world_size)]
    for process in processes:
        process.start()
    deadline = time.monotonic() + timeout
    collected = {}
    try:
        while len(collected) < world_size:
            try:
                rank, status, value = results.get(timeout=max(0.1, min(1.0, deadline - time.monotonic())))
                collected[rank] = (status, value)
            except queue_module.Empty:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"the group of {world_size} processes did not finish within {timeout} s "
                                       f"(ranks done: {sorted(collected)}); a collective call is probably "
                                       f"waiting for a rank that never reaches it") from None
                if any(p.exitcode not in (None, 0) for p in processes) and len(collected) < world_size:
                    dead = [r for r, p in enumerate(processes) if p.exitcode not in (None, 0)]
                    if all(r not in collected for r in dead):
                        raise RuntimeError(f"rank(s) {dead} died without reporting (exit codes "
                                           f"{[processes[r].exitcode for r in dead]})") from None
    finally:
        for process in processes:
            process.join(timeout=5)
            if process.is_alive():
                process.kill()
                process.join()
    errors = {rank: value for rank, (status, value) in collected.items() if status == "error"}
    if errors:
        raise RuntimeError("; ".join(f"rank {rank}: {message}" for rank, message in sorted(errors.items())))
    return [collected[rank][1] for rank in range(world_size)]


def compare_with_embedding(rank: int, world_size: int, vocab_size: int, d_model: int,
                           batch_shape: tuple[int, ...] = (2, 6), max_len: int = 16, seed: int = 0) -> dict:
    """One rank's run of chapter 13's check, for :func:`run_group`: the layer against ``nn.Embedding``.

    Every rank builds the same full table and ids from ``seed``, loads its rows, and compares
    the forward output and its own rows' gradient with a single-process ``nn.Embedding``. It
    also returns its partial lookup (before the all-reduce), the bytes the all-reduce sums, and
    its sinusoidal position table, built locally (:func:`tokvec.layers.sinusoidal_table`).
    """
    from tokvec.layers import sinusoidal_table

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


def _main() -> None:
    """``python -m tokvec.parallel [world_size ...]``: the check of chapter 13 for each world size."""
    import sys

    sizes = [int(a) for a in sys.argv[1:]] or [2, 3, 4]
    for world_size in sizes:
        for report in run_group(compare_with_embedding, world_size, 50, 8):
            start, end = report["vocab_range"]
            print(f"world {world_size}, rank {report['rank']}: rows [{start:>2}, {end:>2}), "
                  f"{report['own_ids']:>2} of 12 ids are mine, forward error {report['forward_max_error']}, "
                  f"gradient error {report['grad_max_error']}, all-reduce {report['allreduce_bytes']} bytes")


if __name__ == "__main__":
    _main()
