"""The same layer with PyTorch's own tensor-parallel API: DeviceMesh, DTensor, parallelize_module.

Taught in the chapter "The embedding across processes" (``vocab_parallel``), to compare
:class:`tokvec.parallel.VocabParallelEmbedding` with what ``torch.distributed.tensor.parallel``
does to an ``nn.Embedding``. Imported lazily: ``torch.distributed.tensor`` is large.
"""

from __future__ import annotations

from tokvec import validate

__all__ = ["dtensor_shard_ranges", "parallelize_embedding"]


def dtensor_shard_ranges(vocab_size: int, world_size: int) -> list[tuple[int, int]]:
    """Every rank's rows ``[start, end)`` when a DTensor is sharded on dim 0 (``Shard(0)``).

    DTensor cuts like ``torch.chunk``: ``ceil(V / W)`` rows per rank until the rows run out, so
    the last ranks may get fewer or none. ``dtensor_shard_ranges(10, 4)`` is
    ``[(0, 3), (3, 6), (6, 9), (9, 10)]`` (3, 3, 3, 1), where ours
    (:func:`tokvec.parallel.shard_ranges`) is 3, 3, 2, 2; the two agree whenever ``W``
    divides ``V``, and always for ``W <= 2``. ``torch.distributed.tensor.Shard._split_tensor``
    in PyTorch. Taught in the chapter "The embedding across processes".
    """
    vocab_size = validate.positive_int(vocab_size, "vocab_size")
    world_size = validate.positive_int(world_size, "world_size")
    chunk = -(-vocab_size // world_size)                          # ceil(V / W)
    return [(min(rank * chunk, vocab_size), min((rank + 1) * chunk, vocab_size)) for rank in range(world_size)]


def parallelize_embedding(embedding, mesh, *, split: str = "rows", sequence_parallel: bool = False):
    """Split ``embedding`` (an ``nn.Embedding``) over a 1-D ``DeviceMesh`` with PyTorch's styles.

    ``split="rows"``: ``RowwiseParallel`` (vocabulary parallelism, our
    :class:`tokvec.parallel.VocabParallelEmbedding`): the weight becomes a ``Shard(0)`` DTensor
    cut as :func:`dtensor_shard_ranges` says, the lookup masks the ids of other ranks and the
    partial outputs are summed by an all-reduce. ``split="columns"``: ``ColwiseParallel``
    (feature parallelism): the weight is ``Shard(1)``, every rank looks up every id in its
    ``d / W`` columns and an all-gather concatenates them. The ids are the same on every rank
    (``input_layouts=Replicate()``). The output is a plain tensor, the full ``(..., T, d)`` on
    every rank, or with ``sequence_parallel=True`` this rank's ``torch.chunk`` slice of the
    sequence (``output_layouts=Shard(-2)``: a reduce-scatter for rows; for columns an all-to-all,
    ``W`` times fewer bytes, which DTensor does not use on a CPU mesh: torch 2.13's
    ``shard_dim_alltoall`` then gathers the whole output and keeps the slice, whatever the backend,
    though gloo itself has ``all_to_all_single``). The module's full weight is the source on rank 0
    (``distribute_tensor``'s ``src_data_rank=0``) and is scattered from it. Returns
    ``embedding``, changed in place, as ``parallelize_module`` does.

    Found with torch 2.13: the weight's gradient under ``RowwiseParallel`` is a ``Replicate``
    DTensor holding the full ``(V, d)`` table's gradient on every rank, where ours is only the
    rank's rows. Taught in the chapter "The embedding across processes".
    """
    from torch import nn
    from torch.distributed.device_mesh import DeviceMesh
    from torch.distributed.tensor import Replicate, Shard
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

    if not isinstance(embedding, nn.Embedding):
        raise TypeError(f"embedding must be a torch.nn.Embedding, got {type(embedding).__name__}; "
                        f"for tokvec's own layer use tokvec.parallel.VocabParallelEmbedding")
    if not isinstance(mesh, DeviceMesh) or mesh.ndim != 1:
        got = f"a {mesh.ndim}-D DeviceMesh" if isinstance(mesh, DeviceMesh) else type(mesh).__name__
        raise TypeError(f"mesh must be a 1-D torch.distributed.DeviceMesh, got {got}; make one with "
                        f"torch.distributed.device_mesh.init_device_mesh('cpu', (world_size,))")
    if not isinstance(split, str) or split not in ("rows", "columns"):
        raise ValueError(f"split must be 'rows' (RowwiseParallel, by vocabulary) or 'columns' "
                         f"(ColwiseParallel, by feature), got {split!r:.40}")
    validate.flag(sequence_parallel, "sequence_parallel")
    output = Shard(-2) if sequence_parallel else Replicate()
    style = RowwiseParallel if split == "rows" else ColwiseParallel
    return parallelize_module(embedding, mesh, style(input_layouts=Replicate(), output_layouts=output))
