"""`make pdf`: the book as one PDF (tools/pdf.py), printed from the site by Chromium.

The PDF is made once, from the session's built site (no second build), into a temporary
folder, and read back with pypdf: every page of the toc is there, in order, with a
bookmark and its title; the formulas were typeset (no TeX source left in the text); the
figures are embedded; the solutions are printed open. About 90 s on two cores.
"""

import re
import shutil
import subprocess
import sys

import nbformat
import pytest
import yaml
from conftest import ROOT, chapter_docs, toc_pages
from pypdf import PdfReader

pytestmark = [pytest.mark.book, pytest.mark.slow]

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def _normal(text: str) -> str:
    """Text as pypdf extracts it and as a notebook writes it, compared loosely."""
    text = text.replace("\u2019", "'").replace("\u2018", "'").replace("\u201c", '"')
    return re.sub(r"\s+", " ", text.replace("\u201d", '"')).strip()


def _sections() -> set[str]:
    """The toc's sections (pages nested under a chapter, like 01b under 01)."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    return {
        s["file"]
        for part in toc["parts"]
        for c in part["chapters"]
        for s in c.get("sections", [])
    }


def _first_heading(docname: str) -> str:
    path = ROOT / f"{docname}.ipynb"
    if path.exists():
        sources = [
            c.source
            for c in nbformat.read(path, as_version=4).cells
            if c.cell_type == "markdown"
        ]
    else:
        sources = [(ROOT / f"{docname}.md").read_text(encoding="utf-8")]
    return next(
        line[2:].strip()
        for s in sources
        for line in s.splitlines()
        if line.startswith("# ")
    )


@pytest.fixture(scope="module")
def book_pdf(built_site, tmp_path_factory):
    if CHROMIUM is None:
        pytest.skip(
            "no Chromium found (apt-get install chromium): the PDF is not printed"
        )
    out = tmp_path_factory.mktemp("pdf") / "tokens-to-vectors.pdf"
    result = subprocess.run(
        [
            sys.executable,
            str(ROOT / "tools" / "pdf.py"),
            "--site",
            str(built_site),
            "--toc",
            str(ROOT / "_toc.yml"),
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert result.returncode == 0, (result.stdout + result.stderr)[-6000:]
    reader = PdfReader(str(out))
    reader.texts = [page.extract_text() for page in reader.pages]  # read once: 20 s
    return reader


def _bookmarks(reader: PdfReader) -> list[tuple[str, int, int]]:
    """(title, first page, depth) of every bookmark, in outline order."""
    found = []

    def walk(items, depth):
        for item in items:
            if isinstance(item, list):
                walk(item, depth + 1)
            else:
                found.append(
                    (item.title, reader.get_destination_page_number(item), depth)
                )

    walk(reader.outline, 0)
    return found


def _images(resources) -> int:
    """The raster images of a page (inside forms too), counted without decoding."""
    xobjects = resources.get("/XObject") if resources else None
    count = 0
    for ref in (xobjects.get_object() if xobjects else {}).values():
        xobject = ref.get_object()
        if xobject.get("/Subtype") == "/Image":
            count += 1
        elif xobject.get("/Subtype") == "/Form":
            count += _images(xobject.get("/Resources"))
    return count


def _pages_of(reader: PdfReader, docname: str) -> str:
    """The extracted text of one toc page's pages."""
    marks = _bookmarks(reader)
    i = toc_pages().index(docname)
    first = marks[i][1]
    last = marks[i + 1][1] if i + 1 < len(marks) else len(reader.pages)
    return "\n".join(reader.texts[first:last])


def test_every_toc_page_has_a_bookmark_in_reading_order(book_pdf):
    pages = toc_pages()
    marks = _bookmarks(book_pdf)
    assert len(marks) == len(pages)
    assert len(book_pdf.pages) >= len(pages)
    starts = [first for _, first, _ in marks]
    assert starts == sorted(starts) and len(set(starts)) == len(starts), starts
    for (title, _, depth), docname in zip(marks, pages):
        assert _normal(_first_heading(docname)) in _normal(title), (docname, title)
        assert depth == (docname in _sections()), (docname, depth)  # under its chapter


def test_every_chapter_title_is_in_the_text(book_pdf):
    text = _normal(" ".join(book_pdf.texts))
    for docname in toc_pages():
        assert _normal(_first_heading(docname)) in text, docname


def test_formulas_are_typeset(book_pdf):
    text = _pages_of(book_pdf, "chapters/05_positional_embedding")
    for tex in (
        "$$",
        "\\(",
        "\\[",
        "\\mathbf",
        "\\mathbb",
        "\\ell",
        "\\max",
        "\\omega",
    ):
        assert tex not in text, f"TeX source {tex!r} printed in chapter 5"
    assert "ℓmax" in text  # \ell_{\max}, typeset by MathJax


def test_figures_are_embedded_and_solutions_printed_open(book_pdf, built_site):
    figures = sum(
        len(
            re.findall(
                r'<img [^>]*src="\.\./_images/[^"]+\.png"',
                (built_site / f"{d}.html").read_text(encoding="utf-8"),
            )
        )
        for d in chapter_docs()
    )
    images = sum(_images(page.get("/Resources")) for page in book_pdf.pages)
    assert figures >= 10 and images >= figures, (images, figures)
    chapter = _pages_of(book_pdf, "chapters/05_positional_embedding")
    assert "Solution to Exercise 5.1" in _normal(chapter)
    assert "def embed_buggy(x, W_e, W_p):" in chapter  # the solution's code, unfolded
