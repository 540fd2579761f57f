"""Showing the package's own source code inside the chapters.

Used by every chapter; introduced in chapter 1, "Tokenization".
"""

from __future__ import annotations

import inspect

__all__ = ["Source", "show_source"]


class Source:
    """Source code that renders as a highlighted Python block in Jupyter and in the book."""

    def __init__(self, code: str):
        self.code = code

    def _repr_markdown_(self) -> str:
        return f"```python\n{self.code}```"

    def __repr__(self) -> str:
        return self.code


def show_source(*objs) -> Source:
    """Return the real source of one or more functions, classes or methods for display.

    Chapters call this instead of retyping code, so the page always shows the code that runs
    (and nbval fails if the stored page and the package drift apart). Several objects are shown
    one after the other, separated by a blank line.
    """
    if not objs:
        raise TypeError("show_source needs at least one function, class or method")
    return Source("\n\n".join(inspect.getsource(obj) for obj in objs))
