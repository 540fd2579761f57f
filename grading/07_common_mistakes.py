"""Tests of chapter 7's exercises (tokvec.course.grading reads this file; see its
docstring).

Each section's visible tests go into the student notebook under the exercise; the hidden
ones only into the grader's copy. The names the tests use are the student's
(``defines``) and the chapter's own (``frequencies``, ``sinusoidal_positions``,
``embed``...).
"""
# ruff: noqa: F821 (the names are defined by the notebook the tests run in)

# %% bug-ex-base | points: 2 | defines: longest
with check("longest maps both bases, 10000 and 1000, to a wavelength"):
    assert isinstance(longest, dict), "make longest a dict {base: wavelength}"
    assert 10000.0 in longest and 1000.0 in longest, f"keys: {sorted(longest)}"
with check("each is a number of positions between 2 pi and 2 pi times the base"):
    for _base in (10000.0, 1000.0):
        assert 2 * math.pi < float(longest[_base]) <= 2 * math.pi * _base, (
            f"longest[{_base:g}]: the wavelength 2 pi / omega of the slowest pair")
with check("the smaller base gives the shorter longest wavelength"):
    assert float(longest[1000.0]) < float(longest[10000.0])
# %% hidden
with check("both agree with 2 pi base^((d - 2) / d), the exponent of pair 255"):
    for _base in (10000.0, 1000.0):
        _expected = 2 * math.pi * _base ** (510 / 512)
        assert math.isclose(longest[_base], _expected, abs_tol=1), (
            f"longest[{_base:g}]: the slowest pair of d = 512, not the limit 2 pi base")
with check("base 1000 is about ten times shorter, still thousands of positions"):
    assert 9 < longest[10000.0] / longest[1000.0] < 11
    assert all(float(_v) > 6000 for _v in (longest[10000.0], longest[1000.0]))

# %% bug-ex-discarded | points: 2 | defines: pe
with check("pe holds a table that is not all zeros (the updates are kept)"):
    pe_table = np.asarray(pe)
    pe_table = pe_table[0] if pe_table.ndim == 3 else pe_table
    assert pe_table.shape == (50, 16), f"shape {pe_table.shape}, not (max_len, d_model)"
    assert pe_table.any(), "pe is still all zeros: assign the result of at_set"
with check("pe, one position per row, is the reference W_p transposed"):
    W_ref = np.array(sinusoidal_positions(16, 50))                # (d_e, l_max)
    assert np.allclose(pe_table, W_ref.T, rtol=0, atol=1e-6)
with check("feedback.on_sinusoidal_table accepts it"):
    _verdict = feedback.on_sinusoidal_table(pe_table)
    assert _verdict, _verdict
# %% hidden
with check("entry (t, 2k) is sin(t w_k) and (t, 2k + 1) is cos(t w_k)"):
    for t in (0, 1, 7, 49):
        for k in range(8):
            w = 10000.0 ** (-2 * k / 16)
            assert math.isclose(pe_table[t, 2 * k], math.sin(t * w), abs_tol=1e-6)
            assert math.isclose(pe_table[t, 2 * k + 1], math.cos(t * w), abs_tol=1e-6)
with check("position 0 is [0, 1, 0, 1, ...] and every pair lies on the unit circle"):
    assert np.allclose(pe_table[0], [0, 1] * 8)
    assert np.allclose(pe_table[:, 0::2] ** 2 + pe_table[:, 1::2] ** 2, 1, atol=1e-6)

# %% bug-ex-exponent | points: 2 | defines: pair_sums, fixed_positional_embedding_matrix
with check("pair_sums gives sin^2 + cos^2 of each (sin, cos) pair"):
    a, b = 0.3, 2.1
    sums = pair_sums([math.sin(a), math.cos(a), math.sin(b), math.cos(b)])
    assert len(sums) == 2 and all(math.isclose(s, 1, abs_tol=1e-4) for s in sums), sums
    sums = pair_sums([1.0, 1.0, 0.5, 0.0])
    assert [round(s, 4) for s in sums] == [2.0, 0.25], sums
with check("pair_sums exposes the walkthrough's table at t = 1"):
    buggy = generate_positional_embedding_matrix(10, 5)[1]
    assert any(abs(s - 1) > 0.1 for s in pair_sums(buggy)), pair_sums(buggy)
with check("fixed_positional_embedding_matrix(10, 5), by t, is a right table: "
           "paper_positions or sinusoidal_positions"):
    from tokvec.reference import column as _column
    from tokvec.reference import paper_positions as _paper_positions
    from tokvec.reference import sinusoidal_positions as _sinusoidal_positions

    def _fixes(d_test, l_test):
        """The right tables (d_e, l_max): the paper's (pairs from 1, base l_max) and
        Vaswani's (pairs from 0), with the walkthrough's base l_max or with 10000."""
        return {"paper": _paper_positions(d_test, l_test),
                "vaswani, base l_max": _sinusoidal_positions(d_test, l_test,
                                                             base=float(l_test)),
                "vaswani, base 10000": _sinusoidal_positions(d_test, l_test)}

    def _agrees(fixed_test, W_test, l_test):
        """fixed_test[t] is column t of W_test for every position t."""
        return all(len(fixed_test[t]) == len(W_test)
                   and all(math.isclose(a, b, abs_tol=1e-9)
                           for a, b in zip(fixed_test[t], _column(W_test, t)))
                   for t in range(l_test))

    fixed_10_5 = fixed_positional_embedding_matrix(10, 5)
    for t in range(5):
        assert len(fixed_10_5[t]) == 10, "one vector of length d per position t"
    _convention = [k for k, W in _fixes(10, 5).items() if _agrees(fixed_10_5, W, 5)]
    assert _convention, ("both rows of a pair need one angle, t / base^(exponent of "
                         "the pair), the pairs counted one way throughout")
# %% hidden
with check("the fix matches the same right table for other sizes"):
    assert _convention, "the fix of (10, 5) is not one of the right tables"
    for d_test, l_test in ((6, 7), (4, 12), (12, 3), (2, 9)):
        fixed_test = fixed_positional_embedding_matrix(d_test, l_test)
        W_ref = _fixes(d_test, l_test)[_convention[0]]
        assert _agrees(fixed_test, W_ref, l_test), (d_test, l_test)
        for t in range(l_test):
            assert all(math.isclose(s, 1, abs_tol=1e-4)
                       for s in pair_sums(fixed_test[t]))
with check("pair_sums on a longer vector of any numbers"):
    vector = [0.5, -1.5, 2.0, 0.25, -0.1, 0.3, 3.0, 1.0]
    expected = [2.5, 4.0625, 0.1, 10.0]
    assert all(math.isclose(s, e, abs_tol=1e-4)
               for s, e in zip(pair_sums(vector), expected))
    assert len(pair_sums(vector)) == 4

# %% bug-ex-position-lookup | points: 2 | defines: x, wrong, right
with check("x is a sentence of token ids the formula can take (ids < 6, length <= 5)"):
    assert isinstance(x, list) and x, "x is a non-empty list of token ids"
    assert all(isinstance(v, int) and 0 <= v < 6 for v in x), f"x = {x}"
    assert len(x) <= 5, "W_p has l_max = 5 columns: at most 5 tokens"
with check("wrong is the formula W_e[:, x[t]] + W_p[:, x[t]] and right is embed, on x"):
    W_e_test = random_matrix(4, 6, seed=0)
    W_p_test = sinusoidal_positions(4, 5)

    def _formula(x_test, W_e_test, W_p_test):
        """The formula, literally (the chapter's function, whatever its name)."""
        return [[a + b for a, b in zip(column(W_e_test, v), column(W_p_test, v))]
                for v in x_test]

    assert wrong == _formula(x, W_e_test, W_p_test)
    assert right == embed(x, W_e_test, W_p_test)
with check("on x the formula gives a different answer from embed"):
    assert wrong != right, f"on {x} the formula agrees with embed: find another input"
# %% hidden
with check("the difference is the positional part, W_p[:, t] - W_p[:, x[t]]"):
    for t, v in enumerate(x):
        gap = [r - w for r, w in zip(right[t], wrong[t])]
        want = [a - b for a, b in zip(column(W_p_test, t), column(W_p_test, v))]
        assert all(math.isclose(g, h, abs_tol=1e-12) for g, h in zip(gap, want))
with check("x exposes the bug whatever the token embeddings are"):
    for seed in (1, 2):
        other = random_matrix(4, 6, seed=seed)
        assert _formula(x, other, W_p_test) != embed(x, other, W_p_test)

# %% bug-ex-case | points: 2 | defines: folded, ids
with check("folded is a Vocabulary of the lowercased sentence"):
    words = word_tokenize(normalize(SENTENCE, lowercase=True))
    assert isinstance(folded, Vocabulary)
    assert set(words) <= set(folded.tokens), "every lowercased word has an id"
    assert "The" not in folded.tokens, "fold case: no 'The' in the vocabulary"
with check("ids encodes the lowercased sentence"):
    assert list(ids) == folded.encode(words)
with check("The and the now share one id"):
    assert ids[0] == ids[4], f"ids[0] = {ids[0]}, ids[4] = {ids[4]}"
# %% hidden
with check("a capitalised sentence encodes like its lowercase form"):
    shout = word_tokenize(normalize("THE CAT SAT ON THE MAT.", lowercase=True))
    assert folded.encode(shout) == folded.encode(words)
    assert folded.encode(["the"]) == [ids[0]]
with check("one id per distinct word: no duplicates in the vocabulary"):
    assert len(set(folded.tokens)) == len(folded.tokens)
    assert len(set(ids)) == len(set(words))

# %% bug-ex-step6 | points: 2 | defines: token_to_id, token_ids, embedding_layer, embeddings, wrong
with check("token_to_id numbers the words of 'the cat saw the dog' by first "
           "appearance"):
    _sentence = ["the", "cat", "saw", "the", "dog"]
    assert token_to_id == {"the": 0, "cat": 1, "saw": 2, "dog": 3}, token_to_id
    assert list(token_ids) == [token_to_id[_w] for _w in _sentence], (
        "token_ids: the id of each word of the sentence, in order")
with check("embeddings is embedding_layer applied to the sentence: one row per "
           "position"):
    assert isinstance(embedding_layer, torch.nn.Embedding)
    assert tuple(embeddings.shape) == (5, embedding_layer.embedding_dim)
    for t, v in enumerate(token_ids):
        assert torch.equal(embeddings[t], embedding_layer.weight[v]), f"position {t}"
with check("wrong lists words of the sentence, from the Step 6 loop"):
    assert isinstance(wrong, list), "wrong: a list of the words printed wrongly"
    _words = set(token_to_id)
    assert all(isinstance(_w, str) and _w in _words for _w in wrong), (
        f"not words of the sentence: {wrong}")
    assert len(set(wrong)) == len(wrong), "each word once"
# %% hidden
with check("wrong is what the Step 6 loop prints wrongly on your tensors"):
    _rows_by_id, _by_position = embedding_layer.weight, embeddings
    _printed_wrongly = [_w for _w, _v in token_to_id.items()
                        if not torch.equal(_by_position[_v], _rows_by_id[_v])]
    assert list(wrong) == _printed_wrongly, "run the lesson's loop and compare rows"
    assert list(wrong) == ["dog"], "the loop prints one word with another's vector"
with check("the loop prints dog with the vector of 'the' (position 3)"):
    assert torch.equal(embeddings[3], embedding_layer.weight[0])
    assert not torch.equal(embeddings[3], embedding_layer.weight[3])
with check("one row per distinct word: embedding_layer has 4 rows, looked up by id"):
    assert embedding_layer.num_embeddings == 4, embedding_layer
    _rows = embedding_layer(torch.tensor([3, 1, 3, 0]))
    assert torch.equal(_rows, embedding_layer.weight[[3, 1, 3, 0]])

# %% bug-ex-odd | points: 2 | defines: positional_encoding_fixed
with check("positional_encoding_fixed(6, 5) runs and has shape (6, 5)"):
    pe5 = positional_encoding_fixed(6, 5)
    assert tuple(pe5.shape) == (6, 5), f"shape {tuple(pe5.shape)}"
with check("it is the reference table for d_model = 5, transposed"):
    pe5 = positional_encoding_fixed(6, 5)
    W_ref = torch.tensor(sinusoidal_positions(5, 6)).T.float()   # (l_max, d_e)
    torch.testing.assert_close(pe5.float(), W_ref, atol=1e-5, rtol=0)
with check("for an even d_model it still matches the recipe"):
    torch.testing.assert_close(positional_encoding_fixed(6, 4).float(),
                               positional_encoding(6, 4).float(), atol=1e-5, rtol=0)
# %% hidden
with check("other sizes, odd and even, match the reference"):
    for n_test, d_test in ((10, 7), (3, 1), (8, 9), (5, 12), (1, 3)):
        got = positional_encoding_fixed(n_test, d_test)
        W_ref = torch.tensor(sinusoidal_positions(d_test, n_test)).T.float()
        assert tuple(got.shape) == (n_test, d_test), (n_test, d_test)
        torch.testing.assert_close(got.float(), W_ref, atol=1e-5, rtol=0)

# %% bug-ex-swapped | points: 2 | defines: W_e, table
with check("W_e is the paper's (d_e, N_V) = (4, 10) matrix"):
    assert len(W_e) == 4 and all(len(row) == 10 for row in W_e), (
        "W_e has d_model = 4 rows and vocab_size = 10 columns"
    )
with check("table is an nn.Embedding with one row per token: weight (10, 4)"):
    assert isinstance(table, torch.nn.Embedding)
    assert tuple(table.weight.shape) == (10, 4), tuple(table.weight.shape)
with check("table looks up token v's column of W_e (Algorithm 1)"):
    for v in range(10):
        got = table(torch.tensor(v)).tolist()
        assert all(math.isclose(a, b, abs_tol=1e-6)
                   for a, b in zip(got, token_embedding(v, W_e))), f"token {v}"
# %% hidden
with check("a batch of ids, 4 to 9 included, gives one row per id"):
    batch = table(torch.tensor([9, 4, 4, 0]))
    assert tuple(batch.shape) == (4, 4)
    _rows = torch.tensor(transpose(W_e), dtype=torch.float64)[[9, 4, 4, 0]]
    torch.testing.assert_close(batch.double(), _rows, atol=1e-6, rtol=1e-6)
with check("id 10 is out of range"):
    try:
        table(torch.tensor([10]))
        raise AssertionError("id 10 should raise an IndexError")
    except IndexError:
        pass

# %% bug-ex-integer | points: 2 | defines: div_term, pe
with check("div_term holds the 4 frequencies 10000^(-2i/8), in floating point"):
    assert isinstance(div_term, torch.Tensor), "make div_term a torch tensor"
    assert div_term.dtype.is_floating_point, f"dtype {div_term.dtype}"
    torch.testing.assert_close(div_term.double(),
                               torch.tensor(frequencies(8), dtype=torch.float64),
                               atol=1e-6, rtol=1e-6)
with check("pe is a floating-point (6, 8) tensor"):
    assert isinstance(pe, torch.Tensor), "make pe a torch tensor"
    assert tuple(pe.shape) == (6, 8), f"shape {tuple(pe.shape)}"
    assert pe.dtype.is_floating_point, f"dtype {pe.dtype}: the table must hold floats"
with check("pe is the reference table, one position per row"):
    W_ref = torch.tensor(sinusoidal_positions(8, 6)).T.float()  # (l_max, d_e)
    torch.testing.assert_close(torch.as_tensor(pe).float(), W_ref, atol=1e-6, rtol=0)
# %% hidden
with check("every pair has its own frequency and rows t >= 1 are not truncated"):
    assert len(set(round(float(w), 8) for w in div_term)) == 4
    assert all(pe[t].abs().sum() > 0.5 for t in range(1, 6))
with check("entry (t, 2k) is sin(t w_k), entry (t, 2k + 1) is cos(t w_k)"):
    for t in range(6):
        for k in range(4):
            w = 10000.0 ** (-2 * k / 8)
            assert math.isclose(pe[t, 2 * k], math.sin(t * w), abs_tol=1e-6)
            assert math.isclose(pe[t, 2 * k + 1], math.cos(t * w), abs_tol=1e-6)
