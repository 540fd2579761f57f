"""Ids to vectors with whole arrays: the NumPy version of Algorithms 1 and 2.

Taught in chapter 8, "From loops to tensors" (``08_loops_to_tensors``). The PyTorch layer of
chapter 9 (:mod:`tokvec.layers`) builds its positional table with :func:`sinusoidal_table_numpy`
and checks its input with :func:`tokvec.validate.check_ids`, so the three versions (pure Python, NumPy, PyTorch)
share one definition of the table and one definition of valid input.

Conventions change here, on purpose, to the ones every framework uses: a table is
``(rows = positions or tokens, columns = features)``, so ``weight`` is ``(N_V, d)`` (the paper's
``W_e`` transposed) and the positional table is ``(l_max, d)`` (the paper's ``W_p`` transposed).
"""

from __future__ import annotations

import math

import numpy as np

from tokvec import validate
from tokvec.validate import check_ids

__all__ = ["embed_numpy", "sinusoidal_table_numpy"]


def sinusoidal_table_numpy(length: int, d_model: int, base: float = 10000.0, *, dtype=np.float64) -> np.ndarray:
    """The sinusoidal positional table, shape ``(length, d_model)``: rows are positions.

    Column ``2i`` is ``sin(t * w_i)`` and column ``2i+1`` is ``cos(t * w_i)``, with
    ``w_i = base^(-2i/d_model)`` and ``t = 0 .. length-1``; an odd ``d_model`` drops the last
    cosine. This is ``tokvec.reference.sinusoidal_positions(d_model, length, base)`` transposed.

    Computed in float64 from exact integer positions, then cast once to ``dtype``: in float32 the
    table stays within 1e-6 of the true values at every position below 100,000, where the
    common float32 recipe is off by about 7e-3 (the appendix on numerics plots both).
    """
    length, d_model = validate.positive_int(length, "length"), validate.positive_int(d_model, "d_model")
    validate.table_size(length, d_model, ("length", "d_model"), validate.ARRAY_TABLE_LIMIT)
    base = validate.base(base)
    validate.floating_dtype(dtype)
    t = np.arange(length, dtype=np.float64)[:, None]                   # (length, 1), exact integers
    omega = base ** (-np.arange(0, d_model, 2, dtype=np.float64) / d_model)  # (ceil(d/2),)
    angle = t * omega                                                  # (length, ceil(d/2))
    table = np.empty((length, d_model), dtype=np.float64)
    table[:, 0::2] = np.sin(angle)                                     # ceil(d/2) sine columns
    table[:, 1::2] = np.cos(angle[:, : d_model // 2])                  # floor(d/2) cosine columns
    return table.astype(dtype, copy=False)


def embed_numpy(ids: np.ndarray, weight: np.ndarray, table: np.ndarray, *, scale: float | None = None) -> np.ndarray:
    """Algorithms 1 and 2 for a whole batch at once: ``weight[ids] * scale + table[:T]``.

    ``ids`` is ``(T,)`` or ``(B, T)``, ``weight`` is ``(N_V, d)``, ``table`` is ``(l_max, d)``;
    the result is ``(T, d)`` or ``(B, T, d)``. ``scale`` defaults to ``sqrt(d)`` as in Vaswani et
    al. (2017); pass ``scale=1.0`` for the paper of Phuong & Hutter, which does not scale.
    Fancy indexing gathers the rows, broadcasting adds the same table to every sequence.
    """
    weight, table = np.asarray(weight), np.asarray(table)
    for name, array in (("weight", weight), ("table", table)):
        if not (np.issubdtype(array.dtype, np.floating) or np.issubdtype(array.dtype, np.integer)):
            raise TypeError(f"{name} must be an array of numbers, got dtype {array.dtype}; "
                            f"build it with np.asarray(..., dtype=np.float64)")
    if weight.ndim != 2 or table.ndim != 2 or weight.shape[1] != table.shape[1]:
        raise ValueError(f"weight must be (N_V, d) and table (l_max, d) with the same d, got shapes "
                         f"{weight.shape} and {table.shape}")
    _, T = check_ids(ids, weight.shape[0], table.shape[0])
    if scale is None:
        scale = math.sqrt(weight.shape[1])
    elif isinstance(scale, bool) or not isinstance(scale, (int, float, np.floating)) or not math.isfinite(scale):
        raise TypeError(f"scale must be a finite number or None (for sqrt(d)), got {scale!r:.40}")
    return weight[ids] * scale + table[:T]                             # (B, T, d) + (T, d) -> (B, T, d)
