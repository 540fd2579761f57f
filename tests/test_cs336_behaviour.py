"""What Stanford CS336 (2025) assignment 1 asks of a tokenizer, checked through its interface.

Their tests (``test_train_bpe.py``, ``test_tokenizer.py``) load GPT-2's vocabulary and merges,
written in GPT-2's printable-byte alphabet, hand them to ``get_tokenizer`` and compare with
tiktoken's ``gpt2``; they train with ``run_train_bpe`` and check the merges and special tokens;
they stream a 5 MB file through ``encode_iterable`` under a memory limit. The same behaviours are
checked here, through ``cs336_adapter``, on texts and files of our own. The timing target (500
tokens from a small English corpus in under 1.5 s) is measured in the benchmark, not here.
"""

import json
import os
import tracemalloc

import pytest
from cs336_adapter import get_tokenizer, run_train_bpe

from tokvec import bytebpe
from tokvec.text import load_corpus

tiktoken = pytest.importorskip("tiktoken")
from tiktoken.load import data_gym_to_mergeable_bpe_ranks  # noqa: E402
from tiktoken_ext import openai_public  # noqa: E402

EOT = "<|endoftext|>"


def gpt2_vocab_and_merges():
    """GPT-2's files turned into ``vocab: dict[int, bytes]`` and ``merges`` the way CS336 does."""
    to_byte = {c: b for b, c in bytebpe.gpt2_bytes_to_unicode().items()}
    encoder_json, vocab_bpe = bytebpe.published_files("gpt2")
    vocab = {i: bytes(to_byte[c] for c in token) for token, i in json.loads(encoder_json.read_text("utf-8")).items()}
    merges = [tuple(bytes(to_byte[c] for c in part) for part in line.split(" "))
              for line in vocab_bpe.read_text("utf-8").splitlines()[1:] if line]
    return vocab, merges


@pytest.fixture(scope="module")
def reference():
    os.environ.setdefault("TIKTOKEN_CACHE_DIR", "")
    encoder_json, vocab_bpe = bytebpe.published_files("gpt2")
    ranks = data_gym_to_mergeable_bpe_ranks(str(vocab_bpe), str(encoder_json))
    return tiktoken.Encoding("gpt2-local", pat_str=openai_public.r50k_pat_str, mergeable_ranks=ranks,
                             special_tokens={EOT: 50256}, explicit_n_vocab=50257)


@pytest.fixture(scope="module")
def gpt2_parts():
    return gpt2_vocab_and_merges()


TEXTS = [
    "", "s", "🙃", "Hello, how are you?", "Héllò hôw are ü? 🙃",
    f"Héllò hôw {EOT}{EOT} are ü? 🙃{EOT}",
    "Frau Müller wohnt in der Königstraße 12, 80331 München. Grüß Gott!",
    "Bob Example\n1600 Example Avenue NW, Suite 5\nSpringfield, ST 12345-6789\n\n",
    f"Once upon a time there was a little dog.{EOT}\n\nThe end.\n\n{EOT}Another story",
    f"special then double newline{EOT}\n\nnext",
]


@pytest.mark.parametrize("text", TEXTS, ids=range(len(TEXTS)))
def test_gpt2_through_the_adapter_matches_tiktoken_and_round_trips(gpt2_parts, reference, text):
    tokenizer = get_tokenizer(*gpt2_parts, special_tokens=[EOT])
    ids = tokenizer.encode(text)
    assert ids == reference.encode(text, allowed_special={EOT})
    assert tokenizer.decode(ids) == text


def test_without_declared_special_tokens_the_marker_is_ordinary_text(gpt2_parts, reference):
    tokenizer = get_tokenizer(*gpt2_parts)
    text = f"a {EOT} b"
    assert tokenizer.encode(text) == reference.encode(text, disallowed_special=())
    assert 50256 not in tokenizer.encode(text)


def test_overlapping_special_tokens_the_longest_wins(gpt2_parts):
    double = EOT + EOT
    tokenizer = get_tokenizer(*gpt2_parts, special_tokens=[EOT, double])
    ids = tokenizer.encode(f"Hello, how {double} are you?{EOT}")
    pieces = [tokenizer.decode([i]) for i in ids]
    assert pieces == ["Hello", ",", " how", " ", double, " are", " you", "?", EOT]
    assert tokenizer.decode(ids) == f"Hello, how {double} are you?{EOT}"


def test_training_through_the_adapter(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_text(load_corpus().replace("\n", f"\n{EOT}"), encoding="utf-8")
    vocab, merges = run_train_bpe(path, 500, [EOT])
    assert len(vocab) == 500 and sorted(vocab) == list(range(500)) and len(merges) == 500 - 257
    assert vocab[256] == EOT.encode()
    assert all(b"<|" not in token for i, token in vocab.items() if i != 256)
    assert run_train_bpe(path, 500, [EOT]) == (vocab, merges)
    tokenizer = get_tokenizer(vocab, merges, [EOT])
    text = path.read_text(encoding="utf-8")
    assert tokenizer.decode(tokenizer.encode(text)) == text


@pytest.mark.slow
def test_streaming_a_file_in_bounded_memory(tmp_path, gpt2_parts):
    tokenizer = get_tokenizer(*gpt2_parts, special_tokens=[EOT])
    path = tmp_path / "stories.txt"
    story = f"Once upon a time, Lily found a shiny stone in the park. She smiled.\n{EOT}\n"
    path.write_text(story * 30_000, encoding="utf-8")            # about 2.5 MB
    per_story = len(tokenizer.encode(story))
    tracemalloc.start()
    with open(path, encoding="utf-8") as f:
        count = sum(1 for _ in tokenizer.encode_iterable(f))
    streamed = tracemalloc.get_traced_memory()[1]
    tracemalloc.reset_peak()
    whole = len(tokenizer.encode(path.read_text(encoding="utf-8")))
    at_once = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert count == whole == 30_000 * per_story
    assert streamed < 1_000_000, f"streaming peaked at {streamed / 1e6:.2f} MB"
    assert at_once > 10 * streamed          # the limit would catch an encode that reads it all
