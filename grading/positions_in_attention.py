"""Tests of chapter 11's exercises (tokvec.course.grading reads this file; see its
docstring).

Each section's visible tests go into the student notebook under the exercise; the hidden
ones only into the grader's copy. The names the tests use are the student's
(``defines``) and the chapter's own (``attention``, ``torch``, ``math``...). Exercises
11.1 and 11.3 ask for RoPE written out, so the hidden tests run the student's function
with the course's ``rope`` switched off (under every name the notebook gives it) and a
profiler watching for its code.
"""
# ruff: noqa: F821 (the names are defined by the notebook the tests run in)

# %% pos-ex-complex | points: 1 | defines: rope_complex
with check("rope_complex(x) equals attention.rope(x) on a (2, 10, 16) float64 batch"):
    g = torch.Generator().manual_seed(11)
    x_test = torch.randn(2, 10, 16, dtype=torch.float64, generator=g)
    got = rope_complex(x_test)
    assert torch.is_tensor(got) and got.shape == x_test.shape, (
        f"expected shape {tuple(x_test.shape)}, got {getattr(got, 'shape', got)}")
    torch.testing.assert_close(got, attention.rope(x_test), rtol=0, atol=1e-10)
with check("the result is real float64, and x is left unchanged"):
    before = x_test.clone()
    got = rope_complex(x_test)
    assert got.dtype == torch.float64 and not got.is_complex(), f"dtype {got.dtype}"
    assert torch.equal(x_test, before), "rope_complex must not modify its input"
with check("it works with complex numbers (torch.view_as_complex, torch.polar)"):
    from torch.overrides import TorchFunctionMode

    class SeeComplex(TorchFunctionMode):
        seen = False

        def __torch_function__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            for value in out if isinstance(out, (tuple, list)) else (out,):
                if torch.is_tensor(value) and value.is_complex():
                    SeeComplex.seen = True
            return out

    with SeeComplex():
        rope_complex(x_test)
    assert SeeComplex.seen, (
        "no complex tensor appeared: view each pair as one complex number "
        "(torch.view_as_complex) and multiply it by torch.polar(...)")
# %% hidden
with check("other shapes: one pair, one position, leading dimensions, long inputs"):
    g = torch.Generator().manual_seed(12)
    for shape in [(7, 2), (1, 16), (3, 2, 5, 32), (300, 8)]:
        x_test = torch.randn(*shape, dtype=torch.float64, generator=g)
        torch.testing.assert_close(rope_complex(x_test), attention.rope(x_test),
                                   rtol=0, atol=1e-9, msg=f"shape {shape}")
with check("rope_complex rotates by itself: attention.rope never runs inside it"):
    import tokvec.attention as attention_module
    from tokvec.course.checks import runs_inside

    assert not runs_inside(attention_module, "rope", rope_complex, x_test,
                           namespace=globals()), (
        "rope_complex calls attention.rope (under some name): rotate the pairs "
        "yourself, with complex numbers")
    torch.testing.assert_close(rope_complex(x_test), attention.rope(x_test),
                               rtol=0, atol=1e-9)

# %% pos-ex-spot-cache | points: 2 | defines: xs, W_q, W_k, full, buggy, fixed
with check("xs, W_q, W_k: token vectors (T, d) and two (d, d) weight matrices"):
    assert torch.is_tensor(xs) and xs.dim() == 2 and len(xs) >= 3, (
        "xs should be a (T, d) tensor of the token vectors, with several positions")
    assert W_q.shape == W_k.shape == (xs.shape[1], xs.shape[1]), (
        f"W_q and W_k should be (d, d) with d = {xs.shape[1]}")
with check("full, buggy and fixed: the new token's scores against the T keys"):
    for name, value in (("full", full), ("buggy", buggy), ("fixed", fixed)):
        assert torch.is_tensor(value) and value.numel() == len(xs), (
            f"{name} should hold one score per key, {len(xs)} of them")
    tol = 1e-4 * (1 + float(full.abs().max()))
with check("buggy (the colleague's step) differs from full"):
    assert not torch.allclose(buggy.reshape(-1), full.reshape(-1),
                              rtol=1e-3, atol=1e-3), (
        "buggy should be what the colleague's code gives for the last token of xs")
with check("fixed (your fixed step) equals full"):
    torch.testing.assert_close(fixed.reshape(-1), full.reshape(-1), rtol=1e-4, atol=tol)
# %% hidden
with check("full: the last query's scores against every key of the full sequence"):
    K_ref = attention.rope(xs @ W_k)
    ref = attention.scores(attention.rope(xs @ W_q), K_ref)[-1]          # (T,)
    tol = 1e-4 * (1 + float(ref.abs().max()))
    torch.testing.assert_close(full.reshape(-1), ref, rtol=1e-4, atol=tol)
with check("buggy is the colleague's code on xs: the new token rotated as position 0"):
    x_last = xs[-1:]
    k_bug = torch.cat([K_ref[:-1], attention.rope(x_last @ W_k)])
    bug_ref = attention.scores(attention.rope(x_last @ W_q), k_bug)[0]
    torch.testing.assert_close(buggy.reshape(-1), bug_ref, rtol=1e-4, atol=tol)
    torch.testing.assert_close(buggy.reshape(-1)[-1], ref[-1], rtol=1e-4, atol=tol)
with check("the fix rotates the new query and key by their position t"):
    where = torch.tensor([len(xs) - 1])
    k_fix = torch.cat([K_ref[:-1], attention.rope(x_last @ W_k, where)])
    fix_ref = attention.scores(attention.rope(x_last @ W_q, where), k_fix)[0]
    torch.testing.assert_close(fixed.reshape(-1), fix_ref, rtol=1e-4, atol=tol)

# %% pos-ex-interpolate | points: 3 | defines: rope_interpolated
with check("rope_interpolated(x, 1) equals attention.rope(x)"):
    g = torch.Generator().manual_seed(13)
    x_test = torch.randn(40, 16, dtype=torch.float64, generator=g)
    got = rope_interpolated(x_test, 1)
    assert torch.is_tensor(got) and got.shape == x_test.shape, (
        f"expected shape {tuple(x_test.shape)}, got {getattr(got, 'shape', got)}")
    torch.testing.assert_close(got, attention.rope(x_test), rtol=0, atol=1e-10)
with check("rope_interpolated(x, 2) equals rope with linear scaling, factor 2"):
    linear = {"rope_type": "linear", "factor": 2.0}
    torch.testing.assert_close(rope_interpolated(x_test, 2),
                               attention.rope(x_test, scaling=linear),
                               rtol=0, atol=1e-10)
with check("it works on leading batch dimensions and leaves x unchanged"):
    x_batch = torch.randn(2, 3, 12, 8, dtype=torch.float64, generator=g)
    before = x_batch.clone()
    got = rope_interpolated(x_batch, 2)
    assert got.shape == x_batch.shape, f"shape {tuple(got.shape)}"
    assert torch.equal(x_batch, before), "rope_interpolated must not modify its input"
    torch.testing.assert_close(got, attention.rope(x_batch, scaling=linear),
                               rtol=0, atol=1e-10)
# %% hidden
with check("other factors: position m is read as m / s for s = 1.5, 3 and 8"):
    g = torch.Generator().manual_seed(14)
    for s, shape in [(1.5, (25, 8)), (3, (2, 30, 32)), (8, (64, 4))]:
        x_test = torch.randn(*shape, dtype=torch.float64, generator=g)
        where = torch.arange(shape[-2], dtype=torch.float64) / s
        torch.testing.assert_close(rope_interpolated(x_test, s),
                                   attention.rope(x_test, where),
                                   rtol=0, atol=1e-10, msg=f"s = {s}")
with check("(c) at s = 2 the score of (m, n) is the plain score at (m / 2, n / 2)"):
    q, k = torch.randn(2, 1, 32, dtype=torch.float64, generator=g)
    T_long = 60
    q_long = rope_interpolated(q.expand(T_long, 32), 2)
    k_long = rope_interpolated(k.expand(T_long, 32), 2)
    for m, n in [(58, 4), (20, 20), (0, 44), (36, 10)]:
        plain = attention.scores(attention.rope(q, torch.tensor([m // 2])),
                                 attention.rope(k, torch.tensor([n // 2])))
        long = attention.scores(q_long[m:m + 1], k_long[n:n + 1])
        torch.testing.assert_close(long, plain, rtol=1e-12, atol=1e-12)
with check("it computes the angles itself: attention.rope never runs inside it"):
    import tokvec.attention as attention_module
    from tokvec.course.checks import runs_inside

    x_test = torch.randn(2, 24, 16, dtype=torch.float64, generator=g)
    assert not runs_inside(attention_module, "rope", rope_interpolated, x_test, 3,
                           namespace=globals()), (
        "rope_interpolated calls attention.rope (under some name): compute the "
        "angles (m / s) theta_i and rotate the pairs yourself")
