"""Ids to vectors in PyTorch: the input layer of a transformer, on CPU, CUDA or Apple's MPS.

Taught in chapter 8, "From loops to tensors" (``08_loops_to_tensors``: :func:`device`,
:func:`sinusoidal_table`) and chapter 9, "The TransformerEmbedding layer"
(``09_transformer_embedding``: :class:`TransformerEmbedding`, :class:`LearnedTransformerEmbedding`).

Shapes follow PyTorch: ``nn.Embedding(N_V, d).weight`` is ``(N_V, d)``, the paper's ``W_e``
transposed; the positional table is ``(max_len, d)``, the paper's ``W_p`` transposed.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn
from torch.autograd import forward_ad

from tokvec import validate
from tokvec.arrays import sinusoidal_table_numpy
from tokvec.validate import check_ids

__all__ = ["LearnedTransformerEmbedding", "TransformerEmbedding", "device", "sinusoidal_table"]


def device() -> torch.device:
    """The best device here: ``cuda`` if a CUDA GPU is present, then ``mps`` (Apple), then ``cpu``."""
    if torch.cuda.is_available():
        return torch.device("cuda")
    if torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


def sinusoidal_table(length: int, d_model: int, base: float = 10000.0, *,
                     dtype: torch.dtype = torch.float32, device=None) -> torch.Tensor:
    """The sinusoidal positional table as a ``(length, d_model)`` tensor: rows are positions.

    The same numbers as :func:`tokvec.arrays.sinusoidal_table_numpy` (and so as
    ``tokvec.reference.sinusoidal_positions`` transposed): computed once in float64 from exact
    integer positions, then rounded once to ``dtype`` and moved to ``device``.
    """
    validate.torch_floating_dtype(dtype)
    table = torch.from_numpy(sinusoidal_table_numpy(length, d_model, base))  # (length, d_model) float64
    return table.to(device=device, dtype=dtype)                               # one rounding


def _check_layer_args(vocab_size, d_model, max_len, dropout, padding_idx, dtype) -> tuple[int, int, int]:
    vocab_size = validate.positive_int(vocab_size, "vocab_size")
    d_model = validate.positive_int(d_model, "d_model")
    max_len = validate.positive_int(max_len, "max_len")
    validate.table_size(vocab_size, d_model, ("vocab_size", "d_model"), validate.ARRAY_TABLE_LIMIT)
    validate.table_size(max_len, d_model, ("max_len", "d_model"), validate.ARRAY_TABLE_LIMIT)
    validate.probability(dropout, "dropout")
    if padding_idx is not None:
        if isinstance(padding_idx, bool) or not isinstance(padding_idx, int):
            raise TypeError(f"padding_idx must be an int in 0..{vocab_size - 1} or None, "
                            f"got {type(padding_idx).__name__} {padding_idx!r:.40}")
        if not 0 <= padding_idx < vocab_size:
            raise ValueError(f"padding_idx = {padding_idx} is out of range: valid ids are 0..{vocab_size - 1} "
                             f"(vocab_size = {vocab_size}); use the id of <pad>, 0 in tokvec.vocab")
    if dtype is not None:
        validate.torch_floating_dtype(dtype)
    return vocab_size, d_model, max_len


def _lookup_ids(ids, vocab_size: int, max_len: int, weight: torch.Tensor, offsets=None):
    """Check ``ids`` (:func:`tokvec.validate.check_ids`) against a layer's table; return ``(T, ids)``.

    Ids must be a tensor on the table's device (a NumPy array or another device is an error that
    says how to move it), and so must ``offsets`` unless it is an int. int8, int16 and uint8 ids
    are accepted and widened to int64 for the lookup, so they give exactly the result of int64 ids.
    """
    if not isinstance(ids, torch.Tensor):
        if hasattr(ids, "dtype") and hasattr(ids, "shape"):
            raise TypeError(f"ids must be a torch.Tensor, got a {type(ids).__name__} of dtype {ids.dtype}; "
                            f"convert it with torch.as_tensor(ids, device=layer.token.weight.device)")
        check_ids(ids, vocab_size, max_len)  # raises the list/None/str error that names the fix
    if isinstance(offsets, np.ndarray):
        raise TypeError(f"offsets must be an int or a torch.Tensor of shape (B,), got a NumPy array "
                        f"{offsets!r:.60}; convert it with torch.as_tensor(offsets, device=ids.device)")
    if ids.device != weight.device:
        raise ValueError(f"ids are on {ids.device} but the layer's table is on {weight.device}; "
                         f"move one of them, e.g. ids.to({str(weight.device)!r})")
    try:
        _, T = check_ids(ids, vocab_size, max_len, offsets)   # ids and offsets: one read-back
    except RuntimeError as err:           # a tensor with no storage to read: torch.func.vmap's
        if "doesn't have storage" not in str(err):
            raise
        raise TypeError("ids are a batched tensor of torch.func.vmap (or another torch.func "
                        "transform), whose values the layer's input check cannot read; the layer "
                        "takes a whole batch already: call it on ids of shape (B, T) instead of "
                        "vmapping over them") from err
    if ids.dtype not in (torch.int64, torch.int32):
        ids = ids.long()
    return T, ids


@torch.compiler.disable
def _table_like(weight: torch.Tensor, max_len: int, d_model: int, base: float) -> torch.Tensor:
    """:func:`sinusoidal_table` in the dtype and on the device of ``weight``; never traced.

    ``torch.compile`` runs this function as eager code (a graph break) instead of tracing the
    NumPy call inside: traced under ``torch.inference_mode()``, ``torch.from_numpy`` trips a
    guard of torch 2.13's compiler ("Guard failed on the same frame it was created").
    """
    return sinusoidal_table(max_len, d_model, base, dtype=weight.dtype, device=weight.device)


class TransformerEmbedding(nn.Module):
    """The input layer of Vaswani et al. (2017): ``dropout(emb(ids) * sqrt(d_model) + PE[:T])``.

    * ``emb`` is one ``nn.Embedding(vocab_size, d_model)`` (``padding_idx`` is passed through);
    * ``PE`` is the sinusoidal table, :attr:`pe`: not a parameter and not in the ``state_dict``
      (it is a formula, not something learned), always in the dtype and on the device of
      ``emb.weight``;
    * dropout is active only in ``train()`` mode.

    ``ids`` has shape ``(T,)`` or ``(B, T)``; the output is ``(T, d_model)`` or ``(B, T, d_model)``
    in the module's dtype (a bfloat16 module gives bfloat16, never a silent float32). Every call
    checks the ids first (:func:`tokvec.validate.check_ids`), on every device, so a bad id is a
    Python error that names it, never a wrapped-around row or a device-side assert. The check
    reads two numbers back to Python, so ``torch.compile(layer)`` makes two graphs of a call, the
    reduction and then the lookup and the sum, with the check between them in Python (one graph
    break); it works under ``torch.inference_mode()``, ``torch.no_grad()`` and in training.

    The token table starts normal with mean 0 and standard deviation ``d_model ** -0.5`` (variance
    ``1 / d_model``), the initialization that comes with the ``sqrt(d_model)`` factor in the
    Transformer's reference code (tensor2tensor) and in fairseq: after the factor, each entry of
    the token part has standard deviation 1, the same order as the entries of the sinusoidal table
    (root mean square ``1 / sqrt(2)``), so neither part drowns the other (chapters 3 and 9).
    ``init_std=1.0`` gives standard deviation 1 instead, ``nn.Embedding``'s default and the source
    tutorials' start; to use trained or the tutorials' weights, copy them in as chapter 9 does:
    ``with torch.no_grad(): layer.token.weight.copy_(weight)``.

    When no gradient is tracked, backward or forward (under ``torch.no_grad()`` or
    ``torch.inference_mode()``, or with frozen weights, and no forward-mode tangent), the sum is
    written into the rows that ``self.token`` just gathered instead of a new tensor. The output
    is the same either way, but the tensor ``self.token`` returned is then reused: a forward hook
    on ``self.token`` that keeps it ends up holding the sum, not the raw rows (clone them in the
    hook if you need them).
    """

    def __init__(self, vocab_size: int, d_model: int, max_len: int, dropout: float = 0.1, *,
                 base: float = 10000.0, padding_idx: int | None = None, init_std: float | None = None,
                 device=None, dtype=None):
        super().__init__()
        vocab_size, d_model, max_len = _check_layer_args(vocab_size, d_model, max_len, dropout,
                                                         padding_idx, dtype)
        base = validate.base(base)
        if init_std is None:
            init_std = d_model ** -0.5
        elif (isinstance(init_std, bool) or not isinstance(init_std, (int, float))
              or not (math.isfinite(init_std) and init_std >= 0)):
            raise ValueError(f"init_std must be a finite number >= 0 or None (for d_model ** -0.5), "
                             f"got {init_std!r:.40}")
        self.vocab_size, self.d_model, self.max_len, self.base = vocab_size, d_model, max_len, base
        self.scale = math.sqrt(d_model)
        self.token = nn.Embedding(vocab_size, d_model, padding_idx=padding_idx,
                                  device=device, dtype=dtype)                   # weight (N_V, d)
        with torch.no_grad():
            self.token.weight.normal_(0.0, init_std)
            if padding_idx is not None:
                self.token.weight[padding_idx].zero_()
        w = self.token.weight                                    # the table is built here, once
        self._pe = ((w.dtype, w.device), _table_like(w, max_len, d_model, base))  # (key, table)
        self.dropout = nn.Dropout(dropout)

    @property
    def pe(self) -> torch.Tensor:
        """The ``(max_len, d_model)`` sinusoidal table in the dtype and on the device of the weights.

        Built from float64 and rounded once, in ``__init__`` and again whenever the module's dtype
        or device has changed since the last call (``.to``, ``.double()``, ``.cuda()``, ... of this
        module or of a model that contains it), so it is always one rounding away from the true
        values, never a float32 table cast again. Not a buffer, so nothing is cast twice and the
        ``state_dict`` holds only the weights. A rebuild runs as ordinary eager code even inside
        ``torch.compile`` (:func:`_table_like`), so a compiled layer works after a ``.to()``.
        """
        w = self.token.weight
        key = (w.dtype, w.device)
        if self._pe is None or self._pe[0] != key:
            self._pe = (key, _table_like(w, self.max_len, self.d_model, self.base))
        return self._pe[1]

    def forward(self, ids: torch.Tensor, offsets: torch.Tensor | int | None = None) -> torch.Tensor:
        """``ids`` ``(T,)`` or ``(B, T)``; token ``t`` sits at position ``t``, or at ``offsets + t``
        (an int for every sequence, or a ``(B,)`` tensor, one start per sequence, as a server
        decodes sequences of different lengths: :func:`tokvec.validate.check_offsets`)."""
        T, ids = _lookup_ids(ids, self.vocab_size, self.max_len, self.token.weight, offsets)
        if offsets is None:
            pe = self.pe[:T]                                 # (T, d)
        else:
            if isinstance(offsets, torch.Tensor):
                if offsets.device != ids.device:
                    raise ValueError(f"offsets are on {offsets.device} but the ids on {ids.device}; "
                                     f"move them, e.g. offsets.to({str(ids.device)!r})")
                positions = offsets.long()[:, None] + torch.arange(T, device=ids.device)  # (B, T)
                pe = self.pe[positions]                      # (B, T, d): each sequence its own rows
            else:
                pe = self.pe[offsets:offsets + T]            # (T, d)
        x = self.token(ids)                                  # (B, T, d) or (T, d), a new tensor
        # autograd, backward or forward (torch.func.jvp, forward_ad), cannot differentiate out=
        if x.requires_grad or forward_ad.unpack_dual(x).tangent is not None:
            x = torch.add(pe, x, alpha=self.scale)           # PE + sqrt(d) * x, one operation
        else:                                                # no gradient tracked: the same
            torch.add(pe, x, alpha=self.scale, out=x)        # operation, into the gathered rows
        return self.dropout(x)

    def extra_repr(self) -> str:
        return f"vocab_size={self.vocab_size}, d_model={self.d_model}, max_len={self.max_len}, base={self.base}"


class LearnedTransformerEmbedding(nn.Module):
    """The input layer with learned positions, as in GPT-2: ``dropout(tok(ids) + pos(arange(T)))``.

    Two ``nn.Embedding`` tables, ``(vocab_size, d_model)`` for tokens and ``(max_len, d_model)``
    for positions, both trained; no ``sqrt(d_model)`` scaling. Positions past ``max_len`` have no
    row at all: the input check refuses them (chapter 9 compares this with the sinusoidal table,
    which can be built for any length).
    """

    def __init__(self, vocab_size: int, d_model: int, max_len: int, dropout: float = 0.1, *,
                 padding_idx: int | None = None, device=None, dtype=None):
        super().__init__()
        vocab_size, d_model, max_len = _check_layer_args(vocab_size, d_model, max_len, dropout,
                                                         padding_idx, dtype)
        self.vocab_size, self.d_model, self.max_len = vocab_size, d_model, max_len
        self.token = nn.Embedding(vocab_size, d_model, padding_idx=padding_idx, device=device, dtype=dtype)
        self.position = nn.Embedding(max_len, d_model, device=device, dtype=dtype)  # (max_len, d)
        self.dropout = nn.Dropout(dropout)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        T, ids = _lookup_ids(ids, self.vocab_size, self.max_len, self.token.weight)
        x = self.token(ids) + self.position.weight[:T]      # (B, T, d) + (T, d) -> (B, T, d)
        return self.dropout(x)

    def extra_repr(self) -> str:
        return f"vocab_size={self.vocab_size}, d_model={self.d_model}, max_len={self.max_len}"
