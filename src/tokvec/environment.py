"""Where the code runs: Python, platform, package versions and the CPU model.

Every chapter prints :func:`versions` in its first cell, and every benchmark records it next to
its numbers (:mod:`tokvec.bench.common`), so an output is never separated from where it was made.
Standard library only.
"""

from __future__ import annotations

import platform
import sys
from importlib import metadata

__all__ = ["cpu_name", "versions"]


def versions(packages=("numpy", "torch", "tokenizers", "matplotlib", "tokvec")) -> dict[str, str]:
    """Python, platform and the versions of the given packages ("not installed" if missing)."""
    found = {"python": sys.version.split()[0], "platform": platform.platform(terse=True)}
    for name in packages:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = "not installed"
    return found


def cpu_name() -> str:
    """The CPU model as the operating system names it (``platform.processor()`` is often empty)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()
