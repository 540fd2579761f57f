"""Every input check of the data path, in one place: sizes, bases, dtypes, indices and token ids.

Used by :mod:`tokvec.reference` (``check_index``, chapter 4), :mod:`tokvec.arrays` and
:mod:`tokvec.layers` (``check_ids``, chapters 8 and 9), :mod:`tokvec.text` and :mod:`tokvec.vocab`.

A bad argument is refused up front with an error that names the argument, the value, the valid
range and the fix, never a generic Python error from deep inside (``math domain error``,
``'<=' not supported``) and never a silent wrong answer. Wrong types raise ``TypeError``; values
of the right type outside the valid range raise ``ValueError``.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

__all__ = ["ARRAY_TABLE_LIMIT", "PYTHON_TABLE_LIMIT", "base", "check_ids", "check_index", "check_offsets", "flag",
           "floating_dtype", "positive_int", "probability", "table_size", "torch_aminmax",
           "torch_floating_dtype"]


def positive_int(value: object, name: str) -> int:
    """``value`` as an ``int >= 1``: sizes such as ``vocab_size``, ``d_model``, ``max_len``.

    ``bool`` and ``float`` are refused even when they hold a whole number (``True`` is not a
    size, and ``4.0`` usually means a computation went through float by mistake).
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int >= 1, got {type(value).__name__} {value!r:.40}; "
                        f"pass a whole number, e.g. {name}=int(value)")
    if value < 1:
        raise ValueError(f"{name} must be an int >= 1, got {value}")
    return int(value)


def base(value: object, name: str = "base") -> float:
    """The base of the sinusoidal frequencies as a finite ``float > 1`` (10000 in Vaswani et al.).

    A base of 1 or less would make every frequency 1 or let them grow; NaN and infinity give
    tables of NaN; an int too large for a float (``10**400``) cannot be used at all.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number > 1, got {type(value).__name__} {value!r:.40}; "
                        f"the usual value is 10000.0")
    try:
        as_float = float(value)
    except OverflowError:
        raise ValueError(f"{name} = {value!r:.40} is too large for a float; use a base below 1e308, "
                         f"usually 10000.0") from None
    if not math.isfinite(as_float) or as_float <= 1:
        raise ValueError(f"{name} must be a finite number > 1, got {value!r}; the usual value is 10000.0")
    return as_float


def torch_floating_dtype(dtype: object, name: str = "dtype"):
    """A floating-point ``torch.dtype``; a string such as ``"float32"`` is refused with the fix."""
    import torch

    if not isinstance(dtype, torch.dtype):
        raise TypeError(f"{name} must be a torch.dtype such as torch.float32, got "
                        f"{type(dtype).__name__} {dtype!r:.40}; PyTorch takes no dtype names as "
                        f"strings, so write torch.float32 instead of 'float32'")
    return floating_dtype(dtype, name)


def floating_dtype(dtype: object, name: str = "dtype"):
    """A floating-point dtype (PyTorch or NumPy); an integer dtype would round a table to 0 and 1."""
    is_float = getattr(dtype, "is_floating_point", None)  # a torch.dtype has this attribute
    if is_float is None:
        import numpy as np

        try:
            is_float = np.issubdtype(np.dtype(dtype), np.floating)
        except TypeError:
            is_float = False
    if not is_float:
        raise TypeError(f"{name} must be a floating-point dtype such as float32 or float64, got {dtype!r}; "
                        f"a table of sines and cosines in an integer type would hold only 0, 1 and -1")
    return dtype


def probability(value: object, name: str) -> float:
    """A probability in ``[0, 1)``, such as a dropout rate."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a probability in [0, 1), got {type(value).__name__} {value!r:.40}")
    if not 0.0 <= value < 1.0:  # False for NaN too
        raise ValueError(f"{name} must be a probability in [0, 1), got {value!r}")
    return float(value)


#: Largest table the pure-Python reference builds: 10**8 floats in lists take about 3 GB.
PYTHON_TABLE_LIMIT = 10**8
#: Largest NumPy or PyTorch table accepted: 2**40 entries (4 TiB in float32) is beyond any machine;
#: below it, a table too large for this machine is the allocator's own clear MemoryError.
ARRAY_TABLE_LIMIT = 2**40


def table_size(rows: int, cols: int, names: tuple[str, str], limit: int) -> None:
    """Refuse a ``rows x cols`` table larger than ``limit`` entries before allocating anything.

    Without this, a huge size runs the machine out of memory (the process is killed, with no
    error at all) or overflows inside a library with a message that does not name the argument.
    """
    if rows * cols > limit:
        raise ValueError(f"{names[0]} x {names[1]} = {_short(rows)} x {_short(cols)} = {_short(rows * cols)} "
                         f"entries, more than the {_short(limit)} this function builds; "
                         f"check {names[0]} and {names[1]}")


def _short(n: int) -> str:
    """An int for a message: as it is when short, else as a power of ten (10**400 has 401 digits)."""
    return str(n) if n < 10**9 else f"about 10^{len(str(n)) - 1}"


def flag(value: object, name: str) -> bool:
    """``True`` or ``False`` only: ``lowercase="no"`` is truthy and would silently lowercase."""
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, got {type(value).__name__} {value!r:.40}")
    return value


# --- one index, one batch of ids ----------------------------------------------------------------

def check_index(value: object, size: int, what: str, fix: str) -> int:
    """Return ``value`` if it is an int in ``0 .. size-1``; otherwise raise a helpful error.

    Negative values are errors, never counted from the end as Python lists would.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{what} must be an int in 0..{size - 1}, got {type(value).__name__} {value!r:.40}")
    if not 0 <= value < size:
        raise IndexError(f"{what} {value} is out of range: valid values are 0..{size - 1}; {fix}")
    return int(value)


def _integer_dtype(ids) -> bool:
    """True for NumPy and PyTorch integer dtypes (bool is not an integer here)."""
    dtype = ids.dtype
    if isinstance(dtype, np.dtype):
        return np.issubdtype(dtype, np.integer)
    # a torch.dtype: integer means neither floating, nor complex, nor bool
    return not (dtype.is_floating_point or dtype.is_complex or str(dtype) == "torch.bool")


def check_ids(ids, vocab_size: int, max_len: int, offsets=None):
    """Check a batch of token ids before any lookup; return ``(B, T)`` (``B`` is None for ndim 1).

    ``ids`` is a NumPy array or a PyTorch tensor of integers, of shape ``(T,)`` or ``(B, T)``,
    with every id in ``0 .. vocab_size-1`` and ``T <= max_len``. Anything else raises an error
    that names the value, the valid range and the fix. Negative ids are errors: they would
    silently wrap around in NumPy and crash the process on a GPU.

    On a GPU the range check reads two numbers back to the CPU (one ``aminmax`` reduction): that
    synchronisation is the price of a Python error instead of a device-side assert. ``offsets``
    (where each sequence starts in the table, :func:`check_offsets`) are checked too, in the
    same read-back when both are tensors: one synchronisation per call, not two.
    """
    vocab_size = positive_int(vocab_size, "vocab_size")
    max_len = positive_int(max_len, "max_len")
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
        raise ValueError(f"ids must have shape (T,) or (B, T), got shape {tuple(ids.shape)} (ndim {ids.ndim}); "
                         f"reshape it, e.g. ids.reshape(-1, ids.shape[-1])")
    T = ids.shape[-1]
    if max_len < T:
        raise ValueError(f"the sequence has T = {T} positions but the table covers 0..{max_len - 1} "
                         f"(max_len = {max_len}); truncate the input or build the layer with max_len >= {T}")
    B = None if ids.ndim == 1 else ids.shape[0]
    together = (offsets is not None and _offsets_shape(offsets, B)
                and not isinstance(ids, np.ndarray) and not isinstance(offsets, np.ndarray))
    if offsets is not None and not together:
        check_offsets(offsets, B, T, max_len)
    if (ids.size if isinstance(ids, np.ndarray) else ids.numel()) == 0:
        return B, T                                                    # nothing to look up
    if isinstance(ids, np.ndarray):
        low, high = int(ids.min()), int(ids.max())
    elif ids.device.type == "meta":
        return B, T                          # a meta tensor has a shape but no values to check
    elif together and offsets.numel() and offsets.device == ids.device:
        low, high, first, last = torch_aminmax(ids, offsets)      # one read-back for both
        _offsets_range(offsets, first, last, T, max_len)
    else:
        low, high = torch_aminmax(ids)       # one reduction, one sync on a GPU
        if together:
            check_offsets(offsets, B, T, max_len)
    if low < 0 or high >= vocab_size:
        bad = low if low < 0 else high
        where = tuple(int(i) for i in (np.argwhere(ids == bad)[0] if isinstance(ids, np.ndarray)
                                       else (ids == bad).nonzero()[0]))
        raise IndexError(f"token id {bad} at index {where} is out of range: valid ids are 0..{vocab_size - 1} "
                         f"(vocab_size = {vocab_size}); map unknown tokens to <unk> when encoding, "
                         f"or build the layer with a larger vocab_size")
    return B, T


def check_offsets(offsets, batch: int | None, seq_len: int, max_len: int):
    """Check where each sequence starts in the positional table; return ``offsets``.

    ``offsets`` is an int ``p`` (every sequence starts at position ``p``) or an integer tensor (or
    NumPy array) of shape ``(B,)``, one start per sequence: token ``t`` of sequence ``b`` sits at
    position ``offsets[b] + t``, so every start must lie in ``0 .. max_len - seq_len``. That is how
    a server decodes a batch of sequences of different lengths (one new token each,
    ``seq_len = 1``, each at its own position). A tensor's range is read back to the CPU in one
    transfer (one sync on a GPU), as for the ids; :func:`check_ids` checks ids and offsets in one.
    """
    if not _offsets_shape(offsets, batch):                     # an int
        if not 0 <= offsets <= max_len - seq_len:
            raise IndexError(f"offset {offsets} is out of range: {_offsets_fix(seq_len, max_len)}")
        return offsets
    if isinstance(offsets, np.ndarray):
        if offsets.size:
            _offsets_range(offsets, int(offsets.min()), int(offsets.max()), seq_len, max_len)
    elif offsets.numel():
        _offsets_range(offsets, *torch_aminmax(offsets), seq_len, max_len)
    return offsets


def _offsets_shape(offsets, batch: int | None) -> bool:
    """Check the type and shape of ``offsets``; True for a tensor (or array), False for an int."""
    if isinstance(offsets, numbers.Integral) and not isinstance(offsets, bool):
        return False
    if not (hasattr(offsets, "dtype") and hasattr(offsets, "shape")) or not _integer_dtype(offsets):
        raise TypeError(f"offsets must be an int or an integer tensor of shape (B,), got "
                        f"{type(offsets).__name__} {offsets!r:.40}; e.g. torch.tensor(lengths)")
    if str(offsets.dtype) in _TORCH_UNSIGNED_WIDE:
        raise TypeError(f"offsets have dtype {offsets.dtype}, which PyTorch can store but not compare; "
                        f"convert with offsets.to(torch.int64)")
    if batch is None or tuple(offsets.shape) != (batch,):
        want = "an int (the ids have no batch dimension)" if batch is None else f"shape ({batch},), one per sequence"
        raise ValueError(f"offsets must be {want}, got shape {tuple(offsets.shape)}")
    return True


def _offsets_fix(seq_len: int, max_len: int) -> str:
    return (f"a sequence of {seq_len} tokens must start in 0..{max_len - seq_len} (max_len = {max_len}); "
            f"build the table with a larger max_len, or trim the sequence")


def _offsets_range(offsets, low: int, high: int, seq_len: int, max_len: int) -> None:
    if low < 0 or high > max_len - seq_len:
        bad = low if low < 0 else high
        where = int((offsets == bad).nonzero()[0][0])
        raise IndexError(f"offset {bad} of sequence {where} is out of range: {_offsets_fix(seq_len, max_len)}")


# PyTorch's "limited support" unsigned types: no aminmax, no comparison, no lookup.
_TORCH_UNSIGNED_WIDE = {"torch.uint16", "torch.uint32", "torch.uint64"}


def torch_aminmax(*tensors) -> tuple[int, ...]:
    """The smallest and largest value of each tensor, ``(min, max, min, max, ...)``, read back to the
    CPU in one transfer (one sync)."""
    import torch

    return tuple(torch.stack([v.long() for t in tensors for v in t.aminmax()]).tolist())
