"""Check your own answer: feedback that says what is right, what is wrong, and the likely cause.

Used in the exercises of chapters 2, 5, 7 and 8; any learner can call them in a notebook::

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


def _narrow_float(answer) -> tuple[float, str] | None:
    """(machine epsilon, dtype name) of ``answer`` when its dtype is a float narrower than float64."""
    dtype = getattr(answer, "dtype", None)
    if dtype is None:
        return None
    if hasattr(answer, "detach"):                       # a torch tensor
        import torch
        if not dtype.is_floating_point:
            return None
        eps, name = float(torch.finfo(dtype).eps), str(dtype).removeprefix("torch.")
    else:
        if not np.issubdtype(np.dtype(dtype), np.floating):
            return None
        eps, name = float(np.finfo(dtype).eps), np.dtype(dtype).name
    return (eps, name) if eps > np.finfo(np.float64).eps else None


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


def _fit_omega(values: np.ndarray, wave, candidates: np.ndarray) -> tuple[float, float]:
    t = np.arange(len(values))
    errors = [np.abs(wave(t * w) - values).max() for w in candidates]
    return float(candidates[int(np.argmin(errors))]), float(min(errors))


def _float_tolerance(length: int, d_model: int, base: float, eps: float, atol: float, shift: int = 0) -> np.ndarray:
    """Per entry, what computing the angles in a narrow float costs, and never less than ``atol``.

    In a float of machine epsilon ``eps``, ``omega_i = exp(-2i ln(base) / d)`` is off by a relative
    ``eps * (|ln omega_i| + 1)`` (the exponent is rounded twice, exp once), the angle ``t * omega_i``
    by another half ``eps``, and sin or cos of it by about ``eps`` more: at most
    ``eps * (t * omega_i * (|ln omega_i| + 1.5) + 1)``. The tolerance is twice that bound; the usual
    float32 recipes reach about two thirds of the bound (1.2e-4 at 2048 x 512).
    """
    t = np.arange(shift, length + shift, dtype=np.float64)[:, None]
    omega = np.repeat(base ** (-np.arange(0, d_model, 2, dtype=np.float64) / d_model), 2)[:d_model]
    bound = eps * (t * omega * (np.abs(np.log(omega)) + 1.5) + 1.0)
    return np.maximum(2.0 * bound, atol)


def _element_index_table(length: int, d_model: int, base: float) -> np.ndarray:
    """Column j is sin (j even) or cos (j odd) of ``t * base^(-j/d)``: the element index j in the exponent."""
    t = np.arange(length, dtype=np.float64)[:, None]
    angle = t * base ** (-np.arange(d_model, dtype=np.float64) / d_model)
    return np.where(np.arange(d_model) % 2 == 0, np.sin(angle), np.cos(angle))


def _halves_table(length: int, d_model: int, base: float, *, tensor2tensor: bool) -> np.ndarray:
    """The ``[sin | cos]`` layout of released code: every sine column first, then every cosine.

    ``tensor2tensor=True``: tensor2tensor's ``get_timing_signal_1d`` and fairseq's
    ``SinusoidalPositionalEmbedding`` (which says it "matches the implementation in tensor2tensor,
    but differs slightly from the description in Section 3.5"): ``d // 2`` frequencies
    ``omega_i = base^(-i/(d//2 - 1))``, so the slowest wavelength is exactly ``2 pi base``, and a
    zero column appended when ``d`` is odd. ``tensor2tensor=False``: Hugging Face's Marian, the
    formula's ``omega_i = base^(-2i/d)``, ``ceil(d/2)`` sines then ``floor(d/2)`` cosines.
    """
    t = np.arange(length, dtype=np.float64)[:, None]
    if tensor2tensor:
        half = d_model // 2
        omega = base ** (-np.arange(half, dtype=np.float64) / (half - 1))
        return np.concatenate([np.sin(t * omega), np.cos(t * omega), np.zeros((length, d_model % 2))], axis=1)
    omega = base ** (-np.arange(0, d_model, 2, dtype=np.float64) / d_model)
    return np.concatenate([np.sin(t * omega), np.cos(t * omega[: d_model // 2])], axis=1)


def _released_convention(A: np.ndarray, base: float, tol: float) -> str | None:
    """Name the convention of released code that ``A`` follows, if it is one the reference does not use."""
    L, d = A.shape

    def close(candidate, rows=slice(None), cols=slice(None)):
        return bool(np.all(np.abs(A[rows, cols] - candidate[rows]) <= tol))

    interleaved = (f"The reference interleaves, column 2i = sin and 2i+1 = cos of t * {base:g}^(-2i/d), as the "
                   f"formula of Vaswani et al. does; a model reads only the layout it was trained with")
    if d >= 4:
        t2t = _halves_table(L, d, base, tensor2tensor=True)
        zero_rows = np.nonzero(np.all(np.abs(A) <= tol, axis=1))[0]
        kept = np.setdiff1d(np.arange(L), zero_rows)
        padded = " and a zero last column (d is odd)" if d % 2 else ""
        head = (f"a convention of released code, not the formula's: all sines first (columns 0-{d // 2 - 1}), "
                f"then all cosines{padded}, with omega_i = {base:g}^(-i/(d/2 - 1)), so the slowest wavelength "
                f"is exactly 2 pi {base:g}: tensor2tensor's get_timing_signal_1d and fairseq's "
                f"SinusoidalPositionalEmbedding. ")
        if close(t2t):
            return head + interleaved
        if 0 < len(zero_rows) < L and 0 not in zero_rows and close(t2t, kept):
            return (head + f"Row {_ranges(zero_rows)} is zeros, as in fairseq, which zeroes the row of "
                    f"padding_idx and numbers real positions from padding_idx + 1 (its first token reads row "
                    f"{int(zero_rows[0]) + 1}). " + interleaved)
    if d >= 3 and close(_halves_table(L, d, base, tensor2tensor=False)):
        return (f"a convention of released code, not the formula's: the formula's frequencies, but all sines "
                f"first (columns 0-{(d + 1) // 2 - 1}), then all cosines, as Hugging Face's Marian sinusoids. "
                + interleaved)
    if d % 2 and d >= 3 and np.all(np.abs(A[:, -1]) <= tol):
        for which, rest in (("match the reference", sinusoidal_table_numpy(L, d, base)[:, :-1]),
                            (f"are the table for d = {d - 1}", sinusoidal_table_numpy(L, d - 1, base))):
            if close(rest, cols=slice(0, d - 1)):
                return (f"columns 0-{d - 2} {which} and the last one, {d - 1}, is all zeros: the zero-padding "
                        f"convention for an odd d_model (tensor2tensor and fairseq pad their tables with one zero "
                        f"column), not a discarded update. The reference keeps the sine of the last pair there "
                        f"instead; either works if training and inference use the same one")
    return None


def on_sinusoidal_table(table, *, base: float = 10000.0, atol: float = 1e-6) -> Feedback:
    """Check a sinusoidal positional table of shape ``(positions, d_model)`` (rows are positions).

    Column ``2i`` must be ``sin(t * omega_i)`` and column ``2i+1`` ``cos(t * omega_i)`` with
    ``omega_i = base^(-2i/d_model)``. On a mismatch the feedback names the positions that match,
    the first wrong column, and the likely cause: a transposed table (the paper's ``W_p`` is
    ``d x l``), positions counted from 1 (the reference shifted by one position), the element
    index ``j`` in the exponent instead of the pair's ``2i`` (every cosine column gets the
    frequency of the next pair's sine), sine and cosine swapped, a column left at zero (a
    discarded update), or a wrong frequency (with the frequency the column actually has, and
    which base would give it). The conventions of released code that differ from the formula are
    named as conventions, not as bugs: the ``[sin | cos]`` layout of tensor2tensor and fairseq
    (with fairseq's zeroed padding row) and of Hugging Face's Marian, and a zero last column for an
    odd ``d_model``. Positions counted from 1 are Phuong & Hutter's numbering; the reference counts
    from 0, as Vaswani et al. and tensor2tensor do.

    A float32 (or narrower) table is allowed the error of computing its angles in that float,
    which grows with the position (about 1e-4 at position 2048); the verdict says so.
    """
    narrow = _narrow_float(table)
    eps = None if narrow is None else narrow[0]
    A = _as_array(table, "table")
    if A.ndim != 2 or 0 in A.shape:
        return Feedback(False, f"the table must be 2-D (positions, d_model), got shape {A.shape}")
    L, d = A.shape
    tol = np.full((L, d), float(atol)) if eps is None else _float_tolerance(L, d, base, eps, atol)

    def close(candidate, tolerance=tol):
        return candidate.shape == A.shape and bool(np.all(np.abs(A - candidate) <= tolerance))

    ref = sinusoidal_table_numpy(L, d, base)
    if close(ref):
        worst = float(np.abs(A - ref).max())
        if worst <= atol:
            return Feedback(True, f"all {L} positions x {d} columns match the reference (base {base:g}) to {atol:g}")
        t_worst = int(np.unravel_index(np.argmax(np.abs(A - ref)), A.shape)[0])
        name = narrow[1]
        return Feedback(True, f"all {L} positions x {d} columns match the reference (base {base:g}) within {name} "
                              f"rounding: the largest difference, {worst:.2g} at position {t_worst}, is what angles "
                              f"t * omega computed in {name} cost there (allowed here: up to {float(tol.max()):.2g}, "
                              f"growing with t); a table computed in float64 and rounded once is within {eps / 4:.1g}")
    if d != L and d > 1:
        tol_t = np.full((d, L), float(atol)) if eps is None else _float_tolerance(d, L, base, eps, atol)
        if np.all(np.abs(A.T - sinusoidal_table_numpy(d, L, base)) <= tol_t):
            return Feedback(False, f"this is the table transposed: shape {A.shape} holds the paper's W_p "
                                   f"(d_e x l_max); rows must be positions, so use table.T (shape {(d, L)})")
    tol_1 = tol if eps is None else _float_tolerance(L, d, base, eps, atol, shift=1)
    if close(sinusoidal_table_numpy(L + 1, d, base)[1:], tol_1):
        return Feedback(False, f"positions are counted from 1: your table is the reference shifted by one "
                               f"position (row t holds position t + 1, so position 0, every sine 0 and every "
                               f"cosine 1, is missing). That is Phuong and Hutter's numbering (positions "
                               f"1..l_max, stored 0-based); the reference counts from 0, as Vaswani et al. and "
                               f"tensor2tensor do. For a model trained 0-based, count from 0: range({L}), not "
                               f"range(1, {L + 1})")
    convention = _released_convention(A, base, max(float(atol), float(tol.max())))
    if convention is not None:
        return Feedback(False, convention)
    wrong = np.abs(A - ref) > tol
    bad_rows, bad_cols = np.nonzero(wrong.any(axis=1))[0], np.nonzero(wrong.any(axis=0))[0]
    good_rows = _ranges(sorted(set(range(L)) - set(bad_rows.tolist())))
    col = int(bad_cols[0])
    pair, is_sin = col // 2, col % 2 == 0
    matches = ("no position matches the reference" if good_rows == "none" else
               f"your table matches the reference for positions {good_rows} (of 0-{L - 1})")
    head = f"{matches}; column {col} ({'sin' if is_sin else 'cos'} of pair i = {pair}) is wrong " \
           f"from position {int(np.nonzero(wrong[:, col])[0][0])}"
    if d > 1:
        for b in dict.fromkeys([base, 10000.0, 1000.0, float(L), float(d)]):
            if b > 1 and close(_element_index_table(L, d, b)):
                other_base = "" if b == base else f"; it also uses base {b:g} instead of {base:g}"
                return Feedback(False, f"{head}: the exponent uses the element index j instead of the pair index "
                                       f"2i. Each cosine column j = 2i+1 gets omega = base^(-(2i+1)/d), not its "
                                       f"sine's base^(-2i/d), so sine and cosine of a pair have different "
                                       f"frequencies (sin^2 + cos^2 != 1): use 2i = j - j % 2, e.g. "
                                       f"arange(0, d, 2), for both columns of a pair{other_base}")
    values = A[:, col]
    omega = base ** (-2 * pair / d)
    t = np.arange(L)
    if np.all(np.abs(values) <= tol[:, col]):
        everything = " (so is the whole table)" if np.all(np.abs(A) <= tol) else ""
        return Feedback(False, f"{head}: it is all zeros{everything}. Was the update discarded? (JAX's "
                               f"pe.at[...].set(...) returns a new array that must be kept: pe = pe.at[...].set(...))")
    other = np.cos if is_sin else np.sin
    if np.all(np.abs(values - other(t * omega)) <= tol[:, col]):
        return Feedback(False, f"{head}: it holds the {'cos' if is_sin else 'sin'} of the right angle. Sine and "
                               f"cosine are swapped: even columns 0::2 are sin, odd columns 1::2 are cos")
    if L >= 3:
        wave = np.sin if is_sin else np.cos
        candidates = np.unique(np.concatenate([np.logspace(-8, 1, 4000), [omega],
                                               [b ** (-2 * k / d) for b in (10.0, 100.0, 1000.0, 10000.0, 100000.0, L)
                                                for k in range(pair - 1, pair + 2) if k >= 0]]))
        fitted, err = _fit_omega(values, wave, candidates)
        if err <= max(1e-3, float(tol[:, col].max())) and not math.isclose(fitted, omega, rel_tol=1e-6):
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
    a (B, T) batch flattened or transposed. A weight in the paper's ``(d, N_V)`` layout (``W_e``,
    one column per token) is named as such and read as ``weight.T``; ids, weights and tables of
    any other wrong shape get a message instead of an error.
    """
    out, W = _as_array(output, "output"), _as_array(weight, "weight")
    ids = np.asarray(ids.cpu() if hasattr(ids, "cpu") else ids)
    if ids.ndim not in (1, 2) or ids.size == 0 or not np.issubdtype(ids.dtype, np.integer):
        return Feedback(False, f"ids must be a non-empty array of integers of shape (T,) or (B, T), "
                               f"got shape {ids.shape} of {ids.dtype}")
    if W.ndim != 2 or 0 in W.shape:
        return Feedback(False, f"weight must be 2-D, (N_V, d): one row per token, got shape {W.shape}")
    if ids.min() < 0:
        return Feedback(False, f"the ids include {int(ids.min())}: ids are rows 0 .. N_V - 1, and a negative "
                               f"id would silently wrap around to the last rows")
    top, (rows, cols) = int(ids.max()), W.shape
    # the paper's W_e is d x N_V (token v is column v); frameworks store weight = W_e^T, N_V x d
    paper = (top >= rows and top < cols) or (
        rows != cols and top < cols and out.ndim >= 1 and out.shape[-1] == rows != cols)
    note = ""
    if paper:
        note = (f"your weight is d x N_V = {W.shape}, the paper's layout W_e (token v is column v): "
                f"take column v, weight[:, v], or transpose it, weight.T[ids]")
        W = W.T
    elif top >= rows:
        return Feedback(False, f"the ids go up to {top}, but weight {W.shape} has only {rows} rows (and "
                               f"{cols} columns): weight must be (N_V, d) with a row for every id, 0 .. N_V - 1")
    T, d = ids.shape[-1], W.shape[1]
    if table is None:
        P = sinusoidal_table_numpy(T + 1, d)
    else:
        P = _as_array(table, "table")
        if P.ndim != 2:
            return Feedback(False, f"the positional table must be 2-D, (l_max, d): one row per position, "
                                   f"got shape {P.shape}")
        if P.shape[1] != d and P.shape[0] == d and P.shape[1] >= T:
            return Feedback(False, f"the positional table is {P.shape} = (d, l_max), the paper's W_p (position t "
                                   f"is column t): rows must be positions, so pass table.T")
        if P.shape[1] != d:
            return Feedback(False, f"the positional table has {P.shape[1]} columns, but the token vectors have "
                                   f"d = {d}: it must be (l_max, d), got {P.shape}")
        if P.shape[0] < T:
            return Feedback(False, f"the positional table has {P.shape[0]} rows (positions 0-{P.shape[0] - 1}), "
                                   f"but the ids have T = {T} positions: build a table of at least {T} rows")
    s = math.sqrt(d) if scale is None else scale
    expected = W[ids] * s + P[:T]
    name = "weight.T" if paper else "weight"

    def verdict(ok: bool, message: str) -> Feedback:
        return Feedback(ok, f"{message}; note: {note}" if ok and note else
                        f"{note}. Compared with {name}: {message}" if note else message)

    if out.shape != expected.shape:
        hint = " (for ids of shape (B, T) the output is (B, T, d))" if ids.ndim == 2 else ""
        same_axes = out.ndim == expected.ndim and sorted(out.shape) == sorted(expected.shape)
        if out.shape == expected.shape[::-1] or same_axes:
            hint = " (the axes are in the wrong order: rows are tokens, columns are features)"
        return verdict(False, f"the output has shape {out.shape}, expected {expected.shape}{hint}")
    if np.allclose(out, expected, rtol=0, atol=atol):
        return verdict(True, f"output {out.shape} matches {name}[ids] * {s:.4g} + PE[:T] to {atol:g}")
    causes = [("the token vectors are not scaled: multiply by sqrt(d_model) = " f"{s:.4g}", W[ids] + P[:T]),
              ("the positional table is missing: add PE[:T]", W[ids] * s),
              ("positions are shifted by one: position t must use row t of the table, starting at 0",
               W[ids] * s + P[1:T + 1] if len(P) > T else None),
              ("the positions were scaled too: compute emb * sqrt(d) first, then add PE",
               (W[ids] + P[:T]) * s)]
    for cause, candidate in causes:
        if candidate is not None and candidate.shape == out.shape and np.allclose(out, candidate, rtol=0, atol=atol):
            return verdict(False, cause)
    wrong = ~np.isclose(out, expected, rtol=0, atol=atol).all(axis=-1)
    where = [tuple(int(i) for i in w) for w in np.argwhere(wrong)[:3]]
    return verdict(False, f"{int(wrong.sum())} of {wrong.size} token vectors differ, first at index {where}; "
                          f"the largest difference is {float(np.abs(out - expected).max()):.3g}")


def _names(tokens) -> str:
    shown = ", ".join(repr(t) for t in tokens[:3])
    return shown + (f" and {len(tokens) - 3} more" if len(tokens) > 3 else "")


def _vocab_ids(vocab, tokens: list, distinct: list) -> tuple[list | None, str | None]:
    """(the ids ``vocab`` gives ``tokens``, or None; what keeps it from being the exercise's vocabulary, or None).

    The exercise's vocabulary holds every distinct token of the sentence, each at its own id, and
    nothing else is required of it: specials, extra tokens and any order are fine.
    """
    if vocab is None:
        return None, None
    if hasattr(vocab, "encode"):                         # a tokvec Vocabulary
        missing = [t for t in distinct if t not in vocab]
        try:
            got = [int(i) for i in vocab.encode(tokens, allow_specials=True)]
        except KeyError:                                # a closed vocabulary: an unknown token raises
            got = None
        if not missing:
            return got, None
        unk = getattr(vocab, "unk_token", None)
        fate = (f"so {'it becomes' if len(missing) == 1 else 'they become'} {unk} (id {vocab.unk_id})"
                if unk is not None else "so encoding the sentence raises")
        return got, (f"your vocabulary lacks {_names(missing)}, {fate}; the exercise's vocabulary holds every "
                     f"distinct token of the sentence: Vocabulary(dict.fromkeys(tokens), specials=(), "
                     f"unk_token=None) or Vocabulary.from_corpus(tokens)")
    if hasattr(vocab, "keys") and hasattr(vocab, "values"):  # a dict, token -> id
        missing = [t for t in distinct if t not in vocab]
        got = None if missing else [vocab[t] for t in tokens]
        values = list(vocab.values())
        if missing:
            return got, f"your mapping lacks {_names(missing)}: it needs an id for every distinct token"
        if sorted(values) != list(range(len(values))):
            return got, (f"your mapping has {len(values)} entries, so a table of {len(values)} rows, but its ids "
                         f"are {sorted(values)}, not 0-{len(values) - 1}: every id must be a row of the table")
        return got, None
    raise TypeError(f"vocab must be a tokvec Vocabulary or a dict from tokens to ids, got {type(vocab).__name__}")


def on_encoded_ids(answer, tokens, vocab=None) -> Feedback:
    """Check token ids ``answer`` for ``tokens`` (chapter 2's exercise on the lesson's ``enumerate``).

    The ids are judged against the exercise's intended vocabulary, not only against ``vocab``:
    right ids give every distinct token of ``tokens`` its own id, the same id wherever it occurs,
    and the ids are rows of the table, that is the distinct tokens numbered 0 .. k-1 in any order,
    or the ids of ``vocab`` when it holds every distinct token, or of
    ``Vocabulary.from_corpus(tokens)`` (the specials first). ``vocab`` may be a
    :class:`tokvec.vocab.Vocabulary`, a dict from tokens to ids, or None.

    ``tokens`` may also be a list of sentences (lists of tokens), with ``answer`` a list of id
    lists. Diagnoses the embeddings lesson's recipe (ids from positions, the later occurrence of a
    repeated word winning), ids that are positions, ids numbered per sentence, ids one too large, a
    vocabulary that lacks some of the tokens, a word with two ids and two words with one id;
    anything else gets the first id that differs.
    """
    from tokvec.vocab import Vocabulary

    sentences = [list(tokens)]
    if tokens and all(isinstance(s, (list, tuple)) for s in tokens):
        sentences = [list(s) for s in tokens]
        answer = list(answer.tolist() if hasattr(answer, "tolist") else answer)
        lengths = [len(a) if isinstance(a, (list, tuple)) or hasattr(a, "tolist") else None for a in answer]
        if lengths != [len(s) for s in sentences]:
            return Feedback(False, f"for {len(sentences)} sentences of {[len(s) for s in sentences]} tokens give "
                                   f"one list of ids per sentence, one id per token; got lengths {lengths}")
        answer = [i for a in answer for i in (a.tolist() if hasattr(a, "tolist") else a)]
    flat = [t for s in sentences for t in s]
    got = list(answer.tolist() if hasattr(answer, "tolist") else answer)
    if len(got) != len(flat):
        return Feedback(False, f"{len(got)} ids for {len(flat)} tokens: one id per token")
    bad = next((k for k, g in enumerate(got) if not isinstance(g, (int, np.integer)) or isinstance(g, bool)), None)
    if bad is not None:
        return Feedback(False, f"ids must be integers: token {bad} ({flat[bad]!r}) has {got[bad]!r}")
    got = [int(g) for g in got]
    distinct = list(dict.fromkeys(flat))
    k = len(distinct)
    vocab_ids, vocab_problem = _vocab_ids(vocab, flat, distinct)
    first = {t: i for i, t in enumerate(distinct)}
    dense = [first[t] for t in flat]                     # the chapter's fix: distinct tokens, first seen first
    corpus_ids = Vocabulary.from_corpus(flat).encode(flat, allow_specials=True) if flat else []

    ids_of, tokens_of = {}, {}
    for t, g in zip(flat, got):
        ids_of.setdefault(t, []).append(g)
        tokens_of.setdefault(g, [])
        if t not in tokens_of[g]:
            tokens_of[g].append(t)
    two_ids = [t for t in distinct if len(set(ids_of[t])) > 1]
    one_id = [g for g, ts in tokens_of.items() if len(ts) > 1]
    if not two_ids and not one_id:                       # one id per word, one word per id
        if vocab_problem is None and got == vocab_ids:
            return Feedback(True, f"all {len(got)} ids match the vocabulary")
        if sorted(set(got)) == list(range(k)):
            other = "" if vocab_ids is None or vocab_problem else (
                " (in another order than your vocabulary's: fine, as long as the table and the ids use one "
                "numbering)")
            return Feedback(True, f"the {len(got)} ids number the {k} distinct tokens 0-{k - 1}, one id per "
                                  f"word{other}")
        if got == corpus_ids:
            return Feedback(True, f"all {len(got)} ids match Vocabulary.from_corpus(tokens): the specials "
                                  f"first, then the {k} distinct tokens by frequency")

    def per_sentence(recipe) -> bool:
        start, out = 0, True
        for s in sentences:
            out &= got[start:start + len(s)] == recipe(s)
            start += len(s)
        return out

    def positions(s):
        return list(range(len(s)))

    def lesson_recipe(s):
        # the embeddings lesson's {token: idx for idx, token in enumerate(s)}
        last = {t: i for i, t in enumerate(s)}
        return [last[t] for t in s]

    def dedup(s):
        ids = {t: i for i, t in enumerate(dict.fromkeys(s))}
        return [ids[t] for t in s]

    if len(sentences) > 1 and two_ids and any(per_sentence(r) for r in (positions, lesson_recipe, dedup)):
        t = two_ids[0]
        return Feedback(False, f"ids numbered per sentence (enumerate): the same word gets different ids in "
                               f"different sentences ({t!r} has ids {sorted(set(ids_of[t]))}); number the distinct "
                               f"tokens of the whole corpus once, e.g. with Vocabulary.from_corpus, and look every "
                               f"sentence up in it")
    if got == list(range(len(flat))):
        return Feedback(False, "the ids are positions 0, 1, 2, ... in this sentence (enumerate), not the "
                               "tokens' rows in the vocabulary: a repeated word must get the same id")
    if per_sentence(lesson_recipe):
        t = next(t for t in distinct if flat.count(t) > 1)
        unused = sorted(set(range(k)) - set(got))
        return Feedback(False, f"these are the enumerate recipe's ids, "
                               f"{{token: idx for idx, token in enumerate(tokens)}}: ids "
                               f"are positions, and a repeated word is numbered again, its later position winning "
                               f"({t!r} gets {got[flat.index(t)]}). So id{'s' if len(unused) > 1 else ''} "
                               f"{_ranges(unused)} {'are' if len(unused) > 1 else 'is'} never used and the largest "
                               f"id, {max(got)}, is past the last row of a table of the {k} distinct tokens "
                               f"(rows 0-{k - 1}): number the distinct tokens, dict.fromkeys(tokens), or use "
                               f"Vocabulary")
    for ref in (dense, vocab_ids if vocab_problem is None else None, corpus_ids):
        if ref is not None and got == [e + 1 for e in ref]:
            return Feedback(False, "every id is one too large: ids are 0-based row numbers")
    if vocab_problem is not None and vocab_ids is not None and got == vocab_ids:
        return Feedback(False, f"these are your vocabulary's ids, but {vocab_problem}")
    if two_ids:
        t = two_ids[0]
        where = [i for i, u in enumerate(flat) if u == t]
        return Feedback(False, f"{t!r} has ids {sorted(set(ids_of[t]))} (at positions {where}): a repeated word "
                               f"must get the same id, the row of its one vector")
    if one_id:
        g = one_id[0]
        return Feedback(False, f"tokens {_names(tokens_of[g])} share id {g}: different tokens need different ids, "
                               f"each its own row" + (f" ({vocab_problem})" if vocab_problem else ""))
    expected = vocab_ids if vocab_ids is not None and vocab_problem is None else dense
    i = next(j for j, (g, e) in enumerate(zip(got, expected)) if g != e)
    against = "your vocabulary" if expected is vocab_ids else "the distinct tokens numbered in order of appearance"
    matched = f"ids {_ranges(range(i))} match; " if i else ""
    return Feedback(False, f"{matched}token {i} ({flat[i]!r}) has id {expected[i]} in {against}, you gave {got[i]}"
                           + (f"; {vocab_problem}" if vocab_problem else ""))
