"""``python -m tokvec.parallel`` and ``torchrun --standalone --nproc-per-node 2 -m tokvec.parallel``.

Taught in the chapter "The embedding across processes": runs :func:`tokvec.parallel.self_check`
in groups of 2, 3 and 4 local processes, or in the group torchrun started, and prints a report.
"""

from tokvec.parallel.launch import main

if __name__ == "__main__":
    main()
