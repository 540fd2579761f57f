"""tokvec: the shared code of the course "From Tokens to Vectors".

The modules follow the path of the data, one chapter after another:

* :mod:`tokvec.text`  -- raw text to tokens: normalization, simple tokenizers, BPE (chapter 1)
* :mod:`tokvec.vocab` -- tokens to ids: the :class:`~tokvec.vocab.Vocabulary` (chapter 2)
* :mod:`tokvec.reference` -- ids to vectors in pure Python: Algorithms 1 and 2, sinusoids (chapters 3-7)
* :mod:`tokvec.arrays` -- the same with whole NumPy arrays, and the input checks (chapter 8)
* :mod:`tokvec.layers` -- the PyTorch input layer: ``TransformerEmbedding`` and friends (chapters 8-9)
* :mod:`tokvec.bench`  -- ``python -m tokvec.bench``: pure Python vs NumPy vs PyTorch (chapter 10)
* :mod:`tokvec.check`  -- feedback on a learner's own answer (exercises of chapters 2, 5, 6, 8)
* :mod:`tokvec.roofline` -- bytes moved by the input layer and the memory-bound floor (GPU chapter, planned)
* :mod:`tokvec.fused`  -- the input layer as one Triton kernel (GPU chapter, planned; interpreter-tested)
* :mod:`tokvec.kernelbench` -- ``python -m tokvec.bench kernels``: eager, compiled, fused, copy on a GPU
* :mod:`tokvec.student` -- ``make student``: student notebooks generated from the chapters
* :mod:`tokvec.display` -- showing the package's own source and versions inside the chapters

``tokvec.layers`` and ``tokvec.bench`` need PyTorch and are imported explicitly
(``from tokvec.layers import TransformerEmbedding``) so that ``import tokvec`` stays light.
"""

from tokvec import check
from tokvec.display import show_source, versions
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

__version__ = "0.1.0"

__all__ = [
    "BPE",
    "SENTENCE",
    "SPACE_MARKER",
    "SPECIALS",
    "UnknownTokenError",
    "Vocabulary",
    "char_tokenize",
    "check",
    "load_corpus",
    "normalize",
    "pretokenize",
    "train_hf_bpe",
    "show_source",
    "versions",
    "whitespace_tokenize",
    "word_tokenize",
]
