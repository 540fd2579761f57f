"""Tests of the course's structure: every chapter listed, importing tokvec, stored with outputs."""

import json
import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "chapters").glob("*.ipynb"))
IGNORE_TAGS = ("nbval-ignore-output", "nbval-skip")


def toc_files():
    def walk(node):
        if isinstance(node, dict):
            if "file" in node:
                yield node["file"]
            if "root" in node:
                yield node["root"]
            for value in node.values():
                yield from walk(value)
        elif isinstance(node, list):
            for item in node:
                yield from walk(item)

    return list(walk(yaml.safe_load((ROOT / "_toc.yml").read_text())))


def load(nb_path):
    return json.loads(nb_path.read_text(encoding="utf-8"))


def code_cells(nb):
    return [c for c in nb["cells"] if c["cell_type"] == "code"]


def _display_width(line: str) -> int:
    """Columns a line takes in a monospace font: combining marks take none, wide characters two."""
    import unicodedata

    return sum(0 if unicodedata.category(ch) in ("Mn", "Me") else
               2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1 for ch in line)


def markdown(nb):
    return "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")


def is_appendix(nb_path) -> bool:
    """An appendix (``appendix_*``): material moved beside a chapter, without its own exercises."""
    return Path(nb_path).name.startswith("appendix_")


def test_the_core_chapters_are_numbered_as_the_site_numbers_them():
    """Part I's files are NN_name, in order, and the site numbers them NN (tokvec's reading of the
    toc agrees); no page is nested under a chapter (Jupyter Book 1 would number it "1.15");
    every part after Part I is marked as depth by its caption."""
    from tokvec.course.reading import DEPTH, nested_pages
    from tokvec.course.student import site_numbers

    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    numbered = [p for p in toc["parts"] if p.get("numbered")]
    core, *depth = numbered
    files = [Path(c["file"]).name for c in core["chapters"]]
    assert [int(f[:2]) for f in files] == list(range(1, len(files) + 1)) and len(files) >= 9, files
    assert all(f[2] == "_" for f in files), files
    numbers = site_numbers(toc)
    assert all(numbers[f] == str(int(f[:2])) for f in files)
    assert not nested_pages(ROOT)
    assert depth and all(DEPTH.search(p["caption"]) for p in depth), [p["caption"] for p in depth]
    assert not DEPTH.search(core["caption"]), core["caption"]


def test_every_notebook_is_in_the_toc_and_every_toc_entry_exists():
    listed = toc_files()
    for nb in NOTEBOOKS:
        assert str(nb.relative_to(ROOT).with_suffix("")) in listed, f"{nb.name} is not in _toc.yml"
    for entry in listed:
        assert any((ROOT / entry).with_suffix(s).exists() for s in (".md", ".ipynb")), f"{entry} is missing"


@pytest.mark.parametrize("nb_path", NOTEBOOKS, ids=lambda p: p.name)
class TestNotebook:
    def test_imports_tokvec_and_never_patches_sys_path(self, nb_path):
        sources = ["".join(c["source"]) for c in code_cells(load(nb_path))]
        assert any(re.search(r"^\s*(import tokvec|from tokvec\b)", s, re.M) for s in sources)
        assert not any("sys.path" in s for s in sources)

    def test_is_stored_executed_top_to_bottom_with_outputs(self, nb_path):
        cells = code_cells(load(nb_path))
        counts = [c["execution_count"] for c in cells]
        assert counts == list(range(1, len(cells) + 1)), "re-run the notebook top to bottom and save it"
        assert sum(bool(c["outputs"]) for c in cells) >= len(cells) // 2

    def test_no_execution_timestamps_are_stored(self, nb_path):
        for cell in code_cells(load(nb_path)):
            assert "execution" not in cell["metadata"], "run with record_timing=False (make outputs)"

    def test_few_outputs_are_ignored_by_nbval(self, nb_path):
        cells = code_cells(load(nb_path))
        ignored = [c for c in cells if set(c.get("metadata", {}).get("tags", [])) & set(IGNORE_TAGS)]
        assert len(ignored) <= max(2, len(cells) // 10)

    def test_no_shown_source_is_thrown_away(self, nb_path):
        """``show_source(...)`` displays only as the last expression of its cell: anywhere else
        Jupyter discards its value, and the source the prose promises never appears (chapters
        1.1 and 10.1 each lost one this way)."""
        import ast

        for cell in code_cells(load(nb_path)):
            try:
                body = ast.parse("".join(cell["source"])).body
            except SyntaxError:                           # a cell with IPython magics
                continue
            for stmt in body[:-1]:
                lost = (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)
                        and getattr(stmt.value.func, "id", None) == "show_source")
                assert not lost, (f"cell {cell.get('id')}: show_source on line {stmt.lineno} is not the "
                                  f"last line, so nothing is shown; end the cell with it or display() it")

    def test_readers_see_no_test_machinery_and_no_sideways_scrolling(self, nb_path):
        """nbval markers are cell tags, never comments in code a reader copies; no code line is
        wider than the code column of the site (88 characters)."""
        for cell in code_cells(load(nb_path)):
            source = "".join(cell["source"])
            assert "NBVAL" not in source, source[:200]
            wide = [line for line in source.splitlines() if len(line) > 88]
            assert not wide, wide

    def test_printed_outputs_fit_the_page(self, nb_path):
        """Printed text (print, a value's repr) keeps to the same 88 characters a line as the code,
        so no output scrolls sideways on the site either; rendered outputs (the package's source
        shown by show_source, figures) are not text the chapter prints."""
        from tokvec.course.display import PAGE_WIDTH

        for cell in code_cells(load(nb_path)):
            for out in cell["outputs"]:
                data = out.get("data", {})
                if out["output_type"] == "stream":
                    text = "".join(out["text"])
                elif "text/plain" in data and not set(data) & {"text/markdown", "text/html", "image/png"}:
                    text = "".join(data["text/plain"])
                else:
                    continue
                wide = [line for line in text.splitlines() if _display_width(line) > PAGE_WIDTH]
                assert not wide, f"cell {cell.get('id')}: print it to fit (tokvec.course.fit): {wide[0][:100]}"

    def test_no_errors_machine_paths_or_huge_outputs_are_stored(self, nb_path):
        cells = code_cells(load(nb_path))
        for cell in cells:
            for out in cell["outputs"]:
                assert out["output_type"] != "error", "".join(cell["source"])
                text = json.dumps(out.get("text", "")) + json.dumps(out.get("data", {}).get("text/plain", ""))
                assert not re.search(r"/(work|tmp|home|root|Users)/", text), text[:200]
        assert nb_path.stat().st_size < 1_000_000

    def test_has_objectives_takeaways_and_three_exercises_with_solutions(self, nb_path):
        md = markdown(load(nb_path))
        if is_appendix(nb_path):
            assert not re.search(r"\{exercise", md), "an appendix has no exercises: they stay in the chapters"
            return
        assert "Learning objectives" in md
        assert "Key takeaways" in md
        exercises = re.findall(r"```\{exercise(?:-start)?\}[^\n]*\n:label: ([\w-]+)", md)
        solutions = re.findall(r"```\{solution(?:-start)?\} ([\w-]+)", md)
        assert len(exercises) >= 3
        assert set(solutions) == set(exercises)

    def test_has_prerequisites(self, nb_path):
        assert "Prerequisites" in markdown(load(nb_path))

    def test_has_a_self_check_with_folded_answers(self, nb_path):
        md = markdown(load(nb_path))
        if is_appendix(nb_path):
            # instead: its opening map names the core chapter it stands beside, as a link
            first = "".join(next(c for c in load(nb_path)["cells"] if c["cell_type"] == "markdown")["source"])
            assert re.search(r"\{doc\}`[^`]*<0\d_\w+>`", first), "link the chapter this appendix extends"
            return
        assert "## Self-check" in md
        section = md.split("## Self-check", 1)[1]
        questions = re.findall(r"^\*\*Question \d+\.\*\*", section, re.M)
        answers = re.findall(r"^```\{dropdown\} Answer\n\*\*\(([a-e])\)\.\*\*", section, re.M)
        assert len(questions) >= 3 and len(answers) == len(questions)

    def test_links_glossary_terms_that_exist(self, nb_path):
        glossary = (ROOT / "glossary.md").read_text(encoding="utf-8")
        terms = {line.strip().lower() for line in glossary.split("```{glossary}", 1)[1].splitlines()
                 if line and not line.startswith((" ", "`"))}
        used = re.findall(r"\{term\}`([^`]+)`", markdown(load(nb_path)))
        assert len(used) >= 3, "link the glossary terms the chapter relies on"
        for use in used:
            name = re.sub(r"^.*<(.+)>$", r"\1", use, flags=re.S).strip().lower()
            assert name in terms, f"{use!r} is not a glossary term"

    def test_every_citation_is_in_the_bibliography(self, nb_path):
        bib = (ROOT / "references.bib").read_text(encoding="utf-8")
        keys = set(re.findall(r"@\w+\{([^,]+),", bib))
        cited = re.findall(r"\{cite(?::\w+)?\}`([^`]+)`", markdown(load(nb_path)))
        assert cited, "a chapter cites its sources"
        for group in cited:
            for key in group.split(","):
                assert key.strip() in keys


def test_spot_the_bug_exercises_exist():
    count = sum(markdown(load(p)).lower().count("spot the bug") for p in NOTEBOOKS)
    assert count >= 5


def test_learning_kit_pages_are_in_the_toc():
    listed = toc_files()
    for page in ("instructors", "glossary", "references", "versions"):
        assert page in listed, page
    guide = (ROOT / "instructors.md").read_text(encoding="utf-8")
    for heading in ("Learning outcomes per chapter", "schedule", "Misconceptions", "Prerequisites",
                    "Publishing your own copy", "make student"):
        assert heading in guide, heading
    for nb in NOTEBOOKS:
        assert f"chapters/{nb.stem}" in guide, f"the instructor guide skips {nb.stem}"


# --- tokvec.course.display: what the chapters use to show code and print messages ---------

def test_show_source_is_the_real_source():
    import inspect

    from tokvec.course import show_source
    from tokvec.text import merge_pair

    shown = show_source(merge_pair)
    assert repr(shown) == inspect.getsource(merge_pair)
    assert shown._repr_markdown_().startswith("```python\ndef merge_pair(")
    with pytest.raises(TypeError, match="at least one"):
        show_source()


def test_fit_wraps_only_long_lines_at_spaces_and_keeps_every_word():
    from tokvec.course import fit

    table = "a   b\n  c"
    assert fit(table) == table                              # short lines keep their spacing
    long = " ".join(f"word{i}" for i in range(40))
    wrapped = fit(long + "\nshort", width=30, indent=2)
    lines = wrapped.splitlines()
    assert all(len(line) <= 30 for line in lines) and len(lines) > 3
    assert lines[-1] == "short" and all(line.startswith("  ") for line in lines[1:-1])
    assert wrapped.split() == (long + " short").split()     # nothing lost, nothing added


def test_error_text_names_the_error_and_indents_under_the_prefix():
    from tokvec.course import error_text

    err = ValueError("x must be positive " * 10)
    text = error_text(err, "rank 3  ")
    lines = text.splitlines()
    assert lines[0].startswith("rank 3  ValueError: x must be positive")
    assert all(len(line) <= 88 for line in lines) and len(lines) == 3
    assert all(line.startswith(" " * 12) for line in lines[1:])


def test_feedback_messages_leave_room_for_a_label():
    from tokvec.course import feedback

    verdict = feedback.on_sinusoidal_table([[0.0] * 8] * 64)
    assert not verdict
    assert all(len(line) <= 88 - 12 for line in str(verdict).splitlines())
    assert str(verdict).startswith("Not yet: ")


# --- chapter pointers --------------------------------------------------------------------------

PROSE_PAGES = ["intro.md", "notation.md", "glossary.md", "instructors.md", "rubrics.md", "sources.md",
               "versions.md", "accessibility.md"]
_LINKED = re.compile(r"\{(?:doc|ref|numref)\}`[^`]*`")
_POINTER = re.compile(r"(?<!-)\b[Cc]hapters? \d|\b[Ss]ections? \d+\.\d|\b[Cc]h\. ?\d")  # not an option: --chapters 05_x


def plain_pointers(text: str) -> list[str]:
    """Chapter pointers left as plain text: "chapter 5", "chapters 3", "section 10.1", "ch. 4"
    outside a {doc}/{ref} role (the link text may say "chapter 5")."""
    text = _LINKED.sub(" ", text)
    return [text[max(0, m.start() - 40):m.end() + 20].replace("\n", " ") for m in _POINTER.finditer(text)]


def test_plain_pointers_are_found_and_links_are_not():
    assert plain_pointers("as chapter 5 shows; Section 10.1; ch. 4")
    assert not plain_pointers("as {doc}`chapter 5 <05_positional_embedding>` shows, and "
                              "chapters {doc}`3 <03_embedding_matrix>` to {doc}`9 <09_x>`")


@pytest.mark.parametrize("page", [p.name for p in NOTEBOOKS] + PROSE_PAGES)
def test_every_chapter_pointer_is_a_link(page):
    """A pointer to a chapter is a {doc} or {ref} link, so it leads to the page the site numbers
    that way (the glossary's plain "Chapter 1.1" led to chapter 1's Overview)."""
    path = ROOT / "chapters" / page if page.endswith(".ipynb") else ROOT / page
    text = markdown(load(path)) if page.endswith(".ipynb") else path.read_text(encoding="utf-8")
    found = plain_pointers(text)
    assert not found, f"{len(found)} plain pointers, e.g. {found[:5]}"


def test_the_package_names_chapters_as_the_site_numbers_them():
    """Docstrings and messages name a core chapter by the number the site prints (1-9) and a depth
    page by its title: never "chapter 1.1", "10.1" or a depth page's number."""
    from tokvec.course.student import site_numbers

    core = set(site_numbers(yaml.safe_load((ROOT / "_toc.yml").read_text())).values())
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    core = {str(n) for n in range(1, len(next(p for p in toc["parts"] if p.get("numbered"))["chapters"]) + 1)}
    bad = []
    for path in sorted((ROOT / "src" / "tokvec").rglob("*.py")):
        for m in re.finditer(r"(?<!-)\b[Cc]hapters? (\d+(?:\.\d+)?)", path.read_text(encoding="utf-8")):
            if m.group(1) not in core:
                bad.append(f"{path.relative_to(ROOT)}: {m.group(0)}")
    assert not bad, bad[:10]


# --- maps ----------------------------------------------------------------------------------------

_MAP_ITEM = re.compile(r'^- (?:"([^"]+)"(?: and "([^"]+)")?|\{ref\}`([^`<]+)`)', re.M)


@pytest.mark.parametrize("nb_path", NOTEBOOKS, ids=lambda p: p.name)
def test_a_long_page_opens_with_a_map_of_its_sections(nb_path):
    """A page of more than 3,000 words a reader sees opens with a map: a list of its sections,
    each named in quotes or linked, in one of its first Markdown cells. Every section the map
    names is a heading of the page (or a label on it), so the map cannot drift from the page."""
    from tokvec.course.reading import page_minutes

    nb = load(nb_path)
    opening = "\n".join("".join(c["source"]) for c in [c for c in nb["cells"] if c["cell_type"] == "markdown"][:4])
    items = _MAP_ITEM.findall(opening)
    if page_minutes(nb_path).prose_words > 3000:
        assert len(items) >= 3, "a page this long opens with a map: '- \"Section\": ...' or '- {ref}`label`: ...'"
    text = markdown(nb)
    headings = {h.strip() for h in re.findall(r"^#{2,3} +(.+)$", text, re.M)}
    labels = set(re.findall(r"^\(([\w-]+)\)=$", text, re.M))
    for first, second, label in items:
        for name in filter(None, (first, second)):
            assert name in headings, f"the map names {name!r}, which is not a heading of the page"
        if label:
            assert label.strip() in labels, f"the map links {label!r}, which is not a label of the page"
