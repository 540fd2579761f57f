"""tokvec.fused: the Triton kernel computes weight[ids] * scale + table[:T] for every index.

Without a GPU the kernel runs in Triton's interpreter on CPU tensors: the same program, so its
indexing, masks and batch loop are checked on any Linux machine. The interpreter converts
float32 to bfloat16 by truncation, where a GPU rounds to nearest, so on CPU a bfloat16 result is
checked to within one bfloat16 step of the float64 reference; on CUDA the `gpu` tests check the
kernel's promise (float32 arithmetic, then one rounding: see ``bfloat16_promise``). Speed is for
the benchmark, never for tests.
"""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tokvec.arrays import sinusoidal_table_numpy

fused = pytest.importorskip("tokvec.fused")
if fused.triton is None:
    pytest.skip("Triton is not installed (it ships for Linux x86-64 only): fused-kernel tests not run",
                allow_module_level=True)

CUDA = torch.cuda.is_available()


def reference(ids, weight, table, scale):
    return weight.double()[ids] * scale + table.double()[: ids.shape[-1]]


def magnitude(ids, weight, table, scale):
    """The size of the terms being added: rounding errors scale with it, not with the sum."""
    return torch.maximum((weight.double()[ids] * scale).abs(), table.double()[: ids.shape[-1]].abs().expand_as(
        weight.double()[ids]))


def step(x: torch.Tensor, dtype) -> torch.Tensor:
    """The spacing of ``dtype`` numbers around each entry of ``x`` (one unit in the last place)."""
    mantissa = {torch.bfloat16: 7, torch.float32: 23, torch.float16: 10}[dtype]
    exponent = torch.floor(torch.log2(x.abs().clamp_min(1e-30)))
    return torch.pow(2.0, exponent - mantissa)


def bfloat16_promise(out, ref, size):
    """Check what the kernel promises for bfloat16 output, and return how many elements differ.

    The kernel computes ``row * scale + pe`` in float32 (two roundings, or one with a fused
    multiply-add) and rounds that once to bfloat16. So every element is within one bfloat16 step
    of the float64 value; and it equals the float64 value rounded once *except* where that value
    lies within the float32 error (at most about 1.5 float32 steps of the terms' size) of a
    bfloat16 rounding boundary, where the float32 result may land on the other side. Those
    elements, and only those, may differ, by exactly one bfloat16 step.
    """
    s = step(ref, torch.bfloat16)
    assert ((out.double() - ref).abs() <= s).all(), "an element is more than one bfloat16 step off"
    differ = out != ref.to(torch.bfloat16)
    boundary = (torch.floor(ref / s) + 0.5) * s                       # nearest rounding midpoint
    near = (ref - boundary).abs() <= 2 * step(size, torch.float32)
    assert not (differ & ~near).any(), "an element far from a rounding boundary was rounded wrongly"
    return int(differ.sum()), int(near.sum())


def test_the_bfloat16_promise_is_float32_then_one_rounding():
    """The kernel's arithmetic, simulated with PyTorch on the CPU (which rounds to nearest).

    It keeps the promise of :func:`bfloat16_promise`, and on half a million elements some do
    differ from the float64 value rounded once: "equal to the float64 value rounded once" is not
    a promise float32 arithmetic can keep, so no test may ask it of the GPU kernel either.
    """
    torch.manual_seed(0)
    V, D, B, T = 32000, 1000, 4, 129
    weight = torch.randn(V, D).to(torch.bfloat16)
    table = torch.from_numpy(sinusoidal_table_numpy(T, D)).float()
    ids = torch.randint(0, V, (B, T))
    scale = math.sqrt(D)
    simulated = (weight[ids].float() * scale + table).to(torch.bfloat16)
    ref, size = reference(ids, weight, table, scale), magnitude(ids, weight, table, scale)
    differ, near = bfloat16_promise(simulated, ref, size)
    assert 0 < differ <= near < ref.numel() // 1000


@settings(max_examples=25)
@given(V=st.integers(1, 50), D=st.integers(1, 80), B=st.integers(1, 3), T=st.integers(1, 13),
       block_t=st.sampled_from([1, 4, 16]), block_d=st.sampled_from([8, 32, 64]), seed=st.integers(0, 2**16))
def test_interpreted_kernel_matches_reference_in_float32(V, D, B, T, block_t, block_d, seed):
    """Odd T, D not a multiple of the block, blocks larger than the tensor, first and last row."""
    g = torch.Generator().manual_seed(seed)
    weight = torch.randn(V, D, generator=g)
    table = torch.from_numpy(sinusoidal_table_numpy(T + 2, D)).float()
    ids = torch.randint(0, V, (B, T), generator=g)
    ids[0, 0], ids[-1, -1] = 0, V - 1
    out = fused.fused_embedding(ids, weight, table, math.sqrt(D), block_t=block_t, block_d=block_d)
    assert out.shape == (B, T, D) and out.dtype == torch.float32
    ref = reference(ids, weight, table, math.sqrt(D))
    size = magnitude(ids, weight, table, math.sqrt(D))
    assert ((out.double() - ref).abs() <= 2 * step(size, torch.float32)).all()


def test_interpreted_kernel_bfloat16_within_one_step_and_unbatched_ids():
    torch.manual_seed(0)
    weight = torch.randn(37, 70).to(torch.bfloat16)
    table = torch.from_numpy(sinusoidal_table_numpy(9, 70))
    ids = torch.randint(0, 37, (9,))
    out = fused.fused_embedding(ids, weight, table, math.sqrt(70))
    assert out.shape == (9, 70) and out.dtype == torch.bfloat16
    ref = reference(ids, weight, table, math.sqrt(70))
    assert ((out.double() - ref).abs() <= step(ref, torch.bfloat16)).all()


def test_bad_shapes_and_devices_are_refused():
    w, table = torch.zeros(5, 4), torch.zeros(3, 4)
    with pytest.raises(ValueError, match="T = 4 positions"):
        fused.fused_embedding(torch.zeros(1, 4, dtype=torch.long), w, table, 1.0)
    with pytest.raises(ValueError, match="table must be"):
        fused.fused_embedding(torch.zeros(1, 2, dtype=torch.long), w, torch.zeros(3, 5), 1.0, check=False)
    with pytest.raises(ValueError, match="shape"):
        fused.fused_embedding(torch.zeros(1, 1, 1, dtype=torch.long), w, table, 1.0)
    assert fused.fused_embedding(torch.zeros(2, 0, dtype=torch.long), w, table, 1.0).shape == (2, 0, 4)
    with pytest.raises(ValueError, match="CUDA GPU"):
        fused.fused_embedding(torch.zeros(1, 2, dtype=torch.long), w, table, 1.0, interpret=False)


@pytest.mark.parametrize("dtype", [torch.float64, torch.int64])
def test_weights_the_kernel_cannot_honour_are_refused(dtype):
    """float64 would come back float64 but carry float32's error; integers are not a table."""
    w, table = torch.zeros(5, 4, dtype=dtype), torch.zeros(3, 4)
    with pytest.raises(TypeError, match=f"computes in float32 .* got a {dtype} weight"):
        fused.fused_embedding(torch.tensor([1, 2]), w, table, 1.0)
    assert set(fused.OUTPUT_DTYPES) == {torch.float32, torch.float16, torch.bfloat16}


def test_available_only_with_cuda():
    assert fused.available("cpu") is False
    assert fused.available() is CUDA


NO_CUDA = "no CUDA GPU on this machine: compiled-kernel checks not run here"


@pytest.mark.gpu
@pytest.mark.skipif(not CUDA, reason=NO_CUDA)
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32, torch.float16])
@pytest.mark.parametrize("B,T,D", [(4, 129, 1000), (1, 1, 4096), (3, 2048, 768)])
def test_compiled_kernel_keeps_its_promise_on_cuda(dtype, B, T, D):
    torch.manual_seed(0)
    V = 32000
    weight = torch.randn(V, D, device="cuda").to(dtype)
    table = torch.from_numpy(sinusoidal_table_numpy(T, D)).float().cuda()
    ids = torch.randint(0, V, (B, T), device="cuda")
    ids[0, 0], ids[-1, -1] = 0, V - 1
    out = fused.fused_embedding(ids, weight, table, math.sqrt(D))
    ref = reference(ids, weight, table, math.sqrt(D))
    if dtype == torch.bfloat16:
        bfloat16_promise(out, ref, magnitude(ids, weight, table, math.sqrt(D)))
    elif dtype == torch.float16:
        assert ((out.double() - ref).abs() <= step(ref, torch.float16).clamp_min(2.0**-24)).all()
    else:
        size = magnitude(ids, weight, table, math.sqrt(D))
        assert ((out.double() - ref).abs() <= 2 * step(size, torch.float32)).all()


@pytest.mark.gpu
@pytest.mark.skipif(not CUDA, reason=NO_CUDA)
@pytest.mark.parametrize("table_dtype", [torch.float64, torch.bfloat16])
@pytest.mark.parametrize("ids_dtype", [torch.int32, torch.uint8])
def test_compiled_kernel_takes_other_tables_and_ids_on_cuda(table_dtype, ids_dtype):
    torch.manual_seed(1)
    weight = torch.randn(97, 1000, device="cuda").to(torch.bfloat16)
    table = torch.from_numpy(sinusoidal_table_numpy(17, 1000)).to("cuda", table_dtype)
    ids = torch.randint(0, 97, (3, 17), device="cuda").to(ids_dtype)
    out = fused.fused_embedding(ids, weight, table, math.sqrt(1000))
    ref = reference(ids.long(), weight, table, math.sqrt(1000))
    bfloat16_promise(out, ref, magnitude(ids.long(), weight, table, math.sqrt(1000)))


@pytest.mark.gpu
@pytest.mark.skipif(not CUDA, reason=NO_CUDA)
def test_compiled_kernel_puts_each_sequence_at_its_own_offset_on_cuda():
    torch.manual_seed(2)
    B, T, D, L = 64, 3, 4096, 4096
    weight = torch.randn(32000, D, device="cuda").to(torch.bfloat16)
    table = torch.from_numpy(sinusoidal_table_numpy(L, D)).float().cuda()
    ids = torch.randint(0, 32000, (B, T), device="cuda")
    offsets = torch.randint(0, L - T + 1, (B,), device="cuda")
    out = fused.fused_embedding(ids, weight, table, 64.0, offsets=offsets)
    positions = offsets[:, None] + torch.arange(T, device="cuda")
    ref = weight.double()[ids] * 64.0 + table.double()[positions]
    size = torch.maximum((weight.double()[ids] * 64.0).abs(), table.double()[positions].abs())
    bfloat16_promise(out, ref, size)


@pytest.mark.gpu
@pytest.mark.skipif(not CUDA, reason=NO_CUDA)
def test_compiled_kernel_writes_nothing_past_the_end_and_survives_bad_ids_on_cuda():
    torch.manual_seed(3)
    B, T, D = 3, 17, 1000
    weight, ids = torch.randn(11, D, device="cuda"), torch.randint(0, 11, (B, T), device="cuda")
    table = torch.from_numpy(sinusoidal_table_numpy(T, D)).float().cuda()
    launch = fused.launch_grid(B, T, D)
    buffer = torch.full((B * T * D + 4096,), float("nan"), device="cuda")
    fused.kernel(interpret=False)[launch.grid](ids, weight, table, buffer, ids, B, T, 11, T, 2.0,
                                               launch.seqs_per_program, D=D, BLOCK_T=launch.block_t,
                                               BLOCK_D=launch.block_d, PER_SEQUENCE=False)
    assert buffer[B * T * D:].isnan().all(), "a write past the end of the output"
    assert torch.allclose(buffer[: B * T * D].view(B, T, D), weight[ids] * 2.0 + table, atol=1e-5, rtol=0)
    bad = ids.clone()
    bad[1, 2] = 11
    with pytest.raises(IndexError, match="token id 11 at index \\(1, 2\\)"):
        fused.fused_embedding(bad, weight, table, 2.0)
    unchecked = fused.fused_embedding(bad, weight, table, 2.0, check=False)      # never an out-of-bounds read
    assert unchecked[1, 2].isnan().all() and int(unchecked.isnan().sum()) == D
    assert (torch.ones(4, device="cuda") + 1).sum().item() == 8                   # the context lives on


@pytest.mark.parametrize("bad", [-1, 5])
def test_bad_ids_are_a_python_error_not_an_out_of_bounds_read(bad):
    w, table = torch.zeros(5, 4), torch.zeros(3, 4)
    with pytest.raises(IndexError, match=f"token id {bad} at index \\(0, 1\\) is out of range: valid ids are 0..4"):
        fused.fused_embedding(torch.tensor([[0, bad]]), w, table, 1.0)


def test_tensors_that_require_grad_are_refused_not_silently_detached():
    w = torch.zeros(5, 4, requires_grad=True)
    table = torch.zeros(3, 4)
    with pytest.raises(ValueError, match="no backward, but weight requires grad.*inference_mode"):
        fused.fused_embedding(torch.tensor([1, 2]), w, table, 1.0)
    with pytest.raises(ValueError, match="but table requires grad.*table.detach"):
        fused.fused_embedding(torch.tensor([1, 2]), w.detach(), table.requires_grad_(), 1.0)
    with pytest.raises(ValueError, match="but weight and table require grad.*TransformerEmbedding"):
        fused.fused_embedding(torch.tensor([1, 2]), w, table, 1.0)
    with torch.no_grad():                       # no graph is being recorded: nothing to lose
        assert fused.fused_embedding(torch.tensor([1, 2]), w, table, 1.0).shape == (2, 4)
    with torch.inference_mode():
        assert fused.fused_embedding(torch.tensor([1, 2]), w, table, 1.0).shape == (2, 4)


# --- the grid: computed on the CPU, no kernel launched ---------------------------------------

def covered(B, T, D, launch):
    """Which (b, t, d) each program of ``launch`` writes, as the kernel's index arithmetic does."""
    (nt, nd, nb), bt, bd, per = launch
    cells = {}
    for pt in range(nt):
        for pd in range(nd):
            for pb in range(nb):
                cells[(pt, pd, pb)] = {(b, t, d) for b in range(pb * per, min(pb * per + per, B))
                                       for t in range(pt * bt, pt * bt + bt) if t < T
                                       for d in range(pd * bd, pd * bd + bd) if d < D}
    return cells


@settings(max_examples=60)
@given(B=st.integers(1, 9), T=st.integers(1, 40), D=st.integers(1, 70), block_t=st.sampled_from([1, 4, 16]),
       block_d=st.sampled_from([8, 32, 256]), min_programs=st.integers(1, 64))
def test_the_grid_covers_every_element_once_and_every_program_has_work(B, T, D, block_t, block_d, min_programs):
    launch = fused.launch_grid(B, T, D, block_t=block_t, block_d=block_d, min_programs=min_programs)
    cells = covered(B, T, D, launch)
    assert all(cells.values()), "a program with nothing to do"
    everything = [c for part in cells.values() for c in part]
    assert len(everything) == len(set(everything)) == B * T * D
    assert launch.programs == len(cells) and launch.block_t <= block_t and launch.block_d <= block_d
    tiles = launch.grid[0] * launch.grid[1]
    assert launch.grid[2] == 1 or tiles < min_programs      # the batch is split only when needed


@settings(max_examples=15, deadline=None)
@given(B=st.integers(1, 5), T=st.integers(1, 9), D=st.integers(1, 40), block_t=st.sampled_from([1, 4, 16]),
       block_d=st.sampled_from([8, 32]), min_programs=st.integers(1, 16))
def test_the_interpreted_kernel_itself_writes_every_element_once_and_nothing_past_the_end(
        B, T, D, block_t, block_d, min_programs):
    """The same property as above, on the kernel rather than a model of it: launched by hand into a
    NaN-filled buffer with a guard after it, every output is written with the right value, and
    the guard is untouched (chapter 10.1 does this for one shape)."""
    g = torch.Generator().manual_seed(B * 1000 + T * 100 + D)
    weight, ids = torch.randn(7, D, generator=g), torch.randint(0, 7, (B, T), generator=g)
    table = torch.from_numpy(sinusoidal_table_numpy(T, D)).float()
    launch = fused.launch_grid(B, T, D, block_t=block_t, block_d=block_d, min_programs=min_programs)
    buffer = torch.full((B * T * D + 64,), float("nan"))
    fused.kernel(interpret=True)[launch.grid](ids, weight, table, buffer, ids, B, T, 7, T, 2.0,
                                              launch.seqs_per_program, D=D, BLOCK_T=launch.block_t,
                                              BLOCK_D=launch.block_d, PER_SEQUENCE=False)
    assert buffer[B * T * D:].isnan().all(), "a write past the end of the output"
    assert torch.allclose(buffer[: B * T * D].view(B, T, D), weight[ids] * 2.0 + table, atol=1e-6, rtol=0)


def test_one_decoding_step_launches_one_position_per_program_and_splits_the_batch():
    """T = 1: a grid of 4 x 128 tiles with no split would give one program per 128 features, each
    with 4 rows of which 3 are masked, looping over the whole batch in 32 programs."""
    assert fused.launch_grid(64, 1, 4096) == fused.Launch((1, 32, 32), 1, 128, 2)
    assert fused.launch_grid(256, 1, 4096) == fused.Launch((1, 32, 32), 1, 128, 8)
    assert fused.launch_grid(1, 1, 4096).programs == 32          # nothing left to split
    assert fused.launch_grid(1, 1, 24) == fused.Launch((1, 1, 1), 1, 32, 1)


def test_large_batches_keep_one_slice_so_the_positional_tile_is_read_once():
    assert fused.launch_grid(64, 2048, 4096) == fused.Launch((512, 32, 1), 4, 128, 64)
    assert fused.launch_grid(8, 2048, 4096).grid == (512, 32, 1)
    gpt2 = fused.launch_grid(32, 512, 768)                        # 768 tiles: too few for a GPU
    assert gpt2.grid[:2] == (128, 6) and gpt2.programs >= fused.MIN_PROGRAMS


def test_the_grid_of_a_shape_is_computed_once_and_bad_arguments_are_still_refused():
    first = fused.launch_grid(5, 7, 9, block_t=2, block_d=8)
    assert fused.launch_grid(5, 7, 9, block_t=2, block_d=8) is first           # looked up, not recomputed
    with pytest.raises(TypeError, match="batch must be an int >= 1"):
        fused.launch_grid(5.0, 7, 9, block_t=2, block_d=8)                      # 5.0 == 5, but not an int
    with pytest.raises(TypeError, match="batch must be an int >= 1"):
        fused.launch_grid(True, 7, 9)


@pytest.mark.parametrize("kwargs,error,message", [
    ({"block_t": 12}, ValueError, "block_t must be a power of two .* got 12; try 16"),
    ({"block_d": 0}, ValueError, "block_d must be an int >= 1"),
    ({"min_programs": 2.0}, TypeError, "min_programs must be an int >= 1"),
])
def test_bad_blocks_are_refused(kwargs, error, message):
    with pytest.raises(error, match=message):
        fused.launch_grid(2, 3, 4, **kwargs)
    with pytest.raises(ValueError, match="seq_len must be an int >= 1"):
        fused.launch_grid(2, 0, 4)


def test_interpreted_kernel_with_uneven_batch_slices_matches_reference():
    """Seven sequences in slices of three: the last program loops over one sequence only."""
    torch.manual_seed(1)
    weight, ids = torch.randn(11, 20), torch.randint(0, 11, (7, 3))
    table = torch.from_numpy(sinusoidal_table_numpy(3, 20)).float()
    assert fused.launch_grid(7, 3, 20, block_d=8, min_programs=9).seqs_per_program == 3
    out = fused.fused_embedding(ids, weight, table, 2.0, block_d=8, min_programs=9)
    assert torch.allclose(out, weight[ids] * 2.0 + table, atol=1e-6, rtol=0)


def test_kernel_is_a_module_level_triton_jit_function():
    import triton

    assert isinstance(fused._embedding_kernel, triton.runtime.JITFunction)


# --- per-sequence positions, and the kernel's own guard -----------------------------------------

@settings(max_examples=20, deadline=None)
@given(V=st.integers(1, 30), D=st.integers(1, 40), B=st.integers(1, 4), T=st.integers(1, 6),
       L=st.integers(6, 20), block_t=st.sampled_from([1, 4]), seed=st.integers(0, 2**16))
def test_interpreted_kernel_puts_each_sequence_at_its_own_offset(V, D, B, T, L, block_t, seed):
    """Token t of sequence b at position offsets[b] + t, against the plain expression; every start
    from 0 to the last that fits."""
    g = torch.Generator().manual_seed(seed)
    weight, ids = torch.randn(V, D, generator=g), torch.randint(0, V, (B, T), generator=g)
    table = torch.from_numpy(sinusoidal_table_numpy(L, D)).float()
    offsets = torch.randint(0, L - T + 1, (B,), generator=g)
    offsets[0] = L - T                                                   # the last start that fits
    out = fused.fused_embedding(ids, weight, table, 1.5, offsets=offsets, block_t=block_t, block_d=8)
    plain = weight[ids] * 1.5 + table[offsets[:, None] + torch.arange(T)]
    assert torch.allclose(out, plain, atol=1e-5, rtol=0)
    same = fused.fused_embedding(ids, weight, table, 1.5, offsets=int(offsets[0]), block_d=8)
    assert torch.allclose(same, weight[ids] * 1.5 + table[L - T:], atol=1e-5, rtol=0)


@pytest.mark.parametrize("offsets,error,message", [
    (torch.tensor([0, 6]), IndexError, "offset 6 of sequence 1 is out of range: a sequence of 3 tokens "
                                       "must start in 0..5 \\(max_len = 8\\)"),
    (torch.tensor([-1, 0]), IndexError, "offset -1 of sequence 0 is out of range"),
    (6, IndexError, "offset 6 is out of range: a sequence of 3 tokens must start in 0..5"),
    (torch.tensor([0, 1, 2]), ValueError, "offsets must be shape \\(2,\\), one per sequence, got shape \\(3,\\)"),
    (torch.tensor([0.0, 1.0]), TypeError, "offsets must be an int or an integer tensor"),
])
def test_bad_offsets_are_an_error_that_names_the_value_and_the_range(offsets, error, message):
    w, table = torch.zeros(5, 4), torch.zeros(8, 4)
    with pytest.raises(error, match=message):
        fused.fused_embedding(torch.zeros(2, 3, dtype=torch.long), w, table, 1.0, offsets=offsets)


def test_unchecked_bad_ids_and_offsets_give_nan_rows_never_a_read_outside_the_tables():
    """check=False skips the read-back; the kernel's guard still never reads outside the table:
    the row of a bad id or position is NaN, the others are right."""
    torch.manual_seed(4)
    weight, table = torch.randn(6, 10), torch.randn(9, 10)
    ids = torch.randint(0, 6, (3, 2))
    ids[0, 1], ids[2, 0] = 6, -3                                        # past the end, negative
    out = fused.fused_embedding(ids, weight, table, 1.0, check=False)
    assert out[0, 1].isnan().all() and out[2, 0].isnan().all() and int(out.isnan().sum()) == 20
    good = torch.ones(3, 2, dtype=torch.bool)
    good[0, 1] = good[2, 0] = False
    assert torch.allclose(out[good], (weight[ids.clamp(0, 5)] + table[:2])[good], atol=1e-6)
    shifted = fused.fused_embedding(ids.clamp(0, 5), weight, table, 1.0, offsets=torch.tensor([0, 8, -1]),
                                    check=False)
    # position 9 (sequence 1, token 1) and position -1 (sequence 2, token 0) are outside the table
    assert shifted[1, 1].isnan().all() and shifted[2, 0].isnan().all() and int(shifted.isnan().sum()) == 20
    with pytest.raises(ValueError, match="offsets must be a \\(3,\\) integer tensor"):
        fused.fused_embedding(ids, weight, table, 1.0, offsets=torch.tensor([0, 1]), check=False)


def test_ids_and_offsets_are_checked_with_one_read_back(monkeypatch):
    """A decoding step pays one synchronisation for its checks, not one per tensor."""
    from tokvec import validate

    calls = []
    real = validate.torch_aminmax
    monkeypatch.setattr(validate, "torch_aminmax", lambda *t: calls.append(len(t)) or real(*t))
    w, table = torch.randn(5, 4), torch.randn(8, 4)
    fused.fused_embedding(torch.tensor([[1], [2]]), w, table, 1.0, offsets=torch.tensor([3, 7]))
    assert calls == [2]                                                  # ids and offsets together


def test_the_kernel_compiles_for_hopper_with_vector_accesses():
    """Triton compiles the kernel ahead of time for an H100 (sm_90) on any Linux machine: 16-byte
    loads and stores where a thread holds 16 bytes, a fused multiply-add, no spill at the default
    settings. d = 1000 is no multiple of 16, yet vectorised, because d is a compile-time constant
    (a plain integer argument would only be known divisible by 16). A tile of 32 x 512 on 2 warps
    gives each thread 256 values: its registers run out and spill, which is why the GPU sweep timed
    it at twice the default."""
    from tokvec.bench.compiled import compile_kernel

    wide = compile_kernel(4096, block_t=16, block_d=256)          # 32 bfloat16 a thread: 64 bytes
    assert wide["v4_loads"] >= 8 and wide["v4_stores"] >= 4 and wide["fma"] > 0 and wide["spill_stores"] == 0
    odd = compile_kernel(1000, block_t=16, block_d=256, dtype="float16", table_dtype="float64")
    assert odd["v4_loads"] >= 1 and odd["v4_stores"] >= 1
    default = compile_kernel(4096)
    assert default["spill_stores"] == 0 and default["registers"] < 64
    assert compile_kernel(4096, block_t=1, per_sequence=True)["fma"] > 0
    assert compile_kernel(4096, block_t=32, block_d=512, num_warps=2)["spill_stores"] > 0


def test_int_offsets_are_checked_even_unchecked_and_numpy_ints_are_ints():
    """A Python or NumPy int offset costs nothing to check, so it is checked always: a negative one
    would otherwise slice the table from its end and give the last rows, silently."""
    import numpy as np

    w, table = torch.randn(5, 4), torch.randn(8, 4)
    ids = torch.tensor([[1, 2]])
    assert torch.equal(fused.fused_embedding(ids, w, table, 1.0, offsets=np.int64(3)),
                       fused.fused_embedding(ids, w, table, 1.0, offsets=3))
    for bad in (-2, 7):
        with pytest.raises(IndexError, match=f"offset {bad} is out of range: a sequence of 2 tokens must start "
                                             "in 0..6"):
            fused.fused_embedding(ids, w, table, 1.0, offsets=bad, check=False)
    with pytest.raises(TypeError, match="ids must have an integer dtype, got torch.float32"):
        fused.fused_embedding(ids.float(), w, table, 1.0, check=False)


def test_calls_past_the_kernels_32_bit_offsets_are_refused():
    """The positional offset t * d and the id offset b * T are 32-bit in the kernel: a call that would
    pass 2**31 there is an error that says how to split it, never a wrapped, negative offset."""
    meta = {"device": "meta"}
    w = torch.empty(10, 32768, **meta)
    with pytest.raises(ValueError, match="T \\* d = 2,147,483,648.*split the batch or the sequence"):
        fused.fused_embedding(torch.empty(1, 65536, dtype=torch.long, **meta), w,
                              torch.empty(65536, 32768, **meta), 1.0, interpret=True)
    with pytest.raises(ValueError, match="B \\* T = 2,147,483,648"):
        fused.fused_embedding(torch.empty(65536, 32768, dtype=torch.long, **meta), torch.empty(10, 8, **meta),
                              torch.empty(32768, 8, **meta), 1.0, interpret=True)
