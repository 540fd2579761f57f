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
import multiprocessing
import os
import re
import shutil
import sys
import tempfile
import warnings
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from tokvec.course.renamed import current_name

__all__ = ["CODE_STUB", "Exercise", "grade", "graded_cells", "main", "read_tests", "release", "solved",
           "source_notebooks", "verdict", "verify"]

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


# The last line of every grader's cell: a plain assert, which an answer cannot switch off by
# replacing a method of Checks (grade() also flags answers that touch the test machinery).
_VERDICT = "assert check.results and all(r[1] is None for r in check.results), 'a test fails'"


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
        lines += ["### BEGIN HIDDEN TESTS", "check.hidden()", exercise.hidden, "check.report()"]
    else:
        lines += ["### BEGIN HIDDEN TESTS"]
    lines += ["check.require()", _VERDICT, "### END HIDDEN TESTS"]
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


#: The points of every written answer ("*Your answer*" cell), graded by hand with rubrics.md.
WRITTEN_POINTS = 2
#: What nbgrader writes in the handout's written-answer cells, under "*Your answer (...):*".
TEXT_STUB = "Write your answer here."


def graded_words(todo, label: str, words: str):
    """The "*Your answer*" Markdown cell as nbgrader's manually graded answer: the solution's
    words between the markers (the handout gets :data:`TEXT_STUB`), :data:`WRITTEN_POINTS`."""
    cell = nbformat.v4.new_markdown_cell("\n".join(
        [todo.source.removesuffix(" ..."), "", "### BEGIN SOLUTION", words.strip("\n"), "### END SOLUTION"]))
    cell.id = todo.id
    cell.metadata = {"tags": list(todo.metadata.get("tags", [])),
                     "nbgrader": {"grade": True, "solution": True, "locked": False, "points": WRITTEN_POINTS,
                                  "grade_id": f"{label}-words", "schema_version": 3}}
    return cell


class _Graded:
    """What :func:`tokvec.course.student.student_notebook` calls to make nbgrader's cells."""

    def __init__(self, tests: dict[str, Exercise], file: Path):
        self.tests, self.file = tests, file

    def code(self, todo, label: str, name: str, solution_code: list[str]) -> list:
        if label not in self.tests:
            raise ValueError(f"exercise {label!r} has a code solution but no tests: add a "
                             f"'# %% {label} | points: N' section to {self.file}")
        return graded_cells(todo, self.tests[label], name, solution_code)

    def words(self, todo, label: str, words: str):
        return graded_words(todo, label, words)


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
        nb = student_notebook(nbformat.read(path, as_version=4), contexts[path.stem], _Graded(spec, file))
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
    config.ClearSolutions.text_stub = TEXT_STUB
    config.Execute.timeout = 600                 # per cell: the vectorization chapter's benchmarks take a while
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


# What students' tools do to a file name: Colab's "Save a copy in Drive" ("Copy of X"), a
# browser's second download ("X (1)"), Jupyter's "Duplicate" ("X-Copy1").
_RENAMED = re.compile(r"^(?:Copy of )?(?P<stem>.+?)(?: \(\d+\)|-Copy\d+)?$")
# An answer that touches the test machinery (to switch tests off) is flagged for a look by hand.
_TAMPER = re.compile(r"\bChecks\b|tokvec\.course\.checks|\bcheck\.(?:results|require|failed|_record)|"
                     r"_Test\b|\bbuiltins\b")


def _submissions(folder: Path, stems: list[str]) -> tuple[dict[str, dict[str, Path]], dict[str, list[str]]]:
    """``folder/<student>/<chapter>.ipynb`` -> ``({student: {chapter: path}}, {student: [notes]})``.

    A notebook renamed by Colab, a browser or Jupyter ("Copy of 05_x", "05_x (1)", "05_x-Copy1")
    counts as its chapter, and so does one saved under a chapter's previous name
    (:data:`tokvec.course.renamed.RENAMED`); a file that matches no chapter, or a second file for one chapter, is
    left out with a note for that student, and the others are graded."""
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"no submissions folder {folder}: put each student's notebooks in "
                                f"{folder}/<student>/<chapter>.ipynb")
    out, notes = {}, {}
    for student in sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith(".")):
        if not re.fullmatch(r"[\w.-]+", student.name):
            raise ValueError(f"student folder {student.name!r}: use letters, digits, '_', '-' or '.'")
        books, said = {}, notes.setdefault(student.name, [])
        for path in sorted(student.glob("*.ipynb")):
            stem = current_name(_RENAMED.match(path.stem).group("stem"))   # an old name grades as the new
            if stem not in stems:
                said.append(f"{path.name}: not a chapter of the handout, not graded (name it as the "
                            f"handout does, e.g. {stems[0]}.ipynb)")
            elif stem in books:
                said.append(f"{path.name}: a second file for {stem}, not graded (kept {books[stem].name})")
            else:
                books[stem] = path
        if books:
            out[student.name] = books
    if not out:
        raise FileNotFoundError(f"no notebooks in {folder}/<student>/<chapter>.ipynb; name each notebook as "
                                f"the handout does: {', '.join(s + '.ipynb' for s in stems)}")
    return out, {k: v for k, v in notes.items() if v}


def grade(submissions: Path, out: Path, chapters: Path, tests: Path, course: Path | None = None) -> list[dict]:
    """Autograde ``submissions/<student>/<chapter>.ipynb`` and write a CSV to ``out``: one row per
    student; for each exercise, its autograded points and its written points (``label (written)``:
    0 where the answer cell was left as handed out, empty where it awaits grading by hand with
    ``rubrics.md``); empty where the chapter was not submitted; the total so far; and ``notes``
    (a submission nbgrader could not grade, a file left out, an answer that touches the tests).
    A first row gives each column's maximum. One submission that fails does not stop the others.
    Returns the rows."""
    with tempfile.TemporaryDirectory(prefix="tokvec-grading-") as tmp:
        course = Path(course) if course is not None else Path(tmp)
        stems = [p.stem for p in sorted(Path(chapters).glob("*.ipynb"))]
        work, notes = _submissions(submissions, stems)
        stems = [s for s in stems if any(s in books for books in work.values())]
        release(chapters, tests, course, stems=stems)
        graded = {}
        with _course(course) as api:
            for student, books in work.items():
                for stem, path in books.items():
                    target = course / "submitted" / student / stem
                    shutil.rmtree(target, ignore_errors=True)
                    target.mkdir(parents=True)
                    shutil.copyfile(path, target / f"{stem}.ipynb")
                    try:
                        nb = nbformat.read(path, as_version=4)
                    except Exception as error:          # not a notebook at all
                        notes.setdefault(student, []).append(f"{path.name}: not a readable notebook ({error})")
                        continue
                    touched = [c.metadata.get("nbgrader", {}).get("grade_id", "a cell") for c in nb.cells
                               if c.cell_type == "code" and not c.metadata.get("nbgrader", {}).get("locked")
                               and _TAMPER.search(c.source)]
                    if touched:
                        notes.setdefault(student, []).append(
                            f"{stem}: {', '.join(touched)} touch the tests' code; check by hand")
                    result = api.autograde(stem, student, force=True, create=True)
                    if result.get("success"):
                        graded.setdefault(student, set()).add(stem)
                    else:
                        error = (result.get("error") or result.get("log") or "").strip().splitlines()
                        notes.setdefault(student, []).append(
                            f"{stem}: nbgrader could not grade it ({error[-1] if error else 'no message'}); "
                            "compare it with the handout (a copied or deleted test cell?)")
        rows = _table(course, stems, work, graded, notes)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return rows


def _table(course: Path, stems: list[str], work: dict, graded: dict, notes: dict) -> list[dict]:
    from nbgrader.api import Gradebook, MissingEntry

    columns = []                                  # (chapter, grade_id, column name), in notebook order
    for stem in stems:
        source = nbformat.read(course / "source" / stem / f"{stem}.ipynb", as_version=4)
        for cell in source.cells:
            meta = cell.metadata.get("nbgrader", {})
            if meta.get("grade"):
                name = meta["grade_id"]
                name = name.removesuffix("-tests") if name.endswith("-tests") else \
                    name.removesuffix("-words") + " (written)"
                columns.append((stem, meta["grade_id"], name, float(meta["points"])))
    rows = [{"student": "(max points)", **{name: f"{m:g}" for *_, name, m in columns},
             "total": f"{sum(m for *_, m in columns):g}", "notes": ""}]
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        for student in work:
            row, total = {"student": student}, 0.0
            for stem, grade_id, name, _ in columns:
                row[name] = ""
                if stem not in graded.get(student, ()):
                    continue
                try:
                    found = gb.find_grade(grade_id, stem, stem, student)
                except MissingEntry:
                    continue
                # Grade.score reads 0 for an answer nobody has graded yet: take the scores themselves
                score = found.manual_score if found.manual_score is not None else found.auto_score
                if score is not None:
                    row[name], total = f"{score:g}", total + score
            row["total"] = f"{total:g}"
            row["notes"] = "; ".join(notes.get(student, []))
            rows.append(row)
        for student in sorted(set(notes) - set(work)):
            rows.append({"student": student, **{name: "" for *_, name, _ in columns}, "total": "",
                         "notes": "; ".join(notes[student])})
    return rows


def verify(chapters: Path, tests: Path, stems: list[str] | None = None, course: Path | None = None) -> list[dict]:
    """Grade two submissions of each chapter in ``stems`` (all by default): ``solutions`` (the
    handout answered with the chapter's solutions) and ``blank`` (the handout as handed out).
    Prints the table and every test that failed for ``solutions``; returns the rows. The first
    must score every point, the second none (``tests/test_grading.py``).

    The two are graded side by side, each in a process and a course directory of its own
    (``course/blank``, ``course/solutions``: nbgrader's gradebook is one SQLite file, which two
    writers would share badly), as many at once as there are cores, up to two."""
    chapters = Path(chapters)
    with tempfile.TemporaryDirectory(prefix="tokvec-verify-") as tmp:
        tmp = Path(tmp)
        if stems:
            for stem in stems:
                if not (chapters / f"{stem}.ipynb").exists():
                    raise FileNotFoundError(f"no chapter {stem}.ipynb in {chapters}")
        sources = source_notebooks(chapters, tests, stems)
        release(chapters, tests, tmp / "handout-course", tmp / "handout", stems)
        whos = ("blank", "solutions")
        for stem in stems or list(sources):
            handout = nbformat.read(tmp / "handout" / f"{stem}.ipynb", as_version=4)
            for who, nb in (("solutions", solved(handout, sources[stem])), ("blank", handout)):
                (tmp / "in" / who / who).mkdir(parents=True, exist_ok=True)
                nbformat.write(nb, tmp / "in" / who / who / f"{stem}.ipynb")
        course = Path(course) if course is not None else tmp / "course"
        workers = max(1, min(len(whos), os.cpu_count() or 1))
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
            runs = [pool.submit(grade, tmp / "in" / who, tmp / f"{who}.csv", chapters, tests, course / who)
                    for who in whos]
            tables = [run.result() for run in runs]
        if any(table[0] != tables[0][0] for table in tables):
            raise RuntimeError("the two gradings disagree on the points of the exercises")
        rows = [tables[0][0]] + [row for table in tables for row in table[1:]]
        for row in rows:
            print(", ".join(f"{k}={v}" for k, v in row.items() if v != ""))
        for path in sorted((course / "solutions" / "autograded" / "solutions").glob("*/*.ipynb")):
            for cell in nbformat.read(path, as_version=4).cells:
                errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
                if errors:
                    text = "".join(o.get("text", "") for o in cell.outputs if o.get("output_type") == "stream")
                    print(f"--- {path.stem}: a cell fails with the solutions:\n{cell.source[:300]}\n{text}"
                          f"{errors[0].ename}: {errors[0].evalue[:500]}")
    return rows


def verdict(rows: list[dict]) -> list[str]:
    """What is wrong with :func:`verify`'s rows: the solutions must score every autograded point
    (their written answers await grading by hand: empty), the blank handout none, written or not."""
    full = rows[0]
    solutions = next(r for r in rows if r["student"] == "solutions")
    blank = next(r for r in rows if r["student"] == "blank")
    columns = [k for k in full if k not in ("student", "total", "notes")]
    problems = [f"the solutions score {solutions[k] or 'nothing'} of {full[k]} on {k}" for k in columns
                if not k.endswith(" (written)") and solutions[k] != full[k]]
    problems += [f"the solutions' written answer {k} is scored {solutions[k]}, not left to grade by hand"
                 for k in columns if k.endswith(" (written)") and solutions[k] != ""]
    problems += [f"the blank handout scores {blank[k] or 'nothing'} on {k}" for k in columns if blank[k] != "0"]
    problems += [f"{r['student']}: {r['notes']}" for r in (solutions, blank) if r["notes"]]
    return problems


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
    ver.add_argument("--course", type=Path, default=None,
                     help="keep nbgrader's course directories here (blank/ and solutions/)")
    args = parser.parse_args(argv)
    if args.command == "verify":
        rows = verify(args.chapters, args.tests, args.stems, args.course)
        problems = verdict(rows)
        print("OK" if not problems else "NOT OK: " + "; ".join(problems))
        return 0 if not problems else 1
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
