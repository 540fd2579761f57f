"""``python -m tokvec.bench gpu-validate --out DIR``: every check of the GPU chapter on one GPU, in one command.

Run it from a checkout on a machine with one CUDA GPU, with the PyTorch and Triton found there::

    PYTHONPATH=src python -m tokvec.bench gpu-validate --out DIR [--sweep] [--budget 280]

It runs the sections of :data:`SECTIONS` in order of priority and writes
``DIR/gpu-<card>.json`` after each one (``<card>`` from the GPU's name, e.g.
``gpu-nvidia-h100-80gb-hbm3.json``), so a run cut short keeps what it finished. The file has the
shape the chapter reads (:func:`tokvec.bench.roofline.gpu_results`): the command, the
environment, the benchmark's records under ``"records"``, and each section's findings under
``"sections"``, each with its time in seconds and ``"ok"``, whether what it checks held.

1. ``environment``: versions (Python, PyTorch, Triton, CUDA, driver), the GPU, its SMs, L2 and
   memory, its clocks, power limit and state (``nvidia-smi``), the commit;
2. ``tests``: ``pytest -m gpu`` over the kernel's and the benchmark's tests;
3. ``matrix``: the kernel against the float64 reference for output dtypes x table dtypes x id
   dtypes x shapes, contiguous or not, offsets or not, and bitwise determinism;
4. ``guard``: launched by hand into a NaN buffer with a guard after it: every element written,
   nothing past the end;
5. ``large``: outputs and tables past 2**31 elements (the kernel's 64-bit offsets; about 9 GB);
6. ``bad_input``: a bad id is a Python error and the CUDA context lives on; ``check=False`` with a
   bad id or position gives NaN rows, not an out-of-bounds read; the compiled kernel's
   registers, spills and vector accesses;
7. ``benchmark``: :func:`tokvec.bench.gpu.run_kernels` on ``CONFIGS["models"]``: the records;
8. ``timing``: the timing method against its controls (a flush that writes, no hold, a warm
   cache, ``triton.testing.do_bench``);
9. ``decode``: :func:`tokvec.bench.gpu.run_decode`: one decoding step's wall time per contender;
10. ``reuse``: the control for reading a fused time below the copy's: the headline shape with ids
    that repeat rows (the benchmark's), that never repeat one (a permutation), and that use a
    table small enough for the L2, three seeds each;
11. ``eager_parts``: eager's three kernels alone, and its add with the positional tile broadcast
    against pre-expanded (whether the tile's re-reads hit the L2);
12. ``sweep`` (only with ``--sweep``): block sizes, warps and ``min_programs`` at the headline
    configuration, against the defaults, and three launch settings at every configuration.

Without a GPU it runs as a smoke test (``make test`` does): the interpreter, tiny shapes, the
CUDA-only sections recorded as skipped with the reason.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import re
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path

import torch

from tokvec import fused
from tokvec.arrays import sinusoidal_table_numpy
from tokvec.bench import gpu as bench
from tokvec.bench.common import write

__all__ = ["SECTIONS", "card_name", "main", "promise_holds", "validate"]

SECTIONS = ("environment", "tests", "matrix", "guard", "large", "bad_input", "benchmark", "timing", "decode",
            "reuse", "eager_parts", "sweep")

ROOT = Path(__file__).resolve().parents[3]          # the checkout (src/tokvec/bench/ -> .)


def card_name(device: torch.device) -> str:
    """A file-name slug for the device: ``nvidia-h100-80gb-hbm3``, or ``cpu`` without a GPU."""
    if device.type != "cuda":
        return "cpu"
    return re.sub(r"[^a-z0-9]+", "-", torch.cuda.get_device_name(device).lower()).strip("-")


def promise_holds(out: torch.Tensor, ids: torch.Tensor, weight: torch.Tensor, table: torch.Tensor, scale: float,
                  offsets: torch.Tensor | None = None, *, interpreted: bool = False) -> bool:
    """Does ``out`` keep the kernel's promise against the float64 value of ``weight[ids] * scale + PE``?

    float32 output: within 2 float32 steps of the terms' size (two roundings, or one fused
    multiply-add). 16-bit output: within one step of the dtype, and, compiled, equal to the
    float64 value rounded once except next to a rounding boundary (within 2 float32 steps of the
    terms' size), where float32's own error may tip it. ``interpreted``: Triton's interpreter
    truncates to bfloat16, so only the one-step bound is asked of it.
    """
    ids = ids.long()
    pos = torch.arange(ids.shape[-1], device=ids.device)
    pe = table.double()[pos if offsets is None else offsets.long()[:, None] + pos]
    rows = weight.double()[ids] * scale
    ref = rows + pe
    size = torch.maximum(rows.abs(), pe.abs().expand_as(ref))
    step32 = 2.0 ** (torch.floor(torch.log2(size.clamp_min(1e-30))) - 23)
    if out.dtype == torch.float32:
        return bool(((out.double() - ref).abs() <= 2 * step32).all())
    mantissa = {torch.bfloat16: 7, torch.float16: 10}[out.dtype]
    step = 2.0 ** (torch.floor(torch.log2(ref.abs().clamp_min(1e-30))) - mantissa)
    step = torch.maximum(step, torch.full_like(step, 2.0 ** -24 if out.dtype == torch.float16 else 2.0 ** -133))
    if not ((out.double() - ref).abs() <= step).all():
        return False
    if interpreted and out.dtype == torch.bfloat16:
        return True
    differ = out != ref.to(out.dtype)
    boundary = (torch.floor(ref / step) + 0.5) * step                   # the nearest rounding midpoint
    return not (differ & ((ref - boundary).abs() > 2 * step32)).any()


class _Run:
    """The results file, rewritten after every section."""

    def __init__(self, out: Path, device: torch.device, budget: float, command: str):
        self.device, self.cuda, self.budget, self.start = device, device.type == "cuda", budget, time.monotonic()
        self.path = out / f"gpu-{card_name(device)}.json"
        self.data = {"command": command, "environment": {}, "records": [], "sections": {}}

    def elapsed(self) -> float:
        return time.monotonic() - self.start

    def save(self, name: str, value: dict, seconds: float) -> None:
        self.data["sections"][name] = {**value, "seconds": round(seconds, 1)}
        write(self.data, self.path)
        print(f"[{self.elapsed():6.1f} s] {name}: {json.dumps(value, default=str)[:600]}", flush=True)

    def section(self, name: str, fn: Callable[[], dict]) -> None:
        if self.elapsed() > self.budget:
            return self.save(name, {"ok": None, "skipped": f"time budget of {self.budget:.0f} s spent"}, 0.0)
        began = time.monotonic()
        try:
            value = fn()
        except Exception as err:                                  # later sections still run
            value = {"ok": False, "error": f"{type(err).__name__}: {err}"[:2000],
                     "trace": traceback.format_exc()[-3000:]}
        if self.cuda:
            torch.cuda.empty_cache()
        self.save(name, value, time.monotonic() - began)


def _inputs(B, T, D, V, dtype, device, *, table_dtype=torch.float32, ids_dtype=torch.int64, seed=0, L=None):
    g = torch.Generator(device="cpu").manual_seed(seed)
    weight = torch.randn(V, D, generator=g).to(device=device, dtype=dtype)
    ids = torch.randint(0, V, (B, T), generator=g)
    ids[0, 0], ids[-1, -1] = 0, V - 1                                    # the first and last rows
    table = torch.from_numpy(sinusoidal_table_numpy(L or T, D)).to(device=device, dtype=table_dtype)
    return ids.to(device=device, dtype=ids_dtype), weight, table


# --- the sections ---------------------------------------------------------------------------------

def environment(run: _Run) -> dict:
    env = {"python": sys.version.split()[0], "torch": torch.__version__, "cuda": torch.version.cuda,
           "commit": os.environ.get("TOKVEC_COMMIT") or _git_commit(), "device": str(run.device)}
    try:
        import triton
        env["triton"] = triton.__version__
    except ImportError:
        env["triton"] = None
    if run.cuda:
        p = torch.cuda.get_device_properties(run.device)
        env.update(gpu=p.name, sms=p.multi_processor_count, memory_gib=round(p.total_memory / 2**30, 1),
                   l2_mib=round(getattr(p, "L2_cache_size", 0) / 2**20, 1), capability=f"{p.major}.{p.minor}")
        env["nvidia_smi"] = _smi("name,driver_version,pstate,clocks.sm,clocks.max.sm,clocks.mem,clocks.max.mem,"
                                 "power.draw,power.limit,temperature.gpu,ecc.mode.current,persistence_mode,"
                                 "compute_mode,clocks_throttle_reasons.active")
    run.data["environment"] = env
    return {"ok": True, **env}


def _smi(fields: str) -> str:
    """``nvidia-smi``'s answer for ``fields`` (CSV with a header), or why there is none."""
    try:
        smi = subprocess.run(["nvidia-smi", f"--query-gpu={fields}", "--format=csv"], capture_output=True,
                             text=True, timeout=30)
        return smi.stdout.strip() or smi.stderr.strip()
    except (OSError, subprocess.TimeoutExpired) as err:
        return f"not available: {err}"


def _git_commit() -> str | None:
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=ROOT,
                              timeout=10).stdout.strip() or None
    except (OSError, subprocess.TimeoutExpired):
        return None


def tests(run: _Run) -> dict:
    files = sorted(str(f.relative_to(ROOT)) for f in (ROOT / "tests").glob("test_*.py")
                   if "pytest.mark.gpu" in f.read_text(encoding="utf-8")) if (ROOT / "tests").is_dir() else []
    if not files:
        return {"ok": None, "skipped": f"no tests/ beside the package ({ROOT}): run from a checkout"}
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-m", "gpu", "-p", "no:cacheprovider", "-rs", *files],
                       capture_output=True, text=True, cwd=ROOT, env=env, timeout=180)
    summary = (r.stdout.strip().splitlines() or [""])[-1]
    return {"ok": r.returncode == 0 if run.cuda else r.returncode in (0, 5), "returncode": r.returncode,
            "summary": summary, "tail": r.stdout[-2500:] + r.stderr[-1000:]}


def matrix(run: _Run) -> dict:
    dev, cuda = run.device, run.cuda
    shapes = ([(1, 1, 1, 5), (1, 1, 4096, 50), (64, 1, 4096, 32000), (3, 17, 1000, 97), (7, 3, 20, 11),
               (2, 2048, 768, 32000), (8, 2048, 4096, 128256)] if cuda else
              [(1, 1, 1, 5), (3, 17, 40, 97), (7, 3, 20, 11)])
    dtypes = (torch.float32, torch.bfloat16, torch.float16)
    rows, failed = 0, []

    def check(label, out, ids, w, tab, offsets=None, scale=None):
        nonlocal rows
        rows += 1
        scale = math.sqrt(w.shape[1]) if scale is None else scale
        if not promise_holds(out, ids, w, tab, scale, offsets, interpreted=not cuda):
            failed.append(label)

    for B, T, D, V in shapes:
        for dtype in dtypes:
            ids, w, tab = _inputs(B, T, D, V, dtype, dev)
            check((B, T, D, str(dtype)), fused.fused_embedding(ids, w, tab, math.sqrt(D)), ids, w, tab)
    B, T, D, V = (3, 17, 1000, 97) if cuda else (3, 17, 40, 97)
    for dtype in dtypes:
        for tdt in (torch.float64, torch.bfloat16, torch.float16):
            ids, w, tab = _inputs(B, T, D, V, dtype, dev, table_dtype=tdt)
            check((B, T, D, str(dtype), f"table {tdt}"), fused.fused_embedding(ids, w, tab, math.sqrt(D)), ids, w, tab)
        for idt in (torch.int32, torch.int16, torch.uint8):
            ids, w, tab = _inputs(B, T, D, V, dtype, dev, ids_dtype=idt)
            check((B, T, D, str(dtype), f"ids {idt}"), fused.fused_embedding(ids, w, tab, math.sqrt(D)), ids, w, tab)
        ids, w, tab = _inputs(B, T, D, V, dtype, dev, L=64)
        offsets = torch.tensor([0, 30, 64 - T], device=dev)
        check((B, T, D, str(dtype), "offsets"), fused.fused_embedding(ids, w, tab, math.sqrt(D), offsets=offsets),
              ids, w, tab, offsets)
        check((B, T, D, str(dtype), "offset 5"), fused.fused_embedding(ids, w, tab, math.sqrt(D), offsets=5),
              ids, w, tab, torch.full((B,), 5, device=dev))
        odd = ids.t().contiguous().t()                                       # non-contiguous ids, weight, table
        wt, tt = w.t().contiguous().t(), tab[:, :].t().contiguous().t()
        check((B, T, D, str(dtype), "non-contiguous"), fused.fused_embedding(odd, wt, tt, math.sqrt(D)), ids, w, tab)
    ids, w, tab = _inputs(64, 1, 4096 if cuda else 40, 32000 if cuda else 50, torch.bfloat16, dev, L=4096)
    offsets = torch.randint(0, 4096, (64,), device=dev)
    outs = [fused.fused_embedding(ids, w, tab, 64.0, offsets=offsets) for _ in range(3)]
    check("decode, per-sequence offsets", outs[0], ids, w, tab, offsets, scale=64.0)
    deterministic = all(torch.equal(outs[0], o) for o in outs[1:])
    return {"ok": not failed and deterministic, "checked": rows, "failed": [str(f) for f in failed],
            "deterministic": deterministic}


def guard(run: _Run) -> dict:
    res = {}
    for B, T, D, kw in [(3, 17, 1000, {}), (1, 1, 24, {}), (7, 3, 20, {"block_d": 8, "min_programs": 9})]:
        ids, w, tab = _inputs(B, T, D, 11, torch.float32, run.device)
        launch = fused.launch_grid(B, T, D, **kw)
        buf = torch.full((B * T * D + 4096,), float("nan"), device=run.device)
        fused.kernel(interpret=not run.cuda)[launch.grid](
            ids, w, tab, buf, ids, B, T, 11, T, 2.0, launch.seqs_per_program, D=D, BLOCK_T=launch.block_t,
            BLOCK_D=launch.block_d, PER_SEQUENCE=False)
        body = buf[:B * T * D].view(B, T, D)
        res[f"{B}x{T}x{D}"] = {"guard_clean": bool(buf[B * T * D:].isnan().all()),
                               "all_written": bool(not body.isnan().any()),
                               "right": promise_holds(body, ids, w, tab, 2.0, interpreted=not run.cuda)}
    return {"ok": all(all(v.values()) for v in res.values()), **res}


def large(run: _Run) -> dict:
    """Output (17 x 4096 x 32768 = 2.28e9) and table (66000 x 32768 = 2.16e9) past 2**31 elements."""
    if not run.cuda:
        return {"ok": None, "skipped": "no CUDA GPU: 9 GB of GPU memory needed"}
    B, T, D, V = 17, 4096, 32768, 66000
    free = torch.cuda.mem_get_info(run.device)[0]
    if free < 12 * 2**30:
        return {"ok": None, "skipped": f"only {free / 2**30:.1f} GiB free, 12 needed"}
    g = torch.Generator(device=run.device).manual_seed(0)
    w = torch.randn(V, D, device=run.device, dtype=torch.bfloat16, generator=g)
    ids = torch.randint(0, V, (B, T), device=run.device, generator=g)
    ids[-1, -8:] = V - 1                                                  # the table's last row
    tab = torch.from_numpy(sinusoidal_table_numpy(T, D)).float().to(run.device)
    out = fused.fused_embedding(ids, w, tab, 8.0, check=False)
    ok = promise_holds(out[-2:], ids[-2:], w, tab, 8.0)                  # elements past 2**31 live here
    ok_first = promise_holds(out[:1], ids[:1], w, tab, 8.0)
    return {"ok": ok and ok_first, "out_elements": out.numel(), "table_elements": w.numel(),
            "past_2_31": out.numel() > 2**31 and w.numel() > 2**31}


def bad_input(run: _Run) -> dict:
    dev = run.device
    ids, w, tab = _inputs(2, 8, 64, 50, torch.bfloat16, dev)
    bad = ids.clone()
    bad[1, 2] = 50
    try:
        fused.fused_embedding(bad, w, tab, 8.0)
        raised = None
    except IndexError as err:
        raised = str(err)
    nan_rows = fused.fused_embedding(bad, w, tab, 8.0, check=False)
    bad_offset = fused.fused_embedding(ids, w, tab, 8.0, offsets=torch.tensor([0, 1], device=dev), check=False)
    alive = bool((torch.ones(4, device=dev) + 1).sum().item() == 8)      # the CUDA context still works
    info = {"raised": raised, "context_alive": alive,
            "unchecked_bad_id_is_nan_row": bool(nan_rows[1, 2].isnan().all() and nan_rows.isnan().sum() == 64),
            "unchecked_bad_offset_is_nan_row": bool(bad_offset[1, 7].isnan().all()
                                                    and bad_offset.isnan().sum() == 64)}
    info["ok"] = bool(raised and alive and info["unchecked_bad_id_is_nan_row"]
                      and info["unchecked_bad_offset_is_nan_row"])
    if run.cuda:                                         # what the compiler made of the main specialisation
        try:
            B, T, D = 64, 2048, 4096
            ids, w, tab = _inputs(B, 16, D, 32000, torch.bfloat16, dev)
            launch = fused.launch_grid(B, T, D)
            out = torch.empty(1, dtype=torch.bfloat16, device=dev)
            k = fused._embedding_kernel.warmup(ids, w, tab, out, ids, B, T, 32000, T, 64.0, launch.seqs_per_program,
                                               D=D, BLOCK_T=launch.block_t, BLOCK_D=launch.block_d,
                                               PER_SEQUENCE=False, grid=launch.grid)
            k._init_handles()
            ptx = k.asm.get("ptx", "")
            info["compiled"] = {"n_regs": k.n_regs, "n_spills": k.n_spills, "v4_loads": ptx.count("ld.global.v4"),
                                "v4_stores": ptx.count("st.global.v4"), "fma": ptx.count("fma.rn.f32")}
        except Exception as err:                          # the API differs across Triton versions
            info["compiled"] = {"error": repr(err)[:300]}
    return info


def benchmark(run: _Run, configs) -> dict:
    records = bench.run_kernels(configs, run.device, repeats=30 if run.cuda else 3, warmup=5 if run.cuda else 1,
                                flush_mb=256 if run.cuda else 1, interpret=not run.cuda, log=print)
    run.data["records"] = records
    result = {"ok": True, "records": len(records)}
    if run.cuda:                                       # the clocks under load, not at idle
        result["nvidia_smi_after"] = _smi("clocks.sm,clocks.mem,power.draw,temperature.gpu,pstate,"
                                          "clocks_throttle_reasons.active")
    return result


#: The timing method (:func:`tokvec.bench.gpu._time_once`) and its controls: keyword arguments,
#: and whether the garbage collector stays on.
TIMING_METHODS = {
    "read flush, hold, GC off (the benchmark's)": ({"mode": "read"}, False),
    "read flush, hold, GC on": ({"mode": "read"}, True),
    "read flush, short hold (0.1 ms)": ({"mode": "read", "hold": 200_000}, False),
    "read flush, no hold": ({"mode": "read", "hold": 0}, False),
    "zero flush, hold": ({"mode": "zero"}, False),
    "zero flush, no hold, GC on (the first run's)": ({"mode": "zero", "hold": 0}, True),
    "warm cache, hold": ({"mode": "none"}, False),
}


def timing(run: _Run) -> dict:
    """The timing method against its controls, at the headline size, GPT-2's and a decoding step.
    Every (contender, method) pair is one entry of the same interleaved rounds, so a disturbance of
    the machine lands on all methods alike, not on whichever ran as a block at that moment."""
    import gc

    dev = run.device
    configs = ([(64, 2048, 4096, 32000, "bfloat16"), (32, 512, 768, 32000, "float32"),
                (64, 1, 4096, 32000, "bfloat16")] if run.cuda else [(2, 8, 16, 50, "float32")])
    flush = torch.ones((256 if run.cuda else 1) * 2**20 // 4, device=dev)
    rng = random.Random(0)
    out = {}
    for B, T, d, V, dtype in configs:
        fns, _, _ = bench.contenders(B, T, d, V, dtype, dev, impls=("eager", "compiled", "fused", "copy"),
                                     interpret=not run.cuda)
        pairs = {(name, label): (fn, kw, collect) for name, fn in fns.items()
                 for label, (kw, collect) in TIMING_METHODS.items()}

        def measure(entry):
            fn, kw, collect = entry
            if kw.get("mode") == "none":              # a warm cache: the same call just before
                fn()
            if collect:
                gc.enable()
            try:
                return bench._time_once(fn, dev, flush, **kw)
            finally:
                gc.disable()

        for fn in fns.values():                        # compile and warm up before any round
            for _ in range(3):
                fn()
        times, _ = bench._interleaved({k: (lambda e=e: e) for k, e in pairs.items()},
                                      lambda get: measure(get()), 30 if run.cuda else 3, 0, rng)
        row = {name: {} for name in fns}
        for (name, label), t in times.items():
            row[name][label] = [round(x, 5) for x in bench.quantiles(t)]
        if run.cuda:
            import triton.testing
            for name, fn in fns.items():
                row[name]["triton do_bench median"] = round(triton.testing.do_bench(fn, return_mode="median"), 5)
        out[f"{B}x{T}x{d} {dtype}"] = row
        del fns
    return {"ok": True, "interleaved": "every contender and method in the same shuffled rounds",
            "ms_p10_p50_p90": out}


def decode(run: _Run) -> dict:
    from tokvec.bench import host

    if run.cuda:
        result = bench.run_decode((1, 64, 128, 256), device=run.device, log=print)
        result["host_us_per_call"] = host.wrapper_costs()        # this machine's CPU, the launch left out
    else:
        result = bench.run_decode((2,), d=16, V=50, dtype_name="float32", device=run.device, max_len=32, calls=3,
                                  repeats=2, flush_mb=1, interpret=True, log=print)
    return {"ok": True, **result}


def _launcher(ids, w, tab, *, block_t: int, block_d: int, warps: int, min_programs: int = fused.MIN_PROGRAMS):
    """The kernel launched by hand with these launch settings into one preallocated output: what the
    sweep times (no wrapper, no allocation)."""
    (B, T), (V, D) = ids.shape, w.shape
    L = fused.launch_grid(B, T, D, block_t=block_t, block_d=block_d, min_programs=min_programs)
    out = torch.empty(B, T, D, dtype=w.dtype, device=w.device)

    def launch():
        fused._embedding_kernel[L.grid](ids, w, tab, out, ids, B, T, V, T, float(D) ** 0.5, L.seqs_per_program,
                                        D=D, BLOCK_T=L.block_t, BLOCK_D=L.block_d, PER_SEQUENCE=False,
                                        num_warps=warps)
    return launch


#: The id distributions of :func:`reuse`: (rows in the table, how the ids are drawn).
REUSE = {"uniform over 32,000 rows (the benchmark's)": (32000, "uniform"),
         "a permutation of 131,072 rows (no row twice)": (131072, "permutation"),
         "uniform over 1,024 rows (an 8 MB table, fits the L2)": (1024, "uniform")}


#: Wider tiles for :func:`reuse`: programs running together read wider column blocks of the
#: table (``V * block_d`` elements), up to whole rows.
REUSE_TILES = {"fused, 4x512 tiles, 8 warps": (4, 512, 8), "fused, whole rows (1x4096), 8 warps": (1, 4096, 8)}


def reuse(run: _Run, shape: tuple[int, int, int] | None = None) -> dict:
    """Is a fused time below the copy's the L2 serving repeated rows? The same shape with ids that
    repeat rows, that never do, and whose table fits the L2, three seeds each; the copy (which reads
    no table) is the anchor. On a GPU also the same kernel with wider tiles (``REUSE_TILES``), whose
    programs read wider column blocks of the table, and PyTorch's gather alone."""
    B, T, D = shape or ((64, 2048, 4096) if run.cuda else (2, 8, 16))
    flush = torch.ones((256 if run.cuda else 1) * 2**20 // 4, device=run.device)
    table = torch.from_numpy(sinusoidal_table_numpy(T, D)).float().to(run.device)
    result = {}
    for case, (V, how) in REUSE.items():
        V = V if run.cuda else min(V, 2 * B * T)
        per_seed = [_reuse_seed(run, B, T, D, V, how, seed, table, flush) for seed in range(3)]
        result[case] = {"ids": B * T, "per_seed_ms": per_seed}
    return {"ok": True, "shape": [B, T, D], "dtype": "bfloat16", **result}


def _reuse_seed(run: _Run, B: int, T: int, D: int, V: int, how: str, seed: int, table, flush) -> dict:
    g = torch.Generator(device="cpu").manual_seed(seed)
    w = torch.randn(V, D, generator=g).to(run.device, torch.bfloat16)
    ids = (torch.randperm(V, generator=g)[:B * T] if how == "permutation"
           else torch.randint(0, V, (B * T,), generator=g)).view(B, T).to(run.device)
    src = torch.empty(B, T, D, dtype=torch.bfloat16, device=run.device)
    dst = torch.empty_like(src)
    table16 = table.to(torch.bfloat16)                                   # eager's, in the output dtype
    fns = {"fused": lambda: fused.fused_embedding(ids, w, table, D ** 0.5, check=False, interpret=not run.cuda),
           "gather alone": lambda: torch.nn.functional.embedding(ids, w),
           "eager": lambda: torch.nn.functional.embedding(ids, w) * D ** 0.5 + table16,
           "copy": lambda: dst.copy_(src)}
    if run.cuda:                                  # the same kernel, wider tiles: wider column blocks
        for tiles, (bt, bd, warps) in REUSE_TILES.items():
            fns[tiles] = _launcher(ids, w, table, block_t=bt, block_d=bd, warps=warps)
    times, _ = bench._interleaved(fns, lambda fn: bench._time_once(fn, run.device, flush),
                                  20 if run.cuda else 2, 3 if run.cuda else 1, random.Random(seed))
    return {"distinct_rows": int(torch.unique(ids).numel()),
            **{name: round(bench.quantiles(t)[1], 5) for name, t in times.items()}}


def eager_parts(run: _Run, shape: tuple[int, int, int] | None = None) -> dict:
    """Where eager's time goes: each of its three kernels alone, and its add with the positional tile
    broadcast over the batch against a tile already expanded to (B, T, d) (the broadcast re-reads
    the tile once per sequence; whether those re-reads hit the L2 is what the byte count assumed)."""
    B, T, D = shape or ((64, 2048, 4096) if run.cuda else (2, 8, 16))
    flush = torch.ones((256 if run.cuda else 1) * 2**20 // 4, device=run.device)
    g = torch.Generator(device="cpu").manual_seed(0)
    w = torch.randn(32000, D, generator=g).to(run.device, torch.bfloat16)
    ids = torch.randint(0, 32000, (B, T), generator=g).to(run.device)
    pe = torch.from_numpy(sinusoidal_table_numpy(T, D)).to(run.device, torch.bfloat16)
    rows = torch.nn.functional.embedding(ids, w)
    scaled = rows * D ** 0.5
    expanded = pe.expand(B, T, D).contiguous()
    src, dst = torch.empty_like(rows), torch.empty_like(rows)
    fns = {"eager": lambda: torch.nn.functional.embedding(ids, w) * D ** 0.5 + pe,
           "gather": lambda: torch.nn.functional.embedding(ids, w),
           "scale": lambda: rows * D ** 0.5,
           "add, tile broadcast": lambda: scaled + pe,
           "add, tile expanded": lambda: scaled + expanded,
           "copy": lambda: dst.copy_(src)}
    times, _ = bench._interleaved(fns, lambda fn: bench._time_once(fn, run.device, flush),
                                  20 if run.cuda else 2, 3 if run.cuda else 1, random.Random(0))
    return {"ok": True, "shape": [B, T, D], "dtype": "bfloat16",
            "median_ms": {name: round(bench.quantiles(t)[1], 5) for name, t in times.items()}}


def sweep(run: _Run) -> dict:
    if not run.cuda:
        return {"ok": None, "skipped": "no CUDA GPU: nothing to time"}
    import triton.testing

    B, T, D, V = 64, 2048, 4096, 32000
    ids, w, tab = _inputs(B, T, D, V, torch.bfloat16, run.device)
    times = {}
    for bt in (4, 16, 32):
        for bd in (128, 256, 512):
            for warps in (2, 4, 8):
                for mp in (1024, 8192):
                    launch = _launcher(ids, w, tab, block_t=bt, block_d=bd, warps=warps, min_programs=mp)
                    times[f"block_t {bt}, block_d {bd}, warps {warps}, min_programs {mp}"] = round(
                        triton.testing.do_bench(launch, return_mode="median"), 4)
    default = times["block_t 4, block_d 128, warps 4, min_programs 1024"]
    best = sorted(times.items(), key=lambda kv: kv[1])
    from tokvec.bench.compiled import compile_kernel

    spills = {}
    for bt in (4, 16, 32):
        for bd in (128, 256, 512):
            for warps in (2, 4, 8):
                try:
                    spills[f"block_t {bt}, block_d {bd}, warps {warps}"] = compile_kernel(
                        D, block_t=bt, block_d=bd, num_warps=warps)["spill_stores"]
                except Exception as err:                  # ptxas missing or refusing: say so
                    spills[f"block_t {bt}, block_d {bd}, warps {warps}"] = repr(err)[:200]
    return {"ok": True, "default_ms": default, "best": best[:5], "worst": best[-3:],
            "default_over_best": round(default / best[0][1], 3), "all_ms": times, "spill_stores": spills,
            "by_config_ms": _launch_settings_by_config(run)}


#: Launch settings compared at every benchmark configuration: (block_t, block_d, num_warps).
LAUNCH_SETTINGS = {"16x256, 4 warps (the first default)": (16, 256, 4), "4x128, 4 warps (the default)": (4, 128, 4),
                   "4x256, 8 warps": (4, 256, 8)}


def _launch_settings_by_config(run: _Run) -> dict:
    """The candidate launch settings at every configuration of the benchmark, timed as the benchmark
    times (:func:`tokvec.bench.gpu._time_once`, interleaved rounds): is one default right for all?"""
    flush = torch.ones(256 * 2**20 // 4, device=run.device)
    result = {}
    for B, T, D, V, dtype in bench.CONFIGS["models"]:
        ids, w, tab = _inputs(B, T, D, V, getattr(torch, dtype), run.device)
        fns = {label: _launcher(ids, w, tab, block_t=bt, block_d=bd, warps=warps)
               for label, (bt, bd, warps) in LAUNCH_SETTINGS.items()}
        times, _ = bench._interleaved(fns, lambda fn: bench._time_once(fn, run.device, flush), 20, 3,
                                      random.Random(0))
        result[f"{B}x{T}x{D} {dtype}"] = {label: round(bench.quantiles(t)[1], 5) for label, t in times.items()}
    return result


def validate(out: str | Path, *, device: str | torch.device | None = None, budget: float = 280.0,
             sections: tuple[str, ...] | None = None, do_sweep: bool = False, command: str = "") -> Path:
    """Run the sections (all but ``sweep`` unless ``do_sweep``) and return the results file's path."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    device = bench._use(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    run = _Run(out, device, budget, command)
    chosen = sections or tuple(s for s in SECTIONS if s != "sweep" or do_sweep)
    unknown = set(chosen) - set(SECTIONS)
    if unknown:
        raise ValueError(f"unknown sections {sorted(unknown)}; choose from {SECTIONS}")
    configs = bench.CONFIGS["models" if run.cuda else "tiny"]
    steps = {"environment": lambda: environment(run), "tests": lambda: tests(run), "matrix": lambda: matrix(run),
             "guard": lambda: guard(run), "large": lambda: large(run), "bad_input": lambda: bad_input(run),
             "benchmark": lambda: benchmark(run, configs), "timing": lambda: timing(run),
             "decode": lambda: decode(run), "reuse": lambda: reuse(run), "eager_parts": lambda: eager_parts(run),
             "sweep": lambda: sweep(run)}
    if "environment" not in chosen:
        environment(run)                                  # every file says where it was measured
    for name in SECTIONS:
        if name in chosen:
            run.section(name, steps[name])
    failed = [n for n, v in run.data["sections"].items() if v.get("ok") is False]
    print(f"wrote {run.path} in {run.elapsed():.0f} s; "
          + (f"FAILED: {', '.join(failed)}" if failed else "no section failed"), flush=True)
    return run.path


def main(argv=None) -> Path:
    parser = argparse.ArgumentParser(prog="python -m tokvec.bench gpu-validate", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="the folder for gpu-<card>.json")
    parser.add_argument("--device", default=None, help="default: cuda if present, else cpu (a smoke test)")
    parser.add_argument("--budget", type=float, default=280.0,
                        help="seconds after which no further section starts (default 280)")
    parser.add_argument("--only", nargs="+", choices=SECTIONS, default=None, help="run only these sections")
    parser.add_argument("--sweep", action="store_true", help="also sweep the launch configuration (about 60 s)")
    args = parser.parse_args(sys.argv[2:] if argv is None else list(argv))
    command = "python -m tokvec.bench gpu-validate " + " ".join(sys.argv[2:] if argv is None else list(argv))
    return validate(args.out, device=args.device, budget=args.budget, sections=tuple(args.only) if args.only else None,
                    do_sweep=args.sweep, command=command)
