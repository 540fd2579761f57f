"""The strict book build: Sphinx warnings are errors, nitpicky mode on (as `make book` runs it)."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.book
def test_book_builds_strictly(tmp_path):
    jb = Path(sys.executable).with_name("jupyter-book")
    assert jb.exists(), f"jupyter-book is not installed next to {sys.executable}"
    result = subprocess.run(
        [str(jb), "build", str(ROOT), "--path-output", str(tmp_path), "--builder", "html",
         "-W", "-n", "--keep-going"],
        capture_output=True, text=True, cwd=ROOT,
    )
    log = result.stdout + result.stderr
    assert result.returncode == 0, log[-6000:]
    html = tmp_path / "_build" / "html"
    for page in ("index.html", "intro.html", "notation.html", "references.html",
                 "chapters/01_tokenization.html", "chapters/02_vocabulary.html",
                 "chapters/03_embedding_matrix.html", "chapters/04_token_embedding.html",
                 "chapters/05_positional_embedding.html", "chapters/06_why_sinusoids.html",
                 "chapters/07_common_mistakes.html"):
        assert (html / page).exists(), page
    chapter = (html / "chapters/01_tokenization.html").read_text(encoding="utf-8")
    assert "Sennrich" in chapter  # citations resolved against references.bib
    assert "exercise" in chapter and "solution" in chapter
    shutil.rmtree(tmp_path / "_build" / ".doctrees", ignore_errors=True)
