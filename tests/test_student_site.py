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


def test_the_student_config_and_toc(tmp_path):
    """The student toc is the book's without the instructor's pages; the config differs
    by the student switch and finds the local extension from its own folder."""
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
    assert {k: v for k, v in config.items() if k != "sphinx"} == {
        k: v for k, v in book.items() if k != "sphinx"
    }


def test_a_missing_student_notebook_stops_the_build_naming_make_student(
    tmp_path, monkeypatch
):
    import importlib.util
    from types import SimpleNamespace

    spec = importlib.util.spec_from_file_location(
        "course_site_under_test", ROOT / "_ext" / "course_site.py"
    )
    course_site = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(course_site)
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
    assert not list((student_site / "_sources").rglob("chapters/*")), (
        "instructor notebooks"
    )
    # the intro's link to the guide points to its source in the repository
    intro = (student_site / "intro.html").read_text(encoding="utf-8")
    assert re.search(
        r'href="https://github\.com/[^"]+/blob/[^"]+/instructors\.md"', intro
    )


@pytest.mark.book
@pytest.mark.slow
def test_student_site_chapters_offer_the_student_notebook(student_site):
    for docname in chapter_docs():
        stem = docname.rsplit("/", 1)[-1]
        page = (student_site / f"{docname}.html").read_text(encoding="utf-8")
        assert student_links(page, docname) == (True, True), docname
        assert (student_site / "student" / f"{stem}.ipynb").is_file(), docname
        # the launch buttons open the student notebook
        assert re.search(
            rf'href="https://mybinder\.org/[^"]*student/{stem}\.ipynb"', page
        )
        assert "template=erratum.yml" in page
