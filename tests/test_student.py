"""`make student`: the generated student notebooks have no solutions and still run top to bottom.

Each chapter's copy is generated from the filled chapter (the single source) and executed in a
fresh kernel; only the cells marked TODO may fail, and each of them must fail with the
NotImplementedError it announces (a stub that silently passed would hide a missing exercise).
"""

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from tokvec.course.student import TODO_TAG, main, student_notebook

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = sorted((ROOT / "chapters").glob("*.ipynb"))


def _solutions(nb) -> int:
    return sum(c.source.count("{solution-start}") for c in nb.cells if c.cell_type == "markdown")


def test_cli_writes_one_student_notebook_per_chapter(tmp_path, capsys):
    assert main([str(ROOT / "chapters"), str(tmp_path)]) == 0
    assert sorted(p.name for p in tmp_path.glob("*.ipynb")) == [p.name for p in CHAPTERS]
    assert "TODO cells" in capsys.readouterr().out


def test_words_and_code_solutions_become_the_right_todo_cells():
    md, code = nbformat.v4.new_markdown_cell, nbformat.v4.new_code_cell
    nb = nbformat.v4.new_notebook(cells=[
        md("Intro\n\n```{exercise}\n:label: a\nDo A.\n```\n\n```{solution-start} a\n:class: dropdown\n```\n\nSay X."
           "\n\n```{solution-end}\n```\n\n```{exercise}\n:label: b\nDo B.\n```\n\n```{solution-start} b\n"
           ":class: dropdown\n```"),
        code("secret = 42"),
        md("Because.\n\n```{solution-end}\n```\n\nAfter."),
        code("print('kept')", outputs=[nbformat.v4.new_output("stream", text="kept\n")], execution_count=3),
    ])
    out = student_notebook(nb)
    kinds = [(c.cell_type, c.metadata.get("tags", [])) for c in out.cells]
    assert kinds == [("markdown", []), ("markdown", [TODO_TAG]), ("markdown", []),
                     ("code", [TODO_TAG, "raises-exception"]), ("markdown", []), ("code", [])]
    text = "\n".join(c.source for c in out.cells)
    assert "Say X" not in text and "secret" not in text and "Because" not in text
    assert "Do A." in text and "Do B." in text and "After." in text
    assert out.cells[-1].outputs == [] and out.cells[-1].execution_count is None


def test_unclosed_solution_is_an_error():
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("```{solution-start} x\n```\n\nopen")])
    with pytest.raises(ValueError, match="never closed"):
        student_notebook(nb)


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
@pytest.mark.slow
def test_student_notebook_runs_with_only_todo_cells_failing(path):
    source = nbformat.read(path, as_version=4)
    nb = student_notebook(source)
    text = "\n".join(c.source for c in nb.cells)
    assert "{solution-start}" not in text and "{solution-end}" not in text
    todos = [c for c in nb.cells if TODO_TAG in c.metadata.get("tags", [])]
    assert len(todos) == _solutions(source) >= 3
    NotebookClient(nb, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        errors = [o for o in cell.outputs if o.output_type == "error"]
        if TODO_TAG in cell.metadata.get("tags", []):
            assert [e.ename for e in errors] == ["NotImplementedError"], cell.source
        else:
            assert errors == [], f"a non-TODO cell failed in the student notebook:\n{cell.source}"
