"""Checks of arguments, shared by every module on the data path.

A bad argument is refused up front with an error that names the argument, the value, the valid
range and the fix, never a generic Python error from deep inside (``math domain error``,
``'<=' not supported``) and never a silent wrong answer. Wrong types raise ``TypeError``; values
of the right type outside the valid range raise ``ValueError``.
"""

from __future__ import annotations

import math
import numbers

__all__ = ["ARRAY_TABLE_LIMIT", "PYTHON_TABLE_LIMIT", "base", "flag", "floating_dtype",
           "positive_int", "probability", "table_size"]


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
