"""Tests of tokvec.vocab.Vocabulary (chapter 2)."""

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tokvec.text import BPE, SENTENCE, load_corpus, normalize, train_hf_bpe, word_tokenize
from tokvec.vocab import SPECIALS, UnknownTokenError, Vocabulary

tokens = st.text(min_size=1, max_size=6)


@pytest.fixture(scope="module")
def vocab():
    return Vocabulary.from_corpus(word_tokenize(load_corpus()))


def test_specials_have_fixed_ids(vocab):
    assert SPECIALS == ("<pad>", "<unk>", "<bos>", "<eos>")
    assert [vocab.token_to_id(s) for s in SPECIALS] == [0, 1, 2, 3]
    assert vocab.unk_id == 1


def test_from_corpus_orders_by_frequency_then_alphabetically():
    vocab = Vocabulary.from_corpus(["b", "a", "c", "a", "b", "a", "d"])
    assert vocab.tokens == [*SPECIALS, "a", "b", "c", "d"]
    assert vocab.counts["a"] == 3


def test_from_corpus_does_not_depend_on_corpus_order():
    words = word_tokenize(load_corpus())
    assert Vocabulary.from_corpus(words) == Vocabulary.from_corpus(list(reversed(words)))


def test_min_count_and_max_size():
    stream = ["a"] * 3 + ["b"] * 2 + ["c"]
    assert Vocabulary.from_corpus(stream, min_count=2).tokens == [*SPECIALS, "a", "b"]
    assert len(Vocabulary.from_corpus(stream, max_size=5)) == 5
    assert Vocabulary.from_corpus(stream, max_size=5).tokens[-1] == "a"


def test_specials_in_the_corpus_are_not_counted_twice():
    vocab = Vocabulary.from_corpus(["<unk>", "cat", "<unk>"])
    assert vocab.tokens == [*SPECIALS, "cat"]


def test_encode_decode_the_running_example(vocab):
    ids = vocab.encode(word_tokenize(SENTENCE), add_bos_eos=True)
    assert ids[0] == 2 and ids[-1] == 3
    assert len(ids) == 9
    assert vocab.decode(ids, skip_specials=True) == word_tokenize(SENTENCE)
    assert vocab.token_to_id("The") != vocab.token_to_id("the")


def test_case_folding_gives_the_and_The_one_id():
    folded = Vocabulary.from_corpus(word_tokenize(normalize(load_corpus(), lowercase=True)))
    assert "The" not in folded
    plain = Vocabulary.from_corpus(word_tokenize(load_corpus()))
    assert len(folded) < len(plain)


def test_unknown_tokens_map_to_unk(vocab):
    assert vocab.encode(["zyzzyva"]) == [1]
    assert vocab.decode(vocab.encode(["zyzzyva"])) == ["<unk>"]


@pytest.mark.parametrize("special", SPECIALS)
def test_text_cannot_produce_a_special_id(vocab, special):
    """A token spelled like a special is refused, as tiktoken refuses special text by default."""
    tokens = ["the", special, "dog"]
    with pytest.raises(ValueError, match=rf"token '{special}' at position 1 is the special token.*allow_specials=True"):
        vocab.encode(tokens)
    with pytest.raises(ValueError, match="special token"):
        vocab.encode(iter(tokens), add_bos_eos=True)
    assert vocab.encode(tokens, allow_specials=True)[1] == SPECIALS.index(special)


def test_decoded_specials_re_encode_with_allow_specials(vocab):
    ids = vocab.encode(word_tokenize(SENTENCE), add_bos_eos=True)
    assert vocab.encode(vocab.decode(ids), allow_specials=True) == ids


def test_allow_specials_is_a_flag(vocab):
    for bad in (None, 1, "yes"):
        with pytest.raises(TypeError, match="allow_specials"):
            vocab.encode(["the"], allow_specials=bad)


def test_a_vocabulary_without_specials_encodes_their_spelling_as_text():
    plain = Vocabulary(["<pad>", "cat"], specials=(), unk_token=None)
    assert plain.encode(["<pad>", "cat"]) == [0, 1]


def test_skip_specials_keeps_unk_so_the_length_is_kept(vocab):
    ids = vocab.encode(["the", "zyzzyva", "cat"], add_bos_eos=True) + [0, 0]   # <bos> ... <eos> <pad> <pad>
    assert vocab.decode(ids, skip_specials=True) == ["the", "<unk>", "cat"]


@given(st.lists(tokens, min_size=1, max_size=30))
def test_round_trip_on_any_corpus(stream):
    vocab = Vocabulary.from_corpus(stream)
    known = [t for t in stream if t not in SPECIALS]
    assert vocab.decode(vocab.encode(known)) == known
    assert len(vocab) == len(SPECIALS) + len(set(known))


@given(st.lists(tokens, min_size=1, max_size=30, unique=True))
def test_ids_are_exactly_0_to_len_minus_1(stream):
    vocab = Vocabulary(t for t in stream if t not in SPECIALS)
    assert sorted(vocab.encode(vocab.tokens, allow_specials=True)) == list(range(len(vocab)))


@given(st.lists(tokens, min_size=1, max_size=20))
def test_save_load_round_trip(tmp_path_factory, stream):
    path = tmp_path_factory.mktemp("v") / "vocab.json"
    vocab = Vocabulary.from_corpus(stream)
    vocab.save(path)
    assert Vocabulary.load(path) == vocab


def test_bpe_vocabulary_gives_the_same_ids_as_hugging_face():
    corpus = load_corpus()
    vocab = Vocabulary(BPE.train(corpus, 400).vocab)
    hf = train_hf_bpe(corpus, 400, special_tokens=SPECIALS, unk_token="<unk>")
    bpe = BPE.train(corpus, 400)
    text = " ".join(corpus.splitlines()[40:]) + " \U0001F600"  # ends with a character never seen
    assert vocab.encode(bpe.tokenize(text)) == hf.encode(text).ids
    assert vocab.encode(bpe.tokenize(text))[-1] == vocab.unk_id


# --- bad input: each error names the value, the valid range and the fix -----------------------

def test_unknown_token_without_unk_is_an_error():
    closed = Vocabulary(["cat"], specials=(), unk_token=None)
    message = r"'dog' \(position 1\) is not in this vocabulary of 1 tokens.*unk_token='<unk>'"
    with pytest.raises(UnknownTokenError, match=message):
        closed.encode(["cat", "dog"])
    assert str(UnknownTokenError("x")) == "x"  # printed without KeyError's quotes
    assert isinstance(UnknownTokenError("x"), KeyError)


@pytest.mark.parametrize("bad", [3, None, b"cat", 1.5])
def test_non_string_token_is_an_error(vocab, bad):
    with pytest.raises(TypeError, match=rf"token at position 1 is {type(bad).__name__} .*not str"):
        vocab.encode(["cat", bad])


def test_encoding_a_whole_string_is_an_error(vocab):
    with pytest.raises(TypeError, match="encode takes a list of tokens, got the str"):
        vocab.encode("The cat")


@pytest.mark.parametrize("bad", [-1, -len(SPECIALS), 10**6])
def test_out_of_range_ids_never_wrap_around(vocab, bad):
    message = rf"id {bad} at position 0 is out of range: valid ids are 0\.\.{len(vocab) - 1}"
    with pytest.raises(IndexError, match=message):
        vocab.decode([bad])


@pytest.mark.parametrize("bad", [1.0, "3", True, None])
def test_non_integer_ids_are_an_error(vocab, bad):
    message = rf"id at position 0 is {type(bad).__name__} .*not int; ids are whole numbers in 0\.\."
    with pytest.raises(TypeError, match=message):
        vocab.decode([bad])


def test_numpy_integer_ids_are_accepted(vocab):
    import numpy as np

    assert vocab.decode(np.array([2, 3])) == ["<bos>", "<eos>"]


def test_empty_corpus_is_an_error():
    with pytest.raises(ValueError, match=r"empty corpus \(0 tokens\)"):
        Vocabulary.from_corpus([])


@pytest.mark.parametrize("kwargs, message", [
    ({"min_count": 0}, "min_count must be an int >= 1, got 0"),
    ({"max_size": 2}, r"max_size must be an int >= 4 \(the number of specials\), got 2"),
])
def test_bad_build_arguments_are_errors(kwargs, message):
    with pytest.raises(ValueError, match=message):
        Vocabulary.from_corpus(["a"], **kwargs)


def test_duplicate_tokens_are_an_error():
    with pytest.raises(ValueError, match=r"'cat' appears twice \(ids 4 and 5\)"):
        Vocabulary(["cat", "cat"])


def test_unk_token_must_be_a_special():
    with pytest.raises(ValueError, match="unk_token '<oov>' must be one of the specials"):
        Vocabulary(["cat"], unk_token="<oov>")


def _signed(data: dict) -> str:
    """A vocabulary file whose SHA-256 matches its content, to reach the checks after it."""
    data = dict(data)
    data["sha256"] = Vocabulary._digest(data)
    return json.dumps(data)


V2 = {"format": "tokvec.vocabulary", "version": 2, "specials": ["<unk>"], "unk_token": "<unk>",
      "tokens": ["a"], "counts": {}}


@pytest.mark.parametrize("content, message", [
    ('{"format": "tokvec.vocabulary", "version": 2, "tokens": ["a"', "not UTF-8 JSON"),
    ("[1, 2, 3]", "expected a JSON object with format='tokvec.vocabulary'"),
    ('{"format": "tokvec.vocabulary", "version": 99}', "format version 99"),
    ('{"format": "tokvec.vocabulary", "version": 1, "specials": [], "unk_token": null, "tokens": []}',
     "format version 1.*save it"),
    ('{"format": "tokvec.vocabulary", "version": 2, "tokens": []}',
     r"missing keys \['counts', 'sha256', 'specials', 'unk_token'\]"),
    (json.dumps({**V2, "sha256": "0" * 64}), "does not match the SHA-256"),
    (_signed({**V2, "tokens": "abc"}), "'tokens' must be a list of strings"),
    (_signed({**V2, "tokens": ["a", "a"]}), "token 'a' appears twice"),
    (_signed({**V2, "tokens": ["a", 7]}), "token at position 2 is int"),
    (_signed({**V2, "counts": {"a": -1}}), "'counts' must map tokens to counts >= 0"),
    (_signed({**V2, "extra": 1}), r"unexpected keys \['extra'\]"),
    ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
    (b"\xff\xfe not text", "not UTF-8 JSON"),
])
def test_corrupted_files_are_errors_that_name_the_file(tmp_path, content, message):
    path = tmp_path / "vocab.json"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    with pytest.raises(ValueError, match=message) as info:
        Vocabulary.load(path)
    assert str(path) in str(info.value)


def test_every_single_byte_corruption_is_an_error_or_the_same_vocabulary(tmp_path):
    vocab = Vocabulary.from_corpus(["the", "cat", "sat", "on", "the", "mat", ",", "the", "end"])
    path = tmp_path / "v.json"
    vocab.save(path)
    original = path.read_bytes()
    changed_silently = 0
    for i in range(len(original)):
        for new in {original[i] ^ 0x01, ord("x"), ord(" ")} - {original[i]}:
            path.write_bytes(original[:i] + bytes([new]) + original[i + 1:])
            try:
                loaded = Vocabulary.load(path)
            except ValueError:
                continue
            # only harmless changes load (whitespace between JSON items): the very same vocabulary
            assert loaded == vocab and loaded.counts == vocab.counts, (i, new)
            changed_silently += 1
    assert changed_silently < len(original)  # most corruptions are caught; none changes an id


def test_save_keeps_the_counts(tmp_path, vocab):
    path = tmp_path / "vocab.json"
    vocab.save(path)
    loaded = Vocabulary.load(path)
    assert loaded.counts == vocab.counts and loaded.counts["the"] > 100


def test_failed_save_leaves_the_old_file_byte_identical(tmp_path, vocab):
    path = tmp_path / "vocab.json"
    vocab.save(path)
    before = path.read_bytes()
    broken = Vocabulary(["ok", "\ud800"])  # a lone surrogate: not encodable as UTF-8
    with pytest.raises(ValueError, match=r"cannot save token '\\ud800'.*was not changed"):
        broken.save(path)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["vocab.json"]  # no temporary file left behind


def test_save_replaces_the_file_in_one_step(tmp_path, vocab, monkeypatch):
    import os

    path = tmp_path / "vocab.json"
    Vocabulary(["old"]).save(path)
    before = path.read_bytes()

    def disk_full(*args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", disk_full)  # fails after the temporary file is written
    with pytest.raises(OSError, match="No space"):
        vocab.save(path)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["vocab.json"]


def test_a_bare_string_is_not_a_list_of_tokens():
    with pytest.raises(TypeError, match=r"tokens must be an iterable of tokens.*one token per character"):
        Vocabulary.from_corpus("a plain string")
    with pytest.raises(TypeError, match="tokens must be an iterable of tokens"):
        Vocabulary("abc")
    with pytest.raises(TypeError, match="specials must be an iterable"):
        Vocabulary(["a"], specials="<unk>", unk_token=None)


def test_bos_eos_requested_from_a_vocabulary_without_them():
    vocab = Vocabulary(["cat"], specials=("<pad>", "<unk>"))
    with pytest.raises(ValueError, match=r"add_bos_eos=True needs <bos> and <eos>.*add_bos_eos=False"):
        vocab.encode(["cat"], add_bos_eos=True)
    assert vocab.encode(["cat", "dog"]) == [2, 1]


def test_saved_file_is_readable_json(tmp_path, vocab):
    path = tmp_path / "vocab.json"
    vocab.save(path)
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["specials"] == list(SPECIALS)
    assert len(data["tokens"]) == len(vocab) - len(SPECIALS)


def test_repr_fits_one_line_of_the_page_and_shows_what_fits():
    small = Vocabulary(["a", "b"])
    assert repr(small) == "Vocabulary(6 tokens: ['<pad>', '<unk>', '<bos>', '<eos>', 'a', 'b'], unk_token='<unk>')"
    large = Vocabulary([f"token{i}" for i in range(1000)])
    assert len(repr(large)) <= 88 and repr(large).startswith("Vocabulary(1004 tokens: ['<pad>'")
    assert ", ...]" in repr(large)
