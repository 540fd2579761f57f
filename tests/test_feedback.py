"""tokvec.course.feedback: each diagnosis is given for the mistake it names, and only a right answer passes."""

import math

import numpy as np
import pytest
import torch

from tokvec import Vocabulary
from tokvec.arrays import sinusoidal_table_numpy as table
from tokvec.course import feedback

L, D = 12, 8
REF = table(L, D)


def assert_verdict(fb, expected):
    """Right when ``expected`` is None; otherwise wrong, with ``expected`` in the message."""
    if expected is None:
        assert fb.ok, fb.message
    else:
        assert not fb.ok and expected in fb.message, fb.message


def test_feedback_is_truthy_only_when_right():
    assert feedback.Feedback(True, "x") and not feedback.Feedback(False, "x")
    assert str(feedback.Feedback(False, "m")) == "Not yet: m"


@pytest.mark.parametrize("answer", [REF, REF.tolist(), torch.from_numpy(REF).float()])
def test_right_table_passes_in_any_container(answer):
    fb = feedback.on_sinusoidal_table(answer)
    assert fb.ok and "all 12 positions x 8 columns" in fb.message


def _with(columns, values):
    a = REF.copy()
    a[:, columns] = values
    return a


@pytest.mark.parametrize("answer,expected", [
    (REF.T, "transposed"),
    (table(L + 1, D)[1:], "positions are counted from 1: your table is the reference shifted by one"),
    (_with(np.s_[1::2], 0.0), "all zeros. Was the update discarded"),
    (REF[:, [1, 0, 2, 3, 4, 5, 6, 7]], "Sine and cosine are swapped"),
    (table(L, D, 1000.0), "base 1000 instead of 10000"),
    (_with(np.s_[0:2], np.stack([np.sin(np.arange(L) * 0.1), np.cos(np.arange(L) * 0.1)], 1)),
     "pair 0 must have omega = 1"),
    (np.ones((3,)), "must be 2-D"),
])
def test_table_mistakes_are_named(answer, expected):
    fb = feedback.on_sinusoidal_table(answer)
    assert not fb.ok and expected in fb.message, fb.message


def test_positions_from_1_name_the_range_to_use():
    fb = feedback.on_sinusoidal_table(table(L + 1, D)[1:])
    assert not fb.ok and "range(12), not range(1, 13)" in fb.message


@pytest.mark.parametrize("answer", [
    REF,                                        # right: passes before any diagnosis
    table(L + 2, D)[2:],                        # shifted by two, not one
    table(L + 1, D, 1000.0)[1:],                # shifted by one, but also the wrong base
    table(L, D, 1000.0),
    REF[:, [1, 0, 2, 3, 4, 5, 6, 7]],
    _with(np.s_[1::2], 0.0),
])
def test_only_a_shift_by_one_is_called_positions_from_1(answer):
    assert "counted from 1" not in feedback.on_sinusoidal_table(answer).message


def test_table_feedback_names_matching_positions_and_the_column():
    a = REF.copy()
    a[6:, 3] += 0.5
    fb = feedback.on_sinusoidal_table(a)
    assert not fb.ok
    assert "positions 0-5 (of 0-11)" in fb.message and "column 3 (cos of pair i = 1)" in fb.message
    assert "from position 6" in fb.message and "0.5" in fb.message


W = np.random.default_rng(0).normal(size=(20, D))
IDS = np.array([[1, 2, 3], [4, 5, 19]])
RIGHT = W[IDS] * math.sqrt(D) + table(3, D)


@pytest.mark.parametrize("answer,expected", [
    (RIGHT, None),
    (W[IDS] + table(3, D), "not scaled"),
    (W[IDS] * math.sqrt(D), "positional table is missing"),
    (W[IDS] * math.sqrt(D) + table(4, D)[1:], "shifted by one"),
    ((W[IDS] + table(3, D)) * math.sqrt(D), "positions were scaled too"),
    (RIGHT.reshape(6, D), "expected (2, 3, 8)"),
])
def test_embedding_output_mistakes_are_named(answer, expected):
    assert_verdict(feedback.on_embedding_output(answer, IDS, W), expected)


def test_embedding_output_reports_where_it_differs():
    wrong = RIGHT.copy()
    wrong[1, 2] += 1.0
    fb = feedback.on_embedding_output(torch.from_numpy(wrong), torch.from_numpy(IDS), W)
    assert not fb.ok and "1 of 6 token vectors differ, first at index [(1, 2)]" in fb.message


VOCAB = Vocabulary.from_corpus(["the", "cat", "sat", "on", "the", "mat"])
TOKENS = ["the", "cat", "sat", "on", "the", "dog"]


@pytest.mark.parametrize("answer,expected", [
    (VOCAB.encode(TOKENS), None),
    ([i + 1 for i in VOCAB.encode(TOKENS)], "one too large"),
    (list(range(6)), "enumerate"),
    (VOCAB.encode(TOKENS)[:5] + [99], "not in the vocabulary"),
    (VOCAB.encode(TOKENS)[:4], "4 ids for 6 tokens"),
])
def test_encoded_ids_mistakes_are_named(answer, expected):
    assert_verdict(feedback.on_encoded_ids(answer, TOKENS, VOCAB), expected)
