"""Showing the package's own source code inside the chapters.

Used by every chapter; introduced in chapter 1, "Tokenization".
"""

from __future__ import annotations

import inspect
import textwrap

__all__ = ["PAGE_WIDTH", "Source", "error_text", "fit", "show_source"]

#: Characters in one line of the page's code column (code cells and printed outputs alike).
PAGE_WIDTH = 88


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


def fit(text: str, *, width: int = PAGE_WIDTH, indent: int = 4) -> str:
    """``text`` with every line longer than ``width`` wrapped at spaces, the rest kept as it is.

    Continuation lines are indented by ``indent`` spaces, so a wrapped line reads as one item.
    Chapters print long messages through this, so that nothing scrolls sideways on the page.
    """
    lines = []
    for line in text.splitlines() or [""]:
        if len(line) <= width:
            lines.append(line)
        else:
            lines.extend(textwrap.wrap(line, width=width, subsequent_indent=" " * indent,
                                       break_long_words=False, break_on_hyphens=False))
    return "\n".join(lines)


def error_text(err: BaseException, prefix: str = "", *, width: int = PAGE_WIDTH) -> str:
    """``"IndexError: message"`` of a caught error, after ``prefix``, wrapped to the page width."""
    return fit(f"{prefix}{type(err).__name__}: {err}", width=width, indent=len(prefix) + 4)
