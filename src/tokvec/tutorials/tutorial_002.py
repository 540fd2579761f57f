"""Source tutorial 002, "Positional Encodings", Step 7 (cell In [7]), verbatim.

Its error, shown in the appendix on numerics: the angles ``positions * div_term`` are computed in float32, so
at position 100,000 the table is off by about 7e-3 (``tokvec.layers.sinusoidal_table`` computes
in float64 and rounds once). Needs PyTorch.

Source: the embeddings lesson, "Embeddings in Transformers" (PyTorch), one of the five tutorial texts the course starts from. Its authors and
address were not supplied with the text; the book's page "The source tutorials" (``sources.md``)
identifies it by its title, framework and form.
"""

import torch

__all__ = ["positional_encoding"]


def positional_encoding(seq_len, d_model):
    # Create a tensor for positional encodings
    pos_enc = torch.zeros(seq_len, d_model)

    # Calculate positional encodings
    # Shape (seq_len, 1)
    positions = torch.arange(seq_len, dtype=torch.float).unsqueeze(1)
    # Shape (d_model/2,)
    div_term = torch.exp(
        torch.arange(0, d_model, 2).float()
        * -(torch.log(torch.tensor(10000.0)) / d_model)
    )

    pos_enc[:, 0::2] = torch.sin(positions * div_term)  # Apply sine to even indices
    pos_enc[:, 1::2] = torch.cos(positions * div_term)  # Apply cosine to odd indices

    return pos_enc
