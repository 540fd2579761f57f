"""The thin adapter that puts tokvec.bytebpe behind Stanford CS336 (2025) assignment 1's interface.

CS336's tests call ``run_train_bpe`` and ``get_tokenizer`` in their ``tests/adapters.py``; these
two functions are all it takes to run their tokenizer and BPE-training tests against tokvec. Copy
them into that file to do so. ``tests/test_cs336_behaviour.py`` checks the behaviours those tests
check, through this adapter, with tests of our own.
"""

from __future__ import annotations

import os
from pathlib import Path

from tokvec import bytebpe


def run_train_bpe(input_path: str | os.PathLike, vocab_size: int, special_tokens: list[str],
                  **kwargs) -> tuple[dict[int, bytes], list[tuple[bytes, bytes]]]:
    """Train a byte-level BPE on the file at ``input_path`` (GPT-2's pre-tokenizer)."""
    text = Path(input_path).read_text(encoding="utf-8")
    return bytebpe.train(text, vocab_size, special_tokens)


def get_tokenizer(vocab: dict[int, bytes], merges: list[tuple[bytes, bytes]],
                  special_tokens: list[str] | None = None) -> bytebpe.Tokenizer:
    """A tokenizer with ``encode``, ``decode`` and ``encode_iterable`` (GPT-2's pre-tokenizer)."""
    return bytebpe.Tokenizer(vocab, merges, special_tokens)
