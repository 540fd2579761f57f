"""Text to tokens: normalization, three simple tokenizers, and byte-pair encoding (BPE).

Taught in chapter 1, "Tokenization" (``chapters/01_tokenization.ipynb``).

The pipeline mirrors the one of real tokenizer libraries, one function a stage::

    raw text --normalize--> clean text --pretokenize--> words --BPE--> subword tokens

Everything here is pure Python (standard library only), so a learner can read every line.
"""

from __future__ import annotations

import heapq
import math
import re
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Mapping
from importlib import resources

from tokvec import _unicode_classes, validate

__all__ = [
    "SENTENCE",
    "SPACE_MARKER",
    "BPE",
    "char_tokenize",
    "count_pairs",
    "learn_merges",
    "learn_merges_simple",
    "load_corpus",
    "merge_pair",
    "normalize",
    "pretokenize",
    "train_hf_bpe",
    "whitespace_tokenize",
    "word_tokenize",
]

#: The running example of the course, from the embeddings lesson (sources.md).
SENTENCE = "The cat sat on the mat."

#: Marks "a space stood here" inside a token, as SentencePiece does (U+2581, LOWER ONE EIGHTH BLOCK).
SPACE_MARKER = "\u2581"



def _char_class(ranges: str) -> str:
    """The inside of a regex ``[...]`` for ranges such as ``"30-39 41-5A 5F"`` (hex code points)."""
    parts = []
    for item in ranges.split():
        low, _, high = item.partition("-")
        parts.append(f"\\U{int(low, 16):08X}" + (f"-\\U{int(high, 16):08X}" if high else ""))
    return "".join(parts)


# Word characters and whitespace exactly as Hugging Face ``tokenizers`` defines ``\w`` and ``\s``
# (measured on every code point by tools/gen_unicode_classes.py, checked by tests/test_text.py).
# Python's own ``\w`` leaves out combining marks, so "गाँव" would split into "ग" and "ाँव";
# ``str.split`` treats U+001C..U+001F as spaces, which Hugging Face does not.
_WORD = _char_class(_unicode_classes.WORD)
_SPACE = _char_class(_unicode_classes.SPACE)
_SPACE_RUN = re.compile(f"[{_SPACE}]+")
_WORD_RE = re.compile(rf"[{_WORD}]+|[^{_WORD}{_SPACE}]")
_PRETOKEN_RE = re.compile(rf"{SPACE_MARKER}?[{_WORD}]+|{SPACE_MARKER}?[^{_WORD}{SPACE_MARKER}]+")
#: The same pre-tokenizer written for Hugging Face's regex engine, where \w and \s are its own.
_HF_PRETOKEN_PATTERN = rf"{SPACE_MARKER}?\w+|{SPACE_MARKER}?[^\w{SPACE_MARKER}]+"


def _check_text(text: object, name: str = "text") -> str:
    if not isinstance(text, str):
        raise TypeError(
            f"{name} must be a str, got {type(text).__name__} {text!r:.60}; "
            "decode bytes first, e.g. data.decode('utf-8')"
        )
    return text


def load_corpus() -> str:
    """Return the small English corpus that ships with the package (written for the course).

    No download: the file is ``tokvec/data/corpus.txt``, one paragraph a line.
    """
    return resources.files("tokvec").joinpath("data/corpus.txt").read_text(encoding="utf-8")


def normalize(text: str, *, lowercase: bool = False) -> str:
    """Normalize text before tokenizing it.

    1. Unicode NFKC: one code-point sequence for one character ("café" typed two ways becomes
       one string; full-width "Ｔ" becomes "T").
    2. Optionally lowercase (case folding: "The" and "the" become one token). Lowercasing can
       undo NFKC and NFKC can bring back a capital ("℃" is "°C" after NFKC), so the two are
       repeated until nothing changes.
    3. Collapse every run of whitespace (tabs, newlines, non-breaking spaces) to one space and
       strip both ends. Whitespace means what it means to Hugging Face ``tokenizers``: the
       Unicode White_Space characters (not the separators U+001C..U+001F).

    The result is a fixed point: ``normalize(normalize(t)) == normalize(t)``.
    """
    text = unicodedata.normalize("NFKC", _check_text(text))
    while validate.flag(lowercase, "lowercase"):
        folded = unicodedata.normalize("NFKC", text.lower())
        if folded == text:
            break
        text = folded
    return _SPACE_RUN.sub(" ", text).strip(" ")


def whitespace_tokenize(text: str) -> list[str]:
    """Split on whitespace only: punctuation stays glued to words ("mat.")."""
    return [word for word in _SPACE_RUN.split(_check_text(text)) if word]


def word_tokenize(text: str) -> list[str]:
    """Split into runs of letters/digits and single punctuation marks: "mat." -> "mat", "."."""
    return _WORD_RE.findall(_check_text(text))


def char_tokenize(text: str) -> list[str]:
    """Split into single characters (Unicode code points), spaces included."""
    return list(_check_text(text))


def pretokenize(text: str) -> list[str]:
    """Cut normalized text into the "words" that BPE works inside.

    Each space becomes ``SPACE_MARKER`` and is glued to the front of the word that follows it,
    so no information is lost: ``"".join(words).replace(SPACE_MARKER, " ") == text``.
    A word is a run of word characters (letters, digits, combining marks: Hugging Face's
    ``\\w``) or a run of other symbols (punctuation).
    """
    text = _check_text(text)
    if SPACE_MARKER in text:
        raise ValueError(
            f"the text contains {SPACE_MARKER!r} (U+2581) at index {text.index(SPACE_MARKER)}; "
            "this tokenizer reserves that character to mark spaces, so remove or replace it first"
        )
    if text != _SPACE_RUN.sub(" ", text).strip(" ") or "  " in text:
        raise ValueError(
            f"pretokenize expects normalized text (single spaces, no leading or trailing "
            f"whitespace), got {text!r:.60}; call tokvec.text.normalize(text) first"
        )
    return _PRETOKEN_RE.findall(text.replace(" ", SPACE_MARKER))


def _check_mapping(value: object, name: str, what: str) -> None:
    if not isinstance(value, Mapping):
        raise TypeError(f"{name} must be a dict mapping {what}, got {type(value).__name__} "
                        f"{value!r:.40}")


def _check_merge_args(symbols: object, pair: object) -> None:
    if not isinstance(symbols, list):
        raise TypeError(f"symbols must be a list of str (one word split into symbols), got "
                        f"{type(symbols).__name__} {symbols!r:.40}; split a word with list(word)")
    if not (isinstance(pair, tuple) and len(pair) == 2 and all(isinstance(s, str) for s in pair)):
        raise ValueError(f"pair must be a tuple of two str, such as ('t', 'h'), got {pair!r:.60}")


def count_pairs(splits: dict[str, list[str]], word_counts: Counter) -> Counter:
    """Count adjacent symbol pairs over all words, each word weighted by how often it occurs."""
    _check_mapping(splits, "splits", "each word to its list of symbols")
    _check_mapping(word_counts, "word_counts", "each word to how often it occurs (a Counter)")
    pairs: Counter = Counter()
    for word, symbols in splits.items():
        for pair in zip(symbols, symbols[1:]):
            pairs[pair] += word_counts[word]
    return pairs


def merge_pair(symbols: list[str], pair: tuple[str, str]) -> list[str]:
    """Replace every occurrence of ``pair`` in ``symbols`` by one symbol, scanning left to right."""
    _check_merge_args(symbols, pair)
    a, b = pair
    merged: list[str] = []
    i = 0
    while i < len(symbols):
        if i + 1 < len(symbols) and symbols[i] == a and symbols[i + 1] == b:
            merged.append(a + b)
            i += 2
        else:
            merged.append(symbols[i])
            i += 1
    return merged



def learn_merges_simple(word_counts: Counter, alphabet: list[str], vocab_size: int,
                        min_frequency: int = 2) -> list[tuple[str, str]]:
    """The BPE training loop as the algorithm reads: count every pair, merge the best, repeat.

    ``word_counts`` maps each pre-token to how often it occurs; ``alphabet`` lists the base
    characters in code-point order. The most frequent pair wins; ties go to the pair whose
    symbols entered the vocabulary first (the rule of Hugging Face ``tokenizers``). Each step
    recounts every pair of every word, which is clear but slow: :func:`learn_merges` gives the
    same merges by updating only the words that contain the merged pair.
    """
    rank = {ch: i for i, ch in enumerate(alphabet)}  # order of entry into the vocabulary
    splits = {word: list(word) for word in word_counts}
    merges: list[tuple[str, str]] = []
    while len(rank) < vocab_size:
        pairs = count_pairs(splits, word_counts)
        if not pairs:
            break
        best = max(pairs, key=lambda p: (pairs[p], -rank[p[0]], -rank[p[1]]))
        if pairs[best] < min_frequency:
            break
        merges.append(best)
        rank.setdefault(best[0] + best[1], len(rank))
        splits = {word: merge_pair(symbols, best) for word, symbols in splits.items()}
    return merges


def learn_merges(word_counts: Counter, alphabet: list[str], vocab_size: int,
                 min_frequency: int = 2) -> list[tuple[str, str]]:
    """The same merges as :func:`learn_merges_simple`, without recounting everything each step.

    Pair counts are kept up to date: a merge changes only the words that contain the merged
    pair, so only their pairs are subtracted and added back. The best pair comes from a heap
    keyed like the simple version's ``max`` (count, then entry order); entries whose count has
    changed since they were pushed are skipped when they surface.
    """
    rank = {ch: i for i, ch in enumerate(alphabet)}
    words = [list(word) for word in word_counts]
    freq = [word_counts[word] for word in word_counts]
    pair_count: dict[tuple[str, str], int] = defaultdict(int)
    where: dict[tuple[str, str], set[int]] = defaultdict(set)  # pair -> words that (may) hold it
    for k, symbols in enumerate(words):
        for pair in zip(symbols, symbols[1:]):
            pair_count[pair] += freq[k]
            where[pair].add(k)
    heap = [(-c, rank[a], rank[b], a, b) for (a, b), c in pair_count.items()]
    heapq.heapify(heap)
    merges: list[tuple[str, str]] = []
    while len(rank) < vocab_size and heap:
        neg_count, _, _, a, b = heapq.heappop(heap)
        if pair_count.get((a, b)) != -neg_count:
            continue                                   # stale: the count changed after this push
        if -neg_count < min_frequency:
            break
        merges.append((a, b))
        rank.setdefault(a + b, len(rank))
        changed = set()
        for k in where.pop((a, b)):
            old, new = words[k], merge_pair(words[k], (a, b))
            for pair in zip(old, old[1:]):
                pair_count[pair] -= freq[k]
                changed.add(pair)
            for pair in zip(new, new[1:]):
                pair_count[pair] += freq[k]
                changed.add(pair)
                where[pair].add(k)
            words[k] = new
        for pair in changed:
            if pair_count[pair] > 0:
                heapq.heappush(heap, (-pair_count[pair], rank[pair[0]], rank[pair[1]], *pair))
            else:
                del pair_count[pair]
    return merges


def _check_alphabet(alphabet: object) -> list[str]:
    if isinstance(alphabet, str) or not hasattr(alphabet, "__iter__"):
        raise TypeError(f"alphabet must be a list of single characters, got {type(alphabet).__name__} "
                        f"{alphabet!r:.40}; for a string use list(text)")
    alphabet = list(alphabet)
    for i, ch in enumerate(alphabet):
        if not isinstance(ch, str) or len(ch) != 1:
            raise ValueError(f"alphabet[{i}] = {ch!r:.40} is not a single character; the alphabet of a "
                             "BPE holds the base characters, one str of length 1 each")
    if len(set(alphabet)) != len(alphabet):
        dup = next(ch for ch in alphabet if alphabet.count(ch) > 1)
        raise ValueError(f"alphabet holds {dup!r} twice; each base character appears once")
    return alphabet


def _check_merges(merges: object, alphabet: list[str]) -> list[tuple[str, str]]:
    """Each merge joins two symbols that exist already: base characters or earlier merges."""
    if isinstance(merges, str) or not hasattr(merges, "__iter__"):
        raise TypeError(f"merges must be a list of (str, str) pairs, got {type(merges).__name__} {merges!r:.40}")
    known = set(alphabet)
    checked: list[tuple[str, str]] = []
    for i, merge in enumerate(merges):
        if (isinstance(merge, str) or not isinstance(merge, (tuple, list)) or len(merge) != 2
                or not all(isinstance(part, str) and part for part in merge)):
            raise ValueError(f"merges[{i}] = {merge!r:.60} is not a pair of two non-empty str; "
                             "a merge is written like ('t', 'h')")
        for part in merge:
            if part not in known:
                raise ValueError(
                    f"merges[{i}] = {tuple(merge)!r} uses {part!r}, which is neither in the alphabet nor made "
                    f"by an earlier merge; merges must come in the order they were learned, each joining "
                    f"symbols that exist already"
                )
        checked.append((merge[0], merge[1]))
        known.add(merge[0] + merge[1])
    return checked


class BPE:
    """A byte-pair-encoding subword tokenizer (Sennrich et al., 2016), on characters.

    Training starts from single characters and repeatedly merges the most frequent adjacent
    pair. Ties are broken in favour of the pair whose symbols entered the vocabulary first
    (characters in code-point order, then merged symbols in the order they were made), which
    is the rule Hugging Face ``tokenizers`` uses, so both learn the same merges.

    Attributes:
        alphabet: the base characters seen in training, sorted by code point.
        merges: the learned merges, most important first.
        lowercase: whether :func:`normalize` folds case before tokenizing.
    """

    def __init__(self, alphabet: list[str], merges: list[tuple[str, str]], *, lowercase: bool = False):
        self.alphabet = _check_alphabet(alphabet)
        self.merges = _check_merges(merges, self.alphabet)
        self.lowercase = validate.flag(lowercase, "lowercase")
        self.lowercase = lowercase
        self._rank = {pair: i for i, pair in enumerate(self.merges)}
        self._cache: dict[str, list[str]] = {}

    @classmethod
    def train(cls, corpus: str, vocab_size: int, *, min_frequency: int = 2, lowercase: bool = False) -> BPE:
        """Learn merges from ``corpus`` until the vocabulary holds ``vocab_size`` symbols.

        The vocabulary is the alphabet plus one new symbol a merge. Training stops early when
        the most frequent pair occurs fewer than ``min_frequency`` times. The loop is
        :func:`learn_merges_simple`, run in its faster incremental form :func:`learn_merges`.
        """
        _check_text(corpus, "corpus")
        if isinstance(vocab_size, bool) or not isinstance(vocab_size, int) or vocab_size < 1:
            raise ValueError(f"vocab_size must be a positive int, got {vocab_size!r}")
        if isinstance(min_frequency, bool) or not isinstance(min_frequency, int) or min_frequency < 1:
            raise ValueError(f"min_frequency must be an int >= 1, got {min_frequency!r}")
        validate.flag(lowercase, "lowercase")
        word_counts = Counter(pretokenize(normalize(corpus, lowercase=lowercase)))
        if not word_counts:
            raise ValueError("the corpus is empty after normalization; give BPE.train some text")
        alphabet = sorted({ch for word in word_counts for ch in word})
        merges = learn_merges(word_counts, alphabet, vocab_size, min_frequency)
        return cls(alphabet, merges, lowercase=lowercase)

    @property
    def vocab(self) -> list[str]:
        """Every symbol the tokenizer can output: the alphabet, then each merge's result, once."""
        symbols = dict.fromkeys(self.alphabet)
        symbols.update(dict.fromkeys(a + b for a, b in self.merges))
        return list(symbols)

    def tokenize_word_simple(self, word: str) -> list[str]:
        """Apply the merges to one pre-token: merge the lowest-ranked (earliest learned) pair,
        leftmost first, until no learned merge applies. Clear, but quadratic in the word's length:
        :meth:`tokenize_word` gives the same tokens in ``O(n log n)``.
        """
        symbols = list(word)
        while len(symbols) > 1:
            ranks = [self._rank.get(pair, math.inf) for pair in zip(symbols, symbols[1:])]
            i = min(range(len(ranks)), key=ranks.__getitem__)   # lowest rank; leftmost on ties
            if ranks[i] == math.inf:                             # no learned merge applies any more
                break
            symbols[i:i + 2] = [symbols[i] + symbols[i + 1]]
        return symbols

    def tokenize_word(self, word: str) -> list[str]:
        """The tokens of :meth:`tokenize_word_simple`, in ``O(n log n)``, cached per word.

        The symbols form a linked list (``nxt``/``prv`` hold neighbour positions, a merged-away
        symbol becomes ``None``), and a heap holds ``(rank, position)`` for every adjacent pair
        that has a merge. Popping gives the lowest rank, leftmost first, as in the simple
        version; an entry whose pair has changed since it was pushed is skipped.
        """
        if _check_text(word, "word") in self._cache:
            return list(self._cache[word])
        symbols: list[str | None] = list(word)
        n, rank = len(symbols), self._rank
        nxt, prv = list(range(1, n + 1)), list(range(-1, n - 1))
        heap = [(rank[pair], i) for i, pair in enumerate(zip(symbols, symbols[1:])) if pair in rank]
        heapq.heapify(heap)
        while heap:
            r, i = heapq.heappop(heap)
            j = nxt[i]
            if symbols[i] is None or j >= n or rank.get((symbols[i], symbols[j])) != r:
                continue                                         # stale entry
            symbols[i] = symbols[i] + symbols[j]
            symbols[j] = None
            nxt[i] = nxt[j]
            if nxt[i] < n:
                prv[nxt[i]] = i
            for left, right in ((prv[i], i), (i, nxt[i])):      # the two pairs the merge created
                if left >= 0 and right < n and (pair := (symbols[left], symbols[right])) in rank:
                    heapq.heappush(heap, (rank[pair], left))
        tokens = [s for s in symbols if s is not None]
        self._cache[word] = tokens
        return list(tokens)

    def tokenize(self, text: str) -> list[str]:
        """Normalize, pre-tokenize, then split each word into learned subwords.

        A character never seen in training stays a token of its own; the vocabulary of
        chapter 2 maps it to ``<unk>``.
        """
        words = pretokenize(normalize(text, lowercase=self.lowercase))
        return [token for word in words for token in self.tokenize_word(word)]

    @staticmethod
    def detokenize(tokens: list[str]) -> str:
        """Glue tokens back into text: ``detokenize(tokenize(t)) == normalize(t)``."""
        if isinstance(tokens, str) or not isinstance(tokens, (list, tuple)):
            raise TypeError(f"tokens must be a list of str, got {type(tokens).__name__} {tokens!r:.40}")
        for i, token in enumerate(tokens):
            _check_text(token, f"tokens[{i}]")
        return "".join(tokens).replace(SPACE_MARKER, " ")

    def __repr__(self) -> str:
        return f"BPE(alphabet={len(self.alphabet)} symbols, merges={len(self.merges)}, lowercase={self.lowercase})"


def train_hf_bpe(corpus: str, vocab_size: int, *, min_frequency: int = 2,
                 special_tokens: tuple[str, ...] = (), unk_token: str | None = None):
    """Train a Hugging Face ``tokenizers`` BPE with the same pipeline as :class:`BPE`.

    Same normalization (NFKC, collapsed whitespace), same pre-tokenization (spaces become
    ``SPACE_MARKER`` glued to the next word), same ``vocab_size`` (alphabet plus merges; the
    special tokens come on top, at ids ``0 .. len(special_tokens)-1``). Runs offline.
    Chapter 1 compares the two; ``lowercase`` is not offered because the library folds case
    with its own rules.
    """
    from tokenizers import Regex, Tokenizer, models, normalizers, pre_tokenizers, trainers

    _check_text(corpus, "corpus")
    vocab_size = validate.positive_int(vocab_size, "vocab_size")
    min_frequency = validate.positive_int(min_frequency, "min_frequency")

    tokenizer = Tokenizer(models.BPE(unk_token=unk_token))
    tokenizer.normalizer = normalizers.Sequence(
        [normalizers.NFKC(), normalizers.Replace(Regex(r"\s+"), " "), normalizers.Strip()]
    )
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Metaspace(replacement=SPACE_MARKER, prepend_scheme="never", split=False),
        pre_tokenizers.Split(Regex(_HF_PRETOKEN_PATTERN), behavior="isolated"),
    ])
    trainer = trainers.BpeTrainer(vocab_size=vocab_size + len(special_tokens), min_frequency=min_frequency,
                                  special_tokens=list(special_tokens), show_progress=False)
    tokenizer.train_from_iterator([_check_text(corpus, "corpus")], trainer)
    return tokenizer
