"""Tests of tokvec.reference: Algorithms 1 and 2 in pure Python, and the sinusoidal W_p."""

import math

import mpmath
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tokvec.reference import (
    column,
    embed,
    frequencies,
    matvec,
    one_hot,
    paper_positions,
    positional_embedding,
    random_matrix,
    shape,
    sinusoidal_positions,
    token_embedding,
    transpose,
)
from tokvec.tutorials.tutorial_003 import generate_positional_embedding_matrix

dims = st.integers(min_value=1, max_value=9)
finite = st.floats(min_value=-10, max_value=10, allow_nan=False)


@st.composite
def matrices(draw, rows=dims, cols=dims):
    r, c = draw(rows), draw(cols)
    return [[draw(finite) for _ in range(c)] for _ in range(r)]


# --- Algorithm 1 ------------------------------------------------------------------------------

def test_token_embedding_returns_a_column():
    W_e = [[1, 2, 3],
           [4, 5, 6]]  # d_e = 2, N_V = 3
    assert token_embedding(0, W_e) == [1, 4]
    assert token_embedding(2, W_e) == [3, 6]


@given(matrices(), st.data())
def test_token_embedding_equals_one_hot_times_matrix(W_e, data):
    d_e, N_V = shape(W_e)
    v = data.draw(st.integers(0, N_V - 1))
    assert token_embedding(v, W_e) == matvec(W_e, one_hot(v, N_V))


@given(matrices(), st.data())
def test_paper_columns_are_pytorch_rows(W_e, data):
    v = data.draw(st.integers(0, shape(W_e)[1] - 1))
    assert token_embedding(v, W_e) == transpose(W_e)[v]


def test_walkthrough_token_embedding_outputs():
    # The Phuong and Hutter walkthrough stores W_e as {id: [id] * d}: rows per token. Our W_e is its transpose.
    walkthrough_matrix = {i: [i] * 10 for i in range(3)}
    W_e = transpose([walkthrough_matrix[i] for i in range(3)])
    assert token_embedding(1, W_e) == [1] * 10
    assert [token_embedding(v, W_e) for v in [0, 1, 2]] == [[0] * 10, [1] * 10, [2] * 10]


# --- Algorithm 2 and embed -----------------------------------------------------------------------

# The embeddings lesson's printed positional encodings, seq_len = 6, d_model = 4 (PyTorch float32, 4 decimals).
LESSON_TABLE = [
    [0.0000, 1.0000, 0.0000, 1.0000],
    [0.8415, 0.5403, 0.0100, 0.9999],
    [0.9093, -0.4161, 0.0200, 0.9998],
    [0.1411, -0.9900, 0.0300, 0.9996],
    [-0.7568, -0.6536, 0.0400, 0.9992],
    [-0.9589, 0.2837, 0.0500, 0.9988],
]


def test_reproduces_the_lessons_positional_table():
    W_p = sinusoidal_positions(4, 6)
    for t, printed in enumerate(LESSON_TABLE):
        # half a unit of the 4th decimal, plus float32 rounding (cos(0.01) = 0.99995 prints as 0.9999)
        assert positional_embedding(t, W_p) == pytest.approx(printed, abs=5.1e-5)


WALKTHROUGH_POS_ROW_1 = [0.8414709848078965, 0.6589758961876738, 0.66297050495782, 0.8155983039494298,
                      0.5014773904169323, 0.9016555951500453, 0.3715990270406081, 0.9479277461957519,
                      0.2724572044052023, 0.9725320837941663]
WALKTHROUGH_EMBED_ROW_2 = [2.909297426825682, 1.8684984635126958, 2.9926597923765996, 2.3304011868103727,
                        2.8677271400921645, 2.6259656245307648, 2.689980111440428, 2.7971340240155156,
                        2.524299153531099, 2.891637308018047]


def test_walkthrough_printed_table_is_its_own_buggy_formula_not_the_paper():
    walkthrough_table = generate_positional_embedding_matrix(10, 5)
    assert walkthrough_table[1] == WALKTHROUGH_POS_ROW_1  # the walkthrough's code does print these numbers
    paper = column(paper_positions(10, 5), 1)
    assert paper[0] == pytest.approx(math.sin(1 / 5 ** 0.2))
    assert paper != pytest.approx(WALKTHROUGH_POS_ROW_1)  # ... which are not the paper's formula


def test_walkthrough_embed_outputs_on_its_own_inputs():
    walkthrough_table = generate_positional_embedding_matrix(10, 5)
    W_e = transpose([[i] * 10 for i in range(3)])
    W_p = transpose([walkthrough_table[t] for t in range(5)])
    e = embed([0, 1, 2], W_e, W_p)
    assert e[0] == [0.0, 1.0] * 5
    assert e[2] == WALKTHROUGH_EMBED_ROW_2


@given(matrices(), st.data())
def test_embed_is_the_sum_of_algorithms_1_and_2(W_e, data):
    d_e, N_V = shape(W_e)
    l_max = data.draw(st.integers(1, 8))
    W_p = random_matrix(d_e, l_max, seed=data.draw(st.integers(0, 99)))
    x = data.draw(st.lists(st.integers(0, N_V - 1), max_size=l_max))
    e = embed(x, W_e, W_p)
    assert len(e) == len(x)
    for t, v in enumerate(x):
        assert e[t] == [a + b for a, b in zip(token_embedding(v, W_e), positional_embedding(t, W_p))]


def test_random_matrix_is_seeded_and_shaped():
    assert random_matrix(3, 5, seed=0) == random_matrix(3, 5, seed=0)
    assert random_matrix(3, 5, seed=0) != random_matrix(3, 5, seed=1)
    assert shape(random_matrix(3, 5, seed=0)) == (3, 5)


# --- the sinusoidal table ------------------------------------------------------------------------

@given(st.integers(1, 24), st.integers(1, 40))
def test_sinusoid_values_in_range_and_pairs_on_the_unit_circle(d_e, l_max):
    W_p = sinusoidal_positions(d_e, l_max)
    assert shape(W_p) == (d_e, l_max)
    assert all(-1.0 <= value <= 1.0 for row in W_p for value in row)
    for k in range(d_e // 2):
        for t in range(l_max):
            assert W_p[2 * k][t] ** 2 + W_p[2 * k + 1][t] ** 2 == pytest.approx(1.0, abs=1e-15)


@given(st.integers(1, 12).map(lambda h: 2 * h), st.integers(0, 200), st.integers(0, 200))
def test_shift_by_k_is_a_rotation_of_each_pair(d_e, t, k):
    W_p = sinusoidal_positions(d_e, t + k + 1)
    for i, omega in enumerate(frequencies(d_e)):
        s, c = W_p[2 * i][t], W_p[2 * i + 1][t]
        rotated = (math.cos(k * omega) * s + math.sin(k * omega) * c,
                   -math.sin(k * omega) * s + math.cos(k * omega) * c)
        assert rotated == pytest.approx((W_p[2 * i][t + k], W_p[2 * i + 1][t + k]), abs=1e-12)


def test_agrees_with_mpmath_at_30_digits_up_to_position_20000():
    mpmath.mp.dps = 30
    d_e, l_max = 16, 20_001
    W_p = sinusoidal_positions(d_e, l_max)
    positions = list(range(0, 200)) + list(range(19_000, l_max, 13)) + [l_max - 1]
    worst = 0.0
    for row in range(d_e):
        i = row // 2
        omega = mpmath.power(10000, -mpmath.mpf(2 * i) / d_e)
        wave = mpmath.sin if row % 2 == 0 else mpmath.cos
        for t in positions:
            worst = max(worst, abs(W_p[row][t] - float(wave(t * omega))))
    assert worst <= 1e-12


def test_odd_d_e_drops_the_last_cosine():
    odd, even = sinusoidal_positions(5, 7), sinusoidal_positions(6, 7)
    assert shape(odd) == (5, 7)
    # same pairs as d_e + 1 would have, but the exponent uses d_e = 5: compare with the formula
    for t in range(7):
        for row in range(5):
            i = row // 2
            wave = math.sin if row % 2 == 0 else math.cos
            assert odd[row][t] == pytest.approx(wave(t / 10000 ** (2 * i / 5)), abs=1e-12)
    assert len(frequencies(5)) == 3
    assert odd[0] == even[0]  # pair 0 has frequency 1 for every d_e


def test_paper_variant_uses_base_l_max_and_i_from_1():
    W_p = paper_positions(10, 5)
    assert frequencies(10, 5.0, first_i=1)[0] == pytest.approx(5 ** (-2 / 10))
    for t in range(5):
        assert W_p[0][t] == pytest.approx(math.sin(t / 5 ** (2 / 10)), abs=1e-12)
        assert W_p[9][t] == pytest.approx(math.cos(t / 5 ** (10 / 10)), abs=1e-12)
    assert column(W_p, 0) == [0.0, 1.0] * 5  # position 0 is the same for both variants


@pytest.mark.parametrize("first_i", [2, -1, 10])
def test_first_i_is_one_of_the_two_papers_conventions(first_i):
    with pytest.raises(ValueError, match=rf"first_i must be 0 \(Vaswani et al.\) or 1 .*got {first_i}$"):
        frequencies(8, first_i=first_i)


def test_longer_paper_table_changes_every_position_but_vaswani_does_not():
    assert column(paper_positions(8, 10), 3) != pytest.approx(column(paper_positions(8, 20), 3))
    assert column(sinusoidal_positions(8, 10), 3) == column(sinusoidal_positions(8, 20), 3)


# --- bad input ------------------------------------------------------------------------------------

W = [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]


@pytest.mark.parametrize("bad, error, message", [
    (-1, IndexError, r"token id v -1 is out of range: valid values are 0\.\.2"),
    (3, IndexError, r"token id v 3 is out of range: valid values are 0\.\.2"),
    (1.0, TypeError, r"token id v must be an int in 0\.\.2, got float 1\.0"),
    ("1", TypeError, r"got str '1'"),
    (True, TypeError, r"got bool True"),
])
def test_token_embedding_rejects_bad_ids(bad, error, message):
    with pytest.raises(error, match=message):
        token_embedding(bad, W)


@pytest.mark.parametrize("bad, error, message", [
    (-1, IndexError, r"position t -1 is out of range: valid values are 0\.\.2; W_p has l_max = 3"),
    (3, IndexError, r"position t 3 is out of range"),
    (0.5, TypeError, r"position t must be an int in 0\.\.2, got float"),
])
def test_positional_embedding_rejects_bad_positions(bad, error, message):
    with pytest.raises(error, match=message):
        positional_embedding(bad, W)


def test_negative_ids_never_wrap_around_to_the_last_column():
    with pytest.raises(IndexError):
        token_embedding(-1, W)
    assert W[0][-1] == 2.0  # which plain Python indexing would have returned


@pytest.mark.parametrize("bad, message", [
    ([], "must be a non-empty list of rows"),
    ([[]], "rows of length 0"),
    ([[1.0, 2.0], [3.0]], "ragged: row 0 has 2 entries but row 1 has 1"),
    ([[1.0], 2.0], "row 1 is float, not a list"),
    ("abc", "must be a non-empty list of rows, got str"),
])
def test_bad_matrices_are_errors(bad, message):
    with pytest.raises(ValueError, match=message):
        token_embedding(0, bad)


def test_embed_rejects_long_sequences_and_mismatched_dimensions():
    W_p = sinusoidal_positions(2, 3)
    with pytest.raises(ValueError, match=r"T = 4 tokens but W_p only covers positions 0\.\.2 \(l_max = 3\)"):
        embed([0, 1, 2, 0], W, W_p)
    with pytest.raises(ValueError, match="W_e has d_e = 2 rows but W_p has 3"):
        embed([0], W, sinusoidal_positions(3, 3))
    with pytest.raises(IndexError, match="token id v 7 is out of range"):
        embed([0, 7], W, W_p)
    with pytest.raises(TypeError, match="x must be a list of token ids"):
        embed("012", W, W_p)
    with pytest.raises(TypeError, match="got set .*a set has no order"):
        embed({0, 1}, W, W_p)  # which id is at position 0?
    assert embed([], W, W_p) == []
    assert embed((0, 1), W, W_p) == embed([0, 1], W, W_p)  # any ordered sequence will do


@pytest.mark.parametrize("kwargs, message", [
    ({"d_e": 0, "l_max": 3}, "d_e must be an int >= 1, got 0"),
    ({"d_e": 4, "l_max": 0}, "l_max must be an int >= 1, got 0"),
    ({"d_e": 4.0, "l_max": 3}, "d_e must be an int >= 1, got float 4.0"),
    ({"d_e": 4, "l_max": 3, "base": 1.0}, "base must be a finite number > 1, got 1.0"),
    ({"d_e": 4, "l_max": 3, "base": float("inf")}, "base must be a finite number > 1"),
])
def test_sinusoid_rejects_bad_sizes(kwargs, message):
    error = TypeError if "float" in message else ValueError
    with pytest.raises(error, match=message):
        sinusoidal_positions(**kwargs)


def test_matvec_and_one_hot_errors():
    with pytest.raises(ValueError, match="cannot multiply a 2x3 matrix by a vector of length 2"):
        matvec(W, [1.0, 0.0])
    with pytest.raises(IndexError, match="token id v 5 is out of range"):
        one_hot(5, 3)
