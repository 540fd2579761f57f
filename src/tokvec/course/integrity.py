"""What the grader does so that an answer cell cannot switch the tests off unseen, and what it notes.

An answer runs in the same Python process as the tests that grade it, so no in-process grader
can be made tamper-proof: code that runs first can replace any function, hook or module the tests
use. This module makes the easy ways fail and the others visible (instructors.md says so):

- :func:`prelude`: the grader's copy of each test cell loads ``checks.py`` afresh under a private
  module name (never in ``sys.modules``, where an answer patches ``Checks``), after checking its
  sha256 against :func:`checks_file`'s digest, taken when the grader starts;
- :func:`token` and :func:`epilogue`: the grader's cell prints a line with a per-run secret token
  only after every test ran and passed, and :func:`verdicts` scores a test cell by that line in its
  own output, not by the absence of an error (``sys.excepthook`` or ``set_custom_exc`` can swallow
  one). The answer cannot print a token it cannot know: a fresh secret per grading run;
- the guard (the start of the epilogue) prints one :data:`GUARD_PREFIX` line for each hook or
  patched function it can see at test time; :func:`guard_notes` collects them;
- :func:`flags` scans an answer cell's code for what touches the grading machinery (a student's
  code never needs to) and :func:`structure` compares a submission with the handout (a deleted,
  edited, duplicated or moved test cell). :data:`TAMPERINGS` is the catalogue they are tested on.

A test cell of the grader's copy then reads (``grading.py`` puts the hidden parts in)::

    from tokvec.course.checks import Checks
    <prelude(path, digest)>                        # hidden
    check = Checks("Exercise 5.1")
    with check("..."): ...                         # the visible and the hidden tests
    <epilogue(label, token(secret, label))>        # hidden
"""

from __future__ import annotations

import ast
import builtins
import hashlib
import hmac
import inspect
import os
import re
import secrets
import sysconfig
import textwrap
from pathlib import Path

__all__ = ["GUARD_PREFIX", "TAMPERINGS", "VERDICT_PREFIX", "checks_file", "epilogue", "flags", "guard",
           "guard_notes", "new_secret", "prelude", "structure", "token", "verdicts"]

#: The start of the line a grader's cell prints when every test passed: prefix, label, token.
VERDICT_PREFIX = "grader: passed "
#: The start of each line the guard prints: what it saw (a hook, a patched function).
GUARD_PREFIX = "grader: noticed "
_LABEL = re.compile(r"[\w.:-]+")
_TOKEN = re.compile(r"[0-9a-f]{24}")
_SHA256 = re.compile(r"[0-9a-f]{64}")


# --- 1. checks.py, loaded privately ---------------------------------------------------------

def checks_file() -> tuple[str, str]:
    """The path of the installed ``tokvec/course/checks.py`` and the sha256 of its bytes: what
    :func:`prelude` loads, and the digest it must have (taken by the grader, not the notebook)."""
    path = Path(__file__).with_name("checks.py").resolve()
    return str(path), hashlib.sha256(path.read_bytes()).hexdigest()


def prelude(path: str, digest: str) -> str:
    """Python source that rebinds ``Checks`` to a private copy of ``checks.py``.

    It goes after the visible ``from tokvec.course.checks import Checks`` of a test cell. It reads
    ``path``, refuses it (``AssertionError`` naming the file) unless its sha256 is ``digest``, and
    runs those very bytes as a module made by ``importlib.util.spec_from_file_location`` and
    ``module_from_spec``, under a name of its own that is never put in ``sys.modules``. So a
    ``setattr`` on ``tokvec.course.checks.Checks``, or a fake module in ``sys.modules``, does not
    reach the class the tests use. (The bytes are compiled directly rather than through
    ``exec_module``, which would read the file again and might take a cached ``.pyc``.) Every
    temporary name starts with ``_`` and is deleted after."""
    if not isinstance(path, str) or not Path(path).is_file():
        raise ValueError(f"prelude: path must be the checks.py file to load, got {path!r}; "
                         "use checks_file()[0]")
    if not isinstance(digest, str) or not _SHA256.fullmatch(digest):
        raise ValueError(f"prelude: digest must be a sha256 in 64 lowercase hex digits, got {digest!r}; "
                         "use checks_file()[1]")
    return textwrap.dedent(f"""\
        import builtins as _tv_b
        import hashlib as _tv_hashlib
        import importlib.util as _tv_util
        _tv_path = {path!r}
        with _tv_b.open(_tv_path, "rb") as _tv_file:
            _tv_bytes = _tv_file.read()
        if _tv_hashlib.sha256(_tv_bytes).hexdigest() != {digest!r}:
            raise _tv_b.AssertionError(f"{{_tv_path}} is not the checks.py the grader started with "
                                       "(its sha256 differs): the tests cannot run")
        _tv_spec = _tv_util.spec_from_file_location("_tokvec_private_checks", _tv_path)
        _tv_module = _tv_util.module_from_spec(_tv_spec)
        _tv_b.exec(_tv_b.compile(_tv_bytes, _tv_path, "exec", dont_inherit=True), _tv_module.__dict__)
        Checks = _tv_module.Checks
        del _tv_b, _tv_hashlib, _tv_util, _tv_path, _tv_file, _tv_bytes, _tv_spec, _tv_module
        """)


# --- 2. the verdict, by token ---------------------------------------------------------------

def new_secret() -> str:
    """A fresh secret for one grading run (32 hex digits): never stored, never in a notebook."""
    return secrets.token_hex(16)


def _label(label, where: str) -> str:
    if not isinstance(label, str) or not _LABEL.fullmatch(label):
        raise ValueError(f"{where}: label must be an exercise label of letters, digits, '_', '.', ':' "
                         f"or '-' (a grade_id without '-tests'), got {label!r}")
    return label


def token(secret: str, label: str) -> str:
    """The token that the test cell of ``label`` prints when it passes in a run keyed by ``secret``:
    HMAC-SHA256 of the label, 24 hex digits. Another label's token says nothing about this one's."""
    if not isinstance(secret, str) or len(secret) < 16:
        raise ValueError(f"token: secret must be a string of at least 16 characters, got {secret!r}; "
                         "use new_secret() once per grading run")
    _label(label, "token")
    return hmac.new(secret.encode(), label.encode(), hashlib.sha256).hexdigest()[:24]


def epilogue(label: str, token: str) -> str:
    """Python source that ends the hidden part of the test cell of ``label``: it runs the guard
    (:func:`guard`), then ``check.require()``, and prints the single line
    ``VERDICT_PREFIX + label + " " + token`` only if at least one test ran, every one passed and the
    guard saw nothing: a trace function or a patched comparison could have changed what the tests saw."""
    _label(label, "epilogue")
    if not isinstance(token, str) or not _TOKEN.fullmatch(token):
        raise ValueError(f"epilogue: token must be 24 lowercase hex digits, got {token!r}; use token()")
    return guard() + textwrap.dedent(f"""\
        check.require()
        if not (check.results and _tv_b.all(_tv_r[1] is None for _tv_r in check.results)):
            raise _tv_b.AssertionError("a test fails")
        if _tv_seen:
            raise _tv_b.AssertionError("the tests cannot be trusted here: " + "; ".join(_tv_seen))
        _tv_b.print({VERDICT_PREFIX + label + " " + token!r})
        """)


def _stdout_lines(cell) -> list[str]:
    lines = []
    for out in cell.get("outputs", []):
        if out.get("output_type") == "stream" and out.get("name") == "stdout":
            text = out.get("text", "")
            lines += ("".join(text) if isinstance(text, list) else text).splitlines()
    return lines


def _grade_id(cell):
    meta = cell.get("metadata", {}).get("nbgrader")
    return meta.get("grade_id") if isinstance(meta, dict) else None


def verdicts(notebook, tokens: dict[str, str]) -> dict[str, bool]:
    """``{label: passed}`` for an executed (autograded) notebook: whether a test cell of that label
    (nbgrader ``grade_id`` ``label + "-tests"``) printed its token's line on stdout. A line printed
    by any other cell does not count, nor one on stderr or in a rich output."""
    out = {}
    for label, tok in tokens.items():
        line = VERDICT_PREFIX + _label(label, "verdicts") + " " + tok
        out[label] = any(line in _stdout_lines(c) for c in notebook.cells
                         if c.get("cell_type") == "code" and _grade_id(c) == f"{label}-tests")
    return out


# --- 3. the guard ---------------------------------------------------------------------------

# The guard's view of a kernel that only ran the course's code, measured in a fresh ipykernel (the
# versions of requirements.txt) after ``%matplotlib inline`` and the chapters' imports (numpy,
# torch, matplotlib.pyplot, tokvec), each callable as "module.qualname". A callback or transform
# of IPython, ipykernel or matplotlib themselves (``_TRUSTED``) is accepted too, so that a new
# version of them adds no note. tests/test_integrity.py runs such a kernel and requires silence.
_BASELINE = {
    "events": {
        "pre_execute": ["IPython.core.interactiveshell.InteractiveShell._clear_warning_registry",
                        "IPython.core.displaypub.DisplayPublisher._on_pre_execute"],
        "pre_run_cell": [],
        "post_execute": ["IPython.core.displaypub.DisplayPublisher._on_post_execute",
                         "matplotlib.pyplot._draw_all_if_interactive",
                         "matplotlib_inline.backend_inline.flush_figures"],
        "post_run_cell": [],
    },
    "transforms": [
        "IPython.core.inputtransformer2.leading_empty_lines",
        "IPython.core.inputtransformer2.leading_indent",
        "IPython.core.inputtransformer2.PromptStripper",
        "IPython.core.inputtransformer2.cell_magic",
        "IPython.core.inputtransformer2.MagicAssign",
        "IPython.core.inputtransformer2.SystemAssign",
        "IPython.core.inputtransformer2.EscapedCommand",
        "IPython.core.inputtransformer2.HelpEnd",
    ],
    "hooks": {"excepthook": "IPython.core.interactiveshell.InteractiveShell.excepthook",
              "displayhook": "ipykernel.displayhook.ZMQShellDisplayHook",
              "stdout": "ipykernel.iostream.OutStream", "stderr": "ipykernel.iostream.OutStream"},
    "python_level": {      # the Python-level callables of the C modules (site, IPython and debugpy's)
        "builtins": ["_sitebuiltins.Quitter", "_sitebuiltins._Helper", "_sitebuiltins._Printer",
                     "IPython.core.display_functions.display", "ipykernel.kernelbase.Kernel.raw_input",
                     "IPython.core.interactiveshell.InteractiveShell.get_ipython",
                     "_pydev_bundle._pydev_execfile.execfile", "_pydev_bundle.pydev_umd.runfile"],
        "math": [],
    },
}
_TRUSTED = ("IPython.", "ipykernel.", "matplotlib.", "matplotlib_inline.")

#: The modules whose functions the guard checks (and every ``tokvec.*`` module).
_GUARDED = ["builtins", "math", "numpy", "numpy.testing", "torch", "torch.testing", "importlib",
            "importlib.util", "hashlib"]
# Functions the tests compare with: each must still be itself, not another real function.
_NAMED = {"numpy": ["allclose", "isclose", "array_equal"], "math": ["isclose"],
          "numpy.testing": ["assert_allclose", "assert_array_equal", "assert_equal",
                            "assert_array_almost_equal"],
          "torch": ["allclose", "equal", "isclose"], "torch.testing": ["assert_close"]}


def _tv_guard(config, namespace=None):
    """Print ``config["prefix"] + what`` for each hook or patched function seen in this kernel.

    Runs inside the student's kernel, as part of the grader's test cell: it must never raise
    (a crashing guard would zero a right answer), so each check is caught on its own, and it
    imports nothing new. ``config`` holds the baseline, the trusted folders and the modules."""
    import functools
    import os
    import sys
    import types

    seen, files = [], {}

    def note(what):
        if what not in seen:
            seen.append(what)

    def trusted(filename):
        if filename not in files:
            files[filename] = filename.startswith("<frozen ") or (
                any(filename.startswith(root) for root in config["roots"]) and os.path.isfile(filename))
        return files[filename]

    def code_of(value, depth=0):
        """The code object behind a callable, unwrapped; None for C code."""
        if depth > 4:
            return None
        if isinstance(value, functools.partial):
            return code_of(value.func, depth + 1)
        code = getattr(value, "__code__", None)
        if isinstance(code, types.CodeType):
            return code
        func = getattr(value, "__func__", None)
        if func is not None:
            return code_of(func, depth + 1)
        if not isinstance(value, type):
            call = getattr(type(value), "__dict__", {}).get("__call__")
            c_code = (types.BuiltinFunctionType, types.MethodWrapperType)
            if call is not None and not isinstance(value, c_code):
                return code_of(call, depth + 1)
        wrapped = getattr(value, "__wrapped__", None)
        return code_of(wrapped, depth + 1) if wrapped is not None else None

    def key(value):
        """module.qualname of a callable (a bound method by its function), or of an object's class."""
        value = getattr(value, "__func__", value)
        if not hasattr(value, "__qualname__"):
            value = type(value)
        return f"{getattr(value, '__module__', '?')}.{getattr(value, '__qualname__', '?')}"

    def where(code):
        name = code.co_filename
        return "the notebook" if "ipykernel_" in name or name.startswith("<ipython-input") else name

    def check(what, value):
        """A note if ``value`` runs code that is not in a real file of the course's environment."""
        code = code_of(value)
        if code is not None and not trusted(code.co_filename):
            note(f"{what} runs code from {where(code)} ({key(value)})")
            return False
        return True

    def run(step):
        try:
            step()
        except Exception as error:                      # noqa: BLE001 (the guard never raises)
            note(f"the guard could not check {step.__name__} ({type(error).__name__})")

    def tracing():
        if sys.gettrace() is not None:
            note(f"a trace function is set (sys.settrace: {key(sys.gettrace())})")
        if sys.getprofile() is not None:
            note(f"a profile function is set (sys.setprofile: {key(sys.getprofile())})")
        threading = sys.modules.get("threading")
        for name in ("_trace_hook", "_profile_hook"):
            if getattr(threading, name, None) is not None:
                note(f"threading.{name.strip('_').replace('_hook', '')} is set for new threads")

    def hooks():
        for name, want in config["hooks"].items():
            values = [getattr(sys, name, None)]
            if name == "excepthook":        # IPython swaps its own in while a cell runs, keeping the
                getipython = sys.modules.get("IPython.core.getipython")       # student's here
                values.append(getattr(getipython and getipython.get_ipython(), "sys_excepthook", None))
            for value in values:
                if value is sys.__excepthook__ or value is None and name == "excepthook":
                    continue
                trusted_hook = name == "excepthook" and key(value).startswith(config["trusted"])
                if key(value) != want and not trusted_hook:
                    note(f"sys.{name} is replaced ({key(value)})")
                check(f"sys.{name}", value)

    def shell():
        getipython = sys.modules.get("IPython.core.getipython")
        ip = getipython.get_ipython() if getipython is not None else None
        if ip is None:
            return
        if tuple(ip.custom_exceptions) != ():
            note("a custom exception handler is set (set_custom_exc: errors can be swallowed)")
        for event, known in config["events"].items():
            for callback in ip.events.callbacks.get(event, []):
                if key(callback) not in known and not key(callback).startswith(config["trusted"]):
                    note(f"a {event} callback is registered ({key(callback)})")
                else:
                    check(f"the {event} callback {key(callback)}", callback)
        manager = ip.input_transformer_manager
        for name, transforms in (("input_transformers_post", ip.input_transformers_post),
                                 ("input_transformers_cleanup", ip.input_transformers_cleanup),
                                 ("input transformer", manager.cleanup_transforms + manager.line_transforms
                                  + manager.token_transformers)):
            for transform in transforms:
                known = key(transform) in config["transforms"] or key(transform).startswith(config["trusted"])
                if not known:
                    note(f"an extra {name} rewrites the cells ({key(transform)})")
        for transform in ip.ast_transformers:
            note(f"an AST transformer rewrites the cells ({key(transform)})")
        for name, value in list(vars(ip).items()):
            if callable(value) and not isinstance(value, type):
                check(f"the IPython shell's {name}", value)
        for cls in type(ip).__mro__:
            for name, value in list(vars(cls).items()):
                if callable(value):
                    check(f"IPython's {cls.__name__}.{name}", value)

    def modules():
        ours = sorted(n for n in list(sys.modules) if n == "tokvec" or n.startswith("tokvec."))
        names = config["modules"] + ours
        for modname in names:
            module = sys.modules.get(modname)
            if module is None:
                continue
            if not isinstance(module, types.ModuleType) or not trusted(getattr(module, "__file__", None)
                                                                          or "<frozen >"):
                note(f"sys.modules[{modname!r}] is replaced ({key(module)})")
                continue
            python_level = config["python_level"].get(modname)
            named = config["named"].get(modname, [])
            for name, value in list(vars(module).items()):
                if isinstance(value, types.ModuleType) or name.startswith("__"):
                    continue
                if isinstance(value, type):
                    if value.__module__ == "__main__":
                        note(f"{modname}.{name} is a class from the notebook")
                    elif modname.startswith("tokvec") or (modname, name) == ("torch", "Tensor"):
                        # dataclasses and namedtuples write their methods with exec ("<string>")
                        generated = "__dataclass_fields__" in vars(value) or "_fields" in vars(value)
                        for attr, member in list(vars(value).items()):
                            code = code_of(member) if callable(member) or hasattr(member, "__func__") \
                                else None
                            if code is not None and not (generated and code.co_filename == "<string>"):
                                check(f"{modname}.{name}.{attr}", member)
                    continue
                if not callable(value) or not check(f"{modname}.{name}", value):
                    continue
                if python_level is not None:                      # a C module: C functions only
                    if code_of(value) is not None and key(value) not in python_level:
                        note(f"{modname}.{name} is replaced by a Python function ({key(value)})")
                    elif isinstance(value, types.BuiltinFunctionType) and value.__name__ != name \
                            and getattr(value, "__self__", None) is module:
                        note(f"{modname}.{name} is replaced by {modname}.{value.__name__}")
                if name in named and getattr(value, "__name__", name) != name:
                    note(f"{modname}.{name} is replaced by {key(value)}")

    def shadows():
        """The notebook's own functions under a builtin's name (all, isinstance, compile...): the
        tests' code would call them instead of the builtins."""
        import builtins
        try:                                    # what IPython put there itself: exit, quit, open
            hidden = dict(sys.modules["IPython"].get_ipython().user_ns_hidden)
        except Exception:                                          # noqa: BLE001 (not in IPython)
            hidden = {}
        for name, value in list((namespace or {}).items()):
            real = getattr(builtins, name, None)
            if real is None or value is real or name.startswith("_") or not callable(value):
                continue
            if name in hidden and hidden[name] is value:
                continue
            note(f"the notebook redefines the builtin {name} ({key(value)})")
        # a module imported from the notebook's own folder: code the notebook wrote, never scanned
        here = os.path.join(os.path.realpath(os.getcwd()), "")
        for modname, module in list(sys.modules.items()):
            path = getattr(module, "__file__", None)
            if isinstance(path, str) and path.startswith(here) and not trusted(path):
                note(f"the module {modname} comes from the notebook's folder ({os.path.basename(path)})")
        # a value the tests compare (a number, a string, a list, an array) whose class, written in
        # the notebook, answers == or < or bool() its own way (a dataclass's generated == is fair)
        liars = ("__eq__", "__ne__", "__hash__", "__bool__", "__lt__", "__le__", "__gt__", "__ge__")
        plain = (int, float, complex, str, bytes, bool, tuple, list, dict, set, frozenset)
        for name, value in list((namespace or {}).items()):
            mro = type(value).__mro__
            if not any(c in plain or c.__name__ in ("ndarray", "Tensor") for c in mro):
                continue
            mine = [c for c in mro if getattr(c, "__module__", None) == "__main__"]
            lies = sorted({m for c in mine for m in liars if m in vars(c)
                           and getattr(getattr(vars(c)[m], "__code__", None), "co_filename", "") != "<string>"})
            if lies and not name.startswith("_"):
                note(f"{name} is a value whose class, from the notebook, redefines {', '.join(lies)}")

    for step in (tracing, hooks, shell, modules, shadows):
        run(step)
    for what in seen:
        print(config["prefix"] + what)
    return seen


def _roots() -> list[str]:
    paths = sysconfig.get_paths()
    roots = {paths[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    roots.add(str(Path(__file__).resolve().parents[1]))             # the tokvec package itself
    return sorted(os.path.join(r, "") for r in roots)


def guard() -> str:
    """Python source that runs the guard in the student's kernel (the epilogue's first part): one
    ``GUARD_PREFIX`` line for each of a trace or profile function; ``sys.excepthook``,
    ``displayhook``, ``stdout`` or ``stderr`` replaced; IPython's custom exception handler; extra
    input or AST transformers; ``pre/post_run_cell`` and ``pre/post_execute`` callbacks beyond
    those of a fresh kernel with the course's imports (compared by module and qualified name);
    functions of ``tokvec.*``, numpy, numpy.testing, torch, torch.testing, math, importlib,
    hashlib and builtins (and of tokvec's classes and ``torch.Tensor``) whose code is not in a real
    file of the course's Python (a notebook cell, ``exec``), a C function of math or builtins
    replaced by a Python one, the functions the tests compare with replaced by other ones, a
    builtin redefined in the notebook's names (not one IPython put there), a module loaded from
    the notebook's own folder, and a number, string, list or array whose class, from the
    notebook, redefines a comparison. It runs in a namespace of its own, with the real builtins,
    never raises, and takes a few milliseconds (tests/test_integrity.py measures it)."""
    config = {"prefix": GUARD_PREFIX, "roots": _roots(), "modules": _GUARDED, "named": _NAMED,
              "events": _BASELINE["events"], "transforms": _BASELINE["transforms"],
              "hooks": _BASELINE["hooks"], "python_level": _BASELINE["python_level"], "trusted": _TRUSTED}
    source = inspect.getsource(_tv_guard)
    # run in a namespace of its own, with the real builtins: a notebook that redefines print,
    # isinstance or getattr does not reach the guard's code
    return (f"import builtins as _tv_b\n_tv_ns = {{'__builtins__': _tv_b}}\n_tv_b.exec({source!r}, _tv_ns)\n"
            f"_tv_seen = _tv_ns['_tv_guard']({config!r}, _tv_b.globals())\ndel _tv_ns\n")


def guard_notes(notebook) -> list[str]:
    """The guard's notes in an executed notebook, each once, with the first exercise whose test
    cell saw it: ``"sys.excepthook is replaced (...) (seen by the tests of LABEL)"``."""
    out, seen = [], set()
    for cell in notebook.cells:
        grade_id = _grade_id(cell) or ""
        if cell.get("cell_type") != "code" or not grade_id.endswith("-tests"):
            continue
        for line in _stdout_lines(cell):
            what = line[len(GUARD_PREFIX):] if line.startswith(GUARD_PREFIX) else None
            if what and what not in seen:
                seen.add(what)
                out.append(f"{what} (seen by the tests of {grade_id.removesuffix('-tests')})")
    return out


# --- 4. the static scan ---------------------------------------------------------------------

_MACHINERY = {"Checks", "check", "_Test"}
_BUILTIN_NAMES = {n for n in dir(builtins) if not n.startswith("_")}
_MODULES = {"tokvec.course.checks", "tokvec.course.grading"}
_DUNDERS = {"__code__", "__globals__", "__dict__", "__class__", "__subclasses__", "__builtins__",
            "__closure__", "__defaults__", "__kwdefaults__", "__bases__", "__base__", "__mro__", "__self__",
            "__func__", "__wrapped__", "__import__", "__loader__", "__spec__", "__setattr__", "__delattr__",
            "__getattribute__", "__reduce__", "__reduce_ex__", "__traceback__"}
_FRAMES = {"_getframe", "currentframe", "stack", "getouterframes", "getinnerframes", "trace", "f_back",
           "f_globals", "f_locals", "f_builtins", "f_code", "tb_frame", "tb_next", "gi_frame", "cr_frame",
           "ag_frame", "co_consts"}
# IPython's input and output history: the source of the cell running now (a test cell) among them.
_HISTORY = re.compile(r"In|Out|_ih|_oh|_dh|_i+|_i\d+|_\d+")
# Exceptions that are not ``Exception``: they get past the tests' ``with check(...)`` blocks.
_ESCAPES = {"BaseException", "SystemExit", "KeyboardInterrupt", "GeneratorExit", "CancelledError"}
# Methods that make a value lie to a comparison or a type check.
_LIARS = {"__eq__", "__ne__", "__bool__", "__instancecheck__", "__subclasscheck__", "__lt__", "__le__",
          "__gt__", "__ge__"}
_DANGEROUS = {"gc": "uses gc (reaches any object)", "ctypes": "uses ctypes (writes memory)",
              "signal": "uses signal", "IPython": "imports IPython", "ipykernel": "imports ipykernel",
              "importlib": "uses importlib", "builtins": "uses builtins",
              "unittest.mock": "patches with unittest.mock", "mock": "patches with mock",
              "atexit": "registers atexit handlers", "threading": "starts or watches threads",
              "_thread": "starts or watches threads", "__main__": "imports __main__ (the notebook's names)",
              "concurrent": "starts threads or processes", "multiprocessing": "starts processes",
              "linecache": "reads cached source (the running cell's among it)",
              "traitlets": "reaches the kernel's objects (traitlets)", "asyncio": "uses asyncio",
              "tokenize": "reads source files"}
_CALLS = {"exec": "calls exec", "eval": "calls eval", "compile": "calls compile",
          "__import__": "calls __import__", "exit": "exits the kernel", "quit": "exits the kernel",
          "breakpoint": "calls breakpoint"}
_SYS = {"excepthook": "sys.excepthook", "settrace": "sets a trace function (sys.settrace)",
        "setprofile": "sets a profile function (sys.setprofile)", "modules": "uses sys.modules",
        "_getframe": "reads stack frames (sys._getframe)", "exit": "exits the kernel (sys.exit)",
        "meta_path": "changes the import system (sys.meta_path)", "path_hooks": "changes the import system",
        "addaudithook": "adds an audit hook", "displayhook": "sys.displayhook",
        "__excepthook__": "sys.__excepthook__", "call_tracing": "sys.call_tracing"}
_OS = {"_exit": "exits the kernel (os._exit)", "kill": "kills a process (os.kill)",
       "abort": "aborts the kernel", "killpg": "kills a process group",
       "system": "runs a shell command (os.system)"}
_MAGICS = {"time", "timeit", "matplotlib"}          # what chapters' cells run through get_ipython()
_COMMON = {"np": "numpy", "numpy": "numpy", "torch": "torch", "math": "math", "tokvec": "tokvec",
           "sys": "sys", "os": "os", "builtins": "builtins", "IPython": "IPython", "importlib": "importlib"}


class _Scan(ast.NodeVisitor):
    def __init__(self):
        self.reasons: list[str] = []
        self.modules = dict(_COMMON)                 # local name -> module it is bound to

    def say(self, reason: str) -> None:
        if reason not in self.reasons:
            self.reasons.append(reason)

    def _root(self, node):
        """The dotted name of an attribute chain (np.testing.assert_allclose), or None."""
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if isinstance(node, ast.Name):
            return ".".join([self.modules.get(node.id, node.id)] + parts[::-1])
        return None

    def _module(self, name: str, local: str) -> None:
        top = name.split(".")[0]
        if name in _MODULES or any(name.startswith(m + ".") for m in _MODULES):
            self.say(f"imports {name} (the grader's code)")
        for module, reason in _DANGEROUS.items():
            if name == module or name.startswith(module + "."):
                self.say(reason)
        self.modules[local] = name if local != top or "." not in name else top

    def _alias(self, node):
        for alias in node.names:
            if (alias.asname or alias.name.split(".")[0]) in _BUILTIN_NAMES:
                self.say(f"redefines the builtin {alias.asname or alias.name} by an import")

    def visit_Import(self, node):
        self._alias(node)
        for alias in node.names:
            self._module(alias.name, alias.asname or alias.name.split(".")[0])
            if alias.asname in _MACHINERY:
                self.say(f"imports a module as {alias.asname}")

    def visit_ImportFrom(self, node):
        self._alias(node)
        base = node.module or ""
        for alias in node.names:
            full = f"{base}.{alias.name}" if base else alias.name
            self._module(full, alias.asname or alias.name)
            if (alias.asname or alias.name) in _MACHINERY:
                self.say(f"imports {alias.asname or alias.name}")
            if base in ("sys", "os", "inspect", "threading") and (alias.name in _SYS or alias.name in _OS
                                                                  or alias.name in _FRAMES):
                self.say(f"imports {base}.{alias.name}")

    def visit_Name(self, node):
        if node.id in _MACHINERY:
            if isinstance(node.ctx, ast.Store):
                self.say(f"assigns {node.id} (the tests' name)")
            elif isinstance(node.ctx, ast.Del):
                self.say(f"deletes {node.id} (the tests' name)")
            elif node.id != "check":
                self.say(f"uses {node.id} (the tests' class)")
        if node.id in ("__builtins__", "builtins"):
            self.say("uses builtins")
        if node.id == "get_ipython":
            self.say("uses get_ipython()")
        if node.id == "importlib":
            self.say("uses importlib")
        if _HISTORY.fullmatch(node.id):
            self.say(f"reads IPython's history ({node.id}), which holds the running cell's source")
        if node.id in _ESCAPES:
            self.say(f"uses {node.id} (it gets past the tests' checks)")
        if node.id.startswith("_tv_"):
            self.say(f"uses the grader's private name {node.id}")
        if isinstance(node.ctx, ast.Store) and node.id in _BUILTIN_NAMES:
            self.say(f"redefines the builtin {node.id}")
        if isinstance(node.ctx, ast.Store) and node.id in _LIARS:
            self.say(f"defines {node.id} (a value that can lie to a comparison)")

    def _defined(self, node):
        if node.name in _MACHINERY:
            self.say(f"defines {node.name} (the tests' name)")
        if node.name in _BUILTIN_NAMES:
            self.say(f"redefines the builtin {node.name}")
        if node.name in _LIARS:
            self.say(f"defines {node.name} (a value that can lie to a comparison)")
        self.generic_visit(node)

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = _defined

    def visit_Attribute(self, node):
        name = self._root(node)
        if node.attr in _DUNDERS:
            self.say(f"reads or writes {node.attr}")
        if node.attr in _FRAMES and (name or "").split(".")[0] in ("sys", "inspect", "threading") or \
                node.attr.startswith(("f_", "tb_", "gi_", "cr_", "ag_")) and node.attr in _FRAMES:
            self.say("reads stack frames")
        if name:
            top, *rest = name.split(".")
            grader = name in _MODULES or any(name.startswith(m + ".") for m in _MODULES)
            if grader and not any(r.startswith("imports tokvec.course.") for r in self.reasons):
                self.say("uses tokvec.course.checks or grading (the grader's code)")
            if top == "sys" and rest and rest[0] in _SYS:
                what = _SYS[rest[0]]
                store = isinstance(node.ctx, (ast.Store, ast.Del))
                self.say(f"replaces {what}" if store and rest[0] in ("excepthook", "displayhook") else what)
            if top == "os" and rest and rest[0] in _OS:
                self.say(_OS[rest[0]])
            if top == "threading" and rest and rest[0] in ("settrace", "setprofile", "settrace_all_threads"):
                self.say(f"sets a trace function for threads (threading.{rest[0]})")
            if top == "check" and rest:
                self.say(f"reaches into check.{rest[0]}")
            if isinstance(node.ctx, (ast.Store, ast.Del)) and rest and self._is_module(name):
                self.say(f"{'replaces' if isinstance(node.ctx, ast.Store) else 'deletes'} {name}")
        if node.attr == "get_ipython":
            self.say("uses get_ipython()")
        if isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Name) \
                and node.value.func.id == "get_ipython":
            self.say(f"uses get_ipython().{node.attr}")
            for arg in node.value.args:
                self.visit(arg)
            return
        self.generic_visit(node)

    def _is_module(self, name) -> bool:
        """Whether a dotted name starts at a module this cell imported (or np, torch, sys...)."""
        top = (name or "").split(".")[0]
        return bool(top) and top in {m.split(".")[0] for m in self.modules.values()}

    def visit_Call(self, node):
        func = node.func
        if isinstance(func, ast.Name):
            if func.id in _CALLS:
                self.say(_CALLS[func.id])
            if func.id in ("setattr", "getattr", "delattr", "hasattr") and len(node.args) >= 2:
                attr = node.args[1]
                if not (isinstance(attr, ast.Constant) and isinstance(attr.value, str)):
                    self.say(f"{func.id} with a computed name")
                elif attr.value.startswith("_"):
                    self.say(f"{func.id} on a private name {attr.value!r}")
                elif func.id in ("setattr", "delattr") and self._is_module(self._root(node.args[0])):
                    self.say(f"{'replaces' if func.id == 'setattr' else 'deletes'} "
                             f"{self._root(node.args[0])}.{attr.value}")
            if func.id == "open" and node.args and isinstance(node.args[0], ast.Constant) \
                    and str(node.args[0].value).endswith(".py"):
                self.say("writes or reads a Python file (code the scan does not see)")
            if func.id == "get_ipython":
                self.say("uses get_ipython()")
                return                                   # the call alone: get_ipython().x is checked below
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Call) \
                and isinstance(func.value.func, ast.Name) and func.value.func.id == "get_ipython":
            magic = node.args[0].value if node.args and isinstance(node.args[0], ast.Constant) else None
            if func.attr in ("run_line_magic", "run_cell_magic") and magic in _MAGICS:
                for arg in node.args[1:] + [k.value for k in node.keywords]:
                    self.visit(arg)
                    if isinstance(arg, ast.Constant) and isinstance(arg.value, str) and magic != "matplotlib":
                        self._code(arg.value)          # the code %time / %%timeit runs: scanned too
                return
            self.say(f"uses get_ipython().{func.attr}" + (f" ({magic!r})" if isinstance(magic, str) else ""))
            for arg in node.args + [k.value for k in node.keywords]:
                self.visit(arg)
            return
        mutators = ("update", "setdefault", "pop", "popitem", "clear", "__setitem__", "__delitem__")
        if isinstance(func, ast.Attribute) and func.attr in mutators and self._namespace(func.value):
            self.say(f"changes {self._namespace(func.value)} by name")
        self.generic_visit(node)

    def _code(self, source: str) -> None:
        """Scan code that a magic runs (its body is a string to the parser)."""
        try:
            from IPython.core.inputtransformer2 import TransformerManager

            source = TransformerManager().transform_cell(source)
        except Exception:                                  # noqa: BLE001 (then parse it as it is)
            pass
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError):
            return
        self.visit(tree)

    @staticmethod
    def _namespace(node):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id in ("globals", "locals", "vars"):
            return f"{node.func.id}()"
        return None

    def visit_Subscript(self, node):
        if self._namespace(node.value):
            self.say(f"indexes {self._namespace(node.value)} by name")
        self.generic_visit(node)

    def visit_Raise(self, node):
        exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
        if isinstance(exc, ast.Name) and exc.id in ("SystemExit", "KeyboardInterrupt", "BaseException"):
            self.say(f"raises {exc.id} (stops the kernel's run)")
        self.generic_visit(node)


def flags(source: str) -> list[str]:
    """Why an answer cell's code looks like it touches the grading machinery, each reason short
    ("setattr with a computed name", "replaces sys.excepthook"); [] for an ordinary answer.

    The code is parsed (IPython's ``%magics`` and ``!commands`` translated first); a cell that
    still does not parse gives [] (it scores nothing anyway). What is flagged: the tests' names
    (``Checks``, ``check``, ``_Test``) assigned, defined, imported or deleted; the grader's modules;
    ``__import__``, ``importlib``, ``sys.modules``, ``builtins``; ``setattr``/``getattr``/
    ``delattr``/``hasattr`` with a computed or private name; ``exec``/``eval``/``compile``;
    ``globals()``/``locals()``/``vars()`` indexed or changed; ``get_ipython`` (but ``%time``,
    ``%timeit`` and ``%matplotlib``, which chapters use); ``sys.excepthook``, trace and profile
    functions, stack frames, gc, ctypes, signal, a kernel's exit; attributes of imported modules
    replaced (``np.allclose = ...``); the dunder attributes that reach code and namespaces
    (``__code__``, ``__globals__``, ``__class__``, ``__subclasses__``...). No solution of the
    course is flagged (tests/test_integrity.py)."""
    if not isinstance(source, str):
        raise TypeError(f"flags: source must be a cell's code as a str, got {type(source).__name__}")
    try:
        from IPython.core.inputtransformer2 import TransformerManager

        code = TransformerManager().transform_cell(source)
    except Exception:                                    # noqa: BLE001 (then parse it as it is)
        code = source
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return []
    scan = _Scan()
    scan.visit(tree)
    return scan.reasons


#: Real tamperings, as a student would put them in an answer cell: ``{name: code}``. Each one
#: tries to score tests that fail; :func:`flags` must flag every one (tests/test_integrity.py)
#: and the grader must score none of them (tests/test_grade_class.py runs them through grade()).
TAMPERINGS: dict[str, str] = {
    # The review's three lines (W1): every result recorded as a pass.
    "review: setattr on Checks._record": (
        'm = __import__("tokvec.course.che" + "cks", fromlist=["_"])\n'
        'C = getattr(m, "Che" + "cks"); rec = getattr(C, "_rec" + "ord")\n'
        'setattr(C, "_rec" + "ord", lambda self, what, reason: rec(self, what, None))\n'),
    "a Checks subclass put in the module": (
        "import tokvec.course.checks as _m\n\n"
        "class Checks(_m.Checks):\n"
        "    def _record(self, what, reason):\n"
        "        super()._record(what, None)\n\n"
        "_m.Checks = Checks\n"),
    "check = a fake that passes everything": (
        "import contextlib\nimport tokvec.course.checks as _m\n\n"
        "class _Fake:\n"
        "    results, failed = [('everything', None, False)], []\n"
        "    def __call__(self, what):\n"
        "        return contextlib.suppress(Exception)\n"
        "    def report(self): pass\n"
        "    def hidden(self): pass\n"
        "    def require(self): pass\n\n"
        "check = _Fake()\n"
        "_m.Checks = lambda name: check\n"),
    "numpy's comparisons patched": (
        "import numpy as np\n"
        "np.allclose = lambda *args, **kwargs: True\n"
        "np.testing.assert_allclose = lambda *args, **kwargs: None\n"),
    "torch.allclose patched": "import torch\ntorch.allclose = lambda *args, **kwargs: True\n",
    "sys.excepthook swallows errors": "import sys\nsys.excepthook = lambda *args: None\n",
    "IPython's set_custom_exc swallows errors": (
        "get_ipython().set_custom_exc((Exception,), lambda shell, kind, value, tb, tb_offset=None: None)\n"),
    "an input transformer deletes the asserts": (
        "def _no_asserts(lines):\n"
        "    return [line[:len(line) - len(line.lstrip())] + 'pass\\n'\n"
        "            if line.lstrip().startswith('assert') else line for line in lines]\n\n"
        "get_ipython().input_transformers_post.append(_no_asserts)\n"),
    "an AST transformer deletes the asserts": (
        "import ast\n\n"
        "class _NoAsserts(ast.NodeTransformer):\n"
        "    def visit_Assert(self, node):\n"
        "        return ast.Pass()\n\n"
        "get_ipython().ast_transformers.append(_NoAsserts())\n"),
    "a pre_run_cell hook patches the tests' class": (
        "def _before(info):\n"
        "    import tokvec.course.checks as m\n"
        "    m.Checks.require = lambda self: None\n\n"
        "get_ipython().events.register('pre_run_cell', _before)\n"),
    "a trace function rewrites the reasons": (
        "import sys\n\n"
        "def _tracer(frame, event, arg):\n"
        "    if frame.f_code.co_name == '_record':\n"
        "        frame.f_locals['reason'] = None\n"
        "    return _tracer\n\n"
        "sys.settrace(_tracer)\n"),
    "builtins.print rewrites the crosses": (
        "import builtins\n"
        "_print = builtins.print\n\n"
        "def _ticks(*args, **kwargs):\n"
        "    _print(*(str(a).replace('\\u2717', '\\u2713') for a in args), **kwargs)\n\n"
        "builtins.print = _ticks\n"),
    "obfuscated exec through __builtins__": (
        "run = getattr(__builtins__, 'ex' + 'ec')\n"
        "run('import tokvec.course.checks as m\\nm.Checks.require = lambda self: None')\n"),
    "os._exit kills the kernel": "import os\nos._exit(0)\n",
    "a fake module in sys.modules": (
        "import sys, types\n"
        "fake = types.ModuleType('tokvec.course.checks')\n"
        "exec(\"class Checks:\\n    def __init__(self, name): self.results = []\\n\", fake.__dict__)\n"
        "sys.modules['tokvec.course.checks'] = fake\n"),
    "Checks.require's code swapped": (
        "from tokvec.course import checks as c\n"
        "c.Checks.require.__code__ = (lambda self: None).__code__\n"),
    "unittest.mock patches numpy": (
        "from unittest import mock\n"
        "mock.patch('numpy.allclose', return_value=True).start()\n"),
    "vars() of the module edited": (
        "import tokvec.course.checks\n"
        "vars(tokvec.course.checks)['Checks'].failed = property(lambda self: [])\n"),
    # The second instructor review's three (W1-W3): the token read from IPython's history by a
    # function the tests call; a builtin the grader's code calls, redefined; a value equal to all.
    "the token read from In[-1]": (
        "import re\nclass Stop(BaseException):\n    pass\n\ndef add(a, b):\n"
        "    for line in set(re.findall(r'grader: passed [\\w.:-]+ [0-9a-f]{24}', In[-1])):\n"
        "        print(line)\n    raise Stop()\n"),
    "compile redefined to rewrite the checks": (
        "_real = compile\n\ndef compile(source, filename, mode, *args, **kwargs):\n"
        "    if isinstance(source, bytes):\n"
        "        source = source.replace(b'reason is None', b'True')\n"
        "    return _real(source, filename, mode, *args, **kwargs)\n"),
    "an int equal to everything": (
        "class N(int):\n    def __eq__(self, other):\n        return True\n    __hash__ = int.__hash__\n\n"
        "def add(a, b):\n    return N(0)\n\nscaled = N(0)\n"),
    # The third dry run's six: the token found while the test cell runs (by frames under %%time,
    # linecache, a thread, a module the notebook wrote, the kernel's current message), and a
    # builtin the tests call, replaced through an import. Each printed token is followed by an
    # error or a failing test, so the cell does not end cleanly with its token.
    "%%time hides a frame walk": (
        "%%time\nimport sys, asyncio, re\n\ndef add(a, b):\n    f = sys._getframe(1)\n    found = set()\n"
        "    while f is not None:\n        for v in list(f.f_locals.values()):\n"
        "            if isinstance(v, str):\n"
        "                found |= set(re.findall(r'grader: passed [\\w.:-]+ [0-9a-f]{24}', v))\n"
        "        f = f.f_back\n    for line in found:\n        print(line)\n    raise asyncio.CancelledError()\n"),
    "linecache holds the running cell": (
        "import linecache, re, asyncio\n\ndef add(a, b):\n"
        "    text = str(list(linecache.cache.values()))\n"
        "    for line in set(re.findall(r'grader: passed [\\w.:-]+ [0-9a-f]{24}', text)):\n"
        "        print(line)\n    raise asyncio.CancelledError()\n"),
    "a thread prints the token": (
        "import linecache, re, time\nfrom concurrent.futures import ThreadPoolExecutor\n\ndef _watch():\n"
        "    for _ in range(20000):\n"
        "        found = re.findall(r'grader: passed tiny-ex-add [0-9a-f]{24}', str(list(linecache.cache.values())))\n"
        "        if found:\n            print(found[0], flush=True)\n            return\n        time.sleep(0.001)\n\n"
        "_pool = ThreadPoolExecutor(1)\n_pool.submit(_watch)\n"),
    "a module the notebook writes": (
        "open('helper_tv.py', 'w').write(\n    'import sys, asyncio, re\\n'\n    'def add(a, b):\\n'\n"
        "    '    f = sys._getframe(1)\\n'\n    '    while f is not None:\\n'\n"
        "    '        for v in list(f.f_locals.values()):\\n'\n"
        "    '            if isinstance(v, str):\\n'\n"
        "    '                for line in re.findall(r\"grader: passed [\\\\w.:-]+ [0-9a-f]{24}\", v):\\n'\n"
        "    '                    print(line)\\n'\n    '        f = f.f_back\\n'\n"
        "    '    raise asyncio.CancelledError()\\n')\nfrom helper_tv import add\n"),
    "the kernel's current message": (
        "import re, asyncio\nfrom traitlets.config import Application\n\ndef add(a, b):\n"
        "    kernel = Application.instance().kernel\n    parent = kernel.get_parent('shell')\n"
        "    for line in set(re.findall(r'grader: passed [\\w.:-]+ [0-9a-f]{24}', str(parent))):\n"
        "        print(line)\n    raise asyncio.CancelledError()\n"),
    "a builtin replaced through an import": (
        "import functools, string\n\ndef _yes(iterable):\n    return True\n\n"
        "string.yes = functools.wraps(all)(_yes)\nfrom string import yes as all\n\n"
        "def add(a, b):\n    return 0\n"),
}


# --- 5. the submission against the handout --------------------------------------------------

def _norm(source) -> str:
    text = "".join(source) if isinstance(source, list) else (source or "")
    return "\n".join(line.rstrip() for line in text.replace("\r\n", "\n").split("\n")).strip("\n")


def _moved(want: list[str], got: list[str]) -> list[str]:
    """The labels of ``got`` outside a longest common subsequence with ``want``: the moved ones."""
    table = [[0] * (len(got) + 1) for _ in range(len(want) + 1)]
    for i in range(len(want) - 1, -1, -1):
        for j in range(len(got) - 1, -1, -1):
            table[i][j] = (table[i + 1][j + 1] + 1 if want[i] == got[j]
                           else max(table[i + 1][j], table[i][j + 1]))
    keep, i, j = set(), 0, 0
    while i < len(want) and j < len(got):
        if want[i] == got[j]:
            keep.add(got[j])
            i, j = i + 1, j + 1
        elif table[i + 1][j] >= table[i][j + 1]:
            i += 1
        else:
            j += 1
    return [label for label in got if label not in keep]


def structure(submitted, handout) -> list[str]:
    """What differs in the nbgrader cells of ``submitted`` from the released ``handout`` (both
    nbformat v4 notebooks), one short note per problem, each naming the exercise's label: a test
    cell (``grade_id`` ``LABEL-tests``) deleted, duplicated, edited (the grader runs the handout's
    anyway), above its answer cell or out of the handout's order; an answer cell (``LABEL``) or a
    written answer (``LABEL-words``) deleted or duplicated; a cell that kept a handout cell's
    source but lost its nbgrader metadata. A pristine or answered handout gives []."""
    for name, nb in (("submitted", submitted), ("handout", handout)):
        if not hasattr(nb, "cells"):
            raise TypeError(f"structure: {name} must be an nbformat notebook "
                            f"(nbformat.read(path, as_version=4)), got {type(nb).__name__}")
    given = [(i, _grade_id(c), c) for i, c in enumerate(handout.cells) if _grade_id(c)]
    where: dict[str, list[int]] = {}
    for i, cell in enumerate(submitted.cells):
        if _grade_id(cell):
            where.setdefault(_grade_id(cell), []).append(i)
    stripped = {}
    sources = {_norm(c.source): gid for _, gid, c in given if _norm(c.source)}
    for i, cell in enumerate(submitted.cells):
        if not _grade_id(cell) and _norm(cell.get("source")) in sources:
            stripped.setdefault(sources[_norm(cell.get("source"))], i)
    notes = []
    for _, gid, cell in given:
        label = gid.removesuffix("-tests").removesuffix("-words")
        kind = ("test cell" if gid.endswith("-tests") else "written answer" if gid.endswith("-words")
                else "answer cell")
        found = where.get(gid, [])
        if not found and gid in stripped:
            notes.append(f"{kind} of {label} lost its nbgrader metadata (cell {stripped[gid] + 1}): "
                         + ("scored 0" if kind == "test cell" else "not graded"))
        elif not found:
            notes.append(f"{kind} of {label} deleted" + (": scored 0" if kind == "test cell" else ""))
        elif len(found) > 1:
            notes.append(f"{kind} of {label} duplicated ({len(found)} copies)")
        elif kind == "test cell":
            if _norm(submitted.cells[found[0]].source) != _norm(cell.source):
                notes.append(f"test cell of {label} edited: the grader ran the handout's")
            answer = where.get(label, [])
            if len(answer) == 1 and found[0] < answer[0]:
                notes.append(f"test cell of {label} moved above its answer cell")
    want = [gid for _, gid, _ in given if gid.endswith("-tests")]
    got = [gid for gid in sorted(where, key=lambda g: where[g][0]) if gid.endswith("-tests") and gid in want]
    for gid in _moved([g for g in want if g in got], got):
        notes.append(f"test cell of {gid.removesuffix('-tests')} moved: "
                     "the test cells are out of the handout's order")
    return notes
