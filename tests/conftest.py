"""Shared test settings.

Hypothesis runs derandomized (the same examples on every run) so that CI is reproducible; set
HYPOTHESIS_PROFILE=explore to search with fresh random examples.
"""

import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True, deadline=None, max_examples=200)
settings.register_profile("explore", deadline=None, max_examples=2000)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


# --- the built site, shared by tests/test_book.py and tests/test_site.py -------------------

import subprocess  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402
import yaml  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def toc_pages() -> list[str]:
    """Every page in _toc.yml, in reading order, as a docname (``chapters/01_tokenization``)."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    pages = [toc["root"]]

    def add(entries):
        for entry in entries:
            pages.append(entry["file"])
            add(entry.get("sections", []))      # a section follows its chapter

    for part in toc.get("parts", []):
        add(part["chapters"])
    return [p.removesuffix(".md").removesuffix(".ipynb") for p in pages]


@pytest.fixture(scope="session")
def built_site():
    """Build the book once, strictly (warnings are errors), into _build/html as `make book` does."""
    jb = Path(sys.executable).with_name("jupyter-book")
    assert jb.exists(), f"jupyter-book is not installed next to {sys.executable}"
    result = subprocess.run([str(jb), "build", str(ROOT), "--all", "--builder", "html", "-W", "-n", "--keep-going"],
                            capture_output=True, text=True, cwd=ROOT)
    log = result.stdout + result.stderr
    assert result.returncode == 0, log[-6000:]
    return ROOT / "_build" / "html"
