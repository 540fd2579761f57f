"""Training a byte-level BPE: ``train`` learns ``(vocab, merges)`` from text, ``train_file`` from a file.

Taught in the chapter "Byte-level BPE" (``chapters/byte_level_bpe.ipynb``). Ids 0-255 are
the single bytes, then the special tokens, then one id per merge. Each step merges the most
frequent adjacent pair inside the pre-tokens; ties go to the lexicographically greater pair of
byte strings, so training is deterministic (Stanford CS336's rule).

Training has two stages. Counting: the text is cut at the special tokens, the pre-tokenizer regex
cuts each segment into pre-tokens, and only the count of each distinct pre-token is kept, so
memory follows the number of distinct pre-tokens, not the size of the text. Merging: the pairs
inside those distinct pre-tokens are counted once and updated after each merge. ``train_file``
does the counting on a file that need not fit in memory: it cuts the file into ranges of about
``chunk_bytes`` that begin at a special token (a pre-token never crosses one), reads one range at
a time, and counts the ranges in ``num_workers`` processes; the counts, and so the merges, are
exactly those of ``train`` on the whole text.
"""

from __future__ import annotations

import heapq
import multiprocessing
import operator
import os
from collections import Counter, defaultdict

from tokvec import validate
from tokvec.bytebpe.pretokenizer import (
    GPT2_PATTERN,
    check_special_tokens,
    check_text,
    compile_pattern,
    replace_surrogates,
    special_splitter,
)

__all__ = ["chunk_boundaries", "train", "train_file", "train_slow"]

#: how much of the file one look for a special token reads at a time, in bytes
_WINDOW = 1 << 16
_group = operator.methodcaller("group")


def _descending(token: bytes) -> str:
    """A key that sorts byte strings in *descending* order: ``_descending(x) < _descending(y)`` iff ``x > y``.

    Each byte ``v`` becomes ``chr(255 - v)`` and a ``chr(256)`` ends the key, above every byte's
    character, so that a prefix (the smaller byte string) sorts after its extensions. The heap of
    :func:`_merge` compares these with ``str``'s own comparison, in C, to break ties between counts.
    """
    return "".join([chr(255 - v) for v in token]) + "\u0100"


def _check_one_byte_specials(specials: list[str]) -> None:
    """A special token of one byte already has its id among the 256 bytes: training would give it two."""
    for token in specials:
        data = token.encode("utf-8")
        if len(data) == 1:
            raise ValueError(f"special token {token!r} is one byte, which already has id {data[0]} among the "
                             f"256 byte tokens, so training would give it a second id; a special token must be "
                             f"at least two bytes long, such as '<|endoftext|>'")


def _check_vocab_size(vocab_size, specials: list[str]) -> int:
    vocab_size = validate.positive_int(vocab_size, "vocab_size")
    if vocab_size < 256 + len(specials):
        raise ValueError(f"vocab_size = {vocab_size} is too small: the 256 bytes and {len(specials)} special "
                         f"tokens already take {256 + len(specials)} ids; use vocab_size >= {256 + len(specials)}")
    return vocab_size


def _count_pretokens(text: str, pat, splitter, counts: Counter) -> Counter:
    """Add to ``counts`` the pre-tokens of ``text`` (a ``str`` each), skipping the special tokens.

    ``finditer`` with ``pos``/``endpos`` walks each segment between two special tokens in place:
    no list of pre-tokens and no copy of a segment is made, so memory is the text and ``counts``.
    """
    start = 0
    if splitter is not None:
        for special in splitter.finditer(text):
            counts.update(map(_group, pat.finditer(text, start, special.start())))
            start = special.end()
    counts.update(map(_group, pat.finditer(text, start, len(text))))
    return counts


def _as_bytes(counts: Counter) -> dict[bytes, int]:
    """The counts keyed by UTF-8 bytes (encoded once per distinct pre-token, not once per occurrence)."""
    return {word.encode("utf-8"): n for word, n in counts.items()}


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
    touched) and a heap finds the best pair, so 5 MB of text trains in seconds, not hours. A lone
    surrogate in ``text`` (which UTF-8 cannot encode) counts as U+FFFD, as in :meth:`Tokenizer.encode`.
    For a file, larger than memory or not, and for several cores, use :func:`train_file`: same result.
    """
    text = replace_surrogates(check_text(text))        # as tiktoken: a lone surrogate becomes U+FFFD
    specials = check_special_tokens(special_tokens)
    _check_one_byte_specials(specials)
    vocab_size = _check_vocab_size(vocab_size, specials)
    pat = compile_pattern(pattern)
    counts = _count_pretokens(text, pat, special_splitter(specials), Counter())
    return _merge(_as_bytes(counts), specials, vocab_size)


def train_slow(text: str, vocab_size: int, special_tokens=(), *,
               pattern: str = GPT2_PATTERN) -> tuple[dict[int, bytes], list[tuple[bytes, bytes]]]:
    """Training by its definition, step by step: the same ``(vocab, merges)`` as :func:`train`.

    After every merge it counts all the pairs again, which is easy to read and slow (minutes on
    5 MB): :func:`train` updates only the pairs next to each merge, and the tests check
    :func:`train` against this one.
    """
    text = replace_surrogates(check_text(text))
    specials = check_special_tokens(special_tokens)
    _check_one_byte_specials(specials)
    vocab_size = _check_vocab_size(vocab_size, specials)
    counts = _count_pretokens(text, compile_pattern(pattern), special_splitter(specials), Counter())
    # each distinct pre-token as a tuple of one-byte symbols, with its count
    words = {tuple(bytes([b]) for b in word.encode("utf-8")): n for word, n in counts.items()}
    vocab = {i: bytes([i]) for i in range(256)}
    for token in specials:
        vocab[len(vocab)] = token.encode("utf-8")
    merges: list[tuple[bytes, bytes]] = []
    while len(vocab) < vocab_size:
        pairs: Counter = Counter()
        for word, n in words.items():
            for pair in zip(word, word[1:]):
                pairs[pair] += n
        if not pairs:
            break                                        # every pre-token is one symbol
        best = max(pairs, key=lambda p: (pairs[p], p))   # most frequent; on a tie, the greater pair
        merges.append(best)
        vocab[len(vocab)] = best[0] + best[1]
        words = {_merge_pair(word, best): n for word, n in words.items()}
    return vocab, merges


def _merge_pair(word: tuple[bytes, ...], pair: tuple[bytes, bytes]) -> tuple[bytes, ...]:
    """``word`` with every occurrence of ``pair`` merged, left to right (``a a a`` -> ``aa a``)."""
    out, i = [], 0
    while i < len(word):
        if word[i:i + 2] == pair:
            out.append(pair[0] + pair[1])
            i += 2
        else:
            out.append(word[i])
            i += 1
    return tuple(out)


def _merge(counts: dict[bytes, int], specials: list[str],
           vocab_size: int) -> tuple[dict[int, bytes], list[tuple[bytes, bytes]]]:
    """The merging stage, on the count of each distinct pre-token (its UTF-8 bytes).

    Inside, a symbol is a small ``int`` (0-255 the bytes, then one per merge, in order) and the
    pair ``(a, b)`` is the single ``int`` ``a * base + b``: cheaper to hash and to build than a
    tuple of byte strings. Each pre-token is a list of symbols, edited in place. ``pair_count``
    holds the weighted count of every pair, ``where`` the pre-tokens that may hold it (a superset:
    a merge can take a pair from a word that is still listed). The heap is lazy: a count that
    goes up is pushed again; one that goes down keeps its old, larger entry, which is pushed again
    at its current count when it comes out. Every live pair thus has an entry at least as large as
    its count, so an entry that matches its pair's count is the most frequent pair.
    """
    vocab = {i: bytes([i]) for i in range(256)}
    for token in specials:
        vocab[len(vocab)] = token.encode("utf-8")
    symbols = [bytes([i]) for i in range(256)]        # a symbol's bytes
    keys = [_descending(s) for s in symbols]          # its tie-break key
    base = max(vocab_size, 256) + 1                   # more than there will ever be symbols
    words = [list(word) for word in counts]           # bytes -> list of ints 0-255
    freq = list(counts.values())

    pair_count: defaultdict[int, int] = defaultdict(int)
    where: defaultdict[int, set[int]] = defaultdict(set)
    for k, word in enumerate(words):
        f = freq[k]
        for left, right in zip(word, word[1:]):
            pair = left * base + right
            pair_count[pair] += f
            where[pair].add(k)
    # most frequent first; on equal counts the greater (left, right) of byte strings first
    heap = [(-c, keys[p // base], keys[p % base], p) for p, c in pair_count.items()]
    heapq.heapify(heap)

    merges: list[tuple[bytes, bytes]] = []
    while len(vocab) < vocab_size and heap:
        negative, _, _, pair = heapq.heappop(heap)
        count = pair_count.get(pair, 0)
        if count != -negative:                        # stale: push it again at its real count
            if 0 < count < -negative:
                heapq.heappush(heap, (-count, keys[pair // base], keys[pair % base], pair))
            continue
        a, b = divmod(pair, base)
        m = len(symbols)                              # the merged symbol
        token = symbols[a] + symbols[b]
        merges.append((symbols[a], symbols[b]))
        symbols.append(token)
        keys.append(_descending(token))
        vocab[len(vocab)] = token
        made = set()                                  # pairs whose count went up
        for k in where.pop(pair):
            word = words[k]
            last = len(word) - 1                      # a pair starts before the last symbol
            f = freq[k]
            i = 0
            while True:                               # left to right, without overlap
                try:
                    i = word.index(a, i, last)        # scans in C: most symbols are never touched
                except ValueError:
                    break                             # (or an earlier merge took the pair)
                if word[i + 1] == b:
                    # x a b y becomes x m y: pairs (x, a) and (b, y) go, (x, m) and (m, y) come
                    if i:
                        x = word[i - 1]
                        pair_count[x * base + a] -= f
                        new = x * base + m
                        pair_count[new] += f
                        where[new].add(k)
                        made.add(new)
                    if i + 1 < last:
                        y = word[i + 2]
                        pair_count[b * base + y] -= f
                        new = m * base + y
                        pair_count[new] += f
                        where[new].add(k)
                        made.add(new)
                    word[i] = m
                    del word[i + 1]
                    last -= 1
                i += 1
        del pair_count[pair]
        for p in made:
            count = pair_count[p]
            if count > 0:
                heapq.heappush(heap, (-count, keys[p // base], keys[p % base], p))
    return vocab, merges


def _check_path(path) -> str:
    """``path`` as a ``str``; an ``int`` (which ``os`` would take for a file descriptor) is refused."""
    if isinstance(path, bool) or not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a str or os.PathLike naming a UTF-8 text file, got "
                        f"{type(path).__name__} {path!r:.40}")
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"path {path!r:.200} is not a file; give the path of a UTF-8 text file")
    return path


def _safe_starts(data: bytes, tokens: list[bytes]) -> list[int]:
    """Offsets in ``data`` where a special token starts and no other occurrence straddles.

    A range may begin at such an offset: the special-token splitter, run over the whole text, never
    matches across it, so cutting there changes no special token and no pre-token.
    """
    occurrences = []
    for token in tokens:
        at = data.find(token)
        while at != -1:
            occurrences.append((at, at + len(token)))
            at = data.find(token, at + 1)                # overlapping occurrences count too
    occurrences.sort()
    straddled = set()
    for begin, end in occurrences:
        straddled.update(range(begin + 1, end))
    return sorted({begin for begin, _ in occurrences} - straddled)


def chunk_boundaries(path, chunk_bytes: int, special_tokens) -> list[int]:
    """Byte offsets that cut the file at ``path`` into ranges of about ``chunk_bytes`` each.

    The list starts at 0 and ends at the file's size; every offset in between is the start of a
    special token that no other occurrence of a special token straddles: the first such offset at
    least ``chunk_bytes`` after the previous cut (so every range but the last is at least
    ``chunk_bytes`` long, and longer where the text runs on without a special token). The file is
    read ``_WINDOW`` bytes at a time, only around each cut: the offsets cost almost no reading.
    Without special tokens the whole file is one range. Used by :func:`train_file`; taught in
    the chapter "Byte-level BPE".
    """
    path = _check_path(path)
    chunk_bytes = validate.positive_int(chunk_bytes, "chunk_bytes")
    tokens = [t.encode("utf-8") for t in check_special_tokens(special_tokens)]
    size = os.path.getsize(path)
    bounds = [0]
    if not tokens:
        return [0, size] if size else [0]
    longest = max(map(len, tokens))
    with open(path, "rb") as f:
        guess = chunk_bytes
        while guess < size:
            found = None
            at = guess
            while found is None and at < size:
                # start longest - 1 bytes early, so that an occurrence straddling `at` is seen
                base = max(0, at - (longest - 1))
                f.seek(base)
                data = f.read(at - base + _WINDOW + longest - 1)
                complete = base + len(data) >= size          # the window reaches the end of the file
                for offset in _safe_starts(data, tokens):
                    # a start near the window's end may be straddled by an occurrence we cannot see yet
                    if base + offset >= at and (complete or offset + longest <= len(data)):
                        found = base + offset
                        break
                at = base + len(data) - (longest - 1) if not complete else size
            if found is None:                              # no special token after `guess`
                break
            bounds.append(found)
            guess = found + chunk_bytes
    bounds.append(size)
    return bounds


def _count_range(task) -> Counter:
    """One worker's share: read bytes ``start:end`` of the file and count their pre-tokens."""
    path, start, end, pattern, specials = task
    with open(path, "rb") as f:
        f.seek(start)
        data = f.read(end - start)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"{path!s:.200}: the bytes at offset {start + e.start} are not valid UTF-8 ({e.reason}); "
                         f"train_file reads UTF-8 text: convert the file, e.g. with iconv -t UTF-8") from None
    del data                                               # only the text is needed from here on
    return _count_pretokens(text, compile_pattern(pattern), special_splitter(specials), Counter())


def train_file(path, vocab_size: int, special_tokens=(), *, pattern: str = GPT2_PATTERN,
               num_workers: int = 1, chunk_bytes: int = 16 << 20
               ) -> tuple[dict[int, bytes], list[tuple[bytes, bytes]]]:
    """Learn a byte-level BPE from the UTF-8 file at ``path``; exactly :func:`train` on its text.

    The file is cut by :func:`chunk_boundaries` into ranges of about ``chunk_bytes`` that begin at
    a special token (the CS336 assignment's way: documents joined by ``<|endoftext|>``), and each
    range is read and counted on its own, in ``num_workers`` processes (``1``: in this process, no
    pool). Only the count of each distinct pre-token comes back, so memory is about
    ``num_workers`` ranges at a time (a range as bytes, then as ``str``) plus the counts, never the
    whole file; a file without special tokens is one range, read whole. The merges are then made
    as in :func:`train`, in this process. The bytes are read as they are (``\\r\\n`` stays), so
    ``train_file(path, ...) == train(open(path, encoding="utf-8", newline="").read(), ...)``.

    Taught in the chapter "Byte-level BPE". ``num_workers`` above the number of cores only adds
    processes; invalid UTF-8 in the file raises ``ValueError`` with its offset.
    """
    path = _check_path(path)
    specials = check_special_tokens(special_tokens)
    _check_one_byte_specials(specials)
    vocab_size = _check_vocab_size(vocab_size, specials)
    compile_pattern(pattern)                                # refuse a bad pattern before any worker starts
    num_workers = validate.positive_int(num_workers, "num_workers")
    chunk_bytes = validate.positive_int(chunk_bytes, "chunk_bytes")
    # no range longer than an equal share of the file, so that every worker gets one
    share = -(-os.path.getsize(path) // num_workers)
    bounds = chunk_boundaries(path, max(1, min(chunk_bytes, share)), specials)
    tasks = [(path, a, b, pattern, specials) for a, b in zip(bounds, bounds[1:])]
    counts: Counter = Counter()
    if num_workers == 1 or len(tasks) <= 1:
        for task in tasks:
            counts.update(_count_range(task))
    else:
        # imap_unordered: a range's counts are added as soon as it is done, whichever finishes
        # first; a sum of counts does not depend on the order, so the merges do not either
        with multiprocessing.get_context().Pool(min(num_workers, len(tasks))) as pool:
            for part in pool.imap_unordered(_count_range, tasks):
                counts.update(part)
    return _merge(_as_bytes(counts), specials, vocab_size)
