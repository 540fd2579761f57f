"""Tokenizer.save and Tokenizer.from_files: GPT-2's file format, written and read back.

GPT-2 publishes its tokenizer as ``encoder.json`` (token -> id) and ``vocab.bpe`` (a ``#version``
line, then the merges), both in GPT-2's printable-byte alphabet. ``from_files`` (CS336's
signature) reads them and gives tiktoken's ``gpt2`` ids; ``save`` writes the same format, byte
for byte the same files for GPT-2 itself; a trained tokenizer saved and read back encodes
identically, special tokens and tokens that are not valid UTF-8 included.
"""

import json

import pytest
from bytebpe_references import theirs
from hypothesis import given, settings
from hypothesis import strategies as st

from tokvec import bytebpe
from tokvec.bytebpe import GPT4_PATTERN, Tokenizer
from tokvec.text import load_corpus

tiktoken = pytest.importorskip("tiktoken")
from test_bytebpe import TEXTS  # noqa: E402

EOT = "<|endoftext|>"


@pytest.fixture(scope="module")
def gpt2_files():
    return bytebpe.published_files("gpt2")


def test_from_files_on_gpt2s_own_files_gives_tiktokens_ids(gpt2_files):
    tokenizer = Tokenizer.from_files(*gpt2_files, special_tokens=[EOT])      # CS336's call
    for text in TEXTS:
        assert tokenizer.encode(text) == theirs("gpt2").encode(text, allowed_special={EOT}, disallowed_special=())


def test_from_gpt2_is_from_files_with_gpt2s_special_token(gpt2_files):
    a, b = Tokenizer.from_gpt2(*gpt2_files), Tokenizer.from_files(*gpt2_files, special_tokens=[EOT])
    assert (a.vocab, a.merges, a.special_tokens, a.pattern) == (b.vocab, b.merges, b.special_tokens, b.pattern)
    assert Tokenizer.from_files(*gpt2_files).special_tokens == {}                 # CS336's default: none


def test_save_writes_gpt2s_own_files_byte_for_byte(gpt2_files, tmp_path):
    Tokenizer.from_files(*gpt2_files, special_tokens=[EOT]).save(tmp_path / "encoder.json", tmp_path / "vocab.bpe")
    assert (tmp_path / "encoder.json").read_bytes() == gpt2_files[0].read_bytes()
    assert (tmp_path / "vocab.bpe").read_bytes() == gpt2_files[1].read_bytes()


@pytest.fixture(scope="module")
def trained():
    """Trained on English and on scripts it sees little of, so some tokens are parts of characters."""
    text = load_corpus() + (" नमस्ते दुनिया 東京 👩\u200d👩\u200d👧 Привет " * 20) + f"{EOT}<|im_start|>"
    specials = [EOT, "<|im_start|>", "<|im_end|>"]             # the last is not in the text
    return Tokenizer(*bytebpe.train(text, 700, specials), specials), specials


def test_a_trained_tokenizer_round_trips_through_the_files(trained, tmp_path):
    tokenizer, specials = trained
    broken = [t for t in tokenizer.vocab.values() if not _valid_utf8(t)]
    assert broken, "the test needs tokens that are not valid UTF-8 on their own"
    tokenizer.save(tmp_path / "vocab.json", tmp_path / "merges.txt")
    again = Tokenizer.from_files(tmp_path / "vocab.json", tmp_path / "merges.txt", special_tokens=specials)
    assert again.vocab == tokenizer.vocab and again.merges == tokenizer.merges
    assert again.special_tokens == tokenizer.special_tokens
    text = f"नमस्ते{EOT}東京 👍 Привет<|im_end|> the cat"
    assert again.encode(text) == tokenizer.encode(text)
    assert again.decode(tokenizer.encode(text)) == text


@pytest.fixture(scope="module")
def read_back(trained, tmp_path_factory):
    tokenizer, specials = trained
    folder = tmp_path_factory.mktemp("saved")
    tokenizer.save(folder / "vocab.json", folder / "merges.txt")
    return Tokenizer.from_files(folder / "vocab.json", folder / "merges.txt", special_tokens=specials)


@settings(max_examples=50)
@given(st.text(max_size=80))
def test_a_saved_and_read_tokenizer_encodes_any_text_identically(trained, read_back, text):
    assert read_back.encode(text) == trained[0].encode(text)


def _valid_utf8(token: bytes) -> bool:
    try:
        token.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def test_the_files_are_gpt2s_format(trained, tmp_path):
    tokenizer, _ = trained
    tokenizer.save(tmp_path / "vocab.json", tmp_path / "merges.txt")
    lines = (tmp_path / "merges.txt").read_text(encoding="utf-8").splitlines()
    assert lines[0] == "#version: 0.2" and len(lines) == 1 + len(tokenizer.merges)
    assert all(len(line.split(" ")) == 2 for line in lines[1:])
    to_char = bytebpe.gpt2_bytes_to_unicode()
    a, b = tokenizer.merges[0]
    assert lines[1] == "".join(to_char[x] for x in a) + " " + "".join(to_char[x] for x in b)
    vocab = json.loads((tmp_path / "vocab.json").read_text(encoding="utf-8"))
    assert vocab["Ġthe"] == tokenizer.encode(" the")[0] and vocab[EOT] == tokenizer.special_tokens[EOT]
    assert sorted(vocab.values()) == sorted(tokenizer.vocab)


def test_a_merges_file_without_the_version_line_is_read_too(trained, tmp_path):
    """CS336's reference merges have no header; only a first line may be one."""
    tokenizer, specials = trained
    tokenizer.save(tmp_path / "vocab.json", tmp_path / "merges.txt")
    lines = (tmp_path / "merges.txt").read_text(encoding="utf-8").splitlines()
    (tmp_path / "merges.txt").write_text("\n".join(lines[1:]) + "\n", encoding="utf-8")
    again = Tokenizer.from_files(tmp_path / "vocab.json", tmp_path / "merges.txt", special_tokens=specials)
    assert again.merges == tokenizer.merges


def test_the_merges_recovered_from_gpt2s_ranks_are_gpt2s_merges(gpt2_files):
    """tiktoken keeps only ranks; BPE on each token with the lower ranks gives back vocab.bpe."""
    ranks = theirs("gpt2")._mergeable_ranks
    assert bytebpe.merges_from_ranks(ranks) == Tokenizer.from_files(*gpt2_files).merges


def test_a_tokenizer_read_from_a_rank_file_saves_and_reads_back(tmp_path):
    cl100k = bytebpe.published("cl100k_base")
    cl100k.save(tmp_path / "vocab.json", tmp_path / "merges.txt")                 # merges recovered
    specials = list(cl100k.special_tokens)
    again = Tokenizer.from_files(tmp_path / "vocab.json", tmp_path / "merges.txt", specials, pattern=GPT4_PATTERN)
    assert again.special_tokens == cl100k.special_tokens
    for text in TEXTS:
        assert again.encode(text) == theirs("cl100k_base").encode(text, allowed_special="all")


def test_ranks_that_no_bpe_could_make_are_refused():
    ranks = {bytes([b]): b for b in range(256)} | {b"abc": 256}       # no rank for ab or bc
    with pytest.raises(ValueError, match=r"token b'abc' \(rank 256\) cannot be made from tokens of lower rank"):
        bytebpe.merges_from_ranks(ranks)
