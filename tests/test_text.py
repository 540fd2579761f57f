"""Tests of tokvec.text: normalization, simple tokenizers and BPE (chapter 1)."""

import unicodedata
from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tokvec.text import (
    BPE,
    SENTENCE,
    SPACE_MARKER,
    char_tokenize,
    count_pairs,
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
    assert out == " ".join(out.split())


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
    assert "".join(word_tokenize(text)) == "".join(text.split())


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
