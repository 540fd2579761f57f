"""Source tutorial 004, "Embedding Layer from the Transformers architecture" (cell In [4]), verbatim.

``InputEmbeddings`` scales the looked-up rows by ``sqrt(d_model)`` but keeps ``nn.Embedding``'s
``N(0, 1)`` initialization, so the token part starts about ``sqrt(d_model)`` times longer than the
positional part (chapter 9 measures it). Needs PyTorch.

Source: the ``InputEmbeddings`` note (PyTorch), one of the five tutorial texts the course starts from. Its authors and
address were not supplied with the text; the book's page "The source tutorials" (``sources.md``)
identifies it by its title, framework and form.
"""

import torch.nn as nn
import math

__all__ = ["InputEmbeddings"]


class InputEmbeddings(nn.Module):
    def __init__(self, d_model: int, vocab_size: int) -> None:
        super().__init__()
        self.d_model = d_model
        self.vocab_size = vocab_size
        self.embedding = nn.Embedding(vocab_size, d_model)

    def forward(self, x):
        return(self.embedding(x) * math.sqrt(self.d_model))
