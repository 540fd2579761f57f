"""The position-scheme sweep of chapter 12: five schemes, three seeds, on the CPU.

    python experiments/position_sweep.py      # about 5 minutes on a 2-core machine

Trains the tiny transformers of :mod:`tokvec.experiment` (the smallest configuration once, the
sweep configuration for each seed) and writes ``src/tokvec/data/position-sweep.json``, which
chapter 12 plots and ``tests/test_experiment.py`` checks. The same as
``python -m tokvec.experiment``; kept as a file so that it can be read, copied and changed.
"""

from tokvec.experiment import main

if __name__ == "__main__":
    main()
