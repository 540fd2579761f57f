"""The package's layout: the data path stands alone, no import cycle, public APIs, no issue numbers.

The tree reads like the table of contents (see ``tokvec/__init__.py``): the data path (text,
vocab, reference, arrays, layers, attention, fused, validate) never imports measurement (``tokvec.bench``)
or course tooling (``tokvec.course``), and no two modules import each other, directly or not.
"""

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

import tokvec

SRC = Path(tokvec.__file__).resolve().parent
DATA_PATH = ["tokvec", "tokvec.text", "tokvec.bytebpe", "tokvec.vocab", "tokvec.reference", "tokvec.arrays",
             "tokvec.layers", "tokvec.attention", "tokvec.parallel", "tokvec.fused", "tokvec.validate",
             "tokvec.environment"]


def module_name(path: Path) -> str:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(SRC.rglob("*.py"))}


def imports_of(path: Path) -> set[str]:
    """Every tokvec module that ``path`` imports, at module level or inside a function."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("tokvec")}
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("tokvec"):
            submodules = {f"{node.module}.{a.name}" for a in node.names} & set(MODULES)
            # `from tokvec import validate` imports the submodule, not what tokvec/__init__ imports
            found |= submodules or {node.module}
    return {name for name in found if name in MODULES}


GRAPH = {name: imports_of(path) - {name} for name, path in MODULES.items()}


def test_no_import_cycle():
    state = {}

    def visit(node, stack):
        state[node] = "open"
        for nxt in GRAPH[node]:
            if state.get(nxt) == "open":
                cycle = stack[stack.index(nxt):] + [nxt] if nxt in stack else [node, nxt]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if nxt not in state:
                visit(nxt, stack + [nxt])
        state[node] = "done"

    for name in GRAPH:
        if name not in state:
            visit(name, [name])


@pytest.mark.parametrize("module", DATA_PATH)
def test_data_path_never_imports_measurement_or_course_tooling(module):
    reach, todo = set(), [module]
    while todo:
        for nxt in GRAPH[todo.pop()]:
            if nxt not in reach:
                reach.add(nxt)
                todo.append(nxt)
    assert not {m for m in reach if m.startswith(("tokvec.bench", "tokvec.course"))}, sorted(reach)


def test_import_tokvec_is_light():
    """``import tokvec`` works without PyTorch: it loads neither torch nor the tooling."""
    code = ("import sys, tokvec; print(sorted(m for m in sys.modules if m == 'torch' or "
            "m.startswith(('tokvec.bench', 'tokvec.course', 'tokvec.layers'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_every_module_says_what_it_is_for():
    for name, path in MODULES.items():
        if name == "tokvec._unicode_classes":
            continue
        assert ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))), f"{name} has no docstring"


def test_no_issue_numbers_in_code():
    pattern = re.compile(r"issue\s*#?\d+|\bissue\d+", re.IGNORECASE)
    hits = [f"{name}: {line.strip()}" for name, path in MODULES.items()
            for line in path.read_text(encoding="utf-8").splitlines() if pattern.search(line)]
    assert hits == []


def test_no_private_torch_method_is_overridden():
    private = re.compile(r"^\s+def (_apply|_load_from_state_dict|_save_to_state_dict|_call_impl)\(", re.M)
    assert [n for n, p in MODULES.items() if private.search(p.read_text(encoding="utf-8"))] == []


def test_committed_results_ship_with_the_package():
    from tokvec.bench import RESULTS_DIR, load

    assert RESULTS_DIR.is_relative_to(SRC)
    names = sorted(p.name for p in RESULTS_DIR.glob("*.json"))
    assert "cpu-2core-epyc.json" in names and "bpe-vs-hf-2core-xeon.json" in names
    assert load("cpu-2core-epyc.json")["records"]


def test_the_tutorials_code_is_kept_once():
    """No chapter or test retypes a source tutorial's function: they import tokvec.tutorials."""
    import json

    root = SRC.parents[1]
    # their names, and lines of their bodies (a copy under another name is still a copy)
    defs = re.compile(r"^\s*(def (positional_encoding|generate_token_embedding_matrix|"
                      r"generate_positional_embedding_matrix|embed_by_position|sentence_embedding)\(|"
                      r"class InputEmbeddings\()|c = t / \(l_max \*\* \(i/d\)\)|"
                      r"torch\.cos\(positions \* div_term\)  # Apply cosine|embed_matrix = \{i: \[i\]\*d|"
                      r"result_vector\.append\(e\+p\)|return\(self\.embedding\(x\)", re.M)
    texts = {p.name: p.read_text(encoding="utf-8") for p in (root / "tests").glob("*.py")}
    for p in (root / "chapters").glob("*.ipynb"):
        cells = json.loads(p.read_text(encoding="utf-8"))["cells"]
        texts[p.name] = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
    assert {name for name, text in texts.items() if defs.search(text) and name != "test_package.py"} == set()
