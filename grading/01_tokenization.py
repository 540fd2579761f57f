"""Tests of chapter 1's exercises (tokvec.course.grading reads this file; see its docstring).

Each section's visible tests go into the student notebook under the exercise; the hidden ones
only into the grader's copy. The names the tests use are the student's (``defines``) and the
chapter's own (``bpe``, ``corpus``, ``new_sentence``...).
"""
# ruff: noqa: F821 (the names are defined by the notebook the tests run in)

# %% tok-ex-lowercase | points: 1 | defines: lower_bpe, cased_tokens, lower_tokens
with check("lower_bpe is a BPE trained with lowercase=True and 400 tokens"):
    assert isinstance(lower_bpe, BPE) and lower_bpe.lowercase
    assert len(lower_bpe.vocab) == 400, f"{len(lower_bpe.vocab)} tokens, not 400"
with check("cased_tokens and lower_tokens tokenize new_sentence with bpe and lower_bpe"):
    assert cased_tokens == bpe.tokenize(new_sentence)
    assert lower_tokens == lower_bpe.tokenize(new_sentence)
with check("the lowercased tokens are fewer"):
    assert len(lower_tokens) < len(cased_tokens)
# %% hidden
with check("lower_bpe is the chapter's training, lowercased"):
    assert lower_bpe.merges == BPE.train(corpus, vocab_size=400, lowercase=True).merges
with check("lower_bpe folds case on other text too"):
    assert lower_bpe.tokenize("THE KIND WALKER") == lower_bpe.tokenize("the kind walker")

# %% tok-ex-spot-merge | points: 2 | defines: symbols
with check("symbols is a list of strings"):
    assert isinstance(symbols, list) and all(isinstance(s, str) and s for s in symbols)
with check("on symbols, merge_pair_replace and merge_pair disagree for some pair"):
    def _merge_pair_replace(_symbols, _pair):
        """The exercise's merge_pair_replace, repeated so that no answer cell can change it."""
        _a, _b = _pair
        return " ".join(_symbols).replace(f"{_a} {_b}", _a + _b).split(" ")

    _pieces = {s[i:j] for s in symbols for i in range(len(s)) for j in range(i + 1, len(s) + 1)}
    assert any(_merge_pair_replace(symbols, (a, b)) != merge_pair(symbols, (a, b))
               for a in _pieces for b in _pieces), "find symbols where the two differ"
# %% hidden
with check("the disagreement needs a symbol of more than one character"):
    assert any(len(s) > 1 for s in symbols)
with check("merge_pair is still right on symbols: it merges only whole adjacent symbols"):
    for a in _pieces:
        for b in _pieces:
            _merged = merge_pair(symbols, (a, b))
            assert "".join(_merged) == "".join(symbols)

# %% tok-ex-unk | points: 1 | defines: sample, unseen
with check("unseen is a sorted list of characters"):
    assert isinstance(unseen, list) and unseen == sorted(unseen)
    assert all(isinstance(c, str) and len(c) == 1 for c in unseen)
with check("none of them is in bpe's alphabet"):
    assert not set(unseen) & set(bpe.alphabet)
# %% hidden
with check("unseen is every character of your sample that bpe's alphabet lacks"):
    assert isinstance(sample, str)
    assert unseen == sorted(set(sample) - set(bpe.alphabet)), "compare set(sample) with bpe.alphabet"
with check("the sample has at least one such character"):
    assert unseen, "pick text with characters the corpus never uses"

# %% tok-ex-wordpiece | points: 3 | defines: greedy_tokenize, differ
with check("greedy_tokenize takes the longest known prefix first"):
    assert greedy_tokenize("abcd", {"a", "ab", "abc", "b", "c", "d"}) == ["abc", "d"]
with check("it falls back to one character when no longer prefix is known"):
    assert greedy_tokenize("xyz", {"y"}) == ["x", "y", "z"]
with check("differ lists corpus words where greedy and BPE disagree"):
    assert isinstance(differ, list) and differ, "differ: a list of the words where they disagree"
    _vocab = set(bpe.vocab)
    assert all(greedy_tokenize(w, _vocab) != bpe.tokenize_word(w) for w in differ)
# %% hidden
with check("greedy_tokenize spells the word back"):
    _vocab = set(bpe.vocab)
    for w in ["unkindness", "rediscovered", "walkers", "q"]:
        assert "".join(greedy_tokenize(w, _vocab)) == w
with check("and uses only known pieces, or single characters"):
    for w in ["unkindness", "rediscovered"]:
        assert all(p in _vocab or len(p) == 1 for p in greedy_tokenize(w, _vocab))
with check("every word in differ comes from the corpus"):
    _words = set(pretokenize(normalize(corpus)))
    assert set(differ) <= _words, "take the words from pretokenize(normalize(corpus))"
