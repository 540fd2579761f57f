"""Grading a class end to end (tokvec.course.grading.grade): tampering, changed test cells,
timeouts, dead kernels, limits, ONLY and the gradebook, on the two-exercise chapter of
tests/test_grading.py. Kept apart from that file so that ``make test`` runs them beside the
notebooks, not after them."""

import copy
import json
import re

import nbformat
from test_grading import _answer, _graded, _submit, _tiny

from tokvec.course.grading import solved


def test_every_tampering_scores_nothing_and_is_noted(tmp_path):
    """Each way the integrity module knows to switch the tests off, in the answer cell of a blank
    handout: no point on any exercise, and a note. The verdict is the token the grader's cell
    prints, which the student's code never sees."""
    from tokvec.course.integrity import TAMPERINGS

    handout, _ = _tiny(tmp_path)
    for name, attack in TAMPERINGS.items():
        _submit(tmp_path / "subs", re.sub(r"\W+", "-", name), _answer(copy.deepcopy(handout), "tiny-ex-add", attack))
    rows, _ = _graded(tmp_path, tmp_path / "subs", jobs=2, timeout=60)
    assert len(rows) == len(TAMPERINGS) + 1
    for student, row in rows.items():
        if student != "(max points)":
            assert (row["tiny-ex-add"], row["tiny-ex-scale"]) == ("0", "0"), (student, row)
            assert "by hand" in row["notes"], (student, row["notes"])


def test_a_changed_test_cell_is_noted_and_the_handouts_runs(tmp_path):
    """A test cell deleted, edited, moved before its answer, or stripped of its metadata: each
    named in a note; the deleted one scores 0, the edited one runs as handed out."""
    handout, source = _tiny(tmp_path)
    right = solved(handout, source)
    tests_at = next(i for i, c in enumerate(right.cells)
                    if c.metadata.get("nbgrader", {}).get("grade_id") == "tiny-ex-add-tests")
    deleted = copy.deepcopy(right)
    del deleted.cells[tests_at]
    edited = copy.deepcopy(right)
    edited.cells[tests_at].source = "print('all good')"
    wrong_and_edited = _answer(copy.deepcopy(edited), "tiny-ex-add", "def add(a, b):\n    return 0")
    moved = copy.deepcopy(right)
    moved.cells.insert(tests_at - 1, moved.cells.pop(tests_at))
    stripped = copy.deepcopy(right)
    del stripped.cells[tests_at].metadata["nbgrader"]
    for student, nb in (("deleted", deleted), ("edited", edited), ("wrong-edited", wrong_and_edited),
                        ("moved", moved), ("stripped", stripped)):
        _submit(tmp_path / "subs", student, nb)
    rows, _ = _graded(tmp_path, tmp_path / "subs", jobs=2)
    assert {s: r["tiny-ex-add"] for s, r in rows.items()} == {
        "(max points)": "2", "deleted": "0", "edited": "2", "wrong-edited": "0", "moved": "0", "stripped": "0"}
    for student in ("deleted", "edited", "wrong-edited", "moved", "stripped"):
        assert "tiny-ex-add" in rows[student]["notes"] and rows[student]["tiny-ex-scale"] == "1", rows[student]
    assert "delet" in rows["deleted"]["notes"] and "edit" in rows["edited"]["notes"]


def test_a_loop_a_dead_kernel_and_a_limit_are_noted_or_refused(tmp_path):
    """A loop stopped by the per-cell timeout and a kernel that dies (os._exit): each noted with
    the cell; what ran before it keeps its points, and after a timeout the cells after it still
    run. A file past the size limit is refused. Each notebook runs in a folder that holds only
    itself."""
    handout, source = _tiny(tmp_path)
    right = solved(handout, source)
    cases = {"loop": ("tiny-ex-scale", "while True:\n    pass"),
             "exits": ("tiny-ex-scale", "import os\nos._exit(3)"),
             "writes": ("tiny-ex-scale", "with open('big.bin', 'wb') as f:\n    f.write(bytes(3 * 2**20))"),
             "looks": ("tiny-ex-add", "import os\nprint('FILES', sorted(os.listdir('.')))\n\n"
                                      "def add(a, b):\n    return a + b")}
    for student, (label, answer) in cases.items():
        _submit(tmp_path / "subs", student, _answer(copy.deepcopy(right), label, answer))
    from tokvec.course.grading import Limits

    rows, lines = _graded(tmp_path, tmp_path / "subs", jobs=2, timeout=10,
                          limits=Limits(cpu=600, memory=8 * 2**30, file_size=2**20))
    assert "stopped after 10 s" in rows["loop"]["notes"] and "tiny-ex-scale" in rows["loop"]["notes"]
    assert rows["loop"]["tiny-ex-add"] == "2" and rows["loop"]["tiny-ex-scale"] == "0"
    assert "kernel died" in rows["exits"]["notes"] and "tiny-ex-scale" in rows["exits"]["notes"], rows["exits"]
    for student in ("exits", "writes"):
        assert rows[student]["tiny-ex-add"] == "2" and rows[student]["tiny-ex-scale"] == "0", rows[student]
    # past the file-size limit, the write fails (Python ignores SIGXFSZ) and the answer with it
    graded = nbformat.read(tmp_path / "course" / "autograded" / "writes" / "01_tiny" / "01_tiny.ipynb", as_version=4)
    assert "File too large" in json.dumps(graded)
    assert (rows["looks"]["tiny-ex-add"], rows["looks"]["notes"]) == ("2", "")
    graded = nbformat.read(tmp_path / "course" / "autograded" / "looks" / "01_tiny" / "01_tiny.ipynb", as_version=4)
    assert "FILES ['01_tiny.ipynb']" in json.dumps(graded)
    # one progress line per notebook: the count, the student, the chapter, the time
    done = [line for line in lines if line.startswith("[")]
    assert len(done) == 4 and all(re.match(r"\[\d/4\] \w+ 01_tiny: \d of 2 exercises pass.*\d+ s", x) for x in done)


def test_only_grades_the_chapters_named_and_the_gradebook_matches(tmp_path):
    """``--only`` by an exercise's label picks its chapter; with a course folder the gradebook
    holds the same scores as the CSV, and nbgrader_config.py is written for Formgrader."""
    from nbgrader.api import Gradebook

    handout, source = _tiny(tmp_path)
    _submit(tmp_path / "subs", "ada", solved(handout, source))
    _submit(tmp_path / "subs", "ada", handout, stem="02_other")
    _submit(tmp_path / "subs", "bo", _answer(solved(handout, source), "tiny-ex-add", "def add(a, b):\n    return 0"))
    rows, lines = _graded(tmp_path, tmp_path / "subs", only=["tiny-ex-scale"], gradebook=True)
    assert {s: r["total"] for s, r in rows.items()} == {"(max points)": "5", "ada": "3", "bo": "1"}
    assert any("left out" in line for line in lines) or "02_other" in rows["ada"]["notes"]
    config = (tmp_path / "course" / "nbgrader_config.py").read_text(encoding="utf-8")
    assert "c.CourseDirectory.root" in config
    with Gradebook(f"sqlite:///{tmp_path / 'course' / 'gradebook.db'}") as gb:
        scores = {s: gb.find_grade("tiny-ex-add-tests", "01_tiny", "01_tiny", s).auto_score for s in ("ada", "bo")}
    assert scores == {"ada": 2, "bo": 0}


# --- the committed handout and every chapter --------------------------------------------------
