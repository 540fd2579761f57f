"""Audit a built site with axe-core in Chromium: WCAG 2.0 and 2.1, levels A and AA.

Serves the site folder on 127.0.0.1, opens every page (every ``.html`` outside ``_static/``,
the redirects of renamed chapters included) in Debian's Chromium through Playwright, with no
network (every request that is not for the local site is refused), injects the vendored
axe-core (``tests/vendor/axe-core/axe.min.js``) and runs its rules tagged ``wcag2a``,
``wcag2aa``, ``wcag21a`` and ``wcag21aa``, in the light theme, then switches the page to the
dark theme as the theme's own switch does and runs them again (``--colour-only-in-dark``: only
the rules that read colours, as the tests do). Prints the axe-core version, the rules run and,
per rule that found something: its impact, how many nodes on how many pages in which theme,
and one example (the node's selector and HTML). ``tests/test_accessibility.py`` runs the same
audit on both built sites and expects nothing.
Usage::

    python tools/axe_audit.py _build/html                       # the book
    python tools/axe_audit.py _build/html _build/student-site/_build/html --json axe.json
    python tools/axe_audit.py _build/html --theme dark --page chapters/05_positional_embedding.html

Exit status: 0 without violations, 1 with, 2 when there is no Chromium or no Playwright.
"""

import argparse
import contextlib
import functools
import http.server
import json
import os
import re
import shutil
import sys
import threading
from collections import defaultdict
from pathlib import Path
from urllib.parse import urljoin

ROOT = Path(__file__).resolve().parents[1]
AXE_JS = ROOT / "tests" / "vendor" / "axe-core" / "axe.min.js"
TAGS = ("wcag2a", "wcag2aa", "wcag21a", "wcag21aa")
THEMES = ("light", "dark")
# The rules whose result depends on the colours, the only thing the theme switch changes.
COLOUR_RULES = ("color-contrast", "link-in-text-block")
VIEWPORT = {"width": 1280, "height": 900}
REFRESH = re.compile(r"<meta http-equiv=\"refresh\"[^>]*>", re.IGNORECASE)

_SETTLE = """async () => {
  await new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)));
  await Promise.all(document.getAnimations().map(a => a.finished.catch(() => null)));
}"""
_RUN = """async ([tags, only]) => {
  // the page as a reader sees it: math typeset, fonts loaded, the theme's scripts done
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) await MathJax.startup.promise;
  await document.fonts.ready;
  await new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)));
  // a theme switch starts colour transitions: axe must read the colours they end at
  await Promise.all(document.getAnimations().map(a => a.finished.catch(() => null)));
  const result = await axe.run(document, {
    runOnly: only ? {type: "rule", values: only} : {type: "tag", values: tags},
    resultTypes: ["violations", "incomplete"]});
  return {
    violations: result.violations.map(v => ({
      rule: v.id, impact: v.impact, help: v.help,
      nodes: v.nodes.map(n => ({target: n.target.join(" "), html: n.html, summary: n.failureSummary}))})),
    // what axe could not decide (a colour behind an image, text partly hidden): not failures
    review: Object.fromEntries(result.incomplete.map(v => [v.id, v.nodes.length]))};
}"""


def chromium() -> str | None:
    """Debian's Chromium (``$CHROMIUM`` names another)."""
    return os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")


def site_pages(site: Path) -> list[str]:
    """Every page of a built site, relative to it: ``index.html``, ``chapters/...``."""
    return sorted(
        p.relative_to(site).as_posix()
        for p in site.rglob("*.html")
        if p.relative_to(site).parts[0] not in ("_static", "_sources")
    )


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@contextlib.contextmanager
def serve(site: Path):
    """The site on a free localhost port: yields its base URL."""
    handler = functools.partial(_QuietHandler, directory=str(site))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    finally:
        httpd.shutdown()
        httpd.server_close()


def _fulfil_with(body: str):
    return lambda route: route.fulfill(body=body, content_type="text/html")


def _tab(browser, base: str, site: Path, pages: list[str]):
    """A tab in a browser context of its own, showing the site in the light theme, offline; and
    the pages among ``pages`` that are redirects (served without their refresh)."""
    context = browser.new_context(viewport=VIEWPORT, color_scheme="light")
    # the theme's own switch: pydata-sphinx-theme reads "mode" and "theme" before it paints
    context.add_init_script("localStorage.setItem('mode', 'light'); localStorage.setItem('theme', 'light');")
    context.route(re.compile(r"^(?!" + re.escape(base) + ")"), lambda route: route.abort())
    redirects = set()
    for path in pages:
        text = (site / path).read_text(encoding="utf-8")
        if REFRESH.search(text):
            redirects.add(path)  # a plain page: no theme
            context.route(urljoin(base, path), _fulfil_with(REFRESH.sub("", text)))
    return context.new_page(), redirects


# The dark theme as its switch sets it: the page's attributes (the CSS reads them) and the stored
# choice; returns the page's background colour, which the audit checks is dark.
_DARK = """() => {
  localStorage.setItem('mode', 'dark'); localStorage.setItem('theme', 'dark');
  document.documentElement.dataset.mode = 'dark';
  document.documentElement.dataset.theme = 'dark';
  return getComputedStyle(document.body).backgroundColor;
}"""


# Reflow (WCAG 1.4.10), which axe does not check: at 320 CSS pixels (a 1280-pixel window at
# 400 %) the page must not scroll sideways, and nothing may be cut off by a box that hides what
# sticks out (MathJax's own boxes and its hidden copy for screen readers aside). Boxes that
# scroll must take the focus: axe's scrollable-region-focusable runs again at that width.
REFLOW_WIDTH = 320
_REFLOW = """() => {
  const W = document.documentElement.clientWidth, found = [];
  const scrolls = e => { for (let a = e.parentElement; a; a = a.parentElement)
    if (getComputedStyle(a).overflowX !== 'visible') return true; return false; };
  const describe = (e, why) => ({target: e.tagName.toLowerCase() + (e.id ? '#' + e.id : '')
    + (typeof e.className === 'string' && e.className ? '.' + e.className.trim().split(/\\s+/).join('.') : ''),
    html: e.outerHTML.slice(0, 300), summary: why});
  if (document.documentElement.scrollWidth > W + 1) {
    // what sticks out: a box, or the text of a box that cannot wrap it
    const out = [...document.querySelectorAll('body *')].filter(e => e.checkVisibility()
      && (e.getBoundingClientRect().right > W + 1
          || e.scrollWidth > e.clientWidth + 1 && getComputedStyle(e).overflowX === 'visible')
      && !scrolls(e) && !e.closest('.bd-sidebar-secondary'));
    const deepest = out.filter(e => !out.some(c => c !== e && e.contains(c)));
    const why = `the page is ${document.documentElement.scrollWidth} px wide at ${W} px`;
    for (const e of deepest.slice(0, 3)) found.push(describe(e, why + ': this sticks out'));
    if (!deepest.length) found.push(describe(document.documentElement, why));
  }
  for (const e of document.querySelectorAll('body *')) {
    if (e.tagName.startsWith('MJX-') || !e.checkVisibility()) continue;
    const o = getComputedStyle(e).overflowX, r = e.getBoundingClientRect();
    if ((o === 'hidden' || o === 'clip') && r.width > 1 && r.height > 1
        && e.scrollWidth > e.clientWidth + 2)
      found.push(describe(e, `cut off: ${e.scrollWidth} px of content in ${e.clientWidth} px`));
  }
  return found;
}"""


def _luminance(css_colour: str) -> float:
    """Relative luminance (WCAG) of ``rgb(r, g, b)``."""
    r, g, b = (int(v) / 255 for v in re.findall(r"\d+", css_colour)[:3])
    lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in (r, g, b)]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def _reflow(tab, path: str, theme: str) -> list[dict]:
    """The page at ``REFLOW_WIDTH`` pixels: what sticks out or is cut off, and what scrolls
    without taking the focus (axe's scrollable-region-focusable); then the window's width back
    (for the next page). The theme gives a scrolling box its Tab stop 300 ms after a resize."""
    tab.set_viewport_size({"width": REFLOW_WIDTH, "height": 640})
    try:
        tab.wait_for_timeout(400)
        tab.evaluate(_SETTLE)
        nodes = tab.evaluate(_REFLOW)
        found = [{"rule": "reflow", "impact": "serious", "nodes": nodes,
                  "help": f"WCAG 1.4.10: nothing sticks out of or is cut off at {REFLOW_WIDTH} px"}]
        found += tab.evaluate(_RUN, [list(TAGS), ["scrollable-region-focusable"]])["violations"]
    finally:
        tab.set_viewport_size(VIEWPORT)
    return [{"theme": f"{theme}, {REFLOW_WIDTH} px", "page": path, **v} for v in found if v["nodes"]]


def audit(browser, base: str, site: Path, pages=None, themes=THEMES, dark_rules=None,
          reflow=True) -> dict:
    """Run axe on ``pages`` (default: all of ``site``) served at ``base``, in each theme.

    Each page is loaded once, in the light theme, and audited; for the dark theme the page is
    switched as the theme's own switch does it (its background must turn dark) and audited
    again, with every rule, or with only ``dark_rules`` (rule ids): the rules whose result
    depends on colours, since the switch changes nothing else. With ``reflow``, each page is
    then checked at 320 pixels (see ``_REFLOW``): its findings have the rule ``reflow`` (or
    axe's ``scrollable-region-focusable``) and the theme "dark, 320 px". A redirect page has no theme:
    it is audited once, as it is, without following its ``<meta http-equiv="refresh">``.
    Returns ``{"version", "tags", "rules", "dark_rules", "pages", "violations", "needs_review"}``;
    each violation is a dict with the theme, page, rule, impact, help and nodes (target, html,
    summary); ``needs_review`` counts, per rule, the nodes (and pages) axe could not decide."""
    pages = site_pages(site) if pages is None else list(pages)
    axe_source = AXE_JS.read_text(encoding="utf-8")
    found: list[dict] = []
    review = defaultdict(lambda: [0, set()])              # rule: nodes, pages
    version, rules = "", []
    tab, redirects = _tab(browser, base, site, pages)
    try:
        for path in pages:
            tab.goto(urljoin(base, path), wait_until="load")
            shown = tab.evaluate("document.documentElement.dataset.theme || 'light'")
            assert shown == "light", f"{path}: asked for the light theme, the page shows {shown}"
            tab.add_script_tag(content=axe_source)
            if not version:
                version = tab.evaluate("axe.version")
                rules = tab.evaluate(
                    "tags => axe.getRules(tags).map(r => r.ruleId).sort()", list(TAGS))
            for theme in themes if path not in redirects else themes[:1]:
                if theme == "dark":
                    background = tab.evaluate(_DARK)
                    assert _luminance(background) < 0.05, (
                        f"{path}: switched to the dark theme, the background is {background}")
                only = list(dark_rules) if theme == "dark" and dark_rules else None
                result = tab.evaluate(_RUN, [list(TAGS), only])
                for v in result["violations"]:
                    found.append({"theme": theme, "page": path, **v})
                for rule, n in result["review"].items():
                    review[rule][0] += n
                    review[rule][1].add(path)
            if reflow and path not in redirects:
                found += _reflow(tab, path, theme)
    finally:
        tab.context.close()
    return {"version": version, "tags": list(TAGS), "rules": rules,
            "dark_rules": list(dark_rules or rules), "pages": len(pages), "violations": found,
            "needs_review": {rule: {"nodes": n, "pages": len(where)}
                             for rule, (n, where) in sorted(review.items())}}


def report(result: dict, title: str = "") -> str:
    """Per rule: impact, nodes and pages per theme, one example."""
    lines = [f"axe-core {result['version']}{' on ' + title if title else ''}: "
             f"{len(result['rules'])} rules tagged {', '.join(result['tags'])}",
             "rules: " + " ".join(result["rules"])]
    if result["dark_rules"] != result["rules"]:
        lines.append("in the dark theme only: " + " ".join(result["dark_rules"]))
    by_rule = defaultdict(list)
    for v in result["violations"]:
        by_rule[v["rule"]].append(v)
    if not by_rule:
        lines.append("no violation")
    if result.get("needs_review"):
        lines.append("needs review (axe could not decide; not counted as failures): " + ", ".join(
            f"{rule} {r['nodes']} nodes on {r['pages']} pages" for rule, r in result["needs_review"].items()))
    for rule, found in sorted(by_rule.items()):
        counts = []
        for theme in dict.fromkeys(v["theme"] for v in found):
            mine = [v for v in found if v["theme"] == theme]
            counts.append(f"{theme}: {sum(len(v['nodes']) for v in mine)} nodes on {len(mine)} pages")
        example = found[0]["nodes"][0]
        lines += [f"{rule} ({found[0]['impact']}): {'; '.join(counts)} - {found[0]['help']}",
                  f"    e.g. {found[0]['page']} [{found[0]['theme']}] {example['target']}",
                  f"    {example['html'][:300]}",
                  "    " + (example["summary"] or "").replace("\n", " ")[:400],
                  "    pages: " + " ".join(sorted({v['page'] for v in found}))]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sites", nargs="+", type=Path, help="built site folders (with index.html)")
    parser.add_argument("--theme", choices=THEMES, action="append", help="default: both")
    parser.add_argument("--page", action="append", help="only this page (relative to the site)")
    parser.add_argument("--json", type=Path, metavar="OUT", help="write every violation as JSON")
    parser.add_argument("--colour-only-in-dark", action="store_true",
                        help="in the dark theme run only " + " and ".join(COLOUR_RULES)
                        + " (as the test does; default: every rule in both themes)")
    args = parser.parse_args(argv)
    executable = chromium()
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        print("playwright is not installed", file=sys.stderr)
        return 2
    if executable is None:
        print("no Chromium found: install Debian's chromium or set CHROMIUM", file=sys.stderr)
        return 2
    results = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=executable, headless=True)
        for site in args.sites:
            site = site.resolve()
            with serve(site) as base:
                results[str(site)] = audit(browser, base, site, args.page, tuple(args.theme or THEMES),
                                               COLOUR_RULES if args.colour_only_in_dark else None)
            print(report(results[str(site)], str(site)))
        browser.close()
    if args.json:
        args.json.write_text(json.dumps(results, indent=1), encoding="utf-8")
    return 1 if any(r["violations"] for r in results.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
