"""RoPE scaling (``tokvec.attention.rope_frequencies`` and ``rope(..., scaling=...)``) against Hugging Face.

The reference is Hugging Face transformers itself: its RoPE initialisation functions
(``transformers.modeling_rope_utils.ROPE_INIT_FUNCTIONS``, and Llama's default one), its rotary
module and its ``apply_rotary_pos_emb``, on configs built here in code (never ``from_pretrained``:
nothing is downloaded, and the hub is switched off before the import).

Those functions compute in float32 (``dtype=torch.float``). To compare at float64's precision, the
tests run the very same functions with the name ``torch`` in their module bound to a stand-in
whose ``float`` and ``float32`` are float64 (:func:`hf_float64`); a test checks that this really
gives float64. The unchanged float32 functions are compared too, at float32's precision. A few
tests use independent formulas instead: Meta's ``apply_scaling`` of Llama 3.1, written out as in
Meta's code, and the NTK-aware base of bloc97 and emozilla with Python floats.

The configs that transformers builds from five released models' ``config.json`` (Llama 3.1,
Qwen2.5 with YaRN, DeepSeek-V3, LongChat with position interpolation, InternLM2.5 with dynamic
NTK) are passed to ``rope_frequencies``
exactly as transformers stores them (``config.rope_parameters``, ``config.max_position_embeddings``),
the old ``type`` key included, and compared with transformers' own functions on the same config.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import re
import warnings

os.environ.setdefault("HF_HUB_OFFLINE", "1")          # used only for its functions: never the network
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import pytest  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402
from test_bad_input import BASE, GENERIC, HUGE, NAN, SIZE, bad_calls  # noqa: E402
from transformers import DeepseekV3Config, GPTNeoXConfig, LlamaConfig, Phi3Config, Qwen2Config  # noqa: E402
from transformers import modeling_rope_utils as hf_rope  # noqa: E402
from transformers.models.llama import modeling_llama  # noqa: E402
from transformers.models.qwen2 import modeling_qwen2  # noqa: E402
from transformers.utils import logging as hf_logging  # noqa: E402

from tokvec import attention  # noqa: E402
from tokvec.attention import rope, rope_frequencies  # noqa: E402

transformers.logging.set_verbosity_error()            # HF warns about odd configs; the tests check errors

INF = float("inf")

# --- the settings of released models -----------------------------------------------------------

#: Llama 3.1 (8B, 70B, 405B): config.json of meta-llama/Llama-3.1-8B
LLAMA31 = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
           "original_max_position_embeddings": 8192}
LLAMA31_BASE, LLAMA31_HEAD = 500000.0, 128
#: Qwen2.5's YaRN, as its model cards say to add it for contexts past 32,768 tokens
QWEN25 = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}
QWEN25_BASE, QWEN25_HEAD = 1000000.0, 128

# (id, d_head, base, scaling): every type, the released settings and the corners of the optional keys
SETTINGS = [
    ("default", 128, 10000.0, {"rope_type": "default"}),
    ("linear-2", 64, 10000.0, {"rope_type": "linear", "factor": 2.0}),
    ("linear-4.5", 128, 500000.0, {"rope_type": "linear", "factor": 4.5}),
    ("linear-1", 8, 10000.0, {"rope_type": "linear", "factor": 1}),
    ("llama3.1", LLAMA31_HEAD, LLAMA31_BASE, LLAMA31),
    ("llama3.2", 64, 500000.0, {**LLAMA31, "factor": 32.0}),
    ("llama3-wide-band", 64, 10000.0, {"rope_type": "llama3", "factor": 4.0, "low_freq_factor": 0.5,
                                       "high_freq_factor": 16.0, "original_max_position_embeddings": 2048}),
    ("qwen2.5-yarn", QWEN25_HEAD, QWEN25_BASE, QWEN25),
    ("yarn-no-truncate", 128, 10000.0, {"rope_type": "yarn", "factor": 8.0, "truncate": False,
                                        "original_max_position_embeddings": 4096}),
    ("yarn-betas", 64, 10000.0, {"rope_type": "yarn", "factor": 16.0, "beta_fast": 64, "beta_slow": 2.0,
                                 "original_max_position_embeddings": 2048}),
    ("yarn-attention-factor", 64, 10000.0, {"rope_type": "yarn", "factor": 4.0, "attention_factor": 0.9,
                                            "original_max_position_embeddings": 2048}),
    ("yarn-deepseek-v3", 64, 10000.0, {"rope_type": "yarn", "factor": 40.0, "beta_fast": 32, "beta_slow": 1,
                                       "mscale": 1.0, "mscale_all_dim": 1.0,
                                       "original_max_position_embeddings": 4096}),
    ("yarn-mscale-ratio", 64, 10000.0, {"rope_type": "yarn", "factor": 40.0, "mscale": 0.707,
                                        "mscale_all_dim": 1.3, "original_max_position_embeddings": 4096}),
    ("yarn-factor-1", 32, 10000.0, {"rope_type": "yarn", "factor": 1.0, "original_max_position_embeddings": 512}),
    ("yarn-zero-width-ramp", 64, 10000.0, {"rope_type": "yarn", "factor": 2.0,
                                           "original_max_position_embeddings": 4}),
    ("yarn-tiny-length", 64, 10000.0, {"rope_type": "yarn", "factor": 2.0,
                                       "original_max_position_embeddings": 2}),
    # pairs past d/2 - 1 by YaRN's formula: the ramp's end is clamped at d - 1, as in HF and YaRN's code
    ("yarn-long-original", 64, 10000.0, {"rope_type": "yarn", "factor": 2.0,
                                         "original_max_position_embeddings": 131072}),
]
DYNAMIC = {"rope_type": "dynamic", "factor": 2.0, "max_position_embeddings": 2048}
X = torch.zeros(3, 4)
LINEAR = {"rope_type": "linear", "factor": 2.0}
YARN = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 4096}
LLAMA3 = {**LLAMA31}
SEQ_LENS = [1, 100, 2047, 2048, 2049, 3000, 4096, 10_000, 131_072]


# --- Hugging Face, on configs built in code -------------------------------------------------------

class _Float64Torch:
    """``torch`` with ``float`` and ``float32`` meaning float64: Hugging Face's code, run in float64."""

    float = torch.float64
    float32 = torch.float64

    def __getattr__(self, name):
        return getattr(torch, name)


@contextlib.contextmanager
def hf_float64():
    """Run Hugging Face's RoPE functions (and Llama's default one) in float64 instead of float32."""
    saved = hf_rope.torch, modeling_llama.torch
    hf_rope.torch = modeling_llama.torch = _Float64Torch()
    try:
        yield
    finally:
        hf_rope.torch, modeling_llama.torch = saved


def hf_config(d_head: int, base: float, scaling: dict, model: str = "llama"):
    """A Llama (or Qwen2) config with this head size, base and ``rope_parameters``, no weights."""
    params = {key: value for key, value in scaling.items() if key != "max_position_embeddings"}
    params["rope_theta"] = base
    if "max_position_embeddings" in scaling:                       # dynamic: the length it was trained on
        max_len = scaling["max_position_embeddings"]
    else:                                                          # the others: the extended length
        max_len = int(scaling.get("factor", 1) * scaling.get("original_max_position_embeddings", 4096))
    if model == "qwen2":
        return Qwen2Config(hidden_size=d_head * 2, num_attention_heads=2, num_key_value_heads=2,
                           max_position_embeddings=max_len, rope_parameters=params)
    return LlamaConfig(hidden_size=d_head * 2, num_attention_heads=2, num_key_value_heads=2, head_dim=d_head,
                       max_position_embeddings=max_len, rope_parameters=params)


def hf_frequencies(d_head: int, base: float, scaling: dict, seq_len: int | None = None):
    """Hugging Face's ``(inv_freq, attention_scaling)`` for this setting, in the current dtype."""
    config = hf_config(d_head, base, scaling)
    rope_type = config.rope_parameters["rope_type"]
    if rope_type == "default":
        return modeling_llama.LlamaRotaryEmbedding.compute_default_rope_parameters(config)
    return hf_rope.ROPE_INIT_FUNCTIONS[rope_type](config, None, seq_len=seq_len)


def hf_rotate(x: torch.Tensor, positions: torch.Tensor, inv_freq: torch.Tensor, attention_scaling: float):
    """Hugging Face's cos and sin (as its rotary module's forward makes them), through its apply_rotary_pos_emb.

    ``x`` is ``(batch, heads, T, d)``; the cos/sin are built in ``x``'s dtype from float64 angles.
    """
    freqs = positions.to(torch.float64)[None, :, None] * inv_freq.to(torch.float64)[None, None, :]  # (1, T, d/2)
    emb = torch.cat((freqs, freqs), dim=-1)
    cos = (emb.cos() * attention_scaling).to(x.dtype)
    sin = (emb.sin() * attention_scaling).to(x.dtype)
    q_embed, _ = modeling_llama.apply_rotary_pos_emb(x, x, cos, sin)
    return q_embed


def angle_tolerance(positions: torch.Tensor, x: torch.Tensor) -> float:
    """A few float64 roundings of the largest angle: frequencies equal to 1e-16 turn apart by ``m`` times that."""
    return 16 * max(1.0, float(positions.abs().max())) * torch.finfo(torch.float64).eps * float(x.abs().max())


def close(got: torch.Tensor, expected: torch.Tensor, rtol: float):
    assert got.shape == expected.shape, (got.shape, expected.shape)
    error = float(((got - expected).abs() / expected.abs()).max())
    assert error <= rtol, f"largest relative error {error:.2e} > {rtol:.0e}"


# --- the frequencies, against Hugging Face -------------------------------------------------------

def test_the_float64_stand_in_really_runs_hugging_face_in_float64():
    with hf_float64():
        inv_freq, _ = hf_frequencies(LLAMA31_HEAD, LLAMA31_BASE, LLAMA31)
        default, _ = hf_frequencies(64, 10000.0, {"rope_type": "default"})
    assert inv_freq.dtype == default.dtype == torch.float64
    assert hf_frequencies(LLAMA31_HEAD, LLAMA31_BASE, LLAMA31)[0].dtype == torch.float32  # and back after


@pytest.mark.parametrize("d_head, base, scaling", [pytest.param(*s[1:], id=s[0]) for s in SETTINGS])
def test_frequencies_equal_hugging_face_in_float64(d_head, base, scaling):
    with hf_float64():
        expected, expected_factor = hf_frequencies(d_head, base, scaling)
    inv_freq, factor = rope_frequencies(d_head, base=base, scaling=scaling)
    assert inv_freq.dtype == torch.float64 and inv_freq.shape == (d_head // 2,)
    assert isinstance(factor, float)
    close(inv_freq, expected, rtol=1e-14)
    assert factor == pytest.approx(expected_factor, rel=1e-15, abs=0)


@pytest.mark.parametrize("d_head, base, scaling", [pytest.param(*s[1:], id=s[0]) for s in SETTINGS])
def test_frequencies_equal_hugging_face_as_it_ships_in_float32(d_head, base, scaling):
    expected, expected_factor = hf_frequencies(d_head, base, scaling)
    assert expected.dtype == torch.float32
    inv_freq, factor = rope_frequencies(d_head, base=base, scaling=scaling)
    close(inv_freq, expected.double(), rtol=8 * torch.finfo(torch.float32).eps)
    assert factor == pytest.approx(expected_factor, rel=1e-15, abs=0)


@pytest.mark.parametrize("d_head", [4, 64, 128])
@pytest.mark.parametrize("factor", [1.0, 2.0, 4.0, 7.5])
@pytest.mark.parametrize("seq_len", SEQ_LENS)
def test_dynamic_equals_hugging_face_below_and_above_the_training_length(d_head, factor, seq_len):
    scaling = {**DYNAMIC, "factor": factor}
    with hf_float64():
        expected, expected_factor = hf_frequencies(d_head, 10000.0, scaling, seq_len=seq_len)
    inv_freq, attention_factor = rope_frequencies(d_head, scaling=scaling, seq_len=seq_len)
    close(inv_freq, expected, rtol=1e-14)
    assert attention_factor == expected_factor == 1.0
    if seq_len <= DYNAMIC["max_position_embeddings"]:             # nothing changes up to L
        assert torch.equal(inv_freq, rope_frequencies(d_head)[0])
    else:                              # past L every pair but the first slows down (even for factor 1: n / L)
        assert inv_freq[0] == 1.0 and bool((inv_freq[1:] < rope_frequencies(d_head)[0][1:]).all())


def test_the_released_settings_change_what_they_should():
    """Llama 3.1 and Qwen2.5: the fast pairs are untouched, the slow ones divided by the factor exactly."""
    default = rope_frequencies(128, base=LLAMA31_BASE)[0]
    llama, llama_factor = rope_frequencies(128, base=LLAMA31_BASE, scaling=LLAMA31)
    wavelength = 2 * math.pi / default
    assert llama_factor == 1.0
    assert torch.equal(llama[wavelength < 8192 / 4], default[wavelength < 8192 / 4])
    assert torch.equal(llama[wavelength > 8192], default[wavelength > 8192] / 8)
    assert 0 < int(((wavelength >= 2048) & (wavelength <= 8192)).sum()) < 64   # a blended band in between

    default = rope_frequencies(128, base=QWEN25_BASE)[0]
    qwen, qwen_factor = rope_frequencies(128, base=QWEN25_BASE, scaling=QWEN25)
    assert qwen_factor == pytest.approx(0.1 * math.log(4.0) + 1)           # YaRN's sqrt(1/t), Peng et al. eq. 22
    rotations = 32768 * default / (2 * math.pi)                            # turns within the training length
    assert torch.allclose(qwen[rotations > 32], default[rotations > 32], rtol=1e-15, atol=0)
    assert torch.allclose(qwen[rotations < 1], default[rotations < 1] / 4, rtol=1e-15, atol=0)


# --- independent formulas -----------------------------------------------------------------------

def meta_apply_scaling(freqs, scale_factor, low_freq_factor, high_freq_factor, old_context_len):
    """Llama 3.1's frequency scaling, as in Meta's reference code (llama_models, ``apply_scaling``)."""
    low_freq_wavelen = old_context_len / low_freq_factor
    high_freq_wavelen = old_context_len / high_freq_factor
    new_freqs = []
    for freq in freqs:
        wavelen = 2 * math.pi / freq
        if wavelen < high_freq_wavelen:
            new_freqs.append(freq)
        elif wavelen > low_freq_wavelen:
            new_freqs.append(freq / scale_factor)
        else:
            assert low_freq_wavelen != high_freq_wavelen
            smooth = (old_context_len / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor)
            new_freqs.append((1 - smooth) * freq / scale_factor + smooth * freq)
    return new_freqs


@pytest.mark.parametrize("scale, low, high, old, d, base", [(8, 1, 4, 8192, 128, 500000.0),
                                                           (32, 1, 4, 8192, 64, 500000.0),
                                                           (4, 0.5, 16, 2048, 64, 10000.0)])
def test_llama3_equals_metas_apply_scaling(scale, low, high, old, d, base):
    freqs = [1.0 / base ** (i / d) for i in range(0, d, 2)]            # Meta's precompute_freqs_cis
    expected = torch.tensor(meta_apply_scaling(freqs, scale, low, high, old), dtype=torch.float64)
    scaling = {"rope_type": "llama3", "factor": scale, "low_freq_factor": low, "high_freq_factor": high,
               "original_max_position_embeddings": old}
    close(rope_frequencies(d, base=base, scaling=scaling)[0], expected, rtol=1e-14)


@pytest.mark.parametrize("seq_len", SEQ_LENS)
def test_dynamic_equals_the_ntk_aware_base(seq_len):
    """bloc97's NTK-aware base b' = b * s**(d/(d-2)), made dynamic by emozilla: s = (s0 n / L) - (s0 - 1)."""
    d, base, s0, L = 64, 10000.0, 4.0, 2048
    n = max(seq_len, L)
    grown = base * ((s0 * n / L) - (s0 - 1)) ** (d / (d - 2))
    expected = torch.tensor([grown ** (-2 * i / d) for i in range(d // 2)], dtype=torch.float64)
    scaling = {"rope_type": "dynamic", "factor": s0, "max_position_embeddings": L}
    close(rope_frequencies(d, base=base, scaling=scaling, seq_len=seq_len)[0], expected, rtol=1e-14)


def test_linear_is_position_interpolation():
    """Chen et al. (2023): the frequencies divided by s rotate position m as the default does m / s."""
    g = torch.Generator().manual_seed(0)
    x = torch.randn(2, 40, 16, generator=g, dtype=torch.float64)
    positions = torch.arange(0, 4000, 100)
    for s in (2.0, 3.0, 8.0):
        scaled = rope(x, positions, scaling={"rope_type": "linear", "factor": s})
        assert torch.allclose(scaled, rope(x, positions.double() / s), rtol=0, atol=1e-12)
        assert not torch.allclose(scaled, rope(x, positions), atol=1e-3)


def rotation_matrix(m: float, d: int, theta: list[float], interleaved: bool) -> torch.Tensor:
    R = torch.zeros(d, d, dtype=torch.float64)
    for i in range(d // 2):
        a, b = (2 * i, 2 * i + 1) if interleaved else (i, i + d // 2)
        angle = m * theta[i]
        R[a, a], R[a, b] = math.cos(angle), -math.sin(angle)
        R[b, a], R[b, b] = math.sin(angle), math.cos(angle)
    return R


@pytest.mark.parametrize("interleaved", [True, False])
def test_fractional_positions_rotate_by_the_fractional_angle(interleaved):
    g = torch.Generator().manual_seed(1)
    d, base = 8, 10000.0
    x = torch.randn(6, d, generator=g, dtype=torch.float64)
    positions = [0.0, 0.25, 1.5, 7.125, 4095.75, -2.5]               # negative: allowed without scaling
    theta = [base ** (-2 * i / d) for i in range(d // 2)]
    expected = torch.stack([rotation_matrix(m, d, theta, interleaved) @ x[t] for t, m in enumerate(positions)])
    got = rope(x, torch.tensor(positions, dtype=torch.float64), interleaved=interleaved)
    assert torch.allclose(got, expected, rtol=0, atol=1e-12)
    # whole numbers in float64 are the integer positions, bit for bit
    whole = torch.tensor([0, 3, 99, 70000])
    assert torch.equal(rope(x[:4], whole.double(), interleaved=interleaved),
                       rope(x[:4], whole, interleaved=interleaved))


# --- rope with scaling, against Hugging Face's apply_rotary_pos_emb ------------------------------

POSITIONS = torch.tensor([0, 1, 2, 3, 17, 100, 1000, 2047, 2048, 5000, 8191, 8192, 40_000, 131_071])


@pytest.mark.parametrize("d_head, base, scaling", [pytest.param(*s[1:], id=s[0]) for s in SETTINGS]
                         + [pytest.param(64, 10000.0, DYNAMIC, id="dynamic")])
def test_rope_with_scaling_equals_hugging_face_apply_rotary_pos_emb(d_head, base, scaling):
    g = torch.Generator().manual_seed(2)
    x = torch.randn(2, 3, len(POSITIONS), d_head, generator=g, dtype=torch.float64)   # (batch, heads, T, d)
    seq_len = int(POSITIONS.max()) + 1                 # what Hugging Face's dynamic update scales to
    with hf_float64():
        inv_freq, attention_scaling = hf_frequencies(d_head, base, scaling, seq_len=seq_len)
    expected = hf_rotate(x, POSITIONS, inv_freq, attention_scaling)
    got = rope(x, POSITIONS, base=base, interleaved=False, scaling=scaling)
    error = float((got - expected).abs().max())
    assert error <= angle_tolerance(POSITIONS, x), f"largest difference {error:.1e}"
    # a rotation times the attention factor: every pair's length is scaled by it
    assert torch.allclose(got.norm(dim=-1), attention_scaling * x.norm(dim=-1), rtol=1e-12, atol=0)


@pytest.mark.parametrize("d_head, base, scaling", [pytest.param(128, QWEN25_BASE, QWEN25, id="qwen2.5-yarn"),
                                                    pytest.param(128, LLAMA31_BASE, LLAMA31, id="llama3.1")])
def test_fractional_positions_with_scaling_equal_hugging_face(d_head, base, scaling):
    g = torch.Generator().manual_seed(3)
    positions = torch.tensor([0.0, 0.5, 1.25, 1000.5, 32767.75, 100000.125], dtype=torch.float64)
    x = torch.randn(1, 2, len(positions), d_head, generator=g, dtype=torch.float64)
    with hf_float64():
        inv_freq, attention_scaling = hf_frequencies(d_head, base, scaling)
    expected = hf_rotate(x, positions, inv_freq, attention_scaling)
    got = rope(x, positions, base=base, interleaved=False, scaling=scaling)
    error = float((got - expected).abs().max())
    assert error <= angle_tolerance(positions, x), f"largest difference {error:.1e}"


@pytest.mark.parametrize("model", ["llama", "qwen2"])
@pytest.mark.parametrize("d_head, base, scaling", [
    pytest.param(128, LLAMA31_BASE, LLAMA31, id="llama3.1"),
    pytest.param(128, QWEN25_BASE, QWEN25, id="qwen2.5-yarn"),
    pytest.param(64, 10000.0, {"rope_type": "linear", "factor": 4.0}, id="linear"),
    pytest.param(64, 10000.0, DYNAMIC, id="dynamic"),
])
def test_rope_in_float32_equals_hugging_faces_rotary_module_as_shipped(model, d_head, base, scaling):
    """The stock float32 module (its dynamic update included): equal up to its float32 angles."""
    config = hf_config(d_head, base, scaling, model)
    module = (modeling_qwen2.Qwen2RotaryEmbedding if model == "qwen2" else modeling_llama.LlamaRotaryEmbedding)
    positions = torch.tensor([0, 1, 2, 5, 64, 255, 511, 1024, 2047, 3000, 4095])   # past 2048: dynamic grows
    g = torch.Generator().manual_seed(4)
    x = torch.randn(1, 2, len(positions), d_head, generator=g)
    cos, sin = module(config)(x, positions[None, :])
    expected, _ = modeling_llama.apply_rotary_pos_emb(x, x, cos, sin)
    got = rope(x, positions, base=base, interleaved=False, scaling=scaling)
    # float32 angles at position 4095 are off by up to 4095 * 2**-24 radians (chapter 11)
    tolerance = 4 * float(positions.max()) * torch.finfo(torch.float32).eps * float(x.abs().max()) * 1.2
    assert float((got - expected).abs().max()) <= tolerance
    assert float((rope(x, positions, base=base, interleaved=False) - expected).abs().max()) > 100 * tolerance


def test_scores_still_depend_only_on_the_offset_with_scaling():
    g = torch.Generator().manual_seed(5)
    q, k = torch.randn(1, 128, generator=g, dtype=torch.float64), torch.randn(1, 128, generator=g, dtype=torch.float64)
    for scaling, base in ((QWEN25, QWEN25_BASE), (LLAMA31, LLAMA31_BASE)):
        def score(m, n, scaling=scaling, base=base):
            qm = rope(q, torch.tensor([m]), base=base, scaling=scaling)
            kn = rope(k, torch.tensor([n]), base=base, scaling=scaling)
            return float(attention.scores(qm, kn))
        assert score(10, 3) == pytest.approx(score(100_010, 100_003), abs=1e-9)


def test_default_scaling_is_no_scaling_bit_for_bit():
    g = torch.Generator().manual_seed(6)
    x = torch.randn(3, 50, 64, generator=g)
    positions = torch.randint(0, 100_000, (50,), generator=g)
    for interleaved in (True, False):
        plain = rope(x, positions, interleaved=interleaved)
        assert torch.equal(rope(x, positions, interleaved=interleaved, scaling=None), plain)
        assert torch.equal(rope(x, positions, interleaved=interleaved, scaling={"rope_type": "default"}), plain)
        assert torch.equal(rope(x, positions, interleaved=interleaved,
                                scaling={"rope_type": "linear", "factor": 1.0}), plain)
    inv_freq, factor = rope_frequencies(64)
    assert factor == 1.0 and torch.equal(inv_freq, 10000.0 ** (-2.0 * torch.arange(32, dtype=torch.float64) / 64))
    # the relative form rope(k, n - m) takes negative positions; "default" is no scaling, so it does too
    offsets = torch.arange(-25, 25)
    assert torch.equal(rope(x, offsets, scaling={"rope_type": "default"}), rope(x, offsets))


def test_a_head_too_large_for_memory_is_a_clear_error_not_an_allocation():
    with pytest.raises(ValueError, match=r"d_head = .* is more than the 1,048,576 features"):
        rope_frequencies(2**40)
    assert rope_frequencies(2**20)[0].shape == (2**19,)


def test_dynamic_rope_scales_to_the_longest_position_given():
    g = torch.Generator().manual_seed(7)
    x = torch.randn(4, 32, generator=g, dtype=torch.float64)
    short, long = torch.tensor([0, 1, 2, 2047]), torch.tensor([0, 1, 2, 4095])
    assert torch.equal(rope(x, short, scaling=DYNAMIC), rope(x, short))           # up to L: unchanged
    theta, _ = rope_frequencies(32, scaling=DYNAMIC, seq_len=4096)
    angles = long.double()[:, None] * theta[None, :]
    first, second = x[:, 0::2], x[:, 1::2]
    expected = torch.stack((first * angles.cos() - second * angles.sin(),
                            second * angles.cos() + first * angles.sin()), -1).flatten(-2)
    assert torch.allclose(rope(x, long, scaling=DYNAMIC), expected, rtol=0, atol=1e-12)
    assert not torch.allclose(rope(x, long, scaling=DYNAMIC)[:3], rope(x, long)[:3], atol=1e-6)


# --- what transformers hands a practitioner: released configs, as transformers stores them -------

#: (id, config class, the config.json fields that matter, d_head): five released models
RELEASED = [
    # meta-llama/Llama-3.1-8B, config.json: "rope_type" only
    ("llama-3.1-8b", LlamaConfig, {"hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8,
                                   "max_position_embeddings": 131072, "rope_theta": 500000.0,
                                   "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                                    "original_max_position_embeddings": 8192,
                                                    "rope_type": "llama3"}}, 128),
    # Qwen/Qwen2.5-7B-Instruct: config.json, with the YaRN block its model card says to add (old "type" key)
    ("qwen2.5-7b-yarn", Qwen2Config, {"hidden_size": 3584, "num_attention_heads": 28, "num_key_value_heads": 4,
                                      "max_position_embeddings": 32768, "rope_theta": 1000000.0,
                                      "rope_scaling": {"factor": 4.0, "original_max_position_embeddings": 32768,
                                                       "type": "yarn"}}, 128),
    # deepseek-ai/DeepSeek-V3, config.json: YaRN with mscale, "type", integer factor and base
    ("deepseek-v3", DeepseekV3Config, {"max_position_embeddings": 163840, "qk_rope_head_dim": 64,
                                       "rope_theta": 10000,
                                       "rope_scaling": {"beta_fast": 32, "beta_slow": 1, "factor": 40, "mscale": 1.0,
                                                        "mscale_all_dim": 1.0,
                                                        "original_max_position_embeddings": 4096,
                                                        "type": "yarn"}}, 64),
    # lmsys/longchat-13b-16k, config.json: position interpolation ("linear") in the old form
    ("longchat-13b-16k-linear", LlamaConfig, {"hidden_size": 5120, "num_attention_heads": 40,
                                              "max_position_embeddings": 16384,
                                              "rope_scaling": {"factor": 8.0, "type": "linear"}}, 128),
    # internlm/internlm2_5-7b-chat, config.json: dynamic NTK in the old form, the length on the config
    ("internlm2.5-7b-dynamic", LlamaConfig, {"hidden_size": 4096, "num_attention_heads": 32,
                                             "num_key_value_heads": 8, "max_position_embeddings": 32768,
                                             "rope_theta": 1000000, "rope_scaling": {"type": "dynamic",
                                                                                     "factor": 2.0}}, 128),
]


@contextlib.contextmanager
def hf_warnings():
    """The warnings transformers logs inside the block, as a list of messages."""
    messages = []
    handler = logging.Handler()
    handler.emit = lambda record: messages.append(record.getMessage())
    root = hf_logging._get_library_root_logger()
    level = hf_logging.get_verbosity()
    root.addHandler(handler)
    hf_logging.set_verbosity_warning()
    try:
        yield messages
    finally:
        root.removeHandler(handler)
        hf_logging.set_verbosity(level)


def hf_released(config_class, fields):
    """transformers' config for these config.json fields, and the warnings it logged building it."""
    with hf_warnings() as logged:
        config = config_class(**{**fields, "rope_scaling": dict(fields["rope_scaling"])})
    return config, logged


@pytest.mark.parametrize("config_class, fields, d_head", [pytest.param(*r[1:], id=r[0]) for r in RELEASED])
def test_a_released_config_as_transformers_stores_it_gives_transformers_frequencies(config_class, fields, d_head):
    config, logged = hf_released(config_class, fields)
    stored = config.rope_parameters
    assert stored["rope_theta"] == fields.get("rope_theta", 10000.0)   # what the practitioner is handed
    if "type" in fields["rope_scaling"]:
        assert stored["type"] == stored["rope_type"] == fields["rope_scaling"]["type"]   # both keys kept
    rope_type = stored["rope_type"]
    seq_lens = [None] if rope_type != "dynamic" else [1, 32768, 32769, 100_000]
    for seq_len in seq_lens:
        with hf_float64():
            expected, expected_factor = hf_rope.ROPE_INIT_FUNCTIONS[rope_type](config, None, seq_len=seq_len)
        with warnings.catch_warnings():
            warnings.simplefilter("error")                          # transformers logged nothing: neither do we
            inv_freq, factor = rope_frequencies(d_head, scaling=dict(stored), seq_len=seq_len,
                                                max_position_embeddings=config.max_position_embeddings)
        close(inv_freq, expected, rtol=1e-14)
        assert factor == pytest.approx(expected_factor, rel=1e-15, abs=0)
        hf32, _ = hf_rope.ROPE_INIT_FUNCTIONS[rope_type](config, None, seq_len=seq_len)     # as it ships
        close(inv_freq, hf32.double(), rtol=8 * torch.finfo(torch.float32).eps)
    assert logged == []
    assert stored == config.rope_parameters                        # the caller's dict is left as it was


@pytest.mark.parametrize("name", ["qwen2.5-7b-yarn", "internlm2.5-7b-dynamic"])
def test_rope_with_a_released_config_equals_transformers_rotary_module(name):
    _, config_class, fields, d_head = next(r for r in RELEASED if r[0] == name)
    config, _ = hf_released(config_class, fields)
    module = modeling_qwen2.Qwen2RotaryEmbedding if config_class is Qwen2Config else modeling_llama.LlamaRotaryEmbedding
    positions = torch.tensor([0, 1, 2, 5, 1000, 32767, 40_000, 65_535])      # past 32,768: dynamic grows
    x = torch.randn(1, 2, len(positions), d_head, generator=torch.Generator().manual_seed(8))
    cos, sin = module(config)(x, positions[None, :])
    expected, _ = modeling_llama.apply_rotary_pos_emb(x, x, cos, sin)
    got = rope(x, positions, interleaved=False, scaling=config.rope_parameters,
               max_position_embeddings=config.max_position_embeddings)
    tolerance = 4 * float(positions.max()) * torch.finfo(torch.float32).eps * float(x.abs().max()) * 1.2
    assert float((got - expected).abs().max()) <= tolerance
    unscaled = rope(x, positions, base=fields["rope_theta"], interleaved=False)
    assert float((unscaled - expected).abs().max()) > tolerance


def test_the_old_type_key_alone_names_the_rope_type():
    """A config.json's own rope_scaling (before transformers adds rope_type) works as it is."""
    old = {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}
    new = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}
    for got, want in zip(rope_frequencies(128, base=1e6, scaling=old), rope_frequencies(128, base=1e6, scaling=new)):
        assert torch.equal(got, want) if isinstance(got, torch.Tensor) else got == want
    assert torch.equal(rope(X, scaling={"type": "default"}), rope(X))


def test_the_base_comes_from_rope_theta_when_left_out():
    scaling = {**LLAMA31, "rope_theta": LLAMA31_BASE}
    given = rope_frequencies(128, base=LLAMA31_BASE, scaling=LLAMA31)[0]
    assert torch.equal(rope_frequencies(128, scaling=scaling)[0], given)
    assert torch.equal(rope_frequencies(128, base=500000, scaling=scaling)[0], given)   # equal: accepted
    assert torch.equal(rope_frequencies(8)[0], rope_frequencies(8, base=10000.0)[0])    # nothing: 10,000


def test_a_partial_rotary_factor_of_one_is_accepted_and_others_say_how_to_compute_them():
    config = Phi3Config()                                          # stores partial_rotary_factor = 1.0
    assert config.rope_parameters["partial_rotary_factor"] == 1.0
    with hf_float64():
        expected, _ = modeling_llama.LlamaRotaryEmbedding.compute_default_rope_parameters(config)
    close(rope_frequencies(96, scaling=config.rope_parameters)[0], expected, rtol=1e-14)
    # GPT-NeoX-20B rotates 25 % of each 96-feature head; transformers stores the share in the dict
    neox = GPTNeoXConfig(hidden_size=6144, num_attention_heads=64, rotary_pct=0.25,
                         rope_scaling={"type": "linear", "factor": 2.0})
    stored = neox.rope_parameters
    assert stored["partial_rotary_factor"] == 0.25
    with pytest.raises(ValueError, match=r"first int\(d_head \* 0.25\) = 24 features .* d_head=24"):
        rope_frequencies(96, scaling=stored)
    with hf_float64():
        expected, _ = hf_rope.ROPE_INIT_FUNCTIONS["linear"](neox, None)
    rest = {key: value for key, value in stored.items() if key != "partial_rotary_factor"}
    close(rope_frequencies(24, scaling=rest)[0], expected, rtol=1e-14)   # the recipe the error gives


def test_longrope_stays_an_error():
    phi3 = Phi3Config(max_position_embeddings=131072, original_max_position_embeddings=4096,
                      rope_scaling={"type": "longrope", "short_factor": [1.0] * 48, "long_factor": [2.0] * 48})
    assert phi3.rope_parameters["rope_type"] == "longrope"
    with pytest.raises(ValueError, match=r"'longrope': LongRoPE .*short_factor or long_factor.*"
                                         r"ROPE_INIT_FUNCTIONS\['longrope'\]\(config, seq_len=T\)"):
        rope_frequencies(96, scaling=phi3.rope_parameters, max_position_embeddings=131072)
    short, _ = hf_rope.ROPE_INIT_FUNCTIONS["longrope"](phi3, None, seq_len=4096)   # the recipe it gives
    long, _ = hf_rope.ROPE_INIT_FUNCTIONS["longrope"](phi3, None, seq_len=8192)
    close(long * 2, short, rtol=1e-6)                       # long_factor 2 against short_factor 1


def test_proportional_and_axial_errors_name_what_to_use_and_the_recipes_work():
    """The refusals of 'proportional' and 'axial' name an alternative, and that alternative runs."""
    gemma4 = transformers.Gemma4TextConfig().rope_parameters["full_attention"]
    assert gemma4["rope_type"] == "proportional"
    with pytest.raises(ValueError, match=r"'proportional' \(Gemma 4\).*which this module does not "
                                         r"implement; with partial_rotary_factor 1 it equals rope_type "
                                         r"'linear'.*ROPE_INIT_FUNCTIONS\['proportional'\]"):
        rope_frequencies(512, scaling=gemma4)
    # the recipe for a whole head: 'proportional' is 'linear' with the same factor, 'default' without
    for extra, ours in (({"factor": 2.0}, {"rope_type": "linear", "factor": 2.0}),
                        ({"partial_rotary_factor": 1.0}, {"rope_type": "default"})):
        config = LlamaConfig(hidden_size=512, num_attention_heads=4,
                             rope_parameters={"rope_type": "proportional", "rope_theta": 10000.0, **extra})
        with hf_float64():
            expected, _ = hf_rope.ROPE_INIT_FUNCTIONS["proportional"](config, None)
        close(rope_frequencies(128, scaling=ours)[0], expected, rtol=1e-14)
    # and the one for part of a head (Gemma 4's full-attention layers rotate a quarter of each)
    config = transformers.Gemma4TextConfig()
    part, _ = hf_rope.ROPE_INIT_FUNCTIONS["proportional"](config, None, layer_type="full_attention")
    assert part.shape == (256,) and int((part > 0).sum()) == 64
    from transformers.models.qwen3_vl.modeling_qwen3_vl import Qwen3VLVisionRotaryEmbedding
    vision = transformers.Qwen3VLConfig().vision_config
    assert vision.rope_parameters["rope_type"] == "axial"
    with pytest.raises(ValueError, match=r"got 'axial'.*which this module does not implement; use the vision "
                                         r"model's own rotary module.*Qwen3VLVisionRotaryEmbedding"):
        rope_frequencies(64, scaling=vision.rope_parameters)
    assert Qwen3VLVisionRotaryEmbedding(vision).rope_type == "axial"       # the module the error names


def _warned(**kwargs):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = rope_frequencies(**kwargs)
    return result, [str(w.message) for w in caught]


def test_max_position_embeddings_where_unused_is_accepted_with_a_warning_where_transformers_warns():
    # as the argument (a config attribute): transformers says nothing, nor do we, and nothing changes
    plain = rope_frequencies(64, scaling=LINEAR)
    got, said = _warned(d_head=64, scaling=LINEAR, max_position_embeddings=4096)
    assert torch.equal(got[0], plain[0]) and said == []
    # inside the dict: transformers warns of an unrecognized key and ignores it; so do we
    with hf_warnings() as logged:
        hf_config(64, 10000.0, LINEAR).validate_rope()
        LlamaConfig(hidden_size=128, num_attention_heads=2, head_dim=64,
                    rope_scaling={**LINEAR, "max_position_embeddings": 4096})
    assert any("Unrecognized keys" in m and "max_position_embeddings" in m for m in logged), logged
    got, said = _warned(d_head=64, scaling={**LINEAR, "max_position_embeddings": 4096})
    assert torch.equal(got[0], plain[0])
    assert len(said) == 1 and "not used by rope_type 'linear'" in said[0]


@pytest.mark.parametrize("rope_type, scaling, max_len, pattern", [
    ("yarn", {**YARN, "factor": 4.0}, 4096 * 8, r"factor'\] = 4 is not max_position_embeddings / "),
    ("llama3", LLAMA3, 8192, r"original_max_position_embeddings'\] = 8192 is not less than"),
])
def test_inconsistent_lengths_warn_where_transformers_warns(rope_type, scaling, max_len, pattern):
    params = {key: value for key, value in scaling.items() if key != "rope_type"}
    config_class_args = {"hidden_size": 256, "num_attention_heads": 2, "head_dim": 128,
                         "max_position_embeddings": max_len}
    with hf_warnings() as logged:
        config = LlamaConfig(**config_class_args, rope_theta=10000.0, rope_scaling={"rope_type": rope_type, **params})
    assert logged, "transformers warns of this config"
    with hf_float64():
        expected, expected_factor = hf_rope.ROPE_INIT_FUNCTIONS[rope_type](config, None)
    (inv_freq, factor), said = _warned(d_head=128, scaling=config.rope_parameters, max_position_embeddings=max_len)
    assert len(said) == 1 and re.search(pattern, said[0]), said
    close(inv_freq, expected, rtol=1e-14)
    assert factor == pytest.approx(expected_factor, rel=1e-15)


def test_yarn_without_a_factor_uses_the_ratio_of_the_lengths_as_transformers_does():
    config = LlamaConfig(hidden_size=128, num_attention_heads=2, head_dim=64, max_position_embeddings=16384,
                         rope_scaling={"rope_type": "yarn", "factor": None, "original_max_position_embeddings": 4096})
    with hf_float64():
        expected, expected_factor = hf_rope.ROPE_INIT_FUNCTIONS["yarn"](config, None)
    (inv_freq, factor), said = _warned(d_head=64, scaling=config.rope_parameters, max_position_embeddings=16384)
    close(inv_freq, expected, rtol=1e-14)
    assert factor == pytest.approx(expected_factor, rel=1e-15) and factor == pytest.approx(0.1 * math.log(4) + 1)
    assert len(said) == 1 and "max_position_embeddings / original_max_position_embeddings = 4" in said[0]


def test_dynamic_reads_max_position_embeddings_from_the_argument_or_the_dict():
    in_dict = rope_frequencies(64, scaling=DYNAMIC, seq_len=5000)
    as_argument = rope_frequencies(64, scaling={"rope_type": "dynamic", "factor": 2.0}, seq_len=5000,
                                   max_position_embeddings=2048)
    both = rope_frequencies(64, scaling=DYNAMIC, seq_len=5000, max_position_embeddings=2048)
    assert torch.equal(in_dict[0], as_argument[0]) and torch.equal(in_dict[0], both[0])


# --- bad input ------------------------------------------------------------------------------------


#: rows in the form of tests/test_bad_input.py's table: (id, function, valid arguments, {argument: bad values})
CASES = [
    ("rope_frequencies", rope_frequencies, {"d_head": 8},
     {"d_head": ([*SIZE, 3, 7, -2, 2**41], "d_head"), "base": [b for b in BASE if b is not None],
      "seq_len": [0, -1, 2.5, True, "8", NAN], "max_position_embeddings": [0, -1, 2.5, True, "8", NAN, HUGE],
      "scaling": ([3, "linear", ["linear"], {}, {"type": "linear"}, {"type": ["linear"]}, {"rope_type": "longrope"},
                   {"type": "linear", "rope_type": "yarn", "factor": 2.0},
                   {**LINEAR, "partial_rotary_factor": 0.5}, {**LINEAR, "partial_rotary_factor": "1"},
                   {**LINEAR, "max_position_embeddings": 0}, {**YARN, "original_max_position_embeddings": HUGE},
                   {"rope_type": None}, {"rope_type": "linear"}, {**LINEAR, "factor": 0.5},
                   {**LINEAR, "factor": NAN}, {**LINEAR, "factor": INF}, {**LINEAR, "factor": "2"},
                   {**LINEAR, "factor": True}, {**LINEAR, "factor": HUGE}, {**LINEAR, "low_freq_factor": 1.0},
                   {**LINEAR, "rope_theta": 0.5}],
                  "scaling|factor|rope_type|rope_theta|partial_rotary_factor|max_position_embeddings")}),
    ("rope_frequencies-dynamic", rope_frequencies, {"d_head": 8, "scaling": DYNAMIC, "seq_len": 10},
     {"seq_len": ([None, 0, -1, 2.5, True, "10", NAN, HUGE, 10**300], "seq_len"),
      "d_head": ([2, 3], "d_head")}),
    ("rope-scaling", rope, {"x": X, "scaling": LINEAR},
     {"scaling": ([3, "linear", {"rope_type": "nope"}, {"rope_type": "linear"}, {**LINEAR, "factor": 0.99}],
                  "scaling|factor|rope_type"),
      "max_position_embeddings": [0, 2.5, True, "8", HUGE], "base": [b for b in BASE if b is not None],
      "positions": ([torch.tensor([0, -1, 2]), torch.tensor([0.0, NAN, 1.0], dtype=torch.float64),
                     torch.tensor([0.0, 1.0, INF], dtype=torch.float64), torch.zeros(3),
                     torch.zeros(3, dtype=torch.float16), torch.zeros(3, dtype=torch.complex64)],
                    "positions")}),
    ("rope-positions", rope, {"x": X},
     {"positions": ([torch.tensor([0.0, NAN, 1.0], dtype=torch.float64), torch.zeros(3),
                     torch.zeros(3, dtype=torch.bfloat16)], "positions")}),
]


def test_every_case_is_valid_with_its_valid_arguments():
    for _, fn, valid, _ in CASES:
        fn(**valid)


@pytest.mark.parametrize("fn, valid, name, value, pattern", list(bad_calls(CASES)))
def test_bad_argument_is_a_clear_error(fn, valid, name, value, pattern):
    with pytest.raises((TypeError, ValueError)) as info:
        fn(**{**valid, name: value})
    message = str(info.value)
    assert not GENERIC.search(message), f"generic error for {name}={value!r:.60}: {message}"
    assert re.search(pattern, message), f"{name}={value!r:.60}: the message does not name it: {message}"


def test_per_layer_rope_parameters_are_refused_with_the_layer_type_to_pass():
    """Gemma 3 stores one dict per layer type; the error names them, and the dict it names works."""
    config = transformers.Gemma3TextConfig()
    nested = config.rope_parameters
    assert set(nested) == {"sliding_attention", "full_attention"}
    with pytest.raises(ValueError, match=r"one rope_parameters dict per layer type \(\['sliding_attention', "
                                         r"'full_attention'\]\).*scaling=config.rope_parameters\['full_attention'\]"):
        rope_frequencies(config.head_dim, scaling=nested)
    with pytest.raises(ValueError, match="one rope_parameters dict per layer type"):
        rope(torch.zeros(3, 8), scaling=nested)
    for params in nested.values():                                 # the fix the message gives
        expected = 1.0 / params["rope_theta"] ** (torch.arange(0, 256, 2, dtype=torch.float64) / 256)
        close(rope_frequencies(256, scaling=params)[0], expected, rtol=1e-14)
    with pytest.raises(ValueError, match=r"must name its rope_type"):   # a flat dict without a type: as before
        rope_frequencies(8, scaling={"factor": 2.0})


def test_llama_4_scaling_beta_is_refused_with_what_it_does():
    """Ministral 3 scales its queries by position beside YaRN: never dropped in silence."""
    config = transformers.Ministral3Config()
    stored = config.rope_parameters
    assert stored["llama_4_scaling_beta"] == 0.1 and stored["rope_type"] == "yarn"
    with pytest.raises(ValueError, match=r"llama_4_scaling_beta'\] = 0.1: Ministral 3 .* multiply each query "
                                         r"at position m by 1 \+ beta \* ln\(1 \+ floor\(m / original_max_"
                                         r".*apply that query scale"):
        rope_frequencies(config.head_dim, scaling=stored, max_position_embeddings=config.max_position_embeddings)
    from transformers.models.ministral3 import modeling_ministral3
    scale = modeling_ministral3.get_llama_4_attn_scale(torch.tensor([[0, 16383, 16384, 50_000]]), 0.1, 16384)
    assert scale.flatten().tolist()[:2] == [1.0, 1.0] and scale.flatten()[2] > 1     # it does change the queries
    rest = {key: value for key, value in stored.items() if key != "llama_4_scaling_beta"}
    with hf_float64():
        expected, expected_factor = hf_rope.ROPE_INIT_FUNCTIONS["yarn"](config, None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")                            # max_position_embeddings in the dict
        got, factor = rope_frequencies(config.head_dim, scaling=rest,
                                       max_position_embeddings=config.max_position_embeddings)
    close(got, expected, rtol=1e-14)                               # the frequencies the message promises
    assert factor == pytest.approx(expected_factor, rel=1e-15)


def test_multimodal_rope_is_refused_with_the_frequencies_it_would_use():
    """Qwen2-VL's config.json: {"type": "mrope", "mrope_section": [16, 24, 24]}, kept by transformers."""
    config = transformers.Qwen2VLConfig(rope_scaling={"type": "mrope", "mrope_section": [16, 24, 24]}).text_config
    stored = config.rope_parameters
    assert stored["type"] == "mrope" and stored["rope_type"] == "default"
    for scaling in (stored, {"type": "mrope"}, {"rope_type": "default", "mrope_section": [2, 1, 1]}):
        with pytest.raises(ValueError, match=r"multimodal RoPE \(Qwen2-VL.*three positions.*frequencies are "
                                             r"those of rope_type 'default'.*without 'mrope_section'"):
            rope_frequencies(128, scaling=scaling)
    rest = {key: value for key, value in stored.items() if key not in ("type", "mrope_section")}
    with hf_float64():
        expected, _ = modeling_llama.LlamaRotaryEmbedding.compute_default_rope_parameters(config)
    close(rope_frequencies(128, scaling=rest)[0], expected, rtol=1e-14)


def test_every_default_config_of_transformers_is_accepted_or_refused_with_a_reason():
    """Each config class's defaults, as transformers stores them: computed, or refused with why
    (a few seconds: it builds every config class of transformers)."""
    reasons = ("partial_rotary_factor", "one rope_parameters dict per layer type", "llama_4_scaling_beta",
               "multimodal RoPE", "which this module does not implement")
    computed = refused = 0
    for name, config_class in sorted(transformers.CONFIG_MAPPING.items()):
        try:
            config = config_class()
        except Exception:                                          # needs arguments: not a default config
            continue
        stored = getattr(config, "rope_parameters", None)
        if not isinstance(stored, dict) or not stored:
            continue
        try:
            d_head = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
        except Exception:
            continue
        if not isinstance(d_head, int) or d_head % 2:
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                rope_frequencies(d_head, scaling=dict(stored), seq_len=4096,
                                 max_position_embeddings=int(getattr(config, "max_position_embeddings", 0) or 4096))
            computed += 1
        except ValueError as error:
            assert any(reason in str(error) for reason in reasons), (name, str(error))
            refused += 1
    assert computed > 100 and refused > 20, (computed, refused)


# (scaling or other arguments, error, regex): the message names the key, the valid range and the fix
MESSAGES = [
    ({"scaling": {"rope_type": "rope"}}, ValueError,
     r"rope_type'\] must be one of 'default', 'linear', 'dynamic', 'yarn', 'llama3', got 'rope'"),
    ({"scaling": {"factor": 2.0}}, ValueError, r"must name its rope_type"),
    ({"scaling": {"type": "yarn"}}, ValueError, r"missing 'factor', 'original_max_position_embeddings'"),
    ({"scaling": {**LINEAR, "type": "dynamic"}}, ValueError,
     r"scaling\['type'\] = 'dynamic' differs from scaling\['rope_type'\] = 'linear'.*reads rope_type only"),
    ({"scaling": {"rope_type": "longrope", "short_factor": [1.0] * 4, "long_factor": [1.0] * 4}}, ValueError,
     r"got 'longrope': LongRoPE .* short_factor or long_factor, which this module does not implement; "
     r"for its frequencies call transformers'"),
    ({"d_head": 96, "scaling": {**LINEAR, "partial_rotary_factor": 0.25}}, ValueError,
     r"partial_rotary_factor'\] = 0.25: .* first int\(d_head \* 0.25\) = 24 features.*d_head=24"),
    ({"scaling": {**LINEAR, "max_position_embeddings": 64}, "max_position_embeddings": 128}, ValueError,
     r"scaling\['max_position_embeddings'\] = 64 differs from max_position_embeddings = 128"),
    ({"scaling": {**YARN, "factor": None}}, ValueError,
     r"factor'\] is None: transformers then uses max_position_embeddings / original_max_position_embeddings"),
    ({"scaling": {**LINEAR, "rope_theta": 500000.0}, "base": 10000.0}, ValueError,
     r"rope_theta'\] = 500000 differs from base = 10000.*leave base out"),
    ({"scaling": {"rope_type": "linear"}}, ValueError, r"missing 'factor': rope_type 'linear' needs factor"),
    ({"scaling": {"rope_type": "yarn", "factor": 4.0}}, ValueError,
     r"missing 'original_max_position_embeddings'.*add it to scaling"),
    ({"scaling": {"rope_type": "llama3", "factor": 8.0}}, ValueError,
     r"missing 'original_max_position_embeddings', 'low_freq_factor', 'high_freq_factor'.*add them"),
    ({"scaling": {**LINEAR, "factor": 0.5}}, ValueError, r"scaling\['factor'\] must be a finite number >= 1, got 0.5"),
    ({"scaling": {**LINEAR, "factor": "2"}}, TypeError, r"scaling\['factor'\] must be a real number >= 1"),
    ({"scaling": {**LINEAR, "beta_fast": 32}}, ValueError,
     r"keys that rope_type 'linear' does not use: \['beta_fast'\]; it takes rope_type, factor"),
    ({"scaling": {**LINEAR, "facter": 2.0}}, ValueError,
     r"does not use: \['facter'\].*Check the spelling; a key that a model's own code reads changes what"),
    ({"scaling": {"rope_type": "axial"}}, ValueError,
     r"got 'axial': 'axial' \(vision encoders\) rotates image.*; use the vision model's own rotary module"),
    ({"scaling": {"rope_type": "proportional"}}, ValueError,
     r"got 'proportional'.*; with partial_rotary_factor 1 it equals rope_type 'linear' with the same factor"),
    ({"scaling": {**LLAMA3, "low_freq_factor": 4.0}}, ValueError,
     r"low_freq_factor'\] = 4 must be less than scaling\['high_freq_factor'\] = 4"),
    ({"scaling": {**LLAMA3, "low_freq_factor": 0.0}}, ValueError, r"low_freq_factor'\] must be a finite number > 0"),
    ({"scaling": {**LLAMA3, "original_max_position_embeddings": 8192.0}}, TypeError,
     r"original_max_position_embeddings'\] must be an int >= 1"),
    ({"scaling": {**YARN, "original_max_position_embeddings": 0}}, ValueError,
     r"original_max_position_embeddings'\] must be an int >= 1"),
    ({"scaling": {**YARN, "beta_fast": 1, "beta_slow": 32}}, ValueError,
     r"beta_fast'\] = 1 must be greater than scaling\['beta_slow'\] = 32"),
    ({"scaling": {**YARN, "beta_slow": 0}}, ValueError, r"beta_slow'\] must be a finite number > 0"),
    ({"scaling": {**YARN, "truncate": None}}, TypeError, r"scaling\['truncate'\] must be True or False"),
    ({"scaling": {**YARN, "truncate": "no"}}, TypeError, r"scaling\['truncate'\] must be True or False"),
    ({"scaling": {**YARN, "attention_factor": -1.0}}, ValueError, r"attention_factor'\] must be a finite number > 0"),
    ({"scaling": {**YARN, "mscale": 1.0}}, ValueError, r"'mscale' without the other.*give both"),
    ({"scaling": {"rope_type": "dynamic", "factor": 2.0}, "seq_len": 8}, ValueError,
     r"max_position_embeddings is missing: rope_type 'dynamic'.*max_position_embeddings=config"),
    ({"scaling": DYNAMIC}, ValueError, r"seq_len is missing: rope_type 'dynamic'.*pass seq_len="),
    ({"scaling": DYNAMIC, "seq_len": 0}, ValueError, r"seq_len must be an int >= 1"),
    ({"d_head": 2, "scaling": DYNAMIC, "seq_len": 8}, ValueError, r"d_head must be >= 4 for rope_type 'dynamic'"),
    ({"d_head": 7}, ValueError, r"d_head must be an even int >= 2, got 7.*use an even head size"),
    ({"d_head": 8.0}, TypeError, r"d_head must be an even int >= 2 .*got float"),
    ({"scaling": ("linear", 2.0)}, TypeError, r"scaling must be None or a dict"),
]


@pytest.mark.parametrize("kwargs, error, match", MESSAGES)
def test_bad_scaling_says_what_to_fix(kwargs, error, match):
    with pytest.raises(error, match=match):
        rope_frequencies(**{"d_head": 8, **kwargs})


@pytest.mark.parametrize("positions, error, match", [
    (torch.tensor([0, -3, 1]), ValueError, r"positions must be >= 0 with scaling.*got -3.*count positions from 0"),
    (torch.tensor([0.0, -0.5, 1.0], dtype=torch.float64), ValueError, r"positions must be >= 0 with scaling"),
    (torch.tensor([0.0, NAN, 1.0], dtype=torch.float64), ValueError, r"positions must be finite"),
    (torch.tensor([0.0, 0.5, 1.0]), TypeError, r"integer dtype, or float64 for fractional positions, got "
                                               r"torch.float32.*positions.double\(\)"),
])
def test_bad_positions_with_scaling_say_what_to_fix(positions, error, match):
    with pytest.raises(error, match=match):
        rope(torch.zeros(3, 8), positions, scaling=LINEAR)


def test_rope_frequencies_is_public():
    assert "rope_frequencies" in attention.__all__
    assert "\"Where positions act\"" in attention.rope_frequencies.__doc__
