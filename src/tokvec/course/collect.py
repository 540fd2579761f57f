"""Collecting a class's submissions, and the grade CSVs an LMS can import.

Used before and after ``make grade`` (see the instructor guide, ``instructors.md``)::

    python -m tokvec.course.collect moodle  moodle-download.zip submissions
    python -m tokvec.course.collect canvas  submissions.zip     submissions
    python -m tokvec.course.collect hub     /home               submissions --chapters 05_positional_embedding
    python -m tokvec.course.collect merge   week1.csv week2.csv --out term.csv

The grader reads one folder per student, ``submissions/<student id>/``, with the student's
notebooks anywhere inside it. :func:`find_submissions` turns that folder into the notebooks to
grade, and says in a note what it did not grade and why: no student folder and no file is
dropped silently (an export that is not a notebook, a second copy of a chapter, hidden files, a
folder with nothing gradable, files lying beside the student folders).

**Student ids.** A folder name made of letters, digits, ``_``, ``-`` and ``.`` is the student's
id as it is. Any other name (a Moodle folder ``Ada Lovelace_1234_assignsubmission_file_``, a hub
user ``ada@uni.edu``) is graded under a safe id, with a note giving the original name; the rule
(:func:`safe_id`) depends on the name alone, so the id is the same every week:

* Moodle's suffix ``_assignsubmission_<plugin>_`` is dropped, ``@`` reads ``_at_``, every run of
  other characters becomes ``-``, and letters are lowercased: ``ada-lovelace_1234``,
  ``ada_at_uni.edu``;
* where that id is also another folder's name (or two odd names give the same id), each odd name
  gets ``-`` and the first 6 hex digits of the SHA-1 of its original name: collision-free.

The imports from an LMS use the same ids, so grading a Moodle download directly or after
``collect moodle`` gives the same rows: Moodle's id is the name plus the *participant id* Moodle
puts in the folder name (``ada-lovelace_1234``), Canvas's the sortable name plus the *user id*
(``lovelaceada_123``). The number makes the id unique and is what each LMS matches grades on;
the name makes the CSV readable. Each import also writes ``students.csv`` (id, the name as the
LMS gives it, the LMS's number, the file it came from).

**CSVs.** :func:`write_grades` writes the grades without the ``(max points)`` row that
``grade`` returns first, ready for an LMS import, and the maxima to ``<name>.max.csv`` beside it;
:func:`read_grades` reads both back; :func:`merge` joins several weeks into one table.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import re
import shutil
import sys
import tempfile
import zipfile
from contextlib import contextmanager
from pathlib import Path

from tokvec.course.renamed import current_name

__all__ = ["MAX_ROW", "STUDENTS", "TOP", "canvas", "find_submissions", "hub", "main", "max_path", "merge", "moodle",
           "read_grades", "safe_id", "write_grades"]

#: The student column of the first row of ``grade``'s rows: each column's maximum.
MAX_ROW = "(max points)"
#: The id under which :func:`find_submissions` notes files that lie beside the student folders.
TOP = "(submissions folder)"
_FIXED = ("student", "total", "notes")           # the columns that are not exercises
#: The list of students an import writes beside their folders (the one file grading passes over).
STUDENTS = "students.csv"

# What students' tools do to a file name: Colab's "Save a copy in Drive" ("Copy of X"), a
# browser's second download ("X (1)"), Jupyter's "Duplicate" ("X-Copy1"), Canvas's repeated
# upload ("X-1").
_RENAMED = re.compile(r"^(?:Copy of )?(?P<stem>.+?)(?: \(\d+\)|-Copy\d+|-\d+)?$")
_SAFE = re.compile(r"[\w.-]+")
# Moodle's "Download all submissions": "<full name>_<participant id>_assignsubmission_<plugin>_"
# (mod/assign: the full name with '_' made ' ', then the id, subtype and plugin; a folder per
# student and plugin, or, without "Download submissions in folders", the file name appended).
_MOODLE = re.compile(r"^(?P<name>[^_]*)_(?P<id>\d+)_assignsubmission_(?P<plugin>[a-z]+)(?:_(?P<file>.*))?$")
# Canvas's "Download Submissions": "<sortable name>[_LATE or _late]_<user id>_<submission id>_<file name>";
# a text or URL entry has no submission id ("<name>_<user id>_text.html").
_CANVAS = re.compile(r"^(?P<name>[^_]+?)(?i:_late)?_(?P<id>\d+)_(?:(?P<sub>\d+)_)?(?P<file>.+)$")

# Files that are not notebooks, by suffix: what they are and what to ask the student for.
_EXPORTS = {
    ".py": "a Python export, not a notebook: ask for File > Download > Download .ipynb",
    ".html": "an HTML export, not a notebook: ask for the .ipynb file (File > Download > Download .ipynb)",
    ".htm": "an HTML export, not a notebook: ask for the .ipynb file (File > Download > Download .ipynb)",
    ".pdf": "a PDF export, not a notebook: ask for the .ipynb file (File > Download > Download .ipynb)",
    ".zip": "an archive: unpack it into the student's folder and grade again",
    ".gz": "an archive: unpack it into the student's folder and grade again",
    ".tar": "an archive: unpack it into the student's folder and grade again",
    ".7z": "an archive: unpack it into the student's folder and grade again",
    ".rar": "an archive: unpack it into the student's folder and grade again",
}
_OTHER = "not a notebook, not graded (the grader reads .ipynb files only)"


def safe_id(name: str) -> str:
    """A student id made of letters, digits, ``_``, ``-`` and ``.`` for the folder name ``name``:
    ``name`` itself where it already is one (and no Moodle folder), else the rule of this module's
    docstring (``"Ada Lovelace_1234_assignsubmission_file_"`` -> ``"ada-lovelace_1234"``,
    ``"ada@uni.edu"`` -> ``"ada_at_uni.edu"``). Collisions are :func:`_ids`'s business."""
    moodle = _MOODLE.match(name)
    if moodle and not moodle.group("file"):
        return _slug(f"{moodle.group('name')}_{moodle.group('id')}")
    if _SAFE.fullmatch(name) and not name.startswith("."):
        return name
    return _slug(name)


def _slug(name: str) -> str:
    out = re.sub(r"[^\w.-]+", "-", name.replace("@", "_at_")).strip("-_.").lower()
    return out or "student-" + _digest(name)


def _person(name: str) -> str:
    """Who a folder belongs to: Moodle's folders of one student (a folder per plugin, ``..._file_``
    and ``..._onlinetext_``) are one person; any other folder is its own."""
    moodle = _MOODLE.match(name)
    return f"{moodle.group('name')}_{moodle.group('id')}" if moodle and not moodle.group("file") else name


def _digest(name: str) -> str:
    return hashlib.sha1(name.encode("utf-8")).hexdigest()[:6]


def _ids(names: list[str]) -> dict[str, str]:
    """``{folder name: student id}`` for every name, collision-free (see the module docstring)."""
    wanted = {name: safe_id(name) for name in names}
    kept = {name for name in names if wanted[name] == name}
    count: dict[str, int] = {}
    for sid in {(sid, _person(name)) for name, sid in wanted.items()}:   # one Moodle student, one id
        count[sid[0]] = count.get(sid[0], 0) + 1
    return {name: sid if name in kept or (sid not in kept and count[sid] == 1) else f"{sid}-{_digest(name)}"
            for name, sid in wanted.items()}


def _chapter(name: str) -> str:
    """The chapter a notebook's file stem stands for: renamed copies and old names undone."""
    return current_name(_RENAMED.match(name).group("stem"))


def _hidden(path: Path, root: Path) -> bool:
    return any(part.startswith(".") for part in path.relative_to(root).parts)


_Found = tuple[dict[str, dict[str, Path]], dict[str, list[str]]]


def find_submissions(folder: Path, stems: list[str]) -> _Found:
    """``folder/<student>/.../<chapter>.ipynb`` -> ``({student id: {chapter: path}}, {id: [notes]})``.

    Each folder directly in ``folder`` is a student; its notebooks are found at any depth (what
    ``cp -r /home/ada/student submissions/ada/`` gives). A notebook renamed by Colab, a browser,
    Jupyter or Canvas ("Copy of 05_x", "05_x (1)", "05_x-Copy1", "05_x-1") counts as its chapter,
    and so does one saved under a chapter's previous name (:mod:`tokvec.course.renamed`). Of
    two files for one chapter the one nearest the top, under the handout's name, is graded and
    the other noted. Every other file is named in a note with the fix (an export that is not a
    notebook, a notebook that is no chapter); hidden files and ``.ipynb_checkpoints`` are
    counted in one note. A student with nothing gradable gets notes only ("no notebook found"),
    an odd folder name a safe id (:func:`safe_id`) and a note (Moodle's folders of one student,
    one per plugin, are one student), and files beside the student folders a note under the id
    :data:`TOP` (all but :data:`STUDENTS`, an import's own list). Raises ``FileNotFoundError``
    when no student has a gradable notebook, naming the layout expected."""
    folder = Path(folder)
    layout = f"{folder}/<student>/<chapter>.ipynb"
    if not folder.is_dir():
        raise FileNotFoundError(f"no submissions folder {folder}: put each student's notebooks in {layout}")
    stems = list(stems)
    if not stems:
        raise ValueError("stems is empty: pass the handout's chapter names, e.g. ['05_positional_embedding']")
    entries = sorted(folder.iterdir())
    students = [p for p in entries if p.is_dir() and not p.name.startswith(".")]
    ids = _ids([p.name for p in students])
    out: dict[str, dict[str, Path]] = {}
    notes: dict[str, list[str]] = {}
    loose = [p for p in entries if p not in students and p.name != STUDENTS]
    if loose:
        shown = ", ".join(p.name + ("/" if p.is_dir() else "") for p in loose)
        notes[TOP] = [f"{shown}: not in a student's folder, not graded (put each student's files in "
                      f"{folder}/<student>/, or import an LMS download with 'python -m tokvec.course.collect "
                      "moodle|canvas|hub')"]
    for sid in dict.fromkeys(ids.values()):
        folders = [p for p in students if ids[p.name] == sid]
        books, said = _student(folders, stems)
        odd = [repr(p.name) for p in folders if p.name != sid]
        if odd:
            said.insert(0, f"graded as {sid}: the folder name {', '.join(odd)} has characters other than "
                           "letters, digits, '_', '-' and '.'")
        if books:
            out[sid] = books
        if said:
            notes[sid] = said
    if not out:
        raise FileNotFoundError(f"no notebooks in {layout}; name each notebook as the handout does: "
                                f"{', '.join(s + '.ipynb' for s in stems)}")
    return out, notes


def _student(folders: list[Path], stems: list[str]) -> tuple[dict[str, Path], list[str]]:
    """The chapters found in one student's folders (one, or Moodle's one per plugin), and the
    notes on everything else; paths in notes are relative to the folder (prefixed by its name
    where there are several)."""
    root = {p: folder for folder in folders for p in folder.rglob("*") if p.is_file()}
    files = sorted(root)
    inner = {p: p.relative_to(root[p]) for p in files}
    rel = {p: (f"{root[p].name}/" if len(folders) > 1 else "") + inner[p].as_posix() for p in files}
    checkpoints = [p for p in files if ".ipynb_checkpoints" in inner[p].parts]
    hidden = [p for p in files if _hidden(p, root[p]) and p not in checkpoints]
    visible = [p for p in files if not _hidden(p, root[p])]
    candidates: dict[str, list[Path]] = {}
    said, others = [], {}
    for path in visible:
        if path.suffix == ".ipynb" and _chapter(path.stem) in stems:
            candidates.setdefault(_chapter(path.stem), []).append(path)
        elif path.suffix == ".ipynb":
            said.append(f"{rel[path]}: not a chapter of the handout, not graded (name it as the handout "
                        f"does, e.g. {stems[0]}.ipynb)")
        else:
            others.setdefault(_EXPORTS.get(path.suffix.lower(), _OTHER), []).append(rel[path])
    books = {}
    for stem in stems:
        found = sorted(candidates.get(stem, []),
                       key=lambda p: (len(inner[p].parts), p.stem != stem, rel[p]))
        if found:
            books[stem] = found[0]
            said += [f"{rel[p]}: a second file for {stem}, not graded (kept {rel[found[0]]})"
                     for p in found[1:]]
    if not books:
        shown = ", ".join(rel[p] for p in visible) or "nothing"
        said.insert(0, f"no notebook found (found: {shown})")
    said += [f"{', '.join(names)}: {why}" for why, names in others.items()]
    if checkpoints:
        said.append(f"{len(checkpoints)} file{'s' * (len(checkpoints) != 1)} in .ipynb_checkpoints ignored")
    if hidden:
        said.append(f"{len(hidden)} hidden file{'s' * (len(hidden) != 1)} ignored "
                    f"({', '.join(rel[p] for p in hidden)})")
    return books, said


# --- imports from an LMS ----------------------------------------------------------------------

@contextmanager
def _opened(source: Path):
    """The folder ``source``, or a zip file unpacked into a temporary folder."""
    source = Path(source)
    if source.is_dir():
        yield source
    elif source.is_file() and zipfile.is_zipfile(source):
        with tempfile.TemporaryDirectory(prefix="tokvec-collect-") as tmp:
            with zipfile.ZipFile(source) as archive:
                archive.extractall(tmp)           # zipfile drops absolute paths and '..'
            yield Path(tmp)
    else:
        raise FileNotFoundError(f"{source}: neither a folder nor a .zip file; pass the LMS's download "
                                "(the .zip file, or the folder it unpacks to)")


def _prepare(dest: Path, force: bool) -> Path:
    """``dest`` empty and ready; a non-empty one is replaced only with ``force`` and only if a
    previous import wrote it (it holds ``students.csv``), so a mistyped path loses nothing."""
    dest = Path(dest)
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        if not force:
            raise FileExistsError(f"{dest} is not empty: choose a new folder, or pass --force to replace "
                                  "a previous import")
        if not (dest / STUDENTS).is_file():
            raise FileExistsError(f"{dest} is not empty and no import wrote it (no students.csv): --force "
                                  "replaces only a folder written by this command; choose a new folder")
        shutil.rmtree(dest)
    dest.mkdir(parents=True, exist_ok=True)
    return dest


def _copy(path: Path, target: Path) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.exists():
        raise FileExistsError(f"{path} and another file both go to {target}; unpack the download by hand")
    shutil.copyfile(path, target)
    return target


def _write_students(dest: Path, rows: list[dict]) -> None:
    with (dest / STUDENTS).open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=["id", "name", "lms_id", "source"])
        writer.writeheader()
        writer.writerows(rows)


def _loose(paths: list[Path], src: Path, dest: Path) -> list[str]:
    """Entries of a download that match no pattern: copied beside the student folders (a file
    under its own name), where :func:`find_submissions` names them in a note; hidden ones and a
    zip's ``__MACOSX`` are left out. Returns what each became, for the command to print."""
    said = []
    for path in paths:
        rel = path.relative_to(src).as_posix()
        if any(part.startswith(".") or part == "__MACOSX" for part in path.relative_to(src).parts):
            said.append(f"{rel} (hidden, left out)")
        elif path.is_dir():
            shutil.copytree(path, dest / path.name)
            said.append(rel)
        else:
            _copy(path, dest / path.name)
            said.append(rel)
    return said


def moodle(source: Path, dest: Path, force: bool = False) -> tuple[list[dict], list[str]]:
    """Moodle's "Download all submissions" (a .zip, or the folder it unpacks to) into
    ``dest/<id>/<file>`` and ``dest/students.csv``; the id is the name plus the participant id
    (``"Ada Lovelace_1234_assignsubmission_file_"`` -> ``ada-lovelace_1234``). Both layouts are
    read: a folder per student and plugin (files keep their subfolders; an online text arrives as
    ``onlinetext.html``, which grading notes), and the older flat files
    ``<name>_<id>_assignsubmission_file_<file>``. Returns the rows of ``students.csv`` and the
    entries that match neither (copied to ``dest`` as they are, where grading notes them)."""
    dest = _prepare(dest, force)
    rows, unknown = [], []
    with _opened(source) as src:
        top = sorted(src.iterdir())
        if len(top) == 1 and top[0].is_dir() and not _MOODLE.match(top[0].name):
            src, top = top[0], sorted(top[0].iterdir())   # unpacked into a folder of its own
        for entry in top:
            m = _MOODLE.match(entry.name)
            if m is None or (entry.is_dir() and m.group("file")) or (entry.is_file() and not m.group("file")):
                unknown.append(entry)
                continue
            sid = _slug(f"{m.group('name')}_{m.group('id')}")
            files = [entry] if entry.is_file() else sorted(p for p in entry.rglob("*") if p.is_file())
            for path in files:
                inner = Path(m.group("file")) if entry.is_file() else path.relative_to(entry)
                _copy(path, dest / sid / inner)
                rows.append({"id": sid, "name": m.group("name"), "lms_id": m.group("id"),
                             "source": path.relative_to(src).as_posix()})
            if not files:                         # an empty submission still gets its folder and row
                (dest / sid).mkdir(exist_ok=True)
                rows.append({"id": sid, "name": m.group("name"), "lms_id": m.group("id"), "source": ""})
        if not rows:
            raise ValueError(f"{source}: no Moodle submission in it (folders named '<full name>_<id>_"
                             "assignsubmission_file_'); is it Moodle's 'Download all submissions'?")
        skipped = _loose(unknown, src, dest)
    _write_students(dest, rows)
    return rows, skipped


def canvas(source: Path, dest: Path, force: bool = False) -> tuple[list[dict], list[str]]:
    """Canvas's "Download Submissions" (a .zip of flat files, or the folder it unpacks to) into
    ``dest/<id>/<file>`` and ``dest/students.csv``: ``lovelaceada_LATE_123_456_05_x-1.ipynb``
    goes to ``lovelaceada_123/05_x.ipynb``. The id is the sortable name plus the user id; the
    ``-1``, ``-2`` Canvas appends to a repeated file name is dropped where no other file of the
    student has that name. Returns the rows of ``students.csv`` and the entries that match no
    pattern (copied to ``dest`` as they are, where grading notes them)."""
    dest = _prepare(dest, force)
    rows, unknown, found = [], [], {}
    with _opened(source) as src:
        for path in sorted(p for p in src.rglob("*") if p.is_file()):
            m = _CANVAS.match(path.name)
            if m is None or _hidden(path, src) or "__MACOSX" in path.relative_to(src).parts:
                unknown.append(path)
                continue
            found.setdefault(_slug(f"{m.group('name')}_{m.group('id')}"), []).append((path, m))
        if not found:
            raise ValueError(f"{source}: no Canvas submission in it (files named '<name>_<user id>_"
                             "<submission id>_<file>'); is it Canvas's 'Download Submissions'?")
        for sid, items in found.items():
            names = [m.group("file") for _, m in items]
            for path, m in items:
                name = Path(m.group("file"))
                plain = re.sub(r"-\d+$", "", name.stem) + name.suffix
                if plain != name.name and plain not in names:
                    name = Path(plain)
                _copy(path, dest / sid / name)
                rows.append({"id": sid, "name": m.group("name"), "lms_id": m.group("id"),
                             "source": path.relative_to(src).as_posix()})
        skipped = _loose(unknown, src, dest)
    _write_students(dest, rows)
    return rows, skipped


def hub(homes: Path, dest: Path, force: bool = False, folder: str = "student",
        chapters: list[str] | None = None) -> tuple[list[dict], list[str]]:
    """The notebooks of every user of a JupyterHub, ``homes/<user>/<folder>/*.ipynb``, into
    ``dest/<id>/`` and ``dest/students.csv``; only notebooks are copied (only the ``chapters``
    given, by name or previous name, if any), checkpoints and hidden files never. The id is the
    user name, made safe by :func:`safe_id` (``ada@uni.edu`` -> ``ada_at_uni.edu``). A user with
    no such notebook still gets an empty folder, which grading notes ("no notebook found").
    Returns the rows of ``students.csv`` and the users without a ``folder``."""
    homes = Path(homes)
    if not homes.is_dir():
        raise FileNotFoundError(f"{homes}: no such folder; pass the hub's home root (e.g. /home), which "
                                "holds one folder per user")
    dest = _prepare(dest, force)
    wanted = {current_name(c) for c in chapters} if chapters else None
    users = sorted(p for p in homes.iterdir() if p.is_dir() and not p.name.startswith("."))
    ids = _ids([u.name for u in users])
    rows, missing = [], []
    for user in users:
        sid = ids[user.name]
        (dest / sid).mkdir()
        books = user / folder
        if not books.is_dir():
            missing.append(user.name)
        for path in sorted(books.glob("*.ipynb")) if books.is_dir() else []:
            if wanted is None or _chapter(path.stem) in wanted:
                _copy(path, dest / sid / path.name)
                rows.append({"id": sid, "name": user.name, "lms_id": "", "source": str(path)})
        if not any(r["id"] == sid for r in rows):
            rows.append({"id": sid, "name": user.name, "lms_id": "", "source": ""})
    _write_students(dest, rows)
    return rows, missing


# --- CSVs ---------------------------------------------------------------------------------------

def max_path(path: Path) -> Path:
    path = Path(path)
    return path.with_name(path.stem + ".max.csv")


def write_grades(rows: list[dict], out: Path) -> tuple[Path, Path]:
    """Write ``grade``'s rows: ``out`` without the first, ``(max points)`` row (a header, then
    one row per student: what an LMS imports), and that row to ``<out stem>.max.csv`` beside it
    (the same columns). Returns both paths."""
    if not rows or rows[0].get("student") != MAX_ROW:
        first = rows[0].get("student") if rows else None
        raise ValueError(f"rows[0] must be the {MAX_ROW!r} row that grade() returns first, got {first!r}")
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    columns = list(rows[0])
    for path, part in ((out, rows[1:]), (max_path(out), rows[:1])):
        with path.open("w", newline="", encoding="utf-8") as f:
            writer = csv.DictWriter(f, fieldnames=columns)
            writer.writeheader()
            writer.writerows(part)
    return out, max_path(out)


def _read(path: Path) -> tuple[list[str], list[dict]]:
    with Path(path).open(newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        return list(reader.fieldnames or []), list(reader)


def read_grades(path: Path) -> list[dict]:
    """The rows :func:`write_grades` wrote to ``path``, the ``(max points)`` row first again
    (read from ``<stem>.max.csv``)."""
    path, side = Path(path), max_path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no grades file {path}")
    if not side.is_file():
        raise FileNotFoundError(f"{side} is missing: the maxima of {path.name} are kept beside it; copy it "
                                "with the grades, or grade again")
    columns, rows = _read(path)
    side_columns, maxima = _read(side)
    if side_columns != columns or len(maxima) != 1 or maxima[0].get("student") != MAX_ROW:
        raise ValueError(f"{side} does not match {path.name}: it must hold the same columns and one "
                         f"{MAX_ROW!r} row; write both again with write_grades")
    return maxima + rows


def _number(text: str, where: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"{where}: {text!r} is not a number of points; write a number or leave the cell "
                         "empty") from None


def merge(paths: list[Path], out: Path) -> list[dict]:
    """Several weeks' grades (each written by :func:`write_grades`) into one table at ``out``:
    the exercise columns of every file in the order first seen, one row per student, each value
    from the latest file where it is non-empty (an earlier, different value is named in
    ``notes``), the notes of every file joined, totals recomputed. A column whose maximum
    differs between two files is an error naming both. Returns the rows, ``(max points)`` first."""
    paths = [Path(p) for p in paths]
    if not paths:
        raise ValueError("no grades files to merge: pass one or more CSVs written by grade")
    columns: list[str] = []
    maxima: dict[str, tuple[str, str]] = {}      # column -> (max, file it came from)
    students: dict[str, dict] = {}
    sources: dict[tuple[str, str], str] = {}     # (student, column) -> file of the value kept
    for path in paths:
        rows = read_grades(path)
        for column, value in rows[0].items():
            if column in _FIXED:
                continue
            if column in maxima and _number(*maxima[column]) != _number(value, path.name):
                first, where = maxima[column]
                raise ValueError(f"column {column!r} is out of {first} in {where} but out of {value} in "
                                 f"{path.name}: grade both weeks with the same tests")
            if column not in maxima:
                maxima[column] = (value, path.name)
                columns.append(column)
        for row in rows[1:]:
            merged = students.setdefault(row["student"], {"notes": []})
            for column, value in row.items():
                if column in _FIXED or value in ("", None):
                    continue
                _number(value, f"{path.name}, {row['student']}, {column}")
                old = merged.get(column)
                if old is not None and old != value:
                    merged["notes"].append(f"{column}: {value} from {path.name} replaces {old} from "
                                           f"{sources[row['student'], column]}")
                merged[column], sources[row["student"], column] = value, path.name
            for note in (row.get("notes") or "").split("; "):
                if note and note not in merged["notes"]:
                    merged["notes"].append(note)
    table = [{"student": MAX_ROW, **{c: maxima[c][0] for c in columns},
              "total": f"{sum(_number(maxima[c][0], maxima[c][1]) for c in columns):g}", "notes": ""}]
    for student, merged in students.items():
        scores = [float(merged[c]) for c in columns if c in merged]
        table.append({"student": student, **{c: merged.get(c, "") for c in columns},
                      "total": f"{sum(scores):g}" if scores else "", "notes": "; ".join(merged["notes"])})
    write_grades(table, out)
    return table


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tokvec.course.collect",
                                     description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name, what in (("moodle", "Moodle's 'Download all submissions' (.zip or folder)"),
                       ("canvas", "Canvas's 'Download Submissions' (.zip or folder)"),
                       ("hub", "a JupyterHub's home root, one folder per user (e.g. /home)")):
        cmd = sub.add_parser(name, help=f"import {what} into DEST/<student id>/")
        cmd.add_argument("source", type=Path, help=what)
        cmd.add_argument("dest", type=Path, help="the submissions folder to write (new or empty)")
        cmd.add_argument("--force", action="store_true", help="replace DEST written by an earlier import")
        if name == "hub":
            cmd.add_argument("--folder", default="student", help="the folder in each home (default: student)")
            cmd.add_argument("--chapters", nargs="+", default=None, metavar="STEM",
                             help="copy only these notebooks, e.g. 05_positional_embedding (default: all)")
    mer = sub.add_parser("merge", help="merge several weeks' grades CSVs into one")
    mer.add_argument("paths", type=Path, nargs="+", help="CSVs written by grade, oldest first")
    mer.add_argument("--out", type=Path, required=True, help="the merged CSV (and its .max.csv)")
    args = parser.parse_args(argv)
    try:
        return _run(args)
    except (FileNotFoundError, FileExistsError, ValueError) as error:   # a message that says the fix
        print(f"{parser.prog} {args.command}: error: {error}", file=sys.stderr)
        return 1


def _run(args) -> int:
    if args.command == "merge":
        rows = merge(args.paths, args.out)
        print(f"{len(rows) - 1} students, {len(rows[0]) - 3} columns: {args.out} (maxima in "
              f"{max_path(args.out).name})")
        return 0
    if args.command == "hub":
        rows, skipped = hub(args.source, args.dest, args.force, args.folder, args.chapters)
        what = f"without a {args.folder}/ folder"
    else:
        rows, skipped = {"moodle": moodle, "canvas": canvas}[args.command](args.source, args.dest, args.force)
        what = "not recognised, copied as they are (grading notes them)"
    print(f"{len({r['id'] for r in rows})} students, {sum(bool(r['source']) for r in rows)} files: "
          f"{args.dest} (ids and names in {args.dest / 'students.csv'})")
    if skipped:
        print(f"{len(skipped)} {what}: {', '.join(skipped)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
