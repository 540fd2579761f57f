"""tokvec.attention: scores, RoPE and ALiBi against independent formulas, and their bad input."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tokvec.attention import alibi_bias, alibi_slopes, rope, scores

# --- independent formulas, written with Python floats and loops ------------------------------


def scores_loops(q, k):
    """``q k^T / sqrt(d)`` for 2-D float64 tensors, one dot product at a time."""
    d = q.shape[-1]
    return torch.tensor([[sum(float(q[i, c]) * float(k[j, c]) for c in range(d)) / math.sqrt(d)
                          for j in range(k.shape[0])] for i in range(q.shape[0])], dtype=torch.float64)


def rotation_matrix(m, d, base, interleaved):
    """The ``d x d`` matrix that RoPE applies to the row at position ``m`` (``out = R @ x``)."""
    R = torch.zeros(d, d, dtype=torch.float64)
    for i in range(d // 2):
        angle = m * base ** (-2 * i / d)
        a, b = (2 * i, 2 * i + 1) if interleaved else (i, i + d // 2)
        R[a, a], R[a, b] = math.cos(angle), -math.sin(angle)
        R[b, a], R[b, b] = math.sin(angle), math.cos(angle)
    return R


def rope_matrices(x, positions, base, interleaved):
    """RoPE of a ``(T, d)`` float64 tensor, row by row through :func:`rotation_matrix`."""
    return torch.stack([rotation_matrix(int(m), x.shape[1], base, interleaved) @ x[t]
                        for t, m in enumerate(positions)])


def press_slopes(n):
    """ALiBi slopes as written in Press et al.'s repository (attention_with_linear_biases)."""
    def get_slopes_power_of_2(n):
        start = 2 ** (-2 ** -(math.log2(n) - 3))
        ratio = start
        return [start * ratio**i for i in range(n)]

    if math.log2(n).is_integer():
        return get_slopes_power_of_2(n)
    closest_power_of_2 = 2 ** math.floor(math.log2(n))
    return (get_slopes_power_of_2(closest_power_of_2)
            + press_slopes(2 * closest_power_of_2)[0::2][: n - closest_power_of_2])



def pairs_to_halves(d):
    """The permutation of features that turns the interleaved layout into the halves layout."""
    return list(range(0, d, 2)) + list(range(1, d, 2))


# --- scores -----------------------------------------------------------------------------------

def test_scores_equal_the_dot_products_over_sqrt_d():
    g = torch.Generator().manual_seed(0)
    q, k = torch.randn(5, 6, generator=g, dtype=torch.float64), torch.randn(7, 6, generator=g, dtype=torch.float64)
    assert torch.allclose(scores(q, k), scores_loops(q, k), rtol=0, atol=1e-12)
    assert scores(q, k).shape == (5, 7)


def test_scores_broadcast_over_batch_and_heads():
    g = torch.Generator().manual_seed(1)
    q, k = torch.randn(2, 3, 4, 8, generator=g), torch.randn(2, 3, 5, 8, generator=g)
    s = scores(q, k)
    assert s.shape == (2, 3, 4, 5)
    assert torch.allclose(s[1, 2], scores(q[1, 2], k[1, 2]))


# --- RoPE against the rotation matrices ---------------------------------------------------------

@pytest.mark.parametrize("interleaved", [True, False])
@pytest.mark.parametrize("base", [10000.0, 500000.0, 2.5])
def test_rope_equals_the_rotation_matrices(interleaved, base):
    g = torch.Generator().manual_seed(2)
    x = torch.randn(9, 8, generator=g, dtype=torch.float64)
    positions = torch.tensor([0, 1, 2, 7, 100, 4095, 5, 70000, 3])
    expected = rope_matrices(x, positions.tolist(), base, interleaved)
    got = rope(x, positions, base=base, interleaved=interleaved)
    assert torch.allclose(got, expected, rtol=0, atol=1e-12)


def test_rope_default_positions_are_0_to_T_minus_1_along_dim_minus_2():
    g = torch.Generator().manual_seed(3)
    x = torch.randn(2, 3, 6, 4, generator=g, dtype=torch.float64)
    assert torch.equal(rope(x), rope(x, torch.arange(6)))
    assert torch.equal(rope(x)[..., 0, :], x[..., 0, :])             # position 0: no rotation
    per_row = rope_matrices(x[1, 2], range(6), 10000.0, True)
    assert torch.allclose(rope(x)[1, 2], per_row, rtol=0, atol=1e-12)


def test_rope_keeps_lengths_dtype_and_device_and_leaves_x_alone():
    g = torch.Generator().manual_seed(4)
    x = torch.randn(4, 16, 10, generator=g)
    before = x.clone()
    out = rope(x)
    assert torch.equal(x, before)
    assert out.dtype == x.dtype and out.device == x.device and out.shape == x.shape
    assert torch.allclose(out.norm(dim=-1), x.norm(dim=-1), rtol=1e-6)  # a rotation keeps lengths
    assert rope(x.bfloat16()).dtype == torch.bfloat16


@settings(max_examples=60, deadline=None)
@given(d=st.integers(1, 8).map(lambda h: 2 * h), m=st.integers(0, 10**5), n=st.integers(0, 10**5),
       shift=st.integers(-10**4, 10**4), interleaved=st.booleans(), seed=st.integers(0, 2**16))
def test_rope_scores_depend_only_on_the_offset(d, m, n, shift, interleaved, seed):
    """score(rope(q) at m, rope(k) at n) == score(rope(q) at m+s, rope(k) at n+s): only m - n counts."""
    g = torch.Generator().manual_seed(seed)
    q, k = torch.randn(1, d, generator=g, dtype=torch.float64), torch.randn(1, d, generator=g, dtype=torch.float64)

    def score(a, b):
        qa = rope(q, torch.tensor([a]), interleaved=interleaved)
        kb = rope(k, torch.tensor([b]), interleaved=interleaved)
        return float(scores(qa, kb))

    a, b = m + max(0, -shift), n + max(0, -shift)                    # keep positions >= 0
    assert score(a, b) == pytest.approx(score(a + shift, b + shift), abs=1e-9)
    # and the score is the unrotated q against k rotated by n - m (the relative form)
    relative = float(scores(q, rope(k, torch.tensor([b - a]), interleaved=interleaved)))
    assert score(a, b) == pytest.approx(relative, abs=1e-9)


@pytest.mark.parametrize("d", [2, 8, 64])
def test_the_two_conventions_are_one_permutation_of_features_apart(d):
    g = torch.Generator().manual_seed(5)
    x = torch.randn(3, 12, d, generator=g, dtype=torch.float64)
    perm = pairs_to_halves(d)
    positions = torch.tensor([0, 1, 2, 3, 10, 99, 500, 1000, 4096, 8191, 30000, 100000])
    pairs = rope(x, positions, interleaved=True)
    halves = rope(x[..., perm], positions, interleaved=False)
    assert torch.allclose(halves, pairs[..., perm], rtol=0, atol=1e-12)
    if d > 2:  # with more than one pair, the same weights under the other convention differ
        assert not torch.allclose(rope(x, positions, interleaved=False), pairs, atol=1e-3)


def test_float32_rope_is_accurate_at_long_positions():
    """Angles in float64: float32 results within a few float32 roundings of exact, up to 10^5."""
    g = torch.Generator().manual_seed(6)
    x64 = torch.randn(64, 128, generator=g, dtype=torch.float64)
    x32 = x64.float()
    positions = torch.arange(100_000 - 64, 100_000)
    exact = rope(x32.double(), positions)
    error = (rope(x32, positions).double() - exact).abs().max()
    scale = x32.abs().max().double()
    assert error <= 4 * torch.finfo(torch.float32).eps * scale
    # the common float32 recipe is far worse at these positions: the gap the course measures
    theta = 10000.0 ** (-torch.arange(0, 128, 2, dtype=torch.float32) / 128)
    angles = positions.float()[:, None] * theta[None, :]
    naive = torch.stack((x32[:, 0::2] * angles.cos() - x32[:, 1::2] * angles.sin(),
                         x32[:, 1::2] * angles.cos() + x32[:, 0::2] * angles.sin()), -1).flatten(-2)
    assert (naive.double() - exact).abs().max() > 100 * error


# --- ALiBi --------------------------------------------------------------------------------------

@pytest.mark.parametrize("n_heads", range(1, 65))
def test_alibi_slopes_follow_press_et_al(n_heads):
    expected = torch.tensor(press_slopes(n_heads), dtype=torch.float64)
    got = alibi_slopes(n_heads)
    assert got.dtype == torch.float32 and got.shape == (n_heads,)
    assert torch.allclose(got.double(), expected, rtol=torch.finfo(torch.float32).eps, atol=0)
    assert len(set(got.tolist())) == n_heads                         # every head its own slope
    assert bool(((got > 0) & (got < 1)).all())


def test_alibi_slopes_of_8_heads_are_halves_down_to_1_over_256():
    assert alibi_slopes(8).tolist() == [2.0**-h for h in range(1, 9)]


def test_alibi_slopes_of_12_heads_interleave_8_and_16():
    got = alibi_slopes(12).tolist()
    assert got[:8] == alibi_slopes(8).tolist()
    assert got[8:] == pytest.approx([2.0 ** (-0.5 * h) for h in (1, 3, 5, 7)])


@pytest.mark.parametrize("n_heads,T", [(1, 1), (3, 5), (8, 7)])
def test_alibi_bias_is_minus_slope_times_distance_and_causal(n_heads, T):
    bias = alibi_bias(n_heads, T)
    slopes = press_slopes(n_heads)
    assert bias.shape == (n_heads, T, T) and bias.dtype == torch.float32
    for h in range(n_heads):
        for i in range(T):
            for j in range(T):
                if j <= i:
                    assert float(bias[h, i, j]) == pytest.approx(-slopes[h] * (i - j), rel=1e-6, abs=0)
                else:
                    assert bias[h, i, j] == float("-inf")
    assert not torch.signbit(torch.diagonal(bias, dim1=-2, dim2=-1)).any()  # +0.0 on the diagonal


def test_alibi_bias_after_softmax_masks_the_future():
    weights = torch.softmax(alibi_bias(4, 6), dim=-1)
    assert torch.equal(torch.triu(weights, diagonal=1), torch.zeros_like(weights))
    assert torch.allclose(weights.sum(-1), torch.ones(4, 6))


# --- bad input ----------------------------------------------------------------------------------

@pytest.mark.parametrize("call,error,match", [
    (lambda: alibi_slopes(0), ValueError, "n_heads"),
    (lambda: alibi_slopes(-3), ValueError, "n_heads"),
    (lambda: alibi_slopes(2.0), TypeError, "n_heads"),
    (lambda: alibi_slopes(True), TypeError, "n_heads"),
    (lambda: alibi_bias(0, 4), ValueError, "n_heads"),
    (lambda: alibi_bias(2, 0), ValueError, "T"),
    (lambda: alibi_bias(2, 2**21), ValueError, "T"),
    (lambda: rope(torch.zeros(4, 5)), ValueError, r"d = 5.*even"),
    (lambda: rope(torch.zeros(4)), ValueError, r"x must have shape"),
    (lambda: rope([[0.0, 1.0]]), TypeError, "x must be a torch.Tensor"),
    (lambda: rope(torch.zeros(3, 4, dtype=torch.long)), TypeError, "floating-point"),
    (lambda: rope(torch.zeros(3, 4), torch.arange(4)), ValueError, r"positions.*\(3,\).*\(4,\)"),
    (lambda: rope(torch.zeros(3, 4), torch.arange(3).float()), TypeError, "positions.*integer"),
    (lambda: rope(torch.zeros(3, 4), torch.zeros(1, 3, dtype=torch.long)), ValueError, "positions"),
    (lambda: rope(torch.zeros(3, 4), [0, 1, 2]), TypeError, "positions"),
    (lambda: rope(torch.zeros(3, 4), base=1.0), ValueError, "base"),
    (lambda: rope(torch.zeros(3, 4), interleaved="no"), TypeError, "interleaved"),
    (lambda: scores(torch.zeros(3, 4), torch.zeros(3, 5)), ValueError, "d_head"),
    (lambda: scores(torch.zeros(4), torch.zeros(3, 4)), ValueError, "q must have shape"),
    (lambda: scores(torch.zeros(3, 4), torch.zeros(3, 4, dtype=torch.int32)), TypeError, "k must have"),
])
def test_bad_input_names_the_argument(call, error, match):
    with pytest.raises(error, match=match):
        call()
