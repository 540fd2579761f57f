"""Ids to vectors in pure Python: Algorithms 1 and 2 of Phuong & Hutter (2022).

Taught in chapters 3 to 7: "The embedding matrix" (``03_embedding_matrix``), "Algorithm 1"
(``04_token_embedding``), "Algorithm 2" (``05_positional_embedding``), "Why sinusoids"
(``06_why_sinusoids``) and "Common mistakes" (``07_common_mistakes``).

Standard library only, and laid out like the paper so the two can be read side by side:

* a matrix is a list of rows, ``M[i][j]`` is the entry in row ``i`` and column ``j``;
* ``W_e`` is ``d_e x N_V`` and ``W_p`` is ``d_e x l_max``, so a token's or a position's vector
  is a **column**: ``W_e[:, v]`` in the paper is ``column(W_e, v)`` here;
* indices are 0-based: the paper's token ``v`` in ``1..N_V`` is ``v - 1`` here, its position
  ``t`` in ``1..l_max`` is ``t - 1``. PyTorch's ``nn.Embedding(N_V, d_e).weight`` is
  ``transpose(W_e)``.
"""

from __future__ import annotations

import math
import numbers
import random
from collections.abc import Set as AbstractSet
from decimal import Decimal, localcontext

from tokvec import validate
from tokvec.validate import check_index

__all__ = [
    "Matrix",
    "column",
    "embed",
    "frequencies",
    "matvec",
    "one_hot",
    "paper_positions",
    "positional_embedding",
    "random_matrix",
    "shape",
    "sinusoidal_positions",
    "token_embedding",
    "transpose",
]

Matrix = list[list[float]]

# 2*pi to 60 digits, for reducing large angles exactly enough (see _angle).
_TWO_PI = Decimal("6.28318530717958647692528676655900576839433879875021164194988918")


# --- checks: every bad input names the value, the valid range and the fix ---------------------

def shape(M: Matrix, name: str = "matrix") -> tuple[int, int]:
    """``(rows, columns)`` of a non-empty rectangular list of rows; anything else is an error."""
    if not isinstance(M, (list, tuple)) or not M:
        raise ValueError(f"{name} must be a non-empty list of rows, got {type(M).__name__} {M!r:.40}")
    if not all(isinstance(row, (list, tuple)) for row in M):
        bad = next(i for i, row in enumerate(M) if not isinstance(row, (list, tuple)))
        raise ValueError(f"{name} row {bad} is {type(M[bad]).__name__}, not a list; "
                         "a matrix is a list of rows")
    cols = len(M[0])
    if cols == 0:
        raise ValueError(f"{name} has rows of length 0; it needs at least one column")
    for i, row in enumerate(M):
        if len(row) != cols:
            raise ValueError(f"{name} is ragged: row 0 has {cols} entries but row {i} has {len(row)}; "
                             "every row must have the same length")
    return len(M), cols


# --- small linear algebra on lists -------------------------------------------------------------

def column(M: Matrix, j: int) -> list[float]:
    """The column ``M[:, j]`` as a list, with no checks: token ``v``'s vector is ``column(W_e, v)``.

    Taught in chapter 3, "The embedding matrix"; chapter 4's :func:`token_embedding` adds the checks.
    """
    return [row[j] for row in M]


def transpose(M: Matrix) -> Matrix:
    """Rows become columns: the paper's ``W_e`` (d_e x N_V) <-> PyTorch's weight (N_V x d_e)."""
    shape(M)
    return [list(col) for col in zip(*M)]


def one_hot(v: int, N_V: int) -> list[float]:
    """The vector of length ``N_V`` with 1.0 at index ``v`` and 0.0 elsewhere (chapter 3)."""
    N_V = validate.positive_int(N_V, "N_V")
    validate.table_size(1, N_V, ("1", "N_V"), validate.PYTHON_TABLE_LIMIT)
    v = check_index(v, N_V, "token id v", "ids index the vocabulary")
    return [1.0 if j == v else 0.0 for j in range(N_V)]


def matvec(M: Matrix, x: list[float]) -> list[float]:
    """The matrix-vector product ``M x`` (chapter 3: one-hot times matrix is a lookup)."""
    rows, cols = shape(M)
    if isinstance(x, (str, bytes)) or not isinstance(x, (list, tuple)):
        raise TypeError(f"x must be a list of {cols} numbers, got {type(x).__name__} {x!r:.40}")
    if len(x) != cols:
        raise ValueError(f"cannot multiply a {rows}x{cols} matrix by a vector of length {len(x)}; "
                         f"the vector needs {cols} entries")
    return [math.fsum(m * xi for m, xi in zip(row, x)) for row in M]


def random_matrix(rows: int, cols: int, *, seed: int, std: float = 1.0) -> Matrix:
    """A ``rows x cols`` matrix of independent N(0, std^2) entries from ``random.Random(seed)``.

    Initializes ``W_e`` (d_e x N_V) and a learned ``W_p`` (d_e x l_max). ``std=1.0`` matches
    PyTorch's ``nn.Embedding`` default; the seed makes every run print the same numbers.
    Taught in chapter 3, "The embedding matrix".
    """
    rows, cols = validate.positive_int(rows, "rows"), validate.positive_int(cols, "cols")
    validate.table_size(rows, cols, ("rows", "cols"), validate.PYTHON_TABLE_LIMIT)
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise TypeError(f"seed must be an int, got {type(seed).__name__} {seed!r:.40}")
    if isinstance(std, bool) or not isinstance(std, numbers.Real) or not (math.isfinite(std) and std >= 0):
        raise ValueError(f"std must be a finite number >= 0, got {std!r:.40}")
    rng = random.Random(seed)
    return [[rng.gauss(0.0, std) for _ in range(cols)] for _ in range(rows)]


# --- Algorithm 1 -------------------------------------------------------------------------------

def token_embedding(v: int, W_e: Matrix) -> list[float]:
    """Algorithm 1 of Phuong & Hutter (2022): token embedding.

    | **Input:** v ∈ V ≅ [N_V], a token ID.
    | **Output:** e ∈ ℝ^{d_e}, the vector representation of the token.
    | **Parameters:** W_e ∈ ℝ^{d_e × N_V}, the token embedding matrix.
    | 1: return e = W_e[:, v]

    Here ``v`` is 0-based, in ``0 .. N_V-1``. Taught in chapter 4, "Algorithm 1".
    """
    d_e, N_V = shape(W_e, "W_e")
    v = check_index(v, N_V, "token id v", f"W_e has N_V = {N_V} columns, one per token of the vocabulary")
    return column(W_e, v)


# --- Algorithm 2 -------------------------------------------------------------------------------

def positional_embedding(t: int, W_p: Matrix) -> list[float]:
    """Algorithm 2 of Phuong & Hutter (2022): positional embedding.

    | **Input:** ℓ ∈ [ℓ_max], position of a token in the sequence.
    | **Output:** e_p ∈ ℝ^{d_e}, the vector representation of the position.
    | **Parameters:** W_p ∈ ℝ^{d_e × ℓ_max}, the positional embedding matrix.
    | 1: return e_p = W_p[:, ℓ]

    Here the position is called ``t`` (as in the paper's text) and is 0-based, in ``0 .. l_max-1``.
    A position past the table is an error, for a learned and a sinusoidal ``W_p`` alike; a
    sinusoidal table can be rebuilt longer (chapter 5, "Past the end of the table", says when).
    """
    d_e, l_max = shape(W_p, "W_p")
    t = check_index(t, l_max, "position t",
                    f"W_p has l_max = {l_max} columns; use a longer table or a shorter sequence")
    return column(W_p, t)


def embed(x: list[int], W_e: Matrix, W_p: Matrix) -> list[list[float]]:
    """The initial embedding of a sequence: ``e_t = W_e[:, x[t]] + W_p[:, t]`` for each position t.

    Returns ``T = len(x)`` vectors of length ``d_e`` (a T x d_e list, one row per token).
    Taught in chapter 5, "Algorithm 2".
    """
    d_e, _ = shape(W_e, "W_e")
    d_p, l_max = shape(W_p, "W_p")
    if d_e != d_p:
        raise ValueError(f"W_e has d_e = {d_e} rows but W_p has {d_p}; both must have the embedding dimension d_e")
    if isinstance(x, (str, bytes)) or not hasattr(x, "__len__"):
        raise TypeError(f"x must be a list of token ids, got {type(x).__name__} {x!r:.40}")
    if isinstance(x, AbstractSet):
        # position t goes to the t-th token, and a set has no t-th token
        raise TypeError(f"x must be a list of token ids in sequence order, got {type(x).__name__} {x!r:.40}; "
                        "a set has no order and keeps each id once: pass a list")
    if len(x) > l_max:
        raise ValueError(f"the sequence has T = {len(x)} tokens but W_p only covers positions 0..{l_max - 1} "
                         f"(l_max = {l_max}); truncate the sequence or build W_p with l_max >= {len(x)}")
    # Everything is checked once, here, not once per token (then Algorithms 1 and 2 are just
    # column(W_e, v) and column(W_p, t), as in token_embedding and positional_embedding).
    N_V = len(W_e[0])
    x = [check_index(v, N_V, "token id v", f"W_e has N_V = {N_V} columns, one per token of the vocabulary")
         for v in x]
    return [[e + p for e, p in zip(column(W_e, v), column(W_p, t))] for t, v in enumerate(x)]


# --- the hard-coded sinusoidal W_p -------------------------------------------------------------

def frequencies(d_e: int, base: float = 10000.0, *, first_i: int = 0) -> list[float]:
    """The angular frequency of each sin/cos pair: ``omega_i = base^(-2i/d_e)``, i = first_i, first_i+1, ...

    ``ceil(d_e / 2)`` values: rows ``2k`` and ``2k+1`` of the table share ``omega`` number ``k``.
    Taught in chapter 5, "Algorithm 2"; chapter 6, "Why sinusoids work", explains the choice.
    """
    d_e = validate.positive_int(d_e, "d_e")
    validate.table_size(1, d_e, ("1", "d_e"), validate.PYTHON_TABLE_LIMIT)
    base = validate.base(base)
    if isinstance(first_i, bool) or not isinstance(first_i, int) or first_i not in (0, 1):
        raise ValueError(f"first_i must be 0 (Vaswani et al.) or 1 (Phuong and Hutter), got {first_i!r:.40}")
    return [base ** (-2 * i / d_e) for i in range(first_i, first_i + (d_e + 1) // 2)]


def _sinusoid_table(d_e: int, l_max: int, base: float, first_i: int) -> Matrix:
    """Rows 2k, 2k+1 = sin, cos of ``t * omega_i`` with ``i = first_i + k``, for t = 0 .. l_max-1.

    The angle is computed with 40 significant digits and reduced modulo 2*pi before the sine.
    In double precision the angle near t = 20,000 is already off by up to 2e-12 (its last bit
    is worth 3.6e-12), and the sine inherits that error; reduced exactly, every entry is within
    about 1e-16 of the true value.
    """
    d_e, l_max = validate.positive_int(d_e, "d_e"), validate.positive_int(l_max, "l_max")
    validate.table_size(d_e, l_max, ("d_e", "l_max"), validate.PYTHON_TABLE_LIMIT)
    frequencies(d_e, base, first_i=first_i)  # validates base
    base = float(base)
    W_p = []
    with localcontext() as ctx:
        ctx.prec = 40
        log_base = Decimal(repr(float(base))).ln()
        for row in range(d_e):
            i = first_i + row // 2
            omega = (-(Decimal(2 * i) / Decimal(d_e)) * log_base).exp()
            angles = [float((t * omega) % _TWO_PI) for t in range(l_max)]
            wave = math.sin if row % 2 == 0 else math.cos
            W_p.append([wave(a) for a in angles])
    return W_p


def sinusoidal_positions(d_e: int, l_max: int, base: float = 10000.0) -> Matrix:
    """The hard-coded W_p (d_e x l_max) of Vaswani et al. (2017), section 3.5.

    Row ``2i`` is ``sin(t / base^(2i/d_e))`` and row ``2i+1`` is ``cos`` of the same angle,
    for positions ``t = 0 .. l_max-1`` (0-based, as in the paper by Vaswani et al.).

    An odd ``d_e`` is supported by dropping the last cosine: the last row is the sine of pair
    ``i = (d_e-1)/2`` without its cosine, and every exponent ``2i/d_e`` uses the odd ``d_e``.
    Taught in chapter 5, "Algorithm 2"; its properties in chapter 6.
    """
    return _sinusoid_table(d_e, l_max, base, first_i=0)


def paper_positions(d_e: int, l_max: int) -> Matrix:
    """The sinusoidal W_p as Phuong & Hutter (2022) write it: base ``l_max``, i counted from 1.

    Their text gives ``W_p[2i-1, t] = sin(t / l_max^(2i/d_e))`` and ``W_p[2i, t] = cos(...)`` for
    ``0 < i <= d_e/2``, 1-based rows. In 0-based rows that is row ``2k`` = sin and ``2k+1`` = cos
    with ``i = k + 1``, so the first frequency is ``l_max^(-2/d_e)``, not 1. Positions stay
    0-based as everywhere in the code (the angle uses the code's ``t``), so both variants agree
    at position 0 and differ only in their frequencies. Because the base is ``l_max``, a longer
    table changes every frequency: "Where positions act" measures what that does.
    """
    l_max = validate.positive_int(l_max, "l_max")
    validate.table_size(validate.positive_int(d_e, "d_e"), l_max, ("d_e", "l_max"), validate.PYTHON_TABLE_LIMIT)
    if l_max < 2:
        raise ValueError(f"paper_positions uses l_max as the base, which must be > 1; got l_max = {l_max}")
    return _sinusoid_table(d_e, l_max, float(l_max), first_i=1)
