"""Measurement: what the input layer costs, on the CPU and on a GPU, and what bounds it.

Nothing on the data path imports this package; it imports the data path and times it.

* :mod:`tokvec.bench.common`   -- the machine description, device sync, timers, and the results
  files (written and read; the committed ones ship inside the package, in ``results/``);
* :mod:`tokvec.bench.cpu`      -- ``python -m tokvec.bench``: pure Python vs NumPy vs PyTorch,
  eager and compiled (the chapter "What vectorization buys");
* :mod:`tokvec.bench.parts`    -- ``python -m tokvec.bench parts``: page faults per call (with an
  allocator control), the input checks alone and after a cache-evicting write, the layer taken
  apart, an output-sized copy, and one thread against every core beside busy processes
  (the chapter "What vectorization buys");
* :mod:`tokvec.bench.gpu`      -- ``python -m tokvec.bench kernels``: eager, compiled, the Triton
  kernel and a plain copy on one GPU (the chapter "Making it fast on a GPU", reads its
  results; no GPU numbers are committed yet);
* :mod:`tokvec.bench.roofline` -- the bytes the layer must move, and the fastest time that allows
  (the chapter "What vectorization buys" reads its CPU timings against it).

``from tokvec.bench import load`` reads a committed results file without importing PyTorch.
"""

from tokvec.bench.common import RESULTS_DIR, load

__all__ = ["RESULTS_DIR", "load"]
