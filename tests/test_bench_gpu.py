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

KEYS = set(kernelbench.KEYS)

#: Each contender's own byte count: (bytes_moved's impl, the positional table's dtype or None for the output's).
COUNTED_AS = {"eager": ("eager", None), "scaled_add": ("in_place", None), "compiled": ("fused", "float32"),
              "fused": ("fused", "float32"), "copy": ("copy", None)}


def test_records_have_the_issue_keys_and_each_contender_its_own_bytes():
    records = kernelbench.run_kernels(kernelbench.CONFIGS["tiny"], "cpu", impls=("eager", "scaled_add", "copy"),
                                      repeats=3, warmup=1, flush_mb=1)
    assert [(r["impl"], r["dtype"]) for r in records] == [
        ("eager", "float32"), ("scaled_add", "float32"), ("copy", "float32"),
        ("eager", "bfloat16"), ("scaled_add", "bfloat16"), ("copy", "bfloat16")]
    for r in records:
        assert set(r) == KEYS and r["median_ms"] > 0 and r["torch"] == torch.__version__
        impl, table = COUNTED_AS[r["impl"]]
        assert r["bytes"] == bytes_moved(r["batch"], r["seq_len"], r["d_model"], r["dtype"], impl=impl,
                                         table_dtype=table)
        assert r["gbps"] == pytest.approx(r["bytes"] / (r["median_ms"] / 1e3) / 1e9, rel=1e-3, abs=0.01)
        assert len(r["times_ms"]) == 3 and r["p10_ms"] <= r["median_ms"] <= r["p90_ms"]
        assert r["median_ms"] == pytest.approx(sorted(r["times_ms"])[1], abs=1e-5)
        # a decoding step (T = 1) also gets its wall time per call, launches included
        assert (r["wall_ms"] > 0) if r["seq_len"] == 1 else (r["wall_ms"] is None)
    eager, scaled = records[0]["bytes"], records[1]["bytes"]
    assert eager > scaled                                 # six passes against four


def test_quantiles_are_the_tenth_the_median_and_the_ninetieth():
    assert kernelbench.quantiles(list(range(1, 11))) == (1, 5.5, 9)
    assert kernelbench.quantiles([3.0]) == (3.0, 3.0, 3.0)


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
    assert [r["impl"] for r in data] == ["eager", "copy"] * 2


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
    """A stand-in for torch.compile that returns ``make(weight, ids, pe32, scale)``, reading the inputs
    from the closure of the function given to torch.compile (what the fused kernel computes)."""
    def compile(fn, **kw):
        free = dict(zip(fn.__code__.co_freevars, (c.cell_contents for c in fn.__closure__), strict=True))
        return lambda: make(free["weight"], free["ids"], free["pe32"], free["scale"])
    return compile


def test_a_bfloat16_result_without_the_positional_table_is_refused(monkeypatch):
    """At d = 4096 the scaled rows reach hundreds while |PE| <= 1: a tolerance relative to the
    largest value would let an impostor that drops PE through. Elementwise against float64 does not."""
    no_pe = _compile_as(lambda weight, ids, pe32, scale: torch.nn.functional.embedding(ids, weight) * scale)
    monkeypatch.setattr(kernelbench.torch, "compile", no_pe)
    with pytest.raises(RuntimeError, match="compiled differs from the float64 reference.*bfloat16"):
        kernelbench.run_kernels([(2, 8, 4096, 1000, "bfloat16")], "cpu", impls=("eager", "compiled"),
                                repeats=1, warmup=0, flush_mb=1)


def test_compiled_computes_what_the_kernel_computes_and_passes_the_check():
    """float32 arithmetic with a float32 table, rounded once: the real torch.compile of it."""
    records = kernelbench.run_kernels([(2, 8, 64, 100, "bfloat16")], "cpu", impls=("eager", "compiled"),
                                      repeats=1, warmup=0, flush_mb=1)
    assert [r["impl"] for r in records] == ["eager", "compiled"]
    fns, moved, (weight, ids, table64, scale) = kernelbench.contenders(2, 8, 64, 100, "bfloat16",
                                                                       torch.device("cpu"), impls=("compiled",))
    once = (weight[ids].double() * scale + table64.float().double()).to(torch.bfloat16)
    assert torch.equal(fns["compiled"](), once) or (fns["compiled"]() != once).sum() <= 2
    assert moved["compiled"] == bytes_moved(2, 8, 64, "bfloat16", impl="fused", table_dtype="float32")
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


def test_decode_contenders_agree_with_the_reference_on_the_cpu():
    """Every decoding contender that runs without a GPU (the fused ones in Triton's interpreter) is
    checked against the float64 reference inside run_decode, with each sequence at its own position."""
    pytest.importorskip("triton")
    result = kernelbench.run_decode((3,), d=16, V=50, dtype_name="float32", device="cpu", max_len=32, calls=2,
                                    repeats=1, flush_mb=1, interpret=True)
    row = result["batches"]["3"]
    assert set(row["wall_us"]) == {"layer", "eager", "fused_checked", "fused", "raw_launch"}
    assert set(row["kernel_us"]) == {"eager", "fused", "fused_no_split"}
    assert all(v > 0 for v in row["wall_us"].values())


def test_cuda_device_index_is_made_current(monkeypatch):
    """--device cuda:1 must time and launch on GPU 1: events, _sleep and Triton use the current device."""
    chosen = []
    monkeypatch.setattr(kernelbench.torch.cuda, "set_device", lambda d: chosen.append(torch.device(d)))
    monkeypatch.setattr(kernelbench.torch.cuda, "current_device", lambda: chosen[-1].index if chosen else 0)
    assert kernelbench._use("cuda:1") == torch.device("cuda", 1) and chosen == [torch.device("cuda", 1)]
    assert kernelbench._use("cpu") == torch.device("cpu") and len(chosen) == 1


CUDA = torch.cuda.is_available()


@pytest.mark.gpu
@pytest.mark.skipif(not CUDA, reason="no CUDA GPU on this machine: the benchmark's CUDA path not run here")
def test_the_benchmark_checks_and_times_every_contender_on_cuda():
    records = kernelbench.run_kernels([(4, 64, 256, 1000, "bfloat16"), (8, 1, 256, 1000, "bfloat16")], "cuda",
                                      repeats=3, warmup=1, flush_mb=64)
    assert {r["impl"] for r in records} == set(kernelbench.IMPLS)
    assert all(r["median_ms"] > 0 and r["gbps"] > 0 for r in records)
    assert all(r["wall_ms"] > 0 for r in records if r["seq_len"] == 1)


@pytest.mark.gpu
@pytest.mark.skipif(not CUDA, reason="no CUDA GPU on this machine: CUDA graphs not run here")
def test_decode_contenders_including_cuda_graphs_agree_on_cuda():
    result = kernelbench.run_decode((4,), d=256, V=1000, max_len=128, calls=5, repeats=1, flush_mb=64,
                                    compile_at=())
    row = result["batches"]["4"]
    assert {"graph_eager", "graph_fused", "raw_launch", "fused", "layer"} <= set(row["wall_us"])
