"""How many bytes the input layer must move, and the fastest time that allows (a roofline).

Chapter 10 ("What vectorization buys") reads the CPU timings against it; chapter 10.1 ("Making
it fast on a GPU") predicts the GPU's from it, and reads the GPU runs, once committed, against
it (:func:`gpu_results`, :func:`gpu_points`). The forward pass ``emb(ids) * sqrt(d) + PE[:T]``
does almost no arithmetic per byte, so once a call is large enough that its fixed cost (Python,
dispatch, allocation, kernel launches) no longer dominates, memory traffic, not FLOPs, bounds
its time: ``time >= bytes / bandwidth``. These functions count the *algorithmic* bytes of each
way of computing it (what must cross between memory and the cores if no cache helped):

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
  ceiling any gather can hope to match.
"""

from __future__ import annotations

from pathlib import Path

from tokvec import validate

__all__ = ["DTYPE_BYTES", "GPU_RESULTS", "bytes_moved", "gpu_points", "gpu_results", "min_time_ms"]

#: Bytes per element of the dtypes the benchmarks use.
DTYPE_BYTES = {"float64": 8, "float32": 4, "bfloat16": 2, "float16": 2}


def bytes_moved(batch: int, seq_len: int, d_model: int, dtype: str = "bfloat16", *,
                impl: str = "fused", id_bytes: int = 8, table_dtype: str | None = None) -> int:
    """Algorithmic bytes read and written by one forward pass of ``impl`` (fused, eager, in_place or
    copy); ``dtype`` is the output's and the embedding table's, ``table_dtype`` the positional
    table's (default: ``dtype``)."""
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
    if impl == "fused":
        return ids + tensor + pe + tensor                        # ids, rows, PE tile, output
    if impl == "eager":
        return ids + 6 * tensor + pe                             # 2 passes per kernel
    if impl == "in_place":
        return ids + 4 * tensor + pe                             # gather 2 passes, add 2
    if impl == "copy":
        return 2 * tensor
    raise ValueError(f"impl must be 'fused', 'eager', 'in_place' or 'copy', got {impl!r}")


def min_time_ms(n_bytes: int, bandwidth_tb_s: float) -> float:
    """The memory-bound floor: ``n_bytes`` at ``bandwidth_tb_s`` terabytes (1e12 bytes) per second."""
    if not bandwidth_tb_s > 0:
        raise ValueError(f"bandwidth must be positive, got {bandwidth_tb_s!r}")
    return n_bytes / (bandwidth_tb_s * 1e12) * 1e3


#: Where the GPU runs are committed: ``python -m tokvec.bench kernels --out`` one of these names.
GPU_RESULTS = "gpu-*.json"


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
    """Each timed record against the roofline, in the order given.

    Adds ``bytes`` (what the timed code must move: one fused pass, or a copy's read and write),
    ``gb_s`` (those bytes over the median time), ``of_copy`` (that speed over the speed of the
    copy of the same file, device, dtype and size: the bandwidth the machine gives in practice;
    None without a copy record), and ``floor_ms`` (the fused pass's bytes at the copy's speed).
    """
    for r in records:
        missing = _GPU_KEYS - set(r)
        if missing:
            raise ValueError(f"a GPU record lacks {sorted(missing)}: {r!r:.200}; "
                             "write records with python -m tokvec.bench kernels --out")
    size = lambda r: (r.get("file"), r["device"], r["dtype"], r["batch"], r["seq_len"], r["d_model"])  # noqa: E731
    copy_speed = {}
    for r in records:
        if r["impl"] == "copy":
            copied = bytes_moved(r["batch"], r["seq_len"], r["d_model"], r["dtype"], impl="copy")
            copy_speed[size(r)] = copied / (r["median_ms"] / 1e3) / 1e9
    points = []
    for r in records:
        kind = "copy" if r["impl"] == "copy" else "fused"
        moved = bytes_moved(r["batch"], r["seq_len"], r["d_model"], r["dtype"], impl=kind)
        gb_s = moved / (r["median_ms"] / 1e3) / 1e9
        ceiling = copy_speed.get(size(r))
        one_pass = bytes_moved(r["batch"], r["seq_len"], r["d_model"], r["dtype"], impl="fused")
        points.append({**r, "bytes": moved, "gb_s": gb_s, "of_copy": gb_s / ceiling if ceiling else None,
                       "floor_ms": one_pass / (ceiling * 1e9) * 1e3 if ceiling else None})
    return points
