"""Source tutorial 004, "Embedding Layer from the Transformers architecture" (cell In [4]), verbatim.

``InputEmbeddings`` scales the looked-up rows by ``sqrt(d_model)`` but keeps ``nn.Embedding``'s
``N(0, 1)`` initialization, so the token part starts about ``sqrt(d_model)`` times longer than the
positional part (chapter 9 measures it). Needs PyTorch.
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
