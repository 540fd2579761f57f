"""The strict book build: Sphinx warnings are errors, nitpicky mode on (as `make book` runs it)."""

import pytest
from conftest import toc_pages


@pytest.mark.book
def test_book_builds_strictly_with_every_page(built_site):
    for page in toc_pages():
        assert (built_site / f"{page}.html").exists(), page
    assert (built_site / "index.html").exists()
    chapter = (built_site / "chapters/01_tokenization.html").read_text(encoding="utf-8")
    assert "Sennrich" in chapter  # citations resolved against references.bib
    assert "exercise" in chapter and "solution" in chapter


@pytest.mark.book
def test_math_renderer_is_bundled_not_fetched(built_site):
    page = (built_site / "chapters/05_positional_embedding.html").read_text(encoding="utf-8")
    assert "cdn.jsdelivr.net" not in page and "mathjax@3" not in page
    assert '_static/mathjax/tex-chtml.js' in page
    assert (built_site / "_static/mathjax/tex-chtml.js").stat().st_size > 100_000
