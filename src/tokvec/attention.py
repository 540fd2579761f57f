"""Where positions act: attention scores, rotary positions (RoPE) and ALiBi.

Taught in chapter 11, "Where positions act" (``11_positions_in_attention``); chapter 12
(``12_position_experiment``) trains tiny models with each scheme (:mod:`tokvec.experiment`).

Shapes follow PyTorch's attention: queries and keys are ``(..., T, d_head)``, with any leading
dimensions (batch, heads); scores are ``(..., T_q, T_k)``. Three functions and one table:

* :func:`scores`: ``q @ k^T / sqrt(d_head)``, the numbers a softmax turns into attention weights;
* :func:`rope`: rotary position embedding (Su et al., 2021), in both pairings used in practice;
* :func:`alibi_slopes` and :func:`alibi_bias`: attention with linear biases (Press et al., 2022).

Rotation angles are computed in float64 and rounded once: in float32, ``m * theta`` at position
``m = 4096`` is rounded by up to ``2.4e-4`` radians, an error that RoPE implementations which
stay in float32 pass on to every rotated feature.
"""

from __future__ import annotations

import math
import numbers

import torch

from tokvec import validate

__all__ = ["alibi_bias", "alibi_slopes", "rope", "scores"]

#: The most heads :func:`alibi_slopes` accepts: beyond about 2**26 neighbouring float32 slopes
#: would round to the same number.
_MAX_HEADS = 2**20


def _tensor(value: object, name: str, shape_hint: str) -> torch.Tensor:
    """A floating-point tensor with at least two dimensions, ``(..., T, d)``."""
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor of shape {shape_hint}, got {type(value).__name__}; "
                        f"wrap it, e.g. torch.tensor({name}, dtype=torch.float32)")
    if not value.dtype.is_floating_point:
        raise TypeError(f"{name} must have a floating-point dtype, got {value.dtype}; "
                        f"convert it, e.g. {name}.float()")
    if value.ndim < 2:
        raise ValueError(f"{name} must have shape {shape_hint} (at least 2 dimensions), got shape "
                         f"{tuple(value.shape)}; add a sequence dimension, e.g. {name}.unsqueeze(0)")
    return value


def scores(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """Attention scores ``q @ k^T / sqrt(d_head)``: shape ``(..., T_q, T_k)``.

    ``q`` is ``(..., T_q, d_head)`` and ``k`` is ``(..., T_k, d_head)``; leading dimensions
    broadcast. Entry ``[..., i, j]`` says how much query ``i`` matches key ``j``; dividing by
    ``sqrt(d_head)`` keeps the scores of random unit-variance vectors at unit variance, so that
    the softmax that follows does not saturate (Vaswani et al., 2017, section 3.2.1).
    """
    q = _tensor(q, "q", "(..., T_q, d_head)")
    k = _tensor(k, "k", "(..., T_k, d_head)")
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(f"q and k must have the same last dimension d_head, got q {tuple(q.shape)} and "
                         f"k {tuple(k.shape)}; project both to the same head size")
    return q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])


def _positions(positions: object, T: int) -> torch.Tensor:
    if not isinstance(positions, torch.Tensor):
        raise TypeError(f"positions must be a 1-D integer torch.Tensor of length T = {T} or None, got "
                        f"{type(positions).__name__}; e.g. positions=torch.arange({T})")
    if positions.dtype.is_floating_point or positions.dtype.is_complex or positions.dtype == torch.bool:
        raise TypeError(f"positions must have an integer dtype, got {positions.dtype}; positions count "
                        f"tokens, convert with positions.long()")
    if positions.ndim != 1 or positions.shape[0] != T:
        raise ValueError(f"positions must have shape (T,) = ({T},), one position per row of x along "
                         f"dim -2, got shape {tuple(positions.shape)}")
    return positions


def rope(x: torch.Tensor, positions: torch.Tensor | None = None, *, base: float = 10000.0,
         interleaved: bool = True) -> torch.Tensor:
    """Rotary position embedding: rotate pairs of features of ``x`` by position-dependent angles.

    ``x`` is ``(..., T, d)`` with ``d`` even; ``positions`` is a 1-D integer tensor of length
    ``T`` (default ``arange(T)``), applied along dim -2. With ``theta_i = base**(-2i/d)`` for
    ``i = 0 .. d/2-1``, the row at position ``m`` has pair ``i`` rotated by the angle
    ``m * theta_i``:

    * ``interleaved=True`` (the RoFormer paper, GPT-J, Meta's original Llama code) pairs
      features ``(2i, 2i+1)``: ``out[2i] = x[2i] cos - x[2i+1] sin``,
      ``out[2i+1] = x[2i+1] cos + x[2i] sin``;
    * ``interleaved=False`` (GPT-NeoX, Hugging Face's Llama and Qwen: "rotate half") pairs
      features ``(i, i + d/2)`` with the same formulas.

    Applied to queries and keys, the score of a query at ``m`` and a key at ``n`` depends on the
    positions only through ``m - n``. Frequencies and angles are computed in float64; the
    result has ``x``'s dtype and device. ``x`` is never modified.
    """
    x = _tensor(x, "x", "(..., T, d)")
    T, d = x.shape[-2], x.shape[-1]
    if d % 2:
        raise ValueError(f"the last dimension of x (d = {d}) must be even: RoPE rotates features in "
                         f"pairs; use an even head size")
    positions = torch.arange(T) if positions is None else _positions(positions, T)
    base = validate.base(base)
    validate.flag(interleaved, "interleaved")

    half = d // 2
    theta = base ** (-2.0 * torch.arange(half, dtype=torch.float64) / d)        # (d/2,)
    angles = positions.to("cpu", torch.float64)[:, None] * theta[None, :]       # (T, d/2), exact to 1e-16
    work = torch.promote_types(x.dtype, torch.float32)   # bfloat16/float16 rotate in float32, round once
    if x.device.type == "mps":
        work = torch.float32                             # MPS has no float64
    cos = angles.cos().to(x.device, work)
    sin = angles.sin().to(x.device, work)
    xw = x.to(work)
    if interleaved:
        first, second = xw[..., 0::2], xw[..., 1::2]
    else:
        first, second = xw[..., :half], xw[..., half:]
    out_first = first * cos - second * sin
    out_second = second * cos + first * sin
    if interleaved:
        out = torch.stack((out_first, out_second), dim=-1).flatten(-2)
    else:
        out = torch.cat((out_first, out_second), dim=-1)
    return out.to(x.dtype)


def _n_heads(n_heads: object) -> int:
    if isinstance(n_heads, bool) or not isinstance(n_heads, numbers.Integral):
        raise TypeError(f"n_heads must be an int >= 1, got {type(n_heads).__name__} {n_heads!r:.40}")
    if n_heads < 1:
        raise ValueError(f"n_heads must be an int >= 1 (one slope per attention head), got {n_heads}")
    if n_heads > _MAX_HEADS:
        raise ValueError(f"n_heads = {validate._short(n_heads)} is more than the {_MAX_HEADS:,} heads this "
                         f"function accepts (models use 1 to 128); check n_heads")
    return int(n_heads)


def _power_of_two_slopes(n: int) -> list[float]:
    """``2**(-8/n), 2**(-16/n), ..., 2**(-8)``: the geometric sequence of Press et al. for ``n = 2**k``."""
    return [2.0 ** (-8.0 * (h + 1) / n) for h in range(n)]


def alibi_slopes(n_heads: int) -> torch.Tensor:
    """The ALiBi slope of each head, shape ``(n_heads,)``, float32 (Press et al., 2022).

    For ``n_heads`` a power of two, head ``h = 1..n`` gets ``2**(-8h/n)``: for 8 heads
    ``1/2, 1/4, ..., 1/256``. For other head counts the paper's code takes the slopes of the
    largest power of two ``p < n_heads`` and adds every other slope of ``2p`` heads (the ones
    that fall between them) until there are ``n_heads``.
    """
    n = _n_heads(n_heads)
    p = 2 ** int(math.floor(math.log2(n)))
    slopes = _power_of_two_slopes(p)
    if p < n:
        slopes += _power_of_two_slopes(2 * p)[0::2][: n - p]
    return torch.tensor(slopes, dtype=torch.float64).to(torch.float32)


def alibi_bias(n_heads: int, T: int) -> torch.Tensor:
    """The causal ALiBi bias, shape ``(n_heads, T, T)``, float32, added to the attention scores.

    ``bias[h, i, j] = -slope[h] * (i - j)`` for keys ``j <= i`` (a penalty that grows linearly
    with the distance back) and ``-inf`` for ``j > i`` (the future is masked).
    """
    n = _n_heads(n_heads)
    T = validate.positive_int(T, "T")
    validate.table_size(n * T, T, ("n_heads * T", "T"), validate.ARRAY_TABLE_LIMIT)
    slopes = alibi_slopes(n).to(torch.float64)
    i = torch.arange(T, dtype=torch.float64)
    offset = i[None, :] - i[:, None]                    # (T, T): j - i, so 0.0 (not -0.0) on the diagonal
    bias = slopes[:, None, None] * offset               # float64, then one rounding to float32
    bias = bias.masked_fill(offset > 0, float("-inf"))
    return bias.to(torch.float32)
