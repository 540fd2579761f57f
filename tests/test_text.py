"""Tests of tokvec.text: normalization, simple tokenizers and BPE (chapter 1)."""

import unicodedata
from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tokvec.text import (
    _SPACE_RUN,
    BPE,
    SENTENCE,
    SPACE_MARKER,
    char_tokenize,
    count_pairs,
    learn_merges,
    learn_merges_simple,
    load_corpus,
    merge_pair,
    normalize,
    pretokenize,
    train_hf_bpe,
    whitespace_tokenize,
    word_tokenize,
)

# Any text at all, except the one character the tokenizer reserves to mark spaces.
texts = st.text(alphabet=st.characters(blacklist_characters=SPACE_MARKER), max_size=60)


@pytest.fixture(scope="module")
def corpus():
    return load_corpus()


@pytest.fixture(scope="module")
def bpe(corpus):
    return BPE.train(corpus, 400)


# --- the corpus ---------------------------------------------------------------------------

def test_corpus_ships_with_the_package_and_starts_with_the_running_example(corpus):
    assert corpus.startswith(SENTENCE)
    assert len(corpus.split()) > 2000
    assert SPACE_MARKER not in corpus


# --- normalize ----------------------------------------------------------------------------

def test_normalize_unifies_composed_and_decomposed_characters():
    composed, decomposed = "caf\u00e9", "cafe\u0301"
    assert composed != decomposed
    assert normalize(composed) == normalize(decomposed) == composed


def test_normalize_collapses_whitespace_and_folds_width_and_case():
    assert normalize("  The\tcat\n\nsat\u00a0on  ") == "The cat sat on"
    assert normalize("\uff34he") == "The"  # full-width T
    assert normalize("The CAT", lowercase=True) == "the cat"


@given(texts, st.booleans())
def test_normalize_is_idempotent(text, lowercase):
    once = normalize(text, lowercase=lowercase)
    assert normalize(once, lowercase=lowercase) == once


@given(texts)
def test_normalize_output_is_nfkc_with_single_spaces(text):
    out = normalize(text)
    assert unicodedata.is_normalized("NFKC", out)
    assert out == _SPACE_RUN.sub(" ", out).strip(" ") and "  " not in out


@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40), st.booleans())
def test_normalize_is_a_fixed_point_on_any_unicode(text, lowercase):
    once = normalize(text, lowercase=lowercase)
    assert normalize(once, lowercase=lowercase) == once


def test_lowercase_normalize_settles_characters_that_nfkc_capitalizes():
    # NFKC turns the degree-Celsius sign into "°C": one pass of lower-then-NFKC left a capital C.
    assert normalize("\u2103", lowercase=True) == "°c"
    assert normalize("°c", lowercase=True) == "°c"
    assert normalize("\u212a", lowercase=True) == "k"  # KELVIN SIGN


def test_normalize_treats_whitespace_as_hugging_face_does():
    assert normalize("a\u3000b\u0085c\u2028d") == "a b c d"  # ideographic space, NEL, line separator
    assert normalize("a\x1fb") == "a\x1fb"                    # a unit separator is not a space
    assert whitespace_tokenize("a\x1cb c") == ["a\x1cb", "c"]


@pytest.mark.parametrize("fn", [normalize, whitespace_tokenize, word_tokenize, char_tokenize, pretokenize])
def test_text_functions_reject_non_strings_with_a_helpful_message(fn):
    with pytest.raises(TypeError, match=r"must be a str, got bytes .*decode"):
        fn(b"The cat")


# --- the three simple tokenizers -----------------------------------------------------------

def test_three_simple_tokenizers_on_the_running_example():
    assert whitespace_tokenize(SENTENCE) == ["The", "cat", "sat", "on", "the", "mat."]
    assert word_tokenize(SENTENCE) == ["The", "cat", "sat", "on", "the", "mat", "."]
    assert char_tokenize("a b") == ["a", " ", "b"]


@given(texts)
def test_word_tokenize_loses_only_whitespace(text):
    assert "".join(word_tokenize(text)) == "".join(whitespace_tokenize(text))


# --- pre-tokenization ----------------------------------------------------------------------

def test_pretokenize_glues_spaces_to_the_next_word():
    assert pretokenize(SENTENCE) == ["The", "\u2581cat", "\u2581sat", "\u2581on", "\u2581the", "\u2581mat", "."]


@given(texts)
def test_pretokenize_is_lossless_on_normalized_text(text):
    clean = normalize(text)
    words = pretokenize(clean)
    assert "".join(words).replace(SPACE_MARKER, " ") == clean
    assert all(SPACE_MARKER not in w[1:] for w in words)  # a marker only ever starts a word


def test_pretokenize_rejects_the_reserved_marker_and_unnormalized_text():
    with pytest.raises(ValueError, match=r"U\+2581\) at index 3"):
        pretokenize("The\u2581cat")
    with pytest.raises(ValueError, match="call tokvec.text.normalize"):
        pretokenize("The  cat")


# --- the BPE building blocks ----------------------------------------------------------------

def test_count_pairs_weights_each_word_by_its_count():
    splits = {"ab": ["a", "b"], "abab": ["a", "b", "a", "b"]}
    counts = Counter({"ab": 3, "abab": 1})
    assert count_pairs(splits, counts) == Counter({("a", "b"): 5, ("b", "a"): 1})


def test_merge_pair_merges_left_to_right_without_overlap():
    assert merge_pair(list("aaa"), ("a", "a")) == ["aa", "a"]
    assert merge_pair(["x", "ab", "c"], ("b", "c")) == ["x", "ab", "c"]  # "b" inside "ab" is not a symbol
    assert merge_pair(list("abcab"), ("a", "b")) == ["ab", "c", "ab"]


def test_bpe_first_merge_follows_the_tie_break_rule():
    # Words: "ab", "▁ab" x2, "▁ac". Pairs (a,b) and (▁,a) both occur 3 times; (a,b) wins the tie
    # because "a" entered the vocabulary (code-point order) before "▁" (U+2581).
    bpe = BPE.train("ab ab ab ac", vocab_size=6, min_frequency=1)
    assert bpe.alphabet == ["a", "b", "c", SPACE_MARKER]
    assert bpe.merges[0] == ("a", "b")
    assert bpe.merges[1] == (SPACE_MARKER, "ab")


def test_bpe_worked_example_of_the_chapter():
    bpe = BPE.train("walk walked walking talk talked", vocab_size=100, min_frequency=2)
    assert bpe.merges[:3] == [("a", "l"), ("al", "k"), ("w", "alk")]
    assert bpe.tokenize("walked") == ["walk", "ed"]


def test_bpe_stops_at_vocab_size_and_at_min_frequency(corpus, bpe):
    assert len(bpe.vocab) == 400
    assert len(bpe.vocab) == len(set(bpe.vocab))
    small = BPE.train("abc abd", vocab_size=100, min_frequency=2)
    assert small.merges == [("a", "b")]  # every other pair occurs once


def test_bpe_training_is_deterministic(corpus, bpe):
    assert BPE.train(corpus, 400).merges == bpe.merges


def test_bpe_train_rejects_bad_arguments():
    with pytest.raises(ValueError, match="vocab_size must be a positive int, got 0"):
        BPE.train("the cat", 0)
    with pytest.raises(ValueError, match="corpus is empty"):
        BPE.train("   ", 10)
    with pytest.raises(TypeError, match="corpus must be a str"):
        BPE.train(["the cat"], 10)


@given(texts)
def test_bpe_detokenize_inverts_tokenize(bpe, text):
    assert BPE.detokenize(bpe.tokenize(text)) == normalize(text)


@given(st.text(alphabet=st.sampled_from("abcdefghijklmnopqrstuvwxyz .,"), max_size=80))
def test_bpe_never_needs_an_unknown_token_on_its_alphabet(bpe, text):
    vocab = set(bpe.vocab)
    assert all(token in vocab for token in bpe.tokenize(text))


def test_bpe_is_shorter_than_characters_on_held_out_text(corpus):
    lines = corpus.splitlines()
    bpe = BPE.train("\n".join(lines[:48]), 400)
    held_out = " ".join(lines[48:])
    assert len(bpe.tokenize(held_out)) < 0.5 * len(normalize(held_out))


# --- agreement with Hugging Face tokenizers -------------------------------------------------

def test_same_merges_as_hugging_face_tokenizers(corpus, bpe):
    hf = train_hf_bpe(corpus, 400)
    import json

    hf_merges = [tuple(m) for m in json.loads(hf.to_str())["model"]["merges"]]
    assert hf_merges == bpe.merges


def test_same_tokens_as_hugging_face_tokenizers(corpus, bpe):
    hf = train_hf_bpe(corpus, 400)
    for line in corpus.splitlines()[::7]:
        assert hf.encode(line).tokens == bpe.tokenize(line)


# --- the fast versions give exactly what the readable ones give -----------------------------

small_words = st.text(alphabet="abcd", min_size=1, max_size=12)


@given(st.dictionaries(small_words, st.integers(1, 5), min_size=1, max_size=12),
       st.integers(4, 40), st.integers(1, 3))
def test_learn_merges_equals_the_simple_loop(word_counts, vocab_size, min_frequency):
    counts = Counter(word_counts)
    alphabet = sorted({ch for word in counts for ch in word})
    assert (learn_merges(counts, alphabet, vocab_size, min_frequency)
            == learn_merges_simple(counts, alphabet, vocab_size, min_frequency))


def test_learn_merges_equals_the_simple_loop_on_the_corpus(corpus):
    counts = Counter(pretokenize(normalize(corpus)))
    alphabet = sorted({ch for word in counts for ch in word})
    assert learn_merges(counts, alphabet, 600) == learn_merges_simple(counts, alphabet, 600)


@given(st.lists(st.tuples(small_words, small_words), max_size=10), st.text(alphabet="abcd", max_size=40))
def test_tokenize_word_equals_the_simple_version(pairs, word):
    # any merges whose parts exist: build them from random pairs, keeping only valid ones
    alphabet, merges, known = list("abcd"), [], set("abcd")
    for a, b in pairs:
        if a in known and b in known and (a, b) not in merges:
            merges.append((a, b))
            known.add(a + b)
    bpe = BPE(alphabet, merges)
    assert bpe.tokenize_word(word) == bpe.tokenize_word_simple(word)


def test_tokenize_word_equals_the_simple_version_on_the_corpus(corpus, bpe):
    for word in set(pretokenize(normalize(corpus))):
        assert bpe.tokenize_word(word) == bpe.tokenize_word_simple(word)


def test_tokenize_word_on_a_long_word_merges_leftmost_first():
    bpe = BPE(["a"], [("a", "a"), ("aa", "aa")])
    assert bpe.tokenize_word("a" * 7) == bpe.tokenize_word_simple("a" * 7) == ["aaaa", "aa", "a"]
    long = bpe.tokenize_word("a" * 100_001)
    assert long == ["aaaa"] * 25_000 + ["a"]


# --- BPE(alphabet, merges) checks what it is given -------------------------------------------

@pytest.mark.parametrize("alphabet, merges, message", [
    (["a", "b"], [("a", "c")], r"merges\[0\] = \('a', 'c'\) uses 'c', which is neither in the alphabet"),
    (["a", "b"], [("ab", "a")], r"uses 'ab'.*earlier merge"),
    (["a", "b"], [("a", "b"), ("b", "ba")], r"merges\[1\].*uses 'ba'"),
    (["a", "b"], [("a",)], r"merges\[0\] = \('a',\) is not a pair"),
    (["a", "b"], ["ab"], r"merges\[0\] = 'ab' is not a pair"),
    (["a", "b"], [("a", "")], "non-empty"),
    (["ab"], [], r"alphabet\[0\] = 'ab' is not a single character"),
    (["a", "a"], [], "holds 'a' twice"),
])
def test_bpe_rejects_merges_of_symbols_that_were_never_made(alphabet, merges, message):
    with pytest.raises(ValueError, match=message):
        BPE(alphabet, merges)


def test_bpe_rejects_wrong_container_types():
    with pytest.raises(TypeError, match="alphabet must be a list of single characters.*list\\(text\\)"):
        BPE("ab", [])
    with pytest.raises(TypeError, match="merges must be a list"):
        BPE(["a"], None)


def test_bpe_accepts_the_merges_it_learned(bpe):
    again = BPE(bpe.alphabet, bpe.merges)
    assert again.tokenize("The cat sat on the mat.") == bpe.tokenize("The cat sat on the mat.")


# --- exactly Hugging Face's word characters and whitespace, on every code point ---------------

def test_character_classes_equal_hugging_face_on_every_code_point():
    import importlib.util
    from pathlib import Path

    import tokenizers

    from tokvec import _unicode_classes
    from tokvec.text import _PRETOKEN_RE

    path = Path(__file__).resolve().parent.parent / "tools" / "gen_unicode_classes.py"
    spec = importlib.util.spec_from_file_location("gen_unicode_classes", path)
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    assert tokenizers.__version__ == _unicode_classes.TOKENIZERS_VERSION, "re-run tools/gen_unicode_classes.py"
    assert gen.encode(gen.hf_class(r"\w")) == _unicode_classes.WORD
    assert gen.encode(gen.hf_class(r"\s")) == _unicode_classes.SPACE
    # and the compiled pattern uses them: a Devanagari vowel sign is part of the word
    assert _PRETOKEN_RE.findall("गाँव") == ["गाँव"]


# Text in many scripts, written for these tests: marks that Python's \w leaves out (Devanagari
# vowel signs, Arabic harakat, Hebrew niqqud, Thai vowels and tones, Russian stress marks),
# joiners, and whitespace that Python and Hugging Face disagree on.
MULTILINGUAL = [
    "गाँव में बच्चे खेल रहे हैं और बारिश हो रही है। हिंदी में मात्राएँ शब्द का हिस्सा हैं।",
    "ذَهَبَ الوَلَدُ إِلَى المَدْرَسَةِ صَبَاحًا، وَقَرَأَ كِتَابًا جَمِيلًا.",
    "בְּרֵאשִׁית בָּרָא אֱלֹהִים אֵת הַשָּׁמַיִם וְאֵת הָאָרֶץ.",
    "ภาษาไทยไม่มีการเว้นวรรคระหว่างคำ แต่มีวรรณยุกต์และสระ",
    "Мы́ говори́м по-ру́сски, и ударе́ние ва́жно для чте́ния.",
    "Größe, naïve café, 東京 と 大阪, 😀 and a\u200dzwj or\u200cnon-joiner.",
    "tabs\tand\u3000ideographic\u00a0spaces\u0085next\x1cfile\x1dgroup\x1erecord\x1funit  end",
    "The cat sat on the mat. The dog sat on the log.",
]


def _multilingual_corpus(form: str) -> str:
    return "\n".join(unicodedata.normalize(form, line) for line in MULTILINGUAL * 3)


@pytest.mark.parametrize("form", ["NFC", "NFD"])
def test_same_merges_tokens_and_ids_as_hugging_face_on_many_scripts(form):
    import json

    text = _multilingual_corpus(form)
    ours = BPE.train(text, 300, min_frequency=2)
    hf = train_hf_bpe(text, 300, min_frequency=2)
    hf_merges = [tuple(m) for m in json.loads(hf.to_str())["model"]["merges"]]
    assert hf_merges == ours.merges
    assert hf.get_vocab() == {token: i for i, token in enumerate(ours.vocab)}
    ids = {token: i for i, token in enumerate(ours.vocab)}
    for line in text.splitlines():
        assert hf.encode(line).tokens == ours.tokenize(line)
        assert hf.encode(line).ids == [ids[t] for t in ours.tokenize(line)]
