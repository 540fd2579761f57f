"""tokvec.arrays and tokvec.layers: the vectorized input layer equals the pure-Python reference.

The layer is also tested against the source tutorials' own code (:mod:`tokvec.tutorials`), the
code learners arrive with, not a retyped version of it.
"""

import math

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from torch import nn

from tokvec import reference
from tokvec.arrays import embed_numpy, sinusoidal_table_numpy
from tokvec.layers import LearnedTransformerEmbedding, TransformerEmbedding, device, sinusoidal_table
from tokvec.tutorials.tutorial_002 import positional_encoding
from tokvec.tutorials.tutorial_004 import InputEmbeddings
from tokvec.validate import check_ids, check_offsets

CUDA = torch.cuda.is_available()
needs_cuda = pytest.mark.skipif(not CUDA, reason="no CUDA GPU on this machine: GPU checks not run here")


# --- strategies ------------------------------------------------------------------------------

@st.composite
def problems(draw):
    """A random layer size, a random batch of valid ids (first and last row included) and a seed."""
    V = draw(st.integers(1, 40))
    d = draw(st.integers(1, 12))
    max_len = draw(st.integers(1, 24))
    T = draw(st.integers(1, max_len))
    batched = draw(st.booleans())
    shape = (draw(st.integers(1, 3)), T) if batched else (T,)
    n = int(np.prod(shape))
    ids = draw(st.lists(st.integers(0, V - 1), min_size=n, max_size=n))
    ids[0], ids[-1] = 0, V - 1
    return V, d, max_len, np.array(ids, dtype=np.int64).reshape(shape), draw(st.integers(0, 2**31 - 1))


def reference_output(layer: nn.Module, ids: np.ndarray) -> np.ndarray:
    """tokvec.reference.embed on W_e = (weight * sqrt(d)) transposed and the exact sinusoidal W_p."""
    d, T = layer.d_model, ids.shape[-1]
    W_e = reference.transpose((layer.token.weight.detach().double().cpu() * math.sqrt(d)).tolist())
    W_p = reference.sinusoidal_positions(d, T)
    rows = ids.reshape(-1, T).tolist()
    return np.array([reference.embed(x, W_e, W_p) for x in rows]).reshape(*ids.shape, d)


# --- equivalence with the pure-Python reference ----------------------------------------------

@given(problems())
def test_layer_float64_equals_reference(problem):
    V, d, max_len, ids, seed = problem
    torch.manual_seed(seed)
    layer = TransformerEmbedding(V, d, max_len).double().eval()
    with torch.no_grad():
        out = layer(torch.from_numpy(ids))
    assert out.shape == (*ids.shape, d) and out.dtype == torch.float64
    np.testing.assert_allclose(out.numpy(), reference_output(layer, ids), rtol=0, atol=1e-12)


@given(problems())
def test_numpy_path_equals_reference(problem):
    V, d, max_len, ids, seed = problem
    torch.manual_seed(seed)
    layer = TransformerEmbedding(V, d, max_len)
    weight = layer.token.weight.detach().double().numpy()
    out = embed_numpy(ids, weight, sinusoidal_table_numpy(max_len, d))
    np.testing.assert_allclose(out, reference_output(layer, ids), rtol=0, atol=1e-12)


@pytest.mark.parametrize("d", [1, 2, 7, 64, 513])
def test_table_is_reference_transposed(d):
    table = sinusoidal_table(50, d, dtype=torch.float64)
    expected = np.array(reference.transpose(reference.sinusoidal_positions(d, 50)))
    assert table.shape == (50, d)
    np.testing.assert_allclose(table.numpy(), expected, rtol=0, atol=1e-13)


def test_float32_table_within_1e6_below_100k_and_lesson_recipe_is_not():
    d = 512
    exact = sinusoidal_table_numpy(100_000, d)
    ours = sinusoidal_table(100_000, d, dtype=torch.float32).double().numpy()
    seed = positional_encoding(100_000, d).double().numpy()
    assert np.abs(ours - exact).max() <= 1e-6
    assert np.abs(seed - exact).max() > 1e-3           # the seeds' float32 angles drift by ~7e-3


def test_table_rows_do_not_depend_on_length():
    long, short = sinusoidal_table(300, 10), sinusoidal_table(20, 10)
    assert torch.equal(long[:20], short)


# --- equality with the seeds' own code -------------------------------------------------------

@pytest.mark.parametrize("V,d,T,batch", [(10, 4, 6, None), (100, 64, 33, 3), (1000, 512, 128, 2)])
def test_layer_equals_input_embeddings_note_plus_lesson_encoding(V, d, T, batch):
    torch.manual_seed(0)
    layer = TransformerEmbedding(V, d, max_len=T).eval()
    seed = InputEmbeddings(d, V)
    with torch.no_grad():
        seed.embedding.weight.copy_(layer.token.weight)
        ids = torch.randint(0, V, (T,) if batch is None else (batch, T))
        expected = seed(ids) + positional_encoding(T, d)
        got = layer(ids)
    assert got.shape == expected.shape
    # Agreement to float32 rounding: the seed's float32 angles t * div_term drift by up to about
    # T * 6e-8 (8e-6 at T = 128), and the layer is the closer of the two to the exact table.
    torch.testing.assert_close(got, expected, rtol=0, atol=max(2e-6, T * 8e-8))
    exact = torch.from_numpy(sinusoidal_table_numpy(T, d))
    ours, theirs = (got - seed(ids)).double(), (expected - seed(ids)).double()
    assert (ours - exact).abs().max() <= (theirs - exact).abs().max()


def test_lesson_recipe_breaks_on_odd_d_model_and_the_layer_does_not():
    with pytest.raises(RuntimeError):
        positional_encoding(5, 7)                       # 4 sine columns into 3 cosine slots
    out = TransformerEmbedding(10, 7, 5)(torch.arange(5))
    assert out.shape == (5, 7)


# --- dropout, dtype, device, buffers ---------------------------------------------------------

def test_dropout_active_in_train_only():
    torch.manual_seed(0)
    layer = TransformerEmbedding(50, 32, 16, dropout=0.5)
    ids = torch.randint(0, 50, (4, 16))
    layer.train()
    a, b = layer(ids), layer(ids)
    assert not torch.equal(a, b)
    zeros = (a == 0).float().mean().item()
    assert 0.4 < zeros < 0.6
    layer.eval()
    c, d = layer(ids), layer(ids)
    assert torch.equal(c, d)
    kept = a != 0
    torch.testing.assert_close(a[kept], 2 * c[kept])    # survivors are scaled by 1 / (1 - p)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float64])
def test_output_follows_module_dtype(dtype):
    layer = TransformerEmbedding(20, 8, 10).to(dtype).eval()
    out = layer(torch.tensor([[1, 2, 3]]))
    assert out.dtype == dtype
    assert layer.pe.dtype == dtype


def test_table_rebuilt_from_float64_when_dtype_changes():
    layer = TransformerEmbedding(20, 16, 200).double()
    assert torch.equal(layer.pe, sinusoidal_table(200, 16, dtype=torch.float64))
    cast_twice = sinusoidal_table(200, 16).to(torch.float64)  # float32 first, then float64: two roundings
    assert not torch.equal(layer.pe, cast_twice)


def test_bf16_layer_is_one_table_rounding_from_exact():
    layer = TransformerEmbedding(20, 16, 64).float().to(torch.bfloat16)
    exact = sinusoidal_table(64, 16, dtype=torch.float64)
    assert torch.equal(layer.pe, exact.to(torch.bfloat16))


def test_table_is_neither_a_parameter_nor_saved():
    layer = TransformerEmbedding(20, 8, 10)
    assert set(layer.state_dict()) == {"token.weight"}
    assert [name for name, _ in layer.named_parameters()] == ["token.weight"]
    assert torch.equal(layer.pe, sinusoidal_table(10, 8))


def test_table_follows_a_dtype_change_made_through_a_parent_module():
    """A container's .to() reaches the layer without calling its .to(): the table still follows."""
    model = nn.Sequential(TransformerEmbedding(20, 8, 10)).eval()
    assert model[0].pe.dtype == torch.float32
    model.half().double()                       # float32 -> float16 -> float64 weights
    assert torch.equal(model[0].pe, sinusoidal_table(10, 8, dtype=torch.float64))
    out = model(torch.tensor([1, 2, 3]))
    assert out.dtype == torch.float64


def test_no_private_torch_api_is_overridden():
    import inspect

    from tokvec import layers
    assert "_apply" not in vars(TransformerEmbedding)
    assert "._apply" not in inspect.getsource(layers)


GRAD_MODES = {"inference_mode": torch.inference_mode, "no_grad": torch.no_grad, "training": torch.enable_grad}


@pytest.mark.parametrize("mode", list(GRAD_MODES))
def test_torch_compile_of_a_fresh_layer_equals_the_eager_layer(mode):
    """torch.compile(layer) on a layer never called before, under inference mode, no_grad and in
    training: the same output (and in training the same gradient) as the eager layer. The table is
    built in __init__; built inside the first compiled call, torch 2.13 fails a guard of its own
    under inference mode ("Guard failed on the same frame it was created")."""
    torch._dynamo.reset()
    torch.manual_seed(0)
    layer = TransformerEmbedding(50, 8, 16, dropout=0.0)
    layer.train(mode == "training")
    ids = torch.tensor([[3, 1, 4, 1, 5], [9, 2, 6, 5, 3]])
    compiled = torch.compile(layer)
    with GRAD_MODES[mode]():
        got = compiled(ids, torch.tensor([0, 7]))
    with GRAD_MODES[mode]():
        want = layer(ids, torch.tensor([0, 7]))
    torch.testing.assert_close(got, want, rtol=1e-6, atol=1e-6)
    assert got.requires_grad == (mode == "training")
    if mode == "training":
        got.pow(2).sum().backward()
        grad = layer.token.weight.grad.clone()
        layer.token.weight.grad = None
        want.pow(2).sum().backward()
        torch.testing.assert_close(grad, layer.token.weight.grad, rtol=1e-5, atol=1e-5)


def test_the_table_is_built_in_init_and_rebuilt_in_eager_code_inside_torch_compile(monkeypatch):
    """No forward builds the table unless the dtype or device changed; then a compiled layer runs
    the rebuild as eager code (torch.compiler.disable) and gives the exact float64 table. It
    breaks its graph once, at the input check (the ids' range is read back to Python), and a bad
    id still gets the check's error, naming the id."""
    from tokvec import layers

    torch._dynamo.reset()
    layer = TransformerEmbedding(50, 8, 16, dropout=0.0).eval()
    ids = torch.tensor([[3, 1, 4], [1, 5, 9]])

    def no_build(*args):
        raise AssertionError("the table was built inside forward")

    with monkeypatch.context() as patched:
        patched.setattr(layers, "_table_like", no_build)
        with torch.inference_mode():
            explained = torch._dynamo.explain(layer)(ids)
            layer(ids)
    assert explained.graph_count == 2 and explained.graph_break_count == 1
    assert "data dependent" in str(explained.break_reasons[0].reason).lower()
    compiled = torch.compile(layer)
    layer.double()
    with torch.inference_mode():
        out = compiled(ids)
        assert out.dtype == torch.float64
        assert torch.equal(layer.pe, sinusoidal_table(16, 8, dtype=torch.float64))
        torch.testing.assert_close(out, layer(ids), rtol=0, atol=0)
        with pytest.raises(IndexError, match="token id 50 at index"):
            compiled(torch.tensor([[1, 50]]))


def test_vmap_over_the_ids_is_an_error_that_names_the_fix():
    layer = TransformerEmbedding(50, 8, 16).eval()
    ids = torch.tensor([[3, 1, 4], [1, 5, 9]])
    with pytest.raises(TypeError, match=r"torch.func.vmap.*call it on ids of shape \(B, T\)"):
        torch.func.vmap(layer)(ids[:, None, :])


def test_eval_forward_writes_into_the_gathered_rows_and_training_keeps_autograd():
    layer = TransformerEmbedding(50, 8, 16, dropout=0.0)
    ids = torch.tensor([[3, 1, 4, 1], [5, 9, 2, 6]])
    with torch.no_grad():
        expected = torch.add(layer.pe[:4], layer.token(ids), alpha=layer.scale)
        assert torch.equal(layer(ids), expected)
    out = layer(ids)                            # autograd on: the allocating form, same numbers
    assert torch.equal(out.detach(), expected)
    out.sum().backward()
    counts = torch.bincount(ids.flatten(), minlength=50).double()
    torch.testing.assert_close(layer.token.weight.grad.double().sum(1), counts * 8 * layer.scale)


@pytest.mark.parametrize("grad_mode", [torch.enable_grad, torch.no_grad])
def test_forward_mode_ad_goes_through_the_layer_and_agrees_with_reverse_mode(grad_mode):
    # a forward-mode tangent has requires_grad False, and survives no_grad: the layer must not
    # take its out= branch for it (autograd has no forward-mode formula for add's out=)
    from torch.autograd import forward_ad
    from torch.func import functional_call, jacfwd, jacrev, jvp

    torch.manual_seed(0)
    layer = TransformerEmbedding(20, 6, 8, dropout=0.0, dtype=torch.float64)
    ids = torch.tensor([[3, 1, 4, 1], [5, 9, 2, 6]])
    w = layer.token.weight.detach().clone()
    v = torch.randn_like(w)

    def f(weight):
        return functional_call(layer, {"token.weight": weight}, (ids,))

    with grad_mode():
        out, tangent = jvp(f, (w,), (v,))
        with forward_ad.dual_level():
            dual_out = f(forward_ad.make_dual(w, v))
            dual_tangent = forward_ad.unpack_dual(dual_out).tangent
    eps = 1e-6
    finite_difference = (f(w + eps * v) - f(w - eps * v)) / (2 * eps)
    torch.testing.assert_close(tangent, finite_difference.detach(), rtol=1e-7, atol=1e-7)
    torch.testing.assert_close(dual_tangent, tangent, rtol=0, atol=0)
    torch.testing.assert_close(out, f(w).detach(), rtol=0, atol=0)
    torch.testing.assert_close(jacfwd(f)(w), jacrev(f)(w), rtol=0, atol=0)


def test_padding_idx_row_is_zero_and_gets_no_gradient():
    layer = TransformerEmbedding(10, 4, 8, dropout=0.0, padding_idx=0)
    ids = torch.tensor([[5, 6, 0, 0]])
    layer(ids).sum().backward()
    assert torch.equal(layer.token.weight[0], torch.zeros(4))
    assert torch.equal(layer.token.weight.grad[0], torch.zeros(4))
    assert layer.token.weight.grad[5].abs().sum() > 0


def test_learned_variant_counts_parameters_and_refuses_longer_input():
    learned = LearnedTransformerEmbedding(100, 16, 32)
    sinus = TransformerEmbedding(100, 16, 32)
    count = lambda m: sum(p.numel() for p in m.parameters())  # noqa: E731
    assert count(learned) - count(sinus) == 32 * 16
    assert learned.eval()(torch.zeros(2, 32, dtype=torch.long)).shape == (2, 32, 16)
    with pytest.raises(ValueError, match="max_len = 32"):
        learned(torch.zeros(33, dtype=torch.long))


def test_learned_variant_equals_its_definition():
    torch.manual_seed(1)
    m = LearnedTransformerEmbedding(30, 8, 12).eval()
    ids = torch.randint(0, 30, (2, 12))
    expected = m.token.weight[ids] + m.position.weight[torch.arange(12)]
    torch.testing.assert_close(m(ids), expected, rtol=0, atol=0)


def test_device_prefers_cuda_then_mps_then_cpu():
    dev = device()
    if CUDA:
        assert dev.type == "cuda"
    elif torch.backends.mps.is_available():
        assert dev.type == "mps"
    else:
        assert dev.type == "cpu"


# --- bad input: checked before the lookup, with the value and the valid range -----------------

BAD = [
    (torch.tensor([1, -1]), IndexError, r"token id -1 at index \(1,\).*valid ids are 0\.\.9"),
    (torch.tensor([[1, 2], [3, 10]]), IndexError, r"token id 10 at index \(1, 1\).*valid ids are 0\.\.9"),
    (torch.tensor([1.0, 2.0]), TypeError, r"integer dtype, got torch\.float32.*ids\.long\(\)"),
    (torch.tensor([True]), TypeError, r"integer dtype, got torch\.bool"),
    (torch.zeros(1, 2, 3, dtype=torch.long), ValueError, r"shape \(1, 2, 3\) \(ndim 3\)"),
    (torch.tensor(3), ValueError, r"ndim 0"),
    (torch.zeros(9, dtype=torch.long), ValueError, r"T = 9 positions.*0\.\.7 \(max_len = 8\)"),
    ([1, 2], TypeError, r"got list.*torch\.tensor\(ids\)"),
]


@pytest.mark.parametrize("ids,error,message", BAD)
@pytest.mark.parametrize("cls", [TransformerEmbedding, LearnedTransformerEmbedding])
def test_bad_ids_raise_clear_errors(cls, ids, error, message):
    layer = cls(10, 4, 8)
    with pytest.raises(error, match=message):
        layer(ids)


@pytest.mark.parametrize("ids,error,message", BAD[:3] + BAD[4:7])
def test_numpy_path_raises_the_same_errors(ids, error, message):
    with pytest.raises(error, match=message.replace("torch\\.float32", "float32")):
        embed_numpy(ids.numpy(), np.zeros((10, 4)), np.zeros((8, 4)))


def test_negative_id_never_wraps_around_in_numpy():
    weight = np.arange(12.0).reshape(3, 4)
    assert np.array_equal(weight[np.array([-1])][0], weight[2])   # what plain NumPy does silently
    with pytest.raises(IndexError, match="token id -1"):
        embed_numpy(np.array([-1]), weight, np.zeros((4, 4)))


def test_empty_sequence_is_allowed():
    out = TransformerEmbedding(10, 4, 8)(torch.zeros(2, 0, dtype=torch.long))
    assert out.shape == (2, 0, 4)
    assert check_ids(np.zeros((0,), dtype=np.int32), 10, 8) == (None, 0)


@pytest.mark.parametrize("kwargs,message", [({"dropout": 1.0}, "dropout"), ({"dropout": -0.1}, "dropout")])
def test_bad_constructor_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        TransformerEmbedding(10, 4, 8, **kwargs)


@pytest.mark.parametrize("length,d,base,error,name", [
    (0, 4, 10000.0, ValueError, "length"), (4, 0, 10000.0, ValueError, "d_model"),
    (4, -2, 10000.0, ValueError, "d_model"), (4, 4, 1.0, ValueError, "base"),
    (4.5, 4, 10000.0, TypeError, "length"), (4, True, 10000.0, TypeError, "d_model"),
    (4, 4, float("nan"), ValueError, "base"), (4, 4, float("inf"), ValueError, "base"),
    (4, 4, 10**400, ValueError, "base"), (4, 4, "10000", TypeError, "base")])
def test_bad_table_arguments(length, d, base, error, name):
    with pytest.raises(error, match=rf"^{name} "):
        sinusoidal_table(length, d, base)


# --- on a CUDA GPU: the same checks, and a Python error instead of a device-side assert --------

@pytest.mark.gpu
@needs_cuda
@given(problems())
def test_cuda_layer_equals_reference(problem):
    V, d, max_len, ids, seed = problem
    torch.manual_seed(seed)
    layer = TransformerEmbedding(V, d, max_len).double().eval().cuda()
    with torch.no_grad():
        out = layer(torch.from_numpy(ids).cuda())
    assert out.device.type == "cuda"
    np.testing.assert_allclose(out.cpu().numpy(), reference_output(layer, ids), rtol=0, atol=1e-12)


@pytest.mark.gpu
@needs_cuda
@pytest.mark.parametrize("ids,error,message", BAD[:3] + BAD[4:7])
def test_cuda_bad_ids_raise_python_errors_and_the_process_survives(ids, error, message):
    layer = TransformerEmbedding(10, 4, 8).cuda()
    with pytest.raises(error, match=message):
        layer(ids.cuda())
    torch.cuda.synchronize()                            # no device-side assert pending
    assert layer(torch.tensor([0, 9], device="cuda")).shape == (2, 4)


@pytest.mark.gpu
@needs_cuda
def test_cuda_bf16_output_stays_bf16():
    layer = TransformerEmbedding(100, 64, 32).cuda().to(torch.bfloat16).eval()
    out = layer(torch.randint(0, 100, (2, 32), device="cuda"))
    assert out.dtype == torch.bfloat16 and out.device.type == "cuda"


# --- initialization: std d_model ** -0.5, so the scaled token part has std 1 like the table -------

@pytest.mark.parametrize("d", [64, 512])
def test_token_table_starts_with_std_inverse_sqrt_d(d):
    torch.manual_seed(0)
    layer = TransformerEmbedding(4096, d, 16)
    std = layer.token.weight.std().item()
    assert abs(std * math.sqrt(d) - 1) < 0.02                 # std d ** -0.5, within sampling error
    token_norm = (layer.token.weight * layer.scale).norm(dim=1).mean().item()  # about sqrt(d)
    table_norm = layer.pe.norm(dim=1).mean().item()                            # sqrt(d/2) exactly
    assert table_norm == pytest.approx(math.sqrt(d / 2))
    assert 1.3 < token_norm / table_norm < 1.5      # about sqrt(2); N(0, 1) gave sqrt(2 d): 32 at d=512


def test_init_std_one_gives_the_tutorials_normal_init_and_padding_stays_zero():
    torch.manual_seed(0)
    layer = TransformerEmbedding(4096, 64, 8, init_std=1.0, padding_idx=0)
    assert abs(layer.token.weight[1:].std().item() - 1) < 0.02
    assert torch.equal(layer.token.weight[0], torch.zeros(64))
    with pytest.raises(ValueError, match="init_std must be a finite number >= 0"):
        TransformerEmbedding(10, 4, 8, init_std=float("nan"))


# --- every integer dtype: the int64 result, or a TypeError naming the dtype and the fix ------------

@pytest.mark.parametrize("dtype", [torch.int8, torch.int16, torch.int32, torch.uint8])
@pytest.mark.parametrize("cls", [TransformerEmbedding, LearnedTransformerEmbedding])
def test_small_integer_ids_give_the_int64_result(cls, dtype):
    torch.manual_seed(0)
    layer = cls(10, 4, 8).eval()
    ids = torch.tensor([[1, 9, 0], [3, 3, 7]])
    assert torch.equal(layer(ids.to(dtype)), layer(ids))
    with pytest.raises(IndexError, match="token id 10"):
        layer(torch.tensor([1, 10], dtype=dtype))


@pytest.mark.parametrize("dtype", [torch.uint16, torch.uint32, torch.uint64])
def test_wide_unsigned_ids_name_the_dtype_and_the_fix(dtype):
    with pytest.raises(TypeError, match=rf"dtype {dtype}.*ids\.to\(torch\.int64\)"):
        TransformerEmbedding(10, 4, 8)(torch.tensor([1, 2], dtype=dtype))


@pytest.mark.parametrize("np_dtype", [np.int64, np.int32, np.uint8, np.uint64])
def test_numpy_ids_to_a_layer_name_the_fix_and_work_in_embed_numpy(np_dtype):
    ids = np.array([[1, 2, 3]], dtype=np_dtype)
    with pytest.raises(TypeError, match=rf"got a ndarray of dtype {np.dtype(np_dtype)}.*torch\.as_tensor"):
        TransformerEmbedding(10, 4, 8)(ids)
    weight, table = np.arange(40.0).reshape(10, 4), np.zeros((8, 4))
    assert np.array_equal(embed_numpy(ids, weight, table, scale=1.0), weight[[[1, 2, 3]]])


def test_ids_on_another_device_are_an_error_and_meta_gives_meta():
    layer = TransformerEmbedding(10, 4, 8)
    with pytest.raises(ValueError, match=r"ids are on meta but the layer's table is on cpu.*ids\.to\('cpu'\)"):
        layer(torch.tensor([1, 2], device="meta"))
    meta = TransformerEmbedding(10, 4, 8, device="meta")
    out = meta(torch.tensor([[1, 2, 3]], device="meta"))
    assert out.device.type == "meta" and out.shape == (1, 3, 4)


@pytest.mark.parametrize("padding_idx, error", [(10, ValueError), (-1, ValueError), (1.0, TypeError),
                                                (True, TypeError)])
def test_padding_idx_out_of_range_names_padding_idx(padding_idx, error):
    with pytest.raises(error, match="padding_idx"):
        TransformerEmbedding(10, 4, 8, padding_idx=padding_idx)


@pytest.mark.parametrize("kwargs, error, name", [
    ({"vocab_size": 0}, ValueError, "vocab_size"), ({"vocab_size": 10.0}, TypeError, "vocab_size"),
    ({"d_model": -2}, ValueError, "d_model"), ({"d_model": True}, TypeError, "d_model"),
    ({"max_len": 0}, ValueError, "max_len"), ({"max_len": None}, TypeError, "max_len"),
    ({"dropout": "0.1"}, TypeError, "dropout"), ({"dropout": float("nan")}, ValueError, "dropout"),
    ({"base": 1.0}, ValueError, "base"), ({"base": 10**400}, ValueError, "base"),
    ({"dtype": torch.int64}, TypeError, "dtype"),
])
def test_layer_arguments_are_checked_up_front(kwargs, error, name):
    args = {"vocab_size": 10, "d_model": 4, "max_len": 8, **kwargs}
    with pytest.raises(error, match=rf"^{name} "):
        TransformerEmbedding(**args)
    if "base" not in kwargs:
        with pytest.raises(error, match=rf"^{name} "):
            LearnedTransformerEmbedding(**args)


def test_table_refuses_an_integer_dtype():
    with pytest.raises(TypeError, match=r"dtype must be a floating-point dtype.*torch\.int64"):
        sinusoidal_table(4, 4, dtype=torch.int64)
    with pytest.raises(TypeError, match="dtype must be a floating-point dtype"):
        sinusoidal_table_numpy(4, 4, dtype=np.int32)


def test_check_ids_reads_from_the_device_once(monkeypatch):
    """On a GPU every read-back is a synchronisation; a valid batch costs exactly one."""
    reads = []
    for name in ("item", "tolist", "__int__", "__index__"):
        original = getattr(torch.Tensor, name)

        def counted(self, *args, _original=original, _name=name, **kwargs):
            reads.append(_name)
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(torch.Tensor, name, counted)
    check_ids(torch.tensor([[1, 2, 3], [4, 5, 6]]), 10, 8)
    assert reads == ["tolist"]


def test_each_sequence_at_its_own_offset_equals_the_rows_of_the_table():
    """A server's batch: token t of sequence b at position offsets[b] + t (or every sequence at p)."""
    torch.manual_seed(0)
    layer = TransformerEmbedding(20, 8, 12, dropout=0.0).eval()
    ids, offsets = torch.randint(0, 20, (3, 4)), torch.tensor([0, 8, 5])
    with torch.no_grad():
        out = layer(ids, offsets)
        expected = layer.token(ids) * layer.scale + layer.pe[offsets[:, None] + torch.arange(4)]
        assert torch.allclose(out, expected, atol=1e-6)
        assert torch.allclose(layer(ids, 8), layer.token(ids) * layer.scale + layer.pe[8:12], atol=1e-6)
        assert torch.equal(layer(ids, 0), layer(ids))
    out = layer(ids, offsets)                                  # with autograd: the same, differentiable
    out.sum().backward()
    assert layer.token.weight.grad is not None


@pytest.mark.parametrize("offsets,error,message", [
    (torch.tensor([0, 9, 0]), IndexError, "offset 9 of sequence 1 is out of range: a sequence of 4 tokens "
                                          "must start in 0..8"),
    (9, IndexError, "offset 9 is out of range"),
    (torch.tensor([0, 1]), ValueError, "offsets must be shape \\(3,\\)"),
    ([0, 1, 2], TypeError, "offsets must be an int or an integer tensor"),
    (torch.tensor([0, 1, 2], dtype=torch.uint64), TypeError, "offsets have dtype torch.uint64, .* offsets.to"),
    (np.array([0, 1, 2]), TypeError, "offsets must be an int or a torch.Tensor of shape \\(B,\\), got a NumPy "
                                     "array array\\(\\[0, 1, 2\\]\\); convert it with torch.as_tensor\\(offsets"),
])
def test_bad_offsets_name_the_value_the_range_and_the_fix(offsets, error, message):
    layer = TransformerEmbedding(20, 8, 12, dropout=0.0)
    with pytest.raises(error, match=message):
        layer(torch.zeros(3, 4, dtype=torch.long), offsets)
    with pytest.raises(ValueError, match="an int \\(the ids have no batch dimension\\)"):
        layer(torch.zeros(4, dtype=torch.long), torch.tensor([0]))


def test_numpy_offsets_are_checked_like_tensors_and_the_layer_names_the_conversion():
    """validate takes NumPy offsets as it takes NumPy ids (their range read with min and max); the
    layer, whose table is a tensor, refuses them with the conversion, never a bare AttributeError
    from deep inside. A NumPy integer scalar is an int."""
    ids = torch.zeros(3, 4, dtype=torch.long)
    good, bad = np.array([0, 8, 1]), np.array([0, 9, 0])
    assert check_ids(ids.numpy(), 20, 12, offsets=good) == check_ids(ids, 20, 12, offsets=good) == (3, 4)
    assert check_offsets(good, 3, 4, 12) is good and check_offsets(np.array([], dtype=int), 0, 4, 12).size == 0
    message = "offset 9 of sequence 1 is out of range: a sequence of 4 tokens must start in 0..8"
    for call in (lambda: check_ids(ids.numpy(), 20, 12, offsets=bad), lambda: check_ids(ids, 20, 12, offsets=bad),
                 lambda: check_offsets(bad, 3, 4, 12)):
        with pytest.raises(IndexError, match=message):
            call()
    with pytest.raises(ValueError, match="offsets must be shape \\(3,\\), one per sequence, got shape \\(2,\\)"):
        check_offsets(np.array([0, 1]), 3, 4, 12)
    layer = TransformerEmbedding(20, 8, 12, dropout=0.0)
    with pytest.raises(TypeError, match="convert it with torch.as_tensor\\(offsets, device=ids.device\\)"):
        layer(ids, offsets=good)
    assert torch.equal(layer(ids, offsets=np.int64(3)), layer(ids, offsets=3))
    assert torch.equal(layer(ids, offsets=torch.as_tensor(good)), layer(ids, offsets=torch.tensor([0, 8, 1])))
