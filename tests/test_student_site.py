"""The student site (`make book STUDENT=1`, tools/student_site.py): no solutions.

Every chapter writes its solutions as gated blocks (``{solution-start}`` ...
``{solution-end}``) with code cells in between; sphinx-exercise's ``hide_solutions``
alone would drop the block's title and leave those cells on the page, so the tests read
each solution's code and prose from the chapter notebook and look for it in the HTML:
present on the instructor site, absent on the student site, while the exercise itself is
there. One extra build (the student site, about 15 s); the instructor site is the
session's shared build.
"""

import html
import json
import re
from pathlib import Path

import nbformat
import pytest
import yaml
from conftest import ROOT, chapter_docs, load_tool, toc_pages
from test_book import student_links

START = re.compile(r"^```\{solution-start\}\s*(\S+)")
END = re.compile(r"^```\{solution-end\}")
EXERCISE_LABEL = re.compile(r"```\{exercise(?:-start)?\}[^`]*?\n:label: (\S+)")
PLAIN = re.compile(r"^[A-Za-z0-9 ,.;:()]{40,}$")  # prose that renders as it is written


def solutions(path: Path) -> dict[str, dict[str, list[str]]]:
    """Each gated solution of a chapter: its code and prose lines; and all outside."""
    found: dict[str, dict[str, list[str]]] = {}
    outside: list[str] = []
    label = None
    for cell in nbformat.read(path, as_version=4).cells:
        if cell.cell_type == "code":
            (found[label]["code"] if label else outside).extend(
                cell.source.splitlines()
            )
            continue
        lines = iter(cell.source.splitlines())
        for line in lines:
            if match := START.match(line):
                label = match.group(1)
                found[label] = {"code": [], "text": []}
                for option in lines:  # :class: dropdown, then ```
                    if option.startswith("```"):
                        break
            elif END.match(line):
                label = None
                next(lines, None)  # the closing ```
            else:
                (found[label]["text"] if label else outside).append(line)
    found["(outside)"] = {"code": outside, "text": []}
    return found


def page_text(page: Path) -> str:
    """What a reader sees of a page: the HTML without its tags (code unhighlighted)."""
    return html.unescape(re.sub(r"<[^>]+>", "", page.read_text(encoding="utf-8")))


def distinctive(chapter: Path) -> tuple[list[str], list[str], list[str]]:
    """Per solution, its longest code line and a line of its prose that occur nowhere
    else in the chapter; and the chapter's exercise labels."""
    found = solutions(chapter)
    outside = "\n".join(found.pop("(outside)")["code"])  # code and prose around them
    code, prose = [], []
    for parts in found.values():
        lines = sorted(
            {line.strip() for line in parts["code"] if len(line.strip()) >= 25},
            key=len,
            reverse=True,
        )
        unique = [line for line in lines if line not in outside]
        code += unique[:1]
        prose += [line.strip() for line in parts["text"] if PLAIN.match(line.strip())][
            :1
        ]
    labels = EXERCISE_LABEL.findall(
        "\n".join(
            c.source
            for c in nbformat.read(chapter, as_version=4).cells
            if c.cell_type == "markdown"
        )
    )
    return code, prose, labels


def _flat(toc: dict) -> list[str]:
    pages = [toc["root"]]

    def add(entries):
        for entry in entries:
            pages.append(entry["file"])
            add(entry.get("sections", []))

    for part in toc["parts"]:
        add(part["chapters"])
    return pages


def _course_site():
    """_ext/course_site.py as a module, without a Sphinx build."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "course_site_under_test", ROOT / "_ext" / "course_site.py"
    )
    course_site = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(course_site)
    return course_site


def test_the_student_config_and_toc(tmp_path):
    """The student toc is the book's without the instructor's pages; the config differs
    by the student switch and the buttons into the repository, and finds the local
    extension from its own folder."""
    tool = load_tool("student_site")
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    left_out = {"instructors", "rubrics"}
    assert left_out <= set(_flat(toc))
    assert _flat(tool.student_toc(toc)) == [p for p in _flat(toc) if p not in left_out]
    book = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    config = tool.student_config(book, tmp_path)
    assert config["sphinx"]["config"]["course_student_site"] is True
    extension = config["sphinx"]["local_extensions"]["course_site"]
    assert (tmp_path / extension / "course_site.py").exists()
    assert "course_student_site" not in book["sphinx"]["config"]  # a copy was changed
    assert {k: v for k, v in config.items() if k not in ("sphinx", "html")} == {
        k: v for k, v in book.items() if k not in ("sphinx", "html")
    }
    # no button into the course's repository, no copy of the pages' sources
    assert {k: config["html"][k] for k in config["html"] if k.startswith("use_")} == {
        "use_repository_button": False,
        "use_issues_button": False,
        "use_edit_page_button": False,
    }
    sphinx = config["sphinx"]["config"]
    assert sphinx["html_copy_source"] is False
    assert sphinx["course_student_repository"] == ""
    assert sphinx["course_repository"] == book["repository"]["url"]


def test_a_student_only_repository_replaces_the_courses(tmp_path):
    """--repository URL: the buttons open the student-only repository; the course's own
    is kept only for the extension to drop links to it. A malformed URL is refused,
    naming it and the expected form."""
    tool = load_tool("student_site")
    book = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    handout = "https://github.com/my-class/handout"
    config = tool.student_config(book, tmp_path, handout + "/", "term-2027")
    assert config["repository"] == {"url": handout, "path_to_book": "", "branch": "term-2027"}
    assert config["html"]["use_repository_button"] is True
    assert config["html"]["use_issues_button"] is False
    sphinx = config["sphinx"]["config"]
    assert sphinx["course_student_repository"] == handout
    assert sphinx["course_repository"] == book["repository"]["url"] != handout
    for bad in ("my-class/handout", "https://gitlab.com/my-class/handout", "https://github.com/x"):
        with pytest.raises(SystemExit, match=rf"{re.escape(repr(bad))}.*https://github\.com/OWNER/REPO"):
            tool.student_config(book, tmp_path, bad)
    written = tool.write_config(tmp_path, handout, "main")[0].read_text(encoding="utf-8")
    assert f"url: {handout}" in written and "course_repository:" in written


def _fake_app(student: bool, repository: str):
    from types import SimpleNamespace

    options = {
        "repository_url": repository or "https://github.com/tokens-to-vectors/tokens-to-vectors",
        "path_to_docs": "",
        "repository_branch": "term",
        "launch_buttons": {
            "binderhub_url": "https://mybinder.org",
            "colab_url": "https://colab.research.google.com",
        },
    }
    config = SimpleNamespace(
        course_student_site=student,
        course_student_repository=repository,
        html_theme_options=options,
    )
    return SimpleNamespace(config=config)


def test_launch_urls_open_the_student_repository_or_nothing():
    course_site = _course_site()
    docname = "chapters/05_positional_embedding"
    handout = "https://github.com/my-class/handout"
    urls = course_site.student_launch_urls(_fake_app(True, handout), docname)
    assert urls == {
        "Colab": "https://colab.research.google.com/github/my-class/handout/blob/term/"
        "student/05_positional_embedding.ipynb",
        "Binder": "https://mybinder.org/v2/gh/my-class/handout/term?urlpath=tree/"
        "student/05_positional_embedding.ipynb",
    }
    # no student-only repository: no launch button (it would open the course's repository)
    assert course_site.student_launch_urls(_fake_app(True, ""), docname) == {}
    # the instructor site keeps its own
    assert "Colab" in course_site.student_launch_urls(_fake_app(False, ""), docname)


def test_the_student_header_keeps_no_button_into_the_repository():
    course_site = _course_site()

    def button(label):
        return {"type": "link", "url": "u", "label": label}

    context = {
        "header_buttons": [
            {"label": "download-buttons", "buttons": [
                button("download-notebook-button"), button("download-source-button"),
                button("download-pdf-button")]},
            {"label": "source-buttons", "buttons": [
                button("source-repository-button"), button("source-issues-button"),
                button("source-edit-button"), button("source-file-button")]},
            {"label": "edit-only", "buttons": [button("source-edit-button")]},
            button("fullscreen-button"),
        ]
    }
    course_site._drop_repository_buttons(context)
    labels = [
        (entry["label"], [b["label"] for b in entry.get("buttons", [])])
        for entry in context["header_buttons"]
    ]
    assert labels == [
        ("download-buttons", ["download-pdf-button"]),
        ("source-buttons", ["source-repository-button"]),  # there only with --repository
        ("fullscreen-button", []),
    ]


@pytest.mark.parametrize(
    ("uri", "dropped"),
    [
        ("https://github.com/tokens-to-vectors/tokens-to-vectors", True),
        ("https://github.com/tokens-to-vectors/tokens-to-vectors/issues/new?x=1", True),
        ("https://github.com/tokens-to-vectors/tokens-to-vectors#readme", True),
        ("https://github.com/someone/fork/blob/main/instructors.md", True),
        ("../instructors.html#grading", True),
        ("rubrics.html", True),
        ("https://github.com/someone/fork/tree/main/grading/05.py", True),
        ("https://github.com/someone/fork/blob/v1.0.0/chapters/05_positional_embedding.ipynb", True),
        ("https://github.com/tokens-to-vectors/tokens-to-vectors-handout", False),
        ("https://github.com/my-class/handout/blob/main/student/05_a.ipynb", False),
        ("https://github.com/openai/tiktoken", False),
        ("../glossary.html#term-token", False),
    ],
)
def test_which_links_lead_to_the_instructors(uri, dropped):
    course = "https://github.com/tokens-to-vectors/tokens-to-vectors"
    assert _course_site().leads_to_instructors(uri, course) is dropped


def test_a_missing_student_notebook_stops_the_build_naming_make_student(
    tmp_path, monkeypatch
):
    from types import SimpleNamespace

    course_site = _course_site()
    (tmp_path / "01_a.ipynb").write_text("{}")
    env = SimpleNamespace(
        found_docs={"chapters/01_a", "chapters/02_b", "intro"},
        doc2path=lambda d: f"/book/{d}{'.md' if d == 'intro' else '.ipynb'}",
    )
    app = SimpleNamespace(env=env, srcdir="/book")
    monkeypatch.setenv("COURSE_STUDENT_DIR", str(tmp_path))
    with pytest.raises(
        course_site.StudentNotebookMissing, match=r"make student.*02_b\.ipynb"
    ):
        course_site._check_student_notebooks(app, env, [])
    (tmp_path / "02_b.ipynb").write_text("{}")
    course_site._check_student_notebooks(app, env, [])


@pytest.mark.book
@pytest.mark.slow
def test_no_solution_on_the_student_site(student_site, built_site):
    checked = 0
    chapters = [d for d in chapter_docs() if not d.startswith("chapters/appendix_")]   # appendices: no exercise
    for docname in chapters:
        code, prose, labels = distinctive(ROOT / f"{docname}.ipynb")
        assert code and labels, (
            f"{docname}: no solution code found: has the markup changed?"
        )
        teacher = page_text(built_site / f"{docname}.html")
        student_html = (student_site / f"{docname}.html").read_text(encoding="utf-8")
        student = page_text(student_site / f"{docname}.html")
        for line in code + prose:
            assert line in teacher, f"{docname}: {line!r} is not on the instructor site"
            assert line not in student, (
                f"{docname}: solution shown to students: {line!r}"
            )
            checked += 1
        for label in labels:  # the exercises themselves stay
            assert f'id="{label}"' in student_html, (
                f"{docname}: exercise {label} missing"
            )
        assert "Solution to" not in student and 'class="solution' not in student_html
        assert "Solution to" in teacher
    assert checked >= 2 * len(chapters)


@pytest.mark.book
@pytest.mark.slow
def test_student_site_has_no_instructor_guide_and_no_instructor_notebook(student_site):
    left_out = load_tool("student_site").INSTRUCTORS_ONLY
    index = (student_site / "searchindex.js").read_text(encoding="utf-8")
    for name in left_out:
        assert not (student_site / f"{name}.html").exists() and f'"{name}"' not in index
    instructor_notebook = re.compile(
        r'href="[^"]*(colab|binder)[^"]*chapters/[^"]*\.ipynb'
    )
    for docname in [p for p in toc_pages() if p not in left_out]:
        page = (student_site / f"{docname}.html").read_text(encoding="utf-8")
        assert not re.search(r'href="(\.\./)?(instructors|rubrics)\.html', page), (
            docname
        )
        assert not instructor_notebook.search(page), docname
        assert "_sources/chapters/" not in page, docname  # no .ipynb or .md download
    assert not (student_site / "_sources").exists(), "page sources: the chapters' notebooks"
    # the downloads are today's handouts only: none left by an older build (an old file name)
    handouts = {p.name for p in (ROOT / "student").glob("*.ipynb")}
    stale = [p.name for p in (student_site / "student").glob("*.ipynb") if p.name not in handouts]
    assert not stale, f"downloads an older build left: {stale}"
    # the intro names the guide, in plain text: no link to it, here or in the repository
    intro = (student_site / "intro.html").read_text(encoding="utf-8")
    assert '<span class="course-left-out">Instructor guide</span>' in intro
    assert "instructors.md" not in intro


def _hrefs(page: str) -> list[str]:
    return [html.unescape(h) for h in re.findall(r'\b(?:href|src|action)="([^"]*)"', page)]


@pytest.mark.book
@pytest.mark.slow
def test_no_page_of_the_student_site_leads_to_the_solutions(student_site):
    """Every page the student site publishes (HTML, and the search index): no link to the
    course's repository (repository, issues, edit or source button, a file in it), the
    instructor guide, the rubrics, grading/, a chapter's notebook on GitHub or a page's
    source; no Colab or Binder button (it would open the course's repository: the default
    build names no student-only repository); and no solution text on any page, its own
    chapter's or another."""
    course = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    repository = course["repository"]["url"].rstrip("/")
    forbidden = re.compile(
        rf"^{re.escape(repository)}([/#?]|$)"
        r"|(^|/)(instructors|rubrics)(\.html|\.md)?([#?]|$)|(^|/)grading(/|$)"
        r"|github\.com/.*/(blob|tree|raw)/.*chapters/.*\.(ipynb|md)"
        r"|_sources/|colab\.research\.google\.com|mybinder\.org"
    )
    pages = sorted(student_site.rglob("*.html"))
    assert len(pages) >= len(toc_pages()) - 2  # every page of the student toc, and more
    leaks = [
        f"{page.relative_to(student_site)}: {href}"
        for page in pages
        for href in _hrefs(page.read_text(encoding="utf-8"))
        if forbidden.search(href)
    ]
    assert leaks == [], "\n".join(leaks[:20])
    for label in ("source-repository-button", "source-issues-button", "source-edit-button",
                  "download-source-button", "download-notebook-button"):
        assert not [p for p in pages if label in p.read_text(encoding="utf-8")], label
    # no solution of any chapter on any page, nor in the search index
    chapters = [d for d in chapter_docs() if not d.startswith("chapters/appendix_")]
    # a chapter's solution line that another chapter shows anyway (the primer's answer reuses
    # chapter 8's sentences) is in a handout, public: not a leak
    handouts = "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "student").glob("*.ipynb"))
    solution_lines = {
        line
        for docname in chapters
        for line in (lambda c, p, _: c + p)(*distinctive(ROOT / f"{docname}.ipynb"))
        if json.dumps(line)[1:-1] not in handouts
    }
    assert len(solution_lines) >= 2 * len(chapters)
    texts = {p.relative_to(student_site): page_text(p) for p in pages}
    texts["searchindex.js"] = (student_site / "searchindex.js").read_text(encoding="utf-8")
    shown = sorted(
        f"{name}: {line!r}" for name, text in texts.items() for line in solution_lines if line in text
    )
    assert shown == [], "\n".join(shown[:20])


@pytest.mark.book
@pytest.mark.slow
def test_student_site_chapters_offer_the_student_notebook(student_site):
    for docname in chapter_docs():
        stem = docname.rsplit("/", 1)[-1]
        page = (student_site / f"{docname}.html").read_text(encoding="utf-8")
        # a download, and no Colab link: without a student-only repository it would
        # open the course's (the Colab and Binder links with one: see the unit tests)
        assert student_links(page, docname) == (True, False), docname
        assert (student_site / "student" / f"{stem}.ipynb").is_file(), docname
        assert 'class="btn btn-sm btn-download-student-notebook-button' in page
        assert "template=erratum.yml" not in page  # the erratum form is the repository's
