"""Tests of the exercises of "What vectorization buys"
(tokvec.course.grading reads this file; see its docstring).

Each section's visible tests go into the student notebook under the exercise; the hidden
ones only into the grader's copy. The names the tests use are the student's
(``defines``) and the chapter's own (``median``, ``sizes``, ``fastest``, ``alone``...).
Times vary from run to run and machine to machine, so no test compares a time with a
threshold: the tests check what the timed functions compute and how the answers follow
from the committed files.
"""
# ruff: noqa: F821 (the names are defined by the notebook the tests run in)

# %% bench-ex-check-cost | points: 2 | defines: ids, weight, checked, unchecked, share
with check("ids and weight: a 4 x 128 batch of ids, and token vectors of d = 128"):
    assert np.shape(ids) == (4, 128), f"ids has shape {np.shape(ids)}, not (4, 128)"
    assert np.issubdtype(np.asarray(ids).dtype, np.integer), "ids are integers"
    assert np.ndim(weight) == 2 and np.shape(weight)[1] == 128, "weight is (N_V, 128)"
    assert ids.min() >= 0 and ids.max() < len(weight), "every id has a row of weight"
with check("checked() and unchecked() take no argument, give the same (4, 128, 128)"):
    assert callable(checked) and callable(unchecked), "two functions of no argument"
    with_check, without = checked(), unchecked()
    assert np.shape(with_check) == (4, 128, 128), f"shape {np.shape(with_check)}"
    np.testing.assert_allclose(with_check, without, rtol=1e-6, atol=1e-6)
with check("checked runs embed_numpy, unchecked weight[ids] * sqrt(d) + PE[:T]"):
    pe = sinusoidal_table_numpy(128, 128, dtype=np.float32)          # (T, d)
    np.testing.assert_allclose(checked(), embed_numpy(ids, weight, pe),
                               rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(unchecked(), weight[ids] * math.sqrt(128) + pe,
                               rtol=1e-6, atol=1e-6)
with check("share: check_ids alone (committed) as a fraction of one large NumPy call"):
    assert np.ndim(share) == 0 and np.isreal(share), "share is one number"
    assert 0 < float(share) < 1, (
        "share: the committed time of check_ids alone at the smallest size (its "
        "minimum or median), as a fraction of the committed median time of one "
        "NumPy call at the largest size")
# %% hidden
with check("share is check_ids alone at the smallest size over numpy at the largest"):
    numpy_ms = median[("numpy", *largest)]
    assert any(math.isclose(share, alone[small][stat] / numpy_ms)    # faults_file
               for stat in ("min_ms", "median_ms"))
with check("checked refuses a negative id; unchecked silently reads the last row"):
    pe = sinusoidal_table_numpy(128, 128, dtype=np.float32)          # (T, d)
    saved = ids[0, 0]
    try:
        ids[0, 0] = -1
        refused = False
        try:
            checked()
        except (IndexError, ValueError):
            refused = True
        wrapped = unchecked()[0, 0]                      # (d,)
    finally:
        ids[0, 0] = saved
    assert refused, "checked() must run embed_numpy's id check"
    np.testing.assert_allclose(wrapped, weight[-1] * math.sqrt(128) + pe[0],
                               rtol=1e-6, atol=1e-6)
with check("the output is Algorithms 1 and 2, recomputed in float64"):
    exact = np.asarray(weight, np.float64)[ids] * math.sqrt(128)
    exact += sinusoidal_table_numpy(128, 128)            # (4, 128, 128) float64
    np.testing.assert_allclose(checked(), exact, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(unchecked(), exact, rtol=1e-5, atol=1e-5)

# %% bench-ex-spot-bug | points: 2 | defines: table, lookup, naive_ms, warm_ms
with check("table caches: a second call with the same n returns the very same table"):
    assert callable(table), "table is the cached function that builds a table"
    first = table(64)
    assert table(64) is first, "the second call must come from the cache"
    assert len(first) == 64, "table(n) has n rows, one per position"
with check("lookup() returns the same cached table on every call"):
    assert callable(lookup), "lookup is a function of no argument"
    assert lookup() is lookup(), "served from the cache"
with check("naive_ms and warm_ms: one number each, ms per call"):
    for name, value in (("naive_ms", naive_ms), ("warm_ms", warm_ms)):
        assert isinstance(value, (float, np.floating)), f"{name} is one number"
        assert math.isfinite(value) and value > 0, f"{name} = {value}"
# %% hidden
with check("a cold cache builds the table again, with the same numbers"):
    before = lookup()
    if hasattr(table, "cache_clear"):                    # functools.lru_cache
        table.cache_clear()
        after = lookup()
        assert after is not before and lookup() is after
        np.testing.assert_array_equal(np.asarray(after), np.asarray(before))
with check("the cache keeps one table per length"):
    assert table(32) is not table(64) and len(table(32)) == 32
    assert table(32) is table(32)

# %% bench-ex-scaling | points: 2 | defines: slope, predicted, k_default, k_control
with check("slope(impl, sizes): one exponent, whatever the order of the sizes"):
    cases = (("python", py_sizes), ("layer", sizes[2:]), ("layer", sizes[:2]))
    for impl, chosen in cases:
        got = slope(impl, chosen)
        assert np.ndim(got) == 0 and math.isfinite(got), f"slope({impl!r}, {chosen})"
        assert math.isclose(slope(impl, chosen[::-1]), got, rel_tol=1e-9), (
            f"slope({impl!r}, ...) changes when the sizes come in another order")
        assert 0 < got < 4, f"slope({impl!r}, {chosen}): time ~ size ** slope"
with check("predicted: the layer's time (ms) at the largest size, from two below"):
    assert np.ndim(predicted) == 0 and math.isfinite(predicted), "one time, in ms"
    assert predicted > median[("layer", *sizes[3])], (
        "predicted is for 3 times the data of 16 x 512 x 512: more time than there")
with check("k_default, k_control: the same slope from the minima of both malloc runs"):
    for name, k_run in (("k_default", k_default), ("k_control", k_control)):
        assert np.ndim(k_run) == 0 and math.isfinite(k_run), f"{name} is one number"
        assert 0 < k_run < 10, f"{name}: an exponent, time ~ size ** {name}"
# %% hidden
with check("slope is the least-squares slope of log(time) against log(B*T*d)"):
    cases = (("python", py_sizes), ("layer", sizes[2:]), ("layer", sizes[:2]))
    for impl, chosen in cases:
        xs = np.log([math.prod(s) for s in chosen])
        ys = np.log([median[(impl, *s)] for s in chosen])
        want = np.polyfit(xs, ys, 1)[0]
        assert math.isclose(slope(impl, chosen), want, rel_tol=1e-6), impl
with check("predicted: time at 16x512x512 times the data growth ** the slope below"):
    n2, n3, n4 = (math.prod(s) for s in (sizes[2], sizes[3], largest))
    t2, t3 = median[("layer", *sizes[2])], median[("layer", *sizes[3])]
    k = math.log(t3 / t2) / math.log(n3 / n2)            # the slope between them
    assert math.isclose(predicted, t3 * (n4 / n3) ** k, rel_tol=1e-6)
with check("k_default, k_control: log(t1 / t0) / log(growth) of each run's minima"):
    for run, k_run in (("default", k_default), ("control", k_control)):
        t0, t1 = fastest[(run, "layer", *sizes[3])], fastest[(run, "layer", *largest)]
        want = math.log(t1 / t0) / math.log(math.prod(largest) / math.prod(sizes[3]))
        assert math.isclose(k_run, want, rel_tol=1e-6), f"k_{run}"
with check("slope fits other contenders and sizes"):
    cases = (("numpy", sizes), ("compiled", sizes[1:4]), ("in_place", sizes))
    for impl, chosen in cases:
        xs = np.log([math.prod(s) for s in chosen])
        ys = np.log([median[(impl, *s)] for s in chosen])
        assert math.isclose(slope(impl, chosen), np.polyfit(xs, ys, 1)[0], rel_tol=1e-6)
with check("over two sizes the slope is the ratio of the logs"):
    a, b = sizes[0], sizes[4]
    want = math.log(median[("tutorial", *b)] / median[("tutorial", *a)]) / math.log(
        math.prod(b) / math.prod(a))
    assert math.isclose(slope("tutorial", [a, b]), want, rel_tol=1e-6)
