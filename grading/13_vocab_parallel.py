"""Tests of chapter 13's exercises (tokvec.course.grading reads this file; see its docstring).

Each section's visible tests go into the student notebook under the exercise; the hidden ones
only into the grader's copy. The names the tests use are the student's (``defines``) and the
chapter's own (``parallel``, ``MODELS``, ``BYTES_PER_PARAMETER``...). Everything here runs in
the notebook's own process: no process group is started.
"""
# ruff: noqa: F821 (the names are defined by the notebook the tests run in)

# %% par-ex-ranges | points: 1 | defines: padded, base, extra
with check("padded: GPT-2's 50,257 rows rounded up to a multiple of 128 x 8"):
    assert padded % (128 * 8) == 0, f"{padded} is not a multiple of {128 * 8}"
    assert 50_257 <= padded < 50_257 + 128 * 8, (
        f"{padded}: round 50,257 up to the next multiple, not further")
    assert (padded // 8) % 128 == 0, "every rank should hold a multiple of 128 rows"
with check("base and extra: the balanced split, extra ranks with base + 1 rows"):
    assert 0 <= extra < 8, f"extra = {extra}: at most 7 ranks can hold one row more"
    assert 8 * base + extra == 50_257, (
        f"{extra} ranks of {base + 1} and {8 - extra} of {base} are not 50,257 rows")
# %% hidden
with check("the balanced rows are those of parallel.shard_ranges"):
    sizes = [end - start for start, end in parallel.shard_ranges(50_257, 8)]
    assert sizes.count(base + 1) == extra and sizes.count(base) == 8 - extra, sizes
with check("padded is the smallest padded size, and the padding under 128 x 8 rows"):
    assert padded == -(-50_257 // 1024) * 1024
    assert 0 <= padded - 50_257 < 1024

# %% par-ex-spot-last | points: 2 | defines: rows, covered
with check("rows: what the colleague's rule gives each of 8 ranks for GPT-2's 50,257"):
    assert rows == 50_257 // 8, f"rows = {rows}: vocab_size // world_size for GPT-2"
with check("covered: how many ids the colleague's 8 ranges own, all below 50,257"):
    assert covered == 8 * rows, f"covered = {covered}: 8 ranges of {rows} rows"
    assert covered < 50_257, "some ids of GPT-2 belong to no rank"
# %% hidden
with check("exactly one id, the last (50,256), falls outside every range"):
    ranges = [(rank * rows, (rank + 1) * rows) for rank in range(8)]
    orphans = [i for i in range(covered - 10, 50_257)
               if not any(start <= i < end for start, end in ranges)]
    assert orphans == list(range(covered, 50_257)) == [50_256], orphans
with check("the balanced rule leaves no id out"):
    owned = parallel.shard_ranges(50_257, 8)
    assert owned[0][0] == 0 and owned[-1][1] == 50_257
    assert all(a[1] == b[0] for a, b in zip(owned, owned[1:]))

# %% par-ex-plan | points: 3 | defines: replicated, freed, output, sent, scattered
with check("replicated: bytes of Llama 3 70B's table at 18 bytes per parameter"):
    n_rows, width, _ = MODELS["Llama 3 70B"]
    assert replicated == n_rows * width * 18, (
        f"{replicated}: rows x d x 18 bytes (weights, gradients, master, Adam m and v)")
with check("freed: what vocabulary parallelism over 8 GPUs frees on each"):
    import math

    assert math.isclose(freed, replicated - replicated / 8, rel_tol=1e-12), (
        f"freed = {freed}: each GPU keeps 1/8 of the table")
with check("output, sent, scattered: the (8192, d) bf16 output and its ring traffic"):
    assert output == 8_192 * width, f"output = {output}: elements of the output"
    n_bytes = output * 2                                # bfloat16
    assert math.isclose(sent, 2 * 7 / 8 * n_bytes, rel_tol=1e-12), (
        f"sent = {sent}: a ring all-reduce sends 2 (W - 1) / W of the bytes")
    assert math.isclose(scattered, 7 / 8 * n_bytes, rel_tol=1e-12), (
        f"scattered = {scattered}: a reduce-scatter sends (W - 1) / W of the bytes")
# %% hidden
with check("sent and scattered agree with parallel.communication_bytes"):
    for name, value in (("all_reduce", sent), ("reduce_scatter", scattered)):
        want = parallel.communication_bytes(name, 8_192 * width, 8, element_size=2)
        assert math.isclose(value, want, rel_tol=1e-12), (name, value, want)
with check("each GPU keeps replicated / 8; the reduce-scatter sends half"):
    assert math.isclose(replicated - freed, replicated / 8, rel_tol=1e-12)
    assert math.isclose(sent, 2 * scattered, rel_tol=1e-12)
