"""Autograded exercises (nbgrader): the test files, the cells they become, the handout, the grades.

The slow test grades every chapter twice, as ``python -m tokvec.course.grading verify`` does:
the handout answered with the chapter's own solutions must score every point, and the handout
as handed out must score zero, run top to bottom without an error outside the test cells, and
print "not done yet" in every TODO cell. The small tests use a two-exercise chapter of their own.
"""

import ast
import contextlib
import copy
import json
import linecache
import re
from pathlib import Path

import nbformat
import pytest
from conftest import chapter_docs

from tokvec.course.checks import Checks
from tokvec.course.grading import (
    CODE_STUB,
    TEXT_STUB,
    TOKEN,
    WRITTEN_POINTS,
    grade,
    graded_cells,
    main,
    read_tests,
    release,
    solved,
    source_notebooks,
    verdict,
    verify,
)
from tokvec.course.student import TODO_TAG

ROOT = Path(__file__).resolve().parents[1]
# Every notebook, in the toc's reading order; the chapters are those with exercises (an appendix
# holds material moved beside a chapter, and no exercise).
NOTEBOOKS = [ROOT / f"{doc}.ipynb" for doc in chapter_docs()]
CHAPTERS = [p for p in NOTEBOOKS if not p.name.startswith("appendix_")]
md, code = nbformat.v4.new_markdown_cell, nbformat.v4.new_code_cell


# --- Checks: what a student sees ------------------------------------------------------------

def test_checks_report_every_test_and_never_raise(capsys):
    # run as a notebook cell runs (exec), so that pytest does not rewrite the asserts
    cell = """
check = Checks("Exercise 9.9")
with check("passes"):
    assert 1 + 1 == 2
with check("fails with a message"):
    assert False, "the table has 3 rows, not 4"
with check("fails without one"):
    assert 2 < 1
with check("an answer not written yet"):
    undefined_answer_name
with check("an answer that crashes"):
    [][1]
"""
    namespace = {"Checks": Checks}
    linecache.cache["<cell>"] = (len(cell), None, cell.splitlines(True), "<cell>")  # as IPython does
    exec(compile(cell, "<cell>", "exec"), namespace)
    check = namespace["check"]
    check.report()
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "\u2713 passes"
    assert out[1] == "\u2717 fails with a message: the table has 3 rows, not 4"
    assert out[2] == "\u2717 fails without one: this does not hold: assert 2 < 1"
    assert out[3].startswith("\u2717 an answer not written yet: not done yet (name 'undefined_answer_name'")
    assert out[4] == "\u2717 an answer that crashes: IndexError: list index out of range"
    assert out[5] == "Exercise 9.9: 1 of 5 tests pass; the ones marked \u2717 say what to fix."
    assert check.failed == ["fails with a message", "fails without one", "an answer not written yet",
                            "an answer that crashes"]
    with pytest.raises(AssertionError, match=r"Exercise 9.9: 4 of 5 tests fail: fails with a message;"):
        check.require()


def test_checks_require_passes_only_when_every_test_ran_and_passed(capsys):
    check = Checks("E")
    with pytest.raises(AssertionError, match="no test ran"):
        check.require()
    with check("visible"):
        pass
    check.hidden()
    with check("held out"):
        pass
    check.report()
    check.require()
    assert capsys.readouterr().out.splitlines() == ["\u2713 visible", "\u2713 held out (hidden test)",
                                                    "E: all 2 tests pass."]


def test_checks_let_an_interrupt_through():
    check = Checks("E")
    with pytest.raises(KeyboardInterrupt), check("interrupted"):
        raise KeyboardInterrupt
    with pytest.raises(TypeError, match="non-empty description"):
        check("")


# --- the test files ------------------------------------------------------------------------

def _write(tmp_path, text, name="t.py"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_read_tests_parses_sections(tmp_path):
    path = _write(tmp_path, '"""doc"""\n# %% ex-a | points: 2 | defines: f, g\nwith check("f"):\n'
                            '    assert f(1) == 2\n# %% hidden\nwith check("g"):\n    assert g\n\n'
                            '# %% ex-b | points: 0.5\nwith check("b"):\n    assert b\n')
    tests = read_tests(path)
    assert list(tests) == ["ex-a", "ex-b"]
    a, b = tests["ex-a"], tests["ex-b"]
    assert (a.points, a.defines, b.points, b.defines, b.hidden) == (2, ["f", "g"], 0.5, [], "")
    assert a.visible == 'with check("f"):\n    assert f(1) == 2'
    assert a.hidden.strip() == 'with check("g"):\n    assert g'
    assert a.where == f"{path}:2"


@pytest.mark.parametrize("text, message", [
    ('# %% ex | defines: f\nwith check("x"):\n    pass\n', r"t.py:1: exercise 'ex' needs '\| points: N'"),
    ('# %% ex | points: 0\nwith check("x"):\n    pass\n', "points must be positive, got 0.0"),
    ('# %% ex | points: 1 | pts: 2\nwith check("x"):\n    pass\n', r"unknown option 'pts: 2'"),
    ('# %% ex | points: 1\nassert f\n', "has no visible test"),
    ('# %% hidden\nwith check("x"):\n    pass\n', "t.py:1: '# %% hidden' must follow"),
    ('# %% ex | points: 1\nwith check("x"):\n    pass\n# %% ex | points: 1\nwith check("y"):\n    pass\n',
     r"t.py:4: exercise 'ex' is tested twice"),
])
def test_read_tests_names_the_file_line_and_fix(tmp_path, text, message):
    with pytest.raises(ValueError, match=message):
        read_tests(_write(tmp_path, text))


def test_every_code_exercise_of_every_chapter_has_tests():
    notebooks = source_notebooks(ROOT / "chapters", ROOT / "grading")   # raises if one lacks tests
    assert sorted(notebooks) == sorted(p.stem for p in NOTEBOOKS)
    for stem, nb in notebooks.items():
        if stem.startswith("appendix_"):
            assert not [c for c in nb.cells if "nbgrader" in c.metadata], f"{stem}: an appendix has no exercise"
            assert not (ROOT / "grading" / f"{stem}.py").exists()
            continue
        spec = read_tests(ROOT / "grading" / f"{stem}.py")
        solutions = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution") and c.cell_type == "code"]
        tests = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade") and c.cell_type == "code"]
        assert [c.metadata.nbgrader.grade_id for c in solutions] == list(spec), stem
        assert [c.metadata.nbgrader.grade_id for c in tests] == [f"{label}-tests" for label in spec], stem
        assert all(exercise.hidden.strip() for exercise in spec.values()), f"{stem}: an exercise has no hidden test"


# --- a chapter of our own: two exercises ----------------------------------------------------

def _chapter(tmp_path):
    chapters, tests = tmp_path / "chapters", tmp_path / "grading"
    chapters.mkdir()
    tests.mkdir()
    nb = nbformat.v4.new_notebook(cells=[
        md("# Tiny\n\nSome text."),
        code("base = 10"),
        md("```{exercise}\n:label: tiny-ex-add\nWrite `add(a, b)`.\n```\n\n```{solution-start} tiny-ex-add\n"
           ":class: dropdown\n```"),
        code("import math\n\ndef add(a, b):\n    return a + b"),
        md("```{solution-end}\n```\n\n```{exercise}\n:label: tiny-ex-scale\nSet `scaled = 3 * base`; say why."
           "\n```\n\n```{solution-start} tiny-ex-scale\n:class: dropdown\n```"),
        code("scaled = 3 * base"),
        md("Because three times.\n\n```{solution-end}\n```"),
        code("print('after the exercises', base)"),
    ])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, chapters / "01_tiny.ipynb")
    _write(tests, '# %% tiny-ex-add | points: 2 | defines: add\nwith check("adds"):\n    assert add(2, 3) == 5\n'
                  '# %% hidden\nwith check("adds negatives"):\n    assert add(-2, -3) == -5\n'
                  '# %% tiny-ex-scale | points: 1 | defines: scaled\nwith check("scales base"):\n'
                  '    assert scaled == 3 * base\n', "01_tiny.py")
    return chapters, tests


def test_source_notebook_has_solution_and_locked_test_cells(tmp_path):
    chapters, tests = _chapter(tmp_path)
    nb = source_notebooks(chapters, tests)["01_tiny"]
    graded = [(c.metadata["nbgrader"]["grade_id"], c.metadata["nbgrader"]["grade"],
               c.metadata["nbgrader"].get("points")) for c in nb.cells if "nbgrader" in c.metadata]
    assert graded == [("tiny-ex-add", False, None), ("tiny-ex-add-tests", True, 2),
                      ("tiny-ex-scale", False, None), ("tiny-ex-scale-tests", True, 1),
                      ("tiny-ex-scale-words", True, WRITTEN_POINTS)]
    answer = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "tiny-ex-add")
    assert answer.source.split("\n") == [
        "# TODO, Exercise 1.1 (tiny-ex-add): write your solution here, then run this cell.",
        "# Your answer defines add (the tests below use them).",
        "# What the exercise needs beyond the cells above:", "import math",
        "### BEGIN SOLUTION", "import math", "", "def add(a, b):", "    return a + b", "### END SOLUTION"]
    test_cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "tiny-ex-add-tests")
    assert test_cell.metadata.nbgrader.locked
    assert "### BEGIN HIDDEN TESTS\ncheck.hidden()\nwith check(\"adds negatives\")" in test_cell.source
    # the private Checks is loaded before the first test, the token printed after the last
    hidden = re.findall(r"### BEGIN HIDDEN TESTS\n(.*?)### END HIDDEN TESTS", test_cell.source, re.S)
    assert len(hidden) == 2 and "spec_from_file_location" in hidden[0] and TOKEN in hidden[1]
    assert test_cell.source.index(hidden[0]) < test_cell.source.index("check = Checks(")
    assert test_cell.source.endswith("### END HIDDEN TESTS")
    # the words of the second solution: a manually graded Markdown answer, the words as its solution
    words = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "tiny-ex-scale-words")
    assert words.cell_type == "markdown" and words.metadata.nbgrader.solution and TODO_TAG in words.metadata.tags
    assert words.source == ("*Your answer (Exercise 1.2, tiny-ex-scale):*\n\n### BEGIN SOLUTION\n"
                            "Because three times.\n### END SOLUTION")


def test_a_code_exercise_without_tests_is_refused(tmp_path):
    chapters, tests = _chapter(tmp_path)
    (tests / "01_tiny.py").write_text('# %% tiny-ex-add | points: 1\nwith check("a"):\n    pass\n')
    with pytest.raises(ValueError, match="'tiny-ex-scale' has a code solution but no tests"):
        source_notebooks(chapters, tests)
    (tests / "01_tiny.py").write_text('# %% tiny-ex-add | points: 1\nwith check("a"):\n    pass\n'
                                      '# %% tiny-ex-scale | points: 1\nwith check("a"):\n    pass\n'
                                      '# %% tiny-ex-nothing | points: 1\nwith check("a"):\n    pass\n')
    with pytest.raises(ValueError, match=r"\['tiny-ex-nothing'\] are not code exercises of 01_tiny.ipynb"):
        source_notebooks(chapters, tests)
    _write(tests, '# %% x | points: 1\nwith check("a"):\n    pass\n', "02_missing.py")
    (tests / "01_tiny.py").unlink()
    with pytest.raises(ValueError, match="no tests"):
        source_notebooks(chapters, tests)


def test_graded_cells_keep_the_todo_header_and_add_defines():
    todo = code("# TODO, Exercise 1.1 (x): write your solution here, then run this cell.\nimport re\n\nprint('x')")
    todo.metadata["tags"] = [TODO_TAG]
    exercise = read_tests.__globals__["Exercise"]("x", 1.0, ["f"], 'with check("a"):\n    pass')
    answer, tests = graded_cells(todo, exercise, "Exercise 1.1", ["f = 1\n", "\ng = 2"])
    assert answer.source == ("# TODO, Exercise 1.1 (x): write your solution here, then run this cell.\n"
                             "# Your answer defines f (the tests below use them).\nimport re\n"
                             "### BEGIN SOLUTION\nf = 1\n\ng = 2\n### END SOLUTION")
    assert tests.source.startswith("# Tests of Exercise 1.1 (x), 1 point: run this cell after your answer.")


def _submit(folder, student, nb, stem="01_tiny"):
    (folder / student).mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, folder / student / f"{stem}.ipynb")


def _answer(nb, grade_id, source):
    next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id).source = source
    return nb


def _graded(tmp_path, subs, **options):
    """grade() on the tiny chapter: ({student: row}, the progress lines)."""
    chapters, tests = tmp_path / "chapters", tmp_path / "grading"
    lines = []
    rows = grade(subs, tmp_path / "grades.csv", chapters, tests, tmp_path / "course", progress=lines.append,
                 **options)
    return {r["student"]: r for r in rows}, lines


def _tiny(tmp_path):
    """The tiny chapter released: (handout, source)."""
    chapters, tests = _chapter(tmp_path)
    release(chapters, tests, tmp_path / "release", tmp_path / "handout")
    handout = nbformat.read(tmp_path / "handout" / "01_tiny.ipynb", as_version=4)
    source = nbformat.read(tmp_path / "release" / "source" / "01_tiny" / "01_tiny.ipynb", as_version=4)
    return handout, source


def test_grade_writes_points_per_student_per_exercise(tmp_path):
    from tokvec.course.collect import read_grades

    handout, source = _tiny(tmp_path)
    leaked = re.search(r"BEGIN|END|return a \+ b|adds negatives|three times|spec_from_file|" + TOKEN,
                       json.dumps(handout))
    assert not leaked, "a solution or a hidden test is in the handout"
    assert sum(CODE_STUB in c.source for c in handout.cells) == 2
    assert sum(c.source.endswith(TEXT_STUB) for c in handout.cells) == 1
    subs = tmp_path / "submissions"
    # right, though the answer writes to stderr and warns
    _submit(subs, "ada", _answer(solved(handout, source), "tiny-ex-add",
                                 "import sys, warnings\n\ndef add(a, b):\n    print('adding', file=sys.stderr)\n"
                                 "    warnings.warn('careful')\n    return a + b"))
    _submit(subs, "bob", handout)                  # handed in as handed out
    # right on the visible test, wrong on the hidden one
    _submit(subs, "cy", _answer(solved(handout, source), "tiny-ex-add",
                                "def add(a, b):\n    return 5 if (a, b) == (2, 3) else 0"))
    (subs / "dee").mkdir()                         # submitted nothing: a row with a note
    # renamed by Colab's "Save a copy in Drive": still graded
    _submit(subs, "eve", solved(handout, source), stem="Copy of 01_tiny")
    # switches the tests off instead of answering: scores nothing, and is flagged
    _submit(subs, "fay", _answer(copy.deepcopy(handout), "tiny-ex-add",
                                 "from tokvec.course.checks import Checks\nChecks.require = lambda self: None"))
    # an answer cell pasted twice: graded, and noted
    pasted = solved(handout, source)
    twice = copy.deepcopy(pasted.cells[3])
    twice.id = "pasted"
    pasted.cells.insert(4, twice)
    _submit(subs, "gus", pasted)
    _submit(subs, "gus", handout, stem="scratch")  # not a chapter: left out with a note
    out = tmp_path / "grades.csv"
    assert main(["grade", str(subs), "--out", str(out), "--chapters", str(tmp_path / "chapters"),
                 "--tests", str(tmp_path / "grading"), "-j", "2"]) == 0
    assert "(max points)" not in out.read_text(encoding="utf-8"), "the CSV must be ready for an LMS import"
    rows = {r["student"]: r for r in read_grades(out)}
    assert list(rows["(max points)"]) == ["student", "tiny-ex-add", "tiny-ex-scale", "tiny-ex-scale (written)",
                                          "total", "notes"]
    table = {k: [r["tiny-ex-add"], r["tiny-ex-scale"], r["tiny-ex-scale (written)"], r["total"]]
             for k, r in rows.items()}
    assert table == {"(max points)": ["2", "1", "2", "5"], "ada": ["2", "1", "", "3"], "bob": ["0", "0", "0", "0"],
                     "cy": ["0", "1", "", "1"], "dee": ["", "", "", ""], "eve": ["2", "1", "", "3"],
                     "fay": ["0", "0", "0", "0"], "gus": ["2", "1", "", "3"]}
    assert [k for k, r in rows.items() if r["notes"]] == ["dee", "fay", "gus"]
    assert "no notebook" in rows["dee"]["notes"]
    assert "tiny-ex-add" in rows["fay"]["notes"] and "by hand" in rows["fay"]["notes"]
    assert "tiny-ex-add" in rows["gus"]["notes"] and "scratch.ipynb" in rows["gus"]["notes"]


def test_grade_names_the_fix_for_a_wrong_folder(tmp_path):
    chapters, tests = _chapter(tmp_path)
    with pytest.raises(FileNotFoundError, match="<student>/<chapter>.ipynb"):
        grade(tmp_path / "nowhere", tmp_path / "g.csv", chapters, tests)
    _submit(tmp_path / "subs", "ada", nbformat.v4.new_notebook(), stem="tiny")
    with pytest.raises(FileNotFoundError, match="01_tiny.ipynb"):
        grade(tmp_path / "subs", tmp_path / "g.csv", chapters, tests)
    _submit(tmp_path / "subs", "bo", nbformat.v4.new_notebook(), stem="01_tiny")
    with pytest.raises(ValueError, match="'nothing' names no chapter and no exercise.*01_tiny"):
        grade(tmp_path / "subs", tmp_path / "g.csv", chapters, tests, only=["nothing"])


def test_committed_handout_is_what_make_student_writes(tmp_path):
    release(ROOT / "chapters", ROOT / "grading", tmp_path / "course", tmp_path / "handout")
    committed = sorted(p.name for p in (ROOT / "student").glob("*.ipynb"))
    assert committed == sorted(p.name for p in NOTEBOOKS), "run `make student` and commit student/"
    for path in NOTEBOOKS:
        fresh = nbformat.read(tmp_path / "handout" / path.name, as_version=4)
        kept = nbformat.read(ROOT / "student" / path.name, as_version=4)
        stale = f"student/{path.name} is stale: run `make student` and commit it"
        assert [(c.cell_type, c.source, c.metadata) for c in kept.cells] == \
               [(c.cell_type, c.source, c.metadata) for c in fresh.cells], stale


@pytest.mark.slow
def test_solutions_score_every_point_and_the_blank_handout_zero(tmp_path):
    rows = verify(ROOT / "chapters", ROOT / "grading", course=tmp_path)
    assert [r["student"] for r in rows] == ["(max points)", "blank", "solutions"]
    assert verdict(rows) == []
    assert sum(k.endswith(" (written)") for k in rows[0]) >= 50
    for path in CHAPTERS:
        # the handout as handed out runs top to bottom: errors only where the grader's hidden
        # tests require a right answer, and every TODO cell says it is not done yet
        nb = nbformat.read(tmp_path / "autograded" / "blank" / path.stem / path.name, as_version=4)
        for cell in nb.cells:
            if cell.cell_type != "code":
                continue
            errors = [o for o in cell.outputs if o.output_type == "error"]
            grade_cell = cell.metadata.get("nbgrader", {}).get("grade", False)
            assert not errors or grade_cell and errors[0].ename == "AssertionError", \
                f"{path.name}: {cell.source[:200]}\n{errors[0].ename}: {errors[0].evalue}"
            if cell.metadata.get("nbgrader", {}).get("solution"):
                assert "not done yet" in "".join(o.get("text", "") for o in cell.outputs), path.name


#: Wrong answers a student could hand in for real exercises: (chapter, exercise) -> the whole
#: answer cell. The last three keep an error of the source tutorials that the exercise is about.
WRONG_ANSWERS = {
    # paper ids 1..N_V used as code ids 0..N_V-1
    ("04_token_embedding", "alg1-ex-paper-ids"):
        "def paper_token_embedding(v, W_e):\n    return token_embedding(v, W_e)\n",
    # BERT's context length taken for GPT-2's
    ("05_positional_embedding", "alg2-ex-count"):
        "l_max_bert, d_e_bert = 512, 768\nlearned = 768 * 512\ntoken_table = 768 * 50257\n",
    # the base asked for, 1000, left at the default, 10000
    ("06_why_sinusoids", "sin-ex-base"):
        "omega_1000 = frequencies(d_e)\nlam_1000 = [2 * math.pi / w for w in omega_1000]\n"
        "W_1000 = sinusoidal_positions(d_e, 64)\n",
    # the Haiku tutorial's discarded update: JAX's functional update computed and thrown away
    ("07_common_mistakes", "bug-ex-discarded"):
        "pe = zeros((max_len, d_model))\nat_set(pe, np.s_[:, 0::2], np.sin(position * div_term))\n"
        "at_set(pe, np.s_[:, 1::2], np.cos(position * div_term))\n",
    # the walkthrough's exponent kept: the sine and cosine of a pair get different frequencies
    ("07_common_mistakes", "bug-ex-exponent"):
        "def pair_sums(vector):\n    return [round(vector[2 * k] ** 2 + vector[2 * k + 1] ** 2, 4)\n"
        "            for k in range(len(vector) // 2)]\n\n"
        "def fixed_positional_embedding_matrix(d, l_max):\n"
        "    return {t: [(math.sin if i % 2 == 0 else math.cos)(t / l_max ** (2 * i / d))\n"
        "                for i in range(d)] for t in range(l_max)}\n",
    # the walkthrough's index typo W_p[:, x[t]], shown on ids equal to their positions: unseen
    ("07_common_mistakes", "bug-ex-position-lookup"):
        "x = [0, 1, 2]\nwrong = embed_tutorial_formula(x, W_e, W_p)\nright = embed(x, W_e, W_p)\n",
}


@pytest.mark.slow
def test_a_wrong_answer_scores_nothing_on_its_exercise_and_full_points_elsewhere(tmp_path):
    """The solutions with one answer swapped for a wrong one, a chapter each: that exercise
    scores 0, every other exercise of the chapter its full points."""
    stems = sorted({stem for stem, _ in WRONG_ANSWERS})
    sources = source_notebooks(ROOT / "chapters", ROOT / "grading", stems)
    release(ROOT / "chapters", ROOT / "grading", tmp_path / "release", tmp_path / "handout", stems)
    for (stem, label), answer in WRONG_ANSWERS.items():
        handout = nbformat.read(tmp_path / "handout" / f"{stem}.ipynb", as_version=4)
        _submit(tmp_path / "in", label, _answer(solved(handout, sources[stem]), label, answer), stem)
    rows = {r["student"]: r for r in grade(tmp_path / "in", tmp_path / "grades.csv", ROOT / "chapters",
                                          ROOT / "grading", tmp_path / "course")}
    full = rows["(max points)"]
    for (stem, label), _ in WRONG_ANSWERS.items():
        row = rows[label]
        assert row[label] == "0" and not row["notes"], row
        others = [k for k in read_tests(ROOT / "grading" / f"{stem}.py") if k != label]
        assert others and all(row[k] == full[k] for k in others), row


def test_term_plan_of_the_instructor_guide_matches_the_test_files():
    """Every chapter is in one week of the plan, with its exercises and points as grading/ sets them."""
    guide = (ROOT / "instructors.md").read_text(encoding="utf-8")
    plan = guide[guide.index("## A term plan with graded exercises"):guide.index("## How the grading works")]
    rows = [line for line in plan.splitlines() if re.match(r"\| \d+ \|", line)]
    assert len(rows) >= 10, "the term plan table is missing"
    planned = []
    for row in rows:
        week, chapters, exercises, code_points, words = [c.strip() for c in row.strip("|").split("|")]
        stems = re.findall(r"chapters/(\w+)>", chapters)
        assert stems, row
        planned += stems
        specs = [read_tests(ROOT / "grading" / f"{stem}.py") for stem in stems]
        count = sum(len(s) for s in specs)
        assert (int(exercises), float(code_points), int(words)) == \
               (count, sum(e.points for s in specs for e in s.values()), 2 * count), row
    assert sorted(planned) == sorted(p.stem for p in CHAPTERS)
    totals = re.search(r"\| total \| \| (\d+) \| (\d+) \| (\d+) \|", plan)
    assert totals, "the plan has no total row"
    specs = [read_tests(ROOT / "grading" / f"{p.stem}.py") for p in CHAPTERS]
    count = sum(len(s) for s in specs)
    assert tuple(map(int, totals.groups())) == (count, sum(e.points for s in specs for e in s.values()), 2 * count)


def test_every_written_answer_has_a_rubric():
    """Each "*Your answer*" cell of the handout has one entry in rubrics.md, in course order,
    with its key points."""
    from tokvec.course.student import Context, student_notebook

    contexts = Context.for_folder(ROOT / "chapters")
    asked = []
    for path in CHAPTERS:
        nb = student_notebook(nbformat.read(path, as_version=4), contexts[path.stem])
        asked += [c.id.removeprefix("todo-").removesuffix("-words") for c in nb.cells
                  if c.cell_type == "markdown" and TODO_TAG in c.metadata.get("tags", [])]
    assert len(asked) >= 50
    text = (ROOT / "rubrics.md").read_text(encoding="utf-8")
    entries = re.split(r"^(?=\*\*\{ref\}`)", text, flags=re.M)[1:]
    labels = [re.match(r"\*\*\{ref\}`([^`]+)`", e).group(1) for e in entries]
    assert labels == asked
    for label, entry in zip(labels, entries):
        entry = entry.split("\n## ")[0]
        assert "Key points" in entry and len(re.findall(r"^  - \S", entry, re.M)) >= 2, label


def test_runs_inside_sees_a_function_under_any_name():
    import functools
    import types

    from tokvec.course.checks import runs_inside

    module = types.ModuleType("fake")
    exec("def double(x):\n    return 2 * x\n", vars(module))
    alias = module.double

    def by_default(x, f=module.double):
        return f(x)

    partial = functools.partial(module.double)
    assert runs_inside(module, "double", lambda x: module.double(x), 3)
    assert runs_inside(module, "double", lambda x: alias(x), 3, namespace={"alias": alias})
    assert runs_inside(module, "double", by_default, 3)
    assert runs_inside(module, "double", partial, 3)
    assert not runs_inside(module, "double", lambda x: x + x, 3)
    assert module.double is alias                      # restored
    with pytest.raises(ZeroDivisionError):
        runs_inside(module, "double", lambda x: x / 0, 3)


def test_a_notebook_under_its_previous_name_grades_as_the_renamed_chapter(tmp_path):
    """A class in the middle of a term hands in the old handout's file names: each old name (and
    its "Copy of" form) counts as the renamed chapter; every new name is a notebook of the book."""
    from tokvec.course.collect import find_submissions
    from tokvec.course.renamed import RENAMED, current_name

    stems = [p.stem for p in NOTEBOOKS]
    assert set(RENAMED.values()) <= set(stems) and not set(RENAMED) & set(stems)
    old, new = next(iter(RENAMED.items()))
    for student, name in (("ada", old), ("bo", f"Copy of {old}"), ("cy", new)):
        (tmp_path / student).mkdir()
        (tmp_path / student / f"{name}.ipynb").write_text("{}")
    books, notes = find_submissions(tmp_path, stems)
    assert {s: list(b) for s, b in books.items()} == {"ada": [new], "bo": [new], "cy": [new]}
    assert notes == {}
    assert current_name("05_positional_embedding") == "05_positional_embedding"


# --- the contract of each exercise: in its statement, and in its test cell ------------------

def _statement(cells: list, label: str) -> str:
    """The Markdown of an exercise's statement in a chapter: from its ``:label:`` line to the
    end of the exercise (``{exercise-end}``, or the closing fence of an ``{exercise}``)."""
    start = next(i for i, c in enumerate(cells) if re.search(rf":label:\s*{re.escape(label)}\s*$", c.source, re.M))
    if "{exercise-start}" not in cells[start].source:
        return cells[start].source.split(f":label: {label}")[1].split("\n```")[0]
    end = next(i for i in range(start, len(cells)) if "{exercise-end}" in cells[i].source)
    return "\n".join(c.source.split("{exercise-end}")[0] for c in cells[start:end + 1] if c.cell_type == "markdown")


@pytest.mark.parametrize("path", [p for p in CHAPTERS if (ROOT / "grading" / f"{p.stem}.py").exists()],
                         ids=lambda p: p.stem)
def test_every_test_cell_imports_what_it_uses_and_the_statement_names_the_answer(path):
    """A student may replace a TODO cell, its imports included: the test cell still finds what it
    uses (its own imports, the answer's names, the chapter's cells above it; no TODO cell), and the
    statement, not the TODO cell, names every name the answer defines and every key the tests read."""
    import builtins

    from tokvec.course.grading import free_names

    source = source_notebooks(ROOT / "chapters", ROOT / "grading", [path.stem])[path.stem]
    spec = read_tests(ROOT / "grading" / f"{path.stem}.py")
    chapter = nbformat.read(path, as_version=4).cells
    above = set(dir(builtins))
    for cell in source.cells:
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type != "code":
            continue
        if not meta:                                        # a chapter cell
            lines = [x for x in cell.source.split("\n") if not x.lstrip().startswith(("%", "!"))]
            with contextlib.suppress(SyntaxError):
                above |= free_names("\n".join(lines))[0]
        elif meta["grade_id"].endswith("-tests"):
            label = meta["grade_id"].removesuffix("-tests")
            bound, used = free_names(cell.source)
            missing = sorted(set(used) - bound - above - set(spec[label].defines))
            assert not missing, f"{path.stem}, {label}: the test cell reads {missing}, which only a TODO cell defines"
            statement = _statement(chapter, label)
            for name in spec[label].defines:
                assert re.search(rf"`[^`]*\b{re.escape(name)}\b[^`]*`", statement), \
                    f"{path.stem}, {label}: the statement does not name `{name}`, which the tests read"
            keys = {(n.value.id, n.slice.value) for n in ast.walk(ast.parse(cell.source))
                    if isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name)
                    and n.value.id in spec[label].defines and isinstance(n.slice, ast.Constant)
                    and isinstance(n.slice.value, str)}
            for name, key in sorted(keys):
                assert key in statement, f"{path.stem}, {label}: the statement does not give the key {key!r} of {name}"


def test_exercise_numbers_the_guide_quotes_are_the_handouts():
    """The guide's "Exercise N.M (label)" examples read as the handout numbers them today."""
    guide = (ROOT / "instructors.md").read_text(encoding="utf-8")
    quoted = re.findall(r"Exercise (\d+\.\d+) \(([\w-]+)\)", guide)
    assert quoted, "the guide quotes no exercise number"
    handout = "".join((ROOT / "student" / f"{p.stem}.ipynb").read_text(encoding="utf-8") for p in CHAPTERS)
    for number, label in quoted:
        assert f"Exercise {number} ({label})" in handout, f"the handout does not number {label} {number}"
