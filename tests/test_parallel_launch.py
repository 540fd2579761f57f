"""tokvec.parallel's launchers: run_group fails fast and says why; torchrun runs the checks.

Every failure mode of ``run_group`` must end well before its timeout with a message that names
the rank and what went wrong: an exception (with its traceback), a return value that cannot be
pickled, a rank that cannot join the group, a rank that dies without a word; and a hang must be
killed at the timeout.
"""

import ast
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch.distributed as dist

from tokvec import parallel
from tokvec.parallel import loopback_environment, main, run_group

ROOT = Path(__file__).resolve().parents[1]
TORCHRUN = os.path.join(os.path.dirname(sys.executable), "torchrun")


def values(rank, world_size, offset):
    return {"rank": rank, "world_size": world_size, "value": rank * 10 + offset}


def deadlock(rank, world_size):
    if rank == 0:
        dist.barrier()                        # waits for rank 1 ...
    else:
        time.sleep(120)                       # ... which never comes


def raises_while_the_other_waits(rank, world_size):
    if rank == 1:
        raise ValueError(f"boom on {rank}")
    dist.barrier()                            # rank 0 would wait for rank 1 forever


def unpicklable(rank, world_size):
    return threading.Lock() if rank == 1 else rank


def dies(rank, world_size):
    if rank == 1:
        os._exit(3)
    dist.barrier()


@pytest.mark.slow
def test_run_group_returns_the_values_by_rank():
    assert run_group(values, 3, 5, timeout=60) == [{"rank": r, "world_size": 3, "value": r * 10 + 5} for r in range(3)]


@pytest.mark.slow
def test_a_hanging_group_is_killed_and_reported():
    start = time.monotonic()
    with pytest.raises(TimeoutError, match="did not finish within 5"):
        run_group(deadlock, 2, timeout=5)
    assert time.monotonic() - start < 30


@pytest.mark.slow
def test_the_first_error_stops_the_group_with_its_rank_and_traceback():
    start = time.monotonic()
    with pytest.raises(RuntimeError) as info:
        run_group(raises_while_the_other_waits, 2, timeout=100)
    message = str(info.value)
    assert message.startswith("rank 1 of 2 raised:\nTraceback"), message
    assert "in raises_while_the_other_waits" in message and "ValueError: boom on 1" in message
    assert time.monotonic() - start < 40                      # not the 100 s timeout


@pytest.mark.slow
def test_a_value_that_cannot_be_pickled_is_reported_at_once():
    start = time.monotonic()
    with pytest.raises(RuntimeError, match=r"(?s)rank 1 of 2 raised:.*TypeError: the return value of unpicklable "
                                           r"on rank 1, a lock, cannot be pickled"):
        run_group(unpicklable, 2, timeout=100)
    assert time.monotonic() - start < 40


@pytest.mark.slow
def test_a_rank_that_dies_silently_is_reported_with_its_exit_code():
    start = time.monotonic()
    with pytest.raises(RuntimeError, match=r"rank\(s\) \[1\] of 2 died without reporting \(exit codes \[3\]"):
        run_group(dies, 2, timeout=100)
    assert time.monotonic() - start < 40


@pytest.mark.slow
def test_an_init_process_group_failure_is_reported_as_such(monkeypatch):
    monkeypatch.setenv("GLOO_SOCKET_IFNAME", "no-such-interface0")  # the children inherit it
    start = time.monotonic()
    with pytest.raises(RuntimeError, match=r"(?s)rank \d of 2 init_process_group failed:\nTraceback.*"
                                           r"no-such-interface0"):
        run_group(values, 2, 0, timeout=100)
    assert time.monotonic() - start < 40


@pytest.mark.slow
def test_torchrun_runs_the_checks():
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    result = subprocess.run([TORCHRUN, "--standalone", "--nproc-per-node", "2", "-m", "tokvec.parallel"],
                            capture_output=True, text=True, timeout=180, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.splitlines()
    assert lines[0].startswith("torchrun: 2 processes, gloo, init_method env://"), result.stdout
    assert "world 2, rank 0: rows [ 0, 25)" in result.stdout and "world 2, rank 1: rows [25, 50)" in result.stdout
    for line in lines[1:3]:
        assert float(line.split("largest error ")[1].split()[0]) < 1e-13, line
    assert "all-reduce sends 1024 bytes per rank, its sequence-parallel reduce-scatter 512" in result.stdout


FAILING_RANK = """
import time

import torch.distributed as dist

dist.init_process_group("gloo")
if dist.get_rank() == 1:
    raise ValueError("rank 1 fails")
time.sleep(120)                               # rank 0, outside any collective: nothing tells it
"""


@pytest.mark.slow
def test_torchrun_stops_the_other_ranks_when_one_fails(tmp_path):
    """Chapter 13, "A hang": on one machine torchrun's agent stops the others, whatever the backend."""
    script = tmp_path / "fails.py"
    script.write_text(FAILING_RANK)
    env = {**os.environ, "OMP_NUM_THREADS": "1", **loopback_environment()}
    start = time.monotonic()
    result = subprocess.run([TORCHRUN, "--standalone", "--nproc-per-node", "2", str(script)],
                            capture_output=True, text=True, timeout=180, env=env)
    elapsed = time.monotonic() - start
    assert result.returncode != 0 and "ValueError: rank 1 fails" in result.stderr, result.stderr[-3000:]
    assert "closing signal SIGTERM" in result.stderr, result.stderr[-3000:]      # the agent stopped rank 0
    assert elapsed < 40, elapsed                                                # not after its 120 s sleep


# --- in this process -------------------------------------------------------------------------------

def test_loopback_environment_names_the_loopback_interface():
    environment = loopback_environment()
    assert set(environment) <= {"GLOO_SOCKET_IFNAME"}
    expected = {"linux": "lo", "darwin": "lo0"}.get(sys.platform)
    if expected is not None:                                     # the names Linux and macOS use
        assert environment == {"GLOO_SOCKET_IFNAME": expected}


def test_the_chapters_torchrun_helper_keeps_gloo_on_loopback(monkeypatch):
    """Chapter 13's ``torchrun`` helper passes GLOO_SOCKET_IFNAME, as run_group and main do."""
    notebook = json.loads((ROOT / "chapters/vocab_parallel.ipynb").read_text(encoding="utf-8"))
    cell = next(c for c in notebook["cells"] if c.get("id") == "c13-013c")
    tree = ast.parse("".join(cell["source"]))
    helper = next(node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == "torchrun")
    calls = []

    def fake_run(command, **options):
        calls.append(options)
        return SimpleNamespace(returncode=0, stdout="", stderr="")

    namespace = {"os": os, "re": __import__("re"), "sys": sys, "subprocess": SimpleNamespace(run=fake_run),
                 "fit": str, "parallel": parallel}
    exec(compile(ast.Module([helper], type_ignores=[]), "chapter 13, cell c13-013c", "exec"), namespace)
    monkeypatch.delenv("GLOO_SOCKET_IFNAME", raising=False)
    monkeypatch.setenv("OMP_NUM_THREADS", "4")
    namespace["torchrun"]("script.py")
    environment = calls[0]["env"]
    assert environment["OMP_NUM_THREADS"] == "1"
    assert {name: environment.get(name) for name in loopback_environment()} == loopback_environment()
    assert "GLOO_SOCKET_IFNAME" in environment or not loopback_environment()



@pytest.mark.parametrize("call, error, match", [
    (lambda: run_group(values, 0), ValueError, "world_size"),
    (lambda: run_group(values, 2.0), TypeError, "world_size"),
    (lambda: run_group("values", 2), TypeError, "fn"),
    (lambda: run_group(values, 2, timeout=0), ValueError, "timeout"),
    (lambda: run_group(values, 2, timeout=float("nan")), ValueError, "timeout"),
])
def test_run_group_refuses_bad_arguments(call, error, match):
    with pytest.raises(error, match=match):
        call()


@pytest.mark.parametrize("environment, match", [
    ({"RANK": "0", "WORLD_SIZE": "zero"}, r"WORLD_SIZE must be an int >= 1, got 'zero'.*torchrun"),
    ({"RANK": "2", "WORLD_SIZE": "2"}, r"RANK must be an int 0..1, got '2'"),
    ({"RANK": "0", "WORLD_SIZE": "2", "LOCAL_RANK": "-1"}, r"LOCAL_RANK must be an int 0..1"),
    ({"RANK": "0", "WORLD_SIZE": "2", "LOCAL_RANK": "0"}, r"MASTER_ADDR is not set"),
])
def test_a_bad_launcher_environment_is_a_clear_error(monkeypatch, environment, match):
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(name, raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(ValueError, match=match):
        main([])
    assert not dist.is_initialized()


def test_main_refuses_a_bad_world_size_argument():
    with pytest.raises(SystemExit, match="usage: python -m tokvec.parallel"):
        main(["two"])


def test_run_group_refuses_what_a_fresh_interpreter_cannot_import():
    # a notebook cell's function, a lambda or a nested function would die in every child with an
    # AttributeError; run_group says why before it starts a single process
    def nested(rank, world_size):
        return rank

    for fn in (lambda rank, world_size: rank, nested):
        with pytest.raises(TypeError, match=r"cannot run .*: it is a lambda or is defined inside another "
                                            r"function\. run_group starts fresh interpreters"):
            run_group(fn, 2, timeout=5)
