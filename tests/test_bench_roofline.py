"""tokvec.bench.roofline: the byte counts behind the GPU targets."""

import pytest

from tokvec.bench.roofline import bytes_moved, compulsory_bytes, expected_distinct, min_time_ms

BIG = (64, 2048, 4096)                       # B, T, d of the largest GPU configuration


def test_fused_moves_about_2_17_gb_and_takes_at_least_0_65_ms_at_3_35_tb_s():
    n = bytes_moved(*BIG, "bfloat16", impl="fused")
    assert n == 64 * 2048 * 8 + 2 * 64 * 2048 * 4096 * 2 + 2048 * 4096 * 2
    assert round(n / 1e9, 2) == 2.17
    assert round(min_time_ms(n, 3.35), 2) == 0.65


def test_eager_moves_about_three_times_the_bytes():
    fused, eager = (bytes_moved(*BIG, "bfloat16", impl=i) for i in ("fused", "eager"))
    assert round(eager / 1e9, 1) == 6.5
    assert 2.9 < eager / fused < 3.0


def test_copy_is_the_floor_and_fused_is_just_above_it():
    copy, fused = (bytes_moved(*BIG, "bfloat16", impl=i) for i in ("copy", "fused"))
    assert copy < fused < 1.01 * copy


@pytest.mark.parametrize("dtype,ratio", [("float32", 2.0), ("float64", 4.0)])
def test_bytes_scale_with_the_element_size(dtype, ratio):
    assert bytes_moved(8, 16, 32, dtype, impl="copy") == ratio * bytes_moved(8, 16, 32, "bfloat16", impl="copy")


@pytest.mark.parametrize("kwargs,message", [
    ({"impl": "magic"}, "impl must be"), ({"dtype": "int8"}, "dtype must be one of")])
def test_bad_arguments(kwargs, message):
    args = {"batch": 1, "seq_len": 1, "d_model": 1, **kwargs}
    with pytest.raises(ValueError, match=message):
        bytes_moved(**args)
    with pytest.raises(ValueError, match="batch must be an int >= 1"):
        bytes_moved(0, 1, 1)
    with pytest.raises(ValueError, match="positive"):
        min_time_ms(10, 0)


def test_a_float32_positional_table_adds_its_extra_bytes_once():
    bf16 = bytes_moved(*BIG, "bfloat16", impl="fused")
    pe32 = bytes_moved(*BIG, "bfloat16", impl="fused", table_dtype="float32")
    assert pe32 - bf16 == 2048 * 4096 * (4 - 2)
    assert bytes_moved(*BIG, "float32", impl="eager") == bytes_moved(*BIG, "float32", impl="eager",
                                                                    table_dtype="float32")
    with pytest.raises(ValueError, match="table_dtype must be one of"):
        bytes_moved(1, 1, 1, table_dtype="int8")


def test_expected_distinct_rows_of_uniform_ids():
    assert expected_distinct(0, 10) == 0 and expected_distinct(1, 10) == pytest.approx(1.0)
    assert expected_distinct(5, 1) == 1
    assert round(expected_distinct(64 * 2048, 32000)) == 31468          # chapter 10.1's large batch
    assert expected_distinct(10**7, 100) == pytest.approx(100)
    with pytest.raises(ValueError, match="n_ids"):
        expected_distinct(-1, 10)


def test_compulsory_bytes_read_each_distinct_row_once_and_stay_above_the_writes():
    B, T, d = BIG
    n = B * T
    row = d * 2
    for impl in ("fused", "eager", "in_place"):
        counted = bytes_moved(B, T, d, "bfloat16", impl=impl)
        assert compulsory_bytes(B, T, d, "bfloat16", distinct_rows=n, impl=impl) == counted
        assert compulsory_bytes(B, T, d, "bfloat16", distinct_rows=100, impl=impl) == counted - (n - 100) * row
    fused = compulsory_bytes(B, T, d, "bfloat16", distinct_rows=expected_distinct(n, 32000), table_dtype="float32")
    assert round(fused / 1e9, 3) == 1.366 and fused > n * row            # above the output's writes alone
    with pytest.raises(ValueError, match="distinct_rows must be between"):
        compulsory_bytes(1, 2, 3, distinct_rows=3)
    with pytest.raises(ValueError, match="reads no table"):
        compulsory_bytes(1, 2, 3, distinct_rows=1, impl="copy")


# --- reading GPU runs: a synthetic results file, as `python -m tokvec.bench kernels` writes ---

def record(impl, median_ms, **size):
    size = {"batch": 4, "seq_len": 8, "d_model": 16, "dtype": "bfloat16", **size}
    return {"device": "Some GPU", "torch": "2.13.0", "impl": impl, "vocab_size": 100,
            "median_ms": median_ms, "gbps": 0.0, **size}


def test_gpu_results_reads_every_gpu_file_in_both_layouts(tmp_path):
    from tokvec.bench.common import write
    from tokvec.bench.roofline import gpu_results

    assert gpu_results(tmp_path) == []
    write([record("eager", 0.3), record("copy", 0.1)], tmp_path / "gpu-a.json")
    write({"command": "python -m tokvec.bench kernels", "records": [record("fused", 0.2)]},
          tmp_path / "gpu-b.json")
    write([record("eager", 9.9)], tmp_path / "cpu-not-a-gpu-run.json")
    rows = gpu_results(tmp_path)
    assert [(r["file"], r["impl"]) for r in rows] == [
        ("gpu-a.json", "eager"), ("gpu-a.json", "copy"), ("gpu-b.json", "fused")]


def test_the_committed_gpu_files_load_and_hold_complete_records():
    from tokvec.bench.gpu import IMPLS, KEYS
    from tokvec.bench.roofline import gpu_points, gpu_results

    points = gpu_points(gpu_results())
    assert points, "no GPU run is committed (src/tokvec/bench/results/gpu-*.json)"
    assert all(p["median_ms"] > 0 and p["gb_s"] > 0 and set(KEYS) <= set(p) for p in points)
    for file in {p["file"] for p in points}:                  # every contender at every configuration
        sizes = {(p["batch"], p["seq_len"], p["d_model"], p["dtype"]) for p in points if p["file"] == file}
        assert len([p for p in points if p["file"] == file]) == len(sizes) * len(IMPLS)
        assert all(p["vs_copy"] is not None for p in points if p["file"] == file)


def test_gpu_points_put_each_record_against_the_copy_of_its_own_size():
    from tokvec.bench.roofline import gpu_points

    rows = [record("eager", 0.3), record("fused", 0.2), record("copy", 0.1),
            record("fused", 1.0, batch=8), {**record("copy", 0.05), "file": "other.json"},
            {**record("scaled_add", 0.25), "bytes": 12345}]
    eager, fused, copy, lone, other, own = gpu_points(rows)
    one_pass = bytes_moved(4, 8, 16, "bfloat16", impl="fused", table_dtype="float32")   # the kernel's PE
    copied = bytes_moved(4, 8, 16, "bfloat16", impl="copy")
    assert eager["bytes"] == fused["bytes"] == one_pass and copy["bytes"] == copied     # records without bytes
    assert own["bytes"] == 12345 and own["gb_s"] == pytest.approx(12345 / 0.25e-3 / 1e9)   # a record's own count
    assert fused["gb_s"] == pytest.approx(one_pass / 0.2e-3 / 1e9)
    copy_speed = copied / 0.1e-3 / 1e9
    assert copy["of_copy"] == pytest.approx(1.0) and copy["vs_copy"] == pytest.approx(1.0)
    assert eager["of_copy"] == pytest.approx(one_pass / 0.3e-3 / 1e9 / copy_speed)
    assert eager["vs_copy"] == pytest.approx(3.0) and fused["vs_copy"] == pytest.approx(2.0)
    assert fused["floor_ms"] == pytest.approx(one_pass / copy_speed / 1e6)
    assert lone["of_copy"] is None and lone["floor_ms"] is None and lone["vs_copy"] is None   # no copy at batch 8
    assert other["of_copy"] == pytest.approx(1.0)                      # another file's copy
    with pytest.raises(ValueError, match="lacks \\['median_ms'\\]"):
        gpu_points([{k: v for k, v in record("eager", 1.0).items() if k != "median_ms"}])


def test_per_sequence_positions_read_a_row_per_token_and_eager_gathers_them():
    """A server's decoding step: every sequence at its own position. The fused kernel reads B PE rows
    and B offsets; the eager forms also write the gathered rows and read them back."""
    B, d = 64, 4096
    shared = bytes_moved(B, 1, d, "bfloat16", impl="fused", table_dtype="float32")
    own = bytes_moved(B, 1, d, "bfloat16", impl="fused", table_dtype="float32", per_sequence=True)
    assert own - shared == (B - 1) * d * 4 + B * 8                  # B rows of float32, not one; B offsets
    eager = bytes_moved(B, 1, d, "bfloat16", impl="eager", per_sequence=True)
    assert eager == B * 8 * 2 + 6 * B * d * 2 + 3 * B * d * 2       # ids, offsets, 6 passes, PE rows x 3
    assert bytes_moved(B, 1, d, impl="copy", per_sequence=True) == bytes_moved(B, 1, d, impl="copy")
    assert 2 < eager / own < 2.5


def test_gpu_runs_are_the_committed_validation_files():
    from tokvec.bench.gpu_validate import SECTIONS
    from tokvec.bench.roofline import gpu_runs

    runs = gpu_runs()
    assert runs, "no gpu-validate run is committed"
    for name, run in runs.items():
        assert name.startswith("gpu-") and set(run) >= {"command", "environment", "records", "sections"}
        assert run["environment"]["gpu"] and run["environment"]["commit"]
        assert all(run["sections"][s]["ok"] is True for s in SECTIONS if s in run["sections"]), name
