"""Autograded exercises with nbgrader: the student handout, and grades for a folder of submissions.

Used by ``make student`` and ``make grade`` (see the instructor guide, ``instructors.md``)::

    python -m tokvec.course.grading release chapters grading student
    python -m tokvec.course.grading grade SUBMISSIONS --out grades.csv

The filled chapters (``chapters/``) and the tests (``grading/<chapter>.py``) are the only
sources. From them this module writes nbgrader's *source* notebooks (the handout's plain
Markdown from :mod:`tokvec.course.student`, each solution between ``### BEGIN SOLUTION`` and
``### END SOLUTION``, a locked test cell with its points after it, hidden tests between
``### BEGIN HIDDEN TESTS`` and ``### END HIDDEN TESTS``), and nbgrader's ``generate_assignment``
makes the handout from them (solutions and hidden tests out). :func:`grade` puts the test cells
back into each submission itself (hidden tests included, with the token of
:mod:`tokvec.course.integrity`), runs it with nbclient in a fresh kernel, in a folder of its own
under :class:`Limits`, and scores each test cell from its output; with a course folder kept, it
also fills nbgrader's gradebook for Formgrader (nbgrader's ``autograde``, told not to run
anything). Everything is local (the course's own Python kernel, a SQLite gradebook): no network,
no container.

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
import ast
import copy
import functools
import hashlib
import json
import multiprocessing
import os
import re
import shutil
import subprocess
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


#: Where the grader's cell prints its pass token: :func:`grade` puts a token of its own here, one
#: per submission and exercise, made from a secret of the run, when it runs the notebook (no file
#: holds it).
TOKEN = "0" * 24
#: The per-cell timeout of :func:`grade`, in seconds: an answer stuck in a loop costs this much.
TIMEOUT = 300


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


def _code(exercise: Exercise, name: str, imports: dict[str, str] | None = None) -> str:
    """The grader's test cell. Visible: the imports its tests use (``imports``: name -> import
    line, from the chapter), the tests, the report. Hidden: a private copy of ``Checks`` loaded
    before the tests (an answer that patched ``tokvec.course.checks`` does not reach it), the
    hidden tests, and the epilogue, which prints :data:`TOKEN` only if every test passed."""
    from tokvec.course import integrity

    path, digest = integrity.checks_file()
    lines = [f"# Tests of {name} ({exercise.label}), {_points(exercise.points)}: run this cell after "
             "your answer.", "from tokvec.course.checks import Checks", *_imports_for(exercise, imports or {}),
             "### BEGIN HIDDEN TESTS", integrity.prelude(path, digest), "### END HIDDEN TESTS", "",
             f"check = Checks({name!r})", exercise.visible, "check.report()", "### BEGIN HIDDEN TESTS"]
    if exercise.hidden:
        lines += ["check.hidden()", exercise.hidden, "check.report()"]
    lines += [integrity.epilogue(exercise.label, TOKEN), "### END HIDDEN TESTS"]
    return "\n".join(lines)


def free_names(code: str) -> tuple[set[str], list[str]]:
    """The names ``code`` binds, and those it reads (in order)."""
    bound, used = set(), []
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Name):
            (bound.add if isinstance(node.ctx, ast.Store) else used.append)(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
    return bound, used


def chapter_imports(sources: list[str]) -> dict[str, str]:
    """Every name the code cells ``sources`` import, with one import line that binds it (the
    first met): ``{"np": "import numpy as np", "embed": "from tokvec.embedding import embed"}``."""
    out: dict[str, str] = {}
    for source in sources:
        lines = [line for line in source.split("\n") if not line.lstrip().startswith(("%", "!"))]
        try:
            tree = ast.parse("\n".join(lines))
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    out.setdefault((alias.asname or alias.name).split(".")[0], ast.unparse(ast.Import([alias])))
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module != "__future__":
                for alias in node.names:
                    if alias.name != "*":
                        out.setdefault(alias.asname or alias.name,
                                       ast.unparse(ast.ImportFrom(node.module, [alias], 0)))
    return out


def _imports_for(exercise: Exercise, imports: dict[str, str]) -> list[str]:
    """The import lines of the names an exercise's tests read but do not bind (its answer's
    names excepted): a test cell imports what it uses, so an answer cell that drops the TODO
    cell's imports leaves its tests working."""
    bound, used = free_names(exercise.visible + "\n" + exercise.hidden)
    wanted = [n for n in used if n not in bound and n not in exercise.defines and n in imports]
    return sorted(dict.fromkeys(imports[n] for n in wanted))


def graded_cells(todo, exercise: Exercise, name: str, solution_code: list[str],
                 imports: dict[str, str] | None = None) -> list:
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
    tests = nbformat.v4.new_code_cell(_code(exercise, name, imports))
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

    def __init__(self, tests: dict[str, Exercise], file: Path, imports: dict[str, str] | None = None):
        self.tests, self.file, self.imports = tests, file, imports or {}

    def code(self, todo, label: str, name: str, solution_code: list[str]) -> list:
        if label not in self.tests:
            raise ValueError(f"exercise {label!r} has a code solution but no tests: add a "
                             f"'# %% {label} | points: N' section to {self.file}")
        return graded_cells(todo, self.tests[label], name, solution_code, self.imports)

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
        chapter = nbformat.read(path, as_version=4)
        imports = chapter_imports([c.source for c in chapter.cells if c.cell_type == "code"])
        nb = student_notebook(chapter, contexts[path.stem], _Graded(spec, file, imports))
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
def _course(root: Path, execute: bool = True):
    """nbgrader's API on the course directory ``root``, with this Python's scripts on PATH
    (nbgrader runs ``alembic`` to create its gradebook). ``execute=False``: its autograde only
    reads notebooks :func:`grade` has already run (their outputs kept)."""
    from nbgrader.apps import NbGraderAPI
    from traitlets.config import Config

    config = Config()
    config.CourseDirectory.root = str(root)
    config.Exchange.root = str(Path(root) / "exchange")   # unused; nbgrader wants a writable one
    config.ClearSolutions.code_stub = {"python": CODE_STUB}
    config.ClearSolutions.text_stub = TEXT_STUB
    if not execute:
        config.Execute.enabled = False
        config.ClearOutput.enabled = False
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


# --- grading a class ------------------------------------------------------------------------

@dataclass
class Limits:
    """What the kernel of one submission may use; 0 means no limit. ``cpu``: seconds of CPU
    time (the kernel is killed past it), ``memory``: bytes of address space (an allocation past
    it raises ``MemoryError``; CUDA reserves far more address space than it uses, so raise it,
    or set 0, to grade on a GPU), ``file_size``: bytes of the largest file it may write."""
    cpu: int = 1800
    memory: int = 8 * 2**30
    file_size: int = 256 * 2**20


def _set_limits(limits: Limits) -> None:                     # in the kernel's process, before it starts
    import resource

    for kind, value in ((resource.RLIMIT_CPU, limits.cpu), (resource.RLIMIT_AS, limits.memory),
                        (resource.RLIMIT_FSIZE, limits.file_size)):
        if value:
            resource.setrlimit(kind, (value, value))


def _cell_name(cell, index: int) -> str:
    grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
    return f"the test cell of {grade_id.removesuffix('-tests')}" if grade_id and grade_id.endswith("-tests") \
        else (grade_id or f"cell {index + 1}")


def _client_class():
    """nbclient's client, running the test cells outside IPython's history: the token a test cell
    prints is in its source, and a function the tests call could read ``In[-1]``."""
    from nbclient import NotebookClient

    class Client(NotebookClient):
        async def async_execute_cell(self, cell, cell_index, execution_count=None, store_history=True):
            if cell.metadata.get("nbgrader", {}).get("grade_id", "").endswith("-tests"):
                store_history = False
            return await super().async_execute_cell(cell, cell_index, execution_count, store_history)

    return Client


def _run_one(job: dict) -> dict:
    """Grade one submission, in a process of its own (:func:`grade` runs several at once).

    The test cells are put back from the release (hidden tests included, each with a token made
    for this submission from :func:`grade`'s secret), the notebook runs in a new folder that
    holds only it, in a fresh kernel under :class:`Limits`, and each exercise passes only if its
    test cell printed its token (:func:`tokvec.course.integrity.verdicts`): a verdict the
    student's code cannot write, since it never sees the secret."""
    import time

    from nbclient.exceptions import DeadKernelError

    from tokvec.course import integrity

    start, stem, path = time.monotonic(), job["stem"], Path(job["path"])
    out = {"student": job["student"], "stem": stem, "notebook": None, "verdicts": {}, "written": {}, "notes": []}
    notes = out["notes"]
    try:
        submitted = nbformat.read(path, as_version=4)
    except Exception as error:                                # not a notebook at all
        notes.append(f"{path.name}: not a readable notebook ({str(error).splitlines()[0][:200]})")
        out["seconds"] = time.monotonic() - start
        return out
    handout = nbformat.read(job["handout"], as_version=4)
    source = nbformat.read(job["source"], as_version=4)
    notes += [f"{stem}: {note}" for note in integrity.structure(submitted, handout)]
    given = {c.get("id"): c.source for c in handout.cells}
    for index, cell in enumerate(submitted.cells):
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type == "code" and not meta.get("locked") and given.get(cell.get("id")) != cell.source:
            reasons = integrity.flags(cell.source)
            if reasons:
                notes.append(f"{stem}: {_cell_name(cell, index)} {'; '.join(reasons)}: read it by hand")
    locked = {c.metadata["nbgrader"]["grade_id"]: c for c in source.cells
              if c.metadata.get("nbgrader", {}).get("locked")}
    handed = {c.metadata["nbgrader"]["grade_id"]: c.source for c in handout.cells
              if c.metadata.get("nbgrader", {}).get("grade_id")}
    tokens, secret = {}, hashlib.sha256(f"{job['secret']}/{job['student']}/{stem}".encode()).hexdigest()
    for cell in submitted.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if grade_id in locked and cell.cell_type == locked[grade_id].cell_type:
            cell.source = locked[grade_id].source
            if grade_id.endswith("-tests"):
                label = grade_id.removesuffix("-tests")
                tokens[label] = integrity.token(secret, label)
                cell.source = cell.source.replace(TOKEN, tokens[label])
        elif grade_id and grade_id.endswith("-words"):
            out["written"][grade_id.removesuffix("-words")] = 0 if cell.source == handed.get(grade_id) else None
    for cell in submitted.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    submitted.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    running, stopped, limit, _Client = [0], [], job["timeout"], _client_class()

    finished = set()                            # the cells whose run ended without an error

    def executed(cell, cell_index, execute_reply):
        if execute_reply.get("content", {}).get("status") == "ok":
            finished.add(cell_index)
        if execute_reply.get("content", {}).get("ename") == "CellTimeoutError":
            stopped.append(cell_index)
            cell.outputs.append(nbformat.v4.new_output(
                "error", ename="CellTimeoutError", evalue=f"stopped after {limit} s",
                traceback=[f"CellTimeoutError: the cell ran for {limit} s and was stopped"]))

    with tempfile.TemporaryDirectory(prefix="tokvec-run-") as where:
        nbformat.write(submitted, Path(where) / f"{stem}.ipynb")   # the folder holds only this notebook
        client = _Client(
            submitted, timeout=limit, interrupt_on_timeout=True, allow_errors=True, kernel_name="python3",
            record_timing=False, resources={"metadata": {"path": where}},
            error_on_timeout={"ename": "CellTimeoutError", "evalue": f"stopped after {limit} s",
                              "traceback": [f"CellTimeoutError: the cell ran for {limit} s and was stopped"]},
            on_cell_start=lambda cell, cell_index: running.__setitem__(0, cell_index), on_cell_executed=executed)
        try:                                    # the kernel's own log (its TCP warning) is not the grader's
            client.execute(preexec_fn=functools.partial(_set_limits, job["limits"]), stderr=subprocess.DEVNULL)
        except DeadKernelError:
            index = running[0]
            notes.append(f"{stem}: the kernel died in {_cell_name(submitted.cells[index], index)} (os._exit, a "
                         "crash, or past a limit: CPU time, memory, file size); the cells after it did not run")
        except Exception as error:                            # the kernel did not start, a broken notebook
            notes.append(f"{stem}: could not run it ({type(error).__name__}: {str(error).splitlines()[0][:200]})")
    for index in stopped:
        notes.append(f"{stem}: {_cell_name(submitted.cells[index], index)} stopped after {limit} s (a loop that "
                     "never ends?); the cells after it ran")
    # A test cell passes only if its run ended without an error, its last line on stdout is its
    # token, and the guard saw nothing: code that found the token while the cell ran (and printed
    # it, then stopped the cell, or let the tests fail) does not score.
    out["verdicts"] = integrity.verdicts(submitted, tokens)
    for index, cell in enumerate(submitted.cells):
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id", "")
        label = grade_id.removesuffix("-tests")
        if not grade_id.endswith("-tests") or not out["verdicts"].get(label):
            continue
        outputs = cell.get("outputs", [])
        stdout = "".join(o.get("text", "") for o in outputs if o.get("name") == "stdout").rstrip("\n")
        last = stdout.rsplit("\n", 1)[-1]
        if index not in finished or any(o.get("output_type") == "error" for o in outputs) \
                or last != f"{integrity.VERDICT_PREFIX}{label} {tokens[label]}" \
                or integrity.GUARD_PREFIX in json.dumps(outputs):
            out["verdicts"][label] = False
    notes += [f"{stem}: {note}; read it by hand" for note in integrity.guard_notes(submitted)]
    out["notebook"] = nbformat.writes(submitted)
    out["seconds"] = time.monotonic() - start
    return out


def select(only: list[str], chapters: Path, tests: Path) -> list[str]:
    """The chapters named in ``only``: by notebook name (the current or a previous one,
    :mod:`tokvec.course.renamed`) or by the label of one of their exercises, which stays the same
    when chapters are renumbered."""
    stems = [p.stem for p in sorted(Path(chapters).glob("*.ipynb"))]
    labels = {label: p.stem for p in sorted(Path(tests).glob("*.py")) for label in read_tests(p)}
    out = []
    for item in (i.strip() for i in only):
        name = current_name(item.removesuffix(".ipynb"))
        stem = name if name in stems else labels.get(item)
        if stem is None:
            raise ValueError(f"--only {item!r} names no chapter and no exercise: use a notebook name "
                             f"({', '.join(stems)}) or an exercise label (e.g. {next(iter(labels), 'tok-ex-1')})")
        if stem not in out:
            out.append(stem)
    return out


def _progress(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def grade(submissions: Path, out: Path, chapters: Path, tests: Path, course: Path | None = None, *,
          only: list[str] | None = None, jobs: int = 1, timeout: int = TIMEOUT, limits: Limits | None = None,
          gradebook: bool = False, progress=_progress) -> list[dict]:
    """Autograde the notebooks under ``submissions`` (``<student>/<chapter>.ipynb``; see
    :func:`tokvec.course.collect.find_submissions`) and write the grades to ``out``: one row per
    student; for each exercise, its autograded points and its written points (``label
    (written)``: 0 where the answer cell was left as handed out, empty where it awaits grading by
    hand with ``rubrics.md``); empty where the chapter was not submitted; the total so far; and
    ``notes``. ``out`` has no maximum row, for an LMS import; the maxima go beside it
    (:func:`tokvec.course.collect.write_grades`). Returns the rows, the maxima first.

    ``only`` (chapter names or exercise labels) grades only those chapters; ``jobs`` notebooks run
    at once, each in a process, folder and kernel of its own under ``limits``, each cell stopped
    after ``timeout`` seconds. ``gradebook`` also fills nbgrader's gradebook in ``course`` and writes
    its ``nbgrader_config.py`` there, for Formgrader. One submission that fails never stops the
    others; what went wrong is in its notes."""
    import time
    from concurrent.futures import FIRST_COMPLETED, wait

    from tokvec.course import integrity
    from tokvec.course.collect import TOP, find_submissions, write_grades

    if jobs < 1 or timeout < 1:
        raise ValueError(f"jobs and timeout must be at least 1, got jobs={jobs}, timeout={timeout}")
    limits = limits or Limits()
    chapters, tests = Path(chapters), Path(tests)
    with tempfile.TemporaryDirectory(prefix="tokvec-grading-") as tmp:
        course = Path(course) if course is not None else Path(tmp) / "course"
        every = [p.stem for p in sorted(chapters.glob("*.ipynb"))]
        work, notes = find_submissions(submissions, every)
        for note in notes.pop(TOP, []):                        # not a student's: no row for an LMS
            progress(f"beside the student folders, not graded: {note}")
        wanted = select(only, chapters, tests) if only else every
        left = sum(stem not in wanted for books in work.values() for stem in books)
        if left:
            progress(f"{left} notebooks of other chapters than {', '.join(wanted)} left out (--only)")
        work = {s: {k: v for k, v in books.items() if k in wanted} for s, books in work.items()}
        stems = [s for s in wanted if any(s in books for books in work.values())]
        if not stems:
            raise FileNotFoundError(f"no submission of {', '.join(wanted)} in {submissions}")
        release(chapters, tests, course, stems=stems)
        secret = integrity.new_secret()        # kept here, never in a file or a notebook
        todo = [{"student": student, "stem": stem, "path": str(path), "secret": secret, "timeout": timeout,
                 "limits": limits, "source": str(course / "source" / stem / f"{stem}.ipynb"),
                 "handout": str(course / "release" / stem / f"{stem}.ipynb")}
                for student, books in work.items() for stem, path in books.items()]
        progress(f"grading {len(todo)} notebooks of {len(work)} students, {min(jobs, len(todo))} at a time, "
                 f"each cell stopped after {timeout} s")
        results, began = [], time.monotonic()
        width = len(str(len(todo)))

        def report(result):
            results.append(result)
            passed = sum(result["verdicts"].values())
            said = f"; {len(result['notes'])} notes" if result["notes"] else ""
            progress(f"[{len(results):>{width}}/{len(todo)}] {result['student']} {result['stem']}: "
                     f"{passed} of {len(result['verdicts'])} exercises pass{said} ({result['seconds']:.0f} s; "
                     f"{time.monotonic() - began:.0f} s in all)")

        if jobs == 1 or len(todo) == 1:
            for job in todo:
                report(_run_one(job))
        else:
            with ProcessPoolExecutor(min(jobs, len(todo)), mp_context=multiprocessing.get_context("spawn")) as pool:
                pending = {pool.submit(_run_one, job) for job in todo}
                while pending:
                    done, pending = wait(pending, timeout=60, return_when=FIRST_COMPLETED)
                    for future in done:
                        report(future.result())
                    if not done:
                        progress(f"... {len(pending)} notebooks still to grade "
                                 f"({time.monotonic() - began:.0f} s in all)")
        for result in results:
            notes.setdefault(result["student"], []).extend(result["notes"])
            if result["notebook"] is not None:
                target = course / "autograded" / result["student"] / result["stem"]
                target.mkdir(parents=True, exist_ok=True)
                (target / f"{result['stem']}.ipynb").write_text(result["notebook"], encoding="utf-8")
        manual = _fill_gradebook(course, results, notes, timeout) if gradebook else {}
        rows = _table(course, stems, work, results, notes, manual)
    write_grades(rows, Path(out))
    return rows


def _fill_gradebook(course: Path, results: list[dict], notes: dict, timeout: int) -> dict:
    """Put the graded notebooks into nbgrader's gradebook of ``course`` (no second run: nbgrader
    only reads their outputs), set each test cell's score from the verdicts, and write
    ``nbgrader_config.py`` so that Formgrader opens the course as it is. Returns the written
    answers already graded by hand there: ``{(student, stem, grade_id): points}``."""
    from nbgrader.api import Gradebook, MissingEntry

    (course / "nbgrader_config.py").write_text(
        "# nbgrader's settings for this course folder, written by tokvec.course.grading:\n"
        "# run `nbgrader formgrader` (or open JupyterLab's Formgrader) from this folder.\n"
        "c = get_config()  # noqa: F821\n"
        f"c.CourseDirectory.root = {str(course.resolve())!r}\n"
        f"c.ClearSolutions.code_stub = {{'python': {CODE_STUB!r}}}\n"
        f"c.ClearSolutions.text_stub = {TEXT_STUB!r}\n"
        f"c.Execute.timeout = {timeout}\n", encoding="utf-8")
    manual = {}
    with _course(course, execute=False) as api:
        for result in results:
            if result["notebook"] is None:
                continue
            student, stem = result["student"], result["stem"]
            target = course / "submitted" / student / stem
            shutil.rmtree(target, ignore_errors=True)
            target.mkdir(parents=True)
            (target / f"{stem}.ipynb").write_text(result["notebook"], encoding="utf-8")
            outcome = api.autograde(stem, student, force=True, create=True)
            if not outcome.get("success"):
                error = (outcome.get("error") or outcome.get("log") or "").strip().splitlines()
                notes.setdefault(student, []).append(
                    f"{stem}: not in nbgrader's gradebook ({error[-1] if error else 'no message'}); "
                    "its grades are in the CSV only")
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        for result in results:
            for label, passed in result["verdicts"].items():
                try:
                    found = gb.find_grade(f"{label}-tests", result["stem"], result["stem"], result["student"])
                except MissingEntry:
                    continue
                found.auto_score = found.max_score if passed else 0
                found.needs_manual_grade = False
            for label in result["written"]:
                try:
                    found = gb.find_grade(f"{label}-words", result["stem"], result["stem"], result["student"])
                except MissingEntry:
                    continue
                if found.manual_score is not None:
                    manual[(result["student"], result["stem"], f"{label}-words")] = found.manual_score
        gb.db.commit()
    return manual


def _table(course: Path, stems: list[str], work: dict, results: list[dict], notes: dict, manual: dict) -> list[dict]:
    columns = []                                  # (chapter, grade_id, column name, max), in notebook order
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
    graded = {(r["student"], r["stem"]): r for r in results if r["notebook"] is not None}
    for student in sorted(set(work) | set(notes)):
        row, total = {"student": student}, 0.0
        for stem, grade_id, name, points in columns:
            row[name], result = "", graded.get((student, stem))
            if result is None:
                continue
            if grade_id.endswith("-tests"):
                score = points if result["verdicts"].get(grade_id.removesuffix("-tests")) else 0.0
            else:
                score = manual.get((student, stem, grade_id), result["written"].get(grade_id.removesuffix("-words")))
            if score is not None:
                row[name], total = f"{score:g}", total + score
        row["total"] = f"{total:g}" if any((student, s) in graded for s in stems) else ""
        row["notes"] = "; ".join(notes.get(student, []))
        rows.append(row)
    return rows


def verify(chapters: Path, tests: Path, stems: list[str] | None = None, course: Path | None = None) -> list[dict]:
    """Grade two submissions of each chapter in ``stems`` (by default every chapter with a test
    file in ``tests``): ``solutions`` (the handout answered with the chapter's solutions) and
    ``blank`` (the handout as handed out). Prints the table and every test that failed for
    ``solutions``; returns the rows. The first must score every point, the second none
    (``tests/test_grading.py``).

    The notebooks are graded side by side, as many at once as there are cores (:func:`grade`);
    ``course`` keeps what :func:`grade` keeps there (``autograded/<who>/<chapter>/``)."""
    chapters = Path(chapters)
    with tempfile.TemporaryDirectory(prefix="tokvec-verify-") as tmp:
        tmp = Path(tmp)
        if stems:
            for stem in stems:
                if not (chapters / f"{stem}.ipynb").exists():
                    raise FileNotFoundError(f"no chapter {stem}.ipynb in {chapters}")
        # the chapters with exercises (an appendix has none: nbval runs it)
        stems = stems or [p.stem for p in sorted(chapters.glob("*.ipynb")) if (Path(tests) / f"{p.stem}.py").exists()]
        sources = source_notebooks(chapters, tests, stems)
        release(chapters, tests, tmp / "handout-course", tmp / "handout", stems)
        for stem in stems:
            handout = nbformat.read(tmp / "handout" / f"{stem}.ipynb", as_version=4)
            for who, nb in (("solutions", solved(handout, sources[stem])), ("blank", handout)):
                (tmp / "in" / who).mkdir(parents=True, exist_ok=True)
                nbformat.write(nb, tmp / "in" / who / f"{stem}.ipynb")
        course = Path(course) if course is not None else tmp / "course"
        rows = grade(tmp / "in", tmp / "grades.csv", chapters, tests, course, jobs=os.cpu_count() or 1)
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
                     help="keep nbgrader's course directory here: its gradebook (for Formgrader, with its "
                          "nbgrader_config.py) and the graded notebooks, each test cell's output included")
    gra.add_argument("--only", action="append", default=[], metavar="NAMES",
                     help="grade only these chapters, by notebook name or by an exercise's label "
                          "(comma-separated, or repeat the option); default: every chapter submitted")
    gra.add_argument("-j", "--jobs", type=int, default=1, help="notebooks graded at once (default 1; "
                     "one per core is the fastest)")
    gra.add_argument("--timeout", type=int, default=TIMEOUT,
                     help=f"seconds a cell may run before it is stopped, with a note (default {TIMEOUT})")
    gra.add_argument("--cpu-time", type=int, default=Limits.cpu,
                     help=f"CPU seconds one notebook's kernel may use (default {Limits.cpu}; 0: no limit)")
    gra.add_argument("--memory", type=int, default=Limits.memory // 2**30,
                     help=f"GiB of address space one kernel may use (default {Limits.memory // 2**30}; 0: no "
                          "limit, for grading on a GPU)")
    gra.add_argument("--file-size", type=int, default=Limits.file_size // 2**20,
                     help=f"MiB of the largest file a kernel may write (default {Limits.file_size // 2**20})")
    ver = sub.add_parser("verify", help="grade the solutions (full marks?) and the blank handout (zero?)")
    ver.add_argument("stems", nargs="*", help="chapters to check, e.g. 01_tokenization (default: all)")
    ver.add_argument("--chapters", type=Path, default=Path("chapters"))
    ver.add_argument("--tests", type=Path, default=Path("grading"))
    ver.add_argument("--course", type=Path, default=None,
                     help="keep the course folder here (the graded notebooks in autograded/blank/ and "
                          "autograded/solutions/)")
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
    only = [item for items in args.only for item in items.split(",") if item.strip()]
    limits = Limits(args.cpu_time, args.memory * 2**30, args.file_size * 2**20)
    rows = grade(args.submissions, args.out, args.chapters, args.tests, args.course, only=only, jobs=args.jobs,
                 timeout=args.timeout, limits=limits, gradebook=args.course is not None)
    from tokvec.course.collect import max_path

    print(f"{len(rows) - 1} students: {args.out} (the maximum points in {max_path(args.out)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
