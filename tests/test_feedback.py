"""tokvec.course.feedback: each diagnosis is given for the mistake it names, and only a right answer passes."""

import math
import re

import numpy as np
import pytest
import torch

from tokvec import Vocabulary
from tokvec.arrays import sinusoidal_table_numpy as table
from tokvec.course import feedback
from tokvec.tutorials.tutorial_003 import generate_positional_embedding_matrix

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


def _element_index(length, d, base=10000.0):
    """The element index j in the exponent: column j uses base^(-j/d), sin for even j, cos for odd."""
    angle = np.arange(length)[:, None] * base ** (-np.arange(d) / d)
    return np.where(np.arange(d) % 2 == 0, np.sin(angle), np.cos(angle))


def _float32_recipe(length, d, *, power=False):
    """The usual PyTorch recipe, every step in float32 (positions, frequencies, angles)."""
    position = torch.arange(length).unsqueeze(1).float()
    if power:
        omega = 10000.0 ** (-torch.arange(0, d, 2).float() / d)
    else:
        omega = torch.exp(torch.arange(0, d, 2).float() * (-math.log(10000.0) / d))
    pe = torch.zeros(length, d)
    pe[:, 0::2], pe[:, 1::2] = torch.sin(position * omega), torch.cos(position * omega)
    return pe


@pytest.mark.parametrize("answer,expected", [
    (_element_index(L, D), "the exponent uses the element index j instead of the pair index 2i"),
    (torch.from_numpy(_element_index(64, 16)).float(), "sine and cosine of a pair have different frequencies"),
    # the walkthrough's own code: element index, and base l_max
    (np.array([generate_positional_embedding_matrix(10, 5)[t] for t in range(5)]), "also uses base 5 instead"),
])
def test_element_index_exponent_is_named(answer, expected):
    fb = feedback.on_sinusoidal_table(answer)
    assert not fb.ok and expected in fb.message and "pair 0 must have omega = 1" not in fb.message, fb.message


def test_walkthrough_with_its_own_base_names_only_the_exponent():
    fb = feedback.on_sinusoidal_table(np.array([generate_positional_embedding_matrix(10, 5)[t] for t in range(5)]),
                                      base=5)
    assert not fb.ok and "element index j" in fb.message and "also uses base" not in fb.message, fb.message


@pytest.mark.parametrize("answer", [_float32_recipe(2048, 512), _float32_recipe(2048, 512, power=True),
                                    _float32_recipe(2048, 512).numpy()])
def test_float32_table_at_2048_x_512_passes_and_says_float32_was_tolerated(answer):
    fb = feedback.on_sinusoidal_table(answer)
    assert fb.ok and "within float32 rounding" in fb.message, fb.message
    where = int(re.search(r"at position (\d+)", fb.message).group(1))
    assert where >= 1024                                   # the error grows with t: it peaks late


def test_float32_table_rounded_once_needs_no_tolerance():
    fb = feedback.on_sinusoidal_table(table(2048, 512, dtype=np.float32))
    assert fb.ok and "to 1e-06" in fb.message and "float32" not in fb.message


def test_float32_tolerance_is_not_granted_to_float64_or_lists():
    pe = _float32_recipe(2048, 64).double()
    for answer in (pe, pe.numpy(), pe.numpy().tolist()):
        assert not feedback.on_sinusoidal_table(answer)


@pytest.mark.parametrize("answer,expected", [
    (table(512, 64, 1000.0), "base 1000 instead of 10000"),
    (table(513, 64)[1:], "positions are counted from 1"),
    (_element_index(512, 64), "element index j instead of the pair index 2i"),
    (np.where(np.arange(64) % 2 == 1, 0.0, table(512, 64)), "Was the update discarded"),
])
def test_float32_mistakes_are_still_named(answer, expected):
    fb = feedback.on_sinusoidal_table(torch.from_numpy(answer).float())
    assert not fb.ok and expected in fb.message, fb.message


def _tensor2tensor(length, d, base=10000.0):
    """tensor2tensor's get_timing_signal_1d, transcribed: [sin | cos], d//2 timescales, zero pad if d is odd."""
    num_timescales = d // 2
    log_timescale_increment = math.log(base) / (num_timescales - 1)
    inv_timescales = np.exp(np.arange(num_timescales) * -log_timescale_increment)
    scaled_time = np.arange(length)[:, None] * inv_timescales[None, :]
    signal = np.concatenate([np.sin(scaled_time), np.cos(scaled_time)], axis=1)
    return np.pad(signal, [[0, 0], [0, d % 2]])


def _fairseq(length, d, padding_idx):
    """fairseq's SinusoidalPositionalEmbedding.get_embedding, as Hugging Face's FSMT port keeps it."""
    from transformers.models.fsmt.modeling_fsmt import SinusoidalPositionalEmbedding
    return SinusoidalPositionalEmbedding.get_embedding(length, d, padding_idx)


def _marian(length, d):
    from transformers.models.marian.modeling_marian import MarianSinusoidalPositionalEmbedding
    return MarianSinusoidalPositionalEmbedding(length, d).create_weight()


@pytest.mark.parametrize("d", [8, 9, 64])
def test_released_layouts_are_named_as_conventions_not_bugs(d):
    """tensor2tensor/fairseq and Marian build [sin | cos] tables; the feedback names each, and no bug."""
    for answer in (_tensor2tensor(32, d), _fairseq(32, d, None)):
        fb = feedback.on_sinusoidal_table(answer)
        assert not fb.ok and "tensor2tensor's get_timing_signal_1d and fairseq's" in fb.message, fb.message
        assert ("zero last column" in fb.message) == (d % 2 == 1)
        assert "discarded" not in fb.message and "wrong" not in fb.message
    fb = feedback.on_sinusoidal_table(_fairseq(32, d, 1))         # padding_idx = 1: row 1 zeroed
    assert not fb.ok and "Row 1 is zeros, as in fairseq" in fb.message and "reads row 2" in fb.message, fb.message
    fb = feedback.on_sinusoidal_table(_marian(32, d))
    assert not fb.ok and "Marian" in fb.message and "discarded" not in fb.message, fb.message


def test_tensor2tensor_layout_reaches_2_pi_base_and_the_formula_does_not():
    """What the message says about the slowest wavelength, checked on the tables themselves."""
    d = 64
    t2t_slowest = 2 * math.pi * 10000.0 ** ((d // 2 - 1) / (d // 2 - 1))
    formula_slowest = 2 * math.pi * 10000.0 ** ((d - 2) / d)
    assert math.isclose(t2t_slowest, 2 * math.pi * 10000) and formula_slowest < 0.76 * t2t_slowest
    # the last sine column of each table is sin(t * 2 pi / slowest wavelength)
    t = np.arange(40)
    assert np.allclose(_tensor2tensor(40, d)[:, d // 2 - 1], np.sin(t * 2 * math.pi / t2t_slowest))
    assert np.allclose(table(40, d)[:, d - 2], np.sin(t * 2 * math.pi / formula_slowest))


@pytest.mark.parametrize("rest", [table(L, 4), table(L, 5)[:, :4]])
def test_zero_last_column_for_odd_d_is_the_padding_convention_not_a_discarded_update(rest):
    answer = np.concatenate([rest, np.zeros((L, 1))], axis=1)      # d = 5, last column zero
    fb = feedback.on_sinusoidal_table(answer)
    assert not fb.ok and "zero-padding convention for an odd d_model" in fb.message, fb.message
    assert "Was the update discarded" not in fb.message


def test_zero_last_column_for_even_d_is_still_a_discarded_update():
    fb = feedback.on_sinusoidal_table(_with(np.s_[D - 1], 0.0))
    assert not fb.ok and "Was the update discarded" in fb.message and "zero-padding" not in fb.message


def test_a_table_of_zeros_is_a_discarded_update_whatever_d():
    for d in (4, 5):
        fb = feedback.on_sinusoidal_table(np.zeros((L, d)))
        assert not fb.ok and "(so is the whole table). Was the update discarded" in fb.message, fb.message


def test_positions_from_1_are_named_as_phuong_and_hutter_numbering():
    fb = feedback.on_sinusoidal_table(table(L + 1, D)[1:])
    assert not fb.ok and "Phuong and Hutter's numbering" in fb.message and "trained 0-based" in fb.message


def test_table_it_cannot_diagnose_gets_the_generic_message():
    a = REF.copy()
    a[4, 5] = 0.3                                           # one stray entry
    fb = feedback.on_sinusoidal_table(a)
    assert not fb.ok and "the largest difference from the reference is" in fb.message, fb.message
    noise = np.random.default_rng(1).uniform(-1, 1, size=(L, D))
    fb = feedback.on_sinusoidal_table(noise)
    assert not fb.ok and str(fb).startswith("Not yet: no position matches the reference"), fb.message


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


PAPER_W = W.T                                   # (d, N_V) = (8, 20), the paper's W_e


@pytest.mark.parametrize("answer,ids,weight", [
    (RIGHT, IDS, W),
    (torch.from_numpy(RIGHT).float(), torch.from_numpy(IDS), torch.from_numpy(W).float()),
    (RIGHT[0], IDS[0], W),                               # one sequence, (T,)
    (RIGHT.tolist(), IDS.tolist(), W.tolist()),
])
def test_right_embedding_output_passes_in_any_container(answer, ids, weight):
    fb = feedback.on_embedding_output(answer, ids, weight)
    assert fb.ok and "matches weight[ids] * 2.828 + PE[:T]" in fb.message, fb.message


@pytest.mark.parametrize("answer,ids", [(RIGHT, IDS), (RIGHT[:, :2], IDS[:, :2] % 8),
                                        (W[:1] * math.sqrt(D) + table(1, D), np.array([0]))])
def test_right_output_with_a_paper_layout_weight_passes_with_a_note(answer, ids):
    fb = feedback.on_embedding_output(answer, ids, PAPER_W)
    assert fb.ok and "weight.T[ids]" in fb.message and "the paper's layout" in fb.message, fb.message


@pytest.mark.parametrize("answer,expected", [
    (W[IDS] + table(3, D), "not scaled"),
    (PAPER_W[:, IDS], "expected (2, 3, 8)"),
    (RIGHT + 1.0, "6 of 6 token vectors differ"),
])
def test_paper_layout_weight_is_named_not_an_index_error(answer, expected):
    fb = feedback.on_embedding_output(answer, IDS, PAPER_W)
    assert not fb.ok and "d x N_V = (8, 20), the paper's layout" in fb.message, fb.message
    assert "take column v" in fb.message and expected in fb.message, fb.message


@pytest.mark.parametrize("ids,weight,table_,expected", [
    (IDS, W[:10], None, "has only 10 rows"),
    (IDS, W[0], None, "weight must be 2-D"),
    (IDS * 1.0, W, None, "ids must be a non-empty array of integers"),
    (-IDS, W, None, "negative id"),
    (IDS, W, table(3, D).T, "the paper's W_p"),
    (IDS, W, table(2, D), "has 2 rows"),
    (IDS, W, table(5, 4), "has 4 columns"),
    (IDS, W, np.zeros(3), "must be 2-D"),
])
def test_wrong_shapes_get_a_message_not_an_error(ids, weight, table_, expected):
    assert_verdict(feedback.on_embedding_output(RIGHT, ids, weight, table=table_), expected)


def test_embedding_output_it_cannot_diagnose_gets_the_generic_message():
    noise = np.random.default_rng(2).normal(size=RIGHT.shape)
    fb = feedback.on_embedding_output(noise, IDS, W)
    assert not fb.ok and "6 of 6 token vectors differ, first at index" in fb.message, fb.message


# chapter 2's exercise: the embeddings lesson's recipe on "the cat saw the dog"
TOKENS = ["the", "cat", "saw", "the", "dog"]
FIXED = Vocabulary(dict.fromkeys(TOKENS), specials=(), unk_token=None)     # the chapter's fix
CORPUS = Vocabulary.from_corpus(TOKENS)                                    # specials first, by frequency
LESSON = [{t: i for i, t in enumerate(TOKENS)}[t] for t in TOKENS]           # [3, 1, 2, 3, 4]
SMALL = Vocabulary.from_corpus(["the", "cat"])                             # lacks "saw" and "dog"


@pytest.mark.parametrize("answer,vocab", [
    ([0, 1, 2, 0, 3], FIXED),
    (CORPUS.encode(TOKENS), CORPUS),
    (CORPUS.encode(TOKENS), FIXED),             # a fix built with Vocabulary.from_corpus, checked against FIXED
    ([3, 0, 1, 3, 2], FIXED),                   # sorted(set(tokens)): any numbering of the distinct tokens
    (np.array([0, 1, 2, 0, 3]), None),
    (torch.tensor([0, 1, 2, 0, 3]), CORPUS),
    (Vocabulary.from_corpus(TOKENS + ["zebra"]).encode(TOKENS), Vocabulary.from_corpus(TOKENS + ["zebra"])),
])
def test_right_ids_pass_whatever_vocabulary_made_them(answer, vocab):
    assert_verdict(feedback.on_encoded_ids(answer, TOKENS, vocab), None)


@pytest.mark.parametrize("answer,vocab,expected", [
    (LESSON, FIXED, "the enumerate recipe's ids"),
    (LESSON, CORPUS, "later position winning ('the' gets 3). So id 0 is never used"),
    (LESSON, {t: i for i, t in enumerate(TOKENS)}, "past the last row of a table of the 4 distinct tokens"),
    (list(range(5)), FIXED, "positions 0, 1, 2, ... in this sentence (enumerate)"),
    ([1, 2, 3, 1, 4], FIXED, "one too large"),
    ([i + 1 for i in CORPUS.encode(TOKENS)], CORPUS, "one too large"),
    (SMALL.encode(TOKENS), SMALL, "your vocabulary lacks 'saw', 'dog', so they become <unk> (id 1)"),
    ([0, 1, 2, 5, 3], FIXED, "'the' has ids [0, 5]"),
    ([0, 1, 1, 0, 2], FIXED, "tokens 'cat', 'saw' share id 1"),
    ([0, 1], FIXED, "2 ids for 5 tokens"),
    ([0.0, 1, 2, 0, 3], FIXED, "ids must be integers"),
])
def test_encoded_ids_mistakes_are_named(answer, vocab, expected):
    assert_verdict(feedback.on_encoded_ids(answer, TOKENS, vocab), expected)


def test_vocab_encode_with_a_wrong_vocabulary_is_not_correct():
    for vocab in (SMALL, Vocabulary.from_corpus(["the", "cat", "saw"]), Vocabulary.from_corpus(["a", "b"])):
        fb = feedback.on_encoded_ids(vocab.encode(TOKENS), TOKENS, vocab)
        assert not fb.ok and "your vocabulary lacks" in fb.message, fb.message


@pytest.mark.parametrize("answer", [[[0, 1], [0, 1, 0]], [[0, 1], [2, 1, 2]], [[0, 1], [0, 1, 2]]])
def test_ids_numbered_per_sentence_are_named(answer):
    fb = feedback.on_encoded_ids(answer, [["the", "cat"], ["dog", "the", "dog"]], None)
    assert not fb.ok and "ids numbered per sentence" in fb.message and "different sentences" in fb.message, fb.message


def test_ids_for_several_sentences_pass_when_numbered_once():
    assert feedback.on_encoded_ids([[0, 1], [2, 0, 2]], [["the", "cat"], ["dog", "the", "dog"]], None)


@pytest.mark.parametrize("vocab,against", [(FIXED, "in your vocabulary"), (SMALL, "in order of appearance")])
def test_ids_it_cannot_diagnose_get_the_first_mismatch(vocab, against):
    fb = feedback.on_encoded_ids([0, 1, 2, 0, 7], TOKENS, vocab)
    assert not fb.ok and "ids 0-3 match; token 4 ('dog') has id 3" in fb.message and against in fb.message, fb.message
    assert str(fb).startswith("Not yet: ")


def test_tokens_spelled_like_specials_are_judged_not_refused():
    """The checker encodes with allow_specials=True: its job is to compare ids, not to police text."""
    tokens = ["the", "<eos>", "the"]
    assert feedback.on_encoded_ids([0, 1, 0], tokens)
    vocab = Vocabulary.from_corpus(tokens)
    assert feedback.on_encoded_ids(vocab.encode(tokens, allow_specials=True), tokens, vocab)
