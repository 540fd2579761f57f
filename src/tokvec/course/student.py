"""Student notebooks, generated from the chapters: solutions out, TODO cells in, plain Jupyter Markdown.

Used by ``make student`` (see the instructor guide, ``instructors.md``)::

    python -m tokvec.course.student chapters _build/student [--site-url URL]

The filled chapters stay the single source. For each notebook this writes a copy that any
Jupyter (JupyterLab, classic Notebook, VS Code, Colab) shows as it is meant, without the book's
MyST extensions:

* every folded solution (from ```` ```{solution-start} label```` to ```` ```{solution-end}````,
  markdown and code cells alike) is removed. In its place come the TODO cells of the exercise:
  a code cell when the solution had code, and a markdown cell "*Your answer:*" when it had
  words (both when it had both). The code cell keeps every import the removed solution made
  (that the notebook had not made already) and prints "not done yet" instead of raising, so
  "Run all" finishes in a fresh kernel with no exercise done;
* the MyST of every markdown cell becomes plain Markdown: self-check ```` ```{dropdown}````
  answers fold into ``<details>``; exercises get a bold heading, "Exercise 5.2 (label)",
  numbered as on the site; admonitions become block quotes; ``{term}``, ``{doc}``, ``{ref}``
  and ``{numref}`` become their text (links into the site with ``--site-url``), ``{cite}``
  becomes "Vaswani et al. (2017)" from ``references.bib``; ``$...$`` math is left for Jupyter;
* every drawn figure of the chapters, ``![alt](figures/<name>.svg)`` in Markdown, becomes
  ``![alt](attachment:<name>.png)`` with the PNG that ``make figures`` writes beside the SVG
  stored in the cell (nbformat's ``attachments``), so the figures show offline, in a downloaded
  notebook and in Colab;
* all outputs and execution counts are cleared, ready for a live session.

``tests/test_student.py`` checks that no MyST is left, that every answer is folded, that every
exercise statement is kept, and runs every generated notebook, unanswered, without an error.
"""

from __future__ import annotations

import argparse
import ast
import base64
import copy
import re
import sys
import unicodedata
from pathlib import Path

try:
    import nbformat
except ImportError:                       # pragma: no cover - Jupyter installs it
    raise ImportError("tokvec.course.student needs nbformat, which comes with Jupyter: "
                      "pip install nbformat (or pip install 'tokvec[student]')") from None

__all__ = ["NOT_DONE", "TODO_TAG", "Context", "attach_figures", "main", "myst_to_markdown", "read_bib",
           "student_notebook"]

TODO_TAG = "todo"
#: What an unanswered TODO code cell prints when it runs.
NOT_DONE = "not done yet"
_START = re.compile(r"```\{solution-start\}\s*(?P<label>\S+)[^\n]*\n(?::[^\n]*\n)*```[ \t]*\n?")
_END = re.compile(r"```\{solution-end\}[^\n]*\n```[ \t]*\n?")
# A directive fence: ```{name} argument, then options (:key: value), body, closing fence.
_FENCE = re.compile(r"^(?P<fence>`{3,}|:{3,})\{(?P<name>[a-zA-Z][\w:-]*)\}[ \t]*(?P<arg>[^\n]*)\n", re.M)
_OPTION = re.compile(r"^:(?P<key>[\w-]+):[ \t]*(?P<value>[^\n]*)\n?")
# A role: {name}`body`; not \p{L}` inside a regular expression in code.
ROLE = re.compile(r"(?<![\w\\])\{(?P<name>[a-z][\w:.-]*)\}`(?P<body>[^`]+)`")
_ROLE_OR_CODE = re.compile(ROLE.pattern + r"|^(`{3,})(?!\{)[^\n]*\n.*?^\3[ \t]*$|(`+).+?(?<!`)\4(?!`)", re.M | re.S)
_TARGET = re.compile(r"^\((?P<label>[\w.:-]+)\)=[ \t]*\n", re.M)
_EXPLICIT = re.compile(r"^(?P<text>.*?)\s*<(?P<target>[^<>]+)>$", re.S)
# A drawn figure of the chapters (tokvec.course.figures), as a Markdown image.
_FIGURE = re.compile(r"!\[(?P<alt>[^\]]*)\]\((?:\./)?figures/(?P<name>[\w.-]+)\.svg\)")


# --- references.bib -----------------------------------------------------------------------

_ACCENTS = {'"': "\u0308", "'": "\u0301", "`": "\u0300", "^": "\u0302", "~": "\u0303", "c": "\u0327",
            "v": "\u030c", "=": "\u0304", "H": "\u030b", ".": "\u0307", "u": "\u0306", "r": "\u030a"}
_LETTERS = {"L": "\u0141", "l": "\u0142", "o": "\u00f8", "O": "\u00d8", "ss": "\u00df", "ae": "\u00e6",
            "AE": "\u00c6", "aa": "\u00e5", "AA": "\u00c5", "i": "i", "&": "&", "#": "#", "_": "_", "%": "%"}


def _latex_text(text: str) -> str:
    """Plain text of a BibTeX value: accents applied, braces and commands dropped."""

    def accent(m):
        return unicodedata.normalize("NFC", m.group("letter").lstrip("\\") + _ACCENTS[m.group("cmd")])

    text = re.sub(r"\\(?P<cmd>[\"'`^~=.]|[cvHur](?=[{\s]))\s*\{?(?P<letter>\\?[A-Za-z])\}?", accent, text)
    text = re.sub(r"\\(?P<cmd>[A-Za-z]+|[&#_%])", lambda m: _LETTERS.get(m.group("cmd"), ""), text)
    return " ".join(text.replace("{", "").replace("}", "").split())


def _split_top(text: str, sep: str) -> list[str]:
    """Split ``text`` on ``sep`` where it is outside braces."""
    parts, depth, start, i = [], 0, 0, 0
    while i < len(text):
        ch = text[i]
        depth += (ch == "{") - (ch == "}")
        if depth == 0 and text.startswith(sep, i):
            parts.append(text[start:i])
            start = i = i + len(sep)
            continue
        i += 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def read_bib(text: str) -> dict[str, str]:
    """Map each BibTeX key to its author-year name: "Gage (1994)", "Kudo and Richardson (2018)",
    "Vaswani et al. (2017)", "OpenAI (2019)". Only ``author`` (or ``editor``) and ``year`` are read."""
    names = {}
    for m in re.finditer(r"@(?P<type>\w+)\s*\{\s*(?P<key>[^,\s]+)\s*,", text):
        if m.group("type").lower() in {"string", "comment", "preamble"}:
            continue
        depth, i = 1, m.end()
        while i < len(text) and depth:
            depth += (text[i] == "{") - (text[i] == "}")
            i += 1
        fields = {}
        for field in _split_top(text[m.end():i - 1], ","):
            key, _, value = field.partition("=")
            value = value.strip()
            if value.startswith("{") and value.endswith("}") or value.startswith('"') and value.endswith('"'):
                value = value[1:-1]
            fields[key.strip().lower()] = value
        people = _split_top(fields.get("author", fields.get("editor", "")), " and ")
        last = []
        for person in people:
            if person.startswith("{") and person.endswith("}"):
                last.append(_latex_text(person))          # {{OpenAI}}: an organisation
            elif person == "others":
                last.append("others")
            elif "," in person:
                last.append(_latex_text(_split_top(person, ",")[0]))
            else:
                last.append(_latex_text(person).split(" ")[-1])
        if not last:
            who = m.group("key")
        elif len(last) == 1:
            who = last[0]
        elif len(last) == 2 and "others" not in last:
            who = f"{last[0]} and {last[1]}"
        else:
            who = f"{last[0]} et al."
        names[m.group("key")] = f"{who} ({_latex_text(fields.get('year', 'n.d.'))})"
    return names


# --- context: what the roles point at -------------------------------------------------------

def site_numbers(toc: dict) -> dict[str, str]:
    """The chapter numbers the site prints, from a ``_toc.yml``: ``{stem: "5"}``.

    Jupyter Book 1 numbers the chapters of the parts marked ``numbered`` consecutively across
    those parts (``use_multitoc_numbering``); pages of the other parts have no number. A page
    nested under a chapter is numbered after the parent's own sections, so it gets none here
    (the course nests none)."""
    numbers, count = {}, 0
    for part in toc.get("parts", []) or []:
        if not part.get("numbered"):
            continue
        for entry in part.get("chapters", []) or []:
            count += 1
            if "file" in entry:
                numbers[Path(entry["file"]).stem] = str(count)
    return numbers


def _toc_numbers(source: Path) -> dict[str, str]:
    """:func:`site_numbers` of the ``_toc.yml`` beside a chapters folder; without one, the number
    a notebook's name starts with (``05_positional_embedding`` -> "5")."""
    toc = Path(source).parent / "_toc.yml"
    if not toc.exists():
        return {p.stem: str(int(m.group(1))) for p in Path(source).glob("*.ipynb")
                if (m := re.match(r"(\d+)_", p.stem))}
    import yaml  # PyYAML: in requirements.txt, read only where a book's _toc.yml is at hand

    return site_numbers(yaml.safe_load(toc.read_text(encoding="utf-8")) or {})


def _exercise_labels(nb) -> list[str | None]:
    """The labels of the notebook's exercises, in order (None for an unlabelled one)."""
    labels = []
    for cell in nb.cells:
        if cell.cell_type != "markdown":
            continue
        for m in _FENCE.finditer(cell.source):
            if m.group("name") in {"exercise", "exercise-start"}:
                opts = re.match(r"(?::[^\n]*\n)*", cell.source[m.end():]).group(0)
                label = re.search(r"^:label:\s*(\S+)", opts, re.M)
                labels.append(label.group(1) if label else None)
    return labels


def _title(path: Path) -> str | None:
    """The first level-1 heading of a notebook or Markdown file."""
    try:
        if path.suffix == ".ipynb":
            text = "\n".join(c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "markdown")
        else:
            text = path.read_text(encoding="utf-8")
    except (OSError, ValueError):
        return None
    m = re.search(r"^# +(.+?)\s*$", text, re.M)
    return m.group(1) if m else None


class Context:
    """What the roles of a notebook resolve to.

    ``exercises``: label -> "Exercise 5.2"; ``references``: BibTeX key -> "Vaswani et al. (2017)";
    ``docs``: a {doc} target as the chapters write it (``02_vocabulary``, ``../notation``) ->
    plain text; ``site_url``: the published book, for links (else plain text only); ``figures``:
    the folder of the drawn figures (``chapters/figures``), whose PNGs become attachments (else
    the images are left as they are).
    """

    def __init__(self, exercises=None, references=None, docs=None, site_url=None, chapter=None, figures=None):
        self.exercises = dict(exercises or {})
        self.references = dict(references or {})
        self.docs = dict(docs or {})
        self.site_url = site_url.rstrip("/") if site_url else None
        self.chapter = chapter                  # "5" for chapter 5, None when unknown
        self.figures = Path(figures) if figures is not None else None

    @classmethod
    def for_folder(cls, source: Path, site_url=None) -> dict[str, Context]:
        """One context per notebook of ``source`` (a chapters folder beside references.bib)."""
        source = Path(source)
        bib = source.parent / "references.bib"
        references = read_bib(bib.read_text(encoding="utf-8")) if bib.exists() else {}
        paths = sorted(source.glob("*.ipynb"))
        docs, exercises, counted, numbers = {}, {}, {}, _toc_numbers(source)
        for path in paths:
            number, title = numbers.get(path.stem), _title(path) or path.stem
            docs[path.stem] = f"*{title}* (chapter {number})" if number else f"*{title}*"
            base = number
            for label in _exercise_labels(nbformat.read(path, as_version=4)):
                counted[base] = counted.get(base, 0) + 1
                if label:
                    exercises[label] = f"Exercise {base}.{counted[base]}" if base else f"Exercise {counted[base]}"
        for page in source.parent.glob("*.md"):
            docs[f"../{page.stem}"] = f"*{_title(page) or page.stem}*"
        out = {}
        for path in paths:
            out[path.stem] = cls(exercises, references, docs, site_url, numbers.get(path.stem), source / "figures")
        return out

    def doc_url(self, target: str) -> str | None:
        if not self.site_url:
            return None
        path = target[3:] if target.startswith("../") else f"chapters/{target}"
        return f"{self.site_url}/{path}.html"


# --- MyST -> Jupyter Markdown ---------------------------------------------------------------

def _cite(name: str, keys: str, ctx: Context) -> str:
    found = [ctx.references.get(k.strip(), k.strip()) for k in keys.split(",") if k.strip()]
    if name in {"cite:t", "cite:ts", "cite:author", "cite:year"}:
        return " and ".join(found)
    # parenthetical, as the site (author_year) prints {cite} and {cite:p}: (Radford et al., 2019)
    return "(" + "; ".join(re.sub(r" \((.*)\)$", r", \1", f) for f in found) + ")"


def _role(m: re.Match, ctx: Context) -> str:
    name, body = m.group("name"), m.group("body")
    explicit = _EXPLICIT.match(body)
    shown, target = (explicit.group("text"), explicit.group("target")) if explicit else (None, body.strip())
    if name.startswith("cite"):
        return _cite(name, body, ctx)
    if name == "term":
        shown = shown or target
        if ctx.site_url:
            anchor = "term-" + re.sub(r"\s+", "-", " ".join(target.split()))
            return f"[{shown}]({ctx.site_url}/glossary.html#{anchor})"
        return shown
    if name == "doc":
        url = ctx.doc_url(target)
        if not shown:
            shown = ctx.docs.get(target, target.rsplit("/", 1)[-1])
            # "Chapter 2 ({doc}`02_vocabulary`)": the sentence already gives the number
            if re.search(r"chapters?\b[^.]{0,40}$", m.string[:m.start()], re.I):
                shown = shown.split(" (chapter")[0]
        if not url:
            return shown
        title, _, rest = shown.partition(" (chapter")
        return f"[{title.strip('*')}]({url})" + (f" (chapter{rest}" if rest else "")
    if name in {"ref", "numref"}:
        if shown:
            return shown.replace("%s", ctx.exercises.get(target, target).split(" ")[-1])
        found = ctx.exercises.get(target, target)
        # "(exercise {ref}`x`)" renders "exercise Exercise 10.3" on the site; say it once here
        if found.startswith("Exercise ") and re.search(r"exercise\s+$", m.string[:m.start()], re.I):
            return found.split(" ", 1)[1]
        return found
    if name == "eq":
        return f"({target})"
    if name == "math":
        return f"${body}$"
    if name in {"sub", "sup"}:
        return f"<{name}>{body}</{name}>"
    if name in {"code", "literal", "samp", "file", "kbd", "command"}:
        return f"`{body}`"
    return shown or target                # abbr, guilabel, download, ...: the text


def _roles(text: str, ctx: Context) -> str:
    """Replace every MyST role outside code spans and code fences (scanned left to right, so a
    role's own backticks never open a code span)."""
    def replace(m: re.Match) -> str:
        return _role(m, ctx) if m.group("name") else m.group(0)

    return _ROLE_OR_CODE.sub(replace, text)


def _quote(text: str) -> str:
    return "\n".join(f"> {line}".rstrip() for line in text.strip("\n").split("\n"))


def _directive(name: str, arg: str, options: dict, body: str, ctx: Context, number: list) -> str:
    body = body.strip("\n")
    if name == "dropdown":
        return f"<details><summary>{arg or 'Answer'}</summary>\n\n{body}\n\n</details>"
    if name in {"exercise", "exercise-start"}:
        number[0] += 1
        label = options.get("label")
        found = ctx.exercises.get(label) if label else None
        if not found:
            found = f"Exercise {ctx.chapter}.{number[0]}" if ctx.chapter else f"Exercise {number[0]}"
        heading = f"**{found}" + (f" ({label})" if label else "") + (f": {arg}" if arg else "") + "**"
        return heading + (f"\n\n{body}" if body else "")
    if name in {"exercise-end", "solution-start", "solution-end"}:
        return ""
    if name in {"solution"}:
        return f"<details><summary>Solution</summary>\n\n{body}\n\n</details>"
    if name in {"figure", "image"}:
        alt = options.get("alt", body.split("\n")[0] if body else "")
        return f"![{alt}]({arg})" + (f"\n\n*{body}*" if body and name == "figure" else "")
    if name in {"math", "equation"}:
        return f"$$\n{body}\n$$"
    if name in {"code", "code-block", "code-cell", "literalinclude"}:
        return f"```{arg}\n{body}\n```"
    if name in {"glossary", "toctree", "tableofcontents", "bibliography", "raw", "only"}:
        return body if name == "glossary" else ""
    title = arg if name == "admonition" else (arg or name.replace("-", " ").capitalize())
    return _quote((f"**{title}**\n\n" if title else "") + body)


def myst_to_markdown(text: str, ctx: Context | None = None, number: list | None = None) -> str:
    """Plain Jupyter Markdown for one markdown cell's MyST.

    ``number`` is a one-item list, the count of exercises met so far in the notebook (updated).
    """
    ctx = ctx or Context()
    number = number if number is not None else [0]
    text = _TARGET.sub("", text)
    out, pos = [], 0
    while True:
        m = _FENCE.search(text, pos)
        if m is None:
            out.append(_roles(text[pos:], ctx))
            break
        out.append(_roles(text[pos:m.start()], ctx))
        fence = m.group("fence")
        close = re.compile(rf"^{re.escape(fence)}[ \t]*$", re.M).search(text, m.end())
        end = close.start() if close else len(text)
        inner, options = text[m.end():end], {}
        while (opt := _OPTION.match(inner)) is not None:
            options[opt.group("key")] = opt.group("value").strip()
            inner = inner[opt.end():]
        body = myst_to_markdown(inner, ctx, number)
        out.append(_directive(m.group("name"), _roles(m.group("arg").strip(), ctx), options, body, ctx, number))
        pos = close.end() if close else len(text)
    return re.sub(r"\n{3,}", "\n\n", "".join(out)).strip("\n")


# --- drawn figures -> attachments ----------------------------------------------------------

def attach_figures(text: str, figures: Path | None) -> tuple[str, dict]:
    """``text`` with every ``![alt](figures/<name>.svg)`` replaced by ``![alt](attachment:<name>.png)``,
    and the attachments that go with it, in nbformat's format: ``{"<name>.png": {"image/png": base64}}``.

    The PNG is read from ``figures`` (``make figures`` writes one beside each SVG). Without a
    ``figures`` folder the text is returned as it is."""
    if figures is None:
        return text, {}
    attachments = {}

    def attach(m: re.Match) -> str:
        png = Path(figures) / f"{m.group('name')}.png"
        if not png.is_file():
            raise FileNotFoundError(f"{png} is missing: the student notebook embeds the PNG of every figure "
                                    f"figures/{m.group('name')}.svg shows; run `make figures`")
        attachments[png.name] = {"image/png": base64.b64encode(png.read_bytes()).decode("ascii")}
        return f"![{m.group('alt')}](attachment:{png.name})"

    return _FIGURE.sub(attach, text), attachments


# --- solutions -> TODO cells ----------------------------------------------------------------

def _python(source: str) -> str:
    """A code cell's source with IPython magics and shell lines commented out, for ast."""
    return "\n".join("# " + line if line.lstrip().startswith(("%", "!")) else line for line in source.split("\n"))


def _imports(source: str) -> list[ast.stmt]:
    try:
        tree = ast.parse(_python(source))
    except SyntaxError:
        return []
    return [node for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))]


def _bound(node) -> list[tuple]:
    module = node.module if isinstance(node, ast.ImportFrom) else None
    return [(module, a.name, a.asname) for a in node.names]


def _needed_imports(solution_code: list[str], imported: set) -> list[str]:
    """The import statements of the removed solution that the kept cells have not made."""
    lines = []
    for source in solution_code:
        for node in _imports(source):
            names = [a for a, key in zip(node.names, _bound(node)) if key not in imported]
            imported.update(_bound(node))
            if names:
                node = copy.copy(node)
                node.names = names
                line = ast.unparse(node)
                if line not in lines:
                    lines.append(line)
    return lines


def _todo_code(name: str, imports: list[str], cell_id: str):
    head = [f"# TODO, {name}: write your solution here, then run this cell."]
    if imports:
        head += ["# What the exercise needs beyond the cells above:", *imports]
    head += ["", f"print({name + ': ' + NOT_DONE + '. Replace this line with your solution.'!r})"]
    cell = nbformat.v4.new_code_cell("\n".join(head))
    cell.metadata["tags"] = [TODO_TAG]
    cell.id = cell_id
    return cell


def _todo_words(name: str, cell_id: str):
    cell = nbformat.v4.new_markdown_cell(f"*Your answer ({name}):* ...")
    cell.metadata["tags"] = [TODO_TAG]
    cell.id = cell_id
    return cell


def _prose(markdown: str) -> bool:
    """Whether a solution's markdown says something (beyond its fences)."""
    text = _START.sub("", _END.sub("", markdown))
    return len(re.findall(r"[A-Za-z]{2,}", text)) >= 3


def student_notebook(nb, ctx: Context | None = None, graded=None):
    """Return a copy of ``nb`` for students: solutions replaced by TODO cells, the MyST of every
    markdown cell turned into plain Markdown, all outputs cleared. ``ctx`` says what roles and
    exercise numbers resolve to (:meth:`Context.for_folder`); without it, citations print their
    keys and exercises are numbered from 1.

    With ``graded`` (what :func:`tokvec.course.grading.source_notebooks` passes: an object with
    ``code(todo, label, name, solution_code)`` returning the cells that replace a TODO code cell,
    and ``words(todo, label, words)`` returning the cell that replaces a "*Your answer*" cell) the
    result is nbgrader's *source* notebook instead: the solutions inside nbgrader's markers, a
    locked test cell after each code answer."""
    ctx = ctx or Context()
    out = copy.deepcopy(nb)
    cells, kept_text, number, imported = [], [], [0], set()
    in_solution, label, solution_code, solution_words = False, None, [], []

    def flush_markdown(template):
        text = "".join(kept_text).strip("\n")
        kept_text.clear()
        if text.strip():
            text = myst_to_markdown(text, ctx, number)
        if text.strip():
            text, attachments = attach_figures(text, ctx.figures)
            cell = nbformat.v4.new_markdown_cell(text)
            if attachments:
                cell.attachments = attachments
            cell.id = f"{template.get('id', 'md')}-s{len(cells)}"[:64]
            cells.append(cell)

    def close_solution():
        name = ctx.exercises.get(label) or f"exercise {label}"
        if solution_code:
            cells.append(_todo_code(f"{name} ({label})" if label in ctx.exercises else name,
                                    _needed_imports(solution_code, imported), f"todo-{label}"[:64]))
            if graded is not None:
                cells[-1:] = graded.code(cells[-1], label, name, solution_code)
        if solution_words and _prose("".join(solution_words)) or not solution_code:
            cells.append(_todo_words(f"{name}, {label}" if label in ctx.exercises else name,
                                     f"todo-{label}-words"[:64]))
            if graded is not None:
                words = myst_to_markdown(_START.sub("", _END.sub("", "".join(solution_words))), ctx)
                cells[-1] = graded.words(cells[-1], label, words)

    for cell in nb.cells:
        if cell.cell_type == "code":
            if in_solution:
                solution_code.append(cell.source)
                continue
            flush_markdown(cell)
            new = copy.deepcopy(cell)
            new.outputs, new.execution_count = [], None
            cells.append(new)
            for node in _imports(cell.source):
                imported.update(_bound(node))
            continue
        if cell.cell_type != "markdown":
            if not in_solution:
                flush_markdown(cell)
                cells.append(copy.deepcopy(cell))
            continue
        text, pos = cell.source, 0
        while True:
            if in_solution:
                end = _END.search(text, pos)
                if end is None:
                    solution_words.append(text[pos:] + "\n")
                    break                                   # the rest of this cell is solution
                solution_words.append(text[pos:end.start()])
                close_solution()
                in_solution, pos = False, end.end()
            else:
                start = _START.search(text, pos)
                if start is None:
                    kept_text.append(text[pos:] + "\n\n")
                    break
                kept_text.append(text[pos:start.start()])
                flush_markdown(cell)
                in_solution, label, solution_code, solution_words = True, start.group("label"), [], []
                pos = start.end()
    if in_solution:
        raise ValueError(f"solution {label!r} is never closed with ```{{solution-end}}```")
    flush_markdown({"id": "end"})
    out.cells = cells
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tokvec.course.student", description=__doc__.split("\n\n")[0])
    parser.add_argument("source", type=Path, help="folder of filled chapter notebooks")
    parser.add_argument("target", type=Path, help="folder to write the student notebooks to")
    parser.add_argument("--site-url", default=None,
                        help="the published book (e.g. https://example.org/book): terms and {doc} "
                             "references become links into it; without it they are plain text")
    args = parser.parse_args(argv)
    paths = sorted(args.source.glob("*.ipynb"))
    if not paths:
        print(f"no notebooks in {args.source}", file=sys.stderr)
        return 1
    args.target.mkdir(parents=True, exist_ok=True)
    contexts = Context.for_folder(args.source, args.site_url)
    for path in paths:
        nb = student_notebook(nbformat.read(path, as_version=4), contexts[path.stem])
        nbformat.validate(nb)
        nbformat.write(nb, args.target / path.name)
        todos = sum(TODO_TAG in c.metadata.get("tags", []) for c in nb.cells)
        print(f"{args.target / path.name}: {todos} TODO cells")
    return 0


if __name__ == "__main__":
    sys.exit(main())
