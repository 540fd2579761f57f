"""tokvec.bench.roofline: the byte counts behind the GPU targets."""

import pytest

from tokvec.bench.roofline import bytes_moved, min_time_ms

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
