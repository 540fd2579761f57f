"""The drawn diagrams: committed as the code draws them, shown where the text needs them.

``tokvec.course.figures`` draws every diagram of the book with matplotlib; ``make figures`` writes
them into ``chapters/figures/`` (an SVG for the site, a PNG for the student notebooks). These tests
check that the committed files are what the module draws today (so a change to a figure, or to the
chapter code whose numbers it shows, cannot land without ``make figures``), that every image a page
shows exists and says in its alt text what it shows, that the core path draws at least ten distinct
diagrams, and that every core chapter opens with its "you are here" copy of the pipeline. That the
images load in a browser, with their alt text, is checked in ``tests/test_site.py``.
"""

import json
import re
from pathlib import Path

import pytest

from tokvec.course import figures
from tokvec.course.reading import core_path, images, measure, page_path

ROOT = Path(__file__).resolve().parents[1]
FIGURES = ROOT / "chapters" / "figures"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
# A Markdown image: ![alt](src)
MD_IMAGE = re.compile(r"!\[(?P<alt>[^\]]*)\]\((?P<src>[^)\s]+)[^)]*\)")
# Alt text that is only a file name (or a path)
FILE_NAME = re.compile(r"\S+\.(svg|png|jpe?g|gif|webp)", re.I)


def _pages() -> dict[Path, str]:
    """Every page of the book with Markdown: its path -> its Markdown (a notebook's Markdown cells)."""
    out = {}
    for path in sorted((ROOT / "chapters").glob("*.ipynb")):
        nb = json.loads(path.read_text(encoding="utf-8"))
        out[path] = "\n\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    for path in sorted(ROOT.glob("*.md")):
        if path.name not in {"README.md"}:
            out[path] = path.read_text(encoding="utf-8")
    return out


PAGES = _pages()


# --- the committed files are what the module draws -------------------------------------------------------------------

@pytest.fixture(scope="module")
def fresh(tmp_path_factory):
    out = tmp_path_factory.mktemp("figures")
    figures.write_all(out)
    return out


def test_committed_svgs_are_byte_for_byte_what_make_figures_draws(fresh):
    stale = [name for name in figures.FIGURES
             if not (FIGURES / f"{name}.svg").is_file()
             or (FIGURES / f"{name}.svg").read_bytes() != (fresh / f"{name}.svg").read_bytes()]
    assert not stale, f"chapters/figures/ is stale for {stale}: run `make figures` (then `make student`)"


def test_every_figure_has_a_png_about_1400_pixels_wide(fresh):
    from PIL import Image

    for name in figures.FIGURES:
        for folder in (fresh, FIGURES):
            png = folder / f"{name}.png"
            assert png.is_file() and png.read_bytes().startswith(PNG_SIGNATURE), f"no PNG for {name} in {folder}"
            with Image.open(png) as image:
                assert 1350 <= image.width <= 1450, (png, image.size)


def test_the_figures_folder_holds_the_module_s_figures_and_nothing_else():
    committed = {p.stem for p in FIGURES.iterdir() if p.suffix in {".svg", ".png"}}
    assert committed == set(figures.FIGURES), f"left over: {committed - set(figures.FIGURES)}"


def test_figures_are_drawn_on_opaque_white_for_light_and_dark_themes(fresh):
    """The site's dark theme shows an SVG on a dark page: the figure brings its own white background."""
    for name in figures.FIGURES:
        svg = (fresh / f"{name}.svg").read_text(encoding="utf-8")
        background = re.search(r'<g id="patch_1">\s*<path d="[^"]*" style="([^"]*)"', svg)
        assert background and "fill: #ffffff" in background.group(1), name
        assert "<dc:date>" not in svg, name                    # deterministic: no timestamp


def test_unknown_figure_names_the_figures():
    with pytest.raises(KeyError, match="pipeline"):
        figures.draw("no-such-figure")
    assert figures.main(["/nonexistent-unused", "no-such-figure"]) == 2


def test_the_command_line_writes_an_svg_and_a_png(tmp_path, capsys):
    assert figures.main([str(tmp_path), "pipeline-ch03"]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pipeline-ch03.png", "pipeline-ch03.svg"]
    assert "pipeline-ch03.svg" in capsys.readouterr().out


def test_every_core_chapter_has_a_you_are_here_copy():
    for n in figures.CHAPTER_STAGES:
        assert f"pipeline-ch{n:02d}" in figures.FIGURES
        assert set(figures.CHAPTER_STAGES[n]) <= set(range(len(figures.STAGES)))


# --- the pages show them ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("path", list(PAGES), ids=lambda p: p.name)
def test_every_image_exists_and_has_alt_text_that_says_what_it_shows(path):
    text = PAGES[path]
    found = {m.group("src"): m.group("alt") for m in MD_IMAGE.finditer(text)}
    assert set(found) == images(text), (
        f"{path.name}: draw figures as Markdown images with alt text, ![what it shows](figures/x.svg)")
    named = {m.group(0) for m in re.finditer(r"(?:chapters/)?figures/[\w.-]+\.svg", text)}
    assert named <= set(found), (
        f"{path.name}: {sorted(named - set(found))} is not read as an image: no [ or ] in its alt text "
        "(the reading-time tool and Markdown stop the alt text at the first ])")
    for src, alt in found.items():
        assert (path.parent / src).is_file(), f"{path.name}: {src} does not exist (run `make figures`?)"
        assert alt.strip(), f"{path.name}: {src} has no alt text"
        assert not FILE_NAME.fullmatch(alt.strip()) and alt.strip() not in {Path(src).name, Path(src).stem}, (
            f"{path.name}: the alt text of {src} names the file; say what the figure shows")
        assert len(alt.split()) >= 3, f"{path.name}: the alt text of {src} is too short to say what it shows"


def _core_pages():
    files, _ = core_path(ROOT)
    return [(file, page_path(ROOT, file)) for file in files]


def test_the_core_path_draws_at_least_ten_distinct_diagrams():
    """Counted by tokvec.course.reading (distinct Markdown images a reader sees); the "you are here"
    copies of the pipeline count once."""
    drawn = set()
    for page in measure(ROOT)["pages"]:
        drawn |= {re.sub(r"^pipeline-ch\d+$", "pipeline", Path(src).stem) for src in page["drawn"]}
    assert len(drawn) >= 10, sorted(drawn)
    assert "pipeline" in drawn


@pytest.mark.parametrize("file", [f for f, _ in _core_pages() if re.match(r"chapters/\d\d_", f)])
def test_every_core_chapter_opens_with_where_it_is_in_the_pipeline(file):
    """Right after the title line, in the title cell: the pipeline with the chapter's step highlighted."""
    number = int(re.match(r"chapters/(\d\d)_", file).group(1))
    nb = json.loads(page_path(ROOT, file).read_text(encoding="utf-8"))
    title = "".join(next(c for c in nb["cells"] if c["cell_type"] == "markdown")["source"])
    m = re.match(r"# [^\n]+\n\n" + MD_IMAGE.pattern, title)
    assert m, f"{file}: the title cell should start '# Title', a blank line, then ![...](figures/pipeline-chNN.svg)"
    assert m.group("src") == f"figures/pipeline-ch{number:02d}.svg", m.group("src")


def test_the_intro_shows_the_whole_pipeline():
    assert "chapters/figures/pipeline.svg" in images(PAGES[ROOT / "intro.md"]), (
        "the intro draws the whole pipeline as a Markdown image the reading-time rules count")
