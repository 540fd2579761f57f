"""The published websites meet WCAG 2.1 AA as far as a browser can tell.

1. axe-core (vendored: ``tests/vendor/axe-core/``) runs in Debian's Chromium on every page of
   the book and of the student site (the redirects of renamed chapters included), with its
   rules tagged ``wcag2a``, ``wcag2aa``, ``wcag21a`` and ``wcag21aa``: every rule in the light
   theme, then, on the same page switched to the dark theme, the rules that read colours
   (``axe_audit.COLOUR_RULES``); the audit is ``tools/axe_audit.py``, which also reports on any
   built site from the command line (every rule in both themes by default). Each page is also
   checked at 320 CSS px (WCAG 1.4.10, reflow: nothing sticks out or is cut off, what scrolls
   takes the focus), which axe does not do. A control checks that the audit sees a contrast
   failure that only the dark theme has, and a page that does not reflow.
2. The keyboard: on a chapter, Tab alone reaches every control a reader can see (the sidebar,
   the folded cells and solutions, the download and Colab links, the search, the theme switch),
   each with a visible focus indicator (seen on the screen), and Enter operates them; on a
   narrow window the sidebar opens with Enter and Escape gives the focus back to its button.

The sites are the ones the other browser tests use (conftest's ``built_site`` and
``student_site``: nothing is built again). Where no Chromium is installed the tests are skipped
with that reason.
"""

import io
import re

import pytest
from conftest import load_tool
from test_site import browser, needs_chromium  # noqa: F401  (a fixture, shared)

pytestmark = pytest.mark.book
axe_audit = load_tool("axe_audit")
RULES_ALWAYS_RUN = {"color-contrast", "label-content-name-mismatch", "aria-required-children",
                    "scrollable-region-focusable", "summary-name", "link-in-text-block"}


def _audit(browser, site, capsys):  # noqa: F811
    """Audit every page of ``site``; the report (axe's version, the rules run, what was found
    and what axe could not decide) goes to the test run's output, passing or not."""
    with axe_audit.serve(site) as base:
        result = axe_audit.audit(browser, base, site, dark_rules=axe_audit.COLOUR_RULES)
    with capsys.disabled():
        print("\n" + axe_audit.report(result, f"{result['pages']} pages of {site}, themes "
                                              f"{', '.join(axe_audit.THEMES)}"))
    assert tuple(map(int, result["version"].split(".")[:2])) >= (4, 14), result["version"]
    assert set(result["rules"]) >= RULES_ALWAYS_RUN, sorted(RULES_ALWAYS_RUN - set(result["rules"]))
    return result


@needs_chromium
def test_every_page_of_the_book_passes_axe_in_both_themes(browser, built_site, capsys):  # noqa: F811
    result = _audit(browser, built_site, capsys)
    assert result["pages"] == len(axe_audit.site_pages(built_site)) > 30
    assert result["violations"] == [], axe_audit.report(result)


@needs_chromium
def test_every_page_of_the_student_site_passes_axe_in_both_themes(browser, student_site,  # noqa: F811
                                                                   capsys):
    result = _audit(browser, student_site, capsys)
    assert result["pages"] == len(axe_audit.site_pages(student_site)) > 25
    assert result["violations"] == [], axe_audit.report(result)


@needs_chromium
def test_the_audit_sees_a_dark_only_failure_and_a_page_that_does_not_reflow(
        browser, built_site, tmp_path):  # noqa: F811
    """The controls: a copy of a page whose links are dark grey in the dark theme only, and
    whose first paragraph cannot wrap (too wide at 320 px) while its second is cut off."""
    (tmp_path / "_static").symlink_to(built_site / "_static")
    page = (built_site / "versions.html").read_text(encoding="utf-8")
    dark = '<style>html[data-theme="dark"] a { color: #3a3a3a !important; }</style></head>'
    wide = "A sentence that is written to be far wider than a phone's screen. " * 2
    narrow = (f'<p style="white-space: nowrap">{wide}</p>'
              f'<p style="white-space: nowrap; overflow: hidden">{wide}</p></article>')
    page = page.replace("</head>", dark, 1).replace("</article>", narrow, 1)
    (tmp_path / "versions.html").write_text(page, encoding="utf-8")
    with axe_audit.serve(tmp_path) as base:
        result = axe_audit.audit(browser, base, tmp_path, ["versions.html"],
                                 dark_rules=axe_audit.COLOUR_RULES)
    found = {(v["rule"], v["theme"]) for v in result["violations"]}
    assert found == {("color-contrast", "dark"), ("reflow", "dark, 320 px")}, found
    why = " ".join(n["summary"] for v in result["violations"] for n in v["nodes"])
    assert "sticks out" in why and "cut off" in why, why


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
# Where the focus is: the element (its data-kbd number, tag, class, text, link) and its box on
# the screen, grown by 8 px for the ring around it and cut to the window.
_FOCUS = """async () => {
  const e = document.activeElement;
  if (!e || e === document.body) return null;
  await Promise.all(document.getAnimations().map(a => a.finished.catch(() => null)));
  const r = e.getBoundingClientRect();
  const box = {x: Math.max(0, r.left - 8), y: Math.max(0, r.top - 8)};
  box.width = Math.min(innerWidth, r.right + 8) - box.x;
  box.height = Math.min(innerHeight, r.bottom + 8) - box.y;
  return {kbd: e.dataset.kbd ?? null, tag: e.tagName.toLowerCase(), cls: String(e.className),
          text: (e.innerText || e.getAttribute('aria-label') || '').trim().slice(0, 40),
          href: e.getAttribute('href'), box,
          // the length of the element's edges inside the window: where a ring would be drawn
          edges: [r.top >= 0, r.bottom <= innerHeight].filter(Boolean).length * Math.min(r.width, innerWidth)
               + [r.left >= 0, r.right <= innerWidth].filter(Boolean).length
                 * (Math.min(r.bottom, innerHeight) - Math.max(r.top, 0))};
}"""


def _changed_pixels(before: bytes, after: bytes) -> int:
    from PIL import Image, ImageChops

    a, b = (Image.open(io.BytesIO(x)).convert("RGB") for x in (before, after))
    return ImageChops.difference(a, b).convert("L").point(lambda p: 255 * (p > 40)).histogram()[255]


def _focus_is_seen(tab, stop: dict) -> int:
    """How many pixels around the focused element change when it loses the focus: a reader
    sees the focus only if they do, along at least half of the element's visible edges.
    Puts the focus back with the keyboard (Shift+Tab, Tab) before it returns."""
    if stop["box"]["width"] <= 0 or stop["box"]["height"] <= 0:
        return 0                                                   # not on the screen at all
    focused = tab.screenshot(clip=stop["box"], animations="disabled")
    tab.evaluate("document.activeElement.blur()")
    tab.evaluate(_FOCUS.replace("document.activeElement", "document.body"))  # let rings fade
    unfocused = tab.screenshot(clip=stop["box"], animations="disabled")
    tab.keyboard.press("Shift+Tab")
    tab.keyboard.press("Tab")
    changed = _changed_pixels(focused, unfocused)
    return changed if changed >= stop["edges"] / 2 else 0


@pytest.fixture()
def chapter_tab(browser, built_site):  # noqa: F811
    with axe_audit.serve(built_site) as base:
        context = browser.new_context(viewport=axe_audit.VIEWPORT)
        context.route(re.compile(r"^(?!" + re.escape(base) + ")"), lambda route: route.abort())
        tab = context.new_page()
        tab.goto(base + KEYBOARD_PAGE, wait_until="load")
        tab.evaluate("async () => { if (window.MathJax) await MathJax.startup.promise;"
                     " await document.fonts.ready; }")
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
    """Tab from the top of a chapter until the focus comes back round: every control a reader
    can see is reached, and formulas are not Tab stops. The focus ring is checked on the
    screen, not in the computed style (a ring can be cut off by its container): for the first
    two stops of each kind (tag and class), the pixels around the element must change when it
    loses the focus."""
    tab = chapter_tab
    count = tab.evaluate(_MARK)
    stops, kinds_checked, unseen = [], {}, []
    for _ in range(2 * count + 100):
        tab.keyboard.press("Tab")
        stop = tab.evaluate(_FOCUS)
        if stop is None or stops and stop["kbd"] == stops[0]["kbd"]:
            break                                                      # back to the start
        stops.append(stop)
        kind = (stop["tag"], stop["cls"])
        if kinds_checked.setdefault(kind, 0) < 2:
            kinds_checked[kind] += 1
            if not _focus_is_seen(tab, stop):
                unseen.append({k: stop[k] for k in ("tag", "cls", "text", "href")})
    reached = {s["kbd"] for s in stops}
    missing = [k for k in map(str, range(count)) if k not in reached]
    print(f"{KEYBOARD_PAGE}: {len(stops)} Tab stops, {count} visible controls, the focus ring "
          f"checked on the screen for {sum(kinds_checked.values())} stops of {len(kinds_checked)} kinds")
    assert count > 50 and not missing, tab.evaluate(
        "ks => ks.map(k => document.querySelector(`[data-kbd='${k}']`).outerHTML.slice(0, 160))", missing)
    assert unseen == [], unseen
    assert not any(s["tag"] == "mjx-container" or "math" in s["cls"].split() for s in stops)
    kinds = {
        "the sidebar": lambda s: "reference internal" in s["cls"] and s["text"].startswith("6. "),
        "a folded cell": lambda s: s["tag"] == "summary" and "code cell" in s["text"],
        "a self-check answer": lambda s: s["tag"] == "summary" and s["text"] == "Answer",
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
    assert "dropdown-item" in item["cls"] and _focus_is_seen(tab, item), item
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


@needs_chromium
def test_the_sidebar_of_a_narrow_window_opens_and_closes_with_the_keyboard(chapter_tab):
    """At 640 px (a 1280-pixel window at 200 %) the sidebar is a drawer behind a button."""
    tab = chapter_tab
    tab.set_viewport_size({"width": 640, "height": 900})
    tab.focus("button.primary-toggle")
    tab.keyboard.press("Enter")
    tab.wait_for_selector("dialog#pst-primary-sidebar-modal[open]")
    tab.keyboard.press("Tab")
    assert tab.evaluate("!!document.activeElement.closest('dialog[open]')")   # the focus is in it
    tab.keyboard.press("Escape")
    tab.wait_for_selector("dialog#pst-primary-sidebar-modal:not([open])", state="attached")
    assert tab.evaluate("document.activeElement.matches('button.primary-toggle')")

