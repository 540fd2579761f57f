"""Local Sphinx extension for the published course site (``tests/test_site.py`` checks it in a browser).

1. No console errors, no outside requests. Jupyter Book 1 always loads sphinx-thebe, which adds
   its inline configuration script twice (the browser then logs "Identifier 'THEBE_JS_URL' has
   already been declared") and names a CDN URL. The course has no live-code button
   (``launch_buttons.thebe: false``), so the thebe scripts and stylesheet are dropped.
2. One stylesheet, ``static/course.css``: code set so that the 88-character lines of the chapters
   fit the code column without scrolling sideways.
3. A ``.md`` download for every chapter. The theme offers a notebook page's ``.ipynb`` only; this
   writes the same notebook as a MyST Markdown text notebook (no outputs; Jupyter Book and
   Jupytext read it back) next to it in ``_sources`` and adds it to the download menu.
"""

from pathlib import Path

import nbformat
from sphinx.application import Sphinx


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


def notebook_to_myst(nb) -> str:
    """A notebook as MyST Markdown: code cells in ``{code-cell}`` blocks, cells split by ``+++``."""
    kernel = nb.metadata.get("kernelspec", {})
    parts = ["---\njupytext:\n  text_representation:\n    extension: .md\n    format_name: myst\n"
             f"kernelspec:\n  display_name: {kernel.get('display_name', 'Python 3')}\n"
             f"  language: {kernel.get('language', 'python')}\n  name: {kernel.get('name', 'python3')}\n---"]
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


def _add_md_download(app: Sphinx, pagename: str, context) -> None:
    if context.get("page_source_suffix") != ".ipynb":
        return
    for group in context.get("header_buttons", []):
        if group.get("label") == "download-buttons":
            group["buttons"].insert(1, {
                "type": "link", "url": f"{context['pathto']('_sources', 1)}/{pagename}.md",
                "text": ".md", "icon": "fas fa-file-lines", "label": "download-myst-button",
                "tooltip": "Download as MyST Markdown (text notebook, no outputs)"})


def _page_context(app: Sphinx, pagename, templatename, context, doctree) -> None:
    _drop_thebe(app, context)
    _add_md_download(app, pagename, context)


def _write_markdown_notebooks(app: Sphinx, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    for docname in app.env.found_docs:
        source = Path(app.env.doc2path(docname))
        if source.suffix == ".ipynb":
            target = Path(app.outdir) / "_sources" / f"{docname}.md"
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(notebook_to_myst(nbformat.read(source, as_version=4)), encoding="utf-8")


def _add_static(app: Sphinx) -> None:
    app.config.html_static_path.append(str(Path(__file__).parent / "static"))


def setup(app: Sphinx) -> dict:
    app.connect("builder-inited", _add_static)
    app.add_css_file("course.css")
    app.connect("html-page-context", _page_context, priority=900)  # after the theme's own buttons
    app.connect("build-finished", _write_markdown_notebooks)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
