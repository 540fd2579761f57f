"""`make pdf`: the book as one PDF (tools/pdf.py), printed from the site by Chromium.

The PDF is made once, from the session's built site (no second build), into a temporary
folder, and read back with pypdf: every page of the toc is there, in order, with a
bookmark and its title; the formulas were typeset (no TeX source left in the text); the
figures are embedded; the solutions are printed open. For accessibility: the book's
title, author and language; one structure tree, whole (every marked content and link of
every page reachable from it, and back); links within a page land in that page; and
what the accessibility statement says the PDF lacks: the formulas are not tagged. About
two minutes on two cores.
"""

import html
import re
import shutil
import subprocess
import sys

import nbformat
import pytest
import yaml
from conftest import ROOT, chapter_docs, toc_pages
from pypdf import PdfReader
from pypdf.generic import ArrayObject, DictionaryObject

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


def test_title_author_and_language(book_pdf):
    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    catalog = book_pdf.trailer["/Root"]
    assert book_pdf.metadata.title == config["title"]
    assert book_pdf.metadata.author == config["author"]
    assert catalog["/Lang"] == config.get("language", "en")
    # a reader shows the title, not the file name, in its title bar (PDF/UA asks for it)
    assert catalog["/ViewerPreferences"]["/DisplayDocTitle"].value is True
    assert catalog["/PageMode"] == "/UseOutlines"  # opens with the bookmarks shown


def _forms(resources, found: dict) -> dict:
    """The form XObjects under some resources (inside forms too), by object number."""
    xobjects = resources.get_object().get("/XObject") if resources else None
    for ref in (xobjects.get_object() if xobjects else {}).values():
        form = ref.get_object()
        if form.get("/Subtype") == "/Form" and ref.idnum not in found:
            found[ref.idnum] = form
            _forms(form.get("/Resources"), found)
    return found


def _structure(reader: PdfReader) -> tuple[list[str], dict, list[str]]:
    """What is wrong with the structure tree (nothing, for a whole one), its elements by
    type, and the /Alt of its figures. Whole: every element's /P is its parent and it is in the tree once; every
    marked content (MCID) of every page, and of every form drawn on it, is in the tree
    once, and the parent tree maps it back to its element; so does every link's
    /StructParent; the ID tree holds every element ID, and table cells' headers exist."""
    catalog = reader.trailer["/Root"]
    if getattr(catalog.get("/MarkInfo", {}).get("/Marked"), "value", None) is not True:
        return ["not marked as tagged"], {}, []
    root = catalog["/StructTreeRoot"].get_object()
    nums = root["/ParentTree"]["/Nums"]
    parent_tree = {int(nums[i]): nums[i + 1] for i in range(0, len(nums), 2)}
    problems = [] if 2 * len(parent_tree) == len(nums) else ["parent tree: a key twice"]
    if max(parent_tree) >= root["/ParentTreeNextKey"]:
        problems.append("parent tree: /ParentTreeNextKey too small")
    marked: dict[tuple[int, int], list[int]] = {}  # (page or form, MCID): its elements
    links: dict[int, list[int]] = {}  # annotation: its elements
    ids: dict[str, list[int]] = {}
    headers, kinds, alts, seen = [], {}, [], set()
    todo = [(root.raw_get("/K"), root.indirect_reference.idnum, None)]
    while todo:
        ref, parent, pg = todo.pop()
        node = ref.get_object()
        if isinstance(node, int):
            marked.setdefault((pg, int(node)), []).append(parent)
        elif node.get("/Type") == "/MCR":
            where = node.raw_get("/Stm" if "/Stm" in node else "/Pg").idnum if (
                "/Stm" in node or "/Pg" in node
            ) else pg
            marked.setdefault((where, int(node["/MCID"])), []).append(parent)
        elif node.get("/Type") == "/OBJR":
            links.setdefault(node.raw_get("/Obj").idnum, []).append(parent)
        elif ref.idnum in seen:
            problems.append(f"element {ref.idnum}: in the tree twice")
        else:
            seen.add(ref.idnum)
            kinds[node["/S"]] = kinds.get(node["/S"], 0) + 1
            if node["/S"] == "/Figure" and "/Alt" in node:
                alts.append(str(node["/Alt"]))
            if node.raw_get("/P").idnum != parent:
                problems.append(f"element {ref.idnum}: /P is not its parent")
            if "/ID" in node:
                ids.setdefault(str(node["/ID"]), []).append(ref.idnum)
            attributes = node.get("/A", ArrayObject())
            for a in attributes if isinstance(attributes, ArrayObject) else [attributes]:
                a = a.get_object()
                if isinstance(a, DictionaryObject) and "/Headers" in a:
                    headers += [str(h) for h in a["/Headers"]]
            kids = node.raw_get("/K") if "/K" in node else ArrayObject()
            kids = kids.get_object() if isinstance(kids.get_object(), ArrayObject) else [kids]
            pg = node.raw_get("/Pg").idnum if "/Pg" in node else pg
            todo += [(kid, ref.idnum, pg) for kid in kids]
    problems += [f"marked content {k}: {v}" for k, v in marked.items() if len(v) != 1]
    forms: dict = {}
    for page in reader.pages:
        _forms(page.get("/Resources"), forms)
    holders = [(page.indirect_reference.idnum, page, page.get_contents()) for page in reader.pages]
    holders += [(idnum, form, form) for idnum, form in forms.items()]
    held = set()
    for idnum, holder, content in holders:
        data = content.get_data() if content is not None else b""
        mcids = sorted(int(m) for m in re.findall(rb"/MCID\s+(\d+)\s*>>\s*BDC", data))
        held |= {(idnum, m) for m in mcids}
        back = parent_tree.get(holder.get("/StructParents", -1), ArrayObject()).get_object()
        if [back[m].idnum if m < len(back) else None for m in mcids] != [
            marked.get((idnum, m), [None])[0] for m in mcids
        ]:
            problems.append(f"object {idnum}: its marked content and the tree differ")
    problems += [f"marked content {k}: in the tree, not drawn" for k in marked if k not in held]
    for i, page in enumerate(reader.pages):
        for link in page.get("/Annots", []):
            key = link.get_object().get("/StructParent")
            if key is not None and [parent_tree[key].idnum] != links.get(link.idnum):
                problems.append(f"page {i}: link {link.idnum} and its element differ")
    on_pages = {link.idnum for page in reader.pages for link in page.get("/Annots", [])}
    problems += [f"link {k}: tagged, not on a page" for k in links if k not in on_pages]
    names, todo = [], [root["/IDTree"]] if "/IDTree" in root else []
    while todo:  # a name tree: /Names, or /Kids that have them
        node = todo.pop(0).get_object()
        names += node.get("/Names", [])
        todo += node.get("/Kids", [])
    id_tree = {str(names[i]): [names[i + 1].idnum] for i in range(0, len(names), 2)}
    if id_tree != ids or list(id_tree) != sorted(id_tree):
        problems.append("the ID tree and the element IDs differ, or it is not sorted")
    problems += [f"table header {h}: no element has its ID" for h in headers if h not in ids]
    return problems, kinds, alts


@pytest.fixture(scope="module")
def structure(book_pdf):
    return _structure(book_pdf)


def test_one_whole_structure_tree(book_pdf, structure):
    problems, kinds, _ = structure
    assert problems == [], problems[:20]
    # under one /Document, a /Part per toc page, each with the page's title as /H1
    document = book_pdf.trailer["/Root"]["/StructTreeRoot"]["/K"]
    assert document["/S"] == "/Document"
    assert [kid.get_object()["/S"] for kid in document["/K"]] == ["/Part"] * len(toc_pages())
    assert kinds["/H1"] == len(toc_pages()) and kinds["/H2"] > len(toc_pages())
    assert kinds["/Table"] >= 1 and kinds["/TH"] >= 1 and kinds["/L"] >= 1
    assert kinds["/Link"] >= 1 and kinds["/Code"] >= 1
    assert all("/StructParents" in page for page in book_pdf.pages)


def test_figures_are_tagged_with_their_alt_text(structure, built_site):
    """Every chapter image is a /Figure whose /Alt is the image's alt text."""
    alts = [
        html.unescape(alt)
        for d in chapter_docs()
        for alt in re.findall(
            r'<img [^>]*alt="([^"]+)"[^>]*src="\.\./_images/[^"]+\.png"',
            (built_site / f"{d}.html").read_text(encoding="utf-8"),
        )
    ]
    assert len(alts) >= 10
    missing = [alt for alt in alts if alt not in structure[2]]
    assert missing == [], missing[:5]


def test_links_within_a_page_land_in_that_page(book_pdf):
    """Every page has its "exercises" or "main-content": a link to one leads to the
    one of its own page, not to the first page that has the name."""
    marks = _bookmarks(book_pdf)
    starts = [first for _, first, _ in marks] + [len(book_pdf.pages)]
    dests = book_pdf.named_destinations
    landed = wrong = 0
    for part in range(len(marks)):
        for i in range(starts[part], starts[part + 1]):
            for link in book_pdf.pages[i].get("/Annots", []):
                name = link.get_object().get("/Dest")
                if name is None:
                    continue
                target = book_pdf.get_destination_page_number(dests[str(name)])
                landed += 1
                wrong += not starts[part] <= target < starts[part + 1]
    assert landed >= len(marks) and wrong == 0, (landed, wrong)


def test_formulas_are_not_tagged(book_pdf):
    """What the accessibility statement says the PDF lacks: MathJax draws a formula's
    glyphs with CSS, and Chromium prints them outside the marked content, so a screen
    reader that follows the tags skips the formulas. If this fails, they may be tagged
    now: say so in the statement."""
    marks = _bookmarks(book_pdf)
    i = toc_pages().index("chapters/05_positional_embedding")
    tagged, untagged, stack = [], [], []

    def operator(op, args, cm, tm):
        if op in (b"BDC", b"BMC"):
            stack.append(op)
        elif op == b"EMC" and stack:
            stack.pop()

    def text(t, cm, tm, font, size):
        (tagged if stack else untagged).append(t)

    for page in book_pdf.pages[marks[i][1] : marks[i + 1][1]]:
        page.extract_text(visitor_operand_before=operator, visitor_text=text)
    assert "Phuong and Hutter" in "".join(tagged)  # the prose is tagged
    assert "ℓmax" in "".join(untagged) and "ℓmax" not in "".join(tagged)
