"""Tests of chapter 10's exercises (tokvec.course.grading reads this file; see its
docstring).

Each section's visible tests go into the student notebook under the exercise; the hidden
ones only into the grader's copy. The names the tests use are the student's
(``defines``) and the chapter's own (``stream``, ``WindowDataset``, ``CopyWindows``,
``torch``...).
"""
# ruff: noqa: F821 (the names are defined by the notebook the tests run in)

# %% pipe-ex-budget | points: 2 | defines: stride_for, budget_stride
with check("budget_stride is stride_for's answer for the stream, T = 32, 300 windows"):
    assert budget_stride == stride_for(len(stream), 32, 300)
with check("budget_stride gives at least 300 windows, and one more gives fewer"):
    assert len(WindowDataset(stream, 32, budget_stride)) >= 300, "too few windows"
    assert len(WindowDataset(stream, 32, budget_stride + 1)) < 300, (
        "a larger stride still gives 300 windows: take the largest")
with check("stride_for on a small stream: 100 ids, T = 8, 10 windows"):
    _s = stride_for(100, 8, 10)
    assert len(range(0, 100 - 8, _s)) >= 10 and len(range(0, 100 - 8, _s + 1)) < 10, f"got {_s}"
# %% hidden
with check("stride_for is the largest stride with enough windows, on other streams"):
    from operator import index as _index  # an int, or an integer type such as NumPy's

    for _n, _T, _w in [(100, 8, 2), (100, 8, 92), (1000, 64, 37), (50, 1, 49), (4127, 32, 128),
                       (4127, 32, 4095), (33, 31, 2)]:
        _s = stride_for(_n, _T, _w)
        try:
            _s = _index(_s)
        except TypeError:
            raise AssertionError(f"stride_for({_n}, {_T}, {_w}) = {_s!r} is not an integer") from None
        assert _s >= 1, f"stride_for({_n}, {_T}, {_w}) = {_s!r}"
        assert len(range(0, _n - _T, _s)) >= _w, f"stride_for({_n}, {_T}, {_w}) gives too few"
        assert _s + 1 > _n or len(range(0, _n - _T, _s + 1)) < _w, f"stride_for({_n}, {_T}, {_w}) is not the largest"
with check("more windows than a stride of 1 gives is a ValueError"):
    for _n, _T, _w in [(100, 8, 93), (4127, 32, 5000)]:
        try:
            stride_for(_n, _T, _w)
        except ValueError:
            pass
        else:
            raise AssertionError(f"stride_for({_n}, {_T}, {_w}) must raise a ValueError")

# %% pipe-ex-unshifted | points: 2 | defines: ShiftedWindows, copied_buggy, copied_fixed
with check("ShiftedWindows gives the items of WindowDataset on the stream"):
    _mine, _ref = ShiftedWindows(stream, 32, 32), WindowDataset(stream, 32, 32)
    assert len(_mine) == len(_ref), f"{len(_mine)} windows, not {len(_ref)}"
    for _k in (0, 1, len(_ref) - 1):
        _x, _y = _mine[_k]
        _rx, _ry = _ref[_k]
        assert torch.equal(torch.as_tensor(_x), _rx), f"window {_k}: the inputs differ"
        assert torch.equal(torch.as_tensor(_y), _ry), (
            f"window {_k}: the targets are not the inputs shifted by one")
with check("copied_buggy and copied_fixed: fractions of targets equal to their input"):
    assert copied_buggy == 1.0, "in the buggy loader every target is its own input: 1.0"
    assert 0 <= copied_fixed < 0.01, f"copied_fixed = {copied_fixed}"
# %% hidden
with check("ShiftedWindows matches WindowDataset on every window, for other T and strides"):
    for _T, _st in [(32, 32), (8, 3), (5, 11), (1, 1), (64, 16)]:
        _mine, _ref = ShiftedWindows(stream, _T, _st), WindowDataset(stream, _T, _st)
        assert len(_mine) == len(_ref), f"T = {_T}, stride {_st}: {len(_mine)} windows, not {len(_ref)}"
        for _k in range(0, len(_ref), 7):
            _x, _y = _mine[_k]
            _rx, _ry = _ref[_k]
            assert torch.equal(torch.as_tensor(_x), _rx) and torch.equal(torch.as_tensor(_y), _ry), (
                f"T = {_T}, stride {_st}: window {_k} differs")
        _x, _y = (torch.stack([torch.as_tensor(_mine[_k][_i]) for _k in range(3)]) for _i in (0, 1))
        assert torch.equal(_x[:, 1:], _y[:, :-1]), "a batch's targets are not shifted by one"
with check("copied_fixed is the fraction for WindowDataset's windows"):
    _ref = WindowDataset(stream, 32, 32)
    _same = sum(int((_x == _y).sum()) for _x, _y in (_ref[_k] for _k in range(len(_ref))))
    assert abs(copied_fixed - _same / (len(_ref) * 32)) < 1e-9

# %% pipe-ex-repeats | points: 2 | defines: count_repeats, repeats_half
with check("repeats_half is count_repeats on the stream, T = 32, stride 16"):
    assert repeats_half == count_repeats(len(stream), 32, 16)
with check("touching windows repeat nothing; 20 ids, T = 4, stride 2 repeat 14"):
    assert count_repeats(100, 8, 8) == 0, "windows that touch share no target"
    assert count_repeats(20, 4, 2) == 14, f"got {count_repeats(20, 4, 2)}"
# %% hidden
with check("count_repeats agrees with a count of every target position"):
    def _brute(_n, _T, _st):
        _hits = [0] * _n
        for _s in range(0, _n - _T, _st):
            for _p in range(_s + 1, _s + _T + 1):
                _hits[_p] += 1
        return sum(_hits) - sum(1 for _h in _hits if _h)

    for _n, _T, _st in [(100, 8, 3), (100, 8, 20), (57, 1, 1), (300, 32, 16), (300, 32, 31), (41, 40, 1)]:
        assert count_repeats(_n, _T, _st) == _brute(_n, _T, _st), f"count_repeats({_n}, {_T}, {_st})"
with check("repeats_half on the stream"):
    assert repeats_half == _brute(len(stream), 32, 16) == 4080
