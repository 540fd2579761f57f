"""tokvec.parallel: the vocab-parallel embedding in real gloo process groups, against nn.Embedding.

The multi-process tests start 1 to 4 processes on 127.0.0.1 through ``run_group``, which kills
them and raises ``TimeoutError`` if the group hangs, so a hang fails a test instead of blocking CI.
Each group runs several checks, to start as few processes as possible. The loss and the tied
output layer are in ``test_parallel_loss.py``, PyTorch's own API in ``test_parallel_dtensor.py``,
``run_group`` and torchrun in ``test_parallel_launch.py``, bad input in
``test_parallel_bad_input.py``.
"""

import pytest
import torch
import torch.distributed as dist
from torch import nn

from tokvec import parallel
from tokvec.parallel import VocabParallelEmbedding, run_group, shard_ranges
from tokvec.parallel import layer as layer_module

D = 5
VOCAB_SIZES = (1, 2, 3, 7, 8, 12, 13)         # divisible and not by 2, 3 and 4; smaller than the world
NARROW = (torch.int8, torch.int16, torch.uint8, torch.int32)


def full_table(vocab_size):
    return torch.randn(vocab_size, D, dtype=torch.float64, generator=torch.Generator().manual_seed(vocab_size))


def batch_ids(vocab_size, T=12):
    ids = torch.randint(0, vocab_size, (3, T), generator=torch.Generator().manual_seed(100 + vocab_size))
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
        narrow = {str(dtype): torch.equal(layer(ids.to(dtype)), expected) for dtype in NARROW}

        # sequence parallel: this rank's T/W positions, and the same gradient for its rows
        sp = VocabParallelEmbedding(vocab_size, D, dtype=torch.float64, sequence_parallel=True)
        sp.load_full_weight(full)
        T = ids.shape[-1] // world_size
        sp_out = sp(ids)
        (sp_out * grad_out[:, rank * T:(rank + 1) * T]).sum().backward()
        report[vocab_size] = {
            "range": layer.vocab_range,
            "shard_shape": tuple(layer.weight.shape),
            "forward_equal": torch.equal(out, expected),
            "grad_close": torch.allclose(layer.weight.grad, reference.weight.grad[start:end], rtol=1e-12, atol=0),
            "grad_of_my_rows_only": layer.weight.grad.shape == (end - start, D),
            "narrow_ids_equal": narrow,
            "sp_shape": tuple(sp_out.shape),
            "sp_equal": torch.equal(sp_out, expected[:, rank * T:(rank + 1) * T]),
            "sp_grad_close": torch.allclose(sp.weight.grad, reference.weight.grad[start:end], rtol=1e-12, atol=0),
            "sp_1d_equal": torch.equal(sp(ids[1]), expected[1, rank * T:(rank + 1) * T]),  # ids (T,)
        }
    return report


@pytest.mark.slow
@pytest.mark.parametrize("world_size", [1, 2, 3, 4])
def test_forward_and_backward_equal_one_embedding(world_size):
    reports = run_group(against_nn_embedding, world_size, VOCAB_SIZES, timeout=180)
    for vocab_size in VOCAB_SIZES:
        ranges = [reports[rank][vocab_size]["range"] for rank in range(world_size)]
        assert ranges == shard_ranges(vocab_size, world_size)
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
            assert all(r["narrow_ids_equal"].values()), r["narrow_ids_equal"]   # int8, int16, uint8 ids
            assert r["sp_shape"] == (3, 12 // world_size, D)
            assert r["sp_equal"] and r["sp_1d_equal"], (world_size, vocab_size, rank)
            assert r["sp_grad_close"], (world_size, vocab_size, rank)


def seeded_shards(rank, world_size, shapes, seed, block_elements):
    """Each rank's initial shard of every table, after the same seed; and the generator's next draw."""
    layer_module._INIT_BLOCK_ELEMENTS = block_elements              # force many blocks, in this process
    shards = []
    for vocab_size, d_model, dtype in shapes:
        torch.manual_seed(seed)
        shards.append(VocabParallelEmbedding(vocab_size, d_model, dtype=dtype).weight.detach())
    return shards, torch.rand(3)                                    # where the generator ended


INIT_SHAPES = [(13, 5, torch.float32), (50, 8, torch.float64), (101, 3, torch.bfloat16), (3, 4, torch.float32)]


@pytest.mark.slow
def test_the_same_seed_gives_the_same_table_whatever_the_world_size():
    tables = {}
    for world_size in (1, 2, 3, 4):
        reports = run_group(seeded_shards, world_size, INIT_SHAPES, 1234, 64, timeout=120)
        tables[world_size] = ([torch.cat([r[0][k] for r in reports]) for k in range(len(INIT_SHAPES))],
                              [r[1] for r in reports])
    for k, (vocab_size, d_model, dtype) in enumerate(INIT_SHAPES):
        torch.manual_seed(1234)
        expected = nn.Embedding(vocab_size, d_model, dtype=dtype).weight.detach()   # nn.Embedding's table
        for world_size, (full, _) in tables.items():
            assert torch.equal(full[k], expected), (world_size, vocab_size)
        assert len(torch.unique(expected.float(), dim=0)) == vocab_size             # no two rows equal
    after = tables[1][1][0]
    assert all(torch.equal(t, after) for _, nexts in tables.values() for t in nexts)  # the generator too


def bad_input_then_good(rank, world_size):
    """Every rank refuses bad input before communicating; then the group still works."""
    messages = []
    layer = VocabParallelEmbedding(10, D)
    sp = VocabParallelEmbedding(10, D, sequence_parallel=True)
    for call in (lambda: layer(torch.tensor([[3, 10]])), lambda: layer(torch.tensor([[3, -1]], dtype=torch.int8)),
                 lambda: sp(torch.tensor([[1, 2, 3, 4]]))):
        try:
            call()
            messages.append(None)
        except (IndexError, ValueError) as error:
            messages.append(str(error))
    out = layer(torch.tensor([0, 9]))        # a collective: hangs if some rank is out of step
    return messages, tuple(out.shape)


@pytest.mark.slow
def test_bad_input_raises_on_every_rank_and_the_group_stays_in_step():
    results = run_group(bad_input_then_good, 3, timeout=120)
    for (big, negative, sequence), shape in results:
        assert big is not None and "token id 10" in big and "vocab_size = 10" in big
        assert negative is not None and "token id -1" in negative                  # int8 ids: the same error
        assert sequence is not None and "T = 4" in sequence and "world size 3" in sequence
        assert shape == (2, D)


# --- ranks that got different ids ----------------------------------------------------------------

DISAGREEMENTS = {  # name: rank 0's ids and rank 1's ids, for a 10-row table on 2 ranks (rows 0-4, 5-9)
    "different valid ids": ([[1, 2, 3]], [[6, 7, 8]]),
    "shapes (2, 3) and (3, 2)": ([[0, 1, 2], [3, 4, 5]], [[5, 4], [3, 2], [1, 0]]),
    "two ids swapped": ([1, 2, 6, 7], [1, 6, 2, 7]),
    "one id changed": ([[5, 5, 5]], [[5, 5, 4]]),
    "(T,) and (1, T)": ([1, 2, 3], [[1, 2, 3]]),              # the same numbers: harmless, still flagged
}


def different_ids(rank, world_size, checked):
    """Each disagreement on 2 ranks, with or without check_ids_agree; then the same ids on both."""
    torch.manual_seed(0)
    layer = VocabParallelEmbedding(10, D, check_ids_agree=checked)
    torch.manual_seed(0)
    table = nn.Embedding(10, D).weight.detach()                # the same table, whole (tested above)
    report = {}
    for name, pair in DISAGREEMENTS.items():
        ids = torch.tensor(pair[rank])
        try:
            with torch.no_grad():
                out = layer(ids)
            report[name] = ("ok", out, torch.equal(out, table[ids]))
        except (IndexError, ValueError) as error:
            report[name] = ("error", f"{type(error).__name__}: {error}", None)
    if checked:                                 # unchecked, rank 0 would go on into the all-reduce alone
        try:
            layer(torch.tensor([1, 10 if rank == 1 else 2]))     # rank 1 alone has a bad id
            report["bad id on rank 1"] = None
        except (IndexError, ValueError) as error:
            report["bad id on rank 1"] = f"{type(error).__name__}: {error}"
    with torch.no_grad():
        report["then"] = torch.equal(layer(torch.tensor([[1, 9]])), table[torch.tensor([[1, 9]])])
    return report


@pytest.mark.slow
def test_ranks_with_different_ids_get_wrong_vectors_silently_unless_checked():
    unchecked = run_group(different_ids, 2, False, timeout=120)
    for name in DISAGREEMENTS:
        (status0, out0, own0), (status1, out1, own1) = (r[name] for r in unchecked)
        assert status0 == status1 == "ok", (name, out0, out1)                      # no error anywhere
        if name == "(T,) and (1, T)":
            assert own0 and own1                                                   # the same numbers
            continue
        assert not own0 and not own1, name                                         # neither rank's lookup
        assert torch.equal(out0.flatten(), out1.flatten()), name                   # the same wrong vectors
    assert all(r["then"] for r in unchecked)                                       # still in step
    checked = run_group(different_ids, 2, True, timeout=120)
    for rank, report in enumerate(checked):
        for name in DISAGREEMENTS:
            status, message, _ = report[name]
            assert status == "error" and message.startswith("ValueError: the ranks got different ids"), name
            assert "broadcast it from the group's first rank" in message
            assert "or a crash when the number of ids differs)" in message                # not "the shapes"
        shapes = report["shapes (2, 3) and (3, 2)"][1]
        assert "rank 0: shape (2, 3)" in shapes and "rank 1: shape (3, 2)" in shapes
        bad = report["bad id on rank 1"]
        if rank == 1:                                                              # its own error
            assert bad.startswith("IndexError: token id 10 at index (1,) is out of range"), bad
        else:                                                                      # told, and stops too
            assert bad.startswith("ValueError: rank(s) [1] of 2 refused their ids"), bad
        assert report["then"]                                                      # still in step


def different_lengths(rank, world_size):
    """Rank 0 looks up 5 ids, rank 1 six: all-reduces of different sizes."""
    layer = VocabParallelEmbedding(10, D)
    try:
        layer(torch.arange(5 + rank)[None])
    except RuntimeError as error:                 # what gloo or TORCH_DISTRIBUTED_DEBUG raises here
        return str(error)
    return None


@pytest.mark.slow
def test_different_lengths_abort_a_process_in_gloo(capfd):
    """gloo does not raise: it aborts the process from C++ ("terminate called ... EnforceNotMet")."""
    with pytest.raises(RuntimeError, match=r"rank\(s\) \[[01]\] of 2 died without reporting \(exit codes \[-6\]"):
        run_group(different_lengths, 2, timeout=60)
    printed = capfd.readouterr().err                              # the processes write to this stderr
    assert "terminate called after throwing an instance of 'gloo::EnforceNotMet'" in printed
    assert "Received data size doesn't match expected size" in printed


@pytest.mark.slow
def test_torch_distributed_debug_detail_turns_different_lengths_into_an_error(monkeypatch):
    monkeypatch.setenv("TORCH_DISTRIBUTED_DEBUG", "DETAIL")      # the processes inherit it
    for message in run_group(different_lengths, 2, timeout=60):
        assert message.startswith("Detected mismatch between collectives on ranks"), message
        assert "TensorShape=[1, 5, 5]" in message and "TensorShape=[1, 6, 5]" in message


# --- in this process: a world of one -------------------------------------------------------------

def test_without_a_process_group_it_is_a_plain_embedding():
    assert not dist.is_initialized()
    layer = VocabParallelEmbedding(11, D, dtype=torch.float64)
    assert layer.vocab_range == (0, 11) and layer.weight.shape == (11, D)
    full = full_table(11)
    layer.load_full_weight(full)
    ids = batch_ids(11)
    assert torch.equal(layer(ids), full[ids])
    assert torch.equal(layer(ids[0]), full[ids[0]])                           # (T,) ids
    assert layer(torch.zeros(0, dtype=torch.long)).shape == (0, D)
    sp = VocabParallelEmbedding(11, D, dtype=torch.float64, sequence_parallel=True)
    sp.load_full_weight(full)
    assert torch.equal(sp(ids), full[ids])                                    # T / 1 = T


@pytest.mark.parametrize("dtype", NARROW)
def test_narrow_integer_ids_work_like_int64(dtype):
    layer = VocabParallelEmbedding(100, D)
    ids = torch.tensor([[0, 7, 99], [5, 5, 1]])
    assert torch.equal(layer(ids.to(dtype)), layer(ids))
    bad = torch.tensor([[0, 100 if dtype != torch.int8 else -3]], dtype=dtype)
    with pytest.raises(IndexError) as narrow:
        layer(bad)
    with pytest.raises(IndexError) as wide:
        layer(bad.long())
    assert str(narrow.value) == str(wide.value)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("vocab_size, d_model", [(50, 8), (37, 5), (100, 3), (13, 16), (7, 7), (1, 1), (3, 5)])
def test_a_world_of_one_starts_as_nn_embedding_with_the_same_seed(monkeypatch, vocab_size, d_model, dtype):
    monkeypatch.setattr(layer_module, "_INIT_BLOCK_ELEMENTS", 48)    # many blocks, with short tails
    torch.manual_seed(5)
    ours = VocabParallelEmbedding(vocab_size, d_model, dtype=dtype).weight.detach()
    after_ours = torch.rand(2)
    torch.manual_seed(5)
    theirs = nn.Embedding(vocab_size, d_model, dtype=dtype).weight.detach()
    assert torch.equal(ours, theirs)
    assert torch.equal(after_ours, torch.rand(2))


def test_init_blocks_cover_the_table_in_16_aligned_blocks(monkeypatch):
    monkeypatch.setattr(layer_module, "_INIT_BLOCK_ELEMENTS", 64)
    for vocab_size in range(1, 60):
        for d_model in (1, 3, 5, 8, 16, 24, 100):
            blocks = layer_module._init_blocks(vocab_size, d_model)
            assert blocks[0][0] == 0 and blocks[-1][1] == vocab_size
            assert all(a[1] == b[0] for a, b in zip(blocks, blocks[1:]))
            assert all((last - first) * d_model % 16 == 0 for first, last in blocks[:-1])
            assert len(blocks) == 1 or (blocks[-1][1] - blocks[-1][0]) * d_model >= 16
            assert max(last - first for first, last in blocks) * d_model <= max(64 + 16, 32 * d_model)


def test_shard_ranges_are_balanced():
    assert shard_ranges(10, 4) == [(0, 3), (3, 6), (6, 8), (8, 10)]
    assert shard_ranges(3, 4) == [(0, 1), (1, 2), (2, 3), (3, 3)]
    assert shard_ranges(50_257, 8)[0] == (0, 6283)


def test_meta_device_builds_shapes_without_drawing():
    torch.manual_seed(0)
    layer = VocabParallelEmbedding(10, 4, device="meta")
    assert layer.weight.shape == (10, 4) and layer.weight.is_meta
    after = torch.rand(1)
    torch.manual_seed(0)
    assert torch.equal(after, torch.rand(1))


def test_the_checksum_sees_one_changed_id_and_any_swap():
    from tokvec.parallel.collectives import _PRIME, _checksum

    g = torch.Generator().manual_seed(0)
    ids = torch.randint(0, 128_256, (4, 64), generator=g)
    ids[0, :2] = torch.tensor([2**30 - 1, -2**30 + 1])                                 # the range's two ends
    base = _checksum(ids)
    assert _checksum(ids.to(torch.int32)) == _checksum(ids.clone()) == base >= 0       # equal ids, equal sums
    flat = ids.flatten()
    for i in range(0, flat.numel(), 7):
        for new in (0, int(flat[i]) + 1, 2**30 - 1, -2**30 + 1, -100, -2**30, 2**30, int(flat[i]) + _PRIME):
            changed = flat.clone()
            changed[i] = new
            assert new == flat[i] or _checksum(changed) != base, (i, new)
        j = (i * 31 + 5) % flat.numel()
        swapped = flat.clone()
        swapped[i], swapped[j] = flat[j], flat[i]
        assert flat[i] == flat[j] or _checksum(swapped) != base, (i, j)
    assert _checksum(torch.full((2**12,), 2**30 - 1)) >= 0                            # no int64 overflow
    assert _checksum(torch.tensor([1, 2, 3], dtype=torch.int32)) == _checksum(torch.tensor([1, 2, 3]))


def test_the_checksum_tells_apart_the_values_that_are_equal_modulo_p():
    """-2**30 and 2**30 - 1 are equal modulo p = 2**31 - 1: the range is open at -2**30."""
    from tokvec.parallel.collectives import _PRIME, _checksum

    assert (-2**30) % _PRIME == (2**30 - 1) % _PRIME and 5 % _PRIME == (5 + _PRIME) % _PRIME
    for inside, outside in (([1, 2, 2**30 - 1, 4], [1, 2, -2**30, 4]), ([5, 6], [5 + _PRIME, 6]),
                            ([-2**30 + 1], [2**30])):
        assert _checksum(torch.tensor(inside)) >= 0 and _checksum(torch.tensor(outside)) == -1
    assert _checksum(torch.tensor([], dtype=torch.long)) == 0


def test_communication_bytes_per_rank():
    n, W = 1_000, 8                                        # elements of the full tensor, ranks
    sent = {c: parallel.communication_bytes(c, n, W, element_size=2) for c in parallel.COLLECTIVES}
    assert sent == {"all_reduce": 2 * 7 / 8 * 2_000, "reduce_scatter": 7 / 8 * 2_000,
                    "all_gather": 7 / 8 * 2_000, "all_to_all": 7 / 64 * 2_000}
    assert sent["reduce_scatter"] == W * sent["all_to_all"]           # the column split: W times less
    assert all(parallel.communication_bytes(c, n, 1) == 0 for c in parallel.COLLECTIVES)


def test_check_ids_agree_needs_a_vocabulary_the_checksum_covers():
    with pytest.raises(ValueError, match=r"compares ids below 2\*\*30 only, but vocab_size is 1073741825"):
        VocabParallelEmbedding(2**30 + 1, 1, check_ids_agree=True, device="meta")
    assert VocabParallelEmbedding(2**30, 1, check_ids_agree=True, device="meta").vocab_range == (0, 2**30)


def test_check_ids_agree_changes_nothing_in_a_world_of_one():
    torch.manual_seed(0)
    checked = VocabParallelEmbedding(11, D, check_ids_agree=True)
    torch.manual_seed(0)
    plain = VocabParallelEmbedding(11, D)
    ids = batch_ids(11)
    assert torch.equal(checked(ids), plain(ids))
    assert "check_ids_agree=True" in repr(checked) and "check_ids_agree" not in repr(plain)
    with pytest.raises(IndexError, match="token id 11"):
        checked(torch.tensor([11]))
