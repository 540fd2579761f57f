"""Every figure of the chapters can be read without its picture and without its colours (WCAG 2.1 AA).

Over every notebook in ``chapters/``, without running any of them:

1. Every code cell with an image output (a plot) has alt text, ``metadata.mystnb.image.alt``, of at
   least 12 words that is not a file name and is not a copy of its caption; every Markdown image
   has alt text of at least 5 words that is not a file name.
2. A static (ast) read of each plot cell's source: where one axes shows more than one series, each
   series has a cue other than its colour. A series is a call of ``plot``, ``semilogx``,
   ``semilogy``, ``loglog``, ``step``, ``errorbar`` or ``scatter`` (a line or its markers), or of
   ``bar``/``barh``. Its cue is ``linestyle``/``ls``, ``marker``, ``dashes``, a format string that
   sets a line style or marker (``"o"``, ``"--"``, ``"k:"``) or, for bars, ``hatch``. A call inside
   a ``for`` loop whose colour changes with the loop (a colour the loop sets, or none given, so
   matplotlib's colour cycle picks one) draws a series per pass, so its cue must change with that
   loop too (name a variable the loop sets); a loop that changes the axes itself (``for ax in
   axes``) draws one series per axes.
   Of the series on one axes at most one may go without a cue: the plain solid line. Reference
   lines (``axhline``, ``axvline``) and shaded bands (``fill_between``) are not series.

What the static check cannot see: whether the cues it finds differ in value (two series both given
``"--"``, a dict of styles whose entries are equal), cues passed through ``**kwargs``, series drawn
by helper functions, by comprehensions or by pandas, and colour scales of heatmaps (those need a
colour bar and a colour map that reads in greyscale, which this file does not check). Whether the alt
text says what the plot shows is for a reader; this file checks only that it is there and not a stub.
"""

import ast
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "chapters").glob("*.ipynb"))
MD_IMAGE = re.compile(r"!\[(?P<alt>[^\]]*)\]\((?P<src>[^)\s]+)[^)]*\)")
FILE_NAME = re.compile(r"\S+\.(svg|png|jpe?g|gif|webp|pdf)", re.I)

LINES = {"plot", "semilogx", "semilogy", "loglog", "step", "errorbar", "scatter"}
BARS = {"bar", "barh"}
CUE_KEYWORDS = {"line": {"linestyle", "ls", "marker", "dashes", "fmt"}, "bar": {"hatch"}}
# A format string's style or marker, once a colour ("C1", "k") is taken off: "o", "--", "s:".
FORMAT_CUE = re.compile(r"[-:.,ov^<>1-4spP*hH+xXDd|_]")


def _cells(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def _plot_cells(path: Path) -> list[dict]:
    return [c for c in _cells(path) if c["cell_type"] == "code"
            and any("image/png" in o.get("data", {}) for o in c.get("outputs", []))]


PLOT_CELLS = [(path, cell) for path in NOTEBOOKS for cell in _plot_cells(path)]
PLOT_IDS = [f"{path.stem}:{cell['id']}" for path, cell in PLOT_CELLS]


def test_the_chapters_have_plots_to_check():
    assert len(PLOT_CELLS) >= 25, PLOT_IDS


# --- 1. alt text ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("path", "cell"), PLOT_CELLS, ids=PLOT_IDS)
def test_every_plot_has_alt_text_that_says_what_it_shows(path, cell):
    mystnb = cell["metadata"].get("mystnb", {})
    alt = mystnb.get("image", {}).get("alt", "").strip()
    caption = mystnb.get("figure", {}).get("caption", "").strip()
    assert len(alt.split()) >= 12, f"{path.name} {cell['id']}: mystnb.image.alt is missing or too short: {alt!r}"
    assert not FILE_NAME.search(alt), f"{path.name} {cell['id']}: the alt text names a file: {alt!r}"
    assert alt != caption, f"{path.name} {cell['id']}: the alt text repeats the caption; say what the plot shows"


MARKDOWN_IMAGES = [(path, cell["id"], m["src"], m["alt"].strip())
                   for path in NOTEBOOKS for cell in _cells(path) if cell["cell_type"] == "markdown"
                   for m in MD_IMAGE.finditer("".join(cell["source"]))]


def test_the_chapters_have_markdown_images_to_check():
    assert len(MARKDOWN_IMAGES) >= 20, MARKDOWN_IMAGES


@pytest.mark.parametrize(("path", "cell_id", "src", "alt"), MARKDOWN_IMAGES,
                         ids=[f"{p.stem}:{c}:{Path(s).stem}" for p, c, s, _ in MARKDOWN_IMAGES])
def test_every_markdown_image_has_alt_text_that_says_what_it_shows(path, cell_id, src, alt):
    assert len(alt.split()) >= 5, f"{path.name} {cell_id}: the alt text of {src} is too short: {alt!r}"
    assert not FILE_NAME.search(alt), f"{path.name} {cell_id}: the alt text of {src} names a file: {alt!r}"


# --- 2. no series told apart by colour alone -----------------------------------------------------------------------

def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _set_by(loop: ast.For) -> set[str]:
    """The names a loop changes on each pass: its targets and whatever its body assigns."""
    names = set()
    for node in ast.walk(loop):                         # the loop itself, then its body
        if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign | ast.For):
            for target in (node.targets if isinstance(node, ast.Assign) else [node.target]):
                names |= _names(target)
    return names


def _cues(call: ast.Call, kind: str) -> list[ast.AST]:
    """The expressions in a call that set a cue other than colour."""
    cues = [k.value for k in call.keywords if k.arg in CUE_KEYWORDS[kind]]
    if kind == "line" and call.func.attr != "scatter":
        for i, arg in enumerate(call.args):
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                if FORMAT_CUE.search(re.sub(r"^(C\d+|[bgrcmykw])", "", arg.value)):
                    cues.append(arg)
            elif i == 2 and call.func.attr != "errorbar" and isinstance(arg, ast.Name | ast.Subscript):
                cues.append(arg)                     # plot(x, y, fmt): a format string held in a variable
    return cues


def colour_only_series(source: str) -> list[str]:
    """The series in a cell's source that only their colour tells apart, each as a line of the report."""
    tree = ast.parse("\n".join(line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))))
    loops: dict[ast.AST, list[ast.For]] = {}           # each call -> the for loops around it, outermost first

    def visit(node, around):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Call):
                loops[child] = around
            visit(child, [*around, child] if isinstance(child, ast.For) else around)

    visit(tree, [])
    problems, axes = [], {}
    for call, around in loops.items():
        if not (isinstance(call.func, ast.Attribute) and call.func.attr in LINES | BARS):
            continue
        kind = "bar" if call.func.attr in BARS else "line"
        receiver = ast.unparse(call.func.value)
        cues = _cues(call, kind)
        cue_names = set().union(*map(_names, cues))
        per_axes = [loop for loop in around if _names(call.func.value) & _set_by(loop)]
        colour = [k.value for k in call.keywords if k.arg in {"color", "c"}]
        repeated = [loop for loop in around if loop not in per_axes
                    and (not colour or _names(colour[0]) & _set_by(loop))]
        where = f"line {call.lineno}: {receiver}.{call.func.attr}"
        for loop in repeated:
            if not cue_names & _set_by(loop):
                problems.append(f"{where}, in `for {ast.unparse(loop.target)} in ...`, "
                                f"has no {'hatch' if kind == 'bar' else 'line style or marker'} that changes with it")
        group = axes.setdefault((receiver, per_axes[-1] if per_axes else None, kind), [])
        group.append((where, bool(cues), bool(repeated)))
    for group in axes.values():
        plain = [where for where, cued, repeated in group if not cued and not repeated]
        if len(group) > 1 and len(plain) > 1:
            problems += [f"{where}: one of {len(plain)} series on one axes with no cue but colour" for where in plain]
    return problems


@pytest.mark.parametrize(("path", "cell"), PLOT_CELLS, ids=PLOT_IDS)
def test_no_plot_tells_its_series_apart_by_colour_alone(path, cell):
    problems = colour_only_series("".join(cell["source"]))
    assert not problems, (f"{path.name} {cell['id']}: give each series a line style, marker or hatch "
                          "(and say it in the alt text and caption):\n" + "\n".join(problems))


@pytest.mark.parametrize(("source", "found"), [
    ("for c in 'rb':\n    ax.plot(x, y, color=c)", 1),                                 # a loop, colour only
    ("for c, s in zip('rb', '-:'):\n    ax.plot(x, y, color=c, ls=s)", 0),            # its style changes with it
    ("for s in '-:':\n    for c in 'rb':\n        ax.plot(x, y, color=c, ls=s)", 1),  # not with the inner loop
    ("for ax, c in zip(axes, 'rb'):\n    ax.plot(x, y, color=c)", 0),                 # one series per axes
    ("ax.plot(x, y, color='r')\nax.plot(x, z, color='b')", 2),                        # two plain solid lines
    ("ax.plot(x, y, color='r')\nax.plot(x, z, 'b--')\nax.axhline(0)", 0),             # one of them dashed
    ("ax.plot(x, y, 'C1')\nax.plot(x, z, 'b')", 2),                                   # format strings of colour only
    ("for h in range(8):\n    ax.plot(w[h])", 1),                                        # the colour cycle only
    ("for p in points:\n    ax.plot(p.x, p.y, 'o', color='k')", 0),                    # one series, point by point
    ("for k in range(2):\n    ax.barh(y + k, w[k], color=c[k])", 1),                 # bars: colour only
    ("for k in range(2):\n    ax.barh(y + k, w[k], color=c[k], hatch=h[k])", 0),     # bars with hatching
    ("left.plot(x, y)\nright.plot(x, y)", 0),                                         # two axes, one series each
])
def test_the_static_check_finds_colour_only_series(source, found):
    assert len(colour_only_series(source)) == found, colour_only_series(source)
