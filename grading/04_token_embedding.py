"""Tests of chapter 4's exercises, read by tokvec.course.grading (see its docstring).

Each section's visible tests go into the student notebook under the exercise; the hidden
ones only into the grader's copy. The names the tests use are the student's
(``defines``) and the chapter's own (``W_e``, ``x``, ``vocab``, ``token_embedding``...).
The tests' own names start with ``_`` so that they never replace a name of the chapter.
"""
# ruff: noqa: F821 (the names are defined by the notebook the tests run in)

# %% alg1-ex-row | points: 2 | defines: token_embedding_buggy
with check("token_embedding_buggy(v, W_e) is the exercise's function, as written"):
    _row = token_embedding_buggy(3, W_e)
    assert list(_row) == W_e[3], "write the exercise's version as it is: return W_e[v]"
with check("on a 2 x 2 matrix, token_embedding_buggy(1, W) is W[1]"):
    assert list(token_embedding_buggy(1, [[1.0, 2.0], [3.0, 4.0]])) == [3.0, 4.0], (
        "write the exercise's version as it is: return W_e[v]")
# %% hidden
with check("'cat' and 'The' raise an IndexError on W_e, id 3 gives a row of N_V"):
    for _token in ("cat", "The"):
        try:
            token_embedding_buggy(vocab.token_to_id(_token), W_e)
        except IndexError:
            continue
        raise AssertionError(f"{_token!r}: expected an IndexError from W_e[v]")
    assert len(_row) == N_V
with check("on a small matrix: a row of W, the column of transpose(W)"):
    _W = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
    assert list(token_embedding_buggy(1, _W)) == [4.0, 5.0, 6.0]
    assert list(token_embedding_buggy(2, transpose(_W))) == [3.0, 6.0]
with check("on transpose(W_e) it agrees with token_embedding for every id"):
    _WT = transpose(W_e)
    assert all(list(token_embedding_buggy(_v, _WT)) == token_embedding(_v, W_e)
               for _v in range(N_V))

# %% alg1-ex-batch | points: 2 | defines: by_token, W_p_zero
with check("by_token embeds every token of x with token_embedding, in order"):
    assert len(by_token) == len(x), f"{len(by_token)} vectors, not {len(x)}"
    assert [list(_e) for _e in by_token] == [token_embedding(_v, W_e) for _v in x]
with check("W_p_zero is a matrix (a list of rows) of zeros"):
    assert len(W_p_zero) > 0 and all(len(_r) > 0 for _r in W_p_zero), (
        "W_p_zero: a list of rows, each a list of numbers")
    assert all(_w == 0 for _r in W_p_zero for _w in _r), "every entry must be 0"
with check("embed(x, W_e, W_p_zero) gives exactly by_token"):
    from tokvec.reference import embed as _embed

    assert _embed(x, W_e, W_p_zero) == [list(_e) for _e in by_token]
# %% hidden
with check("W_p_zero is a rectangular d_e x l_max table with l_max >= T"):
    from tokvec.reference import shape as _shape

    _d, _l = _shape(W_p_zero, "W_p_zero")
    assert _d == d_e and _l >= len(x)
with check("with W_p_zero, embed is the token lookup on other sequences too"):
    for _seq in (x[::-1], x[:3], [0, 847, 847, 5]):
        assert _embed(_seq, W_e, W_p_zero) == [token_embedding(_v, W_e) for _v in _seq]

# %% alg1-ex-paper-ids | points: 2 | defines: paper_token_embedding
with check("paper id 1 is the first column, paper id N_V the last"):
    assert list(paper_token_embedding(1, W_e)) == column(W_e, 0)
    assert list(paper_token_embedding(N_V, W_e)) == column(W_e, N_V - 1)
with check("the paper's id 0 is rejected: an IndexError, ValueError or assert"):
    try:
        _e = paper_token_embedding(0, W_e)
    except (IndexError, ValueError, AssertionError):
        pass
    else:
        raise AssertionError("paper id 0 returned a vector instead of raising")
# %% hidden
with check("paper id v is the code's column v - 1, for every v"):
    assert all(list(paper_token_embedding(_v, W_e)) == column(W_e, _v - 1)
               for _v in range(1, N_V + 1))
with check("on a 2 x 3 matrix: paper id 3 is [3.0, 6.0], paper id 4 raises"):
    _W = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
    assert list(paper_token_embedding(3, _W)) == [3.0, 6.0]
    try:
        paper_token_embedding(4, _W)
    except (IndexError, ValueError, AssertionError):
        pass
    else:
        raise AssertionError("paper id N_V + 1 must be rejected")
