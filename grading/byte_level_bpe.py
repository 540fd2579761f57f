"""Tests of the exercises of the page "Byte-level BPE" (tokvec.course.grading reads this
file; see its docstring).

Each section's visible tests go into the student notebook under the exercise; the hidden
ones only into the grader's copy. The names the tests use are the student's
(``defines``) and the chapter's own (``cl100k``, ``ours``, ``bytebpe``, ``documents``,
``EOT``...).
"""
# ruff: noqa: F821 (the names are defined by the notebook the tests run in)

# %% bbpe-ex-bytes | points: 1 | defines: report
def _report_says(word, tokenizer):
    """What report(word, tokenizer) prints, the numbers in it, and the right answers."""
    import contextlib
    import io
    import re

    with contextlib.redirect_stdout(io.StringIO()) as printed:
        report(word, tokenizer)
    text = printed.getvalue()
    numbers = {int(n) for n in re.findall(r"(?<!\w)\d+(?!\w)", text)}
    ids = tokenizer.encode(word)
    broken = []
    for i in ids:
        try:
            tokenizer.vocab[i].decode("utf-8")
        except UnicodeDecodeError:
            broken.append(tokenizer.vocab[i])
    return text, numbers, (len(word), len(word.encode("utf-8")), len(ids)), broken


with check("report(word, tokenizer) prints the code points, bytes and tokens of word"):
    text, numbers, counts, _ = _report_says("naïve café", ours)
    assert set(counts) <= numbers, (
        "report('naïve café', ours) should print three counts: the word's code "
        "points, its UTF-8 bytes and its tokens (ids of tokenizer.encode); it "
        f"printed {text!r}")
with check("report prints the tokens whose bytes are not valid UTF-8 alone"):
    text, _, _, broken = _report_says("Ångström", cl100k)
    missing = [b for b in broken if repr(b) not in text]
    assert not missing, (
        f"report('Ångström', cl100k) misses {len(missing)} of the tokens that are not "
        "valid UTF-8 alone: print each one's bytes as Python shows them (repr)")
# %% hidden
with check("report is right for an emoji and for CJK characters"):
    for word, tokenizer in [("👍 ok", ours), ("東京 tower", cl100k)]:
        text, numbers, counts, broken = _report_says(word, tokenizer)
        assert set(counts) <= numbers, f"{word!r}: a count is missing"
        assert broken and all(repr(b) in text for b in broken), (
            f"{word!r}: a token that is not valid UTF-8 alone is missing")

# %% bbpe-ex-spot-stream | points: 2 | defines: lines, whole
with check("lines is a list of lines, as a file yields them"):
    assert isinstance(lines, list) and lines, "lines must be a non-empty list of str"
    assert all(isinstance(line, str) for line in lines), "each line must be a str"
    assert "".join(lines).splitlines(keepends=True) == lines, (
        "each line must end with its newline, and only the last may lack one")
with check("whole is cl100k.encode of the whole text"):
    assert whole == cl100k.encode("".join(lines))
with check("encoding line by line, as encode_lines does, gives other ids than the whole text"):
    # computed here, not with the chapter's encode_lines, which an answer may have redefined
    _per_line = []
    for _line in lines:
        _per_line += cl100k.encode(_line)
    assert _per_line != whole, (
        "find lines for which the per-line ids differ from the whole text's")
# %% hidden
with check("encoding each line on its own really differs from cl100k.encode"):
    per_line = [i for line in lines for i in cl100k.encode(line)]
    assert per_line != cl100k.encode("".join(lines))
    assert cl100k.decode(per_line) == "".join(lines)
with check("streaming the lines with encode_iterable gives the whole text's ids"):
    assert list(cl100k.encode_iterable(lines)) == whole

# %% bbpe-ex-digits | points: 3 | defines: sentence, n_tokens
with check("sentence is the exercise's sentence"):
    assert sentence == "In 2024, 1,234,567 people paid $89.99."
with check("n_tokens maps 'GPT-2' and 'GPT-4' to the number of ids of the sentence"):
    assert isinstance(n_tokens, dict), "n_tokens must be a dict"
    assert set(n_tokens) == {"GPT-2", "GPT-4"}, f"keys {sorted(n_tokens)}"
    assert all(isinstance(n, int) for n in n_tokens.values()), "counts must be ints"
    patterns = {"GPT-2": bytebpe.GPT2_PATTERN, "GPT-4": bytebpe.GPT4_PATTERN}
    for name, pattern in patterns.items():
        pieces = len(regex.findall(pattern, sentence))
        assert pieces <= n_tokens[name] <= len(sentence.encode()), (
            f"{name}: {n_tokens[name]} ids, but its pattern cuts the sentence into "
            f"{pieces} pieces (at least one id each) of {len(sentence.encode())} bytes")
# %% hidden
with check("GPT-4's pattern gives more tokens than GPT-2's"):
    assert n_tokens["GPT-4"] > n_tokens["GPT-2"]
with check("the counts are those of tokenizers trained on documents to 1,000 ids"):
    patterns = {"GPT-2": bytebpe.GPT2_PATTERN, "GPT-4": bytebpe.GPT4_PATTERN}
    for name, pattern in patterns.items():
        v, m = bytebpe.train(documents, 1000, [EOT], pattern=pattern)
        tok = bytebpe.Tokenizer(v, m, [EOT], pattern=pattern)
        expected = len(tok.encode("In 2024, 1,234,567 people paid $89.99."))
        assert n_tokens[name] == expected, (
            f"{name}: train with bytebpe.train(documents, 1000, [EOT], pattern=...)")

# %% bbpe-ex-update | points: 3 | defines: merge_and_count
def _follow(start, merges):
    """Apply merge_and_count merge by merge; each step's counts against a recount."""
    from collections import Counter

    words = dict(start)
    counts = Counter()
    for word, n in words.items():
        for pair in zip(word, word[1:]):
            counts[pair] += n
    for k, pair in enumerate(merges):
        result = merge_and_count(words, counts, pair)
        assert isinstance(result, dict), (
            f"merge_and_count must return the new words as a dict, got {type(result).__name__}")
        words = result
        recount = Counter()
        for word, n in words.items():
            for p in zip(word, word[1:]):
                recount[p] += n
        _same_as_recount(counts, recount, f"after merge {k} {pair}")
    return words, counts


def _same_as_recount(counts, recount, when):
    """Fail with what differs: a pair kept at zero, or a count that is wrong."""
    kept_at_zero = sorted(p for p, c in counts.items() if c == 0 and p not in recount)
    wrong = sorted((p, counts.get(p), recount.get(p)) for p in set(counts) | set(recount)
                   if counts.get(p, 0) != recount.get(p, 0))
    assert not wrong, (
        f"{when}, pair_counts differs from a recount of the words in {len(wrong)} count(s), "
        f"for example {wrong[0][0]}: yours {wrong[0][1] or 0}, a recount {wrong[0][2] or 0}")
    assert not kept_at_zero, (
        f"{when}, pair_counts keeps {len(kept_at_zero)} pair(s) at count 0, for example "
        f"{kept_at_zero[0]}: a count that falls to zero must be deleted, not kept as 0")


def _by_hand(start, merges):
    """The words after the merges, each merged left to right without overlap (train_slow's rule)."""
    words = dict(start)
    for a, b in merges:
        merged = {}
        for word, n in words.items():
            out, i = [], 0
            while i < len(word):
                if word[i:i + 2] == (a, b):
                    out.append(a + b)
                    i += 2
                else:
                    out.append(word[i])
                    i += 1
            merged[tuple(out)] = merged.get(tuple(out), 0) + n
        words = merged
    return words


def _cs336_words():
    from collections import Counter

    text = ("low low low low low lower lower widest widest widest "
            "newest newest newest newest newest newest")
    return text, {tuple(bytes([b]) for b in w.encode()): n for w, n in Counter(text.split()).items()}


with check("after each of train's six merges on CS336's example the counts equal a recount"):
    text, start = _cs336_words()
    _, merges = bytebpe.train(text, 256 + 6, pattern=r"\S+")
    _follow(start, merges)
with check("merge_and_count returns the merged words with their counts"):
    text, start = _cs336_words()
    _, merges = bytebpe.train(text, 256 + 6, pattern=r"\S+")
    words, _ = _follow(start, merges)
    assert words == _by_hand(start, merges), (
        f"the words after six merges should be {_by_hand(start, merges)}, got {words}")
# %% hidden
with check("an overlapping pair merges left to right, as train does: a a a -> aa a"):
    start = {(b"a",) * 5: 2, (b"b", b"a", b"a", b"a"): 1, (b"c",): 4}
    words, counts = _follow(start, [(b"a", b"a"), (b"aa", b"a"), (b"b", b"aa")])
    assert words == _by_hand(start, [(b"a", b"a"), (b"aa", b"a"), (b"b", b"aa")])
with check("merge_and_count changes only the counts of pairs in the words that hold pair"):
    from collections import Counter

    import regex

    class _Writes(Counter):
        """A Counter that records every key written (set or deleted) and whether it was cleared."""

        def __init__(self, *args, **kwargs):
            self.written, self.cleared = set(), False
            super().__init__(*args, **kwargs)
            self.written = set()

        def __setitem__(self, key, value):
            self.written.add(key)
            super().__setitem__(key, value)

        def __delitem__(self, key):
            self.written.add(key)
            super().__delitem__(key)

        def clear(self):
            self.cleared = True
            super().clear()

        def pop(self, key, *default):
            self.written.add(key)
            return super().pop(key, *default)

        def popitem(self):
            key, value = super().popitem()
            self.written.add(key)
            return key, value

        def setdefault(self, key, default=None):
            self.written.add(key)
            return super().setdefault(key, default)

    pieces = Counter(p for doc in documents.split(EOT) for p in regex.findall(bytebpe.GPT2_PATTERN, doc))
    words = {tuple(bytes([b]) for b in p.encode()): n for p, n in pieces.items()}
    counts = _Writes()
    for word, n in words.items():
        for p in zip(word, word[1:]):
            counts[p] += n
    counts.written = set()
    _, merges = bytebpe.train(documents, 256 + 1 + 10, [EOT])
    for k, pair in enumerate(merges):
        holding = [w for w in words if pair in zip(w, w[1:])]
        theirs = {p for w in holding for p in zip(w, w[1:])}
        theirs |= {p for w in holding for merged in _by_hand({w: 1}, [pair]) for p in zip(merged, merged[1:])}
        counts.written, counts.cleared = set(), False
        words = merge_and_count(words, counts, pair)
        assert not counts.cleared, (
            f"merge {k} {pair}: merge_and_count cleared pair_counts and counted again; update "
            f"in place only the counts of the pairs in the {len(holding)} words that hold {pair}")
        others = sorted(counts.written - theirs)
        assert not others, (
            f"merge {k} {pair}: merge_and_count wrote the counts of {len(others)} pair(s) that "
            f"no word holding {pair} contains, for example {others[0]}; a merge changes only "
            f"the counts of pairs in the words that hold it, so leave the others alone")
with check("thirty merges of train on the course corpus, each equal to a recount"):
    from collections import Counter

    import regex

    pieces = Counter(p for doc in documents.split(EOT) for p in regex.findall(bytebpe.GPT2_PATTERN, doc))
    start = {tuple(bytes([b]) for b in p.encode()): n for p, n in pieces.items()}
    _, merges = bytebpe.train(documents, 256 + 1 + 30, [EOT])
    words, counts = _follow(start, merges)
    assert words == _by_hand(start, merges) and all(c > 0 for c in counts.values())
