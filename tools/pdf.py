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
book's page number.

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

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT_MS = 120_000  # per wait of a page: loading, images, MathJax
BOOK = "From Tokens to Vectors"
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


def print_page(browser, base: str, docname: str, target: Path) -> str:
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
        left = "".join(f"<span>{html.escape(s)}</span>" for s in (BOOK, title, ""))
        page.pdf(
            path=str(target),
            print_background=True,
            display_header_footer=True,
            header_template="<span></span>",
            footer_template=FOOTER.format(left=left),
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


def join(parts: list[tuple[Path, str, int]], numbers: Path | None, out: Path) -> int:
    """Concatenate the printed pages; one bookmark each; stamp the page numbers."""
    writer = PdfWriter()
    parents: dict[int, object] = {}
    for path, title, depth in parts:
        start = len(writer.pages)
        writer.append(str(path))
        parents[depth] = writer.add_outline_item(
            title=title, page_number=start, parent=parents.get(depth - 1)
        )
    if numbers is not None:
        stamps = PdfReader(str(numbers)).pages
        for page, stamp in zip(writer.pages, stamps):
            page.merge_page(stamp)
            page.compress_content_streams()  # merging left them uncompressed
    writer.add_metadata(
        {"/Title": BOOK, "/Author": "The From Tokens to Vectors authors"}
    )
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
                title = print_page(browser, base, docname, target)
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
        return join(parts, numbers, out)


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
