"""How long `make grade` takes for a class: 40 submissions of one chapter, against the time of
running that chapter 40 times, as many at once as there are cores.

    python benchmarks/grade_class.py [--chapter 05_positional_embedding] [--students 40] [--jobs N]
        [--out benchmarks/results/grade_class.json]

The submissions are the chapter's handout: a quarter as handed out, the rest answered with the
solutions (tokvec.course.grading.solved). The baseline runs the solved handout, unchanged, in a
fresh kernel per run (nbclient, as the grader does), ``jobs`` at a time; the grading runs
``python -m tokvec.course.grading grade -j jobs`` on the folder, as ``make grade`` does. The issue's
bar: the grading takes under twice the baseline. Writes a JSON file with the machine, the
versions, the sizes and both times.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]


def _run(path: str) -> float:
    from nbclient import NotebookClient

    start = time.perf_counter()
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=600, allow_errors=True, kernel_name="python3",
                   resources={"metadata": {"path": str(Path(path).parent)}}).execute()
    return time.perf_counter() - start


def _cpu() -> str:
    try:
        return next(line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name"))
    except (OSError, StopIteration):
        return platform.processor() or "unknown"


def main(argv=None) -> int:
    from tokvec.course.grading import release, solved, source_notebooks

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chapter", default="05_positional_embedding")
    parser.add_argument("--students", type=int, default=40)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "grade_class.json")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="tokvec-bench-grade-") as tmp:
        tmp = Path(tmp)
        chapters, tests = ROOT / "chapters", ROOT / "grading"
        release(chapters, tests, tmp / "release", tmp / "handout", [args.chapter])
        handout = nbformat.read(tmp / "handout" / f"{args.chapter}.ipynb", as_version=4)
        right = solved(handout, source_notebooks(chapters, tests, [args.chapter])[args.chapter])
        runs = []
        for i in range(args.students):
            folder = tmp / "submissions" / f"student{i:02d}"
            folder.mkdir(parents=True)
            nbformat.write(handout if i % 4 == 0 else right, folder / f"{args.chapter}.ipynb")
            (tmp / "runs" / str(i)).mkdir(parents=True)
            nbformat.write(right, tmp / "runs" / str(i) / f"{args.chapter}.ipynb")
            runs.append(str(tmp / "runs" / str(i) / f"{args.chapter}.ipynb"))
        start = time.perf_counter()
        with ProcessPoolExecutor(args.jobs) as pool:
            each = list(pool.map(_run, runs))
        baseline = time.perf_counter() - start
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "tokvec.course.grading", "grade", str(tmp / "submissions"),
                        "--out", str(tmp / "grades.csv"), "-j", str(args.jobs), "--only", args.chapter],
                       check=True, cwd=ROOT)
        grading = time.perf_counter() - start
        rows = (tmp / "grades.csv").read_text(encoding="utf-8").splitlines()
    import nbclient
    import nbgrader
    import torch

    result = {
        "command": " ".join(["python benchmarks/grade_class.py", *(argv if argv is not None else sys.argv[1:])]),
        "machine": {"cpu": _cpu(), "cores": os.cpu_count(), "gpu": None, "python": platform.python_version(),
                    "torch": torch.__version__, "nbgrader": nbgrader.__version__, "nbclient": nbclient.__version__},
        "chapter": args.chapter, "students": args.students, "jobs": args.jobs, "rows": len(rows) - 1,
        "baseline_s": round(baseline, 1), "run_s": {"min": round(min(each), 1), "max": round(max(each), 1),
                                                    "mean": round(sum(each) / len(each), 1)},
        "grade_s": round(grading, 1), "ratio": round(grading / baseline, 2),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=1))
    return 0 if result["ratio"] < 2 else 1


if __name__ == "__main__":
    sys.exit(main())
