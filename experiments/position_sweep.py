"""The position-scheme sweep of chapter 12: six schemes, three seeds, two more offsets, on the CPU.

    time python experiments/position_sweep.py   # 6.8 minutes on an idle 2-core machine

Trains the tiny transformers of :mod:`tokvec.experiment` (the smallest configuration once, the
sweep configuration for each seed, and the offset sweep, k = 8 and 24, for three schemes) in two
processes of one thread each, and writes ``src/tokvec/data/position-sweep.json`` with the
machine, the versions, the seeds and the wall time; chapter 12 plots it and
``tests/test_experiment.py`` checks it. The same as ``python -m tokvec.experiment``; kept as a
file so that it can be read, copied and changed.
"""

from tokvec.experiment import main

if __name__ == "__main__":
    main()
