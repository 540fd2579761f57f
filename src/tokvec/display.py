"""Helpers the chapters use to show things: the package's own source code, and versions.

Used by every chapter; introduced in chapter 1, "Tokenization".
"""

from __future__ import annotations

import inspect
import platform
import sys
from importlib import metadata

__all__ = ["Source", "show_source", "versions"]


class Source:
    """Source code that renders as a highlighted Python block in Jupyter and in the book."""

    def __init__(self, code: str):
        self.code = code

    def _repr_markdown_(self) -> str:
        return f"```python\n{self.code}```"

    def __repr__(self) -> str:
        return self.code


def show_source(obj) -> Source:
    """Return the real source of a function, class or method of ``tokvec`` for display.

    Chapters call this instead of retyping code, so the page always shows the code that runs
    (and nbval fails if the stored page and the package drift apart).
    """
    return Source(inspect.getsource(obj))


def versions(packages=("numpy", "torch", "tokenizers", "matplotlib", "tokvec")) -> dict[str, str]:
    """Python, platform and the versions of the given packages ("not installed" if missing)."""
    found = {"python": sys.version.split()[0], "platform": platform.platform(terse=True)}
    for name in packages:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = "not installed"
    return found
