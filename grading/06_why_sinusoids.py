"""Tests of chapter 6's exercises, read by tokvec.course.grading (see its docstring).

Each section's visible tests go into the student notebook under the exercise; the hidden
ones only into the grader's copy. The names the tests use are the student's
(``defines``) and the chapter's own (``W_p``, ``W_long``, ``omega``, ``rotation``,
``shift_matrix``...). The tests' own names start with ``_`` so that they never replace a
name of the chapter (``i``, ``k``, ``t`` among them).
"""
# ruff: noqa: F821 (the names are defined by the notebook the tests run in)

# %% sin-ex-fit | points: 2 | defines: fit_shift, early, late
with check("early and late are 2 x 2 matrices"):
    import numpy as _np

    assert _np.shape(early) == (2, 2), f"early: shape {_np.shape(early)}, not (2, 2)"
    assert _np.shape(late) == (2, 2), f"late: shape {_np.shape(late)}, not (2, 2)"
with check("early and late are fit_shift(2, 9, ts) for t = 0..49 and t = 50..99"):
    assert _np.allclose(early, fit_shift(2, 9, range(50)), rtol=0, atol=1e-12), (
        "early: the fit from t = 0..49")
    assert _np.allclose(late, fit_shift(2, 9, range(50, 100)), rtol=0, atol=1e-12), (
        "late: the fit from t = 50..99")
with check("early maps (W_p[4, t], W_p[5, t]) to (W_p[4, t+9], W_p[5, t+9])"):
    for _t in (0, 25, 49):
        _now = _np.array([W_long[4][_t], W_long[5][_t]])           # a column vector
        _later = _np.array([W_long[4][_t + 9], W_long[5][_t + 9]])
        assert _np.allclose(_np.asarray(early) @ _now, _later, rtol=0, atol=1e-8), (
            f"t = {_t}: early @ (the pair at t) should give the pair at t + 9 "
            "(the matrix acts on the pair as a column vector)")
# %% hidden
with check("both fits are rotation(9, omega[2]), so they agree with each other"):
    _R = _np.array(rotation(9, omega[2]))
    assert _np.allclose(early, _R, rtol=0, atol=1e-8)
    assert _np.allclose(late, _R, rtol=0, atol=1e-8)
with check("fit_shift(0, 3, range(20)) is rotation(3, omega[0])"):
    _fit = _np.asarray(fit_shift(0, 3, range(20)))
    assert _np.allclose(_fit, rotation(3, omega[0]), rtol=0, atol=1e-8)
with check("the fit is the least-squares solution for other pairs, shifts and ranges"):
    # t + k < 128: an answer may read the chapter's W_p (128 positions) or W_long
    for _i, _k, _ts in ((7, 20, range(60, 100)), (1, 1, range(3, 60)),
                        (12, 40, range(30, 80))):
        _X = _np.array([[W_long[2 * _i][_t], W_long[2 * _i + 1][_t]] for _t in _ts])
        _Y = _np.array([[W_long[2 * _i][_t + _k], W_long[2 * _i + 1][_t + _k]]
                        for _t in _ts])
        _A = _np.linalg.lstsq(_X, _Y, rcond=None)[0].T
        _fit = _np.asarray(fit_shift(_i, _k, _ts))
        assert _np.allclose(_fit, _A, rtol=0, atol=1e-8), (_i, _k)
        assert _np.allclose(_fit, rotation(_k, omega[_i]), rtol=0, atol=1e-8), (_i, _k)
with check("the fitted matrix maps the pair at t to the pair at t + k"):
    _M = _np.asarray(early)
    for _t in (0, 17, 150):
        _now = _np.array([W_long[4][_t], W_long[5][_t]])
        _later = _np.array([W_long[4][_t + 9], W_long[5][_t + 9]])
        assert _np.allclose(_M @ _now, _later, rtol=0, atol=1e-8)
with check("fit_shift fits the table's data: on a table of noise, its least squares"):
    # The statement says "forget the formula for R_k": an answer that returns
    # rotation(k, omega[i]) passes every test above. Swap the chapter's tables (and any
    # array copy of them) for noise while fit_shift runs: a fit follows the data.
    _rng = _np.random.default_rng(6)
    _noise = _rng.standard_normal((64, 256))

    def _swap(_value):
        """The noise stand-in for a copy of W_long or W_p, else None."""
        try:
            _a = _np.asarray(_value, dtype=float)
        except Exception:                               # not an array of numbers
            return None
        for _true, _fake in ((W_long, _noise), (W_p, _noise[:, :128])):
            _true = _np.asarray(_true, dtype=float)
            for _t, _f in ((_true, _fake), (_true.T, _fake.T)):
                if _a.shape == _t.shape and _np.allclose(_a, _t, rtol=0, atol=1e-12):
                    if isinstance(_value, list):
                        return _f.tolist()
                    if type(_value).__module__.startswith("torch"):
                        import torch as _torch

                        return _torch.as_tensor(_f, dtype=_value.dtype)
                    return _f.astype(_a.dtype)
        return None

    _space = getattr(fit_shift, "__globals__", globals())
    _saved, _stand_ins = {}, {}
    for _name, _value in list(_space.items()):
        if hasattr(_value, "__len__") and not isinstance(_value, (str, dict)):
            _stand_in = _swap(_value)
            if _stand_in is not None:
                _saved[_name], _stand_ins[_name] = _value, _stand_in
    try:
        _space.update(_stand_ins)
        _fit = _np.asarray(fit_shift(2, 9, range(50)), dtype=float)
    finally:
        _space.update(_saved)
    _X = _np.stack([_noise[4, :50], _noise[5, :50]], axis=1)
    _Y = _np.stack([_noise[4, 9:59], _noise[5, 9:59]], axis=1)
    _A = _np.linalg.lstsq(_X, _Y, rcond=None)[0].T
    assert _np.allclose(_fit, _A, rtol=0, atol=1e-8), (
        "fit_shift does not fit the data of W_p (or W_long): find the matrix by "
        "least squares, not from the formula for R_k")

# %% sin-ex-base | points: 2 | defines: omega_1000, lam_1000, W_1000
with check("omega_1000 holds the 32 frequencies 1000^(-2i/64), i = 0..31"):
    import math as _math

    assert len(omega_1000) == 32, f"one frequency per pair: 32, got {len(omega_1000)}"
    assert all(_math.isclose(_w, 1000 ** (-2 * _i / 64), rel_tol=1e-12)
               for _i, _w in enumerate(omega_1000)), "use base 1000, not 10000"
with check("lam_1000 holds the 32 wavelengths of omega_1000, one per pair"):
    assert len(lam_1000) == 32, f"one wavelength per pair: 32, got {len(lam_1000)}"
    assert all(_math.isclose(_lam, 2 * _math.pi / _w, rel_tol=1e-12)
               for _lam, _w in zip(lam_1000, omega_1000)), (
        "the wavelength of a pair is the number of positions of one full turn")
with check("W_1000 is the sinusoidal table for d_e = 64 with base 1000"):
    _n = len(W_1000[0])
    assert len(W_1000) == 64, f"d_e = 64 rows, got {len(W_1000)}"
    _ref = sinusoidal_positions(64, _n, base=1000)
    assert all(_math.isclose(_a, _b, rel_tol=0, abs_tol=1e-9)
               for _ra, _rb in zip(W_1000, _ref) for _a, _b in zip(_ra, _rb)), (
        "build it with sinusoidal_positions(64, l_max, base=1000)")
# %% hidden
with check("the wavelengths run from 2 pi to 2 pi 1000^(62/64)"):
    assert _math.isclose(lam_1000[0], 2 * _math.pi)
    assert _math.isclose(lam_1000[-1], 2 * _math.pi * 1000 ** (62 / 64))
with check("neighbouring wavelengths have the ratio 1000^(2/64); 14 pairs below 128"):
    assert all(_math.isclose(_b / _a, 1000 ** (2 / 64), rel_tol=1e-9)
               for _a, _b in zip(lam_1000, lam_1000[1:]))
    assert sum(_lam < 128 for _lam in lam_1000) == sum(
        2 * _math.pi * 1000 ** (2 * _i / 64) < 128 for _i in range(32))
with check("the rotation property holds on W_1000 with omega_1000"):
    assert _n > 12, "build W_1000 with more than 12 positions"
    for _k in (1, 3, 11):
        _M = shift_matrix(_k, omega_1000)
        for _t in range(0, _n - _k, max(1, (_n - _k) // 8)):
            _got = matvec(_M, column(W_1000, _t))
            assert all(abs(_a - _b) < 1e-9
                       for _a, _b in zip(_got, column(W_1000, _t + _k))), (_k, _t)

# %% sin-ex-bug | points: 2 | defines: buggy_table, W_bug
with check("W_bug is buggy_table(64, 128): 64 rows of 128 positions"):
    import math as _math

    assert len(W_bug) == 64 and all(len(_r) == 128 for _r in W_bug), (
        "build the table for d_e = 64, l_max = 128")
with check("each row j has its own frequency 10000^(-j/64): sin for even j, cos odd"):
    for _j in (0, 1, 20, 21, 63):
        _f = _math.sin if _j % 2 == 0 else _math.cos
        assert all(_math.isclose(W_bug[_j][_t], _f(_t / 10000 ** (_j / 64)),
                                 rel_tol=0, abs_tol=1e-9) for _t in range(128)), (
            f"row {_j} does not follow the tutorial's formula")
# %% hidden
with check("its sine rows are right: row 2i of W_bug is row 2i of W_p"):
    assert all(_math.isclose(_a, _b, rel_tol=0, abs_tol=1e-9)
               for _j in range(0, 64, 2) for _a, _b in zip(W_bug[_j], W_p[_j]))
with check("pair 10 leaves the unit circle: sin^2 + cos^2 is off 1 by more than 0.01"):
    assert max(abs(W_bug[20][_t] ** 2 + W_bug[21][_t] ** 2 - 1)
               for _t in range(128)) > 0.01
with check("buggy_table(d_e, l_max) follows the buggy formula for other sizes"):
    for _d, _l in ((6, 9), (10, 40)):
        _tab = buggy_table(_d, _l)
        assert len(_tab) == _d and all(len(_r) == _l for _r in _tab), (_d, _l)
        for _j in range(_d):
            _f = _math.sin if _j % 2 == 0 else _math.cos
            assert all(_math.isclose(_tab[_j][_t], _f(_t / 10000 ** (_j / _d)),
                                     rel_tol=0, abs_tol=1e-9) for _t in range(_l)), (
                _d, _l, _j)
with check("a shift by 5 is no longer the rotation for pair 10"):
    _err = max(
        abs(_a - _b)
        for _t in range(123)
        for _a, _b in zip(
            rotate(rotation(5, omega[10]), [W_bug[20][_t], W_bug[21][_t]]),
            [W_bug[20][_t + 5], W_bug[21][_t + 5]]))
    assert _err > 0.01
