"""The published website, opened in a real browser with no network: every page works offline.

Playwright drives Debian's Chromium (``/usr/bin/chromium``; ``.ci/run`` installs it with apt-get)
against the built site served from 127.0.0.1. For every page of the table of contents: HTTP 200,
no console error, no failed request and no request that leaves the machine, math typeset
wherever the page has math, every image loaded with alt text, previous/next links that work. A
screenshot of each page is saved under ``_build/screenshots/`` as a test artifact.

Where no Chromium is installed (a learner's laptop) the tests are skipped with that reason.
"""

import functools
import http.server
import os
import re
import shutil
import threading
from urllib.parse import urljoin, urlparse

import pytest
from conftest import ROOT, toc_pages

pytestmark = pytest.mark.book

CHROMIUM = os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="no Chromium found (install Debian's chromium, or set CHROMIUM=/path/to/it): "
                             "browser tests not run")
SHOTS = ROOT / "_build" / "screenshots"
PAGES = toc_pages()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # keep the test output readable
        pass


@pytest.fixture(scope="module")
def server(built_site):
    """Serve _build/html on a free localhost port for the duration of the module."""
    handler = functools.partial(_QuietHandler, directory=str(built_site))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    httpd.shutdown()


@pytest.fixture(scope="module")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True)
        yield b
        b.close()


class PageVisit:
    """Open one URL and record everything that went wrong on the way."""

    def __init__(self, browser, base: str):
        self.base = base
        self.context = browser.new_context(viewport={"width": 1280, "height": 900})
        self.page = self.context.new_page()
        self.errors: list[str] = []
        self.outside: list[str] = []
        self.failed: list[str] = []
        self.page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("requestfailed", lambda r: self.failed.append(f"{r.url} ({r.failure})"))
        self.page.on("response", lambda r: r.status >= 400 and self.failed.append(f"{r.url} (HTTP {r.status})"))
        # Block, and record, every request that is not for the local site.
        self.context.route(re.compile(r"^(?!" + re.escape(base) + ")"), self._refuse)

    def _refuse(self, route):
        self.outside.append(route.request.url)
        route.abort()

    def open(self, path: str):
        response = self.page.goto(urljoin(self.base, path), wait_until="load")
        self.page.wait_for_load_state("networkidle")
        return response

    def close(self):
        self.context.close()


@pytest.fixture()
def visit(browser, server):
    visits = []

    def _open(path):
        v = PageVisit(browser, server)
        visits.append(v)
        return v, v.open(path)

    yield _open
    for v in visits:
        v.close()


@needs_chromium
@pytest.mark.parametrize("docname", PAGES)
def test_page_works_offline(visit, built_site, docname):
    v, response = visit(f"{docname}.html")
    assert response.status == 200
    page = v.page
    source = (built_site / f"{docname}.html").read_text(encoding="utf-8")
    if 'class="math' in source:
        page.wait_for_selector("mjx-container", state="attached", timeout=15_000)
        n_math = source.count('class="math')
        assert page.locator("mjx-container").count() >= n_math, "some math was not typeset"
        assert page.locator("mjx-merror").count() == 0, "MathJax reported a TeX error"
    images = page.eval_on_selector_all(
        "article img", "els => els.map(e => ({src: e.getAttribute('src'), alt: e.alt, w: e.naturalWidth}))")
    for img in images:
        page.locator(f"img[src='{img['src']}']").first.scroll_into_view_if_needed()
    images = page.eval_on_selector_all(
        "article img", "els => els.map(e => ({src: e.getAttribute('src'), alt: e.alt, w: e.naturalWidth}))")
    for img in images:
        assert img["w"] > 0, f"image did not load: {img['src']}"
        assert len(img["alt"].strip()) >= 10, f"image without meaningful alt text: {img['src']}"
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{docname.replace('/', '__')}.png"), full_page=False)
    assert v.outside == [], f"requests left the machine: {v.outside}"
    assert v.failed == [], f"failed requests: {v.failed}"
    assert v.errors == [], f"console errors: {v.errors}"


def _drawn_figures(docname: str) -> dict[str, str]:
    """The drawn figures (chapters/figures/*.svg) a page's Markdown shows: file name -> alt text."""
    import json

    found = [ROOT / f"{docname}{suffix}" for suffix in (".ipynb", ".md") if (ROOT / f"{docname}{suffix}").exists()]
    if not found:
        return {}
    source = found[0]
    text = source.read_text(encoding="utf-8")
    if source.suffix == ".ipynb":
        text = "\n".join("".join(c["source"]) for c in json.loads(text)["cells"] if c["cell_type"] == "markdown")
    return {m.group(2): m.group(1) for m in re.finditer(r"!\[([^\]]*)\]\((?:\S*/)?figures/([\w.-]+\.svg)\)", text)}


_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"'})


@needs_chromium
@pytest.mark.parametrize("docname", [p for p in PAGES if _drawn_figures(p)])
def test_every_drawn_figure_loads_with_its_alt_text(visit, docname):
    """Each diagram of tokvec.course.figures that a page shows is there, loaded (naturalWidth > 0,
    after scrolling it into view) and carries the alt text its Markdown gives it."""
    v, response = visit(f"{docname}.html")
    assert response.status == 200
    for name, alt in _drawn_figures(docname).items():
        img = v.page.locator(f"article img[src$='/{name}']")
        assert img.count() >= 1, f"{name} is not on {docname}"
        img.first.scroll_into_view_if_needed()
        v.page.wait_for_function("e => e.complete", arg=img.first.element_handle(), timeout=10_000)
        assert img.first.evaluate("e => e.naturalWidth") > 0, f"{name} did not load on {docname}"
        shown = (img.first.get_attribute("alt") or "").translate(_QUOTES)
        assert shown.strip() and shown == alt.translate(_QUOTES), (name, shown, alt)
    assert v.failed == [], f"failed requests: {v.failed}"


@needs_chromium
def test_previous_and_next_links_walk_the_whole_book(visit):
    """Following 'next' from the first page visits every page of the toc, in order."""
    v, _ = visit(f"{PAGES[0]}.html")
    seen = [PAGES[0]]
    for _ in range(len(PAGES) - 1):
        nxt = v.page.locator("a.right-next")
        assert nxt.count() == 1, f"no 'next' link on {seen[-1]}"
        nxt.click()
        v.page.wait_for_load_state("load")
        path = urlparse(v.page.url).path.lstrip("/").removesuffix(".html")
        seen.append(path)
        prev = v.page.locator("a.left-prev")
        assert prev.count() == 1, f"no 'previous' link on {path}"
    assert seen == PAGES
    assert v.page.locator("a.right-next").count() == 0
    v.page.locator("a.left-prev").click()
    v.page.wait_for_load_state("load")
    assert urlparse(v.page.url).path.lstrip("/").removesuffix(".html") == PAGES[-2]
    assert v.errors == [] and v.outside == [] and v.failed == []


@needs_chromium
def test_search_finds_a_term_from_a_chapter(visit):
    v, response = visit("search.html?q=sinusoidal")
    assert response.status == 200
    v.page.wait_for_selector("ul.search li", timeout=15_000)
    hits = v.page.eval_on_selector_all("ul.search li a", "els => els.map(e => e.getAttribute('href'))")
    assert any("05_positional_embedding" in h for h in hits), hits
    assert v.errors == [] and v.outside == []


@needs_chromium
def test_download_launch_and_repository_buttons_are_configured(visit):
    v, _ = visit("chapters/05_positional_embedding.html")
    hrefs = v.page.eval_on_selector_all("a", "els => els.map(e => e.href)")
    assert any(h.endswith("_sources/chapters/05_positional_embedding.ipynb") for h in hrefs), "no .ipynb download"
    assert any("colab.research.google.com" in h and h.endswith("05_positional_embedding.ipynb") for h in hrefs)
    assert any("mybinder.org" in h for h in hrefs)
    assert any("/issues/new?template=erratum.yml" in h for h in hrefs), "no erratum form"
    assert any(h.endswith("_sources/chapters/05_positional_embedding.md") for h in hrefs), "no .md download"
    md = v.context.request.get(urljoin(v.base, "_sources/chapters/05_positional_embedding.md"))
    assert md.status == 200 and "```{code-cell} ipython3" in md.text()
    # the student notebook: served with the site, and on Colab from the repository
    student = [h for h in hrefs if h.endswith("/student/05_positional_embedding.ipynb")]
    local = [h for h in student if h.startswith(v.base)]
    assert local and any(h.startswith("https://colab.research.google.com/") for h in student)
    notebook = v.context.request.get(local[0])
    assert notebook.status == 200 and notebook.json()["nbformat"] == 4
    v2, _ = visit("notation.html")
    hrefs = v2.page.eval_on_selector_all("a", "els => els.map(e => e.href)")
    assert any(h.endswith("_sources/notation.md") for h in hrefs)


# --- checks that need no browser ----------------------------------------------------------

def _table(markdown: str, heading: str) -> dict[str, str]:
    section = markdown.split(heading, 1)[1].split("\n## ", 1)[0]
    rows = [line.strip("|").split("|") for line in section.splitlines() if line.startswith("| ")]
    return {name.strip(): value.strip() for name, value in rows[1:] if not set(name.strip()) <= {"-"}}


def test_versions_page_matches_the_stored_outputs_and_the_pins():
    import ast

    import nbformat

    page = (ROOT / "versions.md").read_text(encoding="utf-8")
    table = _table(page, "## What produced the stored outputs")
    # a row "x.y (chapter 1.1 only)" is printed by the chapters it names, the others by every one
    produced = {name: value.split(" (")[0] for name, value in table.items()}
    only = {name: value.split(" (", 1)[1] for name, value in table.items() if " (" in value}
    printed = set()
    for path in sorted((ROOT / "chapters").glob("*.ipynb")):
        first = next(c for c in nbformat.read(path, as_version=4).cells
                     if c.cell_type == "code" and "versions()" in c.source)
        assert first.outputs, f"{path.name}: the versions cell has no stored output (run make outputs)"
        stored = ast.literal_eval(first.outputs[0]["data"]["text/plain"])
        expected = {name: v for name, v in produced.items() if name not in only or name in stored}
        assert stored == expected, f"{path.name} was run with {stored}, versions.md says {expected}"
        printed |= set(stored)
    assert printed == set(produced), f"versions.md lists {set(produced) - printed}, which no chapter prints"
    pins = dict(line.split("==", 1) for line in (ROOT / "requirements.txt").read_text().splitlines()
                if "==" in line and not line.startswith("#"))
    pins = {name.lower(): version for name, version in pins.items()}
    for name in only:                              # what one chapter prints is pinned like the rest
        assert pins[name.lower()] == produced[name], (name, produced[name], pins[name.lower()])
    for name, version in _table(page, "## What built and tested the site").items():
        assert pins[name.lower()] == version.split()[0], (
            f"{name}: page {version}, requirements.txt {pins[name.lower()]}")
    assert produced["torch"].split("+")[0] == pins["torch"]
    assert produced["numpy"] == pins["numpy"]


def test_publish_workflow_tests_builds_and_deploys():
    import yaml

    flow = yaml.safe_load((ROOT / ".github/workflows/publish.yml").read_text(encoding="utf-8"))
    steps = flow["jobs"]["test-and-build"]["steps"]
    runs = [s.get("run", "") for s in steps]
    assert "make test TORCH=cpu" in runs and "make book TORCH=cpu" in runs
    assert runs.index("make test TORCH=cpu") < runs.index("make book TORCH=cpu")
    # the published chapters install from the repository they are built from, not a placeholder
    fill = 'python tools/install_cell.py --url "https://github.com/${GITHUB_REPOSITORY}"'
    assert fill in runs and runs.index(fill) < runs.index("make test TORCH=cpu")
    upload = next(s for s in steps if s.get("uses", "").startswith("actions/upload-pages-artifact"))
    assert upload["with"]["path"] == "_build/html"
    assert flow["jobs"]["deploy"]["steps"][0]["uses"].startswith("actions/deploy-pages")


def test_ci_installs_chromium_then_runs_make_test():
    script = (ROOT / ".ci/run").read_text(encoding="utf-8")
    assert "apt-get install" in script and "chromium" in script
    assert script.rstrip().endswith("make test")


@pytest.mark.book
def test_every_figure_has_a_caption_and_alt_text(built_site):
    import html.parser

    class Figures(html.parser.HTMLParser):
        def __init__(self):
            super().__init__()
            self.depth, self.figures, self.current = 0, [], None

        def handle_starttag(self, tag, attrs):
            attrs = dict(attrs)
            if tag == "figure":
                self.current = {"alt": [], "caption": False}
                self.figures.append(self.current)
            elif tag == "img" and self.current is not None:
                self.current["alt"].append(attrs.get("alt") or "")
            elif tag == "figcaption" and self.current is not None:
                self.current["caption"] = True

        def handle_endtag(self, tag):
            if tag == "figure":
                self.current = None

    total = 0
    for docname in PAGES:
        parser = Figures()
        parser.feed((built_site / f"{docname}.html").read_text(encoding="utf-8"))
        for fig in parser.figures:
            total += 1
            assert fig["caption"], f"a figure without caption on {docname}"
            assert fig["alt"] and all(len(a) >= 10 for a in fig["alt"]), f"a figure without alt text on {docname}"
    assert total >= 10


@needs_chromium
def test_print_view_shows_the_article_without_the_navigation(visit):
    """The theme's print CSS: sidebars and header buttons hidden, the chapter text and figures kept."""
    v, _ = visit("chapters/06_why_sinusoids.html")
    v.page.emulate_media(media="print")
    assert v.page.locator("article").first.is_visible()
    assert v.page.locator("article img").first.is_visible()
    for selector in (".bd-sidebar-primary", ".article-header-buttons"):
        loc = v.page.locator(selector)
        assert loc.count() == 0 or not loc.first.is_visible(), f"{selector} is printed"
    fits = v.page.evaluate("document.body.scrollWidth <= window.innerWidth + 1")
    assert fits, "the printed page is wider than the paper"


_VISIBLE_SEARCH = """() => [...document.querySelectorAll(
    '.search-button-field, .search-button, input[type=search]')]
  .filter(e => e.offsetParent !== null && e.getBoundingClientRect().width > 0).length"""


@needs_chromium
def test_one_search_box_at_every_width(visit):
    v, _ = visit("chapters/05_positional_embedding.html")
    for width in (1280, 1024, 420):
        v.page.set_viewport_size({"width": width, "height": 900})
        assert v.page.evaluate(_VISIBLE_SEARCH) == 1, f"not exactly one search box at {width} px"


_SCROLLING_CODE = """() => {
  document.querySelectorAll('details').forEach(d => d.open = true);   // folded solutions too
  return [...document.querySelectorAll('div.cell_input div.highlight pre')]
    .filter(e => e.offsetParent !== null && e.scrollWidth > e.clientWidth + 1)
    .map(e => Math.max(...e.innerText.split('\\n').map(l => l.length)));
}"""


@needs_chromium
@pytest.mark.parametrize("docname", [p for p in PAGES if p.startswith("chapters/")])
def test_no_code_cell_scrolls_sideways(visit, docname):
    """Every code line (at most 88 characters, tests/test_course.py) fits the code column of a
    1280-pixel-wide window, folded solutions included."""
    v, _ = visit(f"{docname}.html")
    assert v.page.locator("div.cell_input div.highlight pre").count() > 5
    assert v.page.evaluate(_SCROLLING_CODE) == []


_SCROLLING_OUTPUT = """() => {
  document.querySelectorAll('details').forEach(d => d.open = true);                // folded cells
  document.querySelectorAll('.toggle-hidden').forEach(e => e.classList.remove('toggle-hidden'));  // solutions
  const printed = 'div.cell_output div.output.stream pre, div.cell_output div.output.text_plain pre';
  const shown = [...document.querySelectorAll(printed)].filter(e => e.offsetParent !== null);
  return [shown.length, shown.filter(e => e.scrollWidth > e.clientWidth + 1)
    .map(e => e.innerText.split('\\n').find(l => l.length > 80) || e.innerText.slice(0, 80))];
}"""


@needs_chromium
@pytest.mark.parametrize("docname", [p for p in PAGES if p.startswith("chapters/")])
def test_no_printed_output_scrolls_sideways(visit, docname):
    """What a chapter prints (88 characters a line at most, tests/test_course.py) fits the column
    in the same font size as the code, folded solutions included."""
    v, _ = visit(f"{docname}.html")
    shown, wide = v.page.evaluate(_SCROLLING_OUTPUT)
    assert shown >= 3, f"only {shown} printed outputs found: has the theme's markup changed?"
    assert wide == [], wide


@pytest.mark.book
def test_folded_code_is_the_set_up_cell_the_plotting_code_and_the_versions(built_site):
    """Site readers run nothing: the set-up cell's code is folded behind a toggle (tag
    hide-input). So is the code of a cell that only draws a figure, the figure shown right after
    the toggle, and the versions cell (tag hide-cell). Every other cell's code stays visible."""
    start = r'(?=<div class="cell(?: tag_[\w-]+)* docutils container)'
    for docname in [p for p in PAGES if p.startswith("chapters/")]:
        page = (built_site / f"{docname}.html").read_text(encoding="utf-8")
        cells = re.split(start, page)[1:]
        folded = [c for c in cells if "tag_hide-input" in c.split(">", 1)[0]]
        assert folded and "<details" in folded[0] and "Set-up: outside the course" in folded[0], docname
        for cell in folded[1:]:
            figure = r'</details>\s*<div class="cell_output docutils container">\s*(<figure[^>]*>\s*)?<img '
            assert re.search(figure, cell), (docname, cell[:300])
        hidden = [c for c in cells if "tag_hide-cell" in c.split(">", 1)[0]]
        assert len(hidden) == 1 and "<details" in hidden[0] and "versions" in hidden[0], docname
