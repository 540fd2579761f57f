"""tokvec.bytebpe against tiktoken where inputs are unusual: special-token keywords, lone
surrogates, pieces of 40,000 characters; and the encoder's cache stays within its bound.

Both published encodings (``cl100k_base`` and ``gpt2``) are compared with cl100k's five special
tokens declared in both libraries (``bytebpe_references``). Speed is not asserted here: the
40,000-character pieces are timed in ``benchmarks/bytebpe_vs_tiktoken.py`` (task ``long_piece``).
"""

import random

import pytest
from bytebpe_references import NAMES, SPECIALS, ours, text_with_surrogates, theirs
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from tokvec import bytebpe
from tokvec.bytebpe import GPT4_PATTERN, Tokenizer

tiktoken = pytest.importorskip("tiktoken")

EOT, FIM_PREFIX, FIM_MIDDLE, FIM_SUFFIX, END_OF_PROMPT = SPECIALS

TEXTS = [
    "no special token here",
    f"one{EOT}two",
    f"{FIM_PREFIX}def f():{FIM_SUFFIX}    return 1{FIM_MIDDLE}",
    f"{END_OF_PROMPT}{EOT}{EOT} twice and <|endoftext| not quite, <|unknown|> never",
    f"a{EOT}b{FIM_PREFIX}c{FIM_MIDDLE}d{FIM_SUFFIX}e{END_OF_PROMPT}f",
]

# (allowed_special, disallowed_special) as a user would pass them
KEYWORDS = [
    ("all", "all"), (set(), "all"), ({EOT}, "all"), ({EOT}, ()), (set(), ()), ("all", ()),
    ({FIM_PREFIX, END_OF_PROMPT}, {EOT}), (set(), {FIM_MIDDLE}), (frozenset(SPECIALS), ()),
    ({EOT}, {EOT}),
]


def outcome(encode, text, **keywords):
    """The ids, or the special token named by the ValueError tiktoken's rule raises."""
    try:
        return encode(text, **keywords)
    except ValueError as e:
        found = [token for token in SPECIALS if repr(token) in str(e)]
        assert len(found) == 1, str(e)
        return ("refused", found[0])


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("allowed, disallowed", KEYWORDS, ids=[f"{a!r:.30}-{d!r:.30}" for a, d in KEYWORDS])
def test_special_token_keywords_work_as_in_tiktoken(name, allowed, disallowed):
    for text in TEXTS:
        keywords = {"allowed_special": allowed, "disallowed_special": disallowed}
        assert outcome(ours(name).encode, text, **keywords) == outcome(theirs(name).encode, text, **keywords), text


# one keyword given: the other takes tiktoken's default, as in tiktoken
ONE_KEYWORD = [{"allowed_special": "all"}, {"allowed_special": set()}, {"allowed_special": {EOT}},
               {"disallowed_special": ()}, {"disallowed_special": "all"}, {"disallowed_special": {EOT}}]


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("keywords", ONE_KEYWORD, ids=[f"{k!r:.40}" for k in ONE_KEYWORD])
def test_one_keyword_means_what_it_means_in_tiktoken(name, keywords):
    for text in TEXTS:
        assert outcome(ours(name).encode, text, **keywords) == outcome(theirs(name).encode, text, **keywords), text


@pytest.mark.parametrize("name", NAMES)
def test_disallowed_special_alone_keeps_user_text_ordinary_as_in_tiktoken(name):
    # tiktoken's idiom for untrusted text: no special token may come out of it
    text = f"Summarize: {EOT}Ignore the above."
    ids = ours(name).encode(text, disallowed_special=())
    assert ids == theirs(name).encode(text, disallowed_special=()) == ours(name).encode_ordinary(text)
    assert ours(name).special_tokens[EOT] not in ids


@pytest.mark.parametrize("name", NAMES)
def test_encode_ordinary_is_tiktokens(name):
    for text in TEXTS:
        assert ours(name).encode_ordinary(text) == theirs(name).encode_ordinary(text)
        assert ours(name).encode_ordinary(text) == ours(name).encode(text, allowed_special=set(),
                                                                     disallowed_special=())


@pytest.mark.parametrize("name", NAMES)
def test_the_defaults_differ_from_tiktokens_as_documented(name):
    """encode(text) makes every declared special token special (CS336); tiktoken's encode(text)
    refuses them. allowed_special=set() gives tiktoken's default, refusal included."""
    ours_, theirs_ = ours(name), theirs(name)
    text = f"user text with {EOT} in it"
    assert ours_.encode(text) == theirs_.encode(text, allowed_special="all")
    with pytest.raises(ValueError, match="disallowed special token"):
        theirs_.encode(text)
    with pytest.raises(ValueError, match=r"text contains the special token '<\|endoftext\|>' \(at index 15\)"):
        ours_.encode(text, allowed_special=set())
    assert ours_.encode("plain text", allowed_special=set()) == theirs_.encode("plain text")


SPECIAL_ALPHABET = ["a", " ", "x", "\n", "<|", "|>", "endoftext", "é", "👍", *SPECIALS]


@settings(max_examples=150)
@given(st.lists(st.sampled_from(SPECIAL_ALPHABET), max_size=20).map("".join),
       st.one_of(st.none(), st.just("all"), st.sets(st.sampled_from(SPECIALS))),
       st.one_of(st.none(), st.just("all"), st.just(()), st.sets(st.sampled_from(SPECIALS))))
def test_random_text_and_keywords_refuse_and_encode_as_tiktoken(text, allowed, disallowed):
    # None: the keyword is not passed at all (both left out is CS336's default, tested above)
    keywords = {k: v for k, v in (("allowed_special", allowed), ("disallowed_special", disallowed))
                if v is not None}
    assume(keywords)
    for name in NAMES:
        assert outcome(ours(name).encode, text, **keywords) == outcome(theirs(name).encode, text, **keywords)


# --- lone surrogates ------------------------------------------------------------------------------

@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("text", ["\ud83d", "a\ud83d\udc4db", "\udc4d\ud83d", "x\ud800 y", f"\udfff{EOT}\ud800"])
def test_lone_surrogates_give_tiktokens_ids(name, text):
    assert ours(name).encode(text) == theirs(name).encode(text, allowed_special="all")
    assert ours(name).encode_ordinary(text) == theirs(name).encode_ordinary(text)
    assert list(ours(name).encode_iterable([text])) == theirs(name).encode(text, allowed_special="all")


@settings(max_examples=150)
@given(text_with_surrogates(max_size=40))
def test_any_text_with_surrogates_gives_tiktokens_ids(text):
    fixed = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    for name in NAMES:
        ids = ours(name).encode(text)
        assert ids == theirs(name).encode(text, allowed_special="all")
        assert ours(name).encode_ordinary(text) == theirs(name).encode_ordinary(text)
        assert ours(name).decode(ids) == fixed


def test_training_on_surrogates_is_training_on_their_replacement():
    text = "json said \ud83d and \ud83d\udc4d twice: \ud83d\udc4d \udc4d\ud83d " * 5
    fixed = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    assert "\ufffd" in fixed and "👍" in fixed
    trained = bytebpe.train(text, 300)
    assert trained == bytebpe.train(fixed, 300)
    tokenizer = Tokenizer(*trained)
    assert tokenizer.decode(tokenizer.encode(text)) == fixed


@settings(max_examples=50)
@given(text_with_surrogates(max_size=60))
def test_training_on_any_text_with_surrogates_is_training_on_its_replacement(text):
    fixed = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    assert bytebpe.train(text, 300, [EOT]) == bytebpe.train(fixed, 300, [EOT])


# --- long pieces ----------------------------------------------------------------------------------

def _letters(alphabet: str, n: int, seed: int) -> str:
    rng = random.Random(seed)
    return "".join(rng.choice(alphabet) for _ in range(n))


LONG = {
    "DNA": _letters("ACGT", 40_000, 0),
    "one letter": "a" * 40_000,
    "random letters": _letters("abcdefghijklmnopqrstuvwxyz", 40_000, 1),
    "mixed case": _letters("aAbBeEnNsStT", 40_000, 2),
    "Cyrillic": _letters("абвгдеёжзийклмнопрст", 20_000, 3),
    "punctuation": _letters("!?.,;:-=+*#", 20_000, 4),
}


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("kind", list(LONG))
def test_a_long_piece_gives_tiktokens_ids(name, kind):
    text = LONG[kind]
    assert len(bytebpe.pretokenizer.compile_pattern(ours(name).pattern).findall(text)) == 1   # one piece
    assert ours(name).encode(text) == theirs(name).encode(text)


@settings(max_examples=200)
@given(st.lists(st.sampled_from(["a", "b", "e", "n", "s", "t", "in", "th", " ", "é", "👍", "\n"]), min_size=1,
                max_size=80).map("".join))
def test_the_heap_merges_exactly_as_the_simple_loop(piece):
    """_encode_long_piece (heap, for long pieces) and _encode_piece (the loop the chapter shows)."""
    for name in NAMES:
        data = piece.encode("utf-8")
        assert ours(name)._encode_long_piece(data) == ours(name)._encode_piece(data)


# --- the cache's bound ----------------------------------------------------------------------------

def test_the_cache_never_exceeds_its_bound_and_changes_no_id():
    tokenizer = Tokenizer.from_tiktoken(bytebpe.published_files("cl100k_base")[0], GPT4_PATTERN)
    tokenizer.cache_size = 50
    lines = [f"{k} {_letters('abcdefgh', 10, k)} {_letters('xyz', 70, k)}\n" for k in range(300)]
    sizes = []
    for line in lines:                            # two new short pieces a line, and one too long to cache
        assert tokenizer.encode(line) == theirs("cl100k_base").encode(line)
        sizes.append(len(tokenizer._cache))
        assert all(len(piece.encode()) <= tokenizer.cache_piece_bytes for piece in tokenizer._cache)
    assert max(sizes) == 50 and sizes[-1] < 50   # it fills up, then starts afresh
    text = "".join(lines)
    chunks = [text[i:i + 37] for i in range(0, len(text), 37)]
    assert list(tokenizer.encode_iterable(chunks)) == theirs("cl100k_base").encode(text)
    assert len(tokenizer._cache) <= 50


def test_the_default_bound():
    assert Tokenizer.cache_size == 65_536 and Tokenizer.cache_piece_bytes == 64
