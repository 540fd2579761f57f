"""A stream of token ids cut into windows: the next-token inputs and targets a data loader serves.

Taught in the chapter "The whole pipeline" (``10_pipeline``): :func:`join_documents` makes one
stream of documents, :func:`windows` cuts it in plain Python, :class:`WindowDataset` does the
same for ``torch.utils.data.DataLoader``.

A window of ``context_length`` ``T`` starts every ``stride`` ids. Window ``k`` starts at
``s = k * stride`` and holds the inputs ``ids[s:s + T]`` and the targets ``ids[s + 1:s + T + 1]``:
the target at position ``t`` is the input at ``t + 1``, so a window needs ``T + 1`` ids. The
windows start at ``0, stride, 2 * stride, ...`` while a whole window fits, which gives
``(len(ids) - T - 1) // stride + 1`` windows. Nothing is padded: the ids after the last window's
last target (the *tail*, fewer than ``stride`` of them) are neither an input nor a target. A
stride below ``T`` makes windows overlap (the same ids are predicted again, after a different
context); a stride above ``T`` leaves gaps that are never predicted.

Every argument is checked first, as everywhere in the data path: an empty stream, an id that is
not an ``int`` (a ``bool`` included), is negative or is 2**63 or more (ids are stored as
``int64``), a tensor that is not 1-D, a window longer
than the stream, a stride below 1 or larger than the stream each raise an error that names the
value, the valid range and the fix.
"""

from __future__ import annotations

import numbers

import numpy as np
import torch
from torch.utils.data import Dataset

from tokvec import validate

__all__ = ["WindowDataset", "join_documents", "windows"]

_FIX_TYPE = "encode the text first, e.g. tokenizer.encode(text), and pass the list of ids"


def _short(value: int) -> str:
    """An int for a message: as it is when short, else as a power of ten."""
    return str(value) if abs(value) < 10**9 else f"about 10^{len(str(abs(value))) - 1}"


#: Ids are stored as ``int64`` (``torch.long``, the type an embedding looks up with): below 2**63.
_ID_LIMIT = 2**63


def _negative_id(name: str, i: int, v: int) -> ValueError:
    return ValueError(f"{name}[{i}] = {_short(v)} is not a token id: ids are 0 or more (rows of the "
                      f"embedding table); negative ids usually come from padding with -1 or from an "
                      f"unsigned type read as signed")


def _huge_id(name: str, i: int, v: int) -> ValueError:
    return ValueError(f"{name}[{i}] = {_short(v)} is too large for a token id: ids are stored as int64 "
                      f"(torch.long), so they must be below 2**63, and a vocabulary has far fewer rows; "
                      f"check the tokenizer's output (a hash or an unsigned -1 is not an id)")


def _no_ids(name: str) -> ValueError:
    return ValueError(f"{name} is empty: a window needs at least context_length + 1 ids; "
                      f"check that the text was read and encoded")


def _ids_tensor(ids: object, name: str) -> torch.Tensor:
    """A tensor or array of ids (anything with ``dtype`` and ``shape``) as a checked 1-D ``int64``
    copy on the CPU. The checks are vectorised: no Python loop over the ids."""
    if isinstance(ids, torch.Tensor):
        dtype = ids.dtype
        integer = not (dtype.is_floating_point or dtype.is_complex or dtype == torch.bool)
    else:
        ids = np.asarray(ids)
        integer = ids.dtype.kind in ("i", "u")                           # NumPy: 'i', 'u' integers
    if not integer:
        raise TypeError(f"{name} must hold integer token ids, got dtype {ids.dtype}; ids are rows "
                        f"of the embedding table: convert with ids.long() (PyTorch) or "
                        f"ids.astype(np.int64) (NumPy)")
    if len(ids.shape) != 1:
        raise ValueError(f"{name} must be 1-D, one stream of ids, got shape {tuple(ids.shape)}; "
                         f"flatten it (ids.flatten()), or keep documents apart and join them "
                         f"with join_documents")
    if isinstance(ids, torch.Tensor):
        ids = ids.detach().cpu()
        wide = ids.dtype == getattr(torch, "uint64", None)               # PyTorch >= 2.3
        # uint64 has no comparison on the CPU: its bits read as int64 are negative from 2**63 up
        out = ids.view(torch.int64).clone() if wide else ids.to(torch.int64, copy=True)
    else:
        wide = ids.dtype.kind == "u" and ids.dtype.itemsize == 8          # may hold 2**63 and more
        out = torch.from_numpy(np.array(ids, dtype=np.int64))             # a copy; wraps the same way
    bad = (out < 0).nonzero()                                             # (n_bad, 1)
    if len(bad):
        i = int(bad[0, 0])
        raise (_huge_id(name, i, int(out[i]) + 2**64) if wide else _negative_id(name, i, int(out[i])))
    return out


def _ids_list(ids: object, name: str, *, allow_empty: bool = False) -> list[int]:
    """``ids`` (a list, tuple or range of ints, or a 1-D integer tensor or array) as a list of ints
    in ``0 .. 2**63 - 1``."""
    if hasattr(ids, "dtype") and hasattr(ids, "shape"):                  # a tensor or an array
        out = _ids_tensor(ids, name).tolist()
    elif isinstance(ids, (list, tuple, range)):
        out = []
        for i, v in enumerate(ids):
            if isinstance(v, bool) or not isinstance(v, numbers.Integral):
                raise TypeError(f"{name}[{i}] must be an int token id >= 0, got {type(v).__name__} "
                                f"{v!r:.40}; {_FIX_TYPE}")
            if not 0 <= v < _ID_LIMIT:
                raise (_negative_id if v < 0 else _huge_id)(name, i, int(v))
            out.append(int(v))
    else:
        raise TypeError(f"{name} must be a list of int token ids or a 1-D integer tensor, got "
                        f"{type(ids).__name__} {ids!r:.40}; {_FIX_TYPE}")
    if not out and not allow_empty:
        raise _no_ids(name)
    return out


def _size(value: object, name: str, fix: str) -> int:
    """``validate.positive_int`` with the fix for this argument added to its message."""
    try:
        return validate.positive_int(value, name)
    except (TypeError, ValueError) as err:
        raise type(err)(f"{err}; {fix}") from None


def _check_sizes(n: int, context_length: object, stride: object) -> tuple[int, int]:
    """``context_length`` in ``1..n-1`` (a window is ``T + 1`` ids) and ``stride`` in ``1..n``."""
    if n < 2:
        raise ValueError(f"ids holds {n} id: a window needs at least 2 (one input and its target, the "
                         f"next id); check that the text was read and encoded")
    T = _size(context_length, "context_length", f"the stream of {n} ids allows 1..{n - 1}")
    if n <= T:                                         # a window is T + 1 ids
        raise ValueError(f"context_length = {_short(T)} needs {_short(T)} + 1 ids (the inputs and the "
                         f"targets shifted by one), but the stream has {n}; use context_length in "
                         f"1..{n - 1}, or a longer stream")
    fix = f"valid strides are 1..{n}; stride = context_length = {T} gives windows that just touch"
    stride = _size(stride, "stride", fix)
    if stride > n:
        raise ValueError(f"stride = {_short(stride)} is larger than the stream of {n} ids: {fix}")
    return T, stride


def join_documents(docs_ids, eot_id: int) -> list[int]:
    """One stream of ids: the documents' ids with ``eot_id`` between each document and the next.

    As ``str.join`` does: between documents, not after the last one, so the ids of
    ``"<|endoftext|>".join(texts)`` encoded by GPT-2's tokenizer are
    ``join_documents([encode(t) for t in texts], 50256)``. A document may be empty (it adds one
    more ``eot_id``); the list of documents may not. Each document is a list of ints >= 0 or a
    1-D integer tensor; ``eot_id`` is an int >= 0.
    """
    if isinstance(eot_id, bool) or not isinstance(eot_id, numbers.Integral):
        raise TypeError(f"eot_id must be an int token id >= 0, got {type(eot_id).__name__} {eot_id!r:.40}; "
                        f"GPT-2's <|endoftext|> is 50256")
    if not 0 <= eot_id < _ID_LIMIT:
        raise ValueError(f"eot_id = {_short(int(eot_id))} is not a token id: ids are 0 or more and "
                         f"below 2**63 (int64); GPT-2's <|endoftext|> is 50256")
    if not isinstance(docs_ids, (list, tuple)):
        raise TypeError(f"docs_ids must be a list of documents, each a list of int ids, got "
                        f"{type(docs_ids).__name__} {docs_ids!r:.40}; e.g. [encode(t) for t in texts]")
    if not docs_ids:
        raise ValueError("docs_ids is empty: pass at least one document (a list of int ids)")
    stream: list[int] = []
    for k, doc in enumerate(docs_ids):
        if isinstance(doc, numbers.Integral):
            raise TypeError(f"docs_ids[{k}] is the int {doc!r}, not a document: docs_ids is a list of "
                            f"lists of ids; for one document write [ids]")
        if k:
            stream.append(int(eot_id))
        stream += _ids_list(doc, f"docs_ids[{k}] (a document)", allow_empty=True)
    return stream


def windows(ids, context_length: int, stride: int) -> list[tuple[list[int], list[int]]]:
    """Every window of ``ids`` as ``(inputs, targets)``, two lists of ``context_length`` ids.

    Window ``k`` starts at ``s = k * stride``: ``inputs = ids[s:s + T]``,
    ``targets = ids[s + 1:s + T + 1]`` (shifted by one), for every ``s`` with ``s + T + 1 <= len(ids)``.
    The last window is the last that fits whole; the tail after its last target (fewer than
    ``stride`` ids) is dropped, never padded. ``ids`` is a list of ints >= 0 or a 1-D integer tensor.
    """
    ids = _ids_list(ids, "ids")
    T, stride = _check_sizes(len(ids), context_length, stride)
    return [(ids[s:s + T], ids[s + 1:s + T + 1]) for s in range(0, len(ids) - T, stride)]


class WindowDataset(Dataset):
    """The windows of :func:`windows` as a ``torch.utils.data.Dataset`` of ``(inputs, targets)``.

    ``ids`` (a list of ints >= 0, or a 1-D integer tensor or array) is copied once into a 1-D
    ``int64`` tensor on the CPU; item ``k`` is cut from it when asked for, so the dataset holds
    ``len(ids)`` ids however much the windows overlap. ``dataset[k]`` is two new ``LongTensor``
    of shape ``(context_length,)``; a ``DataLoader`` stacks them into ``(B, T)`` batches, and the
    training loop moves each batch to its device.

    ``starts`` is the range of the windows' first positions; ``tail`` is the number of ids after
    the last window's last target, which no window covers (fewer than ``stride``).
    """

    def __init__(self, ids, context_length: int, stride: int):
        if hasattr(ids, "dtype") and hasattr(ids, "shape"):             # checked without a loop
            self.ids = _ids_tensor(ids, "ids")                            # (N,)
            if not len(self.ids):
                raise _no_ids("ids")
        else:
            self.ids = torch.tensor(_ids_list(ids, "ids"), dtype=torch.long)   # (N,)
        n = len(self.ids)
        self.context_length, self.stride = _check_sizes(n, context_length, stride)
        self.starts = range(0, n - self.context_length, self.stride)

    def __len__(self) -> int:
        return len(self.starts)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        k = validate.check_index(index, len(self), "window index",
                                 f"the dataset has {len(self)} windows, 0..{len(self) - 1}")
        s, T = self.starts[k], self.context_length
        return self.ids[s:s + T].clone(), self.ids[s + 1:s + T + 1].clone()   # (T,), (T,)

    @property
    def tail(self) -> int:
        """How many ids at the end of the stream are neither an input nor a target."""
        return len(self.ids) - (self.starts[-1] + self.context_length + 1)

    def __repr__(self) -> str:
        return (f"WindowDataset({len(self.ids)} ids, context_length={self.context_length}, "
                f"stride={self.stride}: {len(self)} windows, tail {self.tail})")
