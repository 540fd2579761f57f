"""The input layer across processes: a vocabulary-parallel embedding on ``torch.distributed``.

Taught in the chapter "The embedding across processes" (``vocab_parallel``).

A table of ``vocab_size`` rows is split by rows over the ``world_size`` processes of a group:
rank ``r`` holds the contiguous rows ``[start, end)``, sizes balanced to differ by at most one.
A lookup is done locally (ids outside the slice give zero vectors) and one all-reduce sums the
partial results, so every rank ends with the full ``(..., d_model)`` embeddings. In the backward
pass the all-reduce passes the gradient straight through: each rank already holds the full
gradient of the output, and keeps only the part for its own rows. This is Megatron-LM's
``VocabParallelEmbedding`` (Shoeybi et al., 2019), written to be read, with the pieces that go
with it:

* :mod:`~tokvec.parallel.layer`: :class:`VocabParallelEmbedding` (initialised as the full table
  would be, whatever the world size; tied output logits; sequence parallelism) and
  :func:`shard_ranges`;
* :mod:`~tokvec.parallel.loss`: :func:`vocab_parallel_cross_entropy`, the loss from the logits'
  shards, never gathered;
* :mod:`~tokvec.parallel.collectives`: the autograd functions around each collective (Megatron's
  f and g, and the sequence-parallel pair) and :func:`communication_bytes`;
* :mod:`~tokvec.parallel.dtensor`: the same with PyTorch's ``parallelize_module`` and DTensor;
* :mod:`~tokvec.parallel.launch`: :func:`run_group` (local gloo processes, fail fast),
  :func:`loopback_environment` (gloo on 127.0.0.1 for processes started by ``torchrun``) and the
  checks that ``python -m tokvec.parallel`` and ``torchrun ... -m tokvec.parallel`` run.

The same code runs on CPUs (the ``gloo`` backend, used by the course and its tests, on
127.0.0.1) and on GPUs (``nccl``). Without an initialised process group every layer is a world
of one: the whole table, no communication.
"""

from tokvec.parallel.collectives import (
    COLLECTIVES,
    _CopyToGroup,
    _GatherSequence,
    _ReduceScatterSequence,
    _SumOverGroup,
    communication_bytes,
)
from tokvec.parallel.dtensor import dtensor_shard_ranges, parallelize_embedding
from tokvec.parallel.launch import compare_with_embedding, loopback_environment, main, run_group, self_check
from tokvec.parallel.layer import VocabParallelEmbedding, shard_ranges
from tokvec.parallel.loss import vocab_parallel_cross_entropy

__all__ = ["COLLECTIVES", "VocabParallelEmbedding", "communication_bytes", "compare_with_embedding",
           "dtensor_shard_ranges", "loopback_environment", "main", "parallelize_embedding", "run_group",
           "self_check", "shard_ranges", "vocab_parallel_cross_entropy"]

# the chapter shows these with show_source; they are not part of the public API
_PRIVATE_SHOWN = (_CopyToGroup, _GatherSequence, _ReduceScatterSequence, _SumOverGroup)
