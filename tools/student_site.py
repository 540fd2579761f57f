"""Build the student site: the book without solutions (``make book STUDENT=1``).

Writes a configuration and a table of contents for it under ``_build/student_config/``,
made from the book's own ``_config.yml`` and ``_toc.yml`` with these changes, then
builds it strictly (warnings are errors, as ``make book``) into
``_build/student-site/_build/html``:

- ``course_student_site: true`` for ``_ext/course_site.py``, which turns on
  sphinx-exercise's ``hide_solutions`` and removes every gated solution with its code
  cells, offers the student notebook (``student/<stem>.ipynb``) instead of the chapter's
  notebook in the download menu and the Colab/Binder buttons, and deletes the chapters'
  ``.ipynb``/``.md`` copies from ``_sources``;
- the pages for instructors only (the instructor guide, the rubrics of the written
  answers) left out of the table of contents;
- nothing that leads to the course's repository, where the solutions are (the chapters'
  notebooks, ``grading/``, the guide): no repository, issues or edit button, no copy of
  the pages' sources (``html_copy_source: false``), and ``course_repository`` set so that
  ``_ext/course_site.py`` turns any link into it, to the guide, the rubrics, ``grading/``
  or a chapter's notebook on GitHub into plain text.

A class that wants Colab and Binder buttons on its student site keeps the handout in a
separate, student-only repository (``student/<stem>.ipynb`` in it, as in this one; for
Binder, ``binder/requirements.txt`` and ``runtime.txt`` without ``postBuild``, which installs
this repository's package: there the set-up cell installs ``tokvec`` at the release's tag) and
names it with ``--repository URL`` or ``STUDENT_REPOSITORY``
(``make book STUDENT=1 STUDENT_REPOSITORY=https://github.com/my-class/handout``; the branch or
tag the buttons open: ``--branch``/``STUDENT_BRANCH``, default ``main``): the repository
button, Colab and Binder then open that repository. Without it the student site links no
repository at all, and each chapter offers its student notebook as a download.

The instructor site (``make book``, ``_build/html``) is untouched: its own doctrees and
outputs stay where they are. Usage::

    python tools/student_site.py                # write the config, build, say where
    python tools/student_site.py --all          # rebuild every page
    python tools/student_site.py --config-only  # only write _build/student_config/
    python tools/student_site.py --repository https://github.com/my-class/handout
"""

import argparse
import copy
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
CONFIG_DIR = ROOT / "_build" / "student_config"
OUTPUT = ROOT / "_build" / "student-site"  # jupyter-book adds _build/html
SITE = OUTPUT / "_build" / "html"
INSTRUCTORS_ONLY = {"instructors", "rubrics"}  # pages left out of the student site
GITHUB_REPOSITORY = re.compile(r"https://github\.com/[\w.-]+/[\w.-]+")


def _without(entries: list[dict], left_out: set[str]) -> list[dict]:
    kept = []
    for entry in entries:
        name = str(entry.get("file", "")).removesuffix(".md").removesuffix(".ipynb")
        if name in left_out:
            continue
        entry = dict(entry)
        for key in ("sections", "chapters"):
            if key in entry:
                entry[key] = _without(entry[key], left_out)
        kept.append(entry)
    return kept


def student_toc(toc: dict, left_out: set[str] = INSTRUCTORS_ONLY) -> dict:
    """The table of contents without the instructors' pages (and no part left empty)."""
    toc = dict(toc)
    if "parts" in toc:
        parts = [
            {**part, "chapters": _without(part["chapters"], left_out)}
            for part in toc["parts"]
        ]
        toc["parts"] = [part for part in parts if part["chapters"]]
    for key in ("chapters", "sections"):
        if key in toc:
            toc[key] = _without(toc[key], left_out)
    return toc


def check_repository(url: str) -> str:
    """``url`` without a trailing slash, if it names a GitHub repository (Colab opens
    notebooks from GitHub only); else a SystemExit that says what is expected."""
    url = url.strip().rstrip("/").removesuffix(".git")
    if not GITHUB_REPOSITORY.fullmatch(url):
        raise SystemExit(
            f"--repository/STUDENT_REPOSITORY is {url!r}: give the student-only repository "
            "as https://github.com/OWNER/REPO (Colab and Binder open notebooks from GitHub), "
            "or leave it out for a student site without any repository link"
        )
    return url


def student_config(
    config: dict,
    config_dir: Path = CONFIG_DIR,
    repository: str | None = None,
    branch: str = "main",
) -> dict:
    """The book's configuration for the student site, to be read from ``config_dir``.

    ``repository``: a student-only repository (see the module's docstring) that takes the
    place of ``repository`` for the buttons; None: no repository button at all. Either way
    no issues or edit button (they open the course's repository) and no page sources."""
    config = copy.deepcopy(config)
    course = str((config.get("repository") or {}).get("url", "")).rstrip("/")
    html = config.setdefault("html", {})
    html["use_issues_button"] = False
    html["use_edit_page_button"] = False
    html["use_repository_button"] = repository is not None
    if repository is not None:
        config["repository"] = {
            "url": check_repository(repository),
            "path_to_book": "",
            "branch": branch,
        }
    sphinx = config.setdefault("sphinx", {})
    # local extensions are found relative to the configuration file
    sphinx["local_extensions"] = {
        name: os.path.relpath(ROOT / path, config_dir)
        for name, path in (sphinx.get("local_extensions") or {}).items()
    }
    sphinx.setdefault("config", {}).update(
        course_student_site=True,
        course_student_repository=config["repository"]["url"] if repository else "",
        course_repository=course,
        html_copy_source=False,
    )
    return config


def write_config(
    config_dir: Path = CONFIG_DIR, repository: str | None = None, branch: str = "main"
) -> tuple[Path, Path]:
    """Write the student site's ``_config.yml`` and ``_toc.yml`` into ``config_dir``."""
    config_dir.mkdir(parents=True, exist_ok=True)
    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    note = "# Generated by tools/student_site.py from the book's {}: do not edit.\n"
    paths = config_dir / "_config.yml", config_dir / "_toc.yml"
    for path, data in zip(
        paths, (student_config(config, config_dir, repository, branch), student_toc(toc))
    ):
        text = note.format(path.name) + yaml.safe_dump(data, sort_keys=False)
        path.write_text(text, encoding="utf-8")
    return paths


def build(
    rebuild_all: bool = False, repository: str | None = None, branch: str = "main"
) -> int:
    config, toc = write_config(CONFIG_DIR, repository, branch)
    # the site copies no page source (html_copy_source: false): what an older build left
    # in _sources, the chapters' notebooks among it, would otherwise be published
    shutil.rmtree(SITE / "_sources", ignore_errors=True)
    jb = Path(sys.executable).with_name("jupyter-book")
    command = [
        str(jb),
        "build",
        str(ROOT),
        "--config",
        str(config),
        "--toc",
        str(toc),
        "--path-output",
        str(OUTPUT),
        "--builder",
        "html",
        "-W",
        "-n",
        "--keep-going",
    ]
    if rebuild_all:
        command.append("--all")
    env = {**os.environ, "PATH": f"{jb.parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    code = subprocess.run(command, cwd=ROOT, env=env).returncode
    if code == 0:
        print(
            f"The student site is in {SITE.relative_to(ROOT)}. "
            f"Open: file://{SITE / 'index.html'}"
        )
    return code


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--all", action="store_true", help="rebuild every page")
    parser.add_argument(
        "--config-only",
        action="store_true",
        help="write _build/student_config/ and stop",
    )
    parser.add_argument(
        "--repository",
        default=os.environ.get("STUDENT_REPOSITORY") or None,
        metavar="URL",
        help="a student-only GitHub repository for the repository, Colab and Binder "
        "buttons (default: $STUDENT_REPOSITORY; none: no repository link at all)",
    )
    parser.add_argument(
        "--branch",
        default=os.environ.get("STUDENT_BRANCH") or "main",
        help="its branch (default: $STUDENT_BRANCH or main)",
    )
    args = parser.parse_args(argv)
    repository = check_repository(args.repository) if args.repository else None
    if args.config_only:
        for path in write_config(CONFIG_DIR, repository, args.branch):
            print(path.relative_to(ROOT))
        return 0
    return build(args.all, repository, args.branch)


if __name__ == "__main__":
    sys.exit(main())
