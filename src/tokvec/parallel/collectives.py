"""The communication of the vocabulary-parallel layers: four autograd functions and their cost.

Taught in the chapter "The embedding across processes" (``vocab_parallel``).

Each function is one collective in the forward pass and its mirror in the backward pass, as in
Megatron-LM's ``megatron/core/tensor_parallel/mappings.py`` (Shoeybi et al., 2019; Korthikanti
et al., 2022 for the sequence-parallel pair):

* ``_SumOverGroup`` (g): forward all-reduce (sum), backward identity; Megatron-LM's
  ``reduce_from_tensor_model_parallel_region``;
* ``_CopyToGroup`` (f): forward identity, backward all-reduce (sum);
  ``copy_to_tensor_model_parallel_region``;
* ``_ReduceScatterSequence``: forward reduce-scatter along the sequence, backward all-gather;
  ``reduce_scatter_to_sequence_parallel_region``;
* ``_GatherSequence``: forward all-gather along the sequence, backward reduce-scatter;
  ``gather_from_sequence_parallel_region``.

The sequence is the second-to-last dimension here (``(B, T, d)`` or ``(T, d)``, PyTorch's
batch-first layout); Megatron-LM keeps ``(T, B, d)`` and splits its first dimension.
:func:`communication_bytes` gives what each collective sends per rank.
"""

from __future__ import annotations

import numbers

import torch
import torch.distributed as dist

__all__ = ["COLLECTIVES", "communication_bytes"]

COLLECTIVES = ("all_reduce", "reduce_scatter", "all_gather", "all_to_all")


def communication_bytes(collective: str, numel: int, world_size: int, element_size: int = 4) -> float:
    """Bytes one rank sends (and receives) in ``collective`` on a tensor of ``numel`` elements.

    ``numel`` is the size of the *full* tensor: the input of an all-reduce or a reduce-scatter,
    the output of an all-gather, the tensor whose pieces an all-to-all moves. With
    ``n = numel * element_size`` bytes and ``W`` ranks, the ring algorithms of Patarasuk & Yuan
    (2009, "Bandwidth optimal all-reduce algorithms for clusters of workstations", J. Parallel
    Distrib. Comput. 69(2)) send, per rank:

    * ``all_reduce``: ``2 (W - 1) / W * n`` (a reduce-scatter, then an all-gather);
    * ``reduce_scatter`` and ``all_gather``: ``(W - 1) / W * n``;

    and an all-to-all, whose ranks send to each other directly, ``(W - 1) / W**2 * n``
    (``all_to_all``): each rank holds ``n / W`` (say ``(B, T, d / W)`` of a ``(B, T, d)``
    output), keeps ``1 / W`` of it and sends every other rank its piece of ``n / W**2``. That is
    the column split's move to sequence-parallel slices, ``(B, T, d / W)`` to ``(B, T / W, d)``
    (``shard_dim_alltoall`` in PyTorch's DTensor). A world of one sends nothing.

    Taught in the chapter "The embedding across processes", to compare the vocabulary-parallel
    embedding's all-reduce with the sequence-parallel reduce-scatter (half the bytes), and the
    row split with the column split; the ring formulas are the ones NCCL's performance notes use
    for "bus bandwidth". They are the ring model's: NCCL may choose a tree or, on NVSwitch
    machines, NVLS (the switch adds), whose traffic per rank differs. ``element_size`` is
    ``torch.tensor([], dtype=...).element_size()``: 4 for float32, 2 for bfloat16.
    """
    if not isinstance(collective, str) or collective not in COLLECTIVES:
        raise ValueError(f"collective must be one of {', '.join(map(repr, COLLECTIVES))}, got {collective!r:.40}")
    for name, value, low in (("numel", numel, 0), ("world_size", world_size, 1), ("element_size", element_size, 1)):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise TypeError(f"{name} must be an int >= {low}, got {type(value).__name__} {value!r:.40}")
        if value < low:
            raise ValueError(f"{name} must be an int >= {low}, got {value}")
    n = numel * element_size
    if collective == "all_to_all":
        return (world_size - 1) * n / world_size**2
    steps = 2 * (world_size - 1) if collective == "all_reduce" else world_size - 1
    return steps * n / world_size


# A Mersenne prime: every term of _checksum stays below 2**62, and a sum of up to 2**32 terms
# below 2**63, so the int64 arithmetic never overflows.
_PRIME = 2**31 - 1
_MULTIPLIER = 2_654_435_761 % _PRIME                               # Knuth's multiplicative hash
# _checksum tells apart the values strictly between -_WINDOW and _WINDOW: 2**31 - 1 = p integers,
# no two of them equal modulo p (-2**30 itself is 2**30 - 1 modulo p).
_WINDOW = 2**30


def _checksum(x: torch.Tensor) -> int:
    """A position-weighted checksum of an integer tensor: ``sum_i (x_i w_i) mod p``, ``p = 2**31 - 1``.

    The weights ``w_i = (i + 1) * 2654435761 mod p`` are nonzero and all different (``i < p``),
    so, for values strictly between ``-2**30`` and ``2**30`` (``p`` integers, no two of them
    equal modulo ``p``: every token id of a vocabulary up to ``2**30``, and PyTorch's
    ``ignore_index``), changing one value always changes the checksum, and so does swapping two
    different values. A tensor with any value outside that range gets ``-1``, which no tensor
    inside it gets: without that, ``-2**30`` and ``2**30 - 1``, or ``5`` and ``5 + p``, would
    give the same checksum. Two tensors that both have such values are not told apart; the
    callers refuse those values (token ids and class ids from ``2**30`` on, an ``ignore_index``
    outside the range). Other differences can collide, as in any checksum, but only by
    coincidence. Equal tensors give equal checksums on every rank and device. Used by
    :class:`tokvec.parallel.VocabParallelEmbedding` (``check_ids_agree``) and
    :func:`tokvec.parallel.vocab_parallel_cross_entropy`.
    """
    flat = x.reshape(-1).long()                                     # (N,)
    outside = ((flat <= -_WINDOW) | (flat >= _WINDOW)).any()
    weights = torch.arange(1, flat.numel() + 1, device=flat.device) * _MULTIPLIER % _PRIME
    total = (flat % _PRIME * weights % _PRIME).sum() % _PRIME       # each term in [0, p)
    return int(torch.where(outside, -1, total))                     # one read-back


def _gather_ints(row: list[int], group, world_size: int, device) -> list[list[int]]:
    """Every rank's ``row`` of integers (the same length on every rank), in rank order."""
    mine = torch.tensor(row, dtype=torch.long, device=device)
    everyone = [torch.empty_like(mine) for _ in range(world_size)]
    dist.all_gather(everyone, mine, group=group)                    # (W, len(row)) integers
    return torch.stack(everyone).tolist()


def group_size_and_rank(group) -> tuple[int, int]:
    """``(world_size, rank)`` of ``group``; ``(1, 0)`` when no process group is initialised."""
    if not (dist.is_available() and dist.is_initialized()):
        if group is not None:
            raise ValueError("group was given but torch.distributed has no initialised process group; "
                             "call torch.distributed.init_process_group first, or pass group=None")
        return 1, 0
    if group is not None and not isinstance(group, dist.ProcessGroup):
        raise TypeError(f"group must be a torch.distributed.ProcessGroup or None (the default group), "
                        f"got {type(group).__name__}; use torch.distributed.new_group(ranks)")
    return dist.get_world_size(group), dist.get_rank(group)


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


class _CopyToGroup(torch.autograd.Function):
    """Forward: the input unchanged. Backward: all-reduce (sum) of the gradient: Megatron's f.

    The input (the hidden states before a layer whose weight is split by rows of the output,
    such as the tied output layer) is the same on every rank, and each rank uses it for its own
    shard of the output. Each rank's gradient is the part that flows back from its shard; the
    input's full gradient is their sum. The mirror image of :class:`_SumOverGroup` (g).
    """

    @staticmethod
    def forward(ctx, x: torch.Tensor, group) -> torch.Tensor:
        ctx.group = group
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        total = grad.contiguous().clone()
        dist.all_reduce(total, op=dist.ReduceOp.SUM, group=ctx.group)
        return total, None


def _reduce_scatter_sequence(x: torch.Tensor, group, world_size: int) -> torch.Tensor:
    """Sum ``x`` (``(..., T, d)``) over the group and keep this rank's ``T / W`` positions."""
    seq_first = x.movedim(-2, 0).contiguous()                        # (T, ..., d): split dim 0
    out = seq_first.new_empty(seq_first.shape[0] // world_size, *seq_first.shape[1:])
    reduce_scatter = getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor
    reduce_scatter(out, seq_first, group=group)                      # (T / W, ..., d)
    return out.movedim(0, -2)                                        # (..., T / W, d)


def _gather_sequence(x: torch.Tensor, group, world_size: int) -> torch.Tensor:
    """Concatenate every rank's ``(..., T / W, d)`` slice, in rank order, into ``(..., T, d)``."""
    seq_first = x.movedim(-2, 0).contiguous()                        # (T / W, ..., d)
    out = seq_first.new_empty(seq_first.shape[0] * world_size, *seq_first.shape[1:])
    all_gather = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor
    all_gather(out, seq_first, group=group)                          # (T, ..., d)
    return out.movedim(0, -2)                                        # (..., T, d)


class _ReduceScatterSequence(torch.autograd.Function):
    """Forward: reduce-scatter along the sequence. Backward: all-gather along the sequence.

    Rank ``r`` keeps positions ``[r T / W, (r + 1) T / W)`` of the summed output; its gradient
    covers only those positions, and the all-gather rebuilds the full ``(..., T, d)`` gradient,
    which every rank then applies to its own rows (no factor ``W``: each position's gradient
    comes from exactly one rank).
    """

    @staticmethod
    def forward(ctx, partial: torch.Tensor, group, world_size: int) -> torch.Tensor:
        ctx.group, ctx.world_size = group, world_size
        return _reduce_scatter_sequence(partial, group, world_size)

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        return _gather_sequence(grad, ctx.group, ctx.world_size), None, None


class _GatherSequence(torch.autograd.Function):
    """Forward: all-gather along the sequence. Backward: reduce-scatter along the sequence.

    Before a layer that needs every position (the tied output layer computes the logits of all
    ``T`` positions for its rows): each rank's gradient of the gathered ``(..., T, d)`` input is
    its own contribution, and the reduce-scatter sums them and returns each rank its slice.
    """

    @staticmethod
    def forward(ctx, x: torch.Tensor, group, world_size: int) -> torch.Tensor:
        ctx.group, ctx.world_size = group, world_size
        return _gather_sequence(x, group, world_size)

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        return _reduce_scatter_sequence(grad, ctx.group, ctx.world_size), None, None
