"""python -m tokvec.bench kernels (tokvec.bench.gpu): what the GPU benchmark measures, checked on the CPU.

No GPU numbers are produced or asserted here; the tests run the same code path on tiny CPU
configurations to check the records, the byte accounting and the command line.
"""

import json
import math
import random

import pytest
import torch

from tokvec.bench import __main__ as bench_cli
from tokvec.bench import gpu as kernelbench
from tokvec.bench.roofline import bytes_moved

KEYS = {"device", "torch", "impl", "dtype", "batch", "seq_len", "d_model", "vocab_size", "median_ms", "gbps",
        "wall_ms"}


def test_records_have_the_issue_keys_and_consistent_bandwidth():
    records = kernelbench.run_kernels(kernelbench.CONFIGS["tiny"], "cpu", impls=("eager", "copy"),
                                      repeats=3, warmup=1, flush_mb=1)
    assert [(r["impl"], r["dtype"]) for r in records] == [
        ("eager", "float32"), ("copy", "float32"), ("eager", "bfloat16"), ("copy", "bfloat16")]
    for r in records:
        assert set(r) == KEYS and r["median_ms"] > 0 and r["torch"] == torch.__version__
        kind = "copy" if r["impl"] == "copy" else "fused"
        moved = bytes_moved(r["batch"], r["seq_len"], r["d_model"], r["dtype"], impl=kind,
                            table_dtype="float32" if kind == "fused" else None)    # the kernel's float32 PE
        assert r["gbps"] == pytest.approx(moved / (r["median_ms"] / 1e3) / 1e9, rel=1e-3, abs=0.01)
        # a decoding step (T = 1) also gets its wall time per call, launches included
        assert (r["wall_ms"] > 0) if r["seq_len"] == 1 else (r["wall_ms"] is None)


def test_compiled_is_checked_against_eager_and_timed():
    records = kernelbench.run_kernels([(2, 3, 8, 20, "float32")], "cpu", impls=("eager", "compiled"),
                                      repeats=2, warmup=1, flush_mb=1)
    assert [r["impl"] for r in records] == ["eager", "compiled"]


def test_fused_is_skipped_with_a_message_without_cuda(capsys):
    if torch.cuda.is_available():
        pytest.skip("a CUDA GPU is present: fused runs there instead")
    records = kernelbench.run_kernels([(1, 2, 8, 10, "float32")], "cpu", impls=("eager", "fused"),
                                      repeats=1, warmup=0, flush_mb=1, log=print)
    assert [r["impl"] for r in records] == ["eager"]
    assert "fused skipped on cpu" in capsys.readouterr().out


def test_unknown_implementation_is_refused():
    with pytest.raises(ValueError, match="unknown implementations"):
        kernelbench.run_kernels([(1, 1, 4, 4, "float32")], "cpu", impls=("magic",))


def test_cli_writes_a_list_of_records(tmp_path):
    out = tmp_path / "k.json"
    bench_cli.main(["kernels", "--device", "cpu", "--configs", "tiny", "--impls", "eager", "copy",
                "--repeats", "2", "--warmup", "0", "--out", str(out)])
    data = json.loads(out.read_text())
    assert isinstance(data, list) and len(data) == 4 and all(set(r) == KEYS for r in data)


def test_cli_refuses_cuda_without_a_gpu():
    if torch.cuda.is_available():
        pytest.skip("a CUDA GPU is present")
    with pytest.raises(SystemExit):
        bench_cli.main(["kernels"])


def test_a_wrong_compiled_result_is_refused_before_timing(monkeypatch):
    monkeypatch.setattr(kernelbench.torch, "compile", lambda fn, **kw: (lambda: fn() + 1.0))
    with pytest.raises(RuntimeError, match="compiled differs from the float64 reference"):
        kernelbench.run_kernels([(1, 2, 8, 10, "float32")], "cpu", impls=("eager", "compiled"),
                                repeats=1, warmup=0, flush_mb=1)


def _compile_as(make):
    """A stand-in for torch.compile that returns ``make(weight, ids, pe, scale)`` for the eager function."""
    def compile(fn, **kw):
        weight, ids, pe, scale = fn.__defaults__
        return lambda: make(weight, ids, pe, scale)
    return compile


def test_a_bfloat16_result_without_the_positional_table_is_refused(monkeypatch):
    """At d = 4096 the scaled rows reach hundreds while |PE| <= 1: a tolerance relative to the
    largest value would let an impostor that drops PE through. Elementwise against float64 does not."""
    no_pe = _compile_as(lambda weight, ids, pe, scale: torch.nn.functional.embedding(ids, weight) * scale)
    monkeypatch.setattr(kernelbench.torch, "compile", no_pe)
    with pytest.raises(RuntimeError, match="compiled differs from the float64 reference.*bfloat16"):
        kernelbench.run_kernels([(2, 8, 4096, 1000, "bfloat16")], "cpu", impls=("eager", "compiled"),
                                repeats=1, warmup=0, flush_mb=1)


def test_the_kernels_way_in_bfloat16_passes_the_check(monkeypatch):
    """float32 arithmetic with a float32 table, rounded once: what the fused kernel computes."""
    def one_rounding(weight, ids, pe, scale):
        table32 = torch.from_numpy(kernelbench.sinusoidal_table_numpy(ids.shape[1], weight.shape[1])).float()
        return (weight[ids].float() * scale + table32).to(weight.dtype)
    monkeypatch.setattr(kernelbench.torch, "compile", _compile_as(one_rounding))
    records = kernelbench.run_kernels([(2, 8, 4096, 1000, "bfloat16")], "cpu", impls=("eager", "compiled"),
                                      repeats=1, warmup=0, flush_mb=1)
    assert [r["impl"] for r in records] == ["eager", "compiled"]
    assert kernelbench.TOLERANCE["bfloat16"] == 2**-6 and math.log2(kernelbench.TOLERANCE["float32"]) <= -20


def test_rounds_interleave_the_contenders_in_a_seeded_shuffled_order():
    calls = []
    fns = {name: (lambda name=name: calls.append(name)) for name in ("eager", "compiled", "fused", "copy")}
    times, order = kernelbench._interleaved(fns, lambda fn: fn() or 1.0, 6, 2, random.Random(0))
    assert calls[:8] == ["eager"] * 2 + ["compiled"] * 2 + ["fused"] * 2 + ["copy"] * 2   # warm-up
    assert calls[8:] == order and all(len(t) == 6 for t in times.values())
    rounds = [tuple(order[k:k + 4]) for k in range(0, 24, 4)]
    assert all(sorted(r) == sorted(fns) for r in rounds)           # each round calls each once
    assert len(set(rounds)) > 1                                     # and not always in one order
    assert kernelbench._interleaved(fns, lambda fn: 1.0, 6, 0, random.Random(0))[1] == order   # seeded


def test_run_kernels_measures_in_interleaved_rounds(monkeypatch):
    orders = []
    real = kernelbench._interleaved

    def spy(fns, measure, rounds, warmup, rng):
        times, order = real(fns, measure, rounds, warmup, rng)
        orders.append(order)
        return times, order

    monkeypatch.setattr(kernelbench, "_interleaved", spy)
    kernelbench.run_kernels(kernelbench.CONFIGS["tiny"], "cpu", impls=("eager", "copy"), repeats=8, warmup=0,
                            flush_mb=1, wall_calls=2)
    assert len(orders) == 3                                     # tiny: T = 5, then T = 1 (events and wall)
    for order in orders:
        rounds = [tuple(order[k:k + 2]) for k in range(0, len(order), 2)]
        assert len(rounds) == 8 and all(sorted(r) == ["copy", "eager"] for r in rounds)
        assert set(rounds) == {("eager", "copy"), ("copy", "eager")}     # both orders occur
