"""Check your own answer: feedback that says what is right, what is wrong, and the likely cause.

Used in the exercises of chapters 2, 5, 6 and 8; any learner can call them in a notebook::

    from tokvec.course import feedback
    feedback.on_sinusoidal_table(my_table)          # (positions, d_model), rows are positions
    feedback.on_embedding_output(my_out, ids, weight)
    feedback.on_encoded_ids(my_ids, tokens, vocab)

Each returns a :class:`Feedback`, which is truthy when the answer is right and prints as one
readable message, for example "your table matches the reference for positions 0-5 ... column 3
has the wrong frequency: it fits omega = 0.1, the reference uses omega = 0.01".
The checks compare against the package's own reference code and never modify the answer.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from tokvec.arrays import sinusoidal_table_numpy
from tokvec.course.display import PAGE_WIDTH, fit

__all__ = ["Feedback", "on_embedding_output", "on_encoded_ids", "on_sinusoidal_table"]


@dataclass(frozen=True)
class Feedback:
    """The verdict on one answer: ``ok`` and a message written for the learner."""

    ok: bool
    message: str

    def __bool__(self) -> bool:
        return self.ok

    def __str__(self) -> str:
        # narrower than the page, so that a short label printed before it still fits
        return fit(("Correct: " if self.ok else "Not yet: ") + self.message, width=PAGE_WIDTH - 12)

    __repr__ = __str__


def _as_array(answer, name: str) -> np.ndarray:
    if hasattr(answer, "detach"):                       # a torch tensor, on any device
        answer = answer.detach().cpu().double().numpy()
    try:
        return np.asarray(answer, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a list of lists, a NumPy array or a tensor of numbers, "
                        f"got {type(answer).__name__}") from None


def _ranges(indices) -> str:
    """[0, 1, 2, 5] -> '0-2, 5'."""
    indices = sorted(int(i) for i in indices)
    if not indices:
        return "none"
    out, start = [], indices[0]
    for a, b in zip(indices, indices[1:] + [None]):
        if b != a + 1:
            out.append(f"{start}" if start == a else f"{start}-{a}")
            start = b
    return ", ".join(out)


def _fit_omega(values: np.ndarray, wave, candidates: np.ndarray) -> float:
    t = np.arange(len(values))
    errors = [np.abs(wave(t * w) - values).max() for w in candidates]
    return float(candidates[int(np.argmin(errors))]), float(min(errors))


def on_sinusoidal_table(table, *, base: float = 10000.0, atol: float = 1e-6) -> Feedback:
    """Check a sinusoidal positional table of shape ``(positions, d_model)`` (rows are positions).

    Column ``2i`` must be ``sin(t * omega_i)`` and column ``2i+1`` ``cos(t * omega_i)`` with
    ``omega_i = base^(-2i/d_model)``. On a mismatch the feedback names the positions that match,
    the first wrong column, and the likely cause: a transposed table (the paper's ``W_p`` is
    ``d x l``), positions counted from 1 (the reference shifted by one position), sine and cosine
    swapped, a column left at zero (a discarded update), or a wrong frequency (with the frequency
    the column actually has, and which base would give it).
    """
    A = _as_array(table, "table")
    if A.ndim != 2 or 0 in A.shape:
        return Feedback(False, f"the table must be 2-D (positions, d_model), got shape {A.shape}")
    L, d = A.shape
    ref = sinusoidal_table_numpy(L, d, base)
    if np.allclose(A, ref, rtol=0, atol=atol):
        return Feedback(True, f"all {L} positions x {d} columns match the reference (base {base:g}) to {atol:g}")
    if d != L and d > 1 and np.allclose(A.T, sinusoidal_table_numpy(d, L, base), rtol=0, atol=atol):
        return Feedback(False, f"this is the table transposed: shape {A.shape} holds the paper's W_p "
                               f"(d_e x l_max); rows must be positions, so use table.T (shape {(d, L)})")
    if np.allclose(A, sinusoidal_table_numpy(L + 1, d, base)[1:], rtol=0, atol=atol):
        return Feedback(False, f"positions are counted from 1: your table is the reference shifted by one "
                               f"position (row t holds position t + 1, so position 0, every sine 0 and every "
                               f"cosine 1, is missing); count from 0: range({L}), not range(1, {L + 1})")
    wrong = ~np.isclose(A, ref, rtol=0, atol=atol)
    bad_rows, bad_cols = np.nonzero(wrong.any(axis=1))[0], np.nonzero(wrong.any(axis=0))[0]
    good_rows = _ranges(sorted(set(range(L)) - set(bad_rows.tolist())))
    col = int(bad_cols[0])
    pair, is_sin = col // 2, col % 2 == 0
    matches = ("no position matches the reference" if good_rows == "none" else
               f"your table matches the reference for positions {good_rows} (of 0-{L - 1})")
    head = f"{matches}; column {col} ({'sin' if is_sin else 'cos'} of pair i = {pair}) is wrong " \
           f"from position {int(np.nonzero(wrong[:, col])[0][0])}"
    values = A[:, col]
    omega = base ** (-2 * pair / d)
    t = np.arange(L)
    if np.allclose(values, 0.0, atol=atol):
        return Feedback(False, f"{head}: it is all zeros. Was the update discarded? (JAX's "
                               f"pe.at[...].set(...) returns a new array that must be kept: pe = pe.at[...].set(...))")
    other = np.cos if is_sin else np.sin
    if np.allclose(values, other(t * omega), atol=atol):
        return Feedback(False, f"{head}: it holds the {'cos' if is_sin else 'sin'} of the right angle. Sine and "
                               f"cosine are swapped: even columns 0::2 are sin, odd columns 1::2 are cos")
    if L >= 3:
        wave = np.sin if is_sin else np.cos
        candidates = np.unique(np.concatenate([np.logspace(-8, 1, 4000), [omega],
                                               [b ** (-2 * k / d) for b in (10.0, 100.0, 1000.0, 10000.0, 100000.0, L)
                                                for k in range(pair - 1, pair + 2) if k >= 0]]))
        fitted, err = _fit_omega(values, wave, candidates)
        if err <= 1e-3 and not math.isclose(fitted, omega, rel_tol=1e-6):
            hint = ""
            if pair > 0:
                implied = fitted ** (-d / (2 * pair))
                hint = f" (that is base {implied:.6g} instead of {base:g})"
            elif fitted != 1.0:
                hint = " (pair 0 must have omega = 1 whatever the base: i counts from 0)"
            return Feedback(False, f"{head}: it has the wrong frequency: it fits omega = {fitted:.6g}, the reference "
                                   f"uses omega = {omega:.6g} = {base:g}^(-2*{pair}/{d}){hint}")
    worst = float(np.abs(A - ref).max())
    return Feedback(False, f"{head}; the largest difference from the reference is {worst:.3g}")


def on_embedding_output(output, ids, weight, *, table=None, scale: float | None = None,
                     atol: float = 1e-5) -> Feedback:
    """Check an input layer's output ``weight[ids] * scale + table[:T]`` for ids ``(T,)`` or ``(B, T)``.

    ``weight`` is ``(N_V, d)``; ``table`` defaults to the sinusoidal table and ``scale`` to
    ``sqrt(d)``. Diagnoses a missing scale, missing positions, positions shifted by one, and
    a (B, T) batch flattened or transposed.
    """
    out, W = _as_array(output, "output"), _as_array(weight, "weight")
    ids = np.asarray(ids.cpu() if hasattr(ids, "cpu") else ids)
    T, d = ids.shape[-1], W.shape[1]
    P = sinusoidal_table_numpy(T + 1, d) if table is None else _as_array(table, "table")
    s = math.sqrt(d) if scale is None else scale
    expected = W[ids] * s + P[:T]
    if out.shape != expected.shape:
        hint = " (for ids of shape (B, T) the output is (B, T, d))" if ids.ndim == 2 else ""
        same_axes = out.ndim == expected.ndim and sorted(out.shape) == sorted(expected.shape)
        if out.shape == expected.shape[::-1] or same_axes:
            hint = " (the axes are in the wrong order: rows are tokens, columns are features)"
        return Feedback(False, f"the output has shape {out.shape}, expected {expected.shape}{hint}")
    if np.allclose(out, expected, rtol=0, atol=atol):
        return Feedback(True, f"output {out.shape} matches weight[ids] * {s:.4g} + PE[:T] to {atol:g}")
    causes = [("the token vectors are not scaled: multiply by sqrt(d_model) = " f"{s:.4g}", W[ids] + P[:T]),
              ("the positional table is missing: add PE[:T]", W[ids] * s),
              ("positions are shifted by one: position t must use row t of the table, starting at 0",
               W[ids] * s + P[1:T + 1] if len(P) > T else None),
              ("the positions were scaled too: compute emb * sqrt(d) first, then add PE",
               (W[ids] + P[:T]) * s)]
    for cause, candidate in causes:
        if candidate is not None and candidate.shape == out.shape and np.allclose(out, candidate, rtol=0, atol=atol):
            return Feedback(False, cause)
    wrong = ~np.isclose(out, expected, rtol=0, atol=atol).all(axis=-1)
    where = [tuple(int(i) for i in w) for w in np.argwhere(wrong)[:3]]
    return Feedback(False, f"{int(wrong.sum())} of {wrong.size} token vectors differ, first at index {where}; "
                           f"the largest difference is {float(np.abs(out - expected).max()):.3g}")


def on_encoded_ids(answer, tokens, vocab) -> Feedback:
    """Check token ids ``answer`` for ``tokens`` against a :class:`tokvec.vocab.Vocabulary`.

    Diagnoses a different length, unknown tokens not mapped to ``<unk>``, ids off by one,
    and ids counted per sentence (``enumerate``) rather than looked up in the vocabulary.
    """
    expected = vocab.encode(tokens)
    got = list(answer.tolist() if hasattr(answer, "tolist") else answer)
    if got == expected:
        return Feedback(True, f"all {len(expected)} ids match the vocabulary")
    if len(got) != len(expected):
        return Feedback(False, f"{len(got)} ids for {len(tokens)} tokens: one id per token")
    if all(isinstance(g, int) and g == e + 1 for g, e in zip(got, expected)):
        return Feedback(False, "every id is one too large: ids are 0-based row numbers")
    if got == list(range(len(tokens))):
        return Feedback(False, "the ids are positions 0, 1, 2, ... in this sentence (enumerate), not the "
                               "tokens' rows in the vocabulary: a repeated word must get the same id")
    i = next(k for k, (g, e) in enumerate(zip(got, expected)) if g != e)
    unk = vocab.encode(["<unk>"])[0] if "<unk>" in vocab else None
    if expected[i] == unk:
        return Feedback(False, f"token {i} ({tokens[i]!r}) is not in the vocabulary, so its id is {unk} "
                               f"(<unk>); you gave {got[i]!r}")
    return Feedback(False, f"ids 0-{i - 1} match; token {i} ({tokens[i]!r}) has id {expected[i]}, you gave {got[i]!r}"
                    if i else f"token 0 ({tokens[0]!r}) has id {expected[0]}, you gave {got[0]!r}")
