"""The student notebooks have no solutions and render in any Jupyter.

Each chapter's copy is generated from the filled chapter (the single source). Its markdown must
be plain Jupyter Markdown: no MyST directive or role left, every self-check answer folded in
``<details>``, every exercise statement kept under its "Exercise N (label)" heading. That the
handout (``student/``, these notebooks plus nbgrader's test cells) runs top to bottom with no
exercise done, every TODO cell printing that it is not done yet, is tested in
``tests/test_grading.py``, where it is graded.
"""

import base64
import re
from functools import cache
from pathlib import Path

import nbformat
import pytest

from tokvec.course.student import (
    NOT_DONE,
    TODO_TAG,
    Context,
    attach_figures,
    main,
    myst_to_markdown,
    read_bib,
    student_notebook,
)

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = sorted((ROOT / "chapters").glob("*.ipynb"))
md, code = nbformat.v4.new_markdown_cell, nbformat.v4.new_code_cell

# MyST left in Markdown: a directive fence (```{name} or :::{name}), a role ({name}`...`, but not
# `\p{L}` in a regular expression), an option line, a (label)= target.
MYST = re.compile(r"^(`{3,}|:{3,})\{|(?<![\w\\])\{[a-z][\w:.-]*\}`|^:(label|class|open|name):|^\([\w.:-]+\)=\s*$", re.M)
_DROPDOWN = re.compile(r"^```\{dropdown\}[^\n]*\n(.*?)^```[ \t]*$", re.M | re.S)
_SOLUTION = re.compile(r"```\{solution-start\}.*?```\{solution-end\}[^\n]*\n```", re.S)
_STATEMENT = re.compile(r"```\{exercise\}\n:label: (?P<a>\S+)\n(?P<body_a>.*?)^```[ \t]*$"
                        r"|```\{exercise-start\}\n:label: (?P<b>\S+)\n```\n(?P<body_b>.*?)```\{exercise-end\}",
                        re.M | re.S)


@cache
def _contexts():
    return Context.for_folder(ROOT / "chapters")


@cache
def _generated(path: Path):
    source = nbformat.read(path, as_version=4)
    return source, student_notebook(source, _contexts()[path.stem])


def _markdown(nb, *, code_marker=None) -> str:
    return "\n\n".join(c.source if c.cell_type == "markdown" else code_marker for c in nb.cells
                       if c.cell_type == "markdown" or code_marker is not None)


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.split("\n") if line.strip()]


# --- the format, on small notebooks ----------------------------------------------------------

def test_cli_writes_one_student_notebook_per_chapter(tmp_path, capsys):
    assert main([str(ROOT / "chapters"), str(tmp_path)]) == 0
    assert sorted(p.name for p in tmp_path.glob("*.ipynb")) == [p.name for p in CHAPTERS]
    assert "TODO cells" in capsys.readouterr().out


def test_words_and_code_solutions_become_the_right_todo_cells():
    nb = nbformat.v4.new_notebook(cells=[
        code("from collections import OrderedDict"),
        md("Intro\n\n```{exercise}\n:label: a\nDo A.\n```\n\n```{solution-start} a\n:class: dropdown\n```\n\nSay X."
           "\n\n```{solution-end}\n```\n\n```{exercise}\n:label: b\nDo B.\n```\n\n```{solution-start} b\n"
           ":class: dropdown\n```"),
        code("from collections import Counter, OrderedDict\nsecret = Counter('42')"),
        md("Because the counts say so.\n\n```{solution-end}\n```\n\n```{exercise-start}\n:label: c\n```\n\nDo C."
           "\n\n```{exercise-end}\n```\n\n```{solution-start} c\n:class: dropdown\n```"),
        code("import math\nmath.pi"),
        md("```{solution-end}\n```\n\nAfter."),
        code("print('kept')", outputs=[nbformat.v4.new_output("stream", text="kept\n")], execution_count=3),
    ])
    out = student_notebook(nb)
    kinds = [(c.cell_type, c.metadata.get("tags", [])) for c in out.cells]
    assert kinds == [("code", []), ("markdown", []), ("markdown", [TODO_TAG]),         # a: words only
                     ("markdown", []), ("code", [TODO_TAG]), ("markdown", [TODO_TAG]),  # b: code and words
                     ("markdown", []), ("code", [TODO_TAG]),                            # c: code only
                     ("markdown", []), ("code", [])]
    text = "\n".join(c.source for c in out.cells)
    assert "Say X" not in text and "secret" not in text and "Because" not in text and "math.pi" not in text
    assert "Do A." in text and "Do B." in text and "Do C." in text and "After." in text
    assert "**Exercise 1 (a)**" in text and "**Exercise 3 (c)**" in text
    assert out.cells[-1].outputs == [] and out.cells[-1].execution_count is None
    todo_b, todo_c = out.cells[4].source, out.cells[7].source
    # the solution's imports stay, less what the notebook imported already
    assert "from collections import Counter\n" in todo_b and "OrderedDict" not in todo_b
    assert "import math\n" in todo_c
    assert "*Your answer" in out.cells[2].source and "*Your answer" in out.cells[5].source
    for source in (todo_b, todo_c):            # an unanswered TODO cell runs, and says so
        printed = []
        exec(compile(source, "<todo>", "exec"), {"print": printed.append})  # noqa: S102 - our own stub
        assert NOT_DONE in printed[0]


def test_unclosed_solution_is_an_error():
    nb = nbformat.v4.new_notebook(cells=[md("```{solution-start} x\n```\n\nopen")])
    with pytest.raises(ValueError, match="never closed"):
        student_notebook(nb)


def test_read_bib_names_authors_and_year():
    bib = read_bib(r"""
        @article{one, author = {Gage, Philip}, title = {A {New} One}, year = {1994}}
        @book{two, author = {Kudo, Taku and Richardson, John}, year = 2018}
        @misc{org, author = {{The Unicode Consortium}}, year = {2024}}
        @misc{many, author = {Manning, C. and Raghavan, P. and Sch{\"u}tze, H.}, year = {2008}}
        @misc{others, author = {Paszke, Adam and others}, year = {2019}}
        @misc{accent, author = {Yergeau, Fran\c{c}ois and Kaiser, {\L}ukasz}, year = {2003}}
        @misc{first, author = {Mary Phuong}, year = {2022}}
    """)
    assert bib == {"one": "Gage (1994)", "two": "Kudo and Richardson (2018)", "org": "The Unicode Consortium (2024)",
                   "many": "Manning et al. (2008)", "others": "Paszke et al. (2019)",
                   "accent": "Yergeau and Kaiser (2003)", "first": "Phuong (2022)"}


def test_myst_becomes_plain_markdown():
    ctx = Context(exercises={"ex-a": "Exercise 5.2"}, references={"vaswani": "Vaswani et al. (2017)"},
                  docs={"02_vocabulary": "*Vocabulary* (chapter 2)", "../notation": "*Notation*"}, chapter="5")
    text = myst_to_markdown(
        "(sec-x)=\n# Title\n\nA {term}`token <Token>`, a {term}`UTF-8`, {cite:t}`vaswani` and {cite}`vaswani,nokey`.\n"
        "See {doc}`02_vocabulary`, Chapter 2 ({doc}`02_vocabulary`), {doc}`the page <../notation>` and exercise "
        "{ref}`ex-a`; {numref}`Figure %s <fig-a>`. Math $W_{p}$ stays; so does `\\p{L}` and `{term}`.\n\n"
        "```python\nx = '{cite}`kept`'\n```\n\n"
        "```{dropdown} Answer\n**(b).** Because $t = 0$.\n```\n\n"
        "```{exercise}\n:label: ex-a\n\nDo it with {term}`care <Care>`.\n```\n\n"
        "```{admonition} Algorithm 1\n:class: note\n\n**Input:** $v$.\n```\n\n```{note}\nMind the gap.\n```", ctx)
    assert not MYST.search(re.sub(r"```python.*?```", "", text, flags=re.S).replace("`{term}`", "")), text
    assert "A token, a UTF-8, Vaswani et al. (2017) and (Vaswani et al., 2017; nokey)." in text
    assert "See *Vocabulary* (chapter 2), Chapter 2 (*Vocabulary*), the page and exercise 5.2; Figure" in text
    assert "$W_{p}$" in text and "`\\p{L}`" in text and "x = '{cite}`kept`'" in text
    assert "<details><summary>Answer</summary>\n\n**(b).** Because $t = 0$.\n\n</details>" in text
    assert "**Exercise 5.2 (ex-a)**\n\nDo it with care." in text
    assert "> **Algorithm 1**\n>\n> **Input:** $v$." in text and "> **Note**\n>\n> Mind the gap." in text
    linked = myst_to_markdown("{doc}`02_vocabulary` and {term}`tokens <Token id>`",
                              Context(docs=ctx.docs, site_url="https://example.org/book/"))
    assert linked == ("[Vocabulary](https://example.org/book/chapters/02_vocabulary.html) (chapter 2) and "
                      "[tokens](https://example.org/book/glossary.html#term-Token-id)")


PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 8        # the signature is what the tests look at


def test_drawn_figures_become_attachments_of_the_cell(tmp_path):
    """A chapter's ![alt](figures/x.svg) becomes ![alt](attachment:x.png) with the PNG in the cell, so
    the figure shows in a downloaded notebook and in Colab, with no network and no figures folder."""
    chapters = tmp_path / "chapters"
    (chapters / "figures").mkdir(parents=True)
    (chapters / "figures" / "steps.png").write_bytes(PNG)
    (chapters / "figures" / "steps.svg").write_text("<svg/>")
    nb = nbformat.v4.new_notebook(cells=[md("# Title\n\n![The steps, drawn.](figures/steps.svg)\n\nText.")])
    nbformat.write(nb, chapters / "01_x.ipynb")
    out = student_notebook(nb, Context.for_folder(chapters)["01_x"])
    cell = out.cells[0]
    assert cell.source == "# Title\n\n![The steps, drawn.](attachment:steps.png)\n\nText."
    assert list(cell.attachments) == ["steps.png"]
    assert base64.b64decode(cell.attachments["steps.png"]["image/png"]) == PNG
    nbformat.validate(out)                            # nbformat's own format for attachments
    # the same image twice is one attachment; an image that is not a drawn figure is left alone
    text, attachments = attach_figures("![a](figures/steps.svg) ![b](./figures/steps.svg) ![c](plot.png)",
                                       chapters / "figures")
    assert text == "![a](attachment:steps.png) ![b](attachment:steps.png) ![c](plot.png)"
    assert list(attachments) == ["steps.png"]
    # without a figures folder (no Context) the Markdown is left as it is
    assert student_notebook(nb).cells[0].source == nb.cells[0].source


def test_a_missing_png_names_the_fix(tmp_path):
    with pytest.raises(FileNotFoundError, match="make figures"):
        attach_figures("![x](figures/nowhere.svg)", tmp_path)


# --- every chapter ---------------------------------------------------------------------------

@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_every_figure_of_a_chapter_is_embedded_in_its_student_notebook(path):
    source, nb = _generated(path)
    shown = re.findall(r"!\[[^\]]*\]\((?:\./)?figures/([\w.-]+)\.svg\)", _markdown(source))
    assert "figures/" not in _markdown(nb), "a figure is still a link to the figures folder"
    embedded = set()
    for cell in nb.cells:
        if cell.cell_type != "markdown":
            continue
        for name in re.findall(r"\(attachment:([\w.-]+)\)", cell.source):
            data = cell.get("attachments", {}).get(name, {}).get("image/png")
            assert data and base64.b64decode(data).startswith(PNG[:8]), f"{name} is not attached to its cell"
            embedded.add(name)
    assert embedded == {f"{name}.png" for name in shown}

@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_student_notebook_is_plain_jupyter_markdown(path):
    source, nb = _generated(path)
    text = _markdown(nb)
    left = [text[max(0, m.start() - 60):m.end() + 40] for m in MYST.finditer(text)]
    assert left == [], f"MyST left in the student notebook: {left}"
    assert "{solution-start}" not in text and "{solution-end}" not in text


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_every_self_check_answer_is_folded(path):
    source, nb = _generated(path)
    answers = _DROPDOWN.findall(_SOLUTION.sub("", _markdown(source)))
    folded = re.findall(r"<details><summary>[^<]*</summary>\n(.*?)</details>", _markdown(nb), re.S)
    assert len(answers) == len(folded) >= (0 if path.name.startswith("appendix_") else 3)
    ctx = _contexts()[path.stem]
    for answer, shown in zip(answers, folded):
        assert _lines(myst_to_markdown(answer, ctx)) == _lines(shown)
    outside = re.sub(r"<details>.*?</details>", "", _markdown(nb), flags=re.S)
    for shown in folded:                       # no answer is also in plain sight
        assert _lines(shown)[0] not in outside


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_every_exercise_statement_is_kept_and_gets_its_todo_cells(path):
    source, nb = _generated(path)
    ctx = _contexts()[path.stem]
    marker = "\x00code\x00"
    statements = [(m.group("a") or m.group("b"), m.group("body_a") or m.group("body_b"))
                  for m in _STATEMENT.finditer(_markdown(source, code_marker=marker))]
    solutions = re.findall(r"```\{solution-start\} (\S+)", _markdown(source))
    # an appendix holds no exercise: they stay in the chapters, so a class's labels do not move
    assert len(statements) == 0 if path.name.startswith("appendix_") else len(statements) >= 3
    assert set(solutions) <= {label for label, _ in statements}
    text = _markdown(nb)
    for label, body in statements:
        assert f"**{ctx.exercises[label]} ({label})**" in text
        for line in _lines("\n".join(myst_to_markdown(part, ctx) for part in body.split(marker))):
            assert line in text, f"exercise {label}: statement line lost: {line!r}"
    for label in solutions:
        todos = [c for c in nb.cells if TODO_TAG in c.metadata.get("tags", []) and label in c.source]
        assert todos, f"exercise {label} has no TODO cell"
        for cell in todos:
            assert cell.cell_type == "markdown" or NOT_DONE in cell.source
    # nothing of a solution is left: the first words of each solution's prose are gone
    for solution in _SOLUTION.findall(_markdown(source)):
        prose = [line for line in _lines(re.sub(r"```\{solution-(start|end)\}[^`]*```", "", solution))
                 if len(line) > 40]
        if prose:
            assert myst_to_markdown(prose[0], ctx).strip() not in text
