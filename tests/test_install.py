"""The install paths a new reader takes: the pins resolve from the package index alone.

``requirements.txt`` is resolved with ``pip --isolated install --dry-run`` (no config file, no
local wheels, only https://pypi.org) in a fresh virtual environment for every Python that
``pyproject.toml`` allows. The three resolutions run at the same time (they mostly wait for the
index), so the module costs about one resolution, 1-2 minutes. They reach the package index, as
``make test``'s own set-up does; ``make check`` leaves them out (marker ``index``).

``requirements-cpu.txt`` (the CPU-only install) names PyTorch's CPU index, which the development
machines cannot reach; there its resolution uses the CPU wheel of torch 2.13.0 on local disk
(``TOKVEC_CPU_WHEELS``, default ``/opt/wheels``), the same file PyTorch publishes.
"""

import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from conftest import ROOT

pytestmark = pytest.mark.index

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def allowed_pythons() -> list[str]:
    """The minor versions ``requires-python`` admits, e.g. ['3.11', '3.12', '3.13']."""
    spec = PYPROJECT["project"]["requires-python"]
    low = re.search(r">=\s*3\.(\d+)", spec)
    high = re.search(r"<\s*3\.(\d+)", spec)
    assert low and high, f"requires-python must give a range like '>=3.11,<3.14', got {spec!r}"
    return [f"3.{m}" for m in range(int(low.group(1)), int(high.group(1)))]


def find_python(version: str) -> str | None:
    """An interpreter for ``version``: on PATH, else one that pyenv installed."""
    for candidate in [shutil.which(f"python{version}")] + sorted(
            glob.glob(os.path.expanduser(f"~/.pyenv/versions/{version}.*/bin/python{version}"))):
        if candidate and subprocess.run([candidate, "-c", "pass"], capture_output=True).returncode == 0:
            return candidate
    return None


def read_pins(path: Path) -> dict[str, str]:
    """``{name: version}`` of the ``name==version`` lines of a requirements file."""
    pins = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        m = re.match(r"^([A-Za-z0-9_.\-]+)==([^\s;]+)", line)
        if m:
            pins[m.group(1).lower().replace("_", "-")] = m.group(2)
    return pins


def _start_resolution(python: str, tmp: Path, requirements: str, extra: list[str]) -> subprocess.Popen:
    venv = tmp / "venv"
    subprocess.run([python, "-m", "venv", str(venv)], check=True)
    report = tmp / "report.json"
    cmd = [str(venv / "bin" / "python"), "-m", "pip", "--isolated", "install", "--dry-run",
           "--ignore-installed", "--quiet", "--report", str(report), *extra, "-r", requirements]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    return subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


CPU_WHEELS = Path(os.environ.get("TOKVEC_CPU_WHEELS", "/opt/wheels"))


@pytest.fixture(scope="module")
def resolutions(tmp_path_factory):
    """Start one dry-run resolution of requirements.txt per allowed Python, and one of
    requirements-cpu.txt (key ``"cpu"``, None without a local CPU wheel), all at once."""
    started = {}
    for version in allowed_pythons():
        python = find_python(version)
        if python is None:
            started[version] = None
            continue
        tmp = tmp_path_factory.mktemp(f"py{version}")
        started[version] = (tmp, _start_resolution(python, tmp, "requirements.txt", []))
    started["cpu"] = None
    if sorted(CPU_WHEELS.glob("torch-2.13.0+cpu-*.whl")):
        # the same file as PyTorch's CPU index, offered from disk in place of that index
        tmp = tmp_path_factory.mktemp("cpu")
        lines = [line for line in (ROOT / "requirements-cpu.txt").read_text(encoding="utf-8").splitlines()
                 if not line.startswith("--extra-index-url")]
        reqs = tmp / "requirements-cpu-local.txt"
        reqs.write_text("\n".join(lines) + "\n", encoding="utf-8")
        python = find_python(f"{sys.version_info.major}.{sys.version_info.minor}")
        started["cpu"] = (tmp, _start_resolution(python, tmp, str(reqs), ["--find-links", str(CPU_WHEELS)]))
    return started


def _finish(tmp: Path, proc: subprocess.Popen) -> dict[str, str]:
    out, _ = proc.communicate(timeout=900)
    assert proc.returncode == 0, f"the pins do not resolve:\n{out[-4000:]}"
    report = json.loads((tmp / "report.json").read_text(encoding="utf-8"))
    return {i["metadata"]["name"].lower().replace("_", "-"): i["metadata"]["version"] for i in report["install"]}


def test_requires_python_names_the_tested_range():
    assert allowed_pythons() == ["3.11", "3.12", "3.13"]


@pytest.mark.parametrize("version", allowed_pythons())
def test_pins_resolve_from_the_index_alone(resolutions, version):
    if resolutions[version] is None:
        pytest.skip(f"no Python {version} on this machine (install it, e.g. pyenv install {version}): "
                    f"the pins were not resolved for it")
    installed = _finish(*resolutions[version])
    pins = read_pins(ROOT / "requirements.txt")
    assert installed["torch"] == "2.13.0"
    assert installed["triton"] == pins["triton"]            # the one torch itself requires
    # every pin is taken as pinned: nothing else is pulled in or moved
    assert {name: installed.get(name) for name in pins} == pins
    assert installed["tokvec"] == PYPROJECT["project"]["version"]


def test_cpu_requirements_are_the_pins_with_torchs_cpu_build():
    # the same pins, Triton included (chapter 10.1 runs the kernel in Triton's interpreter, which
    # needs no GPU); only torch comes from PyTorch's CPU index instead of its CUDA wheels
    full, cpu = read_pins(ROOT / "requirements.txt"), read_pins(ROOT / "requirements-cpu.txt")
    text = (ROOT / "requirements-cpu.txt").read_text(encoding="utf-8")
    assert "--extra-index-url https://download.pytorch.org/whl/cpu" in text.splitlines()
    assert cpu == full
    assert "-e ." in text.splitlines()


def test_cpu_requirements_resolve_to_the_cpu_build(resolutions):
    if resolutions["cpu"] is None:
        pytest.skip(f"no CPU wheel of torch 2.13.0 in {CPU_WHEELS} and PyTorch's index is not reachable "
                    f"here: requirements-cpu.txt was not resolved")
    installed = _finish(*resolutions["cpu"])
    assert installed["torch"] == "2.13.0+cpu"
    assert not [name for name in installed if name.startswith("nvidia")]      # no CUDA wheels
    assert installed["triton"] == read_pins(ROOT / "requirements.txt")["triton"]  # the interpreter's


# --- Binder -----------------------------------------------------------------------------------

def test_binder_installs_the_pinned_versions_cpu_only_and_the_package():
    binder = ROOT / "binder"
    text = (binder / "requirements.txt").read_text(encoding="utf-8")
    assert "--extra-index-url https://download.pytorch.org/whl/cpu" in text.splitlines()
    pins, full = read_pins(binder / "requirements.txt"), read_pins(ROOT / "requirements.txt")
    assert {"torch", "numpy", "matplotlib", "tokenizers"} <= set(pins)
    assert {name: full[name] for name in pins} == pins
    assert (binder / "runtime.txt").read_text().strip() == "python-3.11"
    post = binder / "postBuild"
    assert os.access(post, os.X_OK) and "pip install" in post.read_text() and " ." in post.read_text()


# --- the set-up cell of every chapter ---------------------------------------------------------

def _install_cell_tool():
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import install_cell
    finally:
        sys.path.pop(0)
    return install_cell


def test_every_chapter_starts_with_the_generated_set_up_cell():
    tool = _install_cell_tool()
    url = tool.repository_url((ROOT / "_config.yml").read_text(encoding="utf-8"))
    assert url.startswith("https://github.com/")
    for path in sorted((ROOT / "chapters").glob("*.ipynb")):
        nb = json.loads(path.read_text(encoding="utf-8"))
        first = next(c for c in nb["cells"] if c["cell_type"] == "code")
        expected = tool.cell_source(url, tool.needs_torch(nb), tool.needs_compare(nb)).rstrip("\n")
        assert "".join(first["source"]) == expected, f"{path.name}: run python tools/install_cell.py"
        assert first["outputs"] == []              # it does nothing where tokvec is installed
        assert first["metadata"].get("tags") == ["hide-input"], f"{path.name}: folded on the site"
    assert tool.main(["--check"]) == 0


def test_the_set_up_cell_installs_this_release():
    """``git+<url>@v<version>``, the version of pyproject.toml: a notebook installs the tokvec
    it came with, not the tip of main; ``--ref`` pins another tag or a commit."""
    tool = _install_cell_tool()
    version = PYPROJECT["project"]["version"]
    assert int(version.split(".")[0]) >= 1, f"{version}: the first release a class can pin is 1.0.0"
    assert tool.release_ref() == f"v{version}"
    url = "https://github.com/someone/fork"
    assert f'REPOSITORY = "git+{url}@v{version}"\n' in tool.cell_source(url, False)
    assert f'REPOSITORY = "git+{url}@70acdda"\n' in tool.cell_source(url, True, "gpt2", ref="70acdda")
    for bad in ("v1.0.0 --upgrade", "main#egg=x", "../v1", ""):
        with pytest.raises(SystemExit, match=rf"--ref.*{re.escape(repr(bad))}"):
            tool.cell_source(url, False, ref=bad)


def test_ref_rewrites_the_cells_and_check_names_it(tmp_path, monkeypatch, capsys):
    """``--ref REF`` writes REF into every cell; the plain ``--check`` then reports them out
    of date (they do not pin this release) and ``--check --ref REF`` accepts them."""
    tool = _install_cell_tool()
    chapter = sorted((ROOT / "chapters").glob("*.ipynb"))[0]
    shutil.copy(chapter, tmp_path / chapter.name)
    monkeypatch.setattr(tool, "CHAPTERS", tmp_path)
    assert tool.main(["--ref", "term-2027"]) == 0
    assert "@term-2027" in capsys.readouterr().out
    nb = json.loads((tmp_path / chapter.name).read_text(encoding="utf-8"))
    first = next(c for c in nb["cells"] if c["cell_type"] == "code")
    assert '@term-2027"' in "".join(first["source"])
    assert tool.main(["--check", "--ref", "term-2027"]) == 0
    assert tool.main(["--check"]) == 1
    assert f"out of date (run python tools/install_cell.py): {chapter.name}" in capsys.readouterr().err
    assert tool.main([]) == 0 and tool.main(["--check"]) == 0          # back to the release's tag
    assert tool.main(["--check", "--ref", "term-2027"]) == 1
    assert "run python tools/install_cell.py --ref term-2027" in capsys.readouterr().err


def test_the_changelog_has_this_release_and_the_tag_scheme():
    """CHANGELOG.md (Keep a Changelog): a dated section for the version of pyproject.toml, a
    link to its tag v<version>, and what patch, minor and major releases mean for a class."""
    version = PYPROJECT["project"]["version"]
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert re.search(rf"^## \[{re.escape(version)}\] - \d{{4}}-\d{{2}}-\d{{2}}$", text, re.M), (
        f"CHANGELOG.md has no '## [{version}] - YYYY-MM-DD' section: add one for this release")
    assert re.search(rf"^\[{re.escape(version)}\]: \S+/releases/tag/v{re.escape(version)}$", text, re.M)
    assert "## [Unreleased]" in text and "`v<version>`" in text
    for kind in ("**Patch**", "**Minor**", "**Major**"):
        assert kind in text, kind
    repository = _install_cell_tool().repository_url((ROOT / "_config.yml").read_text(encoding="utf-8"))
    assert f"{repository}/releases/tag/v{version}" in text


def test_set_repository_url_changes_only_that_line():
    tool = _install_cell_tool()
    config = (ROOT / "_config.yml").read_text(encoding="utf-8")
    changed = tool.set_repository_url(config, "https://github.com/someone/fork")
    assert tool.repository_url(changed) == "https://github.com/someone/fork"
    assert [a for a, b in zip(config.splitlines(), changed.splitlines()) if a != b] == [
        f"  url: {tool.repository_url(config)}"]
    with pytest.raises(SystemExit, match="OWNER/REPO"):
        tool.set_repository_url(config, "not a url")


# --- a chapter opened alone, as on Colab or after a download ----------------------------------

def _package_copy(target: Path) -> Path:
    """What a clone of the repository holds for pip: pyproject, README, licences and src/."""
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, target / name)
    shutil.copytree(ROOT / "src", target / "src",
                    ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    return target


def _venv(path: Path, *requirements: str) -> Path:
    """A fresh virtual environment with only ``requirements``, at the versions of requirements.txt."""
    subprocess.run([sys.executable, "-m", "venv", str(path)], check=True)
    pins = path / "constraints.txt"
    pins.write_text("".join(f"{n}=={v}\n" for n, v in read_pins(ROOT / "requirements.txt").items()),
                    encoding="utf-8")
    subprocess.run([str(path / "bin" / "python"), "-m", "pip", "install", "--quiet", "-c", str(pins),
                    *requirements], check=True)
    return path


def _run_alone(venv: Path, chapter: str, workdir: Path, package: Path) -> subprocess.CompletedProcess:
    """Copy one chapter into an empty folder and execute it there, top to bottom."""
    folder = workdir / chapter
    folder.mkdir()
    shutil.copy(ROOT / "chapters" / f"{chapter}.ipynb", folder)
    env = {**os.environ, "TOKVEC_SOURCE": str(package)}
    env.pop("PYTHONPATH", None)
    return subprocess.run([str(venv / "bin" / "jupyter"), "nbconvert", "--to", "notebook", "--execute",
                           "--output", "executed.ipynb", "--ExecutePreprocessor.timeout=900",
                           "--ExecutePreprocessor.kernel_name=python3", f"{chapter}.ipynb"],
                          cwd=folder, env=env, capture_output=True, text=True)


@pytest.fixture(scope="module")
def jupyter_only(tmp_path_factory):
    """A fresh environment with only Jupyter's notebook runner, and a copy of the package."""
    tmp = tmp_path_factory.mktemp("alone")
    package = _package_copy(tmp_path_factory.mktemp("package"))
    return _venv(tmp / "venv", "nbconvert", "ipykernel"), tmp, package


def _installed_tokvec(venv: Path) -> str:
    code = "import tokvec, importlib.metadata as m; print(tokvec.__file__, m.version('tokvec'))"
    return subprocess.run([str(venv / "bin" / "python"), "-c", code], capture_output=True, text=True).stdout


@pytest.mark.slow
def test_a_text_chapter_alone_installs_the_package_and_runs(jupyter_only):
    venv, tmp, package = jupyter_only
    assert _installed_tokvec(venv) == ""                       # nothing there before the chapter
    result = _run_alone(venv, "01_tokenization", tmp, package)
    assert result.returncode == 0, result.stderr[-4000:]
    where = _installed_tokvec(venv)
    assert "site-packages" in where and str(ROOT) not in where  # installed from TOKVEC_SOURCE
    executed = json.loads((tmp / "01_tokenization" / "executed.ipynb").read_text(encoding="utf-8"))
    errors = [o for c in executed["cells"] if c["cell_type"] == "code" for o in c["outputs"]
              if o["output_type"] == "error"]
    assert errors == []


@pytest.mark.slow
def test_a_torch_chapter_without_torch_says_so_in_one_line(jupyter_only):
    venv, tmp, package = jupyter_only
    result = _run_alone(venv, "09_transformer_embedding", tmp, package)
    assert result.returncode != 0
    plain = re.sub(r"\x1b\[[0-9;]*m", "", result.stderr)          # without the terminal colours
    assert "ModuleNotFoundError: This chapter needs PyTorch: pip install torch" in plain


@pytest.mark.slow
def test_a_torch_chapter_alone_runs_where_torch_is_installed(tmp_path):
    """As on Colab: PyTorch is there, the course's package is not."""
    venv = _venv(tmp_path / "venv", "nbconvert", "ipykernel", "torch==2.13.0")
    package = _package_copy(tmp_path / "package" if (tmp_path / "package").mkdir() is None else None)
    result = _run_alone(venv, "09_transformer_embedding", tmp_path, package)
    assert result.returncode == 0, result.stderr[-4000:]
    assert "site-packages" in _installed_tokvec(venv)
