"""tokvec.parallel: the vocab-parallel embedding in real gloo process groups, against nn.Embedding.

The multi-process tests start 1 to 4 processes on 127.0.0.1 through ``run_group``, which kills
them and raises ``TimeoutError`` if the group hangs, so a hang fails a test instead of blocking CI.
"""

import time

import pytest
import torch
import torch.distributed as dist
from torch import nn

from tokvec.parallel import VocabParallelEmbedding, run_group

D = 5
VOCAB_SIZES = (1, 2, 3, 7, 8, 12, 13)         # divisible and not by 2, 3 and 4; smaller than the world


def full_table(vocab_size):
    return torch.randn(vocab_size, D, dtype=torch.float64, generator=torch.Generator().manual_seed(vocab_size))


def batch_ids(vocab_size):
    ids = torch.randint(0, vocab_size, (3, 7), generator=torch.Generator().manual_seed(100 + vocab_size))
    ids[0, 0], ids[-1, -1] = 0, vocab_size - 1                          # first and last row
    return ids


def against_nn_embedding(rank, world_size, vocab_sizes):
    """In each rank: forward and backward of the sharded layer equal one nn.Embedding's."""
    report = {}
    for vocab_size in vocab_sizes:
        full, ids = full_table(vocab_size), batch_ids(vocab_size)
        layer = VocabParallelEmbedding(vocab_size, D, dtype=torch.float64)
        layer.load_full_weight(full)
        reference = nn.Embedding.from_pretrained(full.clone(), freeze=False)

        out, expected = layer(ids), reference(ids)
        grad_out = torch.randn(out.shape, dtype=torch.float64, generator=torch.Generator().manual_seed(7))
        (out * grad_out).sum().backward()
        (expected * grad_out).sum().backward()
        start, end = layer.vocab_range
        report[vocab_size] = {
            "range": layer.vocab_range,
            "shard_shape": tuple(layer.weight.shape),
            "forward_equal": torch.equal(out, expected),
            "grad_close": torch.allclose(layer.weight.grad, reference.weight.grad[start:end], rtol=1e-12, atol=0),
            "grad_of_my_rows_only": layer.weight.grad.shape == (end - start, D),
        }
    return report


@pytest.mark.slow
@pytest.mark.parametrize("world_size", [1, 2, 3, 4])
def test_forward_and_backward_equal_one_embedding(world_size):
    reports = run_group(against_nn_embedding, world_size, VOCAB_SIZES, timeout=180)
    for vocab_size in VOCAB_SIZES:
        ranges = [reports[rank][vocab_size]["range"] for rank in range(world_size)]
        assert ranges[0][0] == 0 and ranges[-1][1] == vocab_size          # the rows are covered,
        assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:]))      # contiguously, once
        sizes = [end - start for start, end in ranges]
        assert max(sizes) - min(sizes) <= 1, sizes                         # balanced, no padding
        for rank in range(world_size):
            r = reports[rank][vocab_size]
            assert r["shard_shape"] == (sizes[rank], D)
            assert r["forward_equal"], (world_size, vocab_size, rank)
            assert r["grad_close"], (world_size, vocab_size, rank)          # not world_size times it
            assert r["grad_of_my_rows_only"]


def bad_id_then_good(rank, world_size):
    """Every rank refuses the bad id before communicating; then the group still works."""
    layer = VocabParallelEmbedding(10, D)
    try:
        layer(torch.tensor([[3, 10]]))
        message = None
    except IndexError as error:
        message = str(error)
    out = layer(torch.tensor([0, 9]))        # a collective: hangs if some rank is out of step
    return message, tuple(out.shape)


@pytest.mark.slow
def test_a_bad_id_raises_on_every_rank_and_the_group_stays_in_step():
    results = run_group(bad_id_then_good, 3, timeout=120)
    for message, shape in results:
        assert message is not None and "token id 10" in message and "vocab_size = 10" in message
        assert shape == (2, D)


def deadlock(rank, world_size):
    if rank == 0:
        dist.barrier()                        # waits for rank 1 ...
    else:
        time.sleep(120)                       # ... which never comes


@pytest.mark.slow
def test_a_hanging_group_is_killed_and_reported():
    start = time.monotonic()
    with pytest.raises(TimeoutError, match="did not finish within 5"):
        run_group(deadlock, 2, timeout=5)
    assert time.monotonic() - start < 60


def raises(rank, world_size):
    raise ValueError(f"boom on {rank}")


@pytest.mark.slow
def test_an_error_in_a_rank_is_reported_with_its_rank():
    with pytest.raises(RuntimeError, match="rank 0: ValueError: boom on 0; rank 1: ValueError: boom on 1"):
        run_group(raises, 2, timeout=60)


# --- in this process: a world of one -------------------------------------------------------------

def test_without_a_process_group_it_is_a_plain_embedding():
    assert not dist.is_initialized()
    layer = VocabParallelEmbedding(11, D, dtype=torch.float64)
    assert layer.vocab_range == (0, 11) and layer.weight.shape == (11, D)
    full = full_table(11)
    layer.load_full_weight(full)
    ids = batch_ids(11)
    assert torch.equal(layer(ids), full[ids])
    assert layer(torch.zeros(0, dtype=torch.long)).shape == (0, D)
    assert layer(torch.tensor(4)).shape == (D,)                               # any shape of ids


@pytest.mark.parametrize("call,error,match", [
    (lambda: VocabParallelEmbedding(0, 4), ValueError, "vocab_size"),
    (lambda: VocabParallelEmbedding(4, -1), ValueError, "d_model"),
    (lambda: VocabParallelEmbedding(4.0, 4), TypeError, "vocab_size"),
    (lambda: VocabParallelEmbedding(4, 4, dtype=torch.long), TypeError, "dtype"),
    (lambda: VocabParallelEmbedding(4, 4, group=object()), ValueError, "group"),
    (lambda: VocabParallelEmbedding(4, 3).load_full_weight(torch.zeros(3, 3)), ValueError, r"\(4, 3\)"),
    (lambda: VocabParallelEmbedding(4, 3).load_full_weight([[0.0] * 3] * 4), TypeError, "weight"),
    (lambda: VocabParallelEmbedding(4, 3)(torch.tensor([4])), IndexError, r"token id 4 .*vocab_size = 4"),
    (lambda: VocabParallelEmbedding(4, 3)(torch.tensor([[0, -1]])), IndexError, r"token id -1 at index \(0, 1\)"),
    (lambda: VocabParallelEmbedding(4, 3)(torch.tensor([1.0])), TypeError, "integer"),
    (lambda: VocabParallelEmbedding(4, 3)([1, 2]), TypeError, "ids"),
])
def test_bad_input_is_a_clear_error(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_run_group_refuses_a_bad_world_size():
    with pytest.raises(ValueError, match="world_size"):
        run_group(raises, 0)
