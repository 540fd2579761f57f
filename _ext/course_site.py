"""Local Sphinx extension for the course site (tests/test_site.py tests it in Chromium).

1. No console errors, no outside requests. Jupyter Book 1 always loads sphinx-thebe,
   which adds its inline configuration script twice (the browser then logs "Identifier
   'THEBE_JS_URL' has already been declared") and names a CDN URL. The course has no
   live-code button (``launch_buttons.thebe: false``), so the thebe scripts and
   stylesheet are dropped.
2. One stylesheet, ``static/course.css``: code set so that the 88-character lines of the
   chapters fit the code column without scrolling sideways.
3. A ``.md`` download for every chapter. The theme offers a notebook page's ``.ipynb``
   only; this writes the same notebook as a MyST Markdown text notebook (no outputs;
   Jupyter Book and Jupytext read it back) next to it in ``_sources`` and adds it to the
   download menu.
4. The student notebooks (``student/<stem>.ipynb``, written by ``make student``) are
   published with the site as ``student/<stem>.ipynb``, and every chapter page links to
   its own: a line at the top of the page ("Student notebook: download · open in Colab")
   and an entry in the download menu. The Colab address is built from ``repository.url``
   and ``repository.branch`` of ``_config.yml``. A chapter without its student notebook
   stops the build, naming ``make student``. ``COURSE_STUDENT_DIR`` reads them from
   another folder (the tests do).
5. The header's "Open issue" button opens the erratum form
   (``.github/ISSUE_TEMPLATE/erratum.yml``), its "Where" field filled with the page.
6. The student site (``make book STUDENT=1``; ``tools/student_site.py`` writes its
   config, with ``course_student_site: true``): no solution anywhere. sphinx-exercise's
   ``hide_solutions`` drops a ``{solution}`` directive, but of a gated solution
   (``{solution-start}`` ... ``{solution-end}``, how every chapter writes them) it drops
   only the start marker: the cells in between would stay on the page (and the end
   marker, which the HTML writer cannot render, stops the build); here everything from
   the start to the end is removed. The instructor notebooks are not offered: no
   ``.ipynb``/``.md`` download of a chapter (the copies in ``_sources`` are deleted) and
   the Colab/Binder buttons open the student notebook. Nothing leads back to the course's
   repository, where the solutions are: no repository, issues, edit or source button, no
   ``_sources`` download of any page (``html_copy_source`` is off), and a link to a page
   left out of the student table of contents (the instructor guide, the rubrics), to the
   course's repository, to ``grading/`` or to a chapter's notebook on GitHub becomes its
   plain text. ``course_student_repository`` (``tools/student_site.py --repository``)
   names a separate student-only repository: the repository button, Colab and Binder
   then open it (``student/<stem>.ipynb`` in it); without it the student site has no
   repository link at all, and a chapter offers its student notebook as a download only.
7. Accessibility (WCAG 2.1 AA; ``tools/axe_audit.py`` and ``tests/test_accessibility.py`` check
   every page with axe-core): when the build ends, every page of the site is mended where the
   theme and the extensions write markup that fails, see :func:`accessible_html`, and the
   ``index.html`` that only redirects to the first page gets a language and a title. The link
   colours of both themes and the focus rings are in ``static/course.css``; ``static/course.js``
   keeps the keyboard's focus on the buttons the theme blurs when they are clicked.
"""

import html
import os
import re
import shutil
from pathlib import Path, PurePosixPath
from urllib.parse import quote, urlparse

import nbformat
from docutils import nodes
from sphinx.application import Sphinx
from sphinx.errors import SphinxError
from sphinx.transforms import SphinxTransform
from sphinx.util.osutil import relative_uri
from sphinx_exercise.directive import SolutionStartDirective
from sphinx_exercise.nodes import solution_end_node

ERRATUM_TEMPLATE = "erratum.yml"  # in .github/ISSUE_TEMPLATE/
STUDENT_FOLDER = "student"  # in the repository and in the built site
COLAB_URL = "https://colab.research.google.com"
INSTRUCTOR_DOWNLOADS = (  # a chapter's own notebook, solutions included: .ipynb, .md
    "download-source-button",
    "download-notebook-button",
    "download-myst-button",
)
# header buttons that lead to the course's repository, never on the student site
REPOSITORY_BUTTONS = ("source-issues-button", "source-edit-button", "source-file-button")
# the instructors' part of the repository: pages and folders a student site never links to
INSTRUCTOR_TARGETS = re.compile(
    r"(^|/)(instructors|rubrics)(\.html|\.md)?([#?]|$)|(^|/)grading(/|$)"
    r"|/(blob|tree|raw)/[^/]+/(.+/)?chapters(/|$)"
)


class StudentNotebookMissing(SphinxError):
    category = "Student notebook missing"


# --- 1. no thebe ----------------------------------------------------------------------


def _is_thebe(asset) -> bool:
    name = str(getattr(asset, "filename", "") or "")
    body = str(getattr(asset, "attributes", {}).get("body", ""))
    return "thebe" in name or "THEBE_JS_URL" in body


def _drop_thebe(app: Sphinx, context) -> None:
    if app.config.html_theme_options.get("launch_buttons", {}).get("thebe"):
        return
    for key in ("script_files", "css_files"):
        if key in context:
            context[key] = [asset for asset in context[key] if not _is_thebe(asset)]


# --- 3. the .md download --------------------------------------------------------------


def notebook_to_myst(nb) -> str:
    """A notebook as MyST Markdown: code cells in ``{code-cell}`` blocks, cells split by
    ``+++``."""
    kernel = nb.metadata.get("kernelspec", {})
    parts = [
        "---\njupytext:\n  text_representation:\n    extension: .md\n"
        "    format_name: myst\n"
        f"kernelspec:\n  display_name: {kernel.get('display_name', 'Python 3')}\n"
        f"  language: {kernel.get('language', 'python')}\n"
        f"  name: {kernel.get('name', 'python3')}\n---"
    ]
    previous = None
    for cell in nb.cells:
        if cell.cell_type == "code":
            parts.append(f"```{{code-cell}} ipython3\n{cell.source}\n```")
        else:
            if previous == "markdown":
                parts.append("+++")
            parts.append(cell.source)
        previous = cell.cell_type
    return "\n\n".join(parts) + "\n"


def _group(context, label: str) -> dict | None:
    """A group of header buttons: "download-buttons", "launch-buttons"."""
    groups = context.get("header_buttons", [])
    return next((group for group in groups if group.get("label") == label), None)


def _add_md_download(app: Sphinx, pagename: str, context) -> None:
    group = _group(context, "download-buttons")
    if group is not None:
        group["buttons"].insert(
            1,
            {
                "type": "link",
                "url": f"{context['pathto']('_sources', 1)}/{pagename}.md",
                "text": ".md",
                "icon": "fas fa-file-lines",
                "label": "download-myst-button",
                "tooltip": "Download as MyST Markdown (text notebook, no outputs)",
            },
        )


def _write_markdown_notebooks(app: Sphinx) -> None:
    for docname in _notebook_docs(app):
        source = Path(app.env.doc2path(docname))
        target = Path(app.outdir) / "_sources" / f"{docname}.md"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(
            notebook_to_myst(nbformat.read(source, as_version=4)), encoding="utf-8"
        )


# --- 4. the student notebooks ---------------------------------------------------------


def _notebook_docs(app: Sphinx) -> list[str]:
    """The chapters: every document of the build whose source is a notebook."""
    return sorted(
        d for d in app.env.found_docs if str(app.env.doc2path(d)).endswith(".ipynb")
    )


def student_notebook(docname: str) -> str:
    """A chapter's student notebook, relative to the repository and to the site."""
    return f"{STUDENT_FOLDER}/{PurePosixPath(docname).name}.ipynb"


def _student_dir(app: Sphinx) -> Path:
    return Path(
        os.environ.get("COURSE_STUDENT_DIR") or Path(app.srcdir) / STUDENT_FOLDER
    )


def _check_student_notebooks(app: Sphinx, env, docnames) -> None:
    folder = _student_dir(app)
    missing = [
        PurePosixPath(student_notebook(d)).name
        for d in _notebook_docs(app)
        if not (folder / PurePosixPath(student_notebook(d)).name).is_file()
    ]
    if missing:
        raise StudentNotebookMissing(
            f"run `make student`: every chapter page links to its student notebook, "
            f"and {folder} has none for {len(missing)} chapter(s): {', '.join(missing)}"
        )


def _copy_student_notebooks(app: Sphinx) -> None:
    _check_student_notebooks(app, app.env, [])
    target = Path(app.outdir) / STUDENT_FOLDER
    target.mkdir(parents=True, exist_ok=True)
    names = {PurePosixPath(student_notebook(docname)).name for docname in _notebook_docs(app)}
    for stale in set(p.name for p in target.glob("*.ipynb")) - names:   # an older build's, an old name
        (target / stale).unlink()
    for name in sorted(names):
        shutil.copyfile(_student_dir(app) / name, target / name)


def _repository(app: Sphinx) -> tuple[str, str, str, str]:
    """(repository URL, owner/name, branch, the book's folder in it + '/')."""
    opts = app.config.html_theme_options
    url = str(opts.get("repository_url", "")).rstrip("/")
    parts = urlparse(url)
    if parts.netloc != "github.com" or len(parts.path.strip("/").split("/")) != 2:
        raise SphinxError(
            f"repository.url in _config.yml is {url!r}: the Colab links of "
            "the student notebooks need https://github.com/<owner>/<repository>"
        )
    book = str(opts.get("path_to_docs", "")).strip("/")
    branch = str(opts.get("repository_branch", "") or "main")
    return url, parts.path.strip("/"), branch, f"{book}/" if book else ""


def student_launch_urls(app: Sphinx, docname: str) -> dict[str, str]:
    """Colab (always) and Binder (when ``launch_buttons.binderhub_url`` is set) for the
    chapter's student notebook: plain links, nothing is contacted until a click. On the
    student site they open the student-only repository, and without one there are none:
    both would open the course's repository."""
    if app.config.course_student_site and not app.config.course_student_repository:
        return {}
    _, slug, branch, book = _repository(app)
    path = f"{book}{student_notebook(docname)}"
    launch = app.config.html_theme_options.get("launch_buttons", {}) or {}
    colab = str(launch.get("colab_url") or COLAB_URL).rstrip("/")
    urls = {"Colab": f"{colab}/github/{slug}/blob/{branch}/{path}"}
    binder = str(launch.get("binderhub_url") or "").rstrip("/")
    if binder:
        ui = "lab/tree" if launch.get("notebook_interface") == "jupyterlab" else "tree"
        urls["Binder"] = f"{binder}/v2/gh/{slug}/{branch}?urlpath={ui}/{path}"
    return urls


def _student_line(app: Sphinx, doctree, docname: str) -> None:
    """'Student notebook: download · open in Colab' under the chapter's title."""
    if docname not in set(_notebook_docs(app)) or app.builder.format != "html":
        return
    section = next(iter(doctree.findall(nodes.section)), None)
    if section is None or not isinstance(section[0], nodes.title):
        return
    href = relative_uri(app.builder.get_target_uri(docname), student_notebook(docname))
    colab = student_launch_urls(app, docname).get("Colab")
    name = PurePosixPath(student_notebook(docname)).name
    html = (
        '<p class="course-student-notebook"><strong>Student notebook</strong> (the '
        "exercises without their solutions): "
        f'<a class="reference download" href="{href}" download="{name}">'
        f"download {name}</a>"
        + (f' · <a class="reference external" href="{colab}">open in Colab</a>' if colab else "")
        + "</p>"
    )
    section.insert(1, nodes.raw("", html, format="html"))


def _student_buttons(app: Sphinx, pagename: str, context) -> None:
    """The student notebook in the download menu; on the student site it replaces the
    chapter's own notebook, and the launch buttons open it."""
    student = app.config.course_student_site
    download = {
        "type": "link",
        "url": context["pathto"](student_notebook(pagename), 1),
        "text": "Student .ipynb" if not student else ".ipynb",
        "icon": "fas fa-graduation-cap",
        "label": "download-student-notebook-button",
        "tooltip": "Download the student notebook (exercises without solutions)",
    }
    group = _group(context, "download-buttons")
    if group is not None:
        if student:  # the chapter's .ipynb and .md hold the solutions: not offered
            buttons = group["buttons"]
            group["buttons"] = [
                b for b in buttons if b.get("label") not in INSTRUCTOR_DOWNLOADS
            ]
        group["buttons"].insert(0 if student else 2, download)
    launch = _group(context, "launch-buttons")
    if not student or launch is None:
        return
    urls = student_launch_urls(app, pagename)
    buttons = []
    for button in launch["buttons"]:
        if button.get("text") in urls:
            buttons.append(
                {
                    **button,
                    "url": urls[button["text"]],
                    "tooltip": f"Open the student notebook on {button['text']}",
                }
            )
    launch["buttons"] = buttons
    if not buttons:  # no student-only repository: no launch menu at all
        context["header_buttons"].remove(launch)


def _drop_repository_buttons(context) -> None:
    """The student site's header: no button into the course's repository (issues, edit,
    source) and no download of a page's source, on every page."""
    dropped = REPOSITORY_BUTTONS + INSTRUCTOR_DOWNLOADS
    kept = []
    for entry in context.get("header_buttons", []):
        if entry.get("label") in dropped:
            continue
        if "buttons" in entry:
            entry["buttons"] = [b for b in entry["buttons"] if b.get("label") not in dropped]
            if not entry["buttons"]:
                continue
        kept.append(entry)
    context["header_buttons"] = kept


# --- 5. the erratum form --------------------------------------------------------------


def _erratum_button(app: Sphinx, pagename: str, context) -> None:
    for entry in context.get("header_buttons", []):
        for button in [entry, *entry.get("buttons", [])]:
            if button.get("label") == "source-issues-button":
                url = _repository(app)[0]
                button["url"] = (
                    f"{url}/issues/new?template={ERRATUM_TEMPLATE}"
                    f"&where={quote(pagename, safe='')}"
                )
                button["tooltip"] = "Report an erratum on this page"


# --- 6. the student site --------------------------------------------------------------


class hidden_solution_start(nodes.Element):
    """Where a gated solution starts, on the student site; removed with what follows."""


class GatedSolutionStart(SolutionStartDirective):
    """sphinx-exercise's ``solution-start``; with ``hide_solutions``, a marker."""

    def run(self):
        result = super().run()
        if self.config.hide_solutions:
            return [hidden_solution_start()]
        return result


class RemoveHiddenSolutions(SphinxTransform):
    """Remove each hidden gated solution: its start marker, every node up to the
    matching ``{solution-end}`` (code cells included) and the end marker. Runs before
    sphinx-exercise merges gated directives (priority 10)."""

    default_priority = 9

    def apply(self):
        for marker in list(self.document.findall(hidden_solution_start)):
            parent = marker.parent
            start = parent.index(marker)
            end = next(
                (
                    i
                    for i in range(start, len(parent))
                    if isinstance(parent[i], solution_end_node)
                ),
                None,
            )
            if end is None:
                raise SphinxError(
                    f"{self.env.docname}: a solution-start without a "
                    "solution-end in the same section"
                )
            del parent[start : end + 1]


def _link_left_out_page(app: Sphinx, env, node, contnode):
    """On the student site, a ``{doc}`` link to a page that exists but is not in its
    table of contents (the instructor guide, the rubrics) becomes the page's title as plain
    text: the strict build does not fail, and the student is not sent to the instructors'
    pages in the repository."""
    if not app.config.course_student_site or node.get("reftype") != "doc":
        return None
    target = node["reftarget"]
    if not target.startswith("/"):
        target = str(PurePosixPath(node["refdoc"]).parent / target)
    target = os.path.normpath(target).lstrip("/")
    for suffix in app.config.source_suffix:
        source = Path(app.srcdir) / f"{target}{suffix}"
        if source.is_file():
            break
    else:
        return None
    text = contnode.astext()
    if not node.get("refexplicit"):
        headings = [
            line[2:].strip()
            for line in source.read_text(encoding="utf-8").splitlines()
            if line.startswith("# ")
        ]
        text = headings[0] if headings else text
    return nodes.inline("", text, classes=["course-left-out"])


def leads_to_instructors(uri: str, course_repository: str) -> bool:
    """True for an address a student site must not link to: the course's repository
    (where the solutions are), the instructor guide, the rubrics, ``grading/``, or a
    chapter's notebook in any repository (``blob/<ref>/chapters/...``)."""
    course = course_repository.rstrip("/")
    if course and (uri == course or uri.startswith((course + "/", course + "#", course + "?"))):
        return True
    path = urlparse(uri).path if "://" in uri else uri
    return bool(INSTRUCTOR_TARGETS.search(path))


def _unlink_instructor_references(app: Sphinx, doctree, docname: str) -> None:
    """On the student site, every link into the instructors' part (see
    :func:`leads_to_instructors`) becomes its text: written in a chapter for the
    instructor site, it would lead a student to the solutions."""
    if not app.config.course_student_site:
        return
    course = app.config.course_repository
    for ref in list(doctree.findall(nodes.reference)):
        uri = ref.get("refuri", "")
        if uri and leads_to_instructors(uri, course):
            ref.replace_self(nodes.inline("", "", *ref.children, classes=["course-left-out"]))


def _delete_instructor_notebooks(app: Sphinx) -> None:
    for docname in _notebook_docs(app):
        for suffix in (".ipynb", ".md"):
            Path(app.outdir, "_sources", f"{docname}{suffix}").unlink(missing_ok=True)


def _config_inited(app: Sphinx, config) -> None:
    if config.course_student_site:
        config.hide_solutions = True


# --- 7. accessibility -----------------------------------------------------------------

# (what the theme or an extension writes, what the page gets instead, why)
_ACCESSIBLE = (
    # myst-nb's folded cell: the name "Toggle hidden content" hides the visible "Show code
    # cell source" (axe: label-content-name-mismatch); without it the summary is named by
    # its visible text
    (re.compile(r'<summary aria-label="Toggle hidden content">'), "<summary>"),
    # pydata-sphinx-theme's search field: named "Search", shows "Search Ctrl+K"
    (re.compile(r'(<button class="[^"]*\bsearch-button-field\b[^"]*"[^>]*?) aria-label="[^"]*"'),
     r"\1"),
    # the theme switch is named "Color mode", but Font Awesome turns each icon's title
    # ("Light", "Dark", "System Settings") into visible text of the button; the icons are
    # decoration
    (re.compile(r'(<i class="theme-switch [^"]*" data-mode="\w+")\s+title="[^"]*"'),
     r'\1 aria-hidden="true"'),
    # sphinxcontrib-bibtex's reference list: role="list" whose entries carry the deprecated
    # role doc-biblioentry (aria-deprecated-role), so the list has no list items
    # (aria-required-children)
    (re.compile(r'(<div class="citation"[^>]*) role="doc-biblioentry"'), r'\1 role="listitem"'),
)
# sphinx-external-toc's index.html: only a <meta> refresh, no <html lang>, no <title>
_BARE_INDEX = re.compile(r'\s*<meta http-equiv="Refresh" content="0; url=([^"]+)" />\s*')
_INDEX = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{title}</title>
<meta http-equiv="refresh" content="0; url={target}">
<link rel="canonical" href="{target}">
</head>
<body>
<main>
<p>The course starts at <a href="{target}">{title}</a>.</p>
</main>
</body>
</html>
"""


def accessible_html(text: str) -> str:
    """A page as the theme and the extensions wrote it, with what fails WCAG 2.1 AA mended
    (see ``_ACCESSIBLE``). Mending a mended page changes nothing."""
    for pattern, replacement in _ACCESSIBLE:
        text = pattern.sub(replacement, text)
    return text


def _accessible_pages(app: Sphinx, exception) -> None:
    """Mend every page of the site (after sphinx-external-toc wrote ``index.html``)."""
    if exception is not None or app.builder.format != "html":
        return
    out = Path(app.outdir)
    index = out / "index.html"
    bare = _BARE_INDEX.fullmatch(index.read_text(encoding="utf-8")) if index.is_file() else None
    if bare:
        root = app.config.root_doc
        title = app.env.titles[root].astext() if root in app.env.titles else app.config.project
        index.write_text(
            _INDEX.format(target=bare.group(1), title=html.escape(title)), encoding="utf-8")
    for page in out.rglob("*.html"):
        if page.relative_to(out).parts[0] in ("_static", "_sources"):
            continue
        text = page.read_text(encoding="utf-8")
        mended = accessible_html(text)
        if mended != text:
            page.write_text(mended, encoding="utf-8")


# --- wiring ---------------------------------------------------------------------------


def _page_context(app: Sphinx, pagename, templatename, context, doctree) -> None:
    _drop_thebe(app, context)
    if app.config.course_student_site:
        _drop_repository_buttons(context)
    else:
        _erratum_button(app, pagename, context)
    if context.get("page_source_suffix") == ".ipynb":
        if not app.config.course_student_site:
            _add_md_download(app, pagename, context)
        _student_buttons(app, pagename, context)


_REDIRECT = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Moved: {title}</title>
<meta http-equiv="refresh" content="0; url={target}">
<link rel="canonical" href="{target}">
</head>
<body>
<main>
<p>This page has moved to <a href="{target}">{title}</a>.</p>
</main>
</body>
</html>
"""


def _write_redirects(app: Sphinx) -> None:
    """A page at each renamed chapter's old address that sends the reader to the new one, so that
    links and bookmarks from before the rename keep working (tokvec.course.renamed)."""
    from tokvec.course.renamed import RENAMED

    out = Path(app.outdir) / "chapters"
    for old, new in RENAMED.items():
        docname = f"chapters/{new}"
        if docname not in app.env.all_docs:
            continue
        title = html.escape(app.env.titles[docname].astext() if docname in app.env.titles else new)
        (out / f"{old}.html").write_text(_REDIRECT.format(target=f"{new}.html", title=title), encoding="utf-8")


def _build_finished(app: Sphinx, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    _write_redirects(app)
    if app.config.course_student_site:
        _delete_instructor_notebooks(app)
    else:
        _write_markdown_notebooks(app)
    _copy_student_notebooks(app)


def _add_static(app: Sphinx) -> None:
    app.config.html_static_path.append(str(Path(__file__).parent / "static"))
    if not app.config.course_student_site or app.config.course_student_repository:
        _repository(app)  # a malformed repository.url stops the build here, not per page


def setup(app: Sphinx) -> dict:
    app.setup_extension("sphinx_exercise")
    app.add_config_value("course_student_site", False, "env", [bool])
    # the student site: a student-only repository (or ""), and the course's own, whose links
    # it drops (tools/student_site.py sets both)
    app.add_config_value("course_student_repository", "", "env", [str])
    app.add_config_value("course_repository", "", "env", [str])
    app.add_directive("solution-start", GatedSolutionStart, override=True)
    app.add_node(hidden_solution_start)
    app.add_transform(RemoveHiddenSolutions)
    app.connect("config-inited", _config_inited)
    app.connect("builder-inited", _add_static)
    app.connect("env-before-read-docs", _check_student_notebooks)
    app.connect("missing-reference", _link_left_out_page)
    app.add_css_file("course.css")
    app.add_js_file("course.js")
    # after the theme has made its buttons
    app.connect("html-page-context", _page_context, priority=900)
    app.connect("doctree-resolved", _student_line)
    app.connect("doctree-resolved", _unlink_instructor_references)
    app.connect("build-finished", _build_finished)
    app.connect("build-finished", _accessible_pages, priority=900)  # after index.html
    return {"parallel_read_safe": True, "parallel_write_safe": True}
