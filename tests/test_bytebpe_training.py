"""tokvec.bytebpe.train_file: a file read in ranges that begin at a special token, counted in parallel.

Whatever the number of workers and the size of the ranges, ``train_file`` must learn exactly the
vocabulary and merges that ``train`` learns from the file's text; every cut must fall at the start
of a special token that no other occurrence straddles; and no range may be read whole when the
file is larger than ``chunk_bytes`` (the point: files larger than memory).
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokvec import bytebpe
from tokvec.bytebpe import GPT4_PATTERN, chunk_boundaries, train, train_file, train_slow
from tokvec.bytebpe import training as training_module

EOT = "<|endoftext|>"


def documents(n_docs: int = 60, seed: int = 0) -> str:
    """Short documents with CR/LF, accents, CJK, digits and contractions, joined by ``<|endoftext|>``."""
    rng = random.Random(seed)
    words = ["the", "cat", "sat", "we'll", "they're", "café", "naïve", "東京", "2024", "x=1;", "  ", "\r\n",
             "\n", "ü", "on", "mat", "I've", "DON'T", "🙂", "<|end"]
    words += ["".join(rng.choice("abcdefghé") for _ in range(rng.randrange(1, 9))) for _ in range(150)]
    return EOT.join(" ".join(rng.choice(words) for _ in range(rng.randrange(0, 40))) for _ in range(n_docs))


def write(tmp_path, text: str, name: str = "text.txt"):
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8"))
    return path


@pytest.mark.parametrize("workers", [1, 2, 4])
@pytest.mark.parametrize("chunk_bytes", [1, 97, 1 << 20])
def test_train_file_learns_exactly_what_train_learns(tmp_path, workers, chunk_bytes):
    text = documents()
    path = write(tmp_path, text)
    expected = train(text, 400, [EOT])
    assert len(expected[1]) > 100                        # enough merges for a difference to show
    assert train_file(path, 400, [EOT], num_workers=workers, chunk_bytes=chunk_bytes) == expected


def test_train_file_with_gpt4_pattern_and_two_special_tokens(tmp_path):
    text = documents(seed=1).replace("cat", "<|pad|>", 5)
    path = write(tmp_path, text)
    specials = [EOT, "<|pad|>"]
    expected = train(text, 350, specials, pattern=GPT4_PATTERN)
    for workers in (1, 2):
        assert train_file(str(path), 350, specials, pattern=GPT4_PATTERN, num_workers=workers,
                          chunk_bytes=64) == expected


def test_train_file_without_special_tokens_is_one_range(tmp_path):
    text = documents().replace(EOT, " ")
    path = write(tmp_path, text)
    assert chunk_boundaries(path, 10, []) == [0, len(text.encode())]
    assert train_file(path, 300, num_workers=2, chunk_bytes=10) == train(text, 300)


def check_boundaries(data: bytes, bounds: list[int], tokens: list[bytes], chunk_bytes: int) -> None:
    assert bounds[0] == 0 and bounds[-1] == len(data)
    assert bounds == sorted(set(bounds))
    for cut in bounds[1:-1]:
        assert any(data.startswith(t, cut) for t in tokens), f"cut at {cut} is not at a special token"
        for t in tokens:                                  # no occurrence may straddle the cut
            for back in range(1, len(t)):
                assert not data.startswith(t, cut - back), f"{t!r} straddles the cut at {cut}"
    for a, b in zip(bounds[:-2], bounds[1:-1]):         # every range but the last is at least chunk_bytes
        assert b - a >= chunk_bytes


@pytest.mark.parametrize("window", [8, 1 << 16])
@pytest.mark.parametrize("chunk_bytes", [1, 5, 50, 333])
def test_chunk_boundaries_fall_only_on_special_tokens(tmp_path, monkeypatch, window, chunk_bytes):
    monkeypatch.setattr(training_module, "_WINDOW", window)     # a small window: tokens across two reads
    text = documents(seed=2)
    path = write(tmp_path, text)
    bounds = chunk_boundaries(path, chunk_bytes, [EOT])
    check_boundaries(text.encode(), bounds, [EOT.encode()], chunk_bytes)
    assert len(bounds) > 10


def test_a_cut_never_splits_a_special_token_that_contains_another(tmp_path, monkeypatch):
    # "<x>" occurs inside "a<x>b": a cut before that "<x>" would turn one special token into three pieces
    monkeypatch.setattr(training_module, "_WINDOW", 4)
    specials = ["<x>", "a<x>b"]
    rng = random.Random(3)
    text = "".join(rng.choice(["a<x>b", "<x>", "a", "b", " ab", "<x"]) for _ in range(400))
    path = write(tmp_path, text)
    bounds = chunk_boundaries(path, 7, specials)
    assert len(bounds) > 10
    check_boundaries(text.encode(), bounds, [s.encode() for s in specials], 7)
    for workers in (1, 2):
        assert train_file(path, 300, specials, num_workers=workers, chunk_bytes=7) == train(text, 300, specials)


def test_the_file_is_read_in_ranges_smaller_than_the_text(tmp_path, monkeypatch):
    text = documents(n_docs=200)
    path = write(tmp_path, text)
    size = len(text.encode())
    read = []
    real = training_module._count_range

    def spy(task):
        read.append(task[2] - task[1])
        return real(task)

    monkeypatch.setattr(training_module, "_count_range", spy)
    assert train_file(path, 300, [EOT], num_workers=1, chunk_bytes=500) == train(text, 300, [EOT])
    assert sum(read) == size and len(read) > 5
    assert max(read) < size // 4                      # never the whole file at once


def test_every_worker_gets_a_share_of_a_small_file(tmp_path):
    # a file smaller than chunk_bytes is still cut, so that num_workers processes have work
    text = documents(n_docs=200)
    path = write(tmp_path, text)
    share = -(-len(text.encode()) // 4)
    bounds = chunk_boundaries(path, share, [EOT])
    assert 4 <= len(bounds) <= 6


def test_crlf_and_non_ascii_are_read_as_bytes(tmp_path):
    text = "a\r\nb <|endoftext|>\r\n\r\ncafé 東京\r\n" * 20
    path = write(tmp_path, text)
    assert train_file(path, 280, [EOT], chunk_bytes=3) == train(text, 280, [EOT])


def test_an_empty_file_gives_the_bytes_and_the_special_tokens(tmp_path):
    path = write(tmp_path, "")
    vocab, merges = train_file(path, 300, [EOT], num_workers=2)
    assert merges == [] and len(vocab) == 257 and vocab[256] == EOT.encode()


def test_invalid_utf8_names_the_offset(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_bytes(b"good text<|endoftext|>more \xff here")
    with pytest.raises(ValueError, match=r"offset 27 .*UTF-8"):
        train_file(path, 300, [EOT], chunk_bytes=4)


def test_a_missing_file_names_the_path(tmp_path):
    with pytest.raises(FileNotFoundError, match="nowhere.txt"):
        train_file(tmp_path / "nowhere.txt", 300)
    with pytest.raises(FileNotFoundError, match="is not a file"):
        chunk_boundaries(tmp_path, 100, [EOT])                   # a directory


def test_train_file_is_exported():
    assert "train_file" in bytebpe.__all__ and "chunk_boundaries" in bytebpe.__all__
    assert "\"Byte-level BPE\"" in train_file.__doc__ and "\"Byte-level BPE\"" in chunk_boundaries.__doc__


@pytest.mark.parametrize("seed", range(6))
def test_the_incremental_merge_loop_equals_the_definition(seed):
    # runs of one letter ("aaaa") and alternations ("abab") are where incremental pair updates go wrong
    rng = random.Random(seed)
    pieces = ["a", "aa", "ab", "b", " ", "ba", "é", "\n", EOT]
    text = "".join(rng.choice(pieces) for _ in range(rng.randrange(200, 600)))
    assert train(text, 300, [EOT]) == train_slow(text, 300, [EOT])


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=6), st.binary(max_size=6))
def test_the_tie_break_key_sorts_byte_strings_in_descending_order(x, y):
    # a prefix is the smaller byte string, b"\x00" included: the key must sort it after
    key = training_module._descending
    assert (key(x) < key(y)) == (x > y)
    assert (key(x) == key(y)) == (x == y)


@pytest.mark.parametrize("seed", range(4))
def test_ties_between_a_token_and_its_prefix_follow_the_definition(seed):
    # tokens that are prefixes of one another ("a", "aa", "aaa") tie often: the lazy heap must
    # still pick the greater pair of byte strings, as the definition does
    rng = random.Random(100 + seed)
    pieces = ["a", "aa", "aaa", "ab", "\x00", "a\x00", "\x00a", " a", EOT]
    text = "".join(rng.choice(pieces) for _ in range(rng.randrange(300, 700)))
    assert train(text, 320, [EOT]) == train_slow(text, 320, [EOT])


def test_train_slow_merges_left_to_right_without_overlap():
    # "aaa" has the pair (a, a) twice, overlapping: one merge takes the first two, as chapter 1 does
    vocab, merges = train_slow("aaa aaa", 258)
    assert merges == [(b"a", b"a"), (b"aa", b"a")]          # "aa a" twice, then " aaa" once
    assert training_module._merge_pair((b"a", b"a", b"a"), (b"a", b"a")) == (b"aa", b"a")
    assert train("aaa aaa", 258) == (vocab, merges)


def test_train_slow_is_exported_and_stops_when_no_pair_is_left():
    assert "train_slow" in bytebpe.__all__ and bytebpe.train_slow is train_slow
    vocab, merges = train_slow("ab ab", 1000)
    assert merges == [(b"a", b"b"), (b" ", b"ab")] and len(vocab) == 258
