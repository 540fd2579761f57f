"""Byte-level BPE, the tokenizer of GPT-2, GPT-4 and Llama 3: train, encode, decode, stream, save.

Taught in the chapter "Byte-level BPE" (``chapters/byte_level_bpe.ipynb``; after chapter 1,
whose BPE works on characters). Text is UTF-8 bytes, so the 256 single bytes are the base symbols
and no text is ever unknown. A regex pre-tokenizer cuts the text into pieces (words with their
leading space, numbers, punctuation, whitespace runs); BPE merges bytes only inside a piece.
Special tokens such as ``<|endoftext|>`` are cut out first: they are one id each and never merge
with anything.

* :func:`train` learns ``(vocab, merges)`` from text (:func:`train_file` from a file larger than
  memory, counting pre-tokens in parallel over ranges that begin at a special token): ``vocab``
  maps an id to its bytes (the 256 bytes first, then the special tokens, then one entry per
  merge), ``merges`` lists the pairs in the order they were made. Ties between equally frequent
  pairs go to the lexicographically greater pair of byte strings, so training is deterministic.
  :func:`train_slow` is the same training by its definition, step by step, for reading.
* :class:`Tokenizer` encodes and decodes with those, or with published files (GPT-2's
  ``encoder.json`` and ``vocab.bpe`` with :meth:`Tokenizer.from_files`, a tiktoken rank file such
  as GPT-4's ``cl100k_base`` with :meth:`Tokenizer.from_tiktoken`), and gives exactly the ids of
  ``tiktoken`` for the same files and pattern, special-token keywords included. Encoding merges,
  inside each piece, the adjacent pair whose concatenation has the lowest rank, until none is
  left (a bounded cache remembers the result per piece). ``encode_iterable`` streams text of any
  size and gives the ids of ``encode`` for any chunking. :meth:`Tokenizer.save` writes GPT-2's
  format.

The code is split as minbpe and tiktoken split theirs: :mod:`~tokvec.bytebpe.training`
(``train``), :mod:`~tokvec.bytebpe.encoder` (``Tokenizer``, ``published``) and
:mod:`~tokvec.bytebpe.files` (the file formats), on :mod:`~tokvec.bytebpe.pretokenizer` (the
patterns, special tokens and valid text that training and encoding share). Every public name is
importable from here, ``from tokvec.bytebpe import Tokenizer``.
"""

from tokvec.bytebpe.encoder import Tokenizer, published
from tokvec.bytebpe.files import PUBLISHED, gpt2_bytes_to_unicode, merges_from_ranks, published_files
from tokvec.bytebpe.pretokenizer import GPT2_PATTERN, GPT4_PATTERN
from tokvec.bytebpe.training import chunk_boundaries, train, train_file, train_slow

__all__ = ["GPT2_PATTERN", "GPT4_PATTERN", "PUBLISHED", "Tokenizer", "chunk_boundaries", "gpt2_bytes_to_unicode",
           "merges_from_ranks", "published", "published_files", "train", "train_file", "train_slow"]
