"""tokvec.parallel's functions and options, fed bad input: a clear error that names the argument.

The same sweep as ``tests/test_bad_input.py`` (which covers ``VocabParallelEmbedding``'s
constructor, ``forward`` and ``load_full_weight``): for each call, valid arguments, and for each
argument the bad values it must refuse with ``TypeError``, ``ValueError`` or ``IndexError`` whose
message names it (or matches the regex given), never one of Python's generic messages. Every
check runs before any collective call, so in a group every rank raises alike and none hangs
(``test_parallel.py`` and ``test_parallel_loss.py`` check that in real groups).
"""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch
import torch.distributed as dist
from test_bad_input import FLAG, FLOAT_DTYPE, GENERIC, SIZE, SIZE_NO_HUGE, bad_calls
from torch import nn

from tokvec import parallel

LAYER = parallel.VocabParallelEmbedding(10, 4)
SP = parallel.VocabParallelEmbedding(10, 4, sequence_parallel=True)
LOGITS = torch.zeros(2, 3, 10)
TARGET = torch.tensor([[1, 2, -100], [9, 0, 3]])
BAD_IDS = [None, [1, 2], "12", 3, np.array([1, 2]), torch.tensor([1.5]), torch.tensor([True]), torch.tensor([-1]),
           torch.tensor([10]), torch.tensor([10], dtype=torch.int16), torch.tensor([-1], dtype=torch.int8),
           torch.zeros(1, 1, 1, dtype=torch.long), torch.tensor(3), torch.tensor([1], dtype=torch.uint64)]
BAD_HIDDEN = [None, [[0.0] * 4], torch.zeros(3), torch.zeros(2, 5), torch.zeros(2, 4, dtype=torch.float64),
              torch.zeros(2, 4, dtype=torch.long), torch.zeros(())]

# (id, function, valid keyword arguments, {argument: bad values, or (bad values, message regex)})
CASES = [
    ("VocabParallelEmbedding", parallel.VocabParallelEmbedding, {"vocab_size": 10, "d_model": 4},
     {"vocab_size": SIZE, "d_model": SIZE, "dtype": FLOAT_DTYPE, "sequence_parallel": FLAG,
      "check_ids_agree": FLAG, "group": [object(), "world"]}),
    ("VocabParallelEmbedding.forward", LAYER, {"ids": torch.tensor([[1, 2]])},
     {"ids": (BAD_IDS, "ids|token id")}),
    ("VocabParallelEmbedding.output_logits", LAYER.output_logits, {"hidden": torch.zeros(2, 4)},
     {"hidden": BAD_HIDDEN}),
    ("VocabParallelEmbedding.output_logits-sp", SP.output_logits, {"hidden": torch.zeros(2, 4)},
     {"hidden": BAD_HIDDEN}),
    ("vocab_parallel_cross_entropy", parallel.vocab_parallel_cross_entropy, {"local_logits": LOGITS, "target": TARGET},
     {"local_logits": [None, [[0.0] * 10], torch.zeros(2, 3, 10, dtype=torch.long), torch.zeros(()),
                       torch.zeros(3, 2, 10)],
      "target": ([None, [[1, 2, 3]] * 2, TARGET.float(), TARGET > 0, TARGET.to(torch.uint64), TARGET[0],
                  TARGET.masked_fill(TARGET == 9, 10), TARGET.masked_fill(TARGET == 9, -1),
                  torch.tensor([[1, 2, 3]], dtype=torch.int8).expand(2, 3).masked_fill(TARGET == 9, 100)],
                 "target"),
      "ignore_index": [None, 1.5, True, "-100", 2**40, -2**63, -2**30, 2**30], "group": [object()]}),
    ("communication_bytes", parallel.communication_bytes, {"collective": "all_reduce", "numel": 10, "world_size": 4},
     {"collective": [None, "all-reduce", "broadcast", 3, "ALL_REDUCE"], "numel": [None, -1, True, 2.5, "3"],
      "world_size": SIZE_NO_HUGE, "element_size": [None, 0, True, 2.5, "4"]}),
    ("shard_ranges", parallel.shard_ranges, {"vocab_size": 10, "world_size": 4},
     {"vocab_size": SIZE_NO_HUGE, "world_size": SIZE_NO_HUGE}),
    ("dtensor_shard_ranges", parallel.dtensor_shard_ranges, {"vocab_size": 10, "world_size": 4},
     {"vocab_size": SIZE_NO_HUGE, "world_size": SIZE_NO_HUGE}),
    ("self_check", parallel.self_check, {"rank": 0, "world_size": 1},
     {"vocab_size": SIZE, "d_model": SIZE, "seq_len": SIZE_NO_HUGE, "batch": SIZE_NO_HUGE}),
    ("compare_with_embedding", parallel.compare_with_embedding,
     {"rank": 0, "world_size": 1, "vocab_size": 10, "d_model": 4},
     {"vocab_size": SIZE, "d_model": SIZE, "max_len": SIZE_NO_HUGE,
      "batch_shape": [None, [2, 6], (2.0, 6), (-1, 2), 12]}),
]


def test_every_case_is_valid_with_its_valid_arguments():
    for _, fn, valid, _ in CASES:
        fn(**valid)


@pytest.mark.parametrize("fn, valid, name, value, pattern", list(bad_calls(CASES)))
def test_bad_argument_is_a_clear_error(fn, valid, name, value, pattern):
    with pytest.raises((TypeError, ValueError, IndexError)) as info:
        fn(**{**valid, name: value})
    message = str(info.value)
    assert not GENERIC.search(message), f"generic error for {name}={value!r:.40}: {message}"
    assert re.search(pattern, message), f"{name}={value!r:.40}: the message does not name it: {message}"


def test_the_errors_say_the_valid_range_and_the_fix():
    with pytest.raises(IndexError, match=r"target 10 at flat index 3 .* valid class ids are 0..9 .* ignore_index"):
        parallel.vocab_parallel_cross_entropy(LOGITS, TARGET.masked_fill(TARGET == 9, 10))
    assert SP(torch.tensor([[1, 2, 3, 4, 5]])).shape == (1, 5, 4)      # a world of one: any T (test_parallel.py: 3)
    with pytest.raises(ValueError, match=r"collective must be one of 'all_reduce', 'reduce_scatter', 'all_gather'"):
        parallel.communication_bytes("allreduce", 10, 2)
    with pytest.raises(TypeError, match=r"hidden has dtype torch.float64 .* hidden.to\(torch.float32\)"):
        LAYER.output_logits(torch.zeros(2, 4, dtype=torch.float64))


def test_every_public_function_of_tokvec_parallel_is_in_a_sweep():
    """A new public name of tokvec.parallel gets a row here (or in tests/test_bad_input.py)."""
    covered = {case_id.split(".")[0].split("-")[0] for case_id, *_ in CASES}
    elsewhere = {"run_group", "main",       # tests/test_parallel_launch.py, with a group or an environment
                 "loopback_environment",    # takes no arguments (tests/test_parallel_launch.py)
                 "parallelize_embedding"}   # below, with a mesh of one
    constants = {"COLLECTIVES"}
    assert set(parallel.__all__) - covered - elsewhere - constants == set()


@pytest.fixture
def mesh_of_one(tmp_path):
    """A world of one in this process (a FileStore, no port), torn down after the test."""
    from torch.distributed.device_mesh import init_device_mesh

    assert not dist.is_initialized()
    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'rendezvous'}", rank=0, world_size=1)
    try:
        yield init_device_mesh("cpu", (1,))
    finally:
        dist.destroy_process_group()


def test_parallelize_embedding_refuses_bad_arguments(mesh_of_one):
    cases = [("parallelize_embedding", parallel.parallelize_embedding,
              {"embedding": nn.Embedding(10, 4), "mesh": mesh_of_one},
              {"embedding": [None, LAYER, nn.Linear(4, 10)], "mesh": [None, "cpu", (1,)],
               "split": [None, "row", "vocabulary", 0], "sequence_parallel": FLAG})]
    out = parallel.parallelize_embedding(nn.Embedding(10, 4), mesh_of_one)(torch.tensor([[1, 2]]))
    assert out.shape == (1, 2, 4)
    for param in bad_calls(cases):
        fn, valid, name, value, pattern = param.values
        valid = {**valid, "embedding": nn.Embedding(10, 4)}                # a fresh module each time
        with pytest.raises((TypeError, ValueError)) as info:
            fn(**{**valid, name: value})
        message = str(info.value)
        assert not GENERIC.search(message) and re.search(pattern, message), (name, value, message)
