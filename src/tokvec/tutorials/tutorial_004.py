"""Source tutorial 004, "Embedding Layer from the Transformers architecture" (cell In [4]), verbatim.

``InputEmbeddings`` scales the looked-up rows by ``sqrt(d_model)`` but keeps ``nn.Embedding``'s
``N(0, 1)`` initialization, so the token part (length about ``d_model``) starts about
``sqrt(2 * d_model)`` times longer than a sinusoidal position vector (length ``sqrt(d_model / 2)``):
32 times at ``d_model = 512`` (chapter 9 and the appendix on frameworks measure it). That holds
for the class as the note shows it; the public code the class comes from re-initializes every matrix with
``nn.init.xavier_uniform_`` after building the model, as the Annotated Transformer does, and then
the balance depends on the vocabulary size (the appendix "Embedding tables in frameworks").
Needs PyTorch.

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
