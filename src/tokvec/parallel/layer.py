"""The vocabulary-parallel embedding: rows of the table split over the ranks of a process group.

Taught in the chapter "The embedding across processes" (``vocab_parallel``). Megatron-LM's
``VocabParallelEmbedding`` (Shoeybi et al., 2019), with its tied output layer and its
sequence-parallel output (Korthikanti et al., 2022), written to be read.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from tokvec import validate
from tokvec.layers import _lookup_ids
from tokvec.parallel.collectives import (
    _WINDOW,
    _checksum,
    _CopyToGroup,
    _gather_ints,
    _GatherSequence,
    _ReduceScatterSequence,
    _SumOverGroup,
    group_size_and_rank,
)

__all__ = ["VocabParallelEmbedding", "shard_ranges"]

# The table is drawn in blocks of about this many numbers (4 MiB in float32), so initialising a
# shard never holds the whole table; see VocabParallelEmbedding.reset_parameters.
_INIT_BLOCK_ELEMENTS = 1 << 20


def _check_split(vocab_size, world_size) -> tuple[int, int]:
    return validate.positive_int(vocab_size, "vocab_size"), validate.positive_int(world_size, "world_size")


def shard_ranges(vocab_size: int, world_size: int) -> list[tuple[int, int]]:
    """Every rank's rows ``[start, end)`` in our balanced split: the first ``V mod W`` get one more.

    ``shard_ranges(10, 4)`` is ``[(0, 3), (3, 6), (6, 8), (8, 10)]``: sizes 3, 3, 2, 2, never
    more than one apart, no padding rows, any vocabulary size with any world size (a rank may
    hold none when ``W > V``). Megatron-LM pads the vocabulary to a multiple of ``128 W``
    instead and gives every rank the same number of rows; PyTorch's DTensor cuts like
    ``torch.chunk`` (:func:`tokvec.parallel.dtensor_shard_ranges`: 3, 3, 3, 1). Taught in
    the chapter "The embedding across processes".
    """
    vocab_size, world_size = _check_split(vocab_size, world_size)
    base, extra = divmod(vocab_size, world_size)
    starts = [rank * base + min(rank, extra) for rank in range(world_size + 1)]
    return list(zip(starts, starts[1:]))


def _init_blocks(vocab_size: int, d_model: int) -> list[tuple[int, int]]:
    """Row blocks ``[first, last)`` in which the full table is drawn; the same on every rank.

    Each block but the last holds a multiple of 16 numbers and the last at least 16 (or the
    table is one block): PyTorch's CPU ``normal_`` transforms its uniform draws 16 at a time, so
    blocks cut this way give exactly the numbers of one ``normal_`` call on the whole table.
    """
    step = 16 // math.gcd(d_model, 16)                       # rows per 16-aligned unit
    rows = max(step, _INIT_BLOCK_ELEMENTS // d_model // step * step)
    blocks = [(first, min(first + rows, vocab_size)) for first in range(0, vocab_size, rows)]
    if len(blocks) > 1 and (blocks[-1][1] - blocks[-1][0]) * d_model < 16:
        blocks[-2:] = [(blocks[-2][0], vocab_size)]          # a short tail joins the block before
    return blocks


class VocabParallelEmbedding(nn.Module):
    """An ``nn.Embedding(vocab_size, d_model)`` whose rows are split over the ranks of ``group``.

    Taught in the chapter "The embedding across processes"; Megatron-LM's
    ``VocabParallelEmbedding``, and what PyTorch's ``parallelize_module`` makes of an
    ``nn.Embedding`` with ``RowwiseParallel`` (:func:`tokvec.parallel.parallelize_embedding`).

    * ``vocab_range``: ``(start, end)``, the rows this rank holds (:func:`shard_ranges`: sizes
      differ by at most one, no padding rows; a rank may hold none);
    * ``weight``: the local shard, ``(end - start, d_model)``. It starts ``N(0, 1)`` like
      ``nn.Embedding`` and is the *same table whatever the world size*: after
      ``torch.manual_seed(s)``, the shards of any group put together are, row for row, the
      table of a world of one, which is the table ``nn.Embedding(vocab_size, d_model)`` draws
      after the same seed on the CPU (:meth:`reset_parameters`). :meth:`load_full_weight`
      copies this rank's rows from a full table instead;
    * ``forward(ids)``: ids of shape ``(T,)`` or ``(B, T)``, the same on every rank, any integer
      dtype PyTorch can index with after widening (int8, int16, uint8, int32, int64, as
      :class:`tokvec.layers.TransformerEmbedding`); returns the full ``(..., T, d_model)``
      embeddings on every rank (one all-reduce);
    * ``sequence_parallel=True``: returns only this rank's contiguous ``T / W`` positions,
      ``(..., T / W, d_model)``, with a reduce-scatter instead of the all-reduce (half the
      bytes, :func:`tokvec.parallel.communication_bytes`) and an all-gather in the backward
      pass; ``T`` must be a multiple of the world size;
    * :meth:`output_logits`: the tied output layer, this rank's shard of the logits;
    * ``check_ids_agree=True`` (off by default): every call also checks that every rank got the
      same ids, with one all-gather of five integers per rank (a shape and a checksum, as
      :func:`tokvec.parallel.vocab_parallel_cross_entropy` checks its targets), and raises on
      every rank if they differ or if any rank refused its ids. It compares shapes as they are,
      so ``(T,)`` on one rank and ``(1, T)`` on another are refused too, although they would
      look up the same vectors; it needs ``vocab_size`` up to ``2**30`` (the checksum's range).

    Every input is checked on every rank before any communication (the same checks as the
    single-process layers, :func:`tokvec.validate.check_ids`): a bad id raises an ``IndexError``
    that names it, on all ranks alike, so the group stays in step. That assumes every rank got
    the same ids. Ranks that got different ids, without ``check_ids_agree``, raise nothing
    when they got as many ids, whatever their shapes: every rank gets the same wrong vectors,
    the sum of each rank's rows for its own ids. When the number of ids differs gloo aborts a
    process ("Received data size doesn't match expected size"), NCCL may hang or go on with
    wrong values, and ``TORCH_DISTRIBUTED_DEBUG=DETAIL`` turns it into an error on every rank.
    Taught in the chapter "The embedding across processes" ("A bad id, on every rank").
    """

    def __init__(self, vocab_size: int, d_model: int, *, group=None, sequence_parallel: bool = False,
                 check_ids_agree: bool = False, device=None, dtype=None):
        super().__init__()
        self.vocab_size = validate.positive_int(vocab_size, "vocab_size")
        self.d_model = validate.positive_int(d_model, "d_model")
        self.sequence_parallel = validate.flag(sequence_parallel, "sequence_parallel")
        self.check_ids_agree = validate.flag(check_ids_agree, "check_ids_agree")
        if self.check_ids_agree and self.vocab_size > _WINDOW:
            raise ValueError(f"check_ids_agree compares ids below 2**30 only, but vocab_size is {self.vocab_size}; "
                             f"use check_ids_agree=False and give every rank its batch from one rank")
        if dtype is not None:
            validate.torch_floating_dtype(dtype)
        self.group = group
        self.world_size, self.rank = group_size_and_rank(group)
        validate.table_size(self.vocab_size, self.d_model, ("vocab_size", "d_model"), validate.ARRAY_TABLE_LIMIT)
        self.vocab_range = shard_ranges(self.vocab_size, self.world_size)[self.rank]
        rows = self.vocab_range[1] - self.vocab_range[0]
        self.weight = nn.Parameter(torch.empty(rows, self.d_model, device=device, dtype=dtype))
        self.reset_parameters()

    @torch.no_grad()
    def reset_parameters(self) -> None:
        """Draw ``N(0, 1)`` as if for the full table, and keep this rank's rows.

        The full ``(vocab_size, d_model)`` table is drawn from PyTorch's default CPU generator in
        row blocks (:data:`_INIT_BLOCK_ELEMENTS` numbers at most, so memory stays bounded by a
        block, not the table) and each rank copies the rows that fall in its range, as
        Megatron-LM's CPU initialisation does (``_initialize_affine_weight_cpu``, which draws the
        whole master weight at once). Every rank draws every block, so every rank's generator
        ends where a world of one's does: the next layer's initialisation matches too. Drawing
        each shard directly (``self.weight.normal_()``) would instead give rank ``r`` the first
        rows of the same stream, so that with every rank seeded alike token ``i`` and token
        ``i + V / W`` would start as the same vector.
        """
        if self.weight.device.type == "meta":                # shapes only, nothing to draw
            return
        start, end = self.vocab_range
        for first, last in _init_blocks(self.vocab_size, self.d_model):
            block = torch.empty(last - first, self.d_model, dtype=self.weight.dtype).normal_()
            low, high = max(first, start), min(last, end)      # this rank's rows in the block
            if low < high:
                self.weight[low - start:high - start].copy_(block[low - first:high - first])

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

    def _check(self, ids) -> torch.Tensor:
        """The checks of ``ids`` before any collective; int64 ids back.

        Always this rank's own check (:meth:`_check_here`); with ``check_ids_agree``, also that
        every rank of the group got the same ids, so that a disagreement raises on every rank.
        """
        if not (self.check_ids_agree and self.world_size > 1):
            return self._check_here(ids)
        try:
            ids, error = self._check_here(ids), None
        except (TypeError, ValueError, IndexError) as caught:   # tell the others first
            error = caught
        row = [0, 0, 0, 0, 0] if error else [1, ids.ndim, *([1] * (2 - ids.ndim)), *ids.shape, _checksum(ids)]
        rows = _gather_ints(row, self.group, self.world_size, self.weight.device)  # (W, 5)
        if error is not None:
            raise error
        refused = [rank for rank, r in enumerate(rows) if r[0] == 0]
        if refused:
            raise ValueError(f"rank(s) {refused} of {self.world_size} refused their ids (their error says why), "
                             f"so this rank stops too, before the all-reduce")
        if any(r != rows[0] for r in rows):
            seen = "; ".join(f"rank {rank}: shape {tuple(r[2:4]) if r[1] == 2 else (r[3],)}, checksum {r[4]}"
                             for rank, r in enumerate(rows))
            raise ValueError(f"the ranks got different ids ({seen}); every rank of a tensor-parallel group "
                             f"must look up the same batch: broadcast it from the group's first rank, as "
                             f"Megatron-LM does (unchecked, every rank would get the same wrong vectors, or a "
                             f"crash when the number of ids differs)")
        return ids

    def _check_here(self, ids) -> torch.Tensor:
        """The single-process layers' check of ``ids`` (shape, dtype, range, device); int64 ids back."""
        T = ids.shape[-1] if isinstance(ids, torch.Tensor) and ids.ndim else 1
        _, ids = _lookup_ids(ids, self.vocab_size, max(T, 1), self.weight)
        if self.sequence_parallel and T % self.world_size:
            raise ValueError(f"sequence_parallel splits the T = {T} positions over the world size "
                             f"{self.world_size}, but {T} is not a multiple of {self.world_size}; pad the "
                             f"sequence to {-(-T // self.world_size) * self.world_size} positions, or use "
                             f"sequence_parallel=False")
        return ids

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        partial = self._partial(ids)                        # (..., T, d): zeros for others' ids
        if self.world_size == 1:
            return partial
        if self.sequence_parallel:                          # this rank's positions only
            return _ReduceScatterSequence.apply(partial, self.group, self.world_size)  # (..., T/W, d)
        return _SumOverGroup.apply(partial, self.group)     # every rank: the full embeddings

    def _partial(self, ids: torch.Tensor) -> torch.Tensor:
        """This rank's share of the output: its rows for its own ids, zero vectors elsewhere."""
        ids = self._check(ids)                              # on every rank, before any collective
        start, end = self.vocab_range
        outside = (ids < start) | (ids >= end)              # ids held by other ranks
        if end > start:
            local = (ids - start).masked_fill(outside, 0)   # any valid row; zeroed below
            partial = nn.functional.embedding(local, self.weight)
            partial = partial.masked_fill(outside.unsqueeze(-1), 0.0)
        else:                                               # this rank holds no rows
            partial = self.weight.new_zeros(*ids.shape, self.d_model) + self.weight.sum()
        return partial

    def output_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """This rank's shard of the tied output layer: ``hidden @ weight_shard.T``, ``(..., T, end - start)``.

        The output layer shares the embedding's table (Press & Wolf, 2017), so it is split by
        the same rows: rank ``r`` computes the logits of its own tokens, and the full logits,
        ``(..., T, vocab_size)``, are never gathered; pass the shard to
        :func:`tokvec.parallel.vocab_parallel_cross_entropy`. ``hidden`` is the same on every
        rank; it first goes through Megatron-LM's f operator (identity forward, all-reduce of its
        gradient backward), since each rank's logits depend on all of it. With
        ``sequence_parallel=True``, ``hidden`` is this rank's ``(..., T / W, d_model)`` slice and
        is all-gathered along the sequence first (backward: reduce-scatter), as Megatron-LM's
        ``gather_from_sequence_parallel_region``. Megatron-LM's tied ``output_layer``
        (``parallel_lm_logits``, ``ColumnParallelLinear`` with ``gather_output=False``). Taught
        in the chapter "The embedding across processes".
        """
        if not isinstance(hidden, torch.Tensor):
            raise TypeError(f"hidden must be a floating-point torch.Tensor of shape (..., T, {self.d_model}), "
                            f"got {type(hidden).__name__}")
        if hidden.dtype != self.weight.dtype:
            raise TypeError(f"hidden has dtype {hidden.dtype} but the table is {self.weight.dtype}; "
                            f"convert with hidden.to({self.weight.dtype})")
        if hidden.device != self.weight.device:
            raise ValueError(f"hidden is on {hidden.device} but the table is on {self.weight.device}; "
                             f"move one of them, e.g. hidden.to({str(self.weight.device)!r})")
        least = 2 if self.sequence_parallel else 1
        if hidden.ndim < least or hidden.shape[-1] != self.d_model:
            wanted = "(..., T / W, d_model)" if self.sequence_parallel else "(..., d_model)"
            raise ValueError(f"hidden must have shape {wanted} with d_model = {self.d_model}, got "
                             f"{tuple(hidden.shape)}; it is the output of the layer before the logits")
        if self.world_size > 1:
            if self.sequence_parallel:                      # (..., T/W, d) -> (..., T, d)
                hidden = _GatherSequence.apply(hidden, self.group, self.world_size)
            else:
                hidden = _CopyToGroup.apply(hidden, self.group)   # f: all-reduce in backward
        return hidden @ self.weight.T                       # (..., T, d) @ (d, rows) -> (..., T, rows)

    def extra_repr(self) -> str:
        return (f"vocab_size={self.vocab_size}, d_model={self.d_model}, vocab_range={self.vocab_range}, "
                f"rank={self.rank} of {self.world_size}"
                + (", sequence_parallel=True" if self.sequence_parallel else "")
                + (", check_ids_agree=True" if self.check_ids_agree else ""))
