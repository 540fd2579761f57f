"""The whole book as one PDF, printed offline from the built site (``make pdf``).

It writes ``_build/pdf/tokens-to-vectors.pdf`` from the HTML site (``make pdf`` runs
``make book`` first), with no LaTeX: every page of ``_toc.yml``, in reading order, is
opened in Debian's Chromium (``apt-get install chromium``) through Playwright, served
from 127.0.0.1 with every other request refused, and printed with the site's print
stylesheet (no sidebars, no header buttons) on A4. Before a page is printed:

- MathJax, served with the site, has typeset every formula (the script waits for it,
  then for the web fonts; a TeX error or a formula left untypeset stops it with the
  page's name);
- every image is loaded (lazy loading is switched off) and no request failed;
- folded content is expanded: the solutions of the exercises and the answers of the
  self-checks are printed open, since a fold cannot be opened on paper. The PDF of the
  instructor site is the instructor's book, solutions included; the PDF of the student
  site (``make pdf STUDENT=1``) has none to expand. A chapter's set-up cell (folded on
  the site: "Set-up: outside the course", which installs the package in Colab or
  Binder) is left out, and so are the folded code of a cell that only draws a figure (the
  figure is printed) and the folded versions cell;
- links to other pages of the site lose their target (they would point to the local
  server), links to the outside world are kept, and the "Student notebook" line is left
  out (the site's stylesheet does not print it).

The pages are joined with pypdf, one bookmark per page (its title; a section's page
under its chapter's), and numbered through: a footer gives the page's title and the
book's page number. Links within a page (its contents list, its exercises) lead to
that page's targets.

For accessibility, the PDF has the book's title (shown in a reader's title bar: the
viewer preference DisplayDocTitle), author and language (``title``, ``author`` and
``language`` of the ``_config.yml`` beside the toc; English if it has none), the
bookmarks, and a structure tree: Chromium prints each page tagged, from its
accessibility tree (headings, paragraphs, lists, tables with their header cells, links,
figures with their alt text, code), and the join keeps the trees as one, a /Part per
page of the site under one /Document. It lacks what Chromium's tagging does not give,
so it is not PDF/UA: the formulas are not tagged (MathJax draws their glyphs with CSS,
which Chromium prints outside the marked content, and the MathML that MathJax hides for
screen readers is not printed), so a screen reader that follows the tags skips them;
and the footers are not marked as artifacts.

Usage (these are the defaults; ``make pdf STUDENT=1`` passes the student site's)::

    python tools/pdf.py --site _build/html --toc _toc.yml \\
        --out _build/pdf/tokens-to-vectors.pdf
"""

import argparse
import functools
import html
import http.server
import os
import re
import shutil
import sys
import tempfile
import threading
from contextlib import contextmanager
from pathlib import Path

import yaml
from pypdf import PdfReader, PdfWriter
from pypdf.generic import (
    ArrayObject,
    BooleanObject,
    DictionaryObject,
    NameObject,
    NumberObject,
    TextStringObject,
)

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT_MS = 120_000  # per wait of a page: loading, images, MathJax
# A4; the page is laid out 1.4 times wider than the paper (scale 0.72), about the width
# of the site's text column, so that an 88-character code line fits on one line
PAPER = {
    "format": "A4",
    "scale": 0.72,
    "margin": {"top": "16mm", "bottom": "18mm", "left": "15mm", "right": "15mm"},
}
FOOTER = (
    '<div style="font: 8px sans-serif; color: #555; width: 100%; padding: 0 15mm; '
    'box-sizing: border-box; display: flex; justify-content: space-between">'
    "{left}</div>"
)


def book_info(toc_path: Path) -> dict:
    """The book's title, author and language, from the ``_config.yml`` beside its toc."""
    config = yaml.safe_load(
        toc_path.with_name("_config.yml").read_text(encoding="utf-8")
    )
    return {
        "title": str(config["title"]),
        "author": str(config.get("author") or ""),
        "language": str(config.get("language") or "en"),
    }


def toc_pages(toc_path: Path) -> list[tuple[str, int]]:
    """Every page of a ``_toc.yml`` in reading order: (docname, depth); a section: 1."""
    toc = yaml.safe_load(toc_path.read_text(encoding="utf-8"))
    pages = [(str(toc["root"]), 0)]

    def add(entries, depth):
        for entry in entries:
            pages.append((str(entry["file"]), depth))
            add(entry.get("sections", []), depth + 1)

    for part in toc.get("parts", []):
        add(part["chapters"], 0)
    add(toc.get("chapters", []), 0)
    return [
        (name.removesuffix(".md").removesuffix(".ipynb"), depth)
        for name, depth in pages
    ]


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@contextmanager
def serve(site: Path):
    """The built site on a free port of 127.0.0.1, for as long as the block runs."""
    handler = functools.partial(_Quiet, directory=str(site))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    finally:
        httpd.shutdown()


PREPARE = """() => {
  document.querySelectorAll('img').forEach(img => { img.loading = 'eager'; });
  // folded solutions (sphinx-togglebutton) and self-check answers (<details>): open
  document.querySelectorAll('.toggle-hidden')
    .forEach(e => e.classList.remove('toggle-hidden'));
  document.querySelectorAll('button.toggle-button').forEach(b => b.remove());
  document.querySelectorAll('details').forEach(d => { d.open = true; });
  // links to the other pages of the local site would point to the local server
  for (const a of document.querySelectorAll('a[href]')) {
    const url = new URL(a.href, location.href);
    if (url.origin === location.origin && url.pathname !== location.pathname) {
      a.removeAttribute('href');
    }
  }
  const style = document.createElement('style');
  // long code lines wrap on paper instead of being cut off at the margin
  style.textContent = `@media print {
    pre { white-space: pre-wrap !important; overflow-wrap: anywhere; }
    .tag_hide-input details.above-input, .tag_hide-cell { display: none !important; }
    h1, h2, h3, .admonition-title { break-after: avoid; }
    div.cell_input, figure { break-inside: avoid; }
  }`;
  document.head.appendChild(style);
  const h1 = document.querySelector('article h1') || document.querySelector('h1');
  return h1 ? h1.innerText.replace(/#\\s*$/, '').trim() : document.title;
}"""

IMAGES_LOADED = """() => [...document.querySelectorAll('article img')]
  .every(img => img.complete && img.naturalWidth > 0)"""

MATH = """async () => {
  const n = document.querySelectorAll('.math').length;
  if (n === 0) return [0, 0, 0];
  await MathJax.startup.promise;
  await document.fonts.ready;
  return [n, document.querySelectorAll('mjx-container').length,
          document.querySelectorAll('mjx-merror').length];
}"""


def print_page(browser, base: str, docname: str, target: Path, book: str) -> str:
    """Print one page of the site to ``target``; return its title."""
    context = browser.new_context(viewport={"width": 1100, "height": 1400})
    outside, failed = [], []
    context.route(
        re.compile(r"^(?!" + re.escape(base) + ")"),
        lambda route: (outside.append(route.request.url), route.abort()),
    )
    page = context.new_page()
    # a page with many figures and formulas takes its time on a loaded machine (make test runs two
    # sessions at once on 2 cores: one page passed 30 s there); nothing here waits on the network
    page.set_default_timeout(TIMEOUT_MS)
    page.on("requestfailed", lambda r: failed.append(r.url))
    page.on(
        "response", lambda r: r.status >= 400 and failed.append(f"{r.url} ({r.status})")
    )
    try:
        response = page.goto(f"{base}{docname}.html", wait_until="load")
        if response is None or response.status != 200:
            raise SystemExit(
                f"{docname}.html: not in the site (build it first: make book)"
            )
        page.wait_for_load_state("networkidle")
        title = page.evaluate(PREPARE)
        page.wait_for_function(IMAGES_LOADED, timeout=TIMEOUT_MS)
        if page.locator(".math").count():
            page.wait_for_function(
                "() => window.MathJax && MathJax.startup && MathJax.startup.promise",
                timeout=TIMEOUT_MS,
            )
        n_math, n_typeset, n_errors = page.evaluate(MATH)
        if n_typeset < n_math or n_errors:
            raise SystemExit(
                f"{docname}: MathJax typeset {n_typeset} of {n_math} formulas, "
                f"{n_errors} TeX errors"
            )
        page.wait_for_load_state("networkidle")
        if outside or failed:
            raise SystemExit(
                f"{docname}: requests failed {failed}, or left the machine {outside}"
            )
        page.emulate_media(media="print")
        left = "".join(f"<span>{html.escape(s)}</span>" for s in (book, title, ""))
        page.pdf(
            path=str(target),
            print_background=True,
            display_header_footer=True,
            header_template="<span></span>",
            footer_template=FOOTER.format(left=left),
            tagged=True,  # a structure tree from the page's accessibility tree
            **PAPER,
        )
        return title
    finally:
        context.close()


def page_numbers(browser, count: int, target: Path) -> None:
    """``count`` blank pages of the same paper, their footers numbered 1..count."""
    page = browser.new_page()
    try:
        blank = '<div style="break-after: page; height: 1px"></div>' * (count - 1)
        page.set_content(f"<html><body>{blank}<div></div></body></html>")
        number = FOOTER.format(left='<span></span><span class="pageNumber"></span>')
        page.pdf(
            path=str(target),
            display_header_footer=True,
            header_template="<span></span>",
            footer_template=number,
            **PAPER,
        )
    finally:
        page.close()


def _number_tree(node) -> list:
    """The (key, value) pairs of a number tree (``/Nums``, or ``/Kids`` of them)."""
    node = node.get_object()
    nums = node.get("/Nums", [])
    pairs = [(int(nums[i]), nums[i + 1]) for i in range(0, len(nums), 2)]
    for kid in node.get("/Kids", []):
        pairs += _number_tree(kid)
    return pairs


def _elements(element):
    """A structure element and every element under it (not its marked content)."""
    todo = [element]
    while todo:
        element = todo.pop().get_object()
        if not isinstance(element, DictionaryObject) or element.get("/Type") in (
            "/MCR",
            "/OBJR",
        ):
            continue
        yield element
        kids = element.get("/K", ArrayObject())
        todo.extend(reversed(kids) if isinstance(kids, ArrayObject) else [kids])


def _own_destinations(reader: PdfReader, name: str) -> None:
    """Give the part's named destinations (the targets of its links within the page)
    the part's prefix: every page has an "exercises" or a "main-content", and the joined
    PDF keeps only the first of a name."""

    def renamed(dest: str) -> NameObject:
        return NameObject(f"/{name}-{dest[1:]}")

    catalog = reader.root_object
    if "/Dests" in catalog:
        catalog[NameObject("/Dests")] = DictionaryObject(
            {renamed(dest): value for dest, value in catalog["/Dests"].items()}
        )
    for page in reader.pages:
        for annot in page.get("/Annots", []):
            annot = annot.get_object()
            if isinstance(annot.get("/Dest"), NameObject):
                annot[NameObject("/Dest")] = renamed(annot["/Dest"])


class Structure:
    """The joined PDF's structure tree: every part's, under one /Document.

    pypdf's ``append`` copies a part's pages but not its catalog's structure tree, and
    drops the ``/StructParents`` of its pages and forms (the key of their marked content
    in the tree). ``add`` copies the part's tree (its page, form and link references
    resolve to the copies), puts the part's ``/Document`` element under the book's as a
    ``/Part``, and gives the pages, forms and links their keys back, shifted past the keys
    taken so far; element IDs (table headers refer to them) get the part's prefix, since
    every part numbers its own from the same start.
    """

    KNOWN = {"/Type", "/K", "/ParentTree", "/ParentTreeNextKey", "/IDTree"}

    def __init__(self, writer: PdfWriter, lang: str):
        self.writer = writer
        self.root = DictionaryObject({NameObject("/Type"): NameObject("/StructTreeRoot")})
        self.root_ref = writer._add_object(self.root)
        self.document = DictionaryObject(
            {
                NameObject("/Type"): NameObject("/StructElem"),
                NameObject("/S"): NameObject("/Document"),
                NameObject("/Lang"): TextStringObject(lang),
                NameObject("/P"): self.root_ref,
                NameObject("/K"): ArrayObject(),
            }
        )
        self.document_ref = writer._add_object(self.document)
        self.root[NameObject("/K")] = self.document_ref
        self.nums: list = []
        self.ids: list = []
        self.next_key = 0

    def add(self, reader: PdfReader, start: int, name: str) -> None:
        """Graft the tree of ``reader``, whose pages were appended from page ``start``."""
        tree = reader.root_object.get("/StructTreeRoot")
        if tree is None or set(tree.get_object()) - self.KNOWN:
            raise SystemExit(
                f"{name}: Chromium printed no structure tree, or one with parts that "
                f"tools/pdf.py does not join ({sorted(tree.get_object()) if tree else ''})"
            )
        offset = self.next_key
        forms: set[int] = set()
        for page, copy in zip(reader.pages, self.writer.pages[start:]):
            if "/StructParents" in page:
                copy[NameObject("/StructParents")] = NumberObject(
                    page["/StructParents"] + offset
                )
            self._shift_forms(page.get("/Resources"), copy.get("/Resources"), offset, forms)
            for annot in copy.get("/Annots", []):
                annot = annot.get_object()
                if "/StructParent" in annot:
                    annot[NameObject("/StructParent")] = NumberObject(
                        annot["/StructParent"] + offset
                    )
        tree = tree.get_object().clone(self.writer)
        pairs = _number_tree(tree["/ParentTree"])
        self.nums += [(key + offset, value) for key, value in pairs]
        self.next_key = offset + max(
            int(tree.get("/ParentTreeNextKey", 0)), max((k for k, _ in pairs), default=-1) + 1
        )
        prefix = f"{name}-"
        kids = tree.raw_get("/K")
        kids = kids.get_object() if isinstance(kids.get_object(), ArrayObject) else [kids]
        for kid in kids:
            element = kid.get_object()
            element[NameObject("/P")] = self.document_ref
            if element.get("/S") == "/Document":
                element[NameObject("/S")] = NameObject("/Part")
            self.document["/K"].append(kid)
            for each in _elements(kid):
                if "/ID" in each:
                    each[NameObject("/ID")] = TextStringObject(prefix + each["/ID"])
                    self.ids.append((each["/ID"], each.indirect_reference))
                attributes = each.get("/A", ArrayObject())
                for attribute in (
                    attributes if isinstance(attributes, ArrayObject) else [attributes]
                ):
                    attribute = attribute.get_object()
                    if isinstance(attribute, DictionaryObject) and "/Headers" in attribute:
                        attribute[NameObject("/Headers")] = ArrayObject(
                            TextStringObject(prefix + h) for h in attribute["/Headers"]
                        )

    def _shift_forms(self, resources, copies, offset: int, done: set[int]) -> None:
        """Give back the form XObjects (drawings that Chromium prints as forms) that
        have marked content of their own their key, shifted; pypdf dropped it too."""
        xobjects = resources.get_object().get("/XObject") if resources else None
        copied = copies.get_object().get("/XObject") if copies else None
        for name, ref in (xobjects.get_object() if xobjects else {}).items():
            form, copy = ref.get_object(), copied.get_object()[name].get_object()
            if form.get("/Subtype") != "/Form" or ref.idnum in done:
                continue
            done.add(ref.idnum)
            if "/StructParents" in form:
                copy[NameObject("/StructParents")] = NumberObject(
                    form["/StructParents"] + offset
                )
            self._shift_forms(form.get("/Resources"), copy.get("/Resources"), offset, done)

    def finish(self) -> None:
        """Write the parent tree and the ID tree; mark the document as tagged."""
        nums = ArrayObject()
        for key, value in sorted(self.nums, key=lambda pair: pair[0]):
            nums += [NumberObject(key), value]
        self.root[NameObject("/ParentTree")] = self.writer._add_object(
            DictionaryObject({NameObject("/Nums"): nums})
        )
        self.root[NameObject("/ParentTreeNextKey")] = NumberObject(self.next_key)
        if self.ids:
            names = ArrayObject()
            for key, ref in sorted(self.ids, key=lambda pair: pair[0]):
                names += [TextStringObject(key), ref]
            self.root[NameObject("/IDTree")] = self.writer._add_object(
                DictionaryObject({NameObject("/Names"): names})
            )
        catalog = self.writer.root_object
        catalog[NameObject("/StructTreeRoot")] = self.root_ref
        catalog[NameObject("/MarkInfo")] = DictionaryObject(
            {NameObject("/Marked"): BooleanObject(True)}
        )


def join(
    parts: list[tuple[Path, str, int]], numbers: Path | None, out: Path, book: dict
) -> int:
    """Concatenate the printed pages and their structure trees; one bookmark each;
    stamp the page numbers; the book's title, author and language."""
    writer = PdfWriter()
    structure = Structure(writer, book["language"])
    parents: dict[int, object] = {}
    for i, (path, title, depth) in enumerate(parts):
        start = len(writer.pages)
        reader = PdfReader(str(path))
        _own_destinations(reader, f"part{i:03d}")
        writer.append(reader)
        structure.add(reader, start, f"part{i:03d}")
        parents[depth] = writer.add_outline_item(
            title=title, page_number=start, parent=parents.get(depth - 1)
        )
    structure.finish()
    if numbers is not None:
        stamps = PdfReader(str(numbers)).pages
        for page, stamp in zip(writer.pages, stamps):
            page.merge_page(stamp)
            page.compress_content_streams()  # merging left them uncompressed
    metadata = {"/Title": book["title"]}
    if book.get("author"):
        metadata["/Author"] = book["author"]
    writer.add_metadata(metadata)
    writer.root_object[NameObject("/Lang")] = TextStringObject(book["language"])
    writer.create_viewer_preferences().display_doctitle = True
    writer.page_mode = "/UseOutlines"
    # the pages were printed one by one: fonts and images shared between them, once
    writer.compress_identical_objects(remove_duplicates=True, remove_unreferenced=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "wb") as stream:
        writer.write(stream)
    return len(writer.pages)


def chromium_path() -> str:
    found = (
        os.environ.get("CHROMIUM")
        or shutil.which("chromium")
        or shutil.which("chromium-browser")
    )
    if not found:
        raise SystemExit(
            "no Chromium: install Debian's (apt-get install chromium) or set "
            "CHROMIUM=/path/to/it"
        )
    return found


def build_pdf(site: Path, toc: Path, out: Path, log=print) -> int:
    """Print every page of ``toc`` from the built ``site`` into ``out``; its pages."""
    from playwright.sync_api import sync_playwright

    pages = toc_pages(toc)
    book = book_info(toc)
    missing = [name for name, _ in pages if not (site / f"{name}.html").is_file()]
    if missing:
        raise SystemExit(f"not in {site}: {missing} (build the site first: make book)")
    with (
        tempfile.TemporaryDirectory(prefix="tokvec-pdf-") as tmp,
        serve(site) as base,
        sync_playwright() as playwright,
    ):
        browser = playwright.chromium.launch(
            executable_path=chromium_path(), headless=True
        )
        try:
            parts = []
            for i, (docname, depth) in enumerate(pages):
                target = Path(tmp) / f"{i:03d}.pdf"
                title = print_page(browser, base, docname, target, book["title"])
                parts.append((target, title, depth))
                log(
                    f"[{i + 1}/{len(pages)}] {docname}: {title} "
                    f"({len(PdfReader(str(target)).pages)} pages)"
                )
            total = sum(len(PdfReader(str(p)).pages) for p, _, _ in parts)
            numbers = Path(tmp) / "numbers.pdf"
            page_numbers(browser, total, numbers)
        finally:
            browser.close()
        return join(parts, numbers, out, book)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--site",
        type=Path,
        default=ROOT / "_build" / "html",
        help="the built HTML site (default: _build/html)",
    )
    parser.add_argument(
        "--toc",
        type=Path,
        default=ROOT / "_toc.yml",
        help="its table of contents (default: _toc.yml)",
    )
    parser.add_argument(
        "--out", type=Path, default=ROOT / "_build" / "pdf" / "tokens-to-vectors.pdf"
    )
    args = parser.parse_args(argv)
    n = build_pdf(args.site, args.toc, args.out)
    print(f"The book is in {args.out} ({n} pages).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
