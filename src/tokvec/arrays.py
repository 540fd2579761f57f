"""Ids to vectors with whole arrays: the NumPy version of Algorithms 1 and 2, and the input checks.

Taught in chapter 8, "From loops to tensors" (``08_loops_to_tensors``). The PyTorch layer of
chapter 9 (:mod:`tokvec.layers`) builds its positional table with :func:`sinusoidal_table_numpy`
and checks its input with :func:`check_ids`, so the three versions (pure Python, NumPy, PyTorch)
share one definition of the table and one definition of valid input.

Conventions change here, on purpose, to the ones every framework uses: a table is
``(rows = positions or tokens, columns = features)``, so ``weight`` is ``(N_V, d)`` (the paper's
``W_e`` transposed) and the positional table is ``(l_max, d)`` (the paper's ``W_p`` transposed).
"""

from __future__ import annotations

import math

import numpy as np

from tokvec import validate

__all__ = ["check_ids", "embed_numpy", "sinusoidal_table_numpy"]


def _integer_dtype(ids) -> bool:
    """True for NumPy and PyTorch integer dtypes (bool is not an integer here)."""
    dtype = ids.dtype
    if isinstance(dtype, np.dtype):
        return np.issubdtype(dtype, np.integer)
    # a torch.dtype: integer means neither floating, nor complex, nor bool
    return not (dtype.is_floating_point or dtype.is_complex or str(dtype) == "torch.bool")


def check_ids(ids, vocab_size: int, max_len: int):
    """Check a batch of token ids before any lookup; return ``(B, T)`` (``B`` is None for rank 1).

    ``ids`` is a NumPy array or a PyTorch tensor of integers, of shape ``(T,)`` or ``(B, T)``,
    with every id in ``0 .. vocab_size-1`` and ``T <= max_len``. Anything else raises an error
    that names the value, the valid range and the fix. Negative ids are errors: they would
    silently wrap around in NumPy and crash the process on a GPU.

    On a GPU the range check reads two numbers back to the CPU (one ``aminmax`` reduction): that
    synchronisation is the price of a Python error instead of a device-side assert.
    """
    vocab_size = validate.positive_int(vocab_size, "vocab_size")
    max_len = validate.positive_int(max_len, "max_len")
    if not (hasattr(ids, "dtype") and hasattr(ids, "shape")):
        raise TypeError(f"ids must be an integer array or tensor of shape (T,) or (B, T), got "
                        f"{type(ids).__name__} {ids!r:.40}; wrap it, e.g. torch.tensor(ids) or np.asarray(ids)")
    if not _integer_dtype(ids):
        raise TypeError(f"ids must have an integer dtype, got {ids.dtype}; token ids are row numbers, "
                        f"convert with ids.long() (PyTorch) or ids.astype(np.int64) (NumPy)")
    if str(ids.dtype) in _TORCH_UNSIGNED_WIDE:
        raise TypeError(f"ids have dtype {ids.dtype}, which PyTorch can store but not compare or look up "
                        f"with; convert with ids.to(torch.int64) (every valid id is far below 2**63)")
    if ids.ndim not in (1, 2):
        raise ValueError(f"ids must have shape (T,) or (B, T), got shape {tuple(ids.shape)} (rank {ids.ndim}); "
                         f"reshape it, e.g. ids.reshape(-1, ids.shape[-1])")
    T = ids.shape[-1]
    if T > max_len:
        raise ValueError(f"the sequence has T = {T} positions but the table covers 0..{max_len - 1} "
                         f"(max_len = {max_len}); truncate the input or build the layer with max_len >= {T}")
    B = None if ids.ndim == 1 else ids.shape[0]
    if (ids.size if isinstance(ids, np.ndarray) else ids.numel()) == 0:
        return B, T                                                    # nothing to look up
    if isinstance(ids, np.ndarray):
        low, high = int(ids.min()), int(ids.max())
    elif ids.device.type == "meta":
        return B, T                          # a meta tensor has a shape but no values to check
    else:
        low, high = torch_aminmax(ids)       # one reduction, one sync on a GPU
    if low < 0 or high >= vocab_size:
        bad = low if low < 0 else high
        where = tuple(int(i) for i in (np.argwhere(ids == bad)[0] if isinstance(ids, np.ndarray)
                                       else (ids == bad).nonzero()[0]))
        raise IndexError(f"token id {bad} at index {where} is out of range: valid ids are 0..{vocab_size - 1} "
                         f"(vocab_size = {vocab_size}); map unknown tokens to <unk> when encoding, "
                         f"or build the layer with a larger vocab_size")
    return B, T


# PyTorch's "limited support" unsigned types: no aminmax, no comparison, no lookup.
_TORCH_UNSIGNED_WIDE = {"torch.uint16", "torch.uint32", "torch.uint64"}


def torch_aminmax(ids) -> tuple[int, int]:
    """The smallest and largest id of a tensor, read back to the CPU in one transfer (one sync)."""
    import torch

    return tuple(torch.stack(ids.aminmax()).tolist())


def sinusoidal_table_numpy(length: int, d_model: int, base: float = 10000.0, *, dtype=np.float64) -> np.ndarray:
    """The sinusoidal positional table, shape ``(length, d_model)``: rows are positions.

    Column ``2i`` is ``sin(t * w_i)`` and column ``2i+1`` is ``cos(t * w_i)``, with
    ``w_i = base^(-2i/d_model)`` and ``t = 0 .. length-1``; an odd ``d_model`` drops the last
    cosine. This is ``tokvec.reference.sinusoidal_positions(d_model, length, base)`` transposed.

    Computed in float64 from exact integer positions, then cast once to ``dtype``: in float32 the
    table stays within 1e-6 of the true values at every position below 100,000, where the
    float32 recipe of the seeds is off by about 7e-3 (chapter 8 plots both).
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
