"""Tests of chapter 5's exercises, read by tokvec.course.grading (see its docstring).

Each section's visible tests go into the student notebook under the exercise; the hidden
ones only into the grader's copy. The names the tests use are the student's
(``defines``) and the chapter's own (``W_e``, ``W_p``, ``x``, ``embed``,
``sinusoidal_positions``...). The tests' own names start with ``_`` so that they never
replace a name of the chapter.
"""
# ruff: noqa: F821 (the names are defined by the notebook the tests run in)

# %% alg2-ex-xt | points: 2 | defines: embed_buggy, reordered
with check("embed_buggy(x, W_e, W_p) adds W_e[:, x[t]] and W_p[:, x[t]]"):
    import math as _math

    def _close(_a, _b):
        """Two lists of vectors equal to 1e-12, entry by entry."""
        return len(_a) == len(_b) and all(
            len(_u) == len(_w) and all(_math.isclose(_p, _q, abs_tol=1e-12)
                                       for _p, _q in zip(_u, _w))
            for _u, _w in zip(_a, _b))

    _ids = [3, 0, 5, 5]
    _want = [[_a + _b for _a, _b in zip(token_embedding(_v, W_e),
                                        positional_embedding(_v, W_p))] for _v in _ids]
    assert _close(embed_buggy(_ids, W_e, W_p), _want), "column x[t] of both W_e and W_p"
with check("on the walkthrough's sample [0, 1, 2] it agrees with embed"):
    assert _close(embed_buggy([0, 1, 2], W_e, W_p), embed([0, 1, 2], W_e, W_p))
with check("reordered is an input where embed_buggy and embed differ"):
    _right_e = embed(reordered, W_e, W_p)
    try:
        _bug = embed_buggy(reordered, W_e, W_p)
    except IndexError:                  # an id past l_max - 1: differs too
        _bug = None
    assert _bug is None or not _close(_bug, _right_e), (
        "choose ids that are not equal to their positions")
# %% hidden
with check("on other matrices it still reads the position column by token id"):
    _We, _Wp = random_matrix(3, 10, seed=5), random_matrix(3, 10, seed=6)
    _ids = [9, 0, 4, 4, 7]
    _want = [[_a + _b for _a, _b in zip(token_embedding(_v, _We),
                                        positional_embedding(_v, _Wp))] for _v in _ids]
    assert _close(embed_buggy(_ids, _We, _Wp), _want)
    assert _close(embed_buggy(_ids, _We, _Wp)[2:4], [_want[2], _want[2]])
with check("an id past l_max - 1 raises an IndexError, as 'cat' (36) does"):
    try:
        embed_buggy([36], W_e, W_p)
    except IndexError:
        pass
    else:
        raise AssertionError("W_p has 16 columns: id 36 must raise")

# %% alg2-ex-one-based | points: 2 | defines: W_p_small, used, attempts
with check("W_p_small: a learned W_p; used: the positions read before the IndexError"):
    _n = len(W_p_small[0])
    assert isinstance(used, list) and used, (
        "used: a list of the positions t that worked")
    assert all(isinstance(_t, int) and 0 <= _t < _n for _t in used), (
        "used: the positions t for which positional_embedding(t, W_p_small) returned")
    assert used == list(range(used[0], used[0] + len(used))), "in the loop's order"
with check("attempts['right'] is Vaswani's table for d_e = 8, l_max = 64"):
    import math as _math

    import numpy as _np

    _right = _np.array(sinusoidal_positions(8, 64))
    assert _np.shape(attempts["right"]) == (8, 64), "d_e rows, one column per position"
    assert _np.allclose(attempts["right"], _right, rtol=0, atol=1e-9)
with check("attempts['t from 1']: column t holds position t + 1"):
    _shifted = _np.array(sinusoidal_positions(8, 65))[:, 1:]
    assert _np.shape(attempts["t from 1"]) == (8, 64)
    assert _np.allclose(attempts["t from 1"], _shifted, rtol=0, atol=1e-9)
with check("attempts['i from 1']: positions from 0, pairs from i = 1"):
    _om = frequencies(8, first_i=1)
    _want = [[_f(_t * _w) for _t in range(64)] for _w in _om
             for _f in (_math.sin, _math.cos)]
    assert _np.shape(attempts["i from 1"]) == (8, 64)
    assert _np.allclose(attempts["i from 1"], _want, rtol=0, atol=1e-9)
# %% hidden
with check("column 0 is never used, and the last paper position is out of range"):
    _n = len(W_p_small[0])
    assert 0 not in used and len(used) == _n - 1
    try:
        positional_embedding(_n, W_p_small)
    except IndexError:
        pass
    else:
        raise AssertionError("W_p_small must have exactly len(used) + 1 columns")
with check("the feedback accepts the right table and names the shift"):
    from tokvec.course import feedback as _feedback
    from tokvec.reference import transpose as _transpose

    _tables = {_k: [list(map(float, _r)) for _r in attempts[_k]] for _k in attempts}
    assert _feedback.on_sinusoidal_table(_transpose(_tables["right"]))
    _msg = _feedback.on_sinusoidal_table(_transpose(_tables["t from 1"])).message
    assert "counted from 1" in _msg
    assert not _feedback.on_sinusoidal_table(_transpose(_tables["i from 1"]))

# %% alg2-ex-count | points: 2 | defines: learned, token_table, d_e_bert, l_max_bert
with check("learned, token_table, d_e_bert and l_max_bert are positive ints"):
    _counts = (learned, token_table, d_e_bert, l_max_bert)
    assert all(type(_c) is int and _c > 0 for _c in _counts), (      # an int, not a subclass
        f"types {[type(_c).__name__ for _c in _counts]}: count in whole numbers")
with check("learned and token_table count whole vectors of GPT-2's d_e = 768"):
    assert learned % 768 == 0, "learned: one vector of d_e numbers per position"
    assert token_table % 768 == 0, "token_table: one vector of d_e numbers per token"
# %% hidden
with check("the counts are exact: GPT-2's W_p, W_e and BERT-base's W_p"):
    import math as _math

    assert learned == 768 * 1024, "learned: d_e x l_max of GPT-2"
    assert token_table == 768 * 50257, "token_table: d_e x N_V of GPT-2"
    assert (d_e_bert, l_max_bert) == (768, 512)
    assert learned == 786_432 and d_e_bert * l_max_bert == 393_216
    assert token_table == 38_597_376
    assert _math.isclose(learned / token_table, 1024 / 50257)
