"""Chapter 10's control for pure Python's neighbours in the CPU timing run.

In the committed timing run (``src/tokvec/bench/results/cpu-2core-epyc.json``) every round at
4x128x128 holds one call of pure Python, about 12 ms, beside calls of well under a millisecond,
and there every contender that embeds has a median several times its minimum. This script runs
``python -m tokvec.bench`` at the two smallest sizes, with the committed run's settings (50
rounds, one thread), in fresh processes that take turns: once as committed (pure Python in the
rounds), once with ``--python-apart`` (pure Python timed after the rounds), ``--pairs`` times,
pair ``i`` with seed ``i - 1`` for both (the seed draws the ids, the weights and the order of the
rounds). Within a pair the two runs differ in where pure Python is timed and, through it, in the
order of the others (:func:`tokvec.bench.cpu.call_order` shuffles one contender fewer); the
pairs differ in the seed, so no one order stands for a mode.

Run it on an idle machine from the repository root::

    python benchmarks/cpu_python_neighbour.py --pairs 3 \\
        --out src/tokvec/bench/results/controls/cpu-python-neighbour-2core-epyc.json

The output holds one entry per run: ``mode`` ("in rounds" or "apart"), ``pair`` and the run's
own results file (``result``: machine, versions, load average, records).
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

SIZES = ["1x32x32", "4x128x128"]
MODES = {"in rounds": [], "apart": ["--python-apart"]}


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=3, help="turns of the two modes (default 3)")
    parser.add_argument("--out", type=Path, required=True, help="where the JSON goes")
    args = parser.parse_args(argv)
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        for pair in range(1, args.pairs + 1):
            for mode, extra in MODES.items():
                out = Path(tmp) / f"{pair}-{len(runs)}.json"
                command = [sys.executable, "-m", "tokvec.bench", "--repeats", "50", "--threads", "1",
                           "--seed", str(pair - 1), "--sizes", *SIZES, *extra, "--out", str(out)]
                subprocess.run(command, check=True, capture_output=True, text=True)
                runs.append({"mode": mode, "pair": pair, "result": json.loads(out.read_text())})
                print(f"pair {pair}, {mode}: done")
    data = {"command": " ".join(["python benchmarks/cpu_python_neighbour.py", *(argv or sys.argv[1:])]),
            "sizes": SIZES, "runs": runs}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    return data


if __name__ == "__main__":
    main()
