"""Tests of the exercises of "Making it fast on a GPU"
(tokvec.course.grading reads this file; see its docstring).

Each section's visible tests go into the student notebook under the exercise; the hidden
ones only into the grader's copy. The names the tests use are the student's
(``defines``) and the chapter's own (``roofline``, ``fused``, ``dev``...). No test
needs a GPU or Triton, and none compares a time with a threshold: they check counts,
bytes and results. The visible tests of the counting exercises check types, ranges and
consistency; the values themselves are checked by the hidden ones.
"""
# ruff: noqa: F821 (the names are defined by the notebook the tests run in)

# %% gpu-ex-llama3 | points: 2 | defines: e, f, pe, eager_pe, again
with check("e and f: bytes of the eager expression and of the fused kernel at "
           "8 x 8192 x 4096, the last dtype you computed"):
    assert all(isinstance(_n, int) for _n in (e, f)), "count bytes in whole numbers"
    assert 1e9 < f < e < 1e11, (
        "e, f: gigabytes each, and the eager expression moves more than the kernel")
with check("pe: the fused kernel's float32 positional tile, in bytes"):
    assert isinstance(pe, int), f"an int, not {type(pe).__name__}"
    assert 0 < pe < f, "a part of the fused kernel's bytes"
    assert pe % (4096 * 4) == 0, "whole positions of d = 4096 float32 numbers"
with check("eager_pe and again: eager's tile in its dtype, re-read by the further "
           "sequences"):
    assert isinstance(eager_pe, int) and isinstance(again, int), "ints, in bytes"
    assert 0 < eager_pe <= pe, "eager's tile, in bfloat16 or float32: at most pe"
    assert again % eager_pe == 0 and 0 < again // eager_pe < 8, (
        "again: one re-read of eager's tile for each further sequence of the batch")
# %% hidden
with check("e and f are bytes_moved of both, for bfloat16 or float32"):
    counts = {dt: (roofline.bytes_moved(8, 8192, 4096, dt, impl="eager"),
                   roofline.bytes_moved(8, 8192, 4096, dt, impl="fused",
                                        table_dtype="float32"))
              for dt in ("bfloat16", "float32")}
    matched = [dt for dt, pair in counts.items() if pair == (e, f)]
    assert matched, ("e, f: roofline.bytes_moved of the eager expression and of the "
                     "fused kernel (table_dtype='float32'), for one dtype")
with check("the bytes, counted from the passes"):
    size = roofline.DTYPE_BYTES[matched[0]]
    tokens = 8 * 8192
    out_bytes = tokens * 4096 * size                     # one (B, T, d) tensor
    assert e == tokens * 8 + 6 * out_bytes + 8192 * 4096 * size
    assert f == tokens * 8 + 2 * out_bytes + pe
with check("pe, eager_pe and again: the (T, d) tile and its 7 re-reads"):
    assert pe == 8192 * 4096 * 4, "pe: the (T, d) tile in float32"
    assert eager_pe == 8192 * 4096 * size, "eager_pe: the (T, d) tile in the dtype of e"
    assert again == 7 * eager_pe, "again: one re-read per further sequence"
with check("the positional tile's share and the eager re-reads"):
    assert math.isclose(pe / f, 8192 * 4096 * 4 / counts[matched[0]][1])
    assert (e + again) / f > e / f > 2

# %% gpu-ex-spot-bug | points: 2 | defines: compare_right, half
with check("compare_right(kernel_a, kernel_b, x) returns {'a': ms, 'b': ms}"):
    assert isinstance(half, dict) and set(half) == {"a", "b"}, "a dict: 'a' and 'b'"
    assert all(v > 0 for v in half.values()), "times are positive"
with check("it refuses two kernels whose results differ"):
    probe = torch.arange(8.0, device=dev)
    refused = False
    try:
        compare_right(lambda t: t * 0.5, lambda t: t * 0.25, probe)
    except (AssertionError, ValueError, RuntimeError):
        refused = True
    assert refused, "check that the two kernels compute the same result first"
with check("it calls each kernel on x many times, a and b interleaved"):
    calls = []

    def kernel_a(t):
        calls.append(("a", t is probe))
        return t * 0.1 * 10                              # the same, up to rounding

    def kernel_b(t):
        calls.append(("b", t is probe))
        return t

    timed = compare_right(kernel_a, kernel_b, probe)
    assert set(timed) == {"a", "b"} and all(v > 0 for v in timed.values())
    assert all(same for _, same in calls), "every call gets x"
    names = [name for name, _ in calls]
    assert min(names.count("a"), names.count("b")) >= 5, "time many calls, not one"
    switches = sum(p != q for p, q in zip(names, names[1:]))
    assert switches >= 6, "interleave a and b: not all calls of a, then all of b"
# %% hidden
with check("results of another shape are refused too"):
    refused = False
    try:
        compare_right(lambda t: t, lambda t: t[:4], probe)
    except (AssertionError, ValueError, RuntimeError):
        refused = True
    assert refused
with check("each value is one number, not a list of times"):
    assert all(isinstance(v, float) for v in (*half.values(), *timed.values()))

# %% gpu-ex-grid | points: 2 | defines: B, T, d, naive_programs, new, few, last
with check("B, T, d: one decoding step of 256 sequences with d = 4096"):
    assert (B, T, d) == (256, 1, 4096), f"(B, T, d) = {(B, T, d)}"
with check("naive_programs: 4 positions x 128 features a program, the batch looped"):
    assert isinstance(naive_programs, int), (
        f"an int, not {type(naive_programs).__name__}")
    assert naive_programs >= 1, "at least one program"
with check("new and few: launch_grid by default, and with min_programs=132"):
    _grid_type = type(fused.launch_grid(1, 1, 256))
    assert isinstance(new, _grid_type) and isinstance(few, _grid_type), (
        "new, few: what fused.launch_grid returns")
    assert new != few, "few: launch_grid with min_programs=132"
# %% hidden
with check("the naive grid: one program per 4 x 128 tile of the (T, d) plane"):
    assert naive_programs == math.ceil(1 / 4) * math.ceil(4096 / 128), (
        "naive_programs: tiles of 4 positions and 128 features; the batch is looped")
with check("new and few are launch_grid's grids for (256, 1, 4096)"):
    assert new == fused.launch_grid(256, 1, 4096), "new = fused.launch_grid(B, T, d)"
    assert few == fused.launch_grid(256, 1, 4096, min_programs=132)
with check("last: the sequences of the last slice"):
    slices, per = few.grid[2], few.seqs_per_program
    assert 0 < last <= per, "the last slice is not empty and not larger than the others"
    assert (slices - 1) * per + last == 256, "the slices together hold the batch"
with check("the programs: every tile of every slice"):
    assert few.programs == few.grid[0] * few.grid[1] * few.grid[2] and new.programs == 1024
    assert 256 * 4096 // new.programs == 1024
