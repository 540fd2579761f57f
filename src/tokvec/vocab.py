"""Tokens to ids: the vocabulary.

Taught in chapter 2, "Mapping tokens to ids" (``chapters/02_vocabulary.ipynb``).

A :class:`Vocabulary` is a list of distinct tokens; a token's id is its index in that list.
The special tokens come first, at fixed ids, so every vocabulary of the course agrees on them:

======  =========  =============================================
id      token      used for
======  =========  =============================================
0       ``<pad>``  filling short sequences up to a batch's length
1       ``<unk>``  any token the vocabulary does not hold
2       ``<bos>``  beginning of a sequence
3       ``<eos>``  end of a sequence
======  =========  =============================================
"""

from __future__ import annotations

import hashlib
import json
import numbers
import os
import tempfile
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

from tokvec import validate

__all__ = ["SPECIALS", "PAD", "UNK", "BOS", "EOS", "UnknownTokenError", "Vocabulary"]

PAD, UNK, BOS, EOS = "<pad>", "<unk>", "<bos>", "<eos>"
#: The reserved tokens, in id order: ``<pad>`` = 0, ``<unk>`` = 1, ``<bos>`` = 2, ``<eos>`` = 3.
SPECIALS: tuple[str, ...] = (PAD, UNK, BOS, EOS)

_FORMAT = "tokvec.vocabulary"


class UnknownTokenError(KeyError):
    """A token that a vocabulary without ``<unk>`` does not hold (a ``KeyError``, printed plainly)."""

    def __str__(self) -> str:
        return str(self.args[0])

_VERSION = 2


def _check_tokens_iterable(tokens: object, name: str, what: str = "tokens") -> None:
    """A bare string is an iterable of characters, almost never what is meant: refuse it."""
    if not isinstance(tokens, Iterable):
        raise TypeError(f"{name} must be an iterable of {what} (e.g. a list), got {type(tokens).__name__} "
                        f"{tokens!r:.40}")
    if isinstance(tokens, (str, bytes)):
        raise TypeError(
            f"{name} must be an iterable of tokens (e.g. a list of str), got the {type(tokens).__name__} "
            f"{tokens!r:.40}, which would become one token per character; "
            "tokenize it first, e.g. word_tokenize(text), or wrap a single token in a list: [token]"
        )


def _check_path(path: object) -> Path:
    import os

    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a str or pathlib.Path, got {type(path).__name__} {path!r:.40}")
    return Path(path)


def _check_token(token: object, position: int) -> str:
    if not isinstance(token, str):
        raise TypeError(
            f"token at position {position} is {type(token).__name__} {token!r:.40}, not str; "
            "tokens are strings: tokenize the text first (e.g. tokvec.text.word_tokenize)"
        )
    return token


class Vocabulary:
    """A bijection between tokens (str) and ids (0 .. len-1), specials first.

    Args:
        tokens: the ordinary tokens, in id order after the specials. Duplicates are an error.
        specials: reserved tokens given the first ids (default :data:`SPECIALS`).
        unk_token: the special that stands for unknown tokens, or ``None`` for a closed
            vocabulary in which an unknown token is an error.
    """

    def __init__(self, tokens: Iterable[str] = (), *, specials: Sequence[str] = SPECIALS, unk_token: str | None = UNK):
        _check_tokens_iterable(tokens, "tokens")
        _check_tokens_iterable(specials, "specials")
        self._id_to_token: list[str] = []
        self._token_to_id: dict[str, int] = {}
        for position, token in enumerate([*specials, *tokens]):
            _check_token(token, position)
            if token in self._token_to_id:
                raise ValueError(
                    f"token {token!r} appears twice (ids {self._token_to_id[token]} and {position}); "
                    "a vocabulary maps each token to one id, so remove the duplicate"
                )
            self._token_to_id[token] = position
            self._id_to_token.append(token)
        self.specials: tuple[str, ...] = tuple(specials)
        if unk_token is not None and unk_token not in self.specials:
            raise ValueError(f"unk_token {unk_token!r} must be one of the specials {self.specials}")
        self.unk_token = unk_token
        #: How often each ordinary token occurred, when built by :meth:`from_corpus` (else empty).
        self.counts: Counter = Counter()

    @classmethod
    def from_corpus(cls, tokens: Iterable[str], *, min_count: int = 1, max_size: int | None = None,
                    specials: Sequence[str] = SPECIALS, unk_token: str | None = UNK) -> Vocabulary:
        """Build a vocabulary from a stream of tokens, most frequent first.

        Tokens seen fewer than ``min_count`` times are left out (they will map to ``unk_token``).
        Equal counts are ordered alphabetically, so the result does not depend on corpus order.
        ``max_size``, if given, caps ``len(vocab)``, specials included.
        """
        _check_tokens_iterable(tokens, "tokens")
        _check_tokens_iterable(specials, "specials")
        specials = tuple(specials)  # read once: it is searched for every token below
        if isinstance(min_count, bool) or not isinstance(min_count, int) or min_count < 1:
            raise ValueError(f"min_count must be an int >= 1, got {min_count!r}")
        counts = Counter(_check_token(t, i) for i, t in enumerate(tokens))
        if not counts:
            raise ValueError(
                "cannot build a vocabulary from an empty corpus (0 tokens); "
                "pass a non-empty list of tokens, e.g. word_tokenize(load_corpus())"
            )
        if max_size is not None and (isinstance(max_size, bool) or not isinstance(max_size, int)
                                     or max_size < len(specials)):
            raise ValueError(
                f"max_size must be an int >= {len(specials)} (the number of specials), got {max_size!r}"
            )
        ordered = sorted((t for t, c in counts.items() if c >= min_count and t not in specials),
                         key=lambda t: (-counts[t], t))
        if max_size is not None:
            ordered = ordered[: max_size - len(specials)]
        vocab = cls(ordered, specials=specials, unk_token=unk_token)
        vocab.counts = Counter({t: counts[t] for t in ordered})
        return vocab

    # --- sizes and membership -------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._id_to_token)

    def __contains__(self, token: object) -> bool:
        return token in self._token_to_id

    def __iter__(self):
        return iter(self._id_to_token)

    @property
    def tokens(self) -> list[str]:
        """All tokens in id order (a copy)."""
        return list(self._id_to_token)

    @property
    def unk_id(self) -> int | None:
        return None if self.unk_token is None else self._token_to_id[self.unk_token]

    # --- one token, one id ----------------------------------------------------------------
    def token_to_id(self, token: str, *, position: int = 0) -> int:
        """The id of ``token``; an unknown token gives ``unk_id``, or an error without one."""
        _check_token(token, position)
        token_id = self._token_to_id.get(token, self.unk_id)
        if token_id is None:
            raise UnknownTokenError(
                f"token {token!r} (position {position}) is not in this vocabulary of {len(self)} tokens "
                "and the vocabulary has no unknown token; build it with unk_token='<unk>' "
                "or add the token"
            )
        return token_id

    def id_to_token(self, token_id: int, *, position: int = 0) -> str:
        """The token with id ``token_id``; ids outside 0 .. len-1 are an error (no wrap-around)."""
        if isinstance(token_id, bool) or not isinstance(token_id, numbers.Integral):
            raise TypeError(
                f"id at position {position} is {type(token_id).__name__} {token_id!r:.40}, not int; "
                f"ids are whole numbers in 0..{len(self) - 1}"
            )
        if not 0 <= token_id < len(self):
            raise IndexError(
                f"id {token_id} at position {position} is out of range: valid ids are 0..{len(self) - 1} "
                f"for this vocabulary of {len(self)} tokens; was it made with a different vocabulary?"
            )
        return self._id_to_token[int(token_id)]

    # --- whole sequences --------------------------------------------------------------------
    def encode(self, tokens: Iterable[str], *, add_bos_eos: bool = False,
               allow_specials: bool = False) -> list[int]:
        """Map tokens to ids, optionally wrapped in ``<bos>`` ... ``<eos>``.

        A token spelled like a special (``"<pad>"``, ``"<eos>"``, ...) is refused unless
        ``allow_specials=True``: special ids are added as ids (``add_bos_eos``, padding), never read
        from text, so that text cannot produce them by accident (tiktoken's ``encode`` refuses them
        by default too). Pass ``allow_specials=True`` to re-encode the output of :meth:`decode`.
        """
        if isinstance(tokens, str):
            raise TypeError(
                f"encode takes a list of tokens, got the str {tokens!r:.40}; "
                "tokenize it first, e.g. vocab.encode(word_tokenize(text))"
            )
        _check_tokens_iterable(tokens, "tokens")
        if validate.flag(add_bos_eos, "add_bos_eos"):
            missing = [t for t in (BOS, EOS) if t not in self._token_to_id]
            if missing:
                raise ValueError(
                    f"add_bos_eos=True needs {' and '.join(missing)} in the vocabulary, but its specials are "
                    f"{self.specials}; build it with specials that include '<bos>' and '<eos>' "
                    "(the default tokvec.vocab.SPECIALS does) or call encode with add_bos_eos=False"
                )
        allow = validate.flag(allow_specials, "allow_specials")
        ids = []
        for position, token in enumerate(tokens):
            token_id = self.token_to_id(token, position=position)
            if not allow and token in self.specials:
                raise ValueError(
                    f"token {token!r} at position {position} is the special token with id {token_id}; "
                    "special tokens are added as ids (add_bos_eos=True, padding), never produced from "
                    "text. If the tokens come from decode, pass allow_specials=True"
                )
            ids.append(token_id)
        if add_bos_eos:
            ids = [self._token_to_id[BOS], *ids, self._token_to_id[EOS]]
        return ids

    def decode(self, ids: Iterable[int], *, skip_specials: bool = False) -> list[str]:
        """Map ids back to tokens; ``skip_specials`` drops ``<pad>``, ``<bos>``, ``<eos>`` and the like.

        The unknown token is never skipped: ``<unk>`` stands for a real token of the text, and
        dropping it would make the decoded sequence silently shorter than the one encoded.
        """
        if not isinstance(ids, Iterable) or isinstance(ids, (str, bytes)):
            raise TypeError(f"ids must be an iterable of int ids (e.g. a list), got {type(ids).__name__} "
                            f"{ids!r:.40}; for one id use vocab.id_to_token(token_id)")
        tokens = [self.id_to_token(i, position=p) for p, i in enumerate(ids)]
        if validate.flag(skip_specials, "skip_specials"):
            tokens = [t for t in tokens if t not in self.specials or t == self.unk_token]
        return tokens

    # --- files -----------------------------------------------------------------------------
    def to_dict(self) -> dict:
        """The vocabulary as plain data: specials, unknown token, ordinary tokens in id order, counts."""
        return {"format": _FORMAT, "version": _VERSION, "specials": list(self.specials),
                "unk_token": self.unk_token, "tokens": self._id_to_token[len(self.specials):],
                "counts": {t: int(c) for t, c in sorted(self.counts.items(), key=lambda kv: (-kv[1], kv[0]))}}

    @staticmethod
    def _digest(data: dict) -> str:
        """SHA-256 of the content (every key but the digest), in one canonical serialization."""
        content = {k: v for k, v in data.items() if k != "sha256"}
        canonical = json.dumps(content, ensure_ascii=True, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode("ascii")).hexdigest()

    def save(self, path: str | Path) -> None:
        """Write the vocabulary as UTF-8 JSON, with a SHA-256 of its content, atomically.

        The file is first written in full to a temporary file in the same folder and then renamed
        over ``path`` (``os.replace``), so an error at any point (a token that is not valid UTF-8,
        a full disk) leaves an existing file at ``path`` exactly as it was.
        """
        path = _check_path(path)
        data = self.to_dict()
        for token in [*data["specials"], *data["tokens"]]:
            try:
                token.encode("utf-8")
            except UnicodeEncodeError as err:
                raise ValueError(
                    f"cannot save token {token!r}: it is not valid Unicode text ({err.reason} at index "
                    f"{err.start}); remove lone surrogates, e.g. with text.encode('utf-8', "
                    f"'replace').decode(); {path} was not changed"
                ) from err
        data["sha256"] = self._digest(data)
        payload = (json.dumps(data, ensure_ascii=False, indent=1) + "\n").encode("utf-8")
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(payload)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    @classmethod
    def load(cls, path: str | Path) -> Vocabulary:
        """Read a vocabulary written by :meth:`save`.

        The content is checked against the SHA-256 stored in the file, so a changed or damaged
        file is a ``ValueError`` naming it, never a different vocabulary that silently changes
        every id.
        """
        path = _check_path(path)

        def damaged(why: str) -> ValueError:
            return ValueError(f"{path} is not a valid vocabulary file: {why}")

        try:
            data = json.loads(path.read_bytes().decode("utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as err:
            raise damaged(f"not UTF-8 JSON ({err})") from err
        except ValueError as err:  # Python refuses to parse an integer of more than 4,300 digits
            raise damaged(f"it holds a number too long to be a count ({err})") from err
        except RecursionError as err:
            raise damaged("JSON nested too deeply to be a vocabulary") from err
        if not isinstance(data, dict) or data.get("format") != _FORMAT:
            raise damaged(f"expected a JSON object with format={_FORMAT!r}; was it written by "
                          "Vocabulary.save?")
        if data.get("version") != _VERSION:
            raise damaged(f"format version {data.get('version')!r}, but this tokvec reads version "
                          f"{_VERSION} only; build the vocabulary again and save it")
        expected = {"format", "version", "specials", "unk_token", "tokens", "counts", "sha256"}
        if data.keys() != expected:
            missing, extra = sorted(expected - data.keys()), sorted(data.keys() - expected)
            raise damaged(f"missing keys {missing}, unexpected keys {extra}; the file is damaged")
        if data["sha256"] != cls._digest(data):
            raise damaged("its content does not match the SHA-256 stored in it, so it was changed or "
                          "damaged after it was saved; save the vocabulary again from its source")
        for key in ("specials", "tokens"):
            if not isinstance(data[key], list):
                raise damaged(f"{key!r} must be a list of strings, got {type(data[key]).__name__}")
        counts = data["counts"]
        if not isinstance(counts, dict) or not all(
                isinstance(c, int) and not isinstance(c, bool) and c >= 0 for c in counts.values()):
            raise damaged("'counts' must map tokens to counts >= 0")
        try:
            vocab = cls(data["tokens"], specials=data["specials"], unk_token=data["unk_token"])
        except (TypeError, ValueError) as err:
            raise damaged(str(err)) from err
        vocab.counts = Counter(counts)
        return vocab

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Vocabulary):
            return NotImplemented
        # equal when they map the same tokens to the same ids; counts are a record, not the mapping
        return (self._id_to_token, self.specials, self.unk_token) == (
            other._id_to_token, other.specials, other.unk_token)

    def __repr__(self) -> str:
        # the first tokens, as many as fit in one 88-character line (the width of the page)
        head, tail = f"Vocabulary({len(self)} tokens: [", f"], unk_token={self.unk_token!r})"
        shown: list[str] = []
        for k, token in enumerate(self._id_to_token[:8]):
            rest = ", ..." if k + 1 < len(self) else ""
            if len(head + ", ".join([*shown, repr(token)]) + rest + tail) > 88:
                break
            shown.append(repr(token))
        more = ", ..." if len(shown) < len(self) else ""
        return head + ", ".join(shown) + more + tail
