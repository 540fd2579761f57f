"""tokvec.parallel against PyTorch's own tensor-parallel API (DeviceMesh, DTensor), on 1 to 4 ranks.

``parallelize_module`` with ``RowwiseParallel`` on an ``nn.Embedding`` must give our layer's
outputs and gradients (ours are only the rank's rows; DTensor's, in torch 2.13, are the whole
table on every rank); ``ColwiseParallel`` the single-process output, and with sequence
parallelism its slice (an all-to-all, which DTensor replaces on a CPU mesh by an all-gather in each
direction, as chapter 13 says, although gloo has ``all_to_all_single``); ``dtensor_shard_ranges``
what ``distribute_tensor`` really does; and ``loss_parallel()`` our
``vocab_parallel_cross_entropy``.
"""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from tokvec.parallel import (
    VocabParallelEmbedding,
    dtensor_shard_ranges,
    parallelize_embedding,
    run_group,
    shard_ranges,
    vocab_parallel_cross_entropy,
)

D, T = 4, 12


def table_and_ids(vocab_size):
    g = torch.Generator().manual_seed(vocab_size)
    full = torch.randn(vocab_size, D, generator=g, dtype=torch.float64)
    ids = torch.randint(0, vocab_size, (2, T), generator=g)
    ids[0, 0], ids[1, -1] = 0, vocab_size - 1
    return full, ids, torch.randn(2, T, D, generator=g, dtype=torch.float64)


def dtensor_checks(rank, world_size):
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Shard, distribute_tensor
    from torch.distributed.tensor.debug import CommDebugMode
    from torch.distributed.tensor.parallel import loss_parallel

    mesh = init_device_mesh("cpu", (world_size,))
    # gloo has an all-to-all: rank r sends its block j to rank j, so the fallback is DTensor's choice
    sent = torch.arange(world_size, dtype=torch.float64) + 10 * rank
    received = torch.empty(world_size, dtype=torch.float64)
    dist.all_to_all_single(received, sent)
    expected = torch.arange(world_size, dtype=torch.float64) * 10 + rank
    gloo_all_to_all = torch.equal(received, expected)
    report = {"local_rows": {v: distribute_tensor(torch.zeros(v, 2), mesh, [Shard(0)]).to_local().shape[0]
                             for v in (1, 3, 5, 7, 10, 12, 13)},
              "gloo_all_to_all": gloo_all_to_all}
    for vocab_size in (12, 10):                              # 12: the same split as ours; 10: not for W = 3, 4
        full, ids, grad_out = table_and_ids(vocab_size)
        ours = VocabParallelEmbedding(vocab_size, D, dtype=torch.float64)
        ours.load_full_weight(full)
        theirs = parallelize_embedding(nn.Embedding.from_pretrained(full.clone(), freeze=False), mesh)
        out, their_out = ours(ids), theirs(ids)
        (out * grad_out).sum().backward()
        (their_out * grad_out).sum().backward()
        start, end = ours.vocab_range
        grad = theirs.weight.grad
        report[vocab_size] = {
            "out_equal": torch.equal(out, their_out),
            "weight_local_rows": theirs.weight.to_local().shape[0],
            "grad_placements": [repr(p) for p in grad.placements],
            "grad_local_shape": tuple(grad.to_local().shape),
            "grad_equal": torch.equal(grad.full_tensor()[start:end], ours.weight.grad),
        }
        sp_ours = VocabParallelEmbedding(vocab_size, D, dtype=torch.float64, sequence_parallel=True)
        sp_ours.load_full_weight(full)
        sp_theirs = parallelize_embedding(nn.Embedding.from_pretrained(full.clone(), freeze=False), mesh,
                                          sequence_parallel=True)
        sp_out, sp_their_out = sp_ours(ids), sp_theirs(ids)
        my_grad = grad_out.chunk(world_size, dim=1)[rank]
        (sp_out * my_grad).sum().backward()
        (sp_their_out * my_grad).sum().backward()
        report[vocab_size]["sp_out_equal"] = torch.equal(sp_out, sp_their_out)
        report[vocab_size]["sp_grad_equal"] = torch.equal(sp_theirs.weight.grad.full_tensor()[start:end],
                                                          sp_ours.weight.grad)
        columns = parallelize_embedding(nn.Embedding.from_pretrained(full.clone(), freeze=False), mesh,
                                        split="columns")
        report[vocab_size]["columns_equal"] = torch.equal(columns(ids), full[ids])
        report[vocab_size]["columns_local_width"] = columns.weight.to_local().shape[1]
        sp_columns = parallelize_embedding(nn.Embedding.from_pretrained(full.clone(), freeze=False), mesh,
                                           split="columns", sequence_parallel=True)
        with CommDebugMode() as forward:
            sp_col_out = sp_columns(ids)                                   # (2, T/W, D): all features
        with CommDebugMode() as backward:
            (sp_col_out * my_grad).sum().backward()
        whole = full.clone().requires_grad_()
        (F.embedding(ids, whole) * grad_out).sum().backward()
        report[vocab_size]["sp_columns_equal"] = torch.equal(sp_col_out, full[ids].chunk(world_size, dim=1)[rank])
        report[vocab_size]["sp_columns_grad_close"] = torch.allclose(sp_columns.weight.grad.full_tensor(),
                                                                     whole.grad, rtol=0, atol=1e-14)
        report[vocab_size]["sp_columns_comms"] = [{str(op): n for op, n in mode.get_comm_counts().items()}
                                                  for mode in (forward, backward)]

    # loss_parallel: the class dimension sharded (DTensor's split), against ours on the same shards
    for vocab_size in (12, 10):
        g = torch.Generator().manual_seed(vocab_size)
        logits = torch.randn(9, vocab_size, generator=g, dtype=torch.float64) * 2
        target = torch.randint(0, vocab_size, (9,), generator=g)
        target[3] = -100
        sharded = distribute_tensor(logits.clone(), mesh, [Shard(1)]).requires_grad_()
        with loss_parallel():
            their_loss = F.cross_entropy(sharded, target)
            their_loss.backward()
        local = sharded.to_local().detach().clone().requires_grad_()
        loss = vocab_parallel_cross_entropy(local, target)
        loss.backward()
        report[f"loss_{vocab_size}"] = {
            "placements": [repr(p) for p in their_loss.placements],
            "loss_close": abs(loss.item() - their_loss.full_tensor().item()) < 1e-14,
            "grad_close": torch.allclose(local.grad, sharded.grad.to_local(), rtol=0, atol=1e-15),
        }
    return report


@pytest.mark.slow
@pytest.mark.parametrize("world_size", [1, 2, 3, 4])
def test_pytorchs_tensor_parallel_api_gives_our_results(world_size):
    reports = run_group(dtensor_checks, world_size, timeout=240)
    for rank, report in enumerate(reports):
        assert report["gloo_all_to_all"], rank                          # gloo itself has an all-to-all
        for vocab_size, rows in report["local_rows"].items():             # what DTensor really does
            start, end = dtensor_shard_ranges(vocab_size, world_size)[rank]
            assert rows == end - start, (vocab_size, world_size, rank)
        for vocab_size in (12, 10):
            r = report[vocab_size]
            assert r["out_equal"] and r["grad_equal"], (world_size, rank, vocab_size, r)
            assert r["sp_out_equal"] and r["sp_grad_equal"], (world_size, rank, vocab_size, r)
            assert r["columns_equal"]
            assert r["sp_columns_equal"] and r["sp_columns_grad_close"], (world_size, rank, vocab_size)
            if world_size > 1:       # DTensor's CPU-mesh fallback for the all-to-all: one all-gather each way
                gather = {"c10d_functional.all_gather_into_tensor": 1}
                assert r["sp_columns_comms"] == [gather, gather], r["sp_columns_comms"]
            start, end = dtensor_shard_ranges(vocab_size, world_size)[rank]
            assert r["weight_local_rows"] == end - start
            if vocab_size == 12:                                           # the same split as ours
                assert shard_ranges(12, world_size) == dtensor_shard_ranges(12, world_size)
            # torch 2.13: the row-split weight's gradient is the whole table, replicated
            assert r["grad_placements"] == ["Replicate()"] and r["grad_local_shape"] == (vocab_size, D)
            assert r["columns_local_width"] == dtensor_shard_ranges(D, world_size)[rank][1] - \
                dtensor_shard_ranges(D, world_size)[rank][0]
            lp = report[f"loss_{vocab_size}"]
            assert lp["placements"] == ["Replicate()"] and lp["loss_close"] and lp["grad_close"], lp


def test_dtensor_splits_like_torch_chunk():
    assert dtensor_shard_ranges(10, 4) == [(0, 3), (3, 6), (6, 9), (9, 10)]
    assert shard_ranges(10, 4) == [(0, 3), (3, 6), (6, 8), (8, 10)]
    for vocab_size in range(1, 30):
        for world_size in range(1, 9):
            sizes = [len(c) for c in torch.arange(vocab_size).chunk(world_size)]
            sizes += [0] * (world_size - len(sizes))                     # chunk gives fewer pieces
            ranges = dtensor_shard_ranges(vocab_size, world_size)
            assert [end - start for start, end in ranges] == sizes
            if vocab_size % world_size == 0 or world_size <= 2:
                assert ranges == shard_ranges(vocab_size, world_size)
