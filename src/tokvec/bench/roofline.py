"""How many bytes the input layer moves, and the time that takes at peak bandwidth (a roofline).

The chapter "What vectorization buys" reads the CPU timings against it; the chapter "Making it fast on a GPU"
predicts the GPU's from it, and reads the GPU runs, once committed, against
it (:func:`gpu_results`, :func:`gpu_points`). The forward pass ``emb(ids) * sqrt(d) + PE[:T]``
does almost no arithmetic per byte, so once a call is large enough that its fixed cost (Python,
dispatch, allocation, kernel launches) no longer dominates, memory traffic, not FLOPs, bounds
its time, and ``bytes / bandwidth`` predicts it. :func:`bytes_moved` counts the *algorithmic*
bytes of each way of computing it under three stated assumptions: every token's table row comes
from memory (a row that repeats is read again), the positional tile crosses once per call
(re-reads of it are assumed to hit the L2 cache), and every intermediate tensor goes through
memory. It is a model, not a bound: a cache that serves repeated rows makes the true traffic
smaller, a positional tile too large for the L2 makes it larger. The strict lower bounds are
:func:`compulsory_bytes` (each distinct row once, every write) and, below it, the output's writes
alone. The counts:

* ``fused``: one pass; read the ids, one table row per token and the positional tile once (it is
  reused across the batch), write the output once. :func:`tokvec.fused.fused_embedding` reads
  its table in float32 whatever the output dtype (``table_dtype="float32"``);
* ``eager``: the three kernels of the source tutorials' expression; the gather reads the rows and writes a
  temporary, the multiply reads it and writes another, and the add reads that and the positional
  tile and writes the output: six tensor-sized passes instead of two;
* ``in_place``: the two kernels of :class:`tokvec.layers.TransformerEmbedding` without a gradient;
  the gather reads the rows and writes the output, the add reads it and the positional tile and
  writes it again: four tensor-sized passes;
* ``copy``: ``out.copy_(src)`` of an output-sized tensor, one read and one write: the practical
  ceiling of a gather whose rows all come from memory (repeated rows that the L2 serves can take
  a gather below it: the chapter "Making it fast on a GPU" measures both).
"""

from __future__ import annotations

import math
from pathlib import Path

from tokvec import validate

__all__ = ["DTYPE_BYTES", "FUSED_TABLE_DTYPE", "GPU_RESULTS", "bytes_moved", "compulsory_bytes", "expected_distinct",
           "gpu_points", "gpu_results", "gpu_runs", "min_time_ms"]

#: Bytes per element of the dtypes the benchmarks use.
DTYPE_BYTES = {"float64": 8, "float32": 4, "bfloat16": 2, "float16": 2}

#: The dtype of the positional table that :func:`tokvec.fused.fused_embedding` reads, whatever
#: the output's: pass it as ``table_dtype`` wherever the fused kernel's bytes are meant.
FUSED_TABLE_DTYPE = "float32"


def bytes_moved(batch: int, seq_len: int, d_model: int, dtype: str = "bfloat16", *,
                impl: str = "fused", id_bytes: int = 8, table_dtype: str | None = None,
                per_sequence: bool = False) -> int:
    """Algorithmic bytes read and written by one forward pass of ``impl`` (fused, eager, in_place or
    copy); ``dtype`` is the output's and the embedding table's, ``table_dtype`` the positional
    table's (default: ``dtype``).

    ``per_sequence``: every sequence sits at its own position (``offsets``, as a server decodes),
    so the positional rows are ``batch * seq_len`` rows read from the table, not one tile shared
    by the batch, plus one offset per sequence; the eager forms gather those rows with a kernel of
    their own (``PE[offsets]``), which writes them and the add reads them back.
    """
    for name, value in (("batch", batch), ("seq_len", seq_len), ("d_model", d_model)):
        validate.positive_int(value, name)
    table_dtype = dtype if table_dtype is None else table_dtype
    for name, value in (("dtype", dtype), ("table_dtype", table_dtype)):
        if value not in DTYPE_BYTES:
            raise ValueError(f"{name} must be one of {sorted(DTYPE_BYTES)}, got {value!r}")
    e = DTYPE_BYTES[dtype]
    tokens = batch * seq_len
    tensor = tokens * d_model * e              # one (B, T, d) tensor
    ids = tokens * id_bytes
    pe = seq_len * d_model * DTYPE_BYTES[table_dtype]            # the positional tile, read once
    if per_sequence and impl != "copy":
        pe = tokens * d_model * DTYPE_BYTES[table_dtype]         # every sequence its own rows
        ids += batch * id_bytes                                   # and its offset
        if impl != "fused":
            pe += 2 * tokens * d_model * DTYPE_BYTES[table_dtype]    # PE[offsets] written, read back
    if impl == "fused":
        return ids + tensor + pe + tensor                        # ids, rows, PE tile, output
    if impl == "eager":
        return ids + 6 * tensor + pe                             # 2 passes per kernel
    if impl == "in_place":
        return ids + 4 * tensor + pe                             # gather 2 passes, add 2
    if impl == "copy":
        return 2 * tensor
    raise ValueError(f"impl must be 'fused', 'eager', 'in_place' or 'copy', got {impl!r}")


def expected_distinct(n_ids: int, vocab_size: int) -> float:
    """The expected number of distinct rows among ``n_ids`` ids drawn uniformly from ``vocab_size``:
    ``V (1 - (1 - 1/V)^n)``."""
    validate.positive_int(vocab_size, "vocab_size")
    if not isinstance(n_ids, int) or n_ids < 0:
        raise ValueError(f"n_ids must be an int >= 0, got {n_ids!r}")
    return vocab_size * -math.expm1(n_ids * math.log1p(-1 / vocab_size)) if vocab_size > 1 else min(n_ids, 1)


def compulsory_bytes(batch: int, seq_len: int, d_model: int, dtype: str = "bfloat16", *, distinct_rows: float,
                     impl: str = "fused", id_bytes: int = 8, table_dtype: str | None = None) -> float:
    """:func:`bytes_moved` with each of ``distinct_rows`` table rows read once, not once per token.

    What must cross between memory and the cores, starting from a cold cache, however well the
    caches serve repeats: the ids, each distinct row once, the positional tile once and the output
    written once. For ``eager`` and ``in_place`` it keeps their intermediate tensors (written, then
    read back), which is a bound only where they are far larger than the L2 cache, as a training
    batch's are. ``distinct_rows`` is counted from the ids, or :func:`expected_distinct` for
    uniform ids.
    """
    if impl == "copy":
        raise ValueError("a copy reads no table: use bytes_moved(..., impl='copy')")
    counted = bytes_moved(batch, seq_len, d_model, dtype, impl=impl, id_bytes=id_bytes, table_dtype=table_dtype)
    if not 0 <= distinct_rows <= batch * seq_len:
        raise ValueError(f"distinct_rows must be between 0 and batch * seq_len = {batch * seq_len}, "
                         f"got {distinct_rows!r}")
    row = d_model * DTYPE_BYTES[dtype]
    return counted - (batch * seq_len - distinct_rows) * row


def min_time_ms(n_bytes: float, bandwidth_tb_s: float) -> float:
    """``n_bytes`` at ``bandwidth_tb_s`` terabytes (1e12 bytes) per second, in milliseconds: the time
    the bytes take at that bandwidth (a lower bound only if the bytes are)."""
    if not bandwidth_tb_s > 0:
        raise ValueError(f"bandwidth must be positive, got {bandwidth_tb_s!r}")
    return n_bytes / (bandwidth_tb_s * 1e12) * 1e3


#: The committed GPU runs: ``python -m tokvec.bench gpu-validate --out DIR`` writes ``DIR/gpu-<card>.json``.
GPU_RESULTS = "gpu-*.json"


def gpu_runs(directory: str | Path | None = None) -> dict[str, dict]:
    """The committed GPU runs of ``python -m tokvec.bench gpu-validate`` (``gpu-*.json`` in
    ``directory``, by default the package's ``results/``), by file name: each with the command,
    the environment, the benchmark's ``records`` and every section's findings under ``sections``."""
    from tokvec.bench.common import RESULTS_DIR, load

    files = sorted(Path(RESULTS_DIR if directory is None else directory).glob(GPU_RESULTS))
    return {path.name: data for path in files if isinstance(data := load(path), dict)}


def gpu_results(directory: str | Path | None = None) -> list[dict]:
    """Every record of the committed GPU runs (``gpu-*.json`` in ``directory``, by default the
    package's ``results/``), each with the name of its file under ``"file"``; ``[]`` if none.

    A file holds what ``python -m tokvec.bench kernels --out`` writes, a list of records, or a
    dict that keeps that list under ``"records"`` (as the CPU benchmarks' files do).
    """
    from tokvec.bench.common import RESULTS_DIR, load

    records = []
    for path in sorted(Path(RESULTS_DIR if directory is None else directory).glob(GPU_RESULTS)):
        data = load(path)
        rows = data["records"] if isinstance(data, dict) else data
        records.extend({**r, "file": path.name} for r in rows)
    return records


_GPU_KEYS = {"device", "impl", "dtype", "batch", "seq_len", "d_model", "median_ms"}


def gpu_points(records: list[dict]) -> list[dict]:
    """Each timed record against the roofline and against the copy of its size, in the order given.

    Adds ``bytes`` (the record's own count, as the benchmark writes it: each contender its own
    kernels' bytes; for records without one, one fused pass, or a copy's read and write),
    ``gb_s`` (those bytes over the median time), ``vs_copy`` (the median time over the copy's of
    the same file, device, dtype and size: the copy reads and writes about the bytes the fused
    kernel must, so this is how far from the practical ceiling it runs; None without a copy
    record), ``of_copy`` (``gb_s`` over the copy's) and ``floor_ms`` (one fused pass's bytes at
    the copy's speed).
    """
    for r in records:
        missing = _GPU_KEYS - set(r)
        if missing:
            raise ValueError(f"a GPU record lacks {sorted(missing)}: {r!r:.200}; "
                             "write records with python -m tokvec.bench kernels --out")
    size = lambda r: (r.get("file"), r["device"], r["dtype"], r["batch"], r["seq_len"], r["d_model"])  # noqa: E731
    shape = lambda r: (r["batch"], r["seq_len"], r["d_model"], r["dtype"])                          # noqa: E731
    copies = {size(r): r for r in records if r["impl"] == "copy"}
    points = []
    for r in records:
        kind = "copy" if r["impl"] == "copy" else "fused"
        moved = r.get("bytes") or bytes_moved(*shape(r), impl=kind,
                                              table_dtype=FUSED_TABLE_DTYPE if kind == "fused" else None)
        gb_s = moved / (r["median_ms"] / 1e3) / 1e9
        copy = copies.get(size(r))
        copy_speed = bytes_moved(*shape(r), impl="copy") / (copy["median_ms"] / 1e3) / 1e9 if copy else None
        one_pass = bytes_moved(*shape(r), impl="fused", table_dtype=FUSED_TABLE_DTYPE)
        points.append({**r, "bytes": moved, "gb_s": gb_s,
                       "vs_copy": r["median_ms"] / copy["median_ms"] if copy else None,
                       "of_copy": gb_s / copy_speed if copy else None,
                       "floor_ms": one_pass / (copy_speed * 1e9) * 1e3 if copy else None})
    return points
