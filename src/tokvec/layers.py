"""Ids to vectors in PyTorch: the input layer of a transformer, on CPU, CUDA or Apple's MPS.

Taught in chapter 8, "From loops to tensors" (``08_loops_to_tensors``: :func:`device`,
:func:`sinusoidal_table`) and chapter 9, "The TransformerEmbedding layer"
(``09_transformer_embedding``: :class:`TransformerEmbedding`, :class:`LearnedPositionEmbedding`).

Shapes follow PyTorch: ``nn.Embedding(N_V, d).weight`` is ``(N_V, d)``, the paper's ``W_e``
transposed; the positional table is ``(max_len, d)``, the paper's ``W_p`` transposed.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from tokvec.arrays import check_ids, sinusoidal_table_numpy

__all__ = ["LearnedPositionEmbedding", "TransformerEmbedding", "device", "sinusoidal_table"]


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
    table = torch.from_numpy(sinusoidal_table_numpy(length, d_model, base))  # (length, d_model) float64
    return table.to(device=device, dtype=dtype)                               # one rounding


class TransformerEmbedding(nn.Module):
    """The input layer of Vaswani et al. (2017): ``dropout(emb(ids) * sqrt(d_model) + PE[:T])``.

    * ``emb`` is one ``nn.Embedding(vocab_size, d_model)`` (``padding_idx`` is passed through);
    * ``PE`` is the sinusoidal table, a non-persistent buffer: it moves with ``.to()`` but is not
      saved in the ``state_dict`` (it is a formula, not a parameter);
    * dropout is active only in ``train()`` mode.

    ``ids`` has shape ``(T,)`` or ``(B, T)``; the output is ``(T, d_model)`` or ``(B, T, d_model)``
    in the module's dtype (a bfloat16 module gives bfloat16, never a silent float32). Every call
    checks the ids first (:func:`tokvec.arrays.check_ids`), on every device, so a bad id is a
    Python error that names it, never a wrapped-around row or a device-side assert.

    When the module changes dtype or device (``.to``, ``.double()``, ``.cuda()``, ...) the table
    is rebuilt from float64 rather than cast from its previous dtype, so it is always one
    rounding away from the true values.
    """

    def __init__(self, vocab_size: int, d_model: int, max_len: int, dropout: float = 0.1, *,
                 base: float = 10000.0, padding_idx: int | None = None, device=None, dtype=None):
        super().__init__()
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"dropout must be a probability in [0, 1), got {dropout!r}")
        self.vocab_size, self.d_model, self.max_len, self.base = vocab_size, d_model, max_len, base
        self.scale = math.sqrt(d_model)
        self.token = nn.Embedding(vocab_size, d_model, padding_idx=padding_idx,
                                  device=device, dtype=dtype)                   # weight (N_V, d)
        w = self.token.weight
        self.register_buffer("pe", sinusoidal_table(max_len, d_model, base, dtype=w.dtype, device=w.device),
                             persistent=False)                                  # (max_len, d)
        self.dropout = nn.Dropout(dropout)

    def _apply(self, fn, *args, **kwargs):
        # .to(), .cuda(), .double(), .bfloat16() all end here: rebuild PE from float64, one rounding.
        super()._apply(fn, *args, **kwargs)
        self.pe = sinusoidal_table(self.max_len, self.d_model, self.base, dtype=self.pe.dtype, device=self.pe.device)
        return self

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        _, T = check_ids(ids, self.vocab_size, self.max_len)
        x = self.token(ids)                                  # (B, T, d) or (T, d)
        x = torch.add(self.pe[:T], x, alpha=self.scale)      # PE + sqrt(d) * x, one kernel, (B, T, d)
        return self.dropout(x)

    def extra_repr(self) -> str:
        return f"vocab_size={self.vocab_size}, d_model={self.d_model}, max_len={self.max_len}, base={self.base}"


class LearnedPositionEmbedding(nn.Module):
    """The GPT-2 style input layer: ``dropout(tok(ids) + pos(arange(T)))`` with learned positions.

    Two ``nn.Embedding`` tables, ``(vocab_size, d_model)`` for tokens and ``(max_len, d_model)``
    for positions, both trained; no ``sqrt(d_model)`` scaling. Positions past ``max_len`` have no
    row at all: the input check refuses them (chapter 9 compares this with the sinusoidal table,
    which can be built for any length).
    """

    def __init__(self, vocab_size: int, d_model: int, max_len: int, dropout: float = 0.1, *,
                 padding_idx: int | None = None, device=None, dtype=None):
        super().__init__()
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"dropout must be a probability in [0, 1), got {dropout!r}")
        self.vocab_size, self.d_model, self.max_len = vocab_size, d_model, max_len
        self.token = nn.Embedding(vocab_size, d_model, padding_idx=padding_idx, device=device, dtype=dtype)
        self.position = nn.Embedding(max_len, d_model, device=device, dtype=dtype)  # (max_len, d)
        self.dropout = nn.Dropout(dropout)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        _, T = check_ids(ids, self.vocab_size, self.max_len)
        x = self.token(ids) + self.position.weight[:T]      # (B, T, d) + (T, d) -> (B, T, d)
        return self.dropout(x)

    def extra_repr(self) -> str:
        return f"vocab_size={self.vocab_size}, d_model={self.d_model}, max_len={self.max_len}"
