"""tokvec.bytebpe's encode_iterable gives the ids of encode for every chunking, with both patterns.

A piece at the end of a chunk is settled only once no continuation can change it: GPT-2's
contraction rule is case-sensitive and reads up to two characters past a ``'``, so ``we'l`` is
``we ' l`` until an ``l`` makes it ``we 'll``; and a special token may contain another (``a<x>b``
and ``<x>``). Every split point of contraction-heavy text is tried, in lower and upper case, with
chunk sizes 1 to 9, on GPT-2's and GPT-4's published tokenizers and on small trained ones with
either pattern and nested special tokens; Hypothesis then draws texts and chunkings at random.
A run that never ends a piece, streamed in small chunks, is scanned a few times, not once per chunk.
"""

import pytest
from bytebpe_references import SPECIALS, ours, text_with_surrogates
from hypothesis import given, settings
from hypothesis import strategies as st

from tokvec import bytebpe
from tokvec.bytebpe import GPT2_PATTERN, GPT4_PATTERN, Tokenizer

NESTED = ["<x>", "a<x>b", "<x><x>", "<|endoftext|>"]

CONTRACTIONS = ("We'll go; they're here, I've seen, you'd know, it's his, I'm in, don't.\n"
                "Y'all'd've 'tis rock 'n' roll ''s '' 'll 've 're\r\n\t  she'S WE'Ll it'D\n\n"
                "a<x>b<x><x>a<x>a<x>b <|endoftext|> 1234567 x")


@pytest.fixture(scope="module")
def trained():
    """Two small tokenizers, one per pattern, with special tokens that contain each other."""
    corpus = CONTRACTIONS * 3 + "we will go, they are here, I have seen a<x>b and <x> twice"
    tokenizers = {}
    for name, pattern in (("GPT-2", GPT2_PATTERN), ("GPT-4", GPT4_PATTERN)):
        vocab, merges = bytebpe.train(corpus, 400, NESTED, pattern=pattern)
        tokenizers[name] = Tokenizer(vocab, merges, NESTED, pattern=pattern)
    return tokenizers


def all_tokenizers(trained):
    return {"gpt2": ours("gpt2"), "cl100k_base": ours("cl100k_base"), **trained}


def chunkings(text: str):
    """Every chunk size from 1 to 9 at every offset, and every single split point."""
    for size in range(1, 10):
        for offset in range(size):
            yield [text[:offset]] + [text[i:i + size] for i in range(offset, len(text), size)]
    for cut in range(len(text) + 1):
        yield [text[:cut], text[cut:]]


@pytest.mark.parametrize("case", ["lower", "upper", "as written"])
def test_every_split_point_of_contraction_heavy_text(trained, case):
    text = {"lower": CONTRACTIONS.lower(), "upper": CONTRACTIONS.upper(), "as written": CONTRACTIONS}[case]
    for name, tokenizer in all_tokenizers(trained).items():
        whole = tokenizer.encode(text)
        for chunks in chunkings(text):
            assert list(tokenizer.encode_iterable(chunks)) == whole, (name, chunks)


@pytest.mark.parametrize("pattern", [GPT2_PATTERN, GPT4_PATTERN], ids=["GPT-2", "GPT-4"])
@pytest.mark.parametrize("chunks", [["we'l", "l go"], ["they'r", "e"], ["I'v", "e"], ["WE'L", "L"],
                                    ["it'", "s"], ["x", "'", "l", "l"]])
def test_a_contraction_cut_in_two_is_one_piece(pattern, chunks):
    """The cases that broke with GPT-2's pattern: the ' was settled before its letters came."""
    vocab, merges = bytebpe.train("we'll they're I've it's WE'LL", 300, pattern=pattern)
    tokenizer = Tokenizer(vocab, merges, pattern=pattern)
    assert list(tokenizer.encode_iterable(chunks)) == tokenizer.encode("".join(chunks))


def test_gpt2_splits_we_ll_and_we_l_differently():
    """Why the last two pieces wait: the ' of ``we'l`` is a piece of its own, that of ``we'll`` is not."""
    import regex

    assert regex.findall(GPT2_PATTERN, "we'l") == ["we", "'", "l"]
    assert regex.findall(GPT2_PATTERN, "we'll") == ["we", "'ll"]


def test_a_special_token_that_contains_another():
    vocab, merges = bytebpe.train("a<x>b and <x> and a<x>", 300, ["<x>", "a<x>b"])
    tokenizer = Tokenizer(vocab, merges, ["<x>", "a<x>b"])
    assert tokenizer.encode("a<x>b") == [tokenizer.special_tokens["a<x>b"]]
    assert list(tokenizer.encode_iterable(["a<x>", "b"])) == tokenizer.encode("a<x>b")
    assert list(tokenizer.encode_iterable(["a<x>", "c"])) == tokenizer.encode("a<x>c")
    assert list(tokenizer.encode_iterable(["a", "<", "x", ">", ""])) == tokenizer.encode("a<x>")


def test_a_surrogate_pair_cut_between_chunks():
    """A high surrogate at the end of a chunk waits for its low half, as one string would pair them."""
    tokenizer = ours("cl100k_base")
    assert list(tokenizer.encode_iterable(["a\ud83d", "\udc4db"])) == tokenizer.encode("a👍b")
    assert list(tokenizer.encode_iterable(["a\ud83d", "b"])) == tokenizer.encode("a\ufffdb")
    assert list(tokenizer.encode_iterable(["a\ud83d"])) == tokenizer.encode("a\ufffd")
    assert list(tokenizer.encode_iterable(["\ud83d", "", "\udc4d"])) == tokenizer.encode("👍")


def test_streaming_holds_little_pending_text():
    """Settled text is yielded at once: after each line, only its last pieces wait."""
    tokenizer = ours("gpt2")
    seen = []

    def lines():
        for k in range(3):
            yield f"Line {k} of a file we'll stream.\n"
            seen.append(k)

    stream = tokenizer.encode_iterable(lines())
    first = [next(stream) for _ in range(len(tokenizer.encode("Line 0 of a file we'll")))]
    assert seen == [] and first == tokenizer.encode("Line 0 of a file we'll")


# --- Hypothesis: random text and random chunkings ---------------------------------------------

ALPHABET = ["'", "'", "s", "S", "l", "L", "ll", "ve", "RE", "d", "t", "m", " ", " ", "  ", "\n", "\r", "\r\n",
            "\t", "\u00a0", "\u3000", "1", "12", "7", "a", "b", "x", "é", "я", "中", "ก", "👍", "!", ".", "$", "<",
            ">", "|", "\u0301", "\ud83d", "\udc4d", "\ud800", *NESTED, *SPECIALS, "<|", "endoftext", "|>", "<x",
            "a<x"]


@st.composite
def text_and_chunks(draw):
    text = "".join(draw(st.lists(st.sampled_from(ALPHABET), max_size=40)))
    cuts = draw(st.lists(st.integers(0, len(text)), max_size=8))
    bounds = sorted({0, len(text), *cuts})
    return text, [text[a:b] for a, b in zip(bounds, bounds[1:])]


@settings(max_examples=150)
@given(text_and_chunks())
def test_streaming_equals_encode_for_random_text_and_chunking_published(case):
    text, chunks = case
    for name in ("gpt2", "cl100k_base"):
        tokenizer = ours(name)
        assert list(tokenizer.encode_iterable(chunks)) == tokenizer.encode(text), name


@settings(max_examples=150)
@given(text_and_chunks())
def test_streaming_equals_encode_for_random_text_and_chunking_trained(trained, case):
    text, chunks = case
    for name, tokenizer in trained.items():
        assert list(tokenizer.encode_iterable(chunks)) == tokenizer.encode(text), name


@settings(max_examples=100)
@given(text_with_surrogates(max_size=60), st.lists(st.integers(0, 60), max_size=6))
def test_streaming_equals_encode_for_any_unicode_with_surrogates(text, cuts):
    bounds = sorted({0, len(text), *(min(c, len(text)) for c in cuts)})
    chunks = [text[a:b] for a, b in zip(bounds, bounds[1:])]
    for name in ("gpt2", "cl100k_base"):
        tokenizer = ours(name)
        assert list(tokenizer.encode_iterable(chunks)) == tokenizer.encode(text), name


class CountingTokenizer(Tokenizer):
    """Counts the characters that encode_iterable hands to its scan for settled pieces."""

    scanned = 0

    def _encode_settled(self, buffer):
        self.scanned += len(buffer)
        return super()._encode_settled(buffer)


@pytest.mark.parametrize("text", ["ACGT" * 25_000, " " * 100_000, "ab " * 33_000], ids=["DNA", "spaces", "words"])
def test_streaming_a_long_run_scans_each_character_a_few_times(text):
    """One piece of 100,000 DNA letters or spaces, in 100-character chunks: the work is linear.

    A piece is settled only once it ends, so the unsettled tail grows with the run; scanning it
    again after every chunk read 50 million characters here (500 per character). Ordinary words
    are scanned about once. Counted, not timed.
    """
    published = ours("cl100k_base")
    tokenizer = CountingTokenizer.__new__(CountingTokenizer)
    tokenizer.__dict__.update(published.__dict__, _cache={})
    chunks = [text[i:i + 100] for i in range(0, len(text), 100)]
    assert list(tokenizer.encode_iterable(chunks)) == published.encode(text)
    assert tokenizer.scanned <= 3 * len(text)
