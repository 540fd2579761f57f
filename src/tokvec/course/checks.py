"""The tests under each exercise of the student notebooks: they report, they never raise.

Each code exercise of the student handout (``student/``) is followed by a locked test cell::

    from tokvec.course.checks import Checks

    check = Checks("Exercise 3.2")
    with check("a table of shape (N_V, d)"):
        assert table.shape == (N_V, d)
    check.report()

Every ``with check(...)`` block is one test. It passes when the block runs to its end; an
``AssertionError`` or any other exception fails it and the cell goes on to the next test, so a
student sees every result at once, in any Jupyter, and "Run all" never stops here. A name the
answer has not defined yet (``NameError``) reads "not done yet". ``report`` prints the count.

Grading adds hidden tests to the same cell (``tokvec.course.grading`` puts them between
nbgrader's ``### BEGIN HIDDEN TESTS`` and ``### END HIDDEN TESTS``, which the handout does not
contain) and ends them with :meth:`Checks.require`, the one call that raises: the grader's cell
fails, and scores zero, unless every visible and hidden test passed.
"""

from __future__ import annotations

import sys
import traceback
import warnings

__all__ = ["Checks", "runs_inside"]

PASS, FAIL = "\u2713", "\u2717"


class _Test:
    def __init__(self, checks: Checks, what: str):
        self.checks, self.what = checks, what

    def __enter__(self):
        # nbgrader scores a test cell zero if anything reaches stderr, so a warning raised by the
        # answer (or a print to sys.stderr) must not: both are shown on stdout as notes instead.
        self._stderr, sys.stderr = sys.stderr, sys.stdout
        self._warnings = warnings.catch_warnings(record=True)
        self._caught = self._warnings.__enter__()
        warnings.simplefilter("always")
        return self

    def __exit__(self, kind, error, tb):
        self._warnings.__exit__(None, None, None)
        sys.stderr = self._stderr
        for w in self._caught:
            print(f"  note: {w.category.__name__}: {w.message}")
        if kind is None:
            self.checks._record(self.what, None)
            return False
        if not issubclass(kind, Exception):         # KeyboardInterrupt, SystemExit: let them stop
            return False
        frames = traceback.extract_tb(tb) if tb is not None else []
        if isinstance(error, NameError) and len(frames) <= 1:     # raised by the test itself
            reason = f"not done yet ({error}): run your answer's cell first"
        elif isinstance(error, NameError):                        # raised inside the answer's code
            where = f" (line {frames[-1].lineno} of {frames[-1].name})" if frames else ""
            reason = f"NameError in your code{where}: {error}"
        elif isinstance(error, AssertionError):
            reason = str(error) or "the assertion above does not hold"
            line = traceback.extract_tb(tb)[-1].line if tb is not None else ""
            if not str(error) and line:
                reason = f"this does not hold: {line}"
        else:
            reason = f"{kind.__name__}: {error}"
        self.checks._record(self.what, reason)
        return True                                 # the next test still runs


class Checks:
    """A named group of tests, one per ``with check("what it tests"):`` block."""

    def __init__(self, name: str):
        self.name = name
        self.results: list[tuple[str, str | None, bool]] = []
        self._hidden = False

    def __call__(self, what: str) -> _Test:
        if not isinstance(what, str) or not what:
            raise TypeError(f"check(...) takes a non-empty description of the test, got {what!r}")
        return _Test(self, what)

    def _record(self, what: str, reason: str | None) -> None:
        self.results.append((what, reason, self._hidden))
        tag = " (hidden test)" if self._hidden else ""
        print(f"{PASS if reason is None else FAIL} {what}{tag}" + ("" if reason is None else f": {reason}"))

    def hidden(self) -> None:
        """From here on the tests are the grader's (printed as "hidden test")."""
        self._hidden = True

    @property
    def failed(self) -> list[str]:
        return [what for what, reason, _ in self.results if reason is not None]

    def report(self) -> None:
        done = len(self.results) - len(self.failed)
        if not self.results:
            print(f"{self.name}: no test ran.")
        elif not self.failed:
            print(f"{self.name}: all {len(self.results)} tests pass.")
        else:
            print(f"{self.name}: {done} of {len(self.results)} tests pass; the ones marked {FAIL} say what to fix.")

    def require(self) -> None:
        """Raise ``AssertionError`` unless at least one test ran and every one passed (grading only).

        The grader's cell ends with this and then with a plain ``assert`` on :attr:`results`, so
        an answer that replaces this method still does not score."""
        if not self.results:
            raise AssertionError(f"{self.name}: no test ran")
        if self.failed:
            raise AssertionError(f"{self.name}: {len(self.failed)} of {len(self.results)} tests fail: "
                                 + "; ".join(self.failed))


def runs_inside(module, name: str, f, *args, namespace: dict | None = None) -> bool:
    """Whether ``module.<name>`` (a function) runs while ``f(*args)`` does, under any name.

    For the tests of an exercise that asks to write something the course's package already has:
    the function is switched off (it raises) in ``module``, in ``f``'s globals and in
    ``namespace`` (the notebook's), under every name bound to it there, and a profile hook sees
    its code run even when the answer reached it some other way (a default argument, a closure,
    ``functools.partial``). Everything is restored afterwards. An exception ``f`` raises for
    another reason is raised again."""
    target, ran = getattr(module, name), []

    def refuse(*_args, **_kwargs):
        ran.append(True)
        raise AssertionError(f"{module.__name__}.{name} is switched off here")

    def watch(frame, event, _arg):
        if event == "call" and frame.f_code is target.__code__:
            ran.append(True)

    spaces = [vars(module), getattr(f, "__globals__", {})] + ([namespace] if namespace is not None else [])
    bound = [(space, key) for space in spaces for key, value in list(space.items()) if value is target]
    previous = sys.getprofile()
    try:
        for space, key in bound:
            space[key] = refuse
        sys.setprofile(watch)
        try:
            f(*args)
        except Exception:
            if not ran:
                raise
    finally:
        sys.setprofile(previous)
        for space, key in bound:
            space[key] = target
    return bool(ran)
