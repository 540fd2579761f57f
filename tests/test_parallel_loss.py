"""tokvec.parallel: the vocabulary-parallel cross-entropy and the tied output layer, on 1 to 4 ranks.

Each shard's loss and gradient must equal the single-process ``F.cross_entropy`` of the full
logits and the matching columns of its gradient, with ignored targets, uneven and empty shards,
and DTensor's split as well as ours; and a whole tied model (embedding, a linear layer, tied
logits, the loss) must give the single-process loss and gradients, with and without sequence
parallelism (:func:`tokvec.parallel.self_check`).
"""

import math

import pytest
import torch
import torch.nn.functional as F

from tokvec.parallel import (
    dtensor_shard_ranges,
    run_group,
    self_check,
    shard_ranges,
    vocab_parallel_cross_entropy,
)

# (vocab_size, leading shape, ignored positions, ignore_index, split)
CASES = [
    (13, (3, 5), [(0, 0), (2, 4)], -100, "ours"),
    (13, (3, 5), [(1, 1)], -100, "dtensor"),             # DTensor's torch.chunk split works too
    (12, (4,), [], 7, "ours"),                            # ignore_index inside 0..V-1
    (3, (2, 3), [(0, 1)], -100, "ours"),                  # W = 4 > V: a rank holds no columns
    (10, (), [], -100, "ours"),                           # one position: logits (V,), target ()
    (10, (2, 3), "all", -100, "ours"),                    # every target ignored: nan, zero gradients
    (9, (0,), [], -100, "ours"),                          # no positions at all
]


def case_data(vocab_size, shape, ignored, ignore_index, dtype=torch.float64):
    g = torch.Generator().manual_seed(vocab_size)
    logits = torch.randn(*shape, vocab_size, generator=g, dtype=dtype) * 3
    target = torch.randint(0, vocab_size, shape, generator=g)
    if ignored == "all":
        target.fill_(ignore_index)
    for where in ignored if ignored != "all" else []:
        target[where] = ignore_index
    if ignore_index == 7:
        target[0] = 7
    return logits, target


def reference(logits, target, ignore_index):
    full = logits.clone().requires_grad_()
    loss = F.cross_entropy(full.reshape(-1, full.shape[-1]), target.reshape(-1), ignore_index=ignore_index)
    loss.backward()
    return loss.detach(), full.grad


def loss_checks(rank, world_size):
    results = []
    for vocab_size, shape, ignored, ignore_index, split in CASES:
        logits, target = case_data(vocab_size, shape, ignored, ignore_index)
        ranges = (shard_ranges if split == "ours" else dtensor_shard_ranges)(vocab_size, world_size)
        start, end = ranges[rank]
        local = logits[..., start:end].clone().requires_grad_()
        loss = vocab_parallel_cross_entropy(local, target.to(torch.int16), ignore_index=ignore_index)
        loss.backward()
        expected, grad = reference(logits, target, ignore_index)
        results.append({"loss": loss.item(), "expected": expected.item(),
                        "grad_error": float((local.grad - grad[..., start:end]).abs().max()) if local.numel() else 0.0,
                        "grad_shape": tuple(local.grad.shape)})
    # float32: equal to rounding
    logits, target = case_data(50, (4, 6), [(0, 0)], -100, torch.float32)
    start, end = shard_ranges(50, world_size)[rank]
    local = logits[..., start:end].clone().requires_grad_()
    loss = vocab_parallel_cross_entropy(local, target)
    loss.backward()
    expected, grad = reference(logits, target, -100)
    float32 = (abs(loss.item() - expected.item()), float((local.grad - grad[..., start:end]).abs().max()))
    # bfloat16 logits: the loss is float32, from the bfloat16 values, as Megatron-LM's
    low = logits.to(torch.bfloat16)
    loss = vocab_parallel_cross_entropy(low[..., start:end], target)
    expected, _ = reference(low.float(), target, -100)
    bfloat16 = (loss.dtype, abs(loss.item() - expected.item()))
    # bad input on every rank, then the group still works
    messages = []
    wrapped = target.clone()
    wrapped[1, 2] += rank * (2**31 - 1)      # the same modulo the checksum's p: rank 0 valid, the others not
    for bad_target in (target.masked_fill(target == target[1, 1], 50), target + rank, wrapped):
        try:
            vocab_parallel_cross_entropy(local.detach(), bad_target)
            messages.append(None)
        except (IndexError, ValueError) as error:
            messages.append(f"{type(error).__name__}: {error}")
    disagreements = (lambda: vocab_parallel_cross_entropy(local.detach(), target, ignore_index=-100 - rank),
                      lambda: vocab_parallel_cross_entropy(local.detach().to(torch.float64 if rank else torch.float32),
                                                           target))
    for call in disagreements if world_size > 1 else ():      # in a world of one, nothing to disagree on
        try:
            call()
            messages.append(None)
        except ValueError as error:
            messages.append(f"{type(error).__name__}: {error}")
    again = vocab_parallel_cross_entropy(local.detach(), target).item()
    return results, float32, bfloat16, messages, again


@pytest.mark.slow
@pytest.mark.parametrize("world_size", [1, 2, 3, 4])
def test_the_loss_and_its_gradient_equal_f_cross_entropy(world_size):
    reports = run_group(loss_checks, world_size, timeout=180)
    for rank, (results, float32, bfloat16, messages, again) in enumerate(reports):
        for (vocab_size, shape, ignored, _, split), r in zip(CASES, results):
            case = (world_size, rank, vocab_size, shape, split)
            if ignored == "all" or shape == (0,):
                assert math.isnan(r["loss"]) and math.isnan(r["expected"]), case   # as PyTorch
            else:
                assert r["loss"] == pytest.approx(r["expected"], rel=1e-13, abs=0), case
            assert r["grad_error"] < 1e-15, case                               # zero where PyTorch's is
        assert float32[0] < 1e-6 and float32[1] < 1e-7, float32
        assert bfloat16[0] == torch.float32 and bfloat16[1] < 1e-5, bfloat16
        out_of_range, differ, wrapped, *others = messages
        assert out_of_range.startswith("IndexError: target 50 at flat index") and "0..49" in out_of_range
        if world_size > 1:
            assert differ.startswith("ValueError: the ranks disagree on the targets"), differ
            assert wrapped.startswith("ValueError: the ranks disagree on the targets"), wrapped   # rank 0 too
            assert ", -1" in wrapped, wrapped                          # the others' checksum: outside the range
            ignore, dtype = others
            assert ignore.startswith("ValueError: the ranks disagree on the ignore_index"), ignore
            values = ", ".join(str(-100 - r) for r in range(world_size))
            assert f"rank {rank} has {-100 - rank}, the ranks have [{values}]" in ignore, ignore
            assert dtype.startswith("ValueError: the ranks disagree on the dtype of the logits"), dtype
            assert "torch.float32, torch.float64" in dtype, dtype                # names, not codes
        assert again == reports[0][4]                                          # still in step


@pytest.mark.slow
@pytest.mark.parametrize("world_size", [1, 2, 3, 4])
def test_a_tied_model_gives_the_single_process_loss_and_gradients(world_size):
    """Embedding -> Linear -> tied logits -> loss; and the same with sequence parallelism."""
    for vocab_size in (50, 13):
        reports = run_group(self_check, world_size, vocab_size, 6, 4 * world_size, 2, 3, timeout=180)
        for report in reports:
            errors = {k: v for k, v in report.items() if k.endswith("error")}
            assert set(errors) == {"init_max_error", "loss_error", "table_grad_max_error", "linear_grad_max_error",
                                   "sp_loss_error", "sp_table_grad_max_error", "sp_linear_grad_max_error"}
            assert errors["init_max_error"] == 0.0
            assert max(errors.values()) < 1e-13, (world_size, vocab_size, errors)
        if world_size > 1:
            numel = 2 * 4 * world_size * 6
            assert reports[0]["all_reduce_bytes"] == 2 * (world_size - 1) / world_size * numel * 8
            assert reports[0]["reduce_scatter_bytes"] == reports[0]["all_reduce_bytes"] / 2


# --- in this process: a world of one -------------------------------------------------------------

@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}-{c[1]}-{c[4]}" for c in CASES])
def test_a_world_of_one_is_f_cross_entropy(case):
    vocab_size, shape, ignored, ignore_index, _ = case
    logits, target = case_data(vocab_size, shape, ignored, ignore_index)
    local = logits.clone().requires_grad_()
    loss = vocab_parallel_cross_entropy(local, target, ignore_index=ignore_index)
    loss.backward()
    expected, grad = reference(logits, target, ignore_index)
    torch.testing.assert_close(loss.detach(), expected, rtol=1e-13, atol=0, equal_nan=True)
    torch.testing.assert_close(local.grad, grad, rtol=0, atol=1e-15)


def test_ignore_index_and_vocab_size_stay_in_the_range_the_checksum_compares():
    logits, target = case_data(10, (2, 3), [(0, 1)], -2**30 + 1)                # the lowest accepted
    loss = vocab_parallel_cross_entropy(logits, target, ignore_index=-2**30 + 1)
    expected, _ = reference(logits, target, -2**30 + 1)
    torch.testing.assert_close(loss, expected, rtol=1e-13, atol=0)
    for ignore_index in (-2**30, 2**30):                                         # -2**30 = 2**30 - 1 modulo p
        with pytest.raises(ValueError, match=r"ignore_index must be an int strictly between -2\*\*30 and 2\*\*30"):
            vocab_parallel_cross_entropy(logits, target, ignore_index=ignore_index)
    none = torch.zeros(0, dtype=torch.long)                                       # no positions: no memory
    assert math.isnan(vocab_parallel_cross_entropy(torch.empty(0, 2**30), none))
    with pytest.raises(ValueError, match=r"the logits have 1073741825 classes .* more than the 2\*\*30"):
        vocab_parallel_cross_entropy(torch.empty(0, 2**30 + 1), none)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_half_precision_logits_are_computed_in_float32(dtype):
    logits, target = case_data(40, (3, 4), [(0, 0)], -100, torch.float32)
    low = logits.to(dtype).requires_grad_()
    loss = vocab_parallel_cross_entropy(low, target)
    loss.backward()
    expected, grad = reference(low.detach().float(), target, -100)             # the same numbers, in float32
    assert loss.dtype == torch.float32 and low.grad.dtype == dtype             # the loss is not rounded
    torch.testing.assert_close(loss, expected, rtol=1e-6, atol=0)
    torch.testing.assert_close(low.grad.float(), grad, rtol=1e-2, atol=1e-3)


def test_gradcheck():
    logits, target = case_data(7, (3,), [(1,)], -100)
    assert torch.autograd.gradcheck(lambda z: vocab_parallel_cross_entropy(z, target),
                                    (logits.clone().requires_grad_(),))
