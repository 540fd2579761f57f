"""The published website meets WCAG 2.1 AA as far as axe-core can tell: no violation on any page.

axe-core (vendored: ``tests/vendor/axe-core/``) runs in Debian's Chromium on every page of the
built site (the redirects of renamed chapters included), in the light and in the dark theme,
with its rules tagged ``wcag2a``, ``wcag2aa``, ``wcag21a`` and ``wcag21aa``; the audit is
``tools/axe_audit.py``, which also reports on any built site from the command line. It uses the
book that tests/test_site.py serves and opens (the same fixtures: nothing is built again).
Where no Chromium is installed the test is skipped with that reason.
"""

import time

import pytest
from conftest import load_tool
from test_site import browser, needs_chromium, server  # noqa: F401  (fixtures, shared)

pytestmark = pytest.mark.book
axe_audit = load_tool("axe_audit")


@needs_chromium
def test_every_page_passes_axe_in_both_themes(browser, server, built_site):  # noqa: F811
    start = time.perf_counter()
    result = axe_audit.audit(browser, server, built_site)
    pages = axe_audit.site_pages(built_site)
    print(axe_audit.report(result, f"{len(pages)} pages of {built_site}, themes "
                                   f"{', '.join(axe_audit.THEMES)}"))
    print(f"audited in {time.perf_counter() - start:.1f} s")
    assert tuple(map(int, result["version"].split(".")[:2])) >= (4, 14), result["version"]
    assert {"color-contrast", "label-content-name-mismatch", "aria-required-children",
            "scrollable-region-focusable", "summary-name"} <= set(result["rules"])
    found = sorted({(v["rule"], v["page"], v["theme"]) for v in result["violations"]})
    assert found == [], axe_audit.report(result)
