"""Tests of chapter 3's exercises (tokvec.course.grading reads this file; see
its docstring).

Each section's visible tests go into the student notebook under the exercise; the hidden
ones only into the grader's copy. The names the tests use are the student's
(``defines``) and the chapter's own (``torch``, ``random_matrix``, ``column``,
``N_V_gpt2``...).
"""
# ruff: noqa: F821 (the names are defined by the notebook the tests run in)

# %% emb-ex-swapped | points: 2 | defines: d_model_ex, vocab_size, swapped, out, fixed
with check("d_model_ex = 8 and vocab_size = 20, as in the exercise"):
    assert (d_model_ex, vocab_size) == (8, 20)
with check("swapped is the exercise's nn.Embedding(d_model, vocab_size)"):
    assert isinstance(swapped, torch.nn.Embedding), "swapped must be an nn.Embedding"
    assert tuple(swapped.weight.shape) == (8, 20), (
        f"weight {tuple(swapped.weight.shape)}: the exercise's (8, 20) table")
with check("out: the ids [1, 5] looked up in swapped"):
    assert isinstance(out, torch.Tensor), "out: the tensor swapped returns for [1, 5]"
    assert out.shape[0] == 2, "one vector for each of the 2 ids"
    torch.testing.assert_close(out, swapped.weight[[1, 5]])
with check("fixed is nn.Embedding(vocab_size, d_model): 20 rows of 8"):
    assert isinstance(fixed, torch.nn.Embedding), "fixed must be an nn.Embedding"
    assert tuple(fixed.weight.shape) == (20, 8), f"weight {tuple(fixed.weight.shape)}"
# %% hidden
with check("out holds 2 vectors of the wrong width, 20"):
    assert tuple(out.shape) == (2, 20)
with check("swapped fails on id 12; fixed looks up every id 0..19 as 8 numbers"):
    try:
        swapped(torch.tensor([1, 12]))
    except IndexError:
        pass
    else:
        raise AssertionError("swapped accepted id 12")
    _every = fixed(torch.arange(20))                              # (20, 8)
    assert tuple(_every.shape) == (20, 8)
    torch.testing.assert_close(_every, fixed.weight)

# %% emb-ex-memory | points: 2 | defines: params_405b
with check("params_405b is an int"):
    assert isinstance(params_405b, int), f"an int, not {type(params_405b).__name__}"
with check("params_405b counts whole token vectors of 16,384 numbers"):
    assert params_405b > 0 and params_405b % 16_384 == 0, (
        "one vector of 16,384 numbers for each row: a multiple of 16,384")
with check("params_405b is in the billions: several GB in bfloat16"):
    assert 1e9 < params_405b < 1e10, (
        "rows of 16,384 numbers for a vocabulary of about 128K ids: billions")
# %% hidden
with check("the same as the parameters of nn.Embedding(128_256, 16_384)"):
    _table_405b = torch.nn.Embedding(128_256, 16_384, device="meta")   # no memory
    assert params_405b == _table_405b.weight.numel(), (
        "count the rows again: every token id of the tokenizer has one, specials too")

# %% emb-ex-onehot | points: 2 | defines: B, T, tokens
with check("B = 8 sequences of T = 1,024 tokens"):
    assert (B, T) == (8, 1024), f"B, T = {B}, {T}"
with check("tokens is the number of tokens in the batch, an int"):
    assert isinstance(tokens, int), f"an int, not {type(tokens).__name__}"
    assert tokens > 0 and tokens % T == 0, "whole sequences of T tokens"
# %% hidden
with check("tokens counts every token of every sequence"):
    assert tokens == 8 * 1024, "count the tokens of all B sequences"
with check("the batch's one-hot matrix has tokens * N_V entries"):
    _one_hots = torch.empty(B, T, N_V_gpt2, device="meta")      # (B, T, N_V), no memory
    assert _one_hots.numel() == tokens * N_V_gpt2
    assert tokens * N_V_gpt2 * d_e_gpt2 == 316_189_704_192

# %% emb-ex-balance | points: 2 | defines: d_small, W_small, mean_len, pos_len
with check("W_small: d_small = 64 rows and 1,000 token columns"):
    import numpy as _np
    assert d_small == 64
    assert _np.shape(W_small) == (64, 1000), f"shape {_np.shape(W_small)}"
with check("W_small's entries have mean 0 and std 1/sqrt(d_small)"):
    _entries = [float(x) for row in W_small for x in row]
    assert abs(statistics.pstdev(_entries) - 1 / math.sqrt(d_small)) < 0.005, (
        f"std {statistics.pstdev(_entries):.3f}: draw with std 1/sqrt(d_small)")
    assert abs(statistics.fmean(_entries)) < 0.005, "mean 0"
with check("mean_len is the mean length of W_small's columns"):
    _expected = statistics.fmean(math.hypot(*column(W_small, v)) for v in range(1000))
    assert math.isclose(mean_len, _expected, rel_tol=1e-6), (
        f"{mean_len}, not the mean column length")
with check("pos_len is the length of a position vector of d_small numbers"):
    _angles = [0.1 + 0.7 * k for k in range(d_small // 2)]      # any angles
    _position = [f(a) for a in _angles for f in (math.sin, math.cos)]
    assert math.isclose(pos_len, math.hypot(*_position), rel_tol=1e-6), (
        "pos_len: the length of d_small / 2 (sin, cos) pairs")
# %% hidden
with check("the ratios match the predictions, 1/sqrt(d/2) and sqrt(2)"):
    _no_factor = mean_len / pos_len
    assert math.isclose(pos_len, math.sqrt(d_small / 2), rel_tol=1e-6)
    assert abs(_no_factor - 1 / math.sqrt(32)) < 0.02, f"{_no_factor:.3f}"
    assert abs(_no_factor * math.sqrt(64) - math.sqrt(2)) < 0.1, (
        f"{_no_factor * math.sqrt(64):.3f}")
with check("a token vector is about 1 long"):
    assert 0.95 < mean_len < 1.05, f"{mean_len}"
