"""The position-scheme sweep of chapter 12, and its controls: six schemes, three seeds, on the CPU.

    time python experiments/position_sweep.py            # 6.8 minutes on an idle 2-core machine
    time python experiments/position_sweep.py controls   # the controls: about 3 minutes

The sweep trains the tiny transformers of :mod:`tokvec.experiment` (the smallest configuration
once, the sweep configuration for each seed, and the offset sweep, k = 8 and 24, for three
schemes) in two processes of one thread each, and writes ``src/tokvec/data/position-sweep.json``
with the machine, the versions, the seeds and the wall time.

``controls`` retrains the sweep's RoPE and ALiBi models (k = 2, the same seeds and code, so the
same models) and writes ``src/tokvec/data/position-controls.json``: RoPE read with pair 1 alone
slowed by 4 or by 2, pairs 2 and 3 slowed by 4, or pair 0 alone slowed by 4, with the keys that
alias the target on pair 0 hidden (and where the attention goes then), or every other far key
hidden; ALiBi with each head silenced in turn, with windows of 4, 8, 16 and 32 keys, and where
each head puts its weight. Every measurement is on evaluation sequences that no model trained on.

Chapter 12 reads both files and ``tests/test_experiment.py`` checks them. The same as
``python -m tokvec.experiment [controls]``; kept as a file so that it can be read, copied and
changed.
"""

from tokvec.experiment import main

if __name__ == "__main__":
    main()
