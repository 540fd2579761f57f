"""python -m tokvec.bench kernels (tokvec.bench.gpu): what the GPU benchmark measures, checked on the CPU.

No GPU numbers are produced or asserted here; the tests run the same code path on tiny CPU
configurations to check the records, the byte accounting and the command line.
"""

import json

import pytest
import torch

from tokvec.bench import __main__ as bench_cli
from tokvec.bench import gpu as kernelbench
from tokvec.bench.roofline import bytes_moved

KEYS = {"device", "torch", "impl", "dtype", "batch", "seq_len", "d_model", "vocab_size", "median_ms", "gbps"}


def test_records_have_the_issue_keys_and_consistent_bandwidth():
    records = kernelbench.run_kernels(kernelbench.CONFIGS["tiny"], "cpu", impls=("eager", "copy"),
                                      repeats=3, warmup=1, flush_mb=1)
    assert [(r["impl"], r["dtype"]) for r in records] == [
        ("eager", "float32"), ("copy", "float32"), ("eager", "bfloat16"), ("copy", "bfloat16")]
    for r in records:
        assert set(r) == KEYS and r["median_ms"] > 0 and r["torch"] == torch.__version__
        kind = "copy" if r["impl"] == "copy" else "fused"
        moved = bytes_moved(r["batch"], r["seq_len"], r["d_model"], r["dtype"], impl=kind)
        assert r["gbps"] == pytest.approx(moved / (r["median_ms"] / 1e3) / 1e9, rel=1e-3, abs=0.01)


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
    with pytest.raises(RuntimeError, match="compiled differs from eager"):
        kernelbench.run_kernels([(1, 2, 8, 10, "float32")], "cpu", impls=("eager", "compiled"),
                                repeats=1, warmup=0, flush_mb=1)
