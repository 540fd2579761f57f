"""Notebooks renamed when the book was split into a core path and the depth beside it.

The core chapters keep their numbered names (``05_positional_embedding`` is chapter 5); the
pages after them are named by topic, since their place in the book's numbering may change.
``RENAMED`` maps each old name to the new one, so that a class in the middle of a term keeps
working: :mod:`tokvec.course.grading` grades a submission saved under the old name as the new
chapter, and the site keeps a page at each old address that sends the reader on (``_ext``).
"""

from __future__ import annotations

__all__ = ["RENAMED", "current_name"]

#: old notebook name -> new notebook name (both without ``.ipynb``)
RENAMED: dict[str, str] = {
    "01b_byte_level_bpe": "byte_level_bpe",
    "10_vectorization": "vectorization",
    "10b_making_it_fast": "making_it_fast",
    "11_positions_in_attention": "positions_in_attention",
    "12_position_experiment": "position_experiment",
    "13_vocab_parallel": "vocab_parallel",
}


def current_name(stem: str) -> str:
    """The notebook's name now: ``current_name("10_vectorization")`` -> ``"vectorization"``."""
    return RENAMED.get(stem, stem)
