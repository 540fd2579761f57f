"""Tests of tokvec.course.reading: the reading time of the course's core path, rule by rule."""

import re
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from tokvec.course.reading import core_path, main, measure, nested_pages, page_minutes, path_minutes

ROOT = Path(__file__).resolve().parents[1]
PNG = "iVBORw0KGgo="  # any image/* data is a plot


def prose(n: int) -> str:
    return " ".join(["word"] * n)


def code(n: int) -> str:
    """``n`` non-blank lines of code, with blank lines between them that do not count."""
    return "\n\n".join(f"x{i} = {i}" for i in range(n))


def stream(n: int):
    return new_output("stream", name="stdout", text="".join(f"line {i}\n" for i in range(n)))


def result(n: int):
    return new_output("execute_result", data={"text/plain": "\n".join(f"row {i}" for i in range(n))}, execution_count=1)


def plot():
    return new_output("display_data", data={"image/png": PNG, "text/plain": "<Figure>"})


def notebook(tmp_path: Path, *cells, name: str = "page.ipynb") -> Path:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(new_notebook(cells=list(cells)), path)
    return path


def tagged(cell, *tags):
    cell.metadata["tags"] = list(tags)
    return cell


# --- what a page costs -----------------------------------------------------------------------------------------------

def test_visible_prose_is_180_words_a_minute(tmp_path):
    t = page_minutes(notebook(tmp_path, new_markdown_cell(prose(200)), new_markdown_cell(prose(160))))
    assert t.prose_words == 360
    assert t.minutes == pytest.approx(360 / 180)  # 2.0 min


def test_code_is_4_s_a_non_blank_line(tmp_path):
    t = page_minutes(notebook(tmp_path, new_code_cell(code(10)), new_code_cell(code(5) + "\n\n   \n")))
    assert t.code_lines == 15
    assert t.minutes == pytest.approx(15 * 4 / 60)  # 1.0 min


def test_output_is_2_s_a_line_and_a_plot_10_s(tmp_path):
    cell = new_code_cell("", outputs=[stream(20), result(10), plot(), plot(), plot()])
    t = page_minutes(notebook(tmp_path, cell))
    assert (t.code_lines, t.output_lines, t.plots) == (0, 30, 3)
    assert t.minutes == pytest.approx(30 * 2 / 60 + 3 * 10 / 60)  # 1.0 + 0.5 min


def test_all_rules_add_up(tmp_path):
    t = page_minutes(notebook(tmp_path, new_markdown_cell(prose(180)),
                              new_code_cell(code(15), outputs=[stream(30), plot()])))
    assert t.minutes == pytest.approx(1.0 + 1.0 + 1.0 + 10 / 60)


def test_folded_directives_and_details_are_not_counted(tmp_path):
    md = "\n".join([
        prose(10),
        "```{exercise}", ":label: ex-1", prose(100), "```",
        "````{solution} ex-1", prose(100), "```{note}", "nested", "```", prose(100), "````",
        ":::{dropdown} Open me", prose(100), ":::{note}", "nested", ":::", prose(100), ":::",
        "```{toggle}", prose(100), "```",
        "```{admonition} A note folded", ":class: dropdown", prose(100), "```",
        "<details><summary>More</summary>", prose(100), "</details>",
        "```{exercise-start}", ":label: ex-2", "```", prose(100), "```{exercise-end}", "```",
        "```{solution-start} ex-2", "```", prose(100), "```{solution-end}", "```",
        prose(20),
        "```{note}", prose(30), "```",  # an open admonition is read
    ])
    t = page_minutes(notebook(tmp_path, new_markdown_cell(md)))
    assert t.prose_words == 10 + 20 + 30
    assert t.minutes == pytest.approx(60 / 180)


def test_hidden_cells_sources_and_outputs_are_not_counted(tmp_path):
    t = page_minutes(notebook(
        tmp_path,
        tagged(new_code_cell(code(50), outputs=[stream(50), plot()]), "hide-cell"),
        tagged(new_code_cell(code(50), outputs=[stream(50), plot()]), "remove-cell"),
        tagged(new_code_cell(code(50), outputs=[stream(3)]), "hide-input"),  # its output is read
        tagged(new_code_cell(code(50), outputs=[result(4)]), "remove-input"),
        tagged(new_code_cell(code(6), outputs=[stream(50), plot()]), "hide-output"),  # its source is read
        tagged(new_code_cell(code(9), outputs=[stream(50), plot()]), "remove-output"),
    ))
    assert (t.code_lines, t.output_lines, t.plots) == (6 + 9, 3 + 4, 0)
    assert t.minutes == pytest.approx(15 * 4 / 60 + 7 * 2 / 60)


def test_exercises_and_self_check_sections_are_skipped_until_the_next_heading(tmp_path):
    t = page_minutes(notebook(
        tmp_path,
        new_markdown_cell("# Title\n" + prose(9)),                        # 1 + 9 words
        new_markdown_cell("## Exercises\n" + prose(100)),
        new_code_cell(code(30), outputs=[stream(30), plot()]),
        new_markdown_cell("### A deeper heading\n" + prose(100)),         # level 3: still skipped
        new_markdown_cell("## Going on\n" + prose(18)),                   # 2 + 18 words
        new_code_cell(code(15)),
        new_markdown_cell("## Self-check\n" + prose(100)),
        new_markdown_cell("# Check your understanding\n" + prose(100)),
        new_code_cell(code(30)),
        new_markdown_cell("## Summary\n" + prose(150)),                   # 1 + 150 words
        new_markdown_cell("### Exercises\n" + prose(9)),                  # level 3 does not skip: 1 + 9
    ))
    assert t.prose_words == 10 + 20 + 151 + 10
    assert (t.code_lines, t.output_lines, t.plots) == (15, 0, 0)
    assert t.minutes == pytest.approx(191 / 180 + 1.0)


def test_drawn_images_are_distinct_and_printed_images_are_plots(tmp_path):
    md = "\n".join([
        "![a tokenizer](../figures/bpe.svg)", "![the same, again](../figures/bpe.svg)",
        "```{figure} ../figures/table.png", ":width: 80%", "The table.", "```",
        '<img src="../figures/heads.png" alt="heads">',
        "```{dropdown} folded", "![not seen](../figures/hidden.png)", "```",
    ])
    t = page_minutes(notebook(tmp_path, new_markdown_cell(md), new_code_cell("plot()", outputs=[plot()])))
    assert t.drawn == {"../figures/bpe.svg", "../figures/table.png", "../figures/heads.png"}
    assert t.plots == 1


def test_a_markdown_page_counts_its_visible_prose(tmp_path):
    page = tmp_path / "page.md"
    # 1 word of heading, 356 of prose and 3 in the image's text and path ("x", "figures", "x.png")
    page.write_text("# Page\n" + prose(356) + "\n:::{dropdown} more\n" + prose(500) + "\n:::\n"
                    + "![x](figures/x.png)\n", encoding="utf-8")
    t = page_minutes(page)
    assert (t.prose_words, t.code_lines, t.output_lines, t.plots) == (360, 0, 0, 0)
    assert t.minutes == pytest.approx(2.0)
    assert t.drawn == {"figures/x.png"}


# --- the core path ---------------------------------------------------------------------------------------------------

TOC = """\
format: jb-book
root: intro
parts:
  - caption: Getting started
    chapters:
      - file: notation
  - caption: Basics
    numbered: true
    chapters:
      - file: chapters/01_a
        sections:
          - file: chapters/01b_a_more
      - file: chapters/02_b
  - caption: More
    numbered: true
    chapters:
      - file: chapters/03_c
  - caption: {depth}
    numbered: true
    chapters:
      - file: chapters/04_d
        sections:
          - file: chapters/04b_d_more
  - caption: Reference
    chapters:
      - file: glossary
"""


def book(tmp_path: Path, depth: str = "Going further") -> Path:
    (tmp_path / "_toc.yml").write_text(TOC.format(depth=depth), encoding="utf-8")
    minutes = {"01_a": 1, "01b_a_more": 2, "02_b": 3, "03_c": 4, "04_d": 50, "04b_d_more": 60}
    for name, m in minutes.items():  # m minutes of prose each
        notebook(tmp_path, new_markdown_cell(prose(180 * m)), name=f"chapters/{name}.ipynb")
    (tmp_path / "notation.md").write_text(prose(900), encoding="utf-8")
    return tmp_path


def test_the_depth_caption_ends_the_core_path(tmp_path):
    files, depth_marked = core_path(book(tmp_path))
    assert files == ["chapters/01_a", "chapters/01b_a_more", "chapters/02_b", "chapters/03_c"]
    assert depth_marked


def test_without_a_depth_caption_every_numbered_part_is_core(tmp_path):
    files, depth_marked = core_path(book(tmp_path, depth="Attention"))
    assert files[-2:] == ["chapters/04_d", "chapters/04b_d_more"]
    assert not depth_marked


def test_nested_sections_are_reported(tmp_path):
    assert nested_pages(book(tmp_path)) == ["chapters/01b_a_more", "chapters/04b_d_more"]


def test_measure_sums_the_core_pages(tmp_path):
    result = measure(book(tmp_path))
    assert [p["file"] for p in result["pages"]] == ["chapters/01_a", "chapters/01b_a_more", "chapters/02_b",
                                                   "chapters/03_c"]
    assert [p["minutes"] for p in result["pages"]] == pytest.approx([1, 2, 3, 4])
    assert result["total_minutes"] == pytest.approx(10.0)
    assert result["depth_marked"] and result["missing"] == []
    assert result["nested"] == ["chapters/01b_a_more", "chapters/04b_d_more"]


def test_the_cli_exits_1_over_the_limit_and_0_under_it(tmp_path, capsys):
    root = str(book(tmp_path))
    assert main(["--root", root, "--max-min", "9.5"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 5 and out[0].startswith("chapters/01_a") and "1.0 min" in out[0]
    assert out[-1].startswith("FAILED: core path 4 pages, 10 min")
    assert main(["--root", root, "--max-min", "10.5"]) == 0
    last = capsys.readouterr().out.splitlines()[-1]
    assert last.startswith("core path 4 pages, 10 min") and "nested" in last


# --- the real book ---------------------------------------------------------------------------------------------------

def test_the_real_core_path_is_measured():
    files, _ = core_path(ROOT)
    assert files, "_toc.yml lists no numbered part"
    for f in files:
        assert (ROOT / (f + ".ipynb")).exists() or (ROOT / (f + ".md")).exists(), f
    result = measure(ROOT)
    assert result["missing"] == []
    assert [p["file"] for p in result["pages"]] == files
    assert all(p["minutes"] > 0 for p in result["pages"])
    assert result["total_minutes"] == pytest.approx(sum(p["minutes"] for p in result["pages"]))


#: Minutes the core path keeps free for the pipeline chapter (text file -> windows -> DataLoader ->
#: (B, T, d)) until that chapter is in it; then the whole 210 apply.
PIPELINE_ROOM = 25


def test_the_core_path_is_read_in_at_most_210_minutes():
    """The course's promise: raw text to the input tensor in an afternoon, by the rules above."""
    result = measure(ROOT)
    assert result["depth_marked"], "mark where depth begins with a part caption (Going further, ...)"
    assert result["nested"] == [], "a page nested under a chapter is numbered after its sections"
    has_pipeline = any("DataLoader" in p["path"].read_text(encoding="utf-8") for p in result["pages"])
    limit = 210 if has_pipeline else 210 - PIPELINE_ROOM
    table = "\n".join(f"  {p['file']}: {p['minutes']:.1f} min" for p in result["pages"])
    assert result["total_minutes"] <= limit, f"{result['total_minutes']:.0f} min > {limit}:\n{table}"


def test_reading_paths_count_each_page_once(tmp_path):
    for name, words in (("a", 180), ("b", 360)):
        notebook(tmp_path / "chapters", new_markdown_cell(prose(words)), name=f"{name}.ipynb")
    (tmp_path / "_toc.yml").write_text("root: intro\nparts:\n  - caption: Core\n    numbered: true\n"
                                       "    chapters:\n      - file: chapters/a\n")
    got = path_minutes(tmp_path, {"core": ["core"], "both": ["core", "chapters/a", "chapters/b"]})
    assert got == pytest.approx({"core": 1.0, "both": 3.0})
    with pytest.raises(FileNotFoundError, match="chapters/c"):
        path_minutes(tmp_path, {"x": ["chapters/c"]})


def test_the_intro_quotes_the_measured_reading_paths():
    """The intro's table of reading paths gives each path's minutes, rounded to 5, as measured."""
    intro = (ROOT / "intro.md").read_text(encoding="utf-8")
    for name, minutes in path_minutes(ROOT).items():
        m = re.search(rf"^\|\s*{re.escape(name)}\s*\|.*\|\s*about (\d+) min\s*\|\s*$", intro, re.M | re.I)
        assert m, f"the intro has no row '| {name} | ... | about N min |'"
        assert int(m.group(1)) == 5 * round(minutes / 5), f"{name}: the intro says {m.group(1)}, measured {minutes:.0f}"
