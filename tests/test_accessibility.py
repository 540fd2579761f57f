"""The published websites meet WCAG 2.1 AA as far as a browser can tell.

1. axe-core (vendored: ``tests/vendor/axe-core/``) runs in Debian's Chromium on every page of
   the book and of the student site (the redirects of renamed chapters included), with its
   rules tagged ``wcag2a``, ``wcag2aa``, ``wcag21a`` and ``wcag21aa``: every rule in the light
   theme, then, on the same page switched to the dark theme, the rules that read colours
   (``axe_audit.COLOUR_RULES``); the audit is ``tools/axe_audit.py``, which also reports on any
   built site from the command line (every rule in both themes by default). A control checks
   that the dark audit sees a contrast failure that only the dark theme has.
2. The keyboard: on a chapter, Tab alone reaches every control a reader can see (the sidebar,
   the folded cells and solutions, the download and Colab links, the search, the theme switch),
   each with a visible focus indicator, and Enter operates them.

The sites are the ones the other browser tests use (conftest's ``built_site`` and
``student_site``: nothing is built again). Where no Chromium is installed the tests are skipped
with that reason.
"""

import re

import pytest
from conftest import load_tool
from test_site import browser, needs_chromium  # noqa: F401  (a fixture, shared)

pytestmark = pytest.mark.book
axe_audit = load_tool("axe_audit")
RULES_ALWAYS_RUN = {"color-contrast", "label-content-name-mismatch", "aria-required-children",
                    "scrollable-region-focusable", "summary-name", "link-in-text-block"}


def _audit(browser, site, pages=None):  # noqa: F811
    with axe_audit.serve(site) as base:
        result = axe_audit.audit(browser, base, site, pages, dark_rules=axe_audit.COLOUR_RULES)
    print(axe_audit.report(result, f"{result['pages']} pages of {site}, themes "
                                   f"{', '.join(axe_audit.THEMES)}"))
    assert tuple(map(int, result["version"].split(".")[:2])) >= (4, 14), result["version"]
    assert set(result["rules"]) >= RULES_ALWAYS_RUN, sorted(RULES_ALWAYS_RUN - set(result["rules"]))
    return result


@needs_chromium
def test_every_page_of_the_book_passes_axe_in_both_themes(browser, built_site):  # noqa: F811
    result = _audit(browser, built_site)
    assert result["pages"] == len(axe_audit.site_pages(built_site)) > 30
    assert result["violations"] == [], axe_audit.report(result)


@needs_chromium
def test_every_page_of_the_student_site_passes_axe_in_both_themes(browser, student_site):  # noqa: F811
    result = _audit(browser, student_site)
    assert result["pages"] == len(axe_audit.site_pages(student_site)) > 25
    assert result["violations"] == [], axe_audit.report(result)


@needs_chromium
def test_the_dark_audit_sees_a_failure_only_the_dark_theme_has(browser, built_site, tmp_path):  # noqa: F811
    """The control: a copy of a page whose links are dark grey in the dark theme only."""
    (tmp_path / "_static").symlink_to(built_site / "_static")
    page = (built_site / "versions.html").read_text(encoding="utf-8")
    bad = '<style>html[data-theme="dark"] a { color: #3a3a3a !important; }</style></head>'
    (tmp_path / "versions.html").write_text(page.replace("</head>", bad, 1), encoding="utf-8")
    with axe_audit.serve(tmp_path) as base:
        result = axe_audit.audit(browser, base, tmp_path, ["versions.html"],
                                 dark_rules=axe_audit.COLOUR_RULES)
    assert {(v["rule"], v["theme"]) for v in result["violations"]} == {("color-contrast", "dark")}


# --- 2. the keyboard ---------------------------------------------------------------------

KEYBOARD_PAGE = "chapters/05_positional_embedding.html"
# Every element a reader can see that the keyboard should reach, numbered in data-kbd.
_MARK = """() => {
  const all = document.querySelectorAll(
    'a[href], button, summary, input, select, textarea, [tabindex]');
  const shown = [...all].filter(e => e.tabIndex >= 0 && !e.disabled
    && e.checkVisibility({checkVisibilityCSS: true}) && e.getClientRects().length > 0);
  shown.forEach((e, i) => { e.dataset.kbd = i; });
  return shown.length;
}"""
# Where the focus is, and whether a reader sees it: an outline or a ring (a box shadow with a
# spread) of at least 2 px, on an element that is not transparent and is on the screen.
_FOCUS = """async () => {
  const e = document.activeElement;
  if (!e || e === document.body) return null;
  await Promise.all(document.getAnimations().map(a => a.finished.catch(() => null)));
  const cs = getComputedStyle(e), r = e.getBoundingClientRect();
  const ring = cs.outlineStyle !== 'none' && parseFloat(cs.outlineWidth) >= 2
    || (cs.boxShadow.match(/-?[\\d.]+px/g) || []).slice(3).some(s => parseFloat(s) >= 2);
  let opacity = 1;
  for (let a = e; a; a = a.parentElement) opacity *= parseFloat(getComputedStyle(a).opacity);
  const onScreen = r.bottom > 0 && r.top < innerHeight && r.right > 0 && r.left < innerWidth;
  return {kbd: e.dataset.kbd ?? null, tag: e.tagName.toLowerCase(), cls: String(e.className),
          text: (e.innerText || e.getAttribute('aria-label') || '').trim().slice(0, 40),
          href: e.getAttribute('href'), seen: ring && opacity > 0.5 && onScreen};
}"""


@pytest.fixture()
def chapter_tab(browser, built_site):  # noqa: F811
    with axe_audit.serve(built_site) as base:
        context = browser.new_context(viewport=axe_audit.VIEWPORT)
        context.route(re.compile(r"^(?!" + re.escape(base) + ")"), lambda route: route.abort())
        tab = context.new_page()
        tab.goto(base + KEYBOARD_PAGE, wait_until="load")
        tab.evaluate("async () => { if (window.MathJax) await MathJax.startup.promise; }")
        yield tab
        context.close()


def _tab_to(tab, where: str, limit: int = 2000) -> dict:
    """Press Tab until the focused element matches the CSS selector ``where``."""
    for _ in range(limit):
        tab.keyboard.press("Tab")
        if tab.evaluate("s => document.activeElement.matches(s)", where):
            return tab.evaluate(_FOCUS)
    raise AssertionError(f"Tab never reached {where}")


@needs_chromium
def test_tab_reaches_every_control_of_a_chapter_with_its_focus_visible(chapter_tab):
    tab = chapter_tab
    count = tab.evaluate(_MARK)
    stops = []
    for _ in range(count + 100):
        tab.keyboard.press("Tab")
        stop = tab.evaluate(_FOCUS)
        if stop is None or stops and stop["kbd"] == stops[0]["kbd"]:
            break                                                      # back to the start
        stops.append(stop)
    reached = {s["kbd"] for s in stops}
    missing = [k for k in map(str, range(count)) if k not in reached]
    unseen = [s for s in stops if not s["seen"]]
    print(f"{KEYBOARD_PAGE}: {len(stops)} Tab stops, {count} visible controls")
    assert count > 100 and not missing, tab.evaluate(
        "ks => ks.map(k => document.querySelector(`[data-kbd='${k}']`).outerHTML.slice(0, 160))", missing)
    assert unseen == [], unseen[:10]
    kinds = {
        "the sidebar": lambda s: "reference internal" in s["cls"] and s["text"].startswith("6. "),
        "a folded cell": lambda s: s["tag"] == "summary" and "code cell" in s["text"],
        "a solution": lambda s: "toggle-button" in s["cls"],
        "the student notebook": lambda s: (s["href"] or "").endswith("student/05_positional_embedding.ipynb"),
        "Colab": lambda s: (s["href"] or "").startswith("https://colab.research.google.com/"),
        "the search": lambda s: "search-button" in s["cls"],
        "the theme switch": lambda s: "theme-switch-button" in s["cls"],
        "the download menu": lambda s: s["text"] == "Download this page",
    }
    assert [k for k, is_it in kinds.items() if not any(map(is_it, stops))] == []


@needs_chromium
def test_enter_opens_folds_menus_search_and_links(chapter_tab):
    tab = chapter_tab
    # a folded code cell and a solution open with Enter
    _tab_to(tab, "details.hide > summary")
    tab.keyboard.press("Enter")
    assert tab.evaluate("document.activeElement.parentElement.open")
    _tab_to(tab, "button.toggle-button")
    hidden = tab.evaluate("document.activeElement.classList.contains('toggle-button-hidden')")
    tab.keyboard.press("Enter")
    assert tab.evaluate("document.activeElement.classList.contains('toggle-button-hidden')") != hidden
    # the download menu opens with Enter, and Tab goes into it
    tab.evaluate("document.activeElement.blur(); window.scrollTo(0, 0)")
    tab.focus("button[aria-label='Download this page']")
    tab.keyboard.press("Enter")
    tab.keyboard.press("Tab")
    item = tab.evaluate(_FOCUS)
    assert "dropdown-item" in item["cls"] and item["seen"], item
    # the theme switch goes round its modes (light, system, dark) with Enter
    tab.keyboard.press("Escape")
    tab.focus("button.theme-switch-button")
    modes = []
    for _ in range(3):
        tab.keyboard.press("Enter")
        modes.append(tab.evaluate("document.documentElement.dataset.mode"))
    assert sorted(modes) == ["auto", "dark", "light"], modes
    # the search: Enter on its button opens a field with the focus in it; Enter searches
    tab.focus("button.search-button-field")
    tab.keyboard.press("Enter")
    assert tab.evaluate("document.activeElement.matches('input[type=search], input[name=q]')")
    tab.keyboard.type("positional")
    with tab.expect_navigation():
        tab.keyboard.press("Enter")
    assert "search.html?q=positional" in tab.url
    tab.wait_for_selector("#search-results li", timeout=20_000)
    # a link of the sidebar follows with Enter
    tab.go_back()
    tab.focus("nav.bd-docs-nav a[href='06_why_sinusoids.html']")
    with tab.expect_navigation():
        tab.keyboard.press("Enter")
    assert tab.url.endswith("06_why_sinusoids.html")


@needs_chromium
def test_math_has_assistive_mathml_for_screen_readers(chapter_tab):
    """MathJax's assistive MathML (on by default in MathJax 3): each formula carries a hidden
    copy in MathML, which screen readers read, next to the visual rendering they skip."""
    counts = chapter_tab.evaluate("""() => ({
      formulas: document.querySelectorAll('mjx-container').length,
      mathml: document.querySelectorAll('mjx-container > mjx-assistive-mml > math').length,
      hidden: document.querySelectorAll('mjx-container > mjx-math[aria-hidden="true"]').length})""")
    assert counts["formulas"] > 50 and counts["mathml"] == counts["formulas"] == counts["hidden"], counts
