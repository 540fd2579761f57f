"""python -m tokvec.bench host: the fused wrapper's Python per call, the launch left out."""

import json
import shutil
from pathlib import Path

import pytest

pytest.importorskip("triton")
from tokvec import fused  # noqa: E402
from tokvec.bench import host  # noqa: E402


def test_the_costs_are_measured_and_the_kernel_is_put_back():
    kernel = fused.kernel
    costs = host.wrapper_costs(calls=200, repeats=2)
    assert set(costs) == {"one PyTorch operation", "unchecked", "unchecked, per-sequence offsets", "checked"}
    assert all(v > 0 for v in costs.values())
    assert fused.kernel is kernel                              # the stand-in launch is gone again


def test_a_baseline_version_is_timed_the_same_way(tmp_path):
    copy = tmp_path / "fused_copy.py"
    shutil.copy(Path(fused.__file__), copy)
    result = host.main(["--calls", "200", "--baseline", str(copy), "--out", str(tmp_path / "host.json")])
    saved = json.loads((tmp_path / "host.json").read_text())
    assert saved["us_per_call"] == result["us_per_call"]
    assert set(saved["us_per_call"]) == {"this version", "baseline (fused_copy.py)"}
    assert saved["command"].startswith("python -m tokvec.bench host")


def test_the_committed_host_results_show_the_wrapper_before_and_after():
    from tokvec.bench import load

    data = load("host-2core-epyc.json")
    now, before = data["us_per_call"]["this version"], data["us_per_call"]["baseline (fused-70acdda.py)"]
    assert "unchecked, per-sequence offsets" in now and "unchecked, per-sequence offsets" not in before
    assert now["unchecked"] < before["unchecked"]
