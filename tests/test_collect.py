"""Collecting submissions (tokvec.course.collect): every file graded or named in a note, LMS
downloads imported under stable ids, and the grade CSVs written, read back and merged."""

from __future__ import annotations

import csv
import zipfile

import nbformat
import pytest

from tokvec.course.collect import (
    MAX_ROW,
    TOP,
    canvas,
    find_submissions,
    hub,
    main,
    merge,
    moodle,
    read_grades,
    safe_id,
    write_grades,
)

STEMS = ["05_positional_embedding", "07_common_mistakes"]
PE, CM = STEMS


def _nb(path, text="x = 1"):
    """A small notebook at ``path`` (its folders made)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    nb = nbformat.v4.new_notebook()
    nb.cells.append(nbformat.v4.new_code_cell(text))
    nbformat.write(nb, path)
    return path


def _file(path, text="print(1)\n"):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _zip(folder, out):
    """``folder``'s files in a zip at ``out``, with the paths relative to ``folder``."""
    with zipfile.ZipFile(out, "w") as archive:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                archive.write(path, path.relative_to(folder).as_posix())
    return out


def _joined(notes, student):
    return " | ".join(notes[student])


# --- find_submissions -------------------------------------------------------------------------

def test_nested_notebooks_are_found_and_a_second_copy_is_noted(tmp_path):
    subs = tmp_path / "subs"
    _nb(subs / "ada" / "student" / f"{PE}.ipynb")              # cp -r /home/ada/student subs/ada/
    _nb(subs / "jo" / f"{PE}.ipynb")
    _nb(subs / "jo" / "old" / f"{PE}.ipynb")                    # the same chapter deeper down
    _nb(subs / "jo" / f"{CM} (1).ipynb")                        # a browser's second download
    _nb(subs / "jo" / f"{CM}.ipynb")                            # ... and the first one
    books, notes = find_submissions(subs, STEMS)
    assert books == {"ada": {PE: subs / "ada" / "student" / f"{PE}.ipynb"},
                     "jo": {PE: subs / "jo" / f"{PE}.ipynb", CM: subs / "jo" / f"{CM}.ipynb"}}
    assert "ada" not in notes                                   # found where it is, nothing ambiguous
    assert notes["jo"] == [f"old/{PE}.ipynb: a second file for {PE}, not graded (kept {PE}.ipynb)",
                           f"{CM} (1).ipynb: a second file for {CM}, not graded (kept {CM}.ipynb)"]


def test_renamed_and_old_names_count_as_the_chapter(tmp_path):
    for student, name in (("bo", f"Copy of {PE}"), ("cy", f"{PE}-Copy1"), ("di", f"{PE}-1"),
                          ("ed", "12_position_experiment")):
        _nb(tmp_path / student / f"{name}.ipynb")
    books, notes = find_submissions(tmp_path, [*STEMS, "position_experiment"])
    assert {s: list(b) for s, b in books.items()} == {"bo": [PE], "cy": [PE], "di": [PE],
                                                       "ed": ["position_experiment"]}
    assert notes == {}


def test_exports_and_other_files_are_named_with_the_fix(tmp_path):
    _file(tmp_path / "kim" / f"{PE}.py")                        # Colab's "Download .py"
    _file(tmp_path / "kim" / f"{CM}.html")
    _nb(tmp_path / "lu" / f"{PE}.ipynb")
    _file(tmp_path / "lu" / "report.pdf")
    _file(tmp_path / "lu" / "work.zip")
    _file(tmp_path / "lu" / "data" / "notes.txt")
    _nb(tmp_path / "lu" / "scratch.ipynb")
    books, notes = find_submissions(tmp_path, STEMS)
    assert list(books) == ["lu"]
    kim = _joined(notes, "kim")
    assert notes["kim"][0] == f"no notebook found (found: {PE}.py, {CM}.html)"
    assert f"{PE}.py: a Python export, not a notebook: ask for File > Download > Download .ipynb" in kim
    assert f"{CM}.html: an HTML export, not a notebook" in kim
    lu = _joined(notes, "lu")
    assert "report.pdf: a PDF export, not a notebook" in lu
    assert "work.zip: an archive: unpack it into the student's folder" in lu
    assert "data/notes.txt: not a notebook, not graded" in lu
    assert "scratch.ipynb: not a chapter of the handout, not graded" in lu
    assert "no notebook found" not in lu


def test_hidden_files_and_checkpoints_are_counted_in_one_note(tmp_path):
    _nb(tmp_path / "ada" / f"{PE}.ipynb")
    for name in (f"{PE}-checkpoint.ipynb", f"{CM}-checkpoint.ipynb", "x-checkpoint.py"):
        _nb(tmp_path / "ada" / ".ipynb_checkpoints" / name)
    _file(tmp_path / "ada" / ".DS_Store")
    _file(tmp_path / ".hidden_top")
    books, notes = find_submissions(tmp_path, STEMS)
    assert books == {"ada": {PE: tmp_path / "ada" / f"{PE}.ipynb"}}    # a checkpoint is never graded
    assert notes["ada"] == ["3 files in .ipynb_checkpoints ignored", "1 hidden file ignored (.DS_Store)"]
    assert notes[TOP][0].startswith(".hidden_top: not in a student's folder")


def test_an_empty_folder_gets_a_note_not_silence(tmp_path):
    (tmp_path / "dee").mkdir()
    _nb(tmp_path / "jo" / f"{PE}.ipynb")
    books, notes = find_submissions(tmp_path, STEMS)
    assert list(books) == ["jo"]
    assert notes == {"dee": ["no notebook found (found: nothing)"]}


def test_odd_folder_names_get_safe_stable_ids_and_a_note(tmp_path):
    odd = ["Ada Lovelace_1234_assignsubmission_file_", "ada@uni.edu", "Zoë Ng", "Bo Li", "bo-li",
           "BO  LI"]
    for name in odd:
        _nb(tmp_path / name / f"{PE}.ipynb")
    books, notes = find_submissions(tmp_path, STEMS)
    bo = {n: f"bo-li-{__import__('hashlib').sha1(n.encode()).hexdigest()[:6]}" for n in ("Bo Li", "BO  LI")}
    assert sorted(books) == sorted(["ada-lovelace_1234", "ada_at_uni.edu", "zoë-ng", "bo-li", *bo.values()])
    assert notes["ada_at_uni.edu"] == ["graded as ada_at_uni.edu: the folder name 'ada@uni.edu' has "
                                       "characters other than letters, digits, '_', '-' and '.'"]
    assert "'Ada Lovelace_1234_assignsubmission_file_'" in notes["ada-lovelace_1234"][0]
    assert "bo-li" not in notes                                 # a valid name is never changed
    for name, sid in bo.items():
        assert repr(name) in notes[sid][0]
    again, _ = find_submissions(tmp_path, STEMS)                # the same folders, the same ids
    assert sorted(again) == sorted(books)
    assert safe_id("ada") == "ada" and safe_id("Participant_77_assignsubmission_file") == "participant_77"
    assert safe_id("???") == "student-" + __import__("hashlib").sha1(b"???").hexdigest()[:6]


def test_files_beside_the_student_folders_are_noted(tmp_path):
    _nb(tmp_path / "jo" / f"{PE}.ipynb")
    _nb(tmp_path / f"lovelaceada_123_456_{PE}.ipynb")
    books, notes = find_submissions(tmp_path, STEMS)
    assert list(books) == ["jo"]
    assert notes[TOP] == [f"lovelaceada_123_456_{PE}.ipynb: not in a student's folder, not graded (put each "
                          f"student's files in {tmp_path}/<student>/, or import an LMS download with "
                          "'python -m tokvec.course.collect moodle|canvas|hub')"]


def test_no_notebook_at_all_names_the_layout(tmp_path):
    with pytest.raises(FileNotFoundError, match="<student>/<chapter>.ipynb"):
        find_submissions(tmp_path / "nowhere", STEMS)
    _file(tmp_path / "kim" / f"{PE}.py")
    with pytest.raises(FileNotFoundError, match=f"name each notebook as the handout does: {PE}.ipynb"):
        find_submissions(tmp_path, STEMS)
    with pytest.raises(ValueError, match="stems is empty"):
        find_submissions(tmp_path, [])


# --- imports from an LMS ----------------------------------------------------------------------

def _moodle_download(root):
    _nb(root / "Ada Lovelace_1234_assignsubmission_file_" / f"{PE}.ipynb")
    _nb(root / "Ada Lovelace_1234_assignsubmission_file_" / "extra" / f"{CM}.ipynb")
    _file(root / "Ada Lovelace_1234_assignsubmission_onlinetext_" / "onlinetext.html", "<p>hi</p>")
    _file(root / "Kim Ng_77_assignsubmission_file" / f"{PE}.py")     # newer Moodle: no trailing '_'
    _file(root / "Participant_5_assignsubmission_file_" / "notes.txt")  # blind marking, no notebook
    _file(root / "grading-notes.txt")
    return root


@pytest.mark.parametrize("as_zip", [False, True])
def test_moodle_download_becomes_one_folder_per_student(tmp_path, as_zip):
    src = _moodle_download(tmp_path / "download")
    if as_zip:
        src = _zip(src, tmp_path / "COURSE-Week 5-42.zip")
    dest = tmp_path / "subs"
    rows, skipped = moodle(src, dest)
    assert skipped == ["grading-notes.txt"]
    assert {(r["id"], r["name"], r["lms_id"]) for r in rows} == {
        ("ada-lovelace_1234", "Ada Lovelace", "1234"), ("kim-ng_77", "Kim Ng", "77"),
        ("participant_5", "Participant", "5")}
    assert (dest / "ada-lovelace_1234" / "extra" / f"{CM}.ipynb").is_file()
    with (dest / "students.csv").open(encoding="utf-8") as f:
        table = list(csv.DictReader(f))
    assert {r["source"] for r in table} >= {f"Ada Lovelace_1234_assignsubmission_file_/extra/{CM}.ipynb"}
    books, notes = find_submissions(dest, STEMS)
    assert sorted(books) == ["ada-lovelace_1234"] and sorted(books["ada-lovelace_1234"]) == sorted(STEMS)
    assert "onlinetext.html: an HTML export" in _joined(notes, "ada-lovelace_1234")
    assert f"{PE}.py: a Python export" in _joined(notes, "kim-ng_77")
    assert notes["participant_5"][0] == "no notebook found (found: notes.txt)"
    assert "grading-notes.txt" in notes[TOP][0]
    # the unpacked download graded directly gives the same ids as the import, one per student
    direct, said = find_submissions(tmp_path / "download", STEMS)
    assert direct == {"ada-lovelace_1234": {
        PE: tmp_path / "download" / "Ada Lovelace_1234_assignsubmission_file_" / f"{PE}.ipynb",
        CM: tmp_path / "download" / "Ada Lovelace_1234_assignsubmission_file_" / "extra" / f"{CM}.ipynb"}}
    assert said["ada-lovelace_1234"][0].startswith(
        "graded as ada-lovelace_1234: the folder name 'Ada Lovelace_1234_assignsubmission_file_', "
        "'Ada Lovelace_1234_assignsubmission_onlinetext_' has")
    assert "Ada Lovelace_1234_assignsubmission_onlinetext_/onlinetext.html: an HTML export" in said[
        "ada-lovelace_1234"][1]


def test_moodle_flat_files_and_refusals(tmp_path):
    src = tmp_path / "flat"
    _nb(src / f"Ada Lovelace_1234_assignsubmission_file_{PE}.ipynb")
    rows, _ = moodle(src, tmp_path / "subs")
    assert (tmp_path / "subs" / "ada-lovelace_1234" / f"{PE}.ipynb").is_file()
    assert rows[0]["source"] == f"Ada Lovelace_1234_assignsubmission_file_{PE}.ipynb"
    with pytest.raises(FileExistsError, match="is not empty: .*--force"):
        moodle(src, tmp_path / "subs")
    moodle(src, tmp_path / "subs", force=True)                  # replaces its own earlier import
    _file(tmp_path / "mine" / "precious.txt")
    with pytest.raises(FileExistsError, match="no import wrote it"):
        moodle(src, tmp_path / "mine", force=True)
    assert (tmp_path / "mine" / "precious.txt").is_file()
    _nb(tmp_path / "canvasish" / f"lovelaceada_123_456_{PE}.ipynb")
    with pytest.raises(ValueError, match="no Moodle submission in it"):
        moodle(tmp_path / "canvasish", tmp_path / "out2")
    with pytest.raises(FileNotFoundError, match="neither a folder nor a .zip file"):
        moodle(tmp_path / "missing.zip", tmp_path / "out3")


def test_canvas_download_becomes_one_folder_per_student(tmp_path):
    flat = tmp_path / "flat"
    _nb(flat / f"lovelaceada_123_456_{PE}.ipynb")
    _nb(flat / f"lovelaceada_123_456_{CM}-1.ipynb")                 # Canvas's repeated-name suffix
    _nb(flat / f"ngkim_LATE_77_999_{PE}.ipynb")
    _nb(flat / f"ngkim_LATE_77_999_{PE}-1.ipynb")                   # both names kept: the second is noted
    _file(flat / "smithjo_88_text.html", "<p>see attached</p>")
    _file(flat / "README.txt")
    _file(flat / "__MACOSX" / "._lovelaceada_123_456_x.ipynb")     # a zip made on a Mac
    dest = tmp_path / "subs"
    rows, skipped = canvas(_zip(flat, tmp_path / "submissions.zip"), dest)
    assert skipped == ["README.txt", "__MACOSX/._lovelaceada_123_456_x.ipynb (hidden, left out)"]
    assert {(r["id"], r["name"], r["lms_id"]) for r in rows} == {
        ("lovelaceada_123", "lovelaceada", "123"), ("ngkim_77", "ngkim", "77"),
        ("smithjo_88", "smithjo", "88")}
    assert sorted(p.name for p in (dest / "lovelaceada_123").iterdir()) == sorted(f"{s}.ipynb" for s in STEMS)
    books, notes = find_submissions(dest, STEMS)
    assert sorted(books) == ["lovelaceada_123", "ngkim_77"]
    assert books["ngkim_77"][PE].name == f"{PE}.ipynb"
    assert notes["ngkim_77"] == [f"{PE}-1.ipynb: a second file for {PE}, not graded (kept {PE}.ipynb)"]
    assert notes["smithjo_88"][0] == "no notebook found (found: text.html)"
    assert notes[TOP][0].startswith("README.txt: not in a student's folder")
    with pytest.raises(ValueError, match="no Canvas submission in it"):
        canvas(tmp_path / "subs" / "ngkim_77", tmp_path / "out2")


def test_hub_homes_with_an_at_user_and_a_chapter_filter(tmp_path):
    homes = tmp_path / "home"
    _nb(homes / "ada@uni.edu" / "student" / f"{PE}.ipynb")
    _nb(homes / "ada@uni.edu" / "student" / f"{CM}.ipynb")
    _nb(homes / "ada@uni.edu" / "student" / ".ipynb_checkpoints" / f"{PE}-checkpoint.ipynb")
    _file(homes / "ada@uni.edu" / "student" / "data.csv")
    _nb(homes / "bo" / "student" / f"Copy of {PE}.ipynb")
    (homes / "cy").mkdir()                                      # never opened the handout
    dest = tmp_path / "subs"
    assert main(["hub", str(homes), str(dest), "--chapters", PE]) == 0
    assert sorted(p.name for p in dest.iterdir()) == ["ada_at_uni.edu", "bo", "cy", "students.csv"]
    assert [p.name for p in (dest / "ada_at_uni.edu").iterdir()] == [f"{PE}.ipynb"]
    books, notes = find_submissions(dest, STEMS)
    assert sorted(books) == ["ada_at_uni.edu", "bo"]
    assert notes == {"cy": ["no notebook found (found: nothing)"]}
    with (dest / "students.csv").open(encoding="utf-8") as f:
        names = {r["id"]: r["name"] for r in csv.DictReader(f)}
    assert names == {"ada_at_uni.edu": "ada@uni.edu", "bo": "bo", "cy": "cy"}
    rows, missing = hub(homes, dest, force=True)                # every chapter this time
    assert missing == ["cy"] and sorted((dest / "ada_at_uni.edu").iterdir()) == [
        dest / "ada_at_uni.edu" / f"{s}.ipynb" for s in STEMS]


# --- the CSVs ---------------------------------------------------------------------------------

def _rows(maxima, *students):
    columns = list(maxima)
    head = {"student": MAX_ROW, **maxima, "total": f"{sum(float(v) for v in maxima.values()):g}", "notes": ""}
    out = [head]
    for name, values, notes in students:
        row = {"student": name, **dict(zip(columns, values))}
        row["total"] = f"{sum(float(v) for v in values if v.replace('.', '').isdigit()):g}"
        out.append({**row, "notes": notes})
    return out


def test_write_and_read_grades_keep_the_max_row_apart(tmp_path):
    rows = _rows({"5.1": "2", "5.1 (written)": "2"}, ("ada", ["2", ""], ""), ("bo", ["0", "1"], "late"))
    out, side = write_grades(rows, tmp_path / "week5.csv")
    assert side == tmp_path / "week5.max.csv"
    lines = out.read_text(encoding="utf-8").splitlines()
    assert lines == ["student,5.1,5.1 (written),total,notes", "ada,2,,2,", "bo,0,1,1,late"]
    assert side.read_text(encoding="utf-8").splitlines()[1] == "(max points),2,2,4,"
    assert read_grades(out) == rows
    with pytest.raises(ValueError, match=r"rows\[0\] must be the '\(max points\)' row"):
        write_grades(rows[1:], tmp_path / "x.csv")
    side.unlink()
    with pytest.raises(FileNotFoundError, match=r"week5.max.csv is missing"):
        read_grades(out)


def test_merge_joins_weeks_with_overlap_conflict_and_new_columns(tmp_path):
    week1 = _rows({"5.1": "2", "5.2": "2"}, ("ada", ["2", "0"], ""), ("bo", ["", ""], "no notebook found"))
    week2 = _rows({"5.2": "2", "7.1": "3"}, ("ada", ["2", "3"], "7.1 touch the tests"), ("cy", ["1", ""], ""),
                  ("bo", ["", "3"], ""))
    paths = [write_grades(week1, tmp_path / "week1.csv")[0], write_grades(week2, tmp_path / "week2.csv")[0]]
    out = tmp_path / "term.csv"
    assert main(["merge", *map(str, paths), "--out", str(out)]) == 0
    rows = read_grades(out)
    assert list(rows[0]) == ["student", "5.1", "5.2", "7.1", "total", "notes"]
    got = {r["student"]: [r["5.1"], r["5.2"], r["7.1"], r["total"]] for r in rows}
    assert got == {MAX_ROW: ["2", "2", "3", "7"], "ada": ["2", "2", "3", "7"], "bo": ["", "", "3", "3"],
                   "cy": ["", "1", "", "1"]}
    notes = {r["student"]: r["notes"] for r in rows}
    assert notes["ada"] == "5.2: 2 from week2.csv replaces 0 from week1.csv; 7.1 touch the tests"
    assert notes["bo"] == "no notebook found" and notes["cy"] == ""
    assert [r["student"] for r in rows] == [MAX_ROW, "ada", "bo", "cy"]


def test_merge_refuses_a_column_whose_maximum_changed(tmp_path):
    a = write_grades(_rows({"5.1": "2"}, ("ada", ["2"], "")), tmp_path / "week1.csv")[0]
    b = write_grades(_rows({"5.1": "3"}, ("ada", ["3"], "")), tmp_path / "week2.csv")[0]
    with pytest.raises(ValueError, match=r"'5.1' is out of 2 in week1.csv but out of 3 in week2.csv"):
        merge([a, b], tmp_path / "term.csv")
    assert not (tmp_path / "term.csv").exists()
    c = write_grades(_rows({"5.1": "2"}, ("ada", ["two"], "")), tmp_path / "week3.csv")[0]
    with pytest.raises(ValueError, match=r"week3.csv, ada, 5.1: 'two' is not a number"):
        merge([a, c], tmp_path / "term.csv")
    with pytest.raises(ValueError, match="no grades files to merge"):
        merge([], tmp_path / "term.csv")


def test_the_command_prints_the_error_and_its_fix(tmp_path, capsys):
    assert main(["merge", str(tmp_path / "nope.csv"), "--out", str(tmp_path / "t.csv")]) == 1
    assert f"merge: error: no grades file {tmp_path / 'nope.csv'}" in capsys.readouterr().err
    _file(tmp_path / "dest" / "mine.txt")
    assert main(["canvas", str(tmp_path), str(tmp_path / "dest")]) == 1
    assert "is not empty: choose a new folder, or pass --force" in capsys.readouterr().err


def test_a_lowercase_late_canvas_name_is_read_as_late():
    """Canvas writes "_LATE_" after the name of a late submission; a lowercase "_late_" (seen in
    an instructor's dry run) is the same student, not an unmatched file."""
    from tokvec.course.collect import _CANVAS

    for name in ("libo_late_77_999_05_x.ipynb", "libo_LATE_77_999_05_x.ipynb", "libo_77_999_05_x.ipynb"):
        match = _CANVAS.match(name)
        assert match and (match["name"], match["id"], match["file"]) == ("libo", "77", "05_x.ipynb"), name
