"""Autograded exercises with nbgrader: the student handout, and grades for a folder of submissions.

Used by ``make student`` and ``make grade`` (see the instructor guide, ``instructors.md``)::

    python -m tokvec.course.grading release chapters grading student
    python -m tokvec.course.grading grade SUBMISSIONS --out grades.csv

The filled chapters (``chapters/``) and the tests (``grading/<chapter>.py``) are the only
sources. From them this module writes nbgrader's *source* notebooks (the handout's plain
Markdown from :mod:`tokvec.course.student`, each solution between ``### BEGIN SOLUTION`` and
``### END SOLUTION``, a locked test cell with its points after it, hidden tests between
``### BEGIN HIDDEN TESTS`` and ``### END HIDDEN TESTS``), and lets nbgrader do the rest:
``generate_assignment`` makes the handout (solutions and hidden tests out) and records every
test cell in its gradebook; ``autograde`` restores the hidden tests into each submission, runs
it in a fresh kernel and scores each test cell. Everything is local (a SQLite gradebook, the
course's own Python kernel): no network, no container.

A test file ``grading/<chapter>.py`` is Python in sections::

    # %% tok-ex-lowercase | points: 2 | defines: lower_bpe, lower_tokens
    with check("lower_bpe lowercases"):
        assert lower_bpe.lowercase
    # %% hidden
    with check("the sentence starts with t + he"):
        assert lower_tokens[:2] == ["t", "he"]

A section names an exercise's label, its points and the names its answer must define (the TODO
cell says so); its ``with check(...)`` blocks are the visible tests, which the handout shows and
:class:`tokvec.course.checks.Checks` reports without raising. The ``# %% hidden`` section that
may follow holds the hidden ones. The test cell scores its points only if every visible and
hidden test passes.
"""

from __future__ import annotations

import argparse
import copy
import csv
import os
import re
import shutil
import sys
import tempfile
import warnings
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

__all__ = ["CODE_STUB", "Exercise", "grade", "graded_cells", "main", "read_tests", "release", "solved",
           "source_notebooks", "verify"]

#: What nbgrader writes in place of a solution in the handout (it runs without an error).
CODE_STUB = 'print("not done yet: replace this line with your answer")'
_HEADER = re.compile(r"^# %% +(?P<label>[\w.:-]+)(?P<options>(?: *\|[^|\n]*)*)[ \t]*$", re.M)
_OPTION = re.compile(r"^ *(?P<key>points|defines) *: *(?P<value>.*?) *$")


@dataclass
class Exercise:
    """The tests of one exercise, read from ``grading/<chapter>.py``."""
    label: str
    points: float
    defines: list[str] = field(default_factory=list)
    visible: str = ""
    hidden: str = ""
    where: str = ""                              # file:line, for error messages


def read_tests(path: Path) -> dict[str, Exercise]:
    """Parse one test file into ``{label: Exercise}``; errors name the file and line."""
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    heads = list(_HEADER.finditer(text))
    out: dict[str, Exercise] = {}
    current = None
    for i, head in enumerate(heads):
        body = text[head.end():heads[i + 1].start() if i + 1 < len(heads) else len(text)].strip("\n")
        line = text.count("\n", 0, head.start()) + 1
        where = f"{path}:{line}"
        if head.group("label") == "hidden":
            if current is None or current.hidden:
                raise ValueError(f"{where}: '# %% hidden' must follow an exercise's visible section, once")
            current.hidden = body
            continue
        options = {}
        for part in head.group("options").split("|")[1:]:
            m = _OPTION.match(part)
            if m is None:
                raise ValueError(f"{where}: unknown option {part.strip()!r}; "
                                 "write '# %% label | points: N | defines: name, name'")
            options[m.group("key")] = m.group("value")
        try:
            points = float(options["points"])
        except (KeyError, ValueError):
            raise ValueError(f"{where}: exercise {head.group('label')!r} needs '| points: N' "
                             f"with N a positive number, got {options.get('points')!r}") from None
        if points <= 0:
            raise ValueError(f"{where}: points must be positive, got {points}")
        if head.group("label") in out:
            raise ValueError(f"{where}: exercise {head.group('label')!r} is tested twice")
        if "with check(" not in body:
            raise ValueError(f"{where}: exercise {head.group('label')!r} has no visible test "
                             "(a 'with check(\"...\"):' block)")
        defines = [n.strip() for n in options.get("defines", "").split(",") if n.strip()]
        current = out[head.group("label")] = Exercise(head.group("label"), points, defines, body, "", where)
    return out


def _points(points: float) -> str:
    return f"{points:g} point" + ("" if points == 1 else "s")


def solved(handout, source):
    """The handout notebook ``handout`` answered with the solutions of ``source`` (its nbgrader
    source notebook): what a student who got every exercise right would submit."""
    answers = {c.metadata["nbgrader"]["grade_id"]: c.source for c in source.cells
               if c.metadata.get("nbgrader", {}).get("solution")}
    out = nbformat.from_dict(copy.deepcopy(dict(handout)))
    for cell in out.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if grade_id in answers:
            cell.source = re.sub(r"^### (BEGIN|END) SOLUTION\n?", "", answers[grade_id], flags=re.M)
    return out


def _code(exercise: Exercise, name: str) -> str:
    lines = [f"# Tests of {name} ({exercise.label}), {_points(exercise.points)}: run this cell after "
             "your answer.", "from tokvec.course.checks import Checks", "",
             f"check = Checks({name!r})", exercise.visible, "check.report()"]
    if exercise.hidden:
        lines += ["### BEGIN HIDDEN TESTS", "check.hidden()", exercise.hidden, "check.report()",
                  "check.require()", "### END HIDDEN TESTS"]
    else:
        lines += ["### BEGIN HIDDEN TESTS", "check.require()", "### END HIDDEN TESTS"]
    return "\n".join(lines)


def graded_cells(todo, exercise: Exercise, name: str, solution_code: list[str]) -> list:
    """The TODO cell of :func:`tokvec.course.student.student_notebook` turned into nbgrader's
    solution cell (the solution inside the markers), and the locked test cell after it."""
    head = todo.source.split("\n")
    head = head[:head.index("") if "" in head else len(head)]  # the comments and imports, not the print
    if exercise.defines:
        head.insert(1, "# Your answer defines " + ", ".join(exercise.defines) + " (the tests below use them).")
    solution = nbformat.v4.new_code_cell("\n".join(
        head + ["### BEGIN SOLUTION", "\n\n".join(s.strip("\n") for s in solution_code), "### END SOLUTION"]))
    solution.id = todo.id
    solution.metadata = {"tags": list(todo.metadata.get("tags", [])),
                         "nbgrader": {"grade": False, "solution": True, "locked": False,
                                      "grade_id": exercise.label, "schema_version": 3}}
    tests = nbformat.v4.new_code_cell(_code(exercise, name))
    tests.id = f"tests-{exercise.label}"[:64]
    tests.metadata = {"tags": ["tests"],
                      "nbgrader": {"grade": True, "solution": False, "locked": True,
                                   "points": exercise.points, "grade_id": f"{exercise.label}-tests",
                                   "schema_version": 3}}
    return [solution, tests]


def source_notebooks(chapters: Path, tests: Path, stems: list[str] | None = None) -> dict[str, object]:
    """nbgrader's source notebook for every chapter (or those in ``stems``): ``{stem: notebook}``."""
    from tokvec.course.student import Context, student_notebook

    chapters, tests = Path(chapters), Path(tests)
    paths = sorted(chapters.glob("*.ipynb"))
    if not paths:
        raise FileNotFoundError(f"no notebooks in {chapters}")
    contexts = Context.for_folder(chapters)
    out, seen = {}, set()
    if stems:
        missing = sorted(set(stems) - {p.stem for p in paths})
        if missing:
            raise FileNotFoundError(f"no chapter {missing} in {chapters}; chapters: {[p.stem for p in paths]}")
        paths = [p for p in paths if p.stem in stems]
    for path in paths:
        file = tests / f"{path.stem}.py"
        spec = read_tests(file) if file.exists() else {}
        nb = student_notebook(nbformat.read(path, as_version=4), contexts[path.stem], tests=spec)
        graded = {c.metadata["nbgrader"]["grade_id"] for c in nb.cells if "nbgrader" in c.metadata}
        unknown = sorted(set(spec) - graded)
        if unknown:
            raise ValueError(f"{file}: {unknown} are not code exercises of {path.name}")
        seen.add(file.name)
        out[path.stem] = nb
    extra = sorted(p.name for p in tests.glob("*.py") if p.name not in seen)
    if extra and not stems:
        raise ValueError(f"{tests}: {extra} match no chapter in {chapters}")
    return out


# --- nbgrader -------------------------------------------------------------------------------

@contextmanager
def _course(root: Path):
    """nbgrader's API on the course directory ``root``, with this Python's scripts on PATH
    (nbgrader runs ``alembic`` to create its gradebook)."""
    from nbgrader.apps import NbGraderAPI
    from traitlets.config import Config

    config = Config()
    config.CourseDirectory.root = str(root)
    config.Exchange.root = str(Path(root) / "exchange")   # unused; nbgrader wants a writable one
    config.ClearSolutions.code_stub = {"python": CODE_STUB}
    config.Execute.timeout = 600                 # per cell: chapter 10's benchmarks take a while
    config.Application.log_level = "ERROR"
    old = os.environ.get("PATH", "")
    os.environ["PATH"] = str(Path(sys.executable).parent) + os.pathsep + old
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", module="nbgrader")          # SQLAlchemy's session notes
            warnings.filterwarnings("ignore", message=".*not in session.*")
            yield NbGraderAPI(config=config)
    finally:
        os.environ["PATH"] = old


def _check(result: dict, what: str) -> None:
    if not result.get("success"):
        raise RuntimeError(f"nbgrader failed to {what}:\n{result.get('error') or ''}\n{result.get('log') or ''}")


def release(chapters: Path, tests: Path, course: Path, handout: Path | None = None,
            stems: list[str] | None = None) -> list[str]:
    """Write the source notebooks into the nbgrader course directory ``course``, generate the
    assignments (one per chapter, named by its file's stem) and copy the handout to ``handout``."""
    course = Path(course)
    notebooks = source_notebooks(chapters, tests, stems)
    with _course(course) as api:
        for stem, nb in notebooks.items():
            folder = course / "source" / stem
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir(parents=True)
            nbformat.validate(nb)
            nbformat.write(nb, folder / f"{stem}.ipynb")
            _check(api.generate_assignment(stem, force=True, create=True), f"generate {stem}")
    if handout is not None:
        handout = Path(handout)
        handout.mkdir(parents=True, exist_ok=True)
        for stem in notebooks:
            shutil.copyfile(course / "release" / stem / f"{stem}.ipynb", handout / f"{stem}.ipynb")
    return list(notebooks)


def _submissions(folder: Path, stems: list[str]) -> dict[str, dict[str, Path]]:
    """``folder/<student>/<chapter>.ipynb`` -> ``{student: {chapter: path}}``; errors name the fix."""
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"no submissions folder {folder}: put each student's notebooks in "
                                f"{folder}/<student>/<chapter>.ipynb")
    out = {}
    for student in sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith(".")):
        if not re.fullmatch(r"[\w.-]+", student.name):
            raise ValueError(f"student folder {student.name!r}: use letters, digits, '_', '-' or '.'")
        books = {p.stem: p for p in sorted(student.glob("*.ipynb"))}
        unknown = sorted(set(books) - set(stems))
        if unknown:
            raise ValueError(f"{student}: {unknown} are not chapters; name each notebook as the "
                             f"handout does: {', '.join(s + '.ipynb' for s in stems)}")
        if books:
            out[student.name] = books
    if not out:
        raise FileNotFoundError(f"no notebooks in {folder}/<student>/<chapter>.ipynb")
    return out


def grade(submissions: Path, out: Path, chapters: Path, tests: Path, course: Path | None = None) -> list[dict]:
    """Autograde ``submissions/<student>/<chapter>.ipynb`` and write a CSV to ``out``: one row per
    student, one column of points per exercise (empty where the chapter was not submitted), the
    total, and a first row of each exercise's maximum. Returns the rows."""
    with tempfile.TemporaryDirectory(prefix="tokvec-grading-") as tmp:
        course = Path(course) if course is not None else Path(tmp)
        stems = [p.stem for p in sorted(Path(chapters).glob("*.ipynb"))]
        work = _submissions(submissions, stems)
        stems = [s for s in stems if any(s in books for books in work.values())]
        release(chapters, tests, course, stems=stems)
        with _course(course) as api:
            for student, books in work.items():
                for stem, path in books.items():
                    target = course / "submitted" / student / stem
                    shutil.rmtree(target, ignore_errors=True)
                    target.mkdir(parents=True)
                    shutil.copyfile(path, target / f"{stem}.ipynb")
                    _check(api.autograde(stem, student, force=True, create=True), f"grade {student}/{stem}")
        rows = _table(course, stems, work)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return rows


def _table(course: Path, stems: list[str], work: dict) -> list[dict]:
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        columns = []                              # (chapter, exercise label, max points)
        for stem in stems:
            nb = gb.find_notebook(stem, stem)
            for cell in sorted(nb.grade_cells, key=lambda c: c.cell_type + c.name):
                columns.append((stem, cell.name.removesuffix("-tests"), cell.max_score))
        order = {stem: i for i, stem in enumerate(stems)}
        columns.sort(key=lambda c: order[c[0]])
        rows = [{"student": "(max points)", **{label: f"{m:g}" for _, label, m in columns},
                 "total": f"{sum(m for *_, m in columns):g}"}]
        for student, books in work.items():
            row, total = {"student": student}, 0.0
            for stem, label, _ in columns:
                if stem not in books:
                    row[label] = ""
                    continue
                score = gb.find_grade(f"{label}-tests", stem, stem, student).score
                row[label], total = f"{score:g}", total + score
            row["total"] = f"{total:g}"
            rows.append(row)
    return rows


def verify(chapters: Path, tests: Path, stems: list[str] | None = None, course: Path | None = None) -> list[dict]:
    """Grade two submissions of each chapter in ``stems`` (all by default): ``solutions`` (the
    handout answered with the chapter's solutions) and ``blank`` (the handout as handed out).
    Prints the table and every test that failed for ``solutions``; returns the rows. The first
    must score every point, the second none (``tests/test_grading.py``)."""
    chapters = Path(chapters)
    with tempfile.TemporaryDirectory(prefix="tokvec-verify-") as tmp:
        tmp = Path(tmp)
        if stems:
            for stem in stems:
                if not (chapters / f"{stem}.ipynb").exists():
                    raise FileNotFoundError(f"no chapter {stem}.ipynb in {chapters}")
        sources = source_notebooks(chapters, tests, stems)
        release(chapters, tests, tmp / "handout-course", tmp / "handout", stems)
        for stem in stems or list(sources):
            handout = nbformat.read(tmp / "handout" / f"{stem}.ipynb", as_version=4)
            for who, nb in (("solutions", solved(handout, sources[stem])), ("blank", handout)):
                (tmp / "in" / who).mkdir(parents=True, exist_ok=True)
                nbformat.write(nb, tmp / "in" / who / f"{stem}.ipynb")
        course = Path(course) if course is not None else tmp / "course"
        rows = grade(tmp / "in", tmp / "grades.csv", chapters, tests, course)
        for row in rows:
            print(", ".join(f"{k}={v}" for k, v in row.items() if v != ""))
        for path in sorted((course / "autograded" / "solutions").glob("*/*.ipynb")):
            for cell in nbformat.read(path, as_version=4).cells:
                errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
                if errors:
                    text = "".join(o.get("text", "") for o in cell.outputs if o.get("output_type") == "stream")
                    print(f"--- {path.stem}: a cell fails with the solutions:\n{cell.source[:300]}\n{text}"
                          f"{errors[0].ename}: {errors[0].evalue[:500]}")
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tokvec.course.grading", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    rel = sub.add_parser("release", help="write the student handout (nbgrader release notebooks)")
    rel.add_argument("chapters", type=Path)
    rel.add_argument("tests", type=Path, help="the folder of test files (grading/)")
    rel.add_argument("handout", type=Path, help="where the student notebooks go (student/)")
    rel.add_argument("--course", type=Path, default=None, help="keep nbgrader's course directory here")
    gra = sub.add_parser("grade", help="autograde a folder of submissions into a CSV")
    gra.add_argument("submissions", type=Path, help="a folder of <student>/<chapter>.ipynb")
    gra.add_argument("--out", type=Path, default=Path("grades.csv"))
    gra.add_argument("--chapters", type=Path, default=Path("chapters"))
    gra.add_argument("--tests", type=Path, default=Path("grading"))
    gra.add_argument("--course", type=Path, default=None,
                     help="keep nbgrader's course directory (gradebook, autograded notebooks) here")
    ver = sub.add_parser("verify", help="grade the solutions (full marks?) and the blank handout (zero?)")
    ver.add_argument("stems", nargs="*", help="chapters to check, e.g. 01_tokenization (default: all)")
    ver.add_argument("--chapters", type=Path, default=Path("chapters"))
    ver.add_argument("--tests", type=Path, default=Path("grading"))
    ver.add_argument("--course", type=Path, default=None, help="keep nbgrader's course directory here")
    args = parser.parse_args(argv)
    if args.command == "verify":
        rows = verify(args.chapters, args.tests, args.stems, args.course)
        full = rows[0]["total"]
        solutions = next(r for r in rows if r["student"] == "solutions")
        blank = next(r for r in rows if r["student"] == "blank")
        ok = solutions["total"] == full and float(blank["total"]) == 0
        print("OK" if ok else f"NOT OK: the solutions score {solutions['total']} of {full}, "
              f"the blank handout {blank['total']} (must be {full} and 0)")
        return 0 if ok else 1
    if args.command == "release":
        with tempfile.TemporaryDirectory(prefix="tokvec-release-") as tmp:
            stems = release(args.chapters, args.tests, args.course or Path(tmp), args.handout)
        print(f"{len(stems)} student notebooks in {args.handout}")
        return 0
    rows = grade(args.submissions, args.out, args.chapters, args.tests, args.course)
    print(f"{len(rows) - 1} students graded: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
