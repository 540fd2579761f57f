"""Text to tokens: normalization, three simple tokenizers, and byte-pair encoding (BPE).

Taught in chapter 1, "Tokenization" (``chapters/01_tokenization.ipynb``).

The pipeline mirrors the one of real tokenizer libraries, one function a stage::

    raw text --normalize--> clean text --pretokenize--> words --BPE--> subword tokens

Everything here is pure Python (standard library only), so a learner can read every line.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from importlib import resources

__all__ = [
    "SENTENCE",
    "SPACE_MARKER",
    "BPE",
    "char_tokenize",
    "count_pairs",
    "load_corpus",
    "merge_pair",
    "normalize",
    "pretokenize",
    "train_hf_bpe",
    "whitespace_tokenize",
    "word_tokenize",
]

#: The running example of the course, from seed 002.
SENTENCE = "The cat sat on the mat."

#: Marks "a space stood here" inside a token, as SentencePiece does (U+2581, LOWER ONE EIGHTH BLOCK).
SPACE_MARKER = "\u2581"

_WORD_RE = re.compile(r"\w+|[^\w\s]")
_PRETOKEN_RE = re.compile(rf"{SPACE_MARKER}?\w+|{SPACE_MARKER}?[^\w{SPACE_MARKER}]+")


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

    1. Optionally lowercase (case folding: "The" and "the" become one token).
    2. Unicode NFKC: one code-point sequence for one character ("café" typed two ways becomes
       one string; full-width "Ｔ" becomes "T").
    3. Collapse every run of whitespace (tabs, newlines, non-breaking spaces) to one space and
       strip both ends.

    The result is a fixed point: ``normalize(normalize(t)) == normalize(t)``.
    """
    text = _check_text(text)
    if lowercase:
        text = text.lower()
    text = unicodedata.normalize("NFKC", text)
    return " ".join(text.split())


def whitespace_tokenize(text: str) -> list[str]:
    """Split on whitespace only: punctuation stays glued to words ("mat.")."""
    return _check_text(text).split()


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
    A word is a run of letters/digits or a run of other symbols (punctuation).
    """
    text = _check_text(text)
    if SPACE_MARKER in text:
        raise ValueError(
            f"the text contains {SPACE_MARKER!r} (U+2581) at index {text.index(SPACE_MARKER)}; "
            "this tokenizer reserves that character to mark spaces, so remove or replace it first"
        )
    if text != " ".join(text.split()):
        raise ValueError(
            f"pretokenize expects normalized text (single spaces, no leading or trailing "
            f"whitespace), got {text!r:.60}; call tokvec.text.normalize(text) first"
        )
    return _PRETOKEN_RE.findall(text.replace(" ", SPACE_MARKER))


def count_pairs(splits: dict[str, list[str]], word_counts: Counter) -> Counter:
    """Count adjacent symbol pairs over all words, each word weighted by how often it occurs."""
    pairs: Counter = Counter()
    for word, symbols in splits.items():
        for pair in zip(symbols, symbols[1:]):
            pairs[pair] += word_counts[word]
    return pairs


def merge_pair(symbols: list[str], pair: tuple[str, str]) -> list[str]:
    """Replace every occurrence of ``pair`` in ``symbols`` by one symbol, scanning left to right."""
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
        self.alphabet = list(alphabet)
        self.merges = [tuple(m) for m in merges]
        self.lowercase = lowercase
        self._rank = {pair: i for i, pair in enumerate(self.merges)}
        self._cache: dict[str, list[str]] = {}

    @classmethod
    def train(cls, corpus: str, vocab_size: int, *, min_frequency: int = 2, lowercase: bool = False) -> "BPE":
        """Learn merges from ``corpus`` until the vocabulary holds ``vocab_size`` symbols.

        The vocabulary is the alphabet plus one new symbol a merge. Training stops early when
        the most frequent pair occurs fewer than ``min_frequency`` times.
        """
        _check_text(corpus, "corpus")
        if isinstance(vocab_size, bool) or not isinstance(vocab_size, int) or vocab_size < 1:
            raise ValueError(f"vocab_size must be a positive int, got {vocab_size!r}")
        word_counts = Counter(pretokenize(normalize(corpus, lowercase=lowercase)))
        if not word_counts:
            raise ValueError("the corpus is empty after normalization; give BPE.train some text")
        alphabet = sorted({ch for word in word_counts for ch in word})
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
        return cls(alphabet, merges, lowercase=lowercase)

    @property
    def vocab(self) -> list[str]:
        """Every symbol the tokenizer can output: the alphabet, then each merge's result, once."""
        symbols = dict.fromkeys(self.alphabet)
        symbols.update(dict.fromkeys(a + b for a, b in self.merges))
        return list(symbols)

    def tokenize_word(self, word: str) -> list[str]:
        """Apply the merges to one pre-token, lowest rank (earliest learned) first."""
        if word in self._cache:
            return self._cache[word]
        symbols = list(word)
        while len(symbols) > 1:
            ranked = [(self._rank.get(pair, len(self._rank)), pair) for pair in zip(symbols, symbols[1:])]
            best_rank, best = min(ranked)
            if best_rank == len(self._rank):  # no learned merge applies any more
                break
            symbols = merge_pair(symbols, best)
        self._cache[word] = symbols
        return symbols

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

    tokenizer = Tokenizer(models.BPE(unk_token=unk_token))
    tokenizer.normalizer = normalizers.Sequence(
        [normalizers.NFKC(), normalizers.Replace(Regex(r"\s+"), " "), normalizers.Strip()]
    )
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Metaspace(replacement=SPACE_MARKER, prepend_scheme="never", split=False),
        pre_tokenizers.Split(Regex(_PRETOKEN_RE.pattern), behavior="isolated"),
    ])
    trainer = trainers.BpeTrainer(vocab_size=vocab_size + len(special_tokens), min_frequency=min_frequency,
                                  special_tokens=list(special_tokens), show_progress=False)
    tokenizer.train_from_iterator([_check_text(corpus, "corpus")], trainer)
    return tokenizer
