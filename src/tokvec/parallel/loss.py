"""Cross-entropy over a vocabulary split by rows: the loss without gathering the logits.

Taught in the chapter "The embedding across processes" (``vocab_parallel``). Megatron-LM's
``_VocabParallelCrossEntropy`` (``megatron/core/tensor_parallel/cross_entropy.py``, Shoeybi et
al., 2019); PyTorch's ``torch.distributed.tensor.parallel.loss_parallel`` does the same for a
DTensor.
"""

from __future__ import annotations

import math

import torch
import torch.distributed as dist

from tokvec import validate
from tokvec.parallel.collectives import _WINDOW, _checksum, _gather_ints, group_size_and_rank

__all__ = ["vocab_parallel_cross_entropy"]


class _VocabParallelCrossEntropy(torch.autograd.Function):
    """Per-position losses ``log sum_v exp(z_v) - z_target`` from each rank's logits shard.

    Forward: three all-reduces of ``N`` numbers (the maximum logit, the sum of exponentials, the
    target's logit, which only its owner has). Backward: no communication: the gradient of a
    shard is ``softmax - one_hot(target)`` on its own columns, and every rank already has the
    global sum of exponentials that the softmax needs.
    """

    @staticmethod
    def forward(ctx, logits, target, start, group, world_size, ignore_index):
        # logits (N, V_r) of this rank's columns [start, start + V_r); target (N,), int64
        rows = logits.shape[-1]
        z = logits.float() if logits.dtype in (torch.float16, torch.bfloat16) else logits
        if rows:
            z_max = z.max(dim=-1).values                                     # (N,)
        else:                                                                # this rank holds no rows
            z_max = z.new_full(z.shape[:-1], float("-inf"))
        if world_size > 1:
            dist.all_reduce(z_max, op=dist.ReduceOp.MAX, group=group)       # 1: the global maximum
        exp = (z - z_max.unsqueeze(-1)).exp()                               # (N, V_r), each <= 1
        sum_exp = exp.sum(dim=-1)                                           # (N,)
        mine = (target >= start) & (target < start + rows)                 # targets in my columns
        local = (target - start).masked_fill(~mine, 0)
        target_z = torch.zeros_like(z_max)
        if rows:
            target_z = z.gather(-1, local.unsqueeze(-1)).squeeze(-1).masked_fill(~mine, 0.0)
        if world_size > 1:
            dist.all_reduce(sum_exp, op=dist.ReduceOp.SUM, group=group)     # 2: the softmax's denominator
            dist.all_reduce(target_z, op=dist.ReduceOp.SUM, group=group)    # 3: the target's logit
        ignored = target == ignore_index
        loss = (sum_exp.log() + z_max - target_z).masked_fill(ignored, 0.0)  # (N,)
        ctx.save_for_backward(exp, sum_exp, local, mine, ignored)
        ctx.dtype = logits.dtype
        return loss                                                          # float32 for half logits

    @staticmethod
    def backward(ctx, grad_loss):
        exp, sum_exp, local, mine, ignored = ctx.saved_tensors
        grad = exp / sum_exp.unsqueeze(-1)                                  # softmax on my columns
        if grad.shape[-1]:
            rows = torch.arange(grad.shape[0], device=grad.device)
            grad[rows[mine], local[mine]] -= 1.0                            # - one_hot(target)
        grad = grad * grad_loss.to(grad.dtype).unsqueeze(-1)
        grad = grad.masked_fill(ignored.unsqueeze(-1), 0.0)                 # ignored: no gradient
        return grad.to(ctx.dtype), None, None, None, None, None


def vocab_parallel_cross_entropy(local_logits: torch.Tensor, target: torch.Tensor, *, group=None,
                                 ignore_index: int = -100) -> torch.Tensor:
    """``F.cross_entropy`` of the full logits, computed from each rank's shard of the vocabulary.

    ``local_logits``: ``(..., V_r)``, this rank's columns of the logits (the vocabulary is the
    last dimension, as in Megatron-LM; :meth:`VocabParallelEmbedding.output_logits` gives it),
    the ranks' shards in rank order making up the full ``(..., vocab_size)`` logits, split in
    any contiguous way (ours, :func:`tokvec.parallel.shard_ranges`, or DTensor's);
    ``target``: ``(...)``, integer class ids in ``0 .. vocab_size-1`` or ``ignore_index``, the
    same on every rank; ``ignore_index`` strictly between ``-2**30`` and ``2**30``, and
    ``vocab_size`` up to ``2**30``, the range in which the ranks compare their targets. Returns
    the mean over the targets that are not ``ignore_index``, the same number on every rank,
    equal (to rounding) to
    ``F.cross_entropy(full_logits.flatten(0, -2), target.flatten(), ignore_index=ignore_index)``,
    and the gradient of each shard is the matching columns of that loss's gradient. When every
    target is ignored (or there are none) the result is ``nan`` with zero gradients, as
    PyTorch's. float16 and bfloat16 logits are computed in float32 and the loss stays float32,
    as Megatron-LM's (``F.cross_entropy``, outside ``torch.autocast``, returns the logits' dtype:
    a bfloat16 loss near 8 lies on a grid of 1/32, and on the CPU, which adds up the positions'
    losses in bfloat16, can be off by more than one step); the gradient of the logits has their
    dtype.

    Communication: one all-gather of five integers per rank (the shard sizes, the number of
    positions, a checksum of the targets, the dtype and ``ignore_index``), so that bad input is
    refused on every rank alike before the loss's own collectives (a target outside
    ``(-2**30, 2**30)``, out of range for every vocabulary the loss accepts, makes the checksum
    ``-1``, so ranks that differ by such a target disagree too); then three all-reduces of
    ``N`` numbers each (the maximum, the sum of exponentials, the target's logit), never the
    ``N x vocab_size`` logits. The backward pass communicates nothing. Megatron-LM's
    ``vocab_parallel_cross_entropy`` (which assumes equal shards), and PyTorch's
    ``loss_parallel()`` for DTensor logits sharded on the class dimension. Taught in chapter
    13 ("The embedding across processes").
    """
    if not isinstance(local_logits, torch.Tensor) or not local_logits.dtype.is_floating_point:
        got = local_logits.dtype if isinstance(local_logits, torch.Tensor) else type(local_logits).__name__
        raise TypeError(f"local_logits must be a floating-point torch.Tensor of shape (..., V_r), this "
                        f"rank's columns of the logits, got {got}")
    if local_logits.ndim < 1:
        raise ValueError("local_logits must have shape (..., V_r) with the vocabulary last, got a 0-d tensor; "
                         "add the vocabulary dimension, e.g. local_logits.unsqueeze(-1)")
    if isinstance(ignore_index, bool) or not isinstance(ignore_index, int):
        raise TypeError(f"ignore_index must be an int (PyTorch's default is -100), got "
                        f"{type(ignore_index).__name__} {ignore_index!r:.40}")
    if not -_WINDOW < ignore_index < _WINDOW:
        raise ValueError(f"ignore_index must be an int strictly between -2**30 and 2**30 (PyTorch's default is "
                         f"-100), got {ignore_index}")
    if not isinstance(target, torch.Tensor) or not validate._integer_dtype(target):
        got = target.dtype if isinstance(target, torch.Tensor) else type(target).__name__
        raise TypeError(f"target must be an integer torch.Tensor of class ids, got {got}; "
                        f"convert with target.long()")
    if str(target.dtype) in validate._TORCH_UNSIGNED_WIDE:
        raise TypeError(f"target has dtype {target.dtype}, which PyTorch cannot compare or index with; "
                        f"convert with target.long()")
    if tuple(target.shape) != tuple(local_logits.shape[:-1]):
        raise ValueError(f"target must have the shape of local_logits without its last (vocabulary) "
                         f"dimension, {tuple(local_logits.shape[:-1])}, got {tuple(target.shape)}")
    if target.device != local_logits.device:
        raise ValueError(f"target is on {target.device} but local_logits is on {local_logits.device}; "
                         f"move one of them, e.g. target.to({str(local_logits.device)!r})")
    world_size, rank = group_size_and_rank(group)
    logits = local_logits.reshape(math.prod(target.shape), local_logits.shape[-1])  # (N, V_r)
    target = target.reshape(-1).long()                                       # (N,)
    sizes = _exchange_layout(logits, target, ignore_index, group, world_size, rank)
    vocab_size, start = sum(sizes), sum(sizes[:rank])
    if vocab_size > _WINDOW:                                                 # the same sizes on every rank
        raise ValueError(f"the logits have {vocab_size} classes (the sum of the ranks' shards), more than the "
                         f"2**30 this loss supports (the range in which the ranks compare their targets)")
    bad = (target != ignore_index) & ((target < 0) | (target >= vocab_size))
    if bad.any():                                                            # on every rank alike
        where = int(bad.nonzero()[0, 0])
        raise IndexError(f"target {int(target[where])} at flat index {where} is out of range: valid class ids "
                         f"are 0..{vocab_size - 1} (vocab_size = {vocab_size}, the sum of the ranks' "
                         f"shards) or ignore_index = {ignore_index}; check the labels, or pass their padding "
                         f"value as ignore_index")
    losses = _VocabParallelCrossEntropy.apply(logits, target, start, group, world_size, ignore_index)
    count = (target != ignore_index).sum()
    return losses.sum() / count                                              # nan when every target is ignored


_DTYPES = (torch.float64, torch.float32, torch.bfloat16, torch.float16)


def _dtype_name(code: int) -> str:
    return str(_DTYPES[code]) if code < len(_DTYPES) else "another dtype"


def _exchange_layout(logits, target, ignore_index: int, group, world_size: int, rank: int) -> list[int]:
    """Every rank's number of vocabulary rows; checks that the ranks agree on everything else."""
    if world_size == 1:
        return [logits.shape[-1]]
    code = _DTYPES.index(logits.dtype) if logits.dtype in _DTYPES else len(_DTYPES)
    row = [logits.shape[-1], logits.shape[0], _checksum(target), code, ignore_index]
    table = _gather_ints(row, group, world_size, logits.device)              # (W, 5) integers
    for column, what, show in ((1, "number of positions N", str), (2, "targets (their checksum)", str),
                               (3, "dtype of the logits", _dtype_name), (4, "ignore_index", str)):
        if len({row[column] for row in table}) > 1:
            raise ValueError(f"the ranks disagree on the {what}: every rank must pass the same target, "
                             f"ignore_index and logits of the same shape (...) and dtype, differing only in "
                             f"their own vocabulary columns; rank {rank} has {show(table[rank][column])}, the "
                             f"ranks have [{', '.join(show(row[column]) for row in table)}]")
    return [row[0] for row in table]
