"""tokvec.bytebpe's newer arguments, fed bad input: a clear error that names the argument.

The same sweep as ``tests/test_bad_input.py`` (whose table covers the modules of the data path
but not ``tokvec.bytebpe``): for each call, valid arguments, and for each argument the bad values
it must refuse with ``TypeError`` or ``ValueError`` whose message names it (or matches the regex
given), never one of Python's generic messages.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from test_bad_input import GENERIC, bad_calls

from tokvec import bytebpe
from tokvec.bytebpe import Tokenizer

EOT = "<|endoftext|>"
VOCAB, MERGES = bytebpe.train("the cat sat on the mat <|endoftext|> the end", 280, [EOT])
TOKENIZER = Tokenizer(VOCAB, MERGES, [EOT])

SPECIAL_SET = [3, b"<|endoftext|>", "al", "<|endoftext|>", {3}, {"<|nope|>"}, [None]]
TEXT = [None, b"abc", 3, ["a"]]
PATH = [None, 3, True, ["a.json"]]


VOCAB_PATH, MERGES_PATH = bytebpe.published_files("gpt2")      # read, never written
SMALL_TEXT = Path(__file__).with_name("cited_numbers.toml")     # a small UTF-8 file in the repository, read only
UNUSED = Path("unused-vocab.json"), Path("unused-merges.txt")  # save refuses the bad argument before writing


# (id, function, valid keyword arguments, {argument: bad values, or (bad values, message regex)})
CASES = [
    ("Tokenizer.encode", TOKENIZER.encode, {"text": "a <|endoftext|> b"},
     {"text": TEXT, "allowed_special": SPECIAL_SET, "disallowed_special": SPECIAL_SET}),
    ("Tokenizer.encode_ordinary", TOKENIZER.encode_ordinary, {"text": "a b"}, {"text": TEXT}),
    ("Tokenizer.encode_iterable", TOKENIZER.encode_iterable, {"iterable": ["a b"]},
     {"iterable": ([None, "abc", b"abc", 3], "encode_iterable")}),
    ("Tokenizer.merge_steps", TOKENIZER.merge_steps, {"piece": " cat"},
     {"piece": ([*TEXT, "two words", ""], "piece")}),
    ("Tokenizer.from_files", Tokenizer.from_files, {"vocab_path": VOCAB_PATH, "merges_path": MERGES_PATH},
     {"vocab_path": PATH, "merges_path": PATH, "special_tokens": ["abc", 3, [3], ["x", "x"], ["\ud800"]],
      "pattern": [3, "(unclosed", r"(\w+)"], "sha256": (["abc", ("a",), (1, 2), ("0" * 64, None)], "sha256|SHA-256")}),
    ("Tokenizer.save", TOKENIZER.save, {"vocab_path": UNUSED[0], "merges_path": UNUSED[1]},
     {"vocab_path": PATH, "merges_path": PATH}),
    ("Tokenizer", Tokenizer, {"vocab": VOCAB, "merges": MERGES},
     {"special_tokens": (["abc", 3, ["\ud83d"], ["<a>", "<a>"]], "special|surrogate|duplicates")}),
    ("train", bytebpe.train, {"text": "some text \ud83d", "vocab_size": 260},
     {"text": TEXT, "special_tokens": (["abc", [3], ["\udc4d"], [" "], ["<a>", "\n"]], "special|surrogate")}),
    ("train_file", bytebpe.train_file, {"path": SMALL_TEXT, "vocab_size": 260, "special_tokens": [EOT]},
     {"path": PATH, "vocab_size": [0, 255, 2.0, "300"],
      "special_tokens": (["abc", [3], ["\udc4d"], ["\n"]], "special|surrogate"),
      "pattern": [3, "(unclosed", r"(\w+)"], "num_workers": [0, -1, 1.5, True, "2", None],
      "chunk_bytes": [0, -4, 2.0, False, "1MB", None]}),
    ("chunk_boundaries", bytebpe.chunk_boundaries, {"path": SMALL_TEXT, "chunk_bytes": 100, "special_tokens": [EOT]},
     {"path": PATH, "chunk_bytes": [0, -1, 1.5, True, None], "special_tokens": (["abc", [3], [""]], "special")}),
    ("merges_from_ranks", bytebpe.merges_from_ranks, {"ranks": {bytes([b]): b for b in range(256)}},
     {"ranks": [None, [b"a"], {"a": 1}, {b"a": "1"}]}),
    ("published", bytebpe.published, {"name": "gpt2"}, {"name": ([None, "gpt5", ["gpt2"]], "published tokenizer")}),
]


def test_every_case_is_valid_with_its_valid_arguments(tmp_path):
    for case_id, fn, valid, _ in CASES:
        if case_id == "Tokenizer.save":
            valid = {"vocab_path": tmp_path / "vocab.json", "merges_path": tmp_path / "merges.txt"}
        result = fn(**valid)
        if not isinstance(result, (list, tuple, Tokenizer, type(None))):
            list(result)                          # a generator runs only when read


@pytest.mark.parametrize("fn, valid, name, value, pattern", list(bad_calls(CASES)))
def test_bad_argument_is_a_clear_error(fn, valid, name, value, pattern):
    with pytest.raises((TypeError, ValueError)) as info:
        result = fn(**{**valid, name: value})
        if not isinstance(result, list):
            list(result)
    message = str(info.value)
    assert not GENERIC.search(message), f"generic error for {name}={value!r:.40}: {message}"
    assert re.search(pattern, message), f"{name}={value!r:.40}: the message does not name it: {message}"


def test_the_disallowed_special_token_is_named_with_the_fix():
    with pytest.raises(ValueError) as info:
        TOKENIZER.encode(f"x {EOT}", allowed_special=set())
    message = str(info.value)
    assert "'<|endoftext|>' (at index 2)" in message
    assert "allowed_special={'<|endoftext|>'}" in message
    assert "disallowed_special=() with no allowed_special" in message


def test_a_missing_file_names_the_path(tmp_path):
    with pytest.raises(FileNotFoundError, match="nowhere.json"):
        Tokenizer.from_files(tmp_path / "nowhere.json", MERGES_PATH)
