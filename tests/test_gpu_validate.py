"""python -m tokvec.bench gpu-validate: the one command that checks and times chapter 10.1 on a GPU.

On a CPU it runs as a smoke test (Triton's interpreter, tiny shapes): every section that can run
without CUDA runs, and the ones that cannot are recorded as skipped with their reason. The
committed H100 run is checked in tests/test_bench_roofline.py.
"""

import json

import pytest
import torch

pytest.importorskip("triton")
from tokvec.bench import gpu_validate  # noqa: E402

CUDA_ONLY = {"large", "sweep"}


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    out = tmp_path_factory.mktemp("gpu-validate")
    path = gpu_validate.validate(out, device="cpu", do_sweep=True, command="smoke test")
    return path, json.loads(path.read_text())


def test_the_cpu_smoke_run_writes_every_section_and_fails_none(smoke):
    path, data = smoke
    assert path.name == "gpu-cpu.json" and data["command"] == "smoke test"
    assert list(data["sections"]) == list(gpu_validate.SECTIONS)
    for name, section in data["sections"].items():
        if name in CUDA_ONLY:
            assert section["ok"] is None and "no CUDA" in section["skipped"], name
        else:
            assert section["ok"] is True, (name, section)
    env = data["environment"]
    assert env["torch"] == torch.__version__ and env["triton"] and env["python"]


def test_the_smoke_run_exercises_the_fused_paths_in_the_interpreter(smoke):
    _, data = smoke
    assert {r["impl"] for r in data["records"]} == {"eager", "scaled_add", "compiled", "fused", "copy"}
    row = next(iter(data["sections"]["decode"]["batches"].values()))
    assert {"fused", "fused_checked", "raw_launch"} <= set(row["wall_us"])
    assert data["sections"]["matrix"]["checked"] > 30 and data["sections"]["matrix"]["failed"] == []
    assert all(v["guard_clean"] and v["all_written"] for k, v in data["sections"]["guard"].items()
               if isinstance(v, dict))
    bad = data["sections"]["bad_input"]
    assert "token id 50" in bad["raised"] and bad["unchecked_bad_id_is_nan_row"]


def test_a_failing_section_is_recorded_and_the_next_ones_still_run(tmp_path, monkeypatch):
    def broken(run):
        raise RuntimeError("a wrong offset")

    monkeypatch.setattr(gpu_validate, "guard", broken)
    path = gpu_validate.validate(tmp_path, device="cpu", sections=("guard", "bad_input"))
    sections = json.loads(path.read_text())["sections"]
    assert sections["guard"]["ok"] is False and "a wrong offset" in sections["guard"]["error"]
    assert sections["bad_input"]["ok"] is True                   # the next section ran


def test_no_section_starts_after_the_budget_and_says_so(tmp_path):
    path = gpu_validate.validate(tmp_path, device="cpu", budget=0.0, sections=("guard", "bad_input"))
    sections = json.loads(path.read_text())["sections"]
    assert all(s["ok"] is None and "time budget" in s["skipped"] for s in sections.values())


def test_unknown_sections_are_refused():
    with pytest.raises(SystemExit):
        gpu_validate.main(["--out", "x", "--only", "everything"])
    with pytest.raises(ValueError, match="unknown sections"):
        gpu_validate.validate("x", device="cpu", sections=("everything",))


def test_the_promise_check_refuses_a_result_one_step_off():
    torch.manual_seed(0)
    w, tab = torch.randn(20, 16).to(torch.bfloat16), torch.randn(4, 16)
    ids = torch.randint(0, 20, (3, 4))
    right = (w[ids].float() * 2.0 + tab).to(torch.bfloat16)              # float32, rounded once
    assert gpu_validate.promise_holds(right, ids, w, tab, 2.0)
    wrong = right.clone()
    wrong[0, 0, 0] = torch.nextafter(right[0, 0, 0].float(), torch.tensor(1e9)).to(torch.bfloat16) * 1.01
    assert not gpu_validate.promise_holds(wrong, ids, w, tab, 2.0)
    no_pe = (w[ids].float() * 2.0).to(torch.bfloat16)
    assert not gpu_validate.promise_holds(no_pe, ids, w, tab, 2.0)


def test_the_card_name_is_a_file_name():
    assert gpu_validate.card_name(torch.device("cpu")) == "cpu"


def test_the_reuse_control_keeps_every_case_apart_on_a_gpu(tmp_path, monkeypatch):
    """The GPU branch adds wider-tile launches to every case; run it on the CPU with the launches
    replaced, on tiny shapes: each id distribution must keep its own key and every contender."""
    run = gpu_validate._Run(tmp_path, torch.device("cpu"), 60.0, "test")
    run.cuda = True                                              # take the GPU branch
    monkeypatch.setattr(gpu_validate, "_launcher", lambda *a, **kw: (lambda: None))
    monkeypatch.setattr(gpu_validate.fused, "fused_embedding", lambda *a, **kw: None)
    monkeypatch.setattr(gpu_validate.bench, "_time_once", lambda fn, dev, flush, **kw: (fn(), 1.0)[1])
    result = gpu_validate.reuse(run, shape=(2, 4, 8))
    cases = [k for k, v in result.items() if isinstance(v, dict)]
    assert cases == list(gpu_validate.REUSE)
    for case in cases:
        seed = result[case]["per_seed_ms"][0]
        assert {"fused", "gather alone", "eager", "copy", *gpu_validate.REUSE_TILES} <= set(seed)


def test_the_warm_cache_control_times_a_call_right_after_the_same_call(tmp_path, monkeypatch):
    """In interleaved rounds a 'warm' call would otherwise follow some other contender."""
    calls = []
    run = gpu_validate._Run(tmp_path, torch.device("cpu"), 60.0, "test")

    def fake_time(fn, dev, flush, **kw):
        calls.append(("timed", fn, kw.get("mode", "read")))
        return 1.0

    real_contenders = gpu_validate.bench.contenders

    def traced(*args, **kwargs):
        fns, moved, inputs = real_contenders(*args, **{**kwargs, "impls": ("eager", "copy")})
        return {n: (lambda n=n, f=f: calls.append(("call", n)) or f()) for n, f in fns.items()}, moved, inputs

    monkeypatch.setattr(gpu_validate.bench, "_time_once", fake_time)
    monkeypatch.setattr(gpu_validate.bench, "contenders", traced)
    gpu_validate.timing(run)
    warm = [i for i, c in enumerate(calls) if c[0] == "timed" and c[2] == "none"]
    assert warm and all(calls[i - 1][0] == "call" and calls[i - 1][1] == calls[i][1].__defaults__[0]
                        for i in warm)
