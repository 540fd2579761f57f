"""tokvec.windows: documents joined into one stream, cut into windows of next-token inputs and targets.

Checked against a plain loop (the definition, written the slow way), on fixed cases and on random
streams (Hypothesis); then the Dataset under a DataLoader, and the errors for bad input (the sweep
of every public function is in tests/test_bad_input.py).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.utils.data import DataLoader

from tokvec.windows import WindowDataset, join_documents, windows


def loop_windows(ids, T, stride):
    """The definition: start at 0, take T inputs and the T ids after each, step by stride."""
    out, s = [], 0
    while s + T + 1 <= len(ids):
        inputs, targets = [], []
        for t in range(T):
            inputs.append(ids[s + t])
            targets.append(ids[s + t + 1])
        out.append((inputs, targets))
        s += stride
    return out


# --- windows and WindowDataset ------------------------------------------------------------------

def test_windows_on_a_small_stream():
    assert windows(list(range(10)), 3, 2) == [
        ([0, 1, 2], [1, 2, 3]), ([2, 3, 4], [3, 4, 5]), ([4, 5, 6], [5, 6, 7]), ([6, 7, 8], [7, 8, 9])]
    assert windows([5, 6, 7], 2, 1) == [([5, 6], [6, 7])]            # exactly one window fits


def test_the_tail_is_dropped_never_padded():
    # 11 ids, T = 3, stride 3: windows start at 0, 3, 6; the last target is id 9; id 10 is the tail
    got = windows(list(range(11)), 3, 3)
    assert [w[0][0] for w in got] == [0, 3, 6] and got[-1][1] == [7, 8, 9]
    ds = WindowDataset(list(range(11)), 3, 3)
    assert ds.tail == 1 and len(ds) == 3
    assert WindowDataset(list(range(10)), 3, 3).tail == 0


def test_count_formula_and_targets_shifted_by_one():
    ids = list(range(100, 200))
    for T in (1, 4, 7, 99):
        for stride in (1, 2, T, min(T + 3, 100), 100):
            got = windows(ids, T, stride)
            assert len(got) == (len(ids) - T - 1) // stride + 1
            assert all(inputs[1:] == targets[:-1] and len(inputs) == len(targets) == T
                       for inputs, targets in got)


def test_stride_above_the_window_leaves_gaps_that_are_never_predicted():
    got = windows(list(range(20)), 3, 5)             # windows 0..3, 5..8, 10..13, 15..18
    predicted = {t for _, targets in got for t in targets}
    assert predicted == {1, 2, 3, 6, 7, 8, 11, 12, 13, 16, 17, 18}


def test_dataset_items_are_the_windows_as_long_tensors():
    ids = [7, 3, 9, 1, 4, 4, 8, 0, 2]
    ds = WindowDataset(ids, 4, 2)
    assert len(ds) == len(windows(ids, 4, 2))
    for k, (inputs, targets) in enumerate(windows(ids, 4, 2)):
        x, y = ds[k]
        assert x.dtype == y.dtype == torch.long and x.shape == y.shape == (4,)
        assert x.tolist() == inputs and y.tolist() == targets
    assert list(ds.starts) == [0, 2, 4]
    assert "3 windows" in repr(ds)


def test_dataset_copies_its_input_and_its_items():
    ids = torch.arange(12)
    ds = WindowDataset(ids, 4, 4)
    ids[0] = 99                                       # the caller's tensor changes...
    x, _ = ds[0]
    assert x[0] == 0                                  # ...the dataset does not
    x[1] = 99                                         # nor does changing an item change it
    assert ds[0][0][1] == 1


@pytest.mark.parametrize("make", [list, tuple, torch.tensor, np.array,
                                  lambda v: torch.tensor(v, dtype=torch.int32),
                                  lambda v: np.array(v, dtype=np.uint16)])
def test_every_kind_of_stream_gives_the_same_windows(make):
    ids = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3]
    assert windows(make(ids), 3, 2) == windows(ids, 3, 2)
    assert torch.equal(WindowDataset(make(ids), 3, 2)[1][0], torch.tensor([4, 1, 5]))


def test_a_tensor_or_array_is_checked_and_copied_without_a_python_loop():
    ids = list(range(40, 0, -1))
    expected = windows(ids, 5, 3)
    largest = [2**63 - 1, 0, 7]                       # the largest id int64 holds is accepted
    for stream in (torch.tensor(ids)[::1], torch.tensor([[i, -1] for i in ids])[:, 0], np.array(ids[::-1])[::-1],
                   np.array(ids, dtype=np.uint64), torch.tensor(ids, dtype=torch.int16)):
        assert windows(stream, 5, 3) == expected
        ds = WindowDataset(stream, 5, 3)
        assert ds.ids.dtype == torch.long and [(x.tolist(), y.tolist()) for x, y in ds] == expected
    assert WindowDataset(np.array(largest, dtype=np.uint64), 1, 1).ids.tolist() == largest
    assert WindowDataset(largest, 1, 1).ids.tolist() == largest

    class NoLoop(torch.Tensor):                       # a tensor that refuses to be read id by id
        def __iter__(self):
            raise AssertionError("iterated in Python")

        def tolist(self):
            raise AssertionError("converted to a list")

    stream = torch.arange(1000).as_subclass(NoLoop)
    assert len(WindowDataset(stream, 8, 8)) == (1000 - 9) // 8 + 1


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 50_000), min_size=2, max_size=80), st.data())
def test_windows_and_the_dataset_match_the_plain_loop(ids, data):
    T = data.draw(st.integers(1, len(ids) - 1), label="T")
    stride = data.draw(st.integers(1, len(ids)), label="stride")
    expected = loop_windows(ids, T, stride)
    assert windows(ids, T, stride) == expected
    ds = WindowDataset(ids, T, stride)
    assert [(x.tolist(), y.tolist()) for x, y in (ds[k] for k in range(len(ds)))] == expected
    # the tail: the ids after the last target, fewer than the stride
    assert ds.tail == len(ids) - (ds.starts[-1] + T + 1) and 0 <= ds.tail < stride


# --- DataLoader ---------------------------------------------------------------------------------

@pytest.mark.parametrize("drop_last", [True, False])
def test_dataloader_batches_have_shape_b_t(drop_last):
    ds = WindowDataset(list(range(103)), 8, 4)       # (103 - 9) // 4 + 1 = 24 windows
    assert len(ds) == 24
    loader = DataLoader(ds, batch_size=5, shuffle=True, drop_last=drop_last,
                        generator=torch.Generator().manual_seed(0))
    shapes = [(tuple(x.shape), tuple(y.shape)) for x, y in loader]
    full = [((5, 8), (5, 8))] * 4
    assert shapes == (full if drop_last else full + [((4, 8), (4, 8))])
    for x, y in loader:
        assert torch.equal(x[:, 1:], y[:, :-1])       # shifted by one, row by row
        assert torch.equal(y - x, torch.ones_like(x))  # (ids are 0, 1, 2, ...: target = input + 1)


def test_a_seeded_generator_makes_the_shuffle_reproducible():
    ds = WindowDataset(list(range(200)), 4, 4)

    def first_batch(seed):
        loader = DataLoader(ds, batch_size=6, shuffle=True, drop_last=True,
                            generator=torch.Generator().manual_seed(seed))
        return next(iter(loader))[0]

    assert torch.equal(first_batch(0), first_batch(0))
    assert not torch.equal(first_batch(0), first_batch(1))
    seen = torch.cat([x[:, 0] for x, _ in DataLoader(ds, batch_size=7, shuffle=True, drop_last=False)])
    assert sorted(seen.tolist()) == list(ds.starts)   # an epoch serves every window once


# --- join_documents -----------------------------------------------------------------------------

def test_join_documents_puts_the_id_between_documents_only():
    assert join_documents([[1, 2], [3], [4, 5]], 0) == [1, 2, 0, 3, 0, 4, 5]
    assert join_documents([[1, 2]], 9) == [1, 2]
    assert join_documents([[1], [], [2]], 9) == [1, 9, 9, 2]       # an empty document
    assert join_documents([torch.tensor([1, 2]), (3,)], 7) == [1, 2, 7, 3]


def test_join_documents_matches_gpt2_on_the_joined_text():
    bytebpe = pytest.importorskip("tokvec.bytebpe")
    try:
        gpt2 = bytebpe.published("gpt2")
    except ModuleNotFoundError as err:
        pytest.skip(str(err))
    texts = ["The cat sat.", "A dog barked!", " Leading space and 12 digits."]
    eot = gpt2.encode("<|endoftext|>")
    assert eot == [50256]
    assert join_documents([gpt2.encode(t) for t in texts], 50256) == gpt2.encode("<|endoftext|>".join(texts))


# --- bad input ----------------------------------------------------------------------------------

@pytest.mark.parametrize("ids, T, stride, error, pattern", [
    ([], 1, 1, ValueError, r"ids is empty"),
    ([4], 1, 1, ValueError, r"at least 2"),
    ([1, 2, 3], 3, 1, ValueError, r"context_length = 3 needs 3 \+ 1 ids.*1\.\.2"),
    ([1, 2, 3], 1, 4, ValueError, r"stride = 4 is larger than the stream of 3 ids.*1\.\.3"),
    ([1, 2, 3], 1, 0, ValueError, r"stride must be an int >= 1, got 0.*1\.\.3"),
    ([1, 2, 3], 1, -2, ValueError, r"stride.*-2"),
    ([1, 2, 3], 0, 1, ValueError, r"context_length.*got 0.*1\.\.2"),
    ([1, 2, 3], 1, 1.0, TypeError, r"stride.*float"),
    ([1, 2, 3], True, 1, TypeError, r"context_length.*bool"),
    ([1, 2.0, 3], 1, 1, TypeError, r"ids\[1\] must be an int.*float"),
    ([1, True, 3], 1, 1, TypeError, r"ids\[1\] must be an int.*bool"),
    ([1, "2", 3], 1, 1, TypeError, r"ids\[1\].*str"),
    ([1, 2, -3], 1, 1, ValueError, r"ids\[2\] = -3 is not a token id"),
    ("the cat", 1, 1, TypeError, r"ids must be a list.*encode"),
    (None, 1, 1, TypeError, r"ids must be a list"),
    (torch.zeros(2, 3, dtype=torch.long), 1, 1, ValueError, r"1-D.*\(2, 3\)"),
    (torch.tensor(5), 1, 1, ValueError, r"1-D.*\(\)"),
    (torch.tensor([1.0, 2.0]), 1, 1, TypeError, r"integer.*float32"),
    (torch.tensor([True, False]), 1, 1, TypeError, r"integer.*bool"),
    (np.array([1.5, 2.5]), 1, 1, TypeError, r"integer.*float64"),
    (torch.tensor([1, -1, 2]), 1, 1, ValueError, r"ids\[1\] = -1"),
    (np.array([4, 2, -7]), 1, 1, ValueError, r"ids\[2\] = -7 is not a token id"),
    # ids are stored as int64: 2**63 and more is a clear error, not an OverflowError from torch
    ([1, 2**63, 3], 1, 1, ValueError, r"ids\[1\] = about 10\^18 is too large.*2\*\*63"),
    ([1, 10**400], 1, 1, ValueError, r"ids\[1\] = about 10\^400 is too large"),
    (np.array([1, 2, 2**64 - 1], dtype=np.uint64), 1, 1, ValueError, r"ids\[2\] = about 10\^19 is too large"),
    (torch.from_numpy(np.array([1, 2**63], dtype=np.uint64)), 1, 1, ValueError, r"ids\[1\].*too large"),
    (torch.tensor([], dtype=torch.long), 1, 1, ValueError, r"ids is empty"),
])
def test_bad_input_is_a_clear_error(ids, T, stride, error, pattern):
    for call in (windows, WindowDataset):
        with pytest.raises(error, match=pattern):
            call(ids, T, stride)


def test_a_bad_window_index_names_the_valid_range():
    ds = WindowDataset(list(range(10)), 3, 3)
    for bad, error in ((3, IndexError), (-1, IndexError), (1.0, TypeError), (True, TypeError)):
        with pytest.raises(error, match=r"window index.*0\.\.2"):
            ds[bad]


@pytest.mark.parametrize("docs, eot, error, pattern", [
    ([], 0, ValueError, r"docs_ids is empty"),
    ([1, 2], 0, TypeError, r"docs_ids\[0\] is the int 1.*\[ids\]"),
    ("ab", 0, TypeError, r"docs_ids must be a list"),
    ([[1], [2.5]], 0, TypeError, r"docs_ids\[1\] \(a document\)\[0\] must be an int"),
    ([[1], [-4]], 0, ValueError, r"docs_ids\[1\] \(a document\)\[0\] = -4"),
    ([torch.zeros(2, 2, dtype=torch.long)], 0, ValueError, r"docs_ids\[0\].*1-D"),
    ([[1]], -1, ValueError, r"eot_id = -1.*50256"),
    ([[1]], True, TypeError, r"eot_id.*bool"),
    ([[1]], "50256", TypeError, r"eot_id.*str"),
])
def test_join_documents_refuses_bad_input(docs, eot, error, pattern):
    with pytest.raises(error, match=pattern):
        join_documents(docs, eot)
