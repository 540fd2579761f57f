"""Student notebooks, generated from the chapters: solutions out, TODO cells in.

Used by ``make student`` (see the instructor guide, ``instructors.md``)::

    python -m tokvec.course.student chapters _build/student

The filled chapters stay the single source. For each notebook this writes a copy in which

* every folded solution (from ```` ```{solution-start} label```` to ```` ```{solution-end}````,
  markdown and code cells alike) is removed;
* in its place comes one TODO cell: a code cell that raises ``NotImplementedError`` naming the
  exercise (tagged ``todo`` and ``raises-exception``, so the notebook still runs top to bottom),
  or, for an exercise answered in words, a markdown cell to write the answer in;
* all outputs and execution counts are cleared, ready for a live session.

``tests/test_student.py`` runs every generated notebook and allows only the TODO cells to fail.
"""

from __future__ import annotations

import argparse
import copy
import re
import sys
from pathlib import Path

try:
    import nbformat
except ImportError:                       # pragma: no cover - Jupyter installs it
    raise ImportError("tokvec.course.student needs nbformat, which comes with Jupyter: "
                      "pip install nbformat (or pip install 'tokvec[student]')") from None

__all__ = ["TODO_TAG", "main", "student_notebook"]

TODO_TAG = "todo"
_START = re.compile(r"```\{solution-start\}\s*(?P<label>\S+)[^\n]*\n(?::[^\n]*\n)*```[ \t]*\n?")
_END = re.compile(r"```\{solution-end\}[^\n]*\n```[ \t]*\n?")


def _todo_code(label: str, nb_cell_id: str):
    cell = nbformat.v4.new_code_cell(
        f"# TODO (exercise {label}): write your solution here, then run this cell.\n"
        f'raise NotImplementedError("exercise {label}: your solution goes here")')
    cell.metadata["tags"] = [TODO_TAG, "raises-exception"]
    cell.id = nb_cell_id
    return cell


def _todo_words(label: str, nb_cell_id: str):
    cell = nbformat.v4.new_markdown_cell(f"**Your answer (exercise `{label}`):** ...")
    cell.metadata["tags"] = [TODO_TAG]
    cell.id = nb_cell_id
    return cell


def student_notebook(nb):
    """Return a copy of ``nb`` with solutions replaced by TODO cells and all outputs cleared."""
    out = copy.deepcopy(nb)
    cells, kept_text = [], []
    in_solution, label, solution_has_code = False, None, False

    def flush_markdown(template):
        text = "".join(kept_text).strip("\n")
        kept_text.clear()
        if text.strip():
            cell = nbformat.v4.new_markdown_cell(text)
            cell.id = f"{template.get('id', 'md')}-s{len(cells)}"[:64]
            cells.append(cell)

    for cell in nb.cells:
        if cell.cell_type == "code":
            if in_solution:
                solution_has_code = True
                continue
            flush_markdown(cell)
            new = copy.deepcopy(cell)
            new.outputs, new.execution_count = [], None
            cells.append(new)
            continue
        text, pos = cell.source, 0
        while True:
            if in_solution:
                end = _END.search(text, pos)
                if end is None:
                    break                                   # the rest of this cell is solution
                make = _todo_code if solution_has_code else _todo_words
                cells.append(make(label, f"todo-{label}"[:64]))
                in_solution, pos = False, end.end()
            else:
                start = _START.search(text, pos)
                if start is None:
                    kept_text.append(text[pos:] + "\n\n")
                    break
                kept_text.append(text[pos:start.start()])
                flush_markdown(cell)
                in_solution, label, solution_has_code = True, start.group("label"), False
                pos = start.end()
    if in_solution:
        raise ValueError(f"solution {label!r} is never closed with ```{{solution-end}}```")
    flush_markdown({"id": "end"})
    out.cells = cells
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tokvec.course.student", description=__doc__.split("\n\n")[0])
    parser.add_argument("source", type=Path, help="folder of filled chapter notebooks")
    parser.add_argument("target", type=Path, help="folder to write the student notebooks to")
    args = parser.parse_args(argv)
    args.target.mkdir(parents=True, exist_ok=True)
    paths = sorted(args.source.glob("*.ipynb"))
    if not paths:
        print(f"no notebooks in {args.source}", file=sys.stderr)
        return 1
    for path in paths:
        nb = student_notebook(nbformat.read(path, as_version=4))
        nbformat.validate(nb)
        nbformat.write(nb, args.target / path.name)
        todos = sum(TODO_TAG in c.metadata.get("tags", []) for c in nb.cells)
        print(f"{args.target / path.name}: {todos} TODO cells")
    return 0


if __name__ == "__main__":
    sys.exit(main())
