"""Training a byte-level BPE: ``train`` learns ``(vocab, merges)`` from text.

Taught in chapter 1.1, "Byte-level BPE" (``chapters/01b_byte_level_bpe.ipynb``). Ids 0-255 are
the single bytes, then the special tokens, then one id per merge. Each step merges the most
frequent adjacent pair inside the pre-tokens; ties go to the lexicographically greater pair of
byte strings, so training is deterministic (Stanford CS336's rule).
"""

from __future__ import annotations

import heapq
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

__all__ = ["train"]


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
    touched) and a heap finds the best pair, so 5 MB of text trains in seconds, not hours. A lone
    surrogate in ``text`` (which UTF-8 cannot encode) counts as U+FFFD, as in :meth:`Tokenizer.encode`.
    """
    text = replace_surrogates(check_text(text))        # as tiktoken: a lone surrogate becomes U+FFFD
    specials = check_special_tokens(special_tokens)
    vocab_size = validate.positive_int(vocab_size, "vocab_size")
    if vocab_size < 256 + len(specials):
        raise ValueError(f"vocab_size = {vocab_size} is too small: the 256 bytes and {len(specials)} special "
                         f"tokens already take {256 + len(specials)} ids; use vocab_size >= {256 + len(specials)}")
    pat = compile_pattern(pattern)
    vocab = {i: bytes([i]) for i in range(256)}
    for token in specials:
        vocab[len(vocab)] = token.encode("utf-8")

    splitter = special_splitter(specials)
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
