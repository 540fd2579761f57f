"""Tests of chapter 2's exercises (tokvec.course.grading reads this file; see its
docstring).

Each section's visible tests go into the student notebook under the exercise; the hidden
ones only into the grader's copy. The names the tests use are the student's
(``defines``) and the chapter's own (``Vocabulary``, ``vocab``, ``corpus``,
``word_tokenize``...).
"""
# ruff: noqa: F821 (the names are defined by the notebook the tests run in)

# %% vocab-ex-enumerate | points: 2 | defines: tokens, mapping, fixed, fixed_ids
with check("tokens: the exercise's sentence split; mapping: the lesson's recipe on it"):
    assert tokens == ["the", "cat", "saw", "the", "dog"]
    assert mapping == {token: idx for idx, token in enumerate(tokens)}
with check("fixed is a Vocabulary of the distinct tokens"):
    assert isinstance(fixed, Vocabulary), f"a Vocabulary, not {type(fixed).__name__}"
    assert set(tokens) <= set(fixed.tokens), f"tokens {fixed.tokens}"
    extra = set(fixed.tokens) - set(tokens) - set(SPECIALS)
    assert not extra, f"fixed also holds {sorted(extra)}"
with check("fixed_ids are right ids for tokens (feedback.on_encoded_ids)"):
    from tokvec.course import feedback

    verdict = feedback.on_encoded_ids(fixed_ids, tokens, fixed)
    assert verdict, str(verdict)
with check("every one of fixed_ids is a row of a table of len(fixed) rows"):
    import torch

    table_ = torch.zeros(len(fixed), 4)                     # (len(fixed), 4)
    looked_up = torch.nn.functional.embedding(torch.tensor(fixed_ids), table_)
    assert looked_up.shape == (len(tokens), 4)
# %% hidden
with check("fixed_ids: one id per distinct token, the same wherever it occurs"):
    assert len(fixed_ids) == len(tokens)
    id_of = dict(zip(tokens, fixed_ids))
    assert [id_of[t] for t in tokens] == list(fixed_ids)
    assert len(set(id_of.values())) == len(id_of), "two tokens share an id"
    assert all(0 <= i < len(fixed) for i in fixed_ids), "an id is not a row"
with check("fixed encodes and decodes tokens, with ids below len(fixed)"):
    encoded = fixed.encode(tokens)
    assert fixed.decode(encoded) == tokens
    assert all(0 <= i < len(fixed) for i in encoded)
    assert len(set(encoded)) == len(set(tokens))

# %% vocab-ex-order | points: 2 | defines: words, forward, backward, moved
with check("words are the word tokens of the normalized corpus"):
    assert words == word_tokenize(normalize(corpus))
with check("forward and backward give every word an id 0..n-1, most frequent first"):
    from collections import Counter

    _counts = Counter(words)
    for _name, _ids in (("forward", forward), ("backward", backward)):
        assert isinstance(_ids, dict) and set(_ids) == set(_counts), (
            f"{_name}: a dict with one id for each distinct word of words")
        assert sorted(_ids.values()) == list(range(len(_counts))), (
            f"{_name}: the ids are 0, 1, 2, ... one per word")
        _by_id = sorted(_ids, key=_ids.get)
        assert all(_counts[a] >= _counts[b] for a, b in zip(_by_id, _by_id[1:])), (
            f"{_name}: a word with a larger id occurs more often than one before it")
with check("moved: how many words change id, a whole number"):
    assert isinstance(moved, int), f"moved must be an int, not {type(moved).__name__}"
    assert 0 <= moved <= len(_counts), "moved counts words: 0 to the number of words"
# %% hidden
with check("forward and backward number the words in Counter.most_common order"):
    def _ranked(_stream):
        return {t: i for i, (t, _) in enumerate(Counter(_stream).most_common())}

    assert forward == _ranked(words), "forward: ids from Counter(words).most_common()"
    assert backward == _ranked(words[::-1]), "backward: the same for words reversed"
    assert moved == sum(forward[t] != backward[t] for t in forward)
with check("only tied tokens move: each id keeps its count, and some do move"):
    from collections import Counter

    counts = Counter(word_tokenize(normalize(corpus)))
    assert set(forward) == set(backward) == set(counts)
    by_id = {i: t for t, i in backward.items()}
    assert all(counts[by_id[i]] == counts[t] for t, i in forward.items())
    assert 0 < moved <= len(counts)
    assert moved == len([t for t in counts if forward[t] != backward[t]])

# %% vocab-ex-pad | points: 2 | defines: pad_batch
with check("pad_batch pads the shorter sequences at the end, with a mask"):
    padded_, mask_ = pad_batch([[5, 6, 7], [8]], 0)
    assert padded_ == [[5, 6, 7], [8, 0, 0]], f"padded {padded_}"
    assert mask_ == [[1, 1, 1], [1, 0, 0]], f"mask {mask_}"
with check("it pads with pad_id, whatever its value"):
    padded_, mask_ = pad_batch([[4], [1, 2, 3, 4], [7, 7]], pad_id=9)
    assert padded_ == [[4, 9, 9, 9], [1, 2, 3, 4], [7, 7, 9, 9]], f"padded {padded_}"
    assert mask_ == [[1, 0, 0, 0], [1, 1, 1, 1], [1, 1, 0, 0]], f"mask {mask_}"
with check("decoding each padded row with skip_specials=True gives back the tokens"):
    texts = ["A cat.", "The mat sat on the cat, and the cat sat."]
    batch_ = [vocab.encode(word_tokenize(s), add_bos_eos=True) for s in texts]
    rows_, _ = pad_batch(batch_, pad_id=vocab.token_to_id("<pad>"))
    assert [vocab.decode(r, skip_specials=True) for r in rows_] == [
        word_tokenize(s) for s in texts]
# %% hidden
with check("rows of equal length stay as they are, an empty one is all padding"):
    assert pad_batch([[1, 2], [3, 4]], 0) == ([[1, 2], [3, 4]], [[1, 1], [1, 1]])
    assert pad_batch([[], [6, 5]], -1) == ([[-1, -1], [6, 5]], [[0, 0], [1, 1]])
with check("it takes tuples, returns lists, and leaves its input unchanged"):
    import torch

    given = [(3, 1, 4, 1, 5), [9, 2], (6,)]
    before = [list(s) for s in given]
    rows_, masks_ = pad_batch(given, pad_id=0)
    assert [list(s) for s in given] == before, "pad_batch changed its input"
    assert all(isinstance(r, list) for r in rows_ + masks_), "rows must be lists"
    assert torch.tensor(rows_).shape == torch.tensor(masks_).shape == (3, 5)
    assert torch.tensor(masks_).sum(dim=1).tolist() == [5, 2, 1]
    assert rows_[1] == [9, 2, 0, 0, 0] and rows_[2] == [6, 0, 0, 0, 0]
