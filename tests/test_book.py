"""The strict book build: Sphinx warnings are errors, nitpicky mode on (as `make book` runs it)."""

import html
import os
import re
from pathlib import Path

import nbformat
import pytest
import yaml
from conftest import ROOT, chapter_docs, toc_pages


@pytest.mark.book
def test_book_builds_strictly_with_every_page(built_site):
    for page in toc_pages():
        assert (built_site / f"{page}.html").exists(), page
    assert (built_site / "index.html").exists()
    chapter = (built_site / "chapters/01_tokenization.html").read_text(encoding="utf-8")
    assert "Sennrich" in chapter  # citations resolved against references.bib
    assert "exercise" in chapter and "solution" in chapter


@pytest.mark.book
def test_a_renamed_chapters_old_address_sends_the_reader_to_its_new_page(built_site):
    """Links and bookmarks from before the rename keep working (tokvec.course.renamed)."""
    from tokvec.course.renamed import RENAMED

    for old, new in RENAMED.items():
        assert (built_site / "chapters" / f"{new}.html").exists(), new
        page = (built_site / "chapters" / f"{old}.html").read_text(encoding="utf-8")
        assert f'http-equiv="refresh" content="0; url={new}.html"' in page, old
        assert f'<a href="{new}.html">' in page and '<html lang="en">' in page


@pytest.mark.book
def test_math_renderer_is_bundled_not_fetched(built_site):
    page = (built_site / "chapters/05_positional_embedding.html").read_text(encoding="utf-8")
    assert "cdn.jsdelivr.net" not in page and "mathjax@3" not in page
    assert '_static/mathjax/tex-chtml.js' in page
    assert (built_site / "_static/mathjax/tex-chtml.js").stat().st_size > 100_000



def _repository() -> tuple[str, str]:
    """(owner/name, branch) from _config.yml: the links are built from it."""
    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    repository = config["repository"]
    slug = repository["url"].rstrip("/").removeprefix("https://github.com/")
    return slug, repository.get("branch", "main")


def student_links(page: str, docname: str) -> tuple[bool, bool]:
    """Whether a chapter page links its student notebook: (download, Colab)."""
    stem = docname.rsplit("/", 1)[-1]
    slug, branch = _repository()
    colab = ("https://colab.research.google.com/github/"
             f"{slug}/blob/{branch}/student/{stem}.ipynb")
    download = f'href="../student/{stem}.ipynb" download="{stem}.ipynb"'
    return download in page, f'href="{colab}"' in page


@pytest.mark.book
def test_every_chapter_page_links_its_student_notebook(built_site):
    """Under each chapter's title, 'Student notebook: download · open in Colab'; the
    download is a copy of student/<stem>.ipynb in the site, also in the header menu."""
    student = Path(os.environ.get("COURSE_STUDENT_DIR") or ROOT / "student")
    chapters = chapter_docs()
    assert len(chapters) >= 10
    for docname in chapters:
        stem = docname.rsplit("/", 1)[-1]
        page = (built_site / f"{docname}.html").read_text(encoding="utf-8")
        assert student_links(page, docname) == (True, True), docname
        first_h2 = page.index("<h2", page.index("<article"))   # under the title
        top = page[page.rfind("</h1>", 0, first_h2) : first_h2]
        assert 'class="course-student-notebook"' in top, docname
        assert "btn-download-student-notebook-button" in page, docname
        copy = built_site / "student" / f"{stem}.ipynb"
        assert copy.read_bytes() == (student / f"{stem}.ipynb").read_bytes(), docname
        nbformat.validate(nbformat.read(copy, as_version=4))
    # the instructor site still offers the chapter itself, with its solutions
    assert (built_site / "_sources" / f"{chapters[0]}.ipynb").exists()


@pytest.mark.book
def test_issue_button_opens_the_erratum_form(built_site):
    assert (ROOT / ".github/ISSUE_TEMPLATE/erratum.yml").exists()
    slug, _ = _repository()
    form = f"https://github.com/{slug}/issues/new?template=erratum.yml&where="
    for docname in ("chapters/05_positional_embedding", "notation"):
        page = (built_site / f"{docname}.html").read_text(encoding="utf-8")
        hrefs = [html.unescape(h) for h in re.findall(r'href="([^"]*)"', page)]
        assert form + docname.replace("/", "%2F") in hrefs, docname
        assert "Issue%20on%20page" not in page        # the theme's blank issue is gone
