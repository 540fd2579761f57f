"""Tests of the exercises of "The embedding across processes"
(tokvec.course.grading reads this file; see its docstring).

Each section's visible tests go into the student notebook under the exercise; the hidden
ones only into the grader's copy. The names the tests use are the student's
(``defines``) and the chapter's own (``parallel``, ``MODELS``,
``BYTES_PER_PARAMETER``...). Everything here runs in the notebook's own process: no
process group is started. The answers are numbers, so the visible tests check their kind
and a plausible range, and only the hidden ones their value.
"""
# ruff: noqa: F821 (the names are defined by the notebook the tests run in)

# %% par-ex-ranges | points: 1 | defines: padded, base, extra
with check("padded: GPT-2's 50,257 rows padded to a multiple of 128 x 8"):
    import numbers

    def whole(value):
        """A count: an int, or a float (or NumPy number) with an integer value."""
        return isinstance(value, numbers.Real) and float(value).is_integer()

    assert whole(padded), f"padded is a number of rows (a whole number), not {padded!r}"
    assert padded >= 50_257, "padding adds rows: padded holds all 50,257 and more"
    assert padded % (128 * 8) == 0, "padded should be a multiple of 128 x W, W = 8"
with check("base and extra: the balanced split, extra ranks with base + 1 rows"):
    assert whole(base) and whole(extra), "two whole numbers: rows and ranks"
    assert 0 <= extra < 8, "extra counts ranks that hold one row more: at most 7"
    assert base > 0, "base: the rows of the ranks that hold fewer"
# %% hidden
with check("padded is the smallest padded size, the padding under 128 x 8 rows"):
    assert padded == -(-50_257 // 1024) * 1024
with check("base and extra add up to the 50,257 rows of parallel.shard_ranges"):
    assert 8 * base + extra == 50_257
    sizes = [end - start for start, end in parallel.shard_ranges(50_257, 8)]
    assert sizes.count(base + 1) == extra and sizes.count(base) == 8 - extra

# %% par-ex-spot-last | points: 2 | defines: rows, covered
with check("rows: the colleague's rows per rank, for GPT-2 on 8 ranks"):
    import numbers

    def whole(value):
        """A count: an int, or a float (or NumPy number) with an integer value."""
        return isinstance(value, numbers.Real) and float(value).is_integer()

    assert whole(rows) and rows > 0, "rows is a number of rows (a whole number)"
    assert 8 * rows <= 50_257 + 8, "for GPT-2's 50,257 rows on 8 ranks"
with check("covered: how many ids the colleague's 8 ranges own together"):
    assert whole(covered), "covered is a number of ids (a whole number)"
    assert 0 < covered <= 50_257 + 8, "count the ids in the 8 ranges"
# %% hidden
with check("rows is vocab_size // world_size, the 8 ranges own 8 x rows ids"):
    assert rows == 50_257 // 8
    assert covered == 8 * rows
with check("exactly one id, the last (50,256), falls outside every range"):
    ranges = [(rank * int(rows), (rank + 1) * int(rows)) for rank in range(8)]
    orphans = [i for i in range(int(covered) - 10, 50_257)
               if not any(start <= i < end for start, end in ranges)]
    assert orphans == list(range(int(covered), 50_257)) == [50_256]

# %% par-ex-plan | points: 3 | defines: replicated, freed, output, sent, scattered
with check("replicated: the input table's bytes per GPU, between 1 and 80 GiB"):
    import numbers

    assert isinstance(replicated, numbers.Real), "replicated is a number of bytes"
    assert 2**30 < replicated < 80 * 2**30, (
        "give bytes (not GiB), for Llama 3 70B's table and 18 bytes per parameter")
with check("freed: bytes each GPU no longer holds with vocabulary parallelism"):
    assert isinstance(freed, numbers.Real), "freed is a number of bytes"
    assert 0 < freed < replicated, "each GPU keeps part of the table and frees the rest"
with check("output: elements of the (8192, d) output; sent, scattered: bytes"):
    assert isinstance(output, numbers.Real) and float(output).is_integer(), (
        "output: a number of elements (a whole number)")
    assert output > 0, "output: a number of elements"
    assert output % 8_192 == 0, "output has one row of d elements per token, 8,192 rows"
    for name, value in (("sent", sent), ("scattered", scattered)):
        assert isinstance(value, numbers.Real) and value > 0, (
            f"{name}: the bytes each GPU sends per step, a positive number")
# %% hidden
with check("replicated and freed: rows x d x 18 bytes, and 7/8 of it"):
    import math

    n_rows, width, _ = MODELS["Llama 3 70B"]
    assert math.isclose(replicated, n_rows * width * 18, rel_tol=1e-12)
    assert math.isclose(freed, n_rows * width * 18 * 7 / 8, rel_tol=1e-12)
with check("output, sent, scattered: 8192 x d bf16 elements and their ring traffic"):
    assert output == 8_192 * width
    for name, value in (("all_reduce", sent), ("reduce_scatter", scattered)):
        want = parallel.communication_bytes(name, 8_192 * width, 8, element_size=2)
        assert math.isclose(value, want, rel_tol=1e-12), name
    assert math.isclose(sent, 2 * 7 / 8 * 8_192 * width * 2, rel_tol=1e-12)
    assert math.isclose(scattered, 7 / 8 * 8_192 * width * 2, rel_tol=1e-12)
