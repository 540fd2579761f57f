"""Reading time of the course's core path, counted as a self-study reader reads it.

Run from the repository root (it needs PyYAML, which ``requirements.txt`` pins)::

    python -m tokvec.course.reading [--root .] [--max-min 210]

It prints one line per page of the core path, then a summary line, and exits 1 when the core path
takes more than ``--max-min`` minutes, 0 otherwise.

What a page costs (:func:`page_minutes`): 180 words a minute of visible prose, 4 s a line of
visible non-blank code, 2 s a line of printed output, 10 s a plot (an image a code cell prints).
Not counted, because a reader must open it to see it or because it is practice rather than reading:

* folded MyST directives -- ``exercise``, ``solution``, ``dropdown``, ``toggle``, the blocks from
  ``exercise-start``/``solution-start`` to their ``-end``, and any admonition with
  ``:class: dropdown`` -- and ``<details>`` blocks;
* code cells tagged ``hide-cell`` or ``remove-cell``; the source of ``hide-input``/``remove-input``
  cells; the outputs of ``hide-output``/``remove-output`` cells;
* in a notebook, everything from a level-1 or level-2 heading named Self-check, Exercises or Check
  your understanding to the next level-1 or level-2 heading (a heading that opens a Markdown cell).

A Markdown page (``.md``) counts its prose only, with folded material left out.

The core path (:func:`core_path`) is the files of the numbered parts of ``_toc.yml`` -- chapters
and their sections -- before the first numbered part whose caption names depth (:data:`DEPTH`:
further, deeper, performance, scale, appendix, reference, beyond, advanced, going on). Also
reported: whether such a part exists (depth is marked), the sub-pages nested under a chapter of a
numbered part (:func:`nested_pages`: Jupyter Book numbers them after the parent's sections), and,
per page, the distinct images its Markdown draws (Markdown images, ``{figure}``, ``{image}``,
``<img>``); an image a code cell prints is a plot, not a drawing.

This is the reading-time measure of the course's review tool, ported so that a clone of the course
can measure itself. It keeps to reading time, depth marking and nesting: the review's other targets
(drawn diagrams in total, an end-to-end chapter, the glossary's terms) are not checked here.
"""

from __future__ import annotations

import argparse
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "DEPTH",
    "PageTime",
    "core_path",
    "images",
    "main",
    "measure",
    "nested_pages",
    "page_minutes",
    "page_path",
    "strip_folded",
    "words",
]

WORDS_PER_MIN = 180
CODE_LINE_S, OUTPUT_LINE_S, PLOT_S = 4, 2, 10

#: a numbered part whose caption matches this holds depth: the core path ends before it
DEPTH = re.compile(r"further|deeper|performance|scale|appendi|reference|beyond|advanced|going on", re.I)
FOLD_DIRECTIVES = ("exercise", "solution", "dropdown", "toggle", "exercise-start", "solution-start")
SKIPPED_SECTIONS = re.compile(r"(self-check|exercises|check your understanding)", re.I)
IMG = re.compile(r"!\[[^\]]*\]\(([^)\s]+)[^)]*\)|[`:]{3,}\{(?:figure|image)\}\s*(\S+)|<img\s[^>]*src=[\"']([^\"']+)")


@dataclass(frozen=True)
class PageTime:
    """What one page costs a reader, and what it is made of."""

    minutes: float
    prose_words: int = 0
    code_lines: int = 0
    output_lines: int = 0
    plots: int = 0
    drawn: frozenset[str] = field(default_factory=frozenset)


def strip_folded(md: str) -> str:
    """``md`` without the directive blocks a reader must open (or that are exercises), nor ``<details>``."""
    md = re.sub(r"<details>.*?</details>", " ", md, flags=re.S | re.I)
    out: list[str] = []
    lines = md.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        m = re.match(r"^\s*(`{3,}|:{3,})\{([\w-]+)\}", line)
        if m:
            fence, name = m.group(1), m.group(2)
            folded = name in FOLD_DIRECTIVES
            j = i + 1
            while j < len(lines) and re.match(r"^\s*:\w[\w-]*:", lines[j]):  # the directive's options
                if "dropdown" in lines[j] and ":class:" in lines[j]:
                    folded = True
                j += 1
            if name in ("exercise-start", "solution-start"):
                end = "{" + name.replace("-start", "-end") + "}"
                k = i + 1
                while k < len(lines) and end not in lines[k]:
                    k += 1
                i = k + 2  # past the -end directive's opening and closing lines
                continue
            if folded:
                mark, n = re.escape(fence[0]), len(fence)
                opens = re.compile(rf"^\s*{mark}{{{n},}}\{{")  # a nested directive with as long a fence
                closes = re.compile(rf"^\s*{mark}{{{n}}}\s*$")  # a closing fence of exactly its length
                k, depth = i + 1, 1
                while k < len(lines):
                    if opens.match(lines[k]):
                        depth += 1
                    elif closes.match(lines[k]):
                        depth -= 1
                        if depth == 0:
                            break
                    k += 1
                i = k + 1
                continue
        out.append(line)
        i += 1
    return "\n".join(out)


def images(md: str) -> set[str]:
    """The distinct images a Markdown text draws (Markdown images, ``{figure}``, ``{image}``, ``<img>``)."""
    return {next(g for g in m.groups() if g) for m in IMG.finditer(md)}


def words(md: str) -> int:
    """Words of prose: a display formula is one word, an inline one too, fences and options none."""
    md = re.sub(r"\$\$.*?\$\$", " formula ", md, flags=re.S)
    md = re.sub(r"\$[^$\n]+\$", " x ", md)
    md = re.sub(r"\{[\w-]+\}`([^`]*)`", r"\1", md)
    md = re.sub(r"^\s*(`{3,}|:{3,}).*$", " ", md, flags=re.M)
    md = re.sub(r"^\s*:\w[\w-]*:.*$", " ", md, flags=re.M)
    return len(re.findall(r"[A-Za-z0-9][\w'.,%-]*", md))


def _minutes(prose: int, code: int, out: int, plots: int) -> float:
    return prose / WORDS_PER_MIN + code * CODE_LINE_S / 60 + out * OUTPUT_LINE_S / 60 + plots * PLOT_S / 60


def _lines(text: str | list[str]) -> int:
    return len("".join(text).splitlines())


def _notebook_time(nb: dict) -> PageTime:
    prose = code = out = plots = 0
    drawn: set[str] = set()
    skip = False
    for cell in nb["cells"]:
        src = "".join(cell["source"])
        tags = set(cell.get("metadata", {}).get("tags", []))
        if cell["cell_type"] == "markdown":
            heading = re.match(r"^\s*(#{1,3})\s+(.*)", src)
            if heading and len(heading.group(1)) <= 2:
                skip = bool(SKIPPED_SECTIONS.match(heading.group(2).strip()))
            if skip:
                continue
            visible = strip_folded(src)
            prose += words(visible)
            drawn |= images(visible)
        elif cell["cell_type"] == "code":
            if skip or tags & {"remove-cell", "hide-cell"}:
                continue
            if not tags & {"hide-input", "remove-input"}:
                code += len([line for line in src.splitlines() if line.strip()])
            if tags & {"remove-output", "hide-output"}:
                continue
            for o in cell.get("outputs", []):
                if o.get("output_type") == "stream":
                    out += _lines(o.get("text", ""))
                elif o.get("output_type") in ("execute_result", "display_data"):
                    data = o.get("data", {})
                    if any(k.startswith("image/") for k in data):
                        plots += 1
                    elif "text/plain" in data:
                        out += _lines(data["text/plain"])
    return PageTime(_minutes(prose, code, out, plots), prose, code, out, plots, frozenset(drawn))


def page_minutes(path: str | Path) -> PageTime:
    """What the page at ``path`` (a ``.ipynb`` notebook or a ``.md`` page) costs a reader."""
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".ipynb":
        return _notebook_time(json.loads(text))
    visible = strip_folded(text)
    prose = words(visible)
    return PageTime(_minutes(prose, 0, 0, 0), prose, drawn=frozenset(images(visible)))


def _toc(root: Path) -> dict:
    import yaml  # PyYAML: in requirements.txt, not a dependency of the package

    return yaml.safe_load((Path(root) / "_toc.yml").read_text(encoding="utf-8")) or {}


def core_path(root: str | Path) -> tuple[list[str], bool]:
    """The files of the core path, as ``_toc.yml`` names them, and whether a part marks where depth begins."""
    files: list[str] = []

    def walk(entries: list[dict] | None) -> None:
        for entry in entries or []:
            if "file" in entry:
                files.append(entry["file"])
            walk(entry.get("sections"))

    for part in _toc(Path(root)).get("parts", []):
        if not part.get("numbered"):
            continue
        if DEPTH.search(part.get("caption", "")):
            return files, True
        walk(part.get("chapters"))
    return files, False


def nested_pages(root: str | Path) -> list[str]:
    """The sub-pages nested under a chapter of a numbered part (Jupyter Book numbers them x.y.z)."""
    return [
        section["file"]
        for part in _toc(Path(root)).get("parts", [])
        if part.get("numbered")
        for chapter in part.get("chapters", []) or []
        for section in chapter.get("sections", []) or []
        if "file" in section
    ]


def page_path(root: str | Path, file: str) -> Path | None:
    """The page a ``_toc.yml`` entry names: its notebook, else its Markdown page, else ``None``."""
    root = Path(root)
    if Path(file).suffix in (".ipynb", ".md"):
        return root / file if (root / file).exists() else None
    for suffix in (".ipynb", ".md"):
        if (root / (file + suffix)).exists():
            return root / (file + suffix)
    return None


def measure(root: str | Path = ".") -> dict:
    """The reading time of the core path of the course at ``root``.

    Returns ``pages`` (one row per page found: ``file``, ``path``, and the fields of :class:`PageTime`),
    ``missing`` (the core files with no page), ``total_minutes`` (the sum over ``pages``),
    ``depth_marked`` and ``nested`` (see :func:`core_path` and :func:`nested_pages`).
    """
    root = Path(root)
    files, depth_marked = core_path(root)
    pages, missing = [], []
    for file in files:
        path = page_path(root, file)
        if path is None:
            missing.append(file)
            continue
        time = page_minutes(path)
        pages.append({"file": file, "path": path, **vars(time)})
    return {
        "pages": pages,
        "missing": missing,
        "total_minutes": sum(page["minutes"] for page in pages),
        "depth_marked": depth_marked,
        "nested": nested_pages(root),
    }


#: Reading paths through the book (the intro quotes their minutes): a name -> the pages it reads,
#: as ``_toc.yml`` names them. ``"core"`` stands for the whole core path.
PATHS = {
    "core path": ["core"],
    "tokenizer engineer": ["chapters/01_tokenization", "chapters/02_vocabulary", "chapters/byte_level_bpe",
                           "chapters/appendix_tokenizers_production"],
    "model builder": ["core", "chapters/training_primer", "chapters/positions_in_attention",
                      "chapters/position_experiment"],
    "systems": ["chapters/08_loops_to_tensors", "chapters/09_transformer_embedding", "chapters/vectorization",
                "chapters/making_it_fast", "chapters/vocab_parallel", "chapters/appendix_numerics",
                "chapters/appendix_autograd", "chapters/appendix_allocator"],
}


def path_minutes(root: str | Path = ".", paths: dict[str, list[str]] | None = None) -> dict[str, float]:
    """Minutes of each reading path (:data:`PATHS`), each page counted once, by :func:`page_minutes`."""
    root = Path(root)
    core, _ = core_path(root)
    out = {}
    for name, files in (paths or PATHS).items():
        pages = list(dict.fromkeys(f for entry in files for f in (core if entry == "core" else [entry])))
        missing = [f for f in pages if page_path(root, f) is None]
        if missing:
            raise FileNotFoundError(f"reading path {name!r}: no page for {missing}")
        out[name] = sum(page_minutes(page_path(root, f)).minutes for f in pages)
    return out


def main(argv: list[str] | None = None) -> int:
    """Print the core path's reading time; 1 when it is over ``--max-min`` minutes, else 0."""
    parser = argparse.ArgumentParser(prog="python -m tokvec.course.reading",
                                     description="Reading time of the course's core path.")
    parser.add_argument("--root", type=Path, default=Path("."), help="the book's root, where _toc.yml is")
    parser.add_argument("--max-min", type=float, default=210.0, help="the most minutes the core path may take")
    parser.add_argument("--paths", action="store_true", help="also print the reading paths' minutes (PATHS)")
    args = parser.parse_args(argv)
    result = measure(args.root)
    for p in result["pages"]:
        if p["path"].suffix == ".ipynb":
            print(f"{p['file']:45s} {p['minutes']:6.1f} min  prose {p['prose_words']:5d}  code {p['code_lines']:4d}  "
                  f"output {p['output_lines']:4d}  plots {p['plots']:2d}  drawn {len(p['drawn'])}")
        else:
            print(f"{p['file']:45s} {p['minutes']:6.1f} min  prose {p['prose_words']:5d} words (markdown page), "
                  f"drawn {len(p['drawn'])}")
    total, over = result["total_minutes"], result["total_minutes"] > args.max_min
    notes = []
    if result["missing"]:
        notes.append(f"no page for {result['missing']}")
    if not result["depth_marked"]:
        notes.append("no part of _toc.yml marks where depth begins (core path = every numbered part)")
    if result["nested"]:
        notes.append(f"sub-pages nested under a chapter: {result['nested']}")
    print(("FAILED: " if over else "")
          + f"core path {len(result['pages'])} pages, {total:.0f} min (limit {args.max_min:.0f})"
          + "".join(f"; {note}" for note in notes))
    if args.paths:
        for name, minutes in path_minutes(args.root).items():
            print(f"reading path {name:20s} {minutes:6.0f} min")
    return 1 if over else 0


if __name__ == "__main__":
    raise SystemExit(main())
