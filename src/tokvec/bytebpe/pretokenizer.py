"""What training and encoding share: the pre-tokenizer patterns, special tokens, and valid text.

Taught in the chapter "Byte-level BPE" (``chapters/byte_level_bpe.ipynb``). A regex cuts the
text into pieces (words with their leading space, numbers, punctuation, whitespace runs); BPE
merges bytes only inside a piece. Special tokens such as ``<|endoftext|>`` are cut out before the
regex runs. Text is made valid for UTF-8 first, as tiktoken does: a lone surrogate becomes U+FFFD.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import regex

__all__ = ["GPT2_PATTERN", "GPT4_PATTERN"]

#: GPT-2's pre-tokenizer (Radford et al., 2019, ``encoder.py``): contractions (case-sensitive),
#: letters, numbers, other symbols, each with at most one leading space, and whitespace: a run
#: that ends the text, or leaves its last character to the next piece (``\s+(?!\S)``), else the
#: one character left before a non-space (``\s+``; a space there went to the next word).
GPT2_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""

#: GPT-4's pre-tokenizer (``cl100k_base`` in tiktoken): contractions in any case; letters with at
#: most one leading character that is not a letter, a digit, CR or LF; numbers in groups of at
#: most three digits, with no leading space; punctuation with at most one leading space and its
#: trailing CR/LF; whitespace: a run that ends the text, else a run up to its last line break
#: (``\s*[\r\n]``, not in GPT-2's), else GPT-2's rule, else one character.
GPT4_PATTERN = (r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
                r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s""")

_SURROGATE = re.compile("[\ud800-\udfff]")


def check_text(text: object, name: str = "text") -> str:
    """``text`` if it is a ``str``; bytes and everything else are refused with the fix."""
    if not isinstance(text, str):
        fix = "; decode bytes first, e.g. data.decode('utf-8')" if isinstance(text, (bytes, bytearray)) else ""
        raise TypeError(f"{name} must be a str, got {type(text).__name__}{fix}")
    return text


def replace_surrogates(text: str) -> str:
    """``text`` with each lone surrogate replaced by U+FFFD, exactly as tiktoken does.

    A Python ``str`` may hold a surrogate code point (U+D800-U+DFFF), e.g. from
    ``json.loads('"\\ud83d"')``; UTF-8 cannot encode one. tiktoken round-trips such text through
    UTF-16 with ``surrogatepass``: a high surrogate followed by a low one becomes the character
    they stand for, and any other surrogate becomes U+FFFD. Text without surrogates is returned
    as it is (one regex scan).
    """
    if _SURROGATE.search(text) is None:
        return text
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def check_special_tokens(special_tokens, name: str = "special_tokens") -> list[str]:
    """The special tokens as a list of distinct, non-empty ``str`` that UTF-8 can encode."""
    if isinstance(special_tokens, (str, bytes)) or not isinstance(special_tokens, Iterable):
        raise TypeError(f"{name} must be a list of strings, got {type(special_tokens).__name__} "
                        f"{special_tokens!r:.40}")
    tokens = list(special_tokens)
    for token in tokens:
        if not isinstance(token, str) or not token:
            raise TypeError(f"every special token in {name} must be a non-empty str, got {token!r:.40}")
        if (bad := _SURROGATE.search(token)) is not None:
            raise ValueError(f"{name}: special token {token!r:.40} holds the surrogate U+{ord(bad.group()):04X}, which "
                             f"UTF-8 cannot encode; a special token must be valid text")
    if len(set(tokens)) != len(tokens):
        raise ValueError(f"{name} has duplicates: {tokens!r:.200}")
    return tokens


def compile_pattern(pattern) -> regex.Pattern:
    """The pre-tokenizer ``pattern`` compiled with the ``regex`` package (``\\p{L}`` needs it)."""
    if not isinstance(pattern, str):
        raise TypeError(f"pattern must be a regex string (GPT2_PATTERN, GPT4_PATTERN, ...), got "
                        f"{type(pattern).__name__}")
    try:
        compiled = regex.compile(pattern)
    except regex.error as e:
        raise ValueError(f"pattern is not a valid regex for the `regex` package: {e}") from None
    if compiled.groups:
        raise ValueError(f"pattern has {compiled.groups} capturing group(s), which would change what it "
                         f"matches into what the groups match; write each (...) as (?:...)")
    return compiled


def special_splitter(tokens: Iterable[str]) -> regex.Pattern | None:
    """A regex that finds the given special tokens; at one position the longest wins."""
    tokens = sorted(tokens, key=lambda t: (-len(t), t))
    if not tokens:
        return None
    return regex.compile("|".join(regex.escape(t) for t in tokens))
