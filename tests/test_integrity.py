"""Tests of tokvec.course.integrity: the private checks.py, the verdict by token, the guard (in a
real kernel), the static scan over every tampering and every solution, the structure check."""

from __future__ import annotations

import copy
import hashlib
import io
import re
import sys
from contextlib import redirect_stdout
from pathlib import Path

import nbformat
import pytest

from tokvec.course import checks as public_checks
from tokvec.course import integrity
from tokvec.course.grading import solved, source_notebooks
from tokvec.course.integrity import (
    GUARD_PREFIX,
    TAMPERINGS,
    VERDICT_PREFIX,
    checks_file,
    epilogue,
    flags,
    guard,
    guard_notes,
    prelude,
    structure,
    token,
    verdicts,
)

ROOT = Path(__file__).resolve().parents[1]
CHAPTER = "05_positional_embedding"
SECRET = "0123456789abcdef0123456789abcdef"


# --- 1. the private checks.py ---------------------------------------------------------------

def test_checks_file_is_the_installed_checks_py_and_its_digest():
    path, digest = checks_file()
    assert Path(path) == Path(public_checks.__file__).resolve()
    assert digest == hashlib.sha256(Path(path).read_bytes()).hexdigest()


def test_prelude_loads_a_private_copy_that_a_setattr_on_the_public_class_does_not_reach(monkeypatch):
    monkeypatch.setattr(public_checks.Checks, "_record",
                        lambda self, what, reason: self.results.append((what, None, False)))
    namespace = {"Checks": public_checks.Checks}
    exec(prelude(*checks_file()), namespace)
    private = namespace["Checks"]
    assert private is not public_checks.Checks
    assert private.__module__ == "_tokvec_private_checks"
    assert not any(m.__name__ == "_tokvec_private_checks" for m in list(sys.modules.values())
                   if hasattr(m, "__name__"))
    assert [k for k in namespace if k.startswith("_tv")] == []      # temporaries deleted
    check = private("Exercise 0")
    with redirect_stdout(io.StringIO()), check("fails"):
        raise AssertionError("no")
    assert check.failed == ["fails"]                                  # the patch did not reach it
    with pytest.raises(AssertionError, match="1 of 1 tests fail"):
        check.require()


def test_prelude_refuses_a_wrong_digest_and_a_changed_file(tmp_path):
    path, digest = checks_file()
    with pytest.raises(AssertionError, match=re.escape(path)):
        exec(prelude(path, "0" * 64), {})
    changed = tmp_path / "checks.py"
    changed.write_text(Path(path).read_text() + "\nCheck = None\n")
    with pytest.raises(AssertionError, match="sha256 differs"):
        exec(prelude(str(changed), digest), {})


def test_prelude_bad_input_names_the_value():
    with pytest.raises(ValueError, match="'nowhere.py'.*checks_file"):
        prelude("nowhere.py", "0" * 64)
    with pytest.raises(ValueError, match="64 lowercase hex.*'abc'"):
        prelude(checks_file()[0], "abc")


# --- 2. tokens and verdicts -----------------------------------------------------------------

def test_token_is_24_hex_digits_fixed_by_secret_and_label():
    tok = token(SECRET, "alg2-ex-xt")
    assert re.fullmatch(r"[0-9a-f]{24}", tok)
    assert tok == token(SECRET, "alg2-ex-xt")
    assert tok != token(SECRET, "alg2-ex-count")
    assert tok != token(SECRET[::-1], "alg2-ex-xt")
    assert token(integrity.new_secret(), "x") != token(integrity.new_secret(), "x")


def test_token_and_epilogue_bad_input_name_the_value():
    with pytest.raises(ValueError, match="at least 16.*'short'"):
        token("short", "x")
    with pytest.raises(ValueError, match="'a b'"):
        token(SECRET, "a b")
    with pytest.raises(ValueError, match="24 lowercase hex.*'xyz'"):
        epilogue("x", "xyz")


def _cell(label: str | None, stdout: str = "", stderr: str = "", error: bool = False):
    cell = nbformat.v4.new_code_cell("pass")
    if label is not None:
        cell.metadata["nbgrader"] = {"grade_id": label, "grade": label.endswith("-tests")}
    if stdout:
        cell.outputs.append(nbformat.v4.new_output("stream", name="stdout", text=stdout))
    if stderr:
        cell.outputs.append(nbformat.v4.new_output("stream", name="stderr", text=stderr))
    if error:
        cell.outputs.append(nbformat.v4.new_output("error", ename="AssertionError", evalue="a test fails",
                                                   traceback=[]))
    return cell


def test_verdicts_count_a_token_only_on_stdout_of_its_own_test_cell():
    toks = {label: token(SECRET, label) for label in ("a", "b", "c", "d", "e")}
    line = {label: f"{VERDICT_PREFIX}{label} {tok}\n" for label, tok in toks.items()}
    nb = nbformat.v4.new_notebook(cells=[
        _cell("a-tests", "✓ one\n" + line["a"]),                    # right cell: passes
        _cell("b", line["b"]), _cell("b-tests", "✓ one\n"),          # printed by the answer cell
        _cell("c-tests", "✗ one: no\n", error=True),                 # failed: no token
        _cell("d-tests", stderr=line["d"]),                           # on stderr
        _cell("e-tests", line["a"]),                                  # another label's token
    ])
    assert verdicts(nb, toks) == {"a": True, "b": False, "c": False, "d": False, "e": False}
    assert verdicts(nb, {"a": token("another secret!!", "a")}) == {"a": False}


def test_guard_notes_collects_each_note_once_from_test_cells_only():
    nb = nbformat.v4.new_notebook(cells=[
        _cell("a", GUARD_PREFIX + "fake, printed by an answer\n"),
        _cell("a-tests", f"✓ x\n{GUARD_PREFIX}sys.excepthook is replaced (m.f)\n"),
        _cell("b-tests", f"{GUARD_PREFIX}sys.excepthook is replaced (m.f)\n{GUARD_PREFIX}other\n"),
    ])
    assert guard_notes(nb) == ["sys.excepthook is replaced (m.f) (seen by the tests of a)",
                               "other (seen by the tests of b)"]


# --- 3. the guard ---------------------------------------------------------------------------

def _run_guard() -> list[str]:
    out = io.StringIO()
    with redirect_stdout(out):
        exec(guard(), {})
    return [line.removeprefix(GUARD_PREFIX) for line in out.getvalue().splitlines()]


def test_guard_in_process_sees_patched_functions(monkeypatch):
    import math

    import numpy as np

    before = _run_guard()
    assert not any("numpy" in n or "math." in n or "Checks" in n for n in before), before
    monkeypatch.setattr(np, "allclose", lambda *a, **k: True)
    monkeypatch.setattr(np, "array_equal", np.isclose)
    monkeypatch.setattr(math, "isclose", math.exp)
    monkeypatch.setattr(sys, "excepthook", lambda *args: None)
    exec("def _record(self, what, reason):\n    pass\n", space := {})
    monkeypatch.setattr(public_checks.Checks, "_record", space["_record"])
    notes = _run_guard()
    text = "\n".join(notes)
    assert "numpy.allclose runs code from" in text
    assert "numpy.array_equal is replaced by numpy.isclose" in text
    assert "math.isclose is replaced by math.exp" in text
    assert re.search(r"sys.excepthook is replaced \(\S*test_guard_in_process", text), text
    assert "tokvec.course.checks.Checks._record runs code from <string>" in text


# A kernel run as the chapters run: the course's imports, a passing and a failing test cell.
_IMPORTS = ("%matplotlib inline\nimport math\nimport numpy as np\nimport torch\n"
            "import matplotlib.pyplot as plt\n"
            "import tokvec.reference\nfrom tokvec.course import feedback")
_TAMPER = r'''
import ast, builtins, sys
import numpy as np
import tokvec.course.checks as _m
setattr(_m.Checks, "_record", lambda self, what, reason: self.results.append((what, None, False)))
sys.excepthook = lambda *args: None
get_ipython().set_custom_exc((Exception,), lambda shell, kind, value, tb, tb_offset=None: None)
def _spy(info):
    pass
get_ipython().events.register("pre_run_cell", _spy)
get_ipython().input_transformers_post.append(lambda lines: lines)
class _Same(ast.NodeTransformer):
    pass
get_ipython().ast_transformers.append(_Same())
np.allclose = lambda *args, **kwargs: True
_print = builtins.print
def _quiet(*args, **kwargs):
    _print(*args, **kwargs)
builtins.print = _quiet
def _tracer(frame, event, arg):
    return None
sys.settrace(_tracer)
'''


def _test_cell(label: str, body: str):
    source = "\n".join(["from tokvec.course.checks import Checks", prelude(*checks_file()),
                        f"check = Checks({label!r})", body, "check.report()",
                        guard(),
                        epilogue(label, token(SECRET, label))])
    return _source(_cell(f"{label}-tests"), source)


def _source(cell, source: str):
    cell.source = source
    return cell


def _execute(cells):
    from nbclient import NotebookClient

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(_IMPORTS)] + cells)
    NotebookClient(nb, timeout=120, kernel_name="python3", allow_errors=True).execute()
    return nb


def _stdout(cell) -> str:
    return "".join(o.get("text", "") for o in cell.outputs if o.get("name") == "stdout")


@pytest.fixture(scope="module")
def kernels():
    good = "with check('ones'):\n    assert np.allclose(np.ones(3), 1)"
    bad = "with check('twos'):\n    assert np.allclose(np.ones(3), 2), 'not two'"
    clean = _execute([_test_cell("good", good), _test_cell("bad", bad)])
    tampered = _execute([_source(_cell("x"), _TAMPER), _test_cell("good", good),
                         _test_cell("bad", "with check('fails'):\n    assert 1 == 2, 'no'")])
    return clean, tampered


def test_a_clean_kernel_passes_by_token_and_the_guard_says_nothing(kernels):
    clean, _ = kernels
    errors = [o for c in clean.cells for o in c.outputs if o.output_type == "error"]
    assert [e.ename for e in errors] == ["AssertionError"]                     # the failing test cell only
    assert guard_notes(clean) == []
    assert verdicts(clean, {k: token(SECRET, k) for k in ("good", "bad")}) == {"good": True, "bad": False}


def test_a_tampered_kernel_scores_nothing_and_the_guard_notes_each_hook(kernels):
    """Once the guard sees a hook, no test cell prints its token: not the failing one, whose error
    was swallowed, and not the passing one either, since a hook could have changed what it saw."""
    _, tampered = kernels
    assert verdicts(tampered, {k: token(SECRET, k) for k in ("good", "bad")}) == {"good": False, "bad": False}
    assert not any(o.output_type == "error" for o in tampered.cells[3].outputs)   # the error was swallowed
    assert "✗ fails" in _stdout(tampered.cells[3])                 # the private Checks recorded it
    notes = "\n".join(guard_notes(tampered))
    # (no sys.excepthook here: IPython puts its own back when the answer's cell ends)
    for what in ("a trace function is set (sys.settrace: __main__._tracer)",
                 "a custom exception handler is set",
                 "a pre_run_cell callback is registered (__main__._spy)",
                 "an extra input_transformers_post rewrites the cells",
                 "an AST transformer rewrites the cells",
                 "numpy.allclose runs code from the notebook", "builtins.print runs code from the notebook",
                 "tokvec.course.checks.Checks._record runs code from the notebook"):
        assert what in notes, f"{what!r} not in:\n{notes}"


# --- 4. the static scan ---------------------------------------------------------------------

@pytest.mark.parametrize("name", list(TAMPERINGS))
def test_every_tampering_is_flagged(name):
    assert flags(TAMPERINGS[name]), f"{name} is not flagged"


def test_the_catalogue_has_the_reviews_tampering_first_and_at_least_twelve():
    assert len(TAMPERINGS) >= 12
    first = next(iter(TAMPERINGS.values()))
    assert 'setattr(C, "_rec" + "ord"' in first
    assert flags(first) == ["calls __import__", "getattr with a computed name",
                            "setattr with a computed name"]


@pytest.mark.parametrize("code, reason", [
    ("import sys\nsys.excepthook = print", "replaces sys.excepthook"),
    ("check = 1", "assigns check (the tests' name)"),
    ("del Checks", "deletes Checks (the tests' name)"),
    ("class _Test: pass", "defines _Test (the tests' name)"),
    ("from tokvec.course.grading import grade", "imports tokvec.course.grading.grade (the grader's code)"),
    ("getattr(x, name)", "getattr with a computed name"),
    ("hasattr(x, '_record')", "hasattr on a private name '_record'"),
    ("globals()['x'] = 1", "indexes globals() by name"),
    ("vars().update(x=1)", "changes vars() by name"),
    ("f.__globals__['x'] = 1", "reads or writes __globals__"),
    ("().__class__.__base__.__subclasses__()", "reads or writes __subclasses__"),
    ("import threading\nthreading.settrace(f)", "sets a trace function for threads (threading.settrace)"),
    ("import inspect\ninspect.currentframe().f_back", "reads stack frames"),
    ("import gc", "uses gc (reaches any object)"),
    ("import ctypes", "uses ctypes (writes memory)"),
    ("import sys\nsys.exit(0)", "exits the kernel (sys.exit)"),
    ("raise SystemExit", "raises SystemExit (stops the kernel's run)"),
    ("%run other.py", "uses get_ipython().run_line_magic ('run')"),
    ("ip = get_ipython()", "uses get_ipython()"),
])
def test_flags_says_why(code, reason):
    assert reason in flags(code), flags(code)


def test_flags_accepts_ordinary_answers_and_the_chapters_magics():
    for code in ("%timeit f(x)", "%%time\ny = f(x)", "%matplotlib inline", "x = getattr(obj, 'shape')",
                 "model = torch.nn.Linear(2, 3).eval()", "print(type(e).__name__)", "checked = 1",
                 "import numpy as np\nx = np.stack([a, b]).trace()", "this is ( not python"):
        assert flags(code) == [], (code, flags(code))
    with pytest.raises(TypeError, match="list"):
        flags(["x = 1"])


def test_no_solution_of_any_chapter_is_flagged():
    sources = source_notebooks(ROOT / "chapters", ROOT / "grading")
    cells = [(stem, c.metadata["nbgrader"]["grade_id"], c.source) for stem, nb in sources.items()
             for c in nb.cells if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("solution")]
    assert len(cells) >= 40
    flagged = {f"{stem} {label}": flags(re.sub(r"^### (BEGIN|END) SOLUTION\n?", "", code, flags=re.M))
               for stem, label, code in cells}
    assert {k: v for k, v in flagged.items() if v} == {}


# --- 5. the structure check -----------------------------------------------------------------

@pytest.fixture(scope="module")
def handout():
    return nbformat.read(ROOT / "student" / f"{CHAPTER}.ipynb", as_version=4)


def _index(nb, grade_id):
    return next(i for i, c in enumerate(nb.cells)
                if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)


def test_structure_of_a_pristine_and_an_answered_handout_is_clean(handout):
    source = source_notebooks(ROOT / "chapters", ROOT / "grading", [CHAPTER])[CHAPTER]
    assert structure(handout, handout) == []
    answered = solved(handout, source)
    assert answered.cells != handout.cells
    assert structure(answered, handout) == []


def _label(handout, n=0):
    ids = [c.metadata.get("nbgrader", {}).get("grade_id", "") for c in handout.cells]
    return [i for i in ids if i.endswith("-tests")][n].removesuffix("-tests")


def test_structure_notes_each_test_cell_problem(handout):
    label, second = _label(handout), _label(handout, 1)
    tests, answer = _index(handout, f"{label}-tests"), _index(handout, label)

    def changed(edit):
        nb = copy.deepcopy(handout)
        edit(nb.cells)
        return structure(nb, handout)

    assert changed(lambda c: c.pop(tests)) == [f"test cell of {label} deleted: scored 0"]
    assert changed(lambda c: c.insert(tests, copy.deepcopy(c[tests]))) == \
        [f"test cell of {label} duplicated (2 copies)"]
    assert changed(lambda c: c[tests].update(source=c[tests].source + "\ncheck.results.clear()")) == \
        [f"test cell of {label} edited: the grader ran the handout's"]
    assert changed(lambda c: c.insert(answer, c.pop(tests))) == \
        [f"test cell of {label} moved above its answer cell"]
    later = _index(handout, f"{second}-tests")
    assert changed(lambda c: c.insert(later, c.pop(tests))) == \
        [f"test cell of {label} moved: the test cells are out of the handout's order"]
    assert changed(lambda c: c[tests].metadata.pop("nbgrader")) == \
        [f"test cell of {label} lost its nbgrader metadata (cell {tests + 1}): scored 0"]


def test_structure_notes_answer_and_written_cells_deleted_or_duplicated(handout):
    label = _label(handout)
    answer, words = _index(handout, label), _index(handout, f"{label}-words")
    nb = copy.deepcopy(handout)
    nb.cells.insert(words, copy.deepcopy(nb.cells[words]))
    del nb.cells[answer]
    assert structure(nb, handout) == [f"answer cell of {label} deleted",
                                      f"written answer of {label} duplicated (2 copies)"]
    nb = copy.deepcopy(handout)
    nb.cells.insert(answer, copy.deepcopy(nb.cells[answer]))
    del nb.cells[words + 1]
    assert structure(nb, handout) == [f"answer cell of {label} duplicated (2 copies)",
                                      f"written answer of {label} deleted"]
    with pytest.raises(TypeError, match="nbformat notebook"):
        structure({"cells": []}, handout)
