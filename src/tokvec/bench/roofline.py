"""How many bytes the input layer must move, and the fastest time that allows (a roofline).

Chapter 10 ("What vectorization buys") reads the CPU timings against it; a chapter on the GPU
kernel, "Making it fast", is planned and not yet in the book (it needs a GPU to measure). The
forward pass ``emb(ids) * sqrt(d) + PE[:T]`` does almost no arithmetic per byte, so once a call
is large enough that its fixed cost (Python, dispatch, allocation) no longer dominates, memory
traffic, not FLOPs, bounds its time: ``time >= bytes / bandwidth``. These functions count the
*algorithmic* bytes of each way of computing it:

* ``fused``: one pass; read the ids, one table row per token and the positional tile once (it is
  reused across the batch), write the output once;
* ``eager``: the three kernels of the source tutorials' expression; the gather reads the rows and writes a
  temporary, the multiply reads it and writes another, and the add reads that and the positional
  tile and writes the output: six tensor-sized passes instead of two;
* ``in_place``: the two kernels of :class:`tokvec.layers.TransformerEmbedding` without a gradient;
  the gather reads the rows and writes the output, the add reads it and the positional tile and
  writes it again: four tensor-sized passes;
* ``copy``: ``out.copy_(src)`` of an output-sized tensor, one read and one write: the practical
  ceiling any gather can hope to match.
"""

from __future__ import annotations

from tokvec import validate

__all__ = ["DTYPE_BYTES", "bytes_moved", "min_time_ms"]

#: Bytes per element of the dtypes the benchmarks use.
DTYPE_BYTES = {"float64": 8, "float32": 4, "bfloat16": 2, "float16": 2}


def bytes_moved(batch: int, seq_len: int, d_model: int, dtype: str = "bfloat16", *,
                impl: str = "fused", id_bytes: int = 8) -> int:
    """Algorithmic bytes read and written by one forward pass of ``impl`` (fused, eager, in_place or
    copy)."""
    for name, value in (("batch", batch), ("seq_len", seq_len), ("d_model", d_model)):
        validate.positive_int(value, name)
    if dtype not in DTYPE_BYTES:
        raise ValueError(f"dtype must be one of {sorted(DTYPE_BYTES)}, got {dtype!r}")
    e = DTYPE_BYTES[dtype]
    tokens = batch * seq_len
    tensor = tokens * d_model * e              # one (B, T, d) tensor
    ids = tokens * id_bytes
    if impl == "fused":
        return ids + tensor + seq_len * d_model * e + tensor     # ids, rows, PE tile once, output
    if impl == "eager":
        return ids + 6 * tensor + seq_len * d_model * e          # 2 passes per kernel, PE tile once
    if impl == "in_place":
        return ids + 4 * tensor + seq_len * d_model * e          # gather 2 passes, add 2, PE once
    if impl == "copy":
        return 2 * tensor
    raise ValueError(f"impl must be 'fused', 'eager', 'in_place' or 'copy', got {impl!r}")


def min_time_ms(n_bytes: int, bandwidth_tb_s: float) -> float:
    """The memory-bound floor: ``n_bytes`` at ``bandwidth_tb_s`` terabytes (1e12 bytes) per second."""
    if not bandwidth_tb_s > 0:
        raise ValueError(f"bandwidth must be positive, got {bandwidth_tb_s!r}")
    return n_bytes / (bandwidth_tb_s * 1e12) * 1e3
