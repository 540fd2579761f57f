"""tokvec: the shared code of the course "From Tokens to Vectors".

The package reads like the table of contents. The data path, one chapter after another:

* :mod:`tokvec.text`      -- raw text to tokens: normalization, simple tokenizers, BPE (chapter 1)
* :mod:`tokvec.bytebpe`   -- byte-level BPE as in GPT-2 and GPT-4: train, encode exactly like
  tiktoken, stream, read and write GPT-2's files (the chapter "Byte-level BPE")
* :mod:`tokvec.vocab`     -- tokens to ids: the :class:`~tokvec.vocab.Vocabulary` (chapter 2)
* :mod:`tokvec.reference` -- ids to vectors in pure Python: Algorithms 1 and 2, sinusoids (chapters 3-7)
* :mod:`tokvec.arrays`    -- the same with whole NumPy arrays (chapter 8)
* :mod:`tokvec.layers`    -- the PyTorch input layer: ``TransformerEmbedding`` and
  ``LearnedTransformerEmbedding`` (chapters 8-9)
* :mod:`tokvec.windows`   -- the whole pipeline's last step: documents joined into one stream of
  ids, cut into windows of next-token inputs and targets, ``WindowDataset`` for a ``DataLoader``
  ("The whole pipeline")
* :mod:`tokvec.attention` -- where positions act: attention scores, RoPE, ALiBi ("Where positions act")
* :mod:`tokvec.parallel`  -- the embedding split over processes: ``VocabParallelEmbedding`` ("The embedding across
  processes")
* :mod:`tokvec.fused`     -- the input layer as one Triton kernel, for a GPU (chapter "Making it fast", planned)
* :mod:`tokvec.validate`  -- every input check of the data path: sizes, indices, token ids

Beside it, and never imported by it:

* :mod:`tokvec.tutorials` -- the source tutorials' own code, verbatim, errors included (chapters 3, 7-9)
* :mod:`tokvec.experiment` -- the position-scheme experiment: tiny models trained on a CPU (the experiment chapter)
* :mod:`tokvec.bench`     -- measurement: ``python -m tokvec.bench`` ("What vectorization buys"),
  GPU kernels, roofline
* :mod:`tokvec.course`    -- course tooling: learner feedback, ``show_source``, student notebooks
* :mod:`tokvec.environment` -- versions and machine, printed by every chapter and every benchmark

``tokvec.layers``, ``tokvec.windows``, ``tokvec.attention``, ``tokvec.experiment``,
``tokvec.parallel``, ``tokvec.fused`` and ``tokvec.bench.cpu`` need PyTorch and are imported explicitly
(``from tokvec.layers import TransformerEmbedding``) so that ``import tokvec`` stays light and
works without it.
"""

from tokvec.environment import versions
from tokvec.text import (
    BPE,
    SENTENCE,
    SPACE_MARKER,
    char_tokenize,
    load_corpus,
    normalize,
    pretokenize,
    train_hf_bpe,
    whitespace_tokenize,
    word_tokenize,
)
from tokvec.vocab import SPECIALS, UnknownTokenError, Vocabulary

__version__ = "1.0.0"

__all__ = [
    "BPE",
    "SENTENCE",
    "SPACE_MARKER",
    "SPECIALS",
    "UnknownTokenError",
    "Vocabulary",
    "char_tokenize",
    "load_corpus",
    "normalize",
    "pretokenize",
    "train_hf_bpe",
    "versions",
    "whitespace_tokenize",
    "word_tokenize",
]
