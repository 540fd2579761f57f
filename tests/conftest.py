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



# --- the student site and tools/: tests/test_student_site.py, tests/test_pdf.py -------

import importlib.util  # noqa: E402
import os  # noqa: E402


def load_tool(name: str):
    """A script of tools/ as a module: ``load_tool("student_site")``."""
    path = ROOT / "tools" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"tools_{name}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def chapter_docs() -> list[str]:
    """The toc's notebooks, the chapters: ``chapters/05_positional_embedding``, ..."""
    return [page for page in toc_pages() if (ROOT / f"{page}.ipynb").exists()]


@pytest.fixture(scope="session")
def student_site():
    """Build the student site once, strictly, as `make book STUDENT=1` does."""
    tool = load_tool("student_site")
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    result = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "student_site.py"), "--all"],
        capture_output=True, text=True, cwd=ROOT, env={**os.environ, "PATH": path})
    log = result.stdout + result.stderr
    assert result.returncode == 0, log[-6000:]
    return tool.SITE
