"""Every number in a chapter's prose is one that its code printed, or a constant it cites.

A number the text states ("about 154 MB", "57.1 %", "4.2 times tiktoken's time") must be found
in the same chapter's code cells, its stored outputs, a committed results file that the chapter
reads (``src/tokvec/bench/results/*.json``, ``src/tokvec/data/*.json``), or the tests of its
exercises (``grading/<chapter>.py``: an exercise's statement gives the tolerances they check). A number quoted from a
paper, a standard or released code instead (GPT-2's 50,257 tokens) is listed, with its source,
under the chapter in ``tests/cited_numbers.toml``. So when the code changes and prints something
new, the sentence that quoted the old value fails here instead of going stale.

What counts as a number and what is skipped is written out in ``prose_numbers``; how a prose
number is matched against what the code printed, in ``Haystack.has``. The unit tests at the end
pin every rule down, so that the chapter tests cannot pass because the extractor found nothing.
Reads JSON only: no notebook is executed. The pages without code (glossary, notation, intro)
are not checked.
"""

from __future__ import annotations

import bisect
import json
import math
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "chapters").glob("*.ipynb"))
RESULTS = sorted((ROOT / "src/tokvec/bench/results").glob("*.json")) + sorted(
    (ROOT / "src/tokvec/data").glob("*.json")
)
CITED_FILE = ROOT / "tests/cited_numbers.toml"
BIB_KEYS = set(re.findall(r"^@\w+\{([^,\s]+),", (ROOT / "references.bib").read_text(encoding="utf-8"), re.M))

# Integers up to this one read as words ("rows 0 and 4", "two tokens", "step 3"), not as
# measurements, and are not checked. Every decimal is checked, whatever its size.
SMALL = 10
# A four-digit integer in this range, written without a separator, is a year.
YEARS = range(1900, 2031)
# Words after which a number names a place in a text, not a quantity: "chapter 3", "section 3.5",
# "Algorithms 1 and 2", "seeds 000 and 004", "Table 2", "Python 3.11".
NAMING_WORDS = (
    r"chapters?|sections?|algorithms?|tables?|figures?|fig\.|exercises?|questions?|seeds?|lines?|theorems?"
    r"|parts?|appendix|equations?|eq\.|issues?|python|version"
)
SCALES = {"thousand": 1e3, "million": 1e6, "billion": 1e9, "trillion": 1e12}

# --- the number itself -----------------------------------------------------------------------

# A thousands separator: comma, LaTeX's {,} or \, , or a thin / narrow no-break space.
_SEP = r"(?:,|\{,\}|\\,|[\u2009\u202f])"
_NUMBER = (
    r"(?P<num>\d{1,3}(?:" + _SEP + r"\d{3})+(?!\d)(?:\.\d+)?"  # 50,257  38{,}597{,}376  1,234.5
    r"|\d+(?:_\d+)+"  # 100_000 (code)
    r"|\d+(?:\.\d+)*)"  # 48  0.05  1.3335  (and 2.13.0, a version)
    r"(?P<exp>[eE][-+]?\d+)?"  # 2.7e-7
)
_SUFFIX = (
    r"(?P<suffix>\s?(?:\\,)?(?:%|\\%)|\s?per ?cent\b|(?:x|×)(?![A-Za-z0-9])"  # 57.1 %  75%  4.2x  1.5×
    r"|\s(?:" + "|".join(SCALES) + r")\b)?"  # 1.3 million
)
TOKEN = re.compile(_NUMBER + _SUFFIX)
# Scientific notation in LaTeX: 5.1 \times 10^{-5}, and a power of ten alone: 10^{-12}, 10^4.
_MINUS = r"[-−]"
SCIENTIFIC = re.compile(
    r"(?<![\w.])(?P<mantissa>\d+(?:\.\d+)?)\s*(?:\\times|\\cdot|×)\s*10\^(?:\{(?P<e1>" + _MINUS + r"?\d+)\}|(?P<e2>\d))"
)
POWER_OF_TEN = re.compile(r"(?<![\w.{,])10\^(?:\{(?P<e1>" + _MINUS + r"?\d+)\}|(?P<e2>\d))")


@dataclass(frozen=True)
class Number:
    """A number as the prose writes it, and what it may match."""

    text: str  # as written, "57.1 %"
    value: float  # its magnitude as written: 57.1 for "57.1 %" (candidates() adds 0.571)
    tol: float  # half a unit of the last digit written: 0.05 for "57.1"
    kind: str = "plain"  # plain, percent, scaled (1.3 million) or power (10^{-12} alone)
    scale: float = 1.0
    range_end: bool = False  # the b of "a..b" or "a to b"
    cell: str = ""
    start: int = 0
    sentence: str = ""

    @property
    def key(self) -> str:
        """The number with separators and spaces removed: "50,257" and "50257" are one number."""
        return re.sub(r"\{,\}|\\,|[,\s\u2009\u202f]", "", self.text)

    def candidates(self) -> list[tuple[float, float]]:
        """The (value, tolerance) pairs that a printed number may fall in to match this one."""
        pairs = [(self.value, self.tol)]
        if self.kind == "percent":  # 57.1 % is 57.1 printed, or the fraction 0.571
            pairs.append((self.value / 100, self.tol / 100))
        if self.kind == "scaled":  # 1.3 million is 1.3 printed, or 1,300,000 to two digits
            pairs.append((self.value * self.scale, self.tol * self.scale))
        if self.range_end:  # ids 0..847 are range(848), positions 4,032 to 4,095 end at 4096
            pairs.append((self.value + 1, self.tol))
        return pairs


def _parse(num: str, exp: str | None, rounded_thousands: bool = False) -> tuple[float, float] | None:
    """The value and half a unit of the last digit of a written number; None for a version.

    With ``rounded_thousands`` (the prose says "about 26,000"), the zeros that end a number written
    with separators are rounding, not digits: 26,000 to the nearest thousand (±500), "about 1,700"
    to the nearest hundred; never more than the last group of three, so "about 100,000" is ±500
    too. Without "about", "128,000" means 128,000 and does not match a printed 128,256.
    """
    digits = re.sub(r"\{,\}|\\,|[,_\u2009\u202f]", "", num)
    if digits.count(".") > 1:
        return None
    places = len(digits.split(".")[1]) if "." in digits else 0
    if rounded_thousands and places == 0 and not exp and digits != num:
        places = -min(3, len(digits) - len(digits.rstrip("0")))
    exponent = int(exp[1:]) if exp else 0
    return float(digits) * 10.0**exponent, 0.5 * 10.0 ** (exponent - places) * (1 + 1e-9)


def _mask(text: str, start: int, end: int) -> str:
    """Blank text[start:end] out with spaces (newlines kept), so offsets still point into the source."""
    return text[:start] + re.sub(r"[^\n]", " ", text[start:end]) + text[end:]


def _mask_all(text: str, pattern: re.Pattern, group: int | str = 0) -> str:
    for m in reversed(list(pattern.finditer(text))):
        if m.group(group) is not None:
            text = _mask(text, m.start(group), m.end(group))
    return text


def _mask_braced(text: str, opener: str) -> str:
    """Blank out every ``opener{...}`` with balanced braces (LaTeX exponents and subscripts)."""
    i = text.find(opener + "{")
    while i != -1:
        depth, j = 0, i + len(opener)
        while j < len(text):
            depth += {"{": 1, "}": -1}.get(text[j], 0)
            if depth == 0:
                break
            j += 1
        text = _mask(text, i, j + 1)
        i = text.find(opener + "{", j + 1)
    return text


_FENCE = re.compile(r"^(\s*)(`{3,}|~{3,}|:{3,})(.*)$")
_OPTION = re.compile(r"^\s*:[\w-]+:")


def _mask_fences(text: str) -> str:
    """Blank out code fenced in the markdown (quoted code, such as a seed's source) and the lines
    that open and close MyST directives and their options; keep what a directive holds (prose)."""
    out, stack, after_opening = [], [], False
    for line in text.split("\n"):
        m = _FENCE.match(line)
        closing = m and stack and m.group(2)[0] == stack[-1][0][0] and len(m.group(2)) >= len(stack[-1][0])
        if closing and not m.group(3).strip():
            stack.pop()
            out.append(" " * len(line))
            after_opening = False
            continue
        if stack and stack[-1][1]:  # inside a code block
            out.append(" " * len(line))
            continue
        if m:
            is_code = not m.group(3).strip().startswith("{") or m.group(3).strip().startswith(
                ("{code", "{code-block}", "{code-cell}", "{literalinclude}")
            )
            stack.append((m.group(2), is_code))
            out.append(" " * len(line))
            after_opening = True
            continue
        if after_opening and _OPTION.match(line):
            out.append(" " * len(line))
            continue
        after_opening = False
        out.append(line)
    return "\n".join(out)


_APPROXIMATELY = re.compile(r"(?i)(?:\babout|\baround|\broughly|\bsome|\bnearly|\balmost|\bapproximately"
                            r"|~|≈|\\approx|\\sim)[\s$]*\Z")
_RANGE_START = re.compile(r"\d\s*(?:\.\.|\bto|–)\s*\Z")
_ROLE = re.compile(r"\{(?P<role>[\w:-]+)\}`(?P<body>[^`]*)`")
_TERM_TARGET = re.compile(r"<[^<>]*>\s*$")
_LINK_TARGET = re.compile(r"\]\((?P<target>[^)]*)\)")
_URL = re.compile(r"https?://\S+|<https?://[^>]+>")
_HTML = re.compile(r"</?[A-Za-z][\w-]*(?:\s[^<>]*)?/?>")
_LABEL = re.compile(r"^[ \t]*\([^)\s]+\)=[ \t]*$|^[ \t]*%.*$", re.M)
_ENUMERATOR = re.compile(r"^[ \t]*(?:[-*+][ \t]+)?(?P<n>\d+[.)])\s", re.M)
_HEADING_NUMBER = re.compile(r"^#+\s+(?P<n>\d+(?:\.\d+)*\.?)\s", re.M)
# chapter 3, section 3.5, Algorithms 1 and 2, seeds 000 and 004, §5.4: one or two digits (or an id
# with leading zeros), so that "its table 525,336,576" stays a quantity.
_NAME = r"(?:0\d+|\d{1,2}(?:\.\d+)*[a-z]?)(?![\d,.]?\d)"
_NAMED = re.compile(
    r"(?i)(?<![\w])(?:(?:" + NAMING_WORDS + r")\s+|§\s*)(?P<n>" + _NAME
    + r"(?:\s*(?:,|and|or|to|-|–)\s*" + _NAME + r")*)"
)


def _mask_markup(text: str) -> str:
    """Blank out everything in a markdown cell that is not prose, inline code or math."""
    text = _mask_fences(text)
    text = _mask_all(text, _LABEL)
    for m in reversed(list(_ROLE.finditer(text))):
        if m.group("role") == "term":  # {term}`float32 <dtype>`: the words show, the target does not
            text = _mask(text, m.start(), m.start("body"))
            target = _TERM_TARGET.search(m.group("body"))
            end = m.start("body") + target.start() if target else m.end("body")
            text = _mask(text, end, m.end())
        else:  # {cite}, {doc}, {ref}, {numref}, {eq}: keys and file names, not numbers
            text = _mask(text, m.start(), m.end())
    text = _mask_all(text, _URL)
    text = _mask_all(text, _LINK_TARGET, "target")
    text = _mask_all(text, _HTML)
    text = _mask_all(text, _ENUMERATOR, "n")
    text = _mask_all(text, _HEADING_NUMBER, "n")
    return _mask_all(text, _NAMED, "n")


def _glued_before(text: str, i: int) -> bool:
    """Is the number at text[i] part of a name: float32, x_2, GPT-2, SHA-256, UTF-8, U+00E9, v1.2?"""
    before = text[max(0, i - 2) : i]
    return bool(
        re.search(r"\w\Z", before)
        or re.fullmatch(r"[A-Za-z][-+]", before)
        or re.fullmatch(r"\w\.", before)
        or before.endswith("#")
    )


_SENTENCE_STOP = re.compile(r"[.!?:](?=\s)|\n\s*\n|\n\s*[-*] |\n\s*\d+\. |^[ \t]*(?:`{3,}|~{3,}|:{3,}).*\n|^", re.M)


def _sentence(source: str, start: int, end: int) -> str:
    """The sentence around source[start:end], on one line, with the number marked »thus«."""
    stops = [m.end() for m in _SENTENCE_STOP.finditer(source[:start])]
    left = max(stops) if stops else 0
    m = re.search(r"[.!?](?=\s|$)|\n\s*\n|$", source[end:])
    right = end + (m.end() if m else 0)
    left, right = max(left, start - 160), min(right, end + 160)
    sentence = source[left:start] + "»" + source[start:end] + "«" + source[end:right]
    return " ".join(sentence.split())


def prose_numbers(source: str, cell: str = "") -> list[Number]:
    """The numbers a markdown cell states, in prose, inline code and math.

    Checked: decimals (0.05, 1.3335), integers above ``SMALL`` (48, 1024, 50,257, 38{,}597{,}376),
    percentages (57.1 %, 75%), multipliers (4.2x, 1.5×), scale words (1.3 million), scientific
    notation (2.7e-7, $5.1 \\times 10^{-5}$) and a power of ten alone ($10^{-12}$).

    Skipped, because they name something or are notation, not a quantity the text claims:
    integers 0 to ``SMALL``; years (1900-2030 without a separator); numbers after the words in
    ``NAMING_WORDS`` (chapter 3, section 3.5, Algorithms 1 and 2, seed 002, Python 3.11); ids
    written with leading zeros (000, 004); versions (2.13.0); numbers glued to a name (GPT-2,
    SHA-256, UTF-8, U+00E9, float32, cl100k, 70B, 2nd, x_2); exponents and subscripts
    ($10000^{2i/d_e}$, $\\omega_2$); role contents ({cite}, {doc}, {ref}, the target of {term}),
    URLs, link targets and HTML tags; code fenced in the markdown (quoted code); MyST directive
    lines and their options (:label:); list enumerators and heading numbers.
    """
    text = _mask_markup(source)
    found: list[Number] = []

    def add(start: int, end: int, value: float, tol: float, kind: str = "plain", scale: float = 1.0):
        written = source[start:end].strip()
        range_end = bool(_RANGE_START.search(text[:start]))
        sentence = _sentence(source, start, end)
        found.append(Number(written, abs(value), tol, kind, scale, range_end, cell, start, sentence))

    for m in SCIENTIFIC.finditer(text):
        mantissa = _parse(m.group("mantissa"), None)
        exponent = int((m.group("e1") or m.group("e2")).replace("−", "-"))
        assert mantissa is not None
        add(m.start(), m.end(), mantissa[0] * 10.0**exponent, mantissa[1] * 10.0**exponent)
    text = _mask_all(text, SCIENTIFIC)
    for m in POWER_OF_TEN.finditer(text):
        exponent = int((m.group("e1") or m.group("e2")).replace("−", "-"))
        add(m.start(), m.end(), 10.0**exponent, 0.0, "power")
    text = _mask_all(text, POWER_OF_TEN)
    text = _mask_braced(_mask_braced(text, "^"), "_")
    text = _mask_all(text, re.compile(r"[\^_]\d+"))

    for m in TOKEN.finditer(text):
        num, suffix = m.group("num"), (m.group("suffix") or "").strip()
        end = m.end()
        if _glued_before(text, m.start()) or re.match(r"[A-Za-z_\d]", text[end : end + 1]):
            continue  # 70B, 2nd, 3D: a name
        if text[end : end + 4] == "-bit":
            continue  # 32-bit: a format's name
        parsed = _parse(num, m.group("exp"), rounded_thousands=bool(_APPROXIMATELY.search(text[: m.start()])))
        if parsed is None:
            continue  # a version, 2.13.0
        value, tol = parsed
        plain_integer = "." not in num and not m.group("exp")
        if plain_integer and re.fullmatch(r"0\d+", num):
            continue  # seed 002: an id
        if plain_integer and not suffix and value <= SMALL:
            continue
        if plain_integer and not suffix and int(value) in YEARS and num.isdigit():
            continue
        if suffix.lower() in SCALES:
            add(m.start(), end, value, tol, "scaled", SCALES[suffix.lower()])
        elif suffix.endswith("%") or "cent" in suffix:
            add(m.start(), end, value, tol, "percent")
        else:
            add(m.start(), end, value, tol)
    return sorted(found, key=lambda n: n.start)


def printed_numbers(text: str) -> list[float]:
    """Every number in code or printed output, as magnitudes (a printed 75% is 75 and 0.75)."""
    values = []
    for m in TOKEN.finditer(text):
        if re.search(r"[A-Za-z_]\Z", text[max(0, m.start() - 1) : m.start()]):
            continue  # float32, x2: part of a name
        parsed = _parse(m.group("num"), m.group("exp"))
        if parsed is None:
            continue
        value, suffix = abs(parsed[0]), (m.group("suffix") or "").strip().lower()
        values.append(value)
        if suffix.endswith("%") or "cent" in suffix:
            values.append(value / 100)
        if suffix in SCALES:
            values.append(value * SCALES[suffix])
    return values


# --- where a number may be found -------------------------------------------------------------


class Haystack:
    """The numbers a chapter printed (its code and stored outputs) and the results files it reads."""

    def __init__(self, printed, stored=()):
        self.printed = sorted(printed)
        self.stored = sorted(stored)

    def has(self, number: Number) -> bool:
        """Was the prose number printed, to the precision the prose writes it, or is it stored?

        Printed: a printed value within half a unit of the prose number's last digit ("4.2" matches
        a printed 4.2, 4.25 or 4.1999; "about 26,000" a printed 26,256, but "128,000" not 128,256);
        "57.1 %" also matches the fraction 0.571, "1.3 million"
        1,300,000, the end of a range "0..847" also 848, and a power of ten alone ("about
        $10^{-16}$") any value of that order of magnitude. Stored, in a results file: the same
        value, not a rounding of it, since a results file holds hundreds of finely measured values
        and some value would round to almost any short decimal. Signs are ignored.
        """
        if number.kind == "power":
            exponent = math.log10(number.value)
            return self._any(self.printed, 10 ** (exponent - 0.5), 10 ** (exponent + 0.5) * (1 - 1e-12))
        pairs = number.candidates()
        return any(self._any(self.printed, v - t, v + t) for v, t in pairs) or any(
            self._any(self.stored, v * (1 - 1e-9), v * (1 + 1e-9)) for v, _ in pairs
        )

    @staticmethod
    def _any(values: list[float], low: float, high: float) -> bool:
        i = bisect.bisect_left(values, low)
        return i < len(values) and values[i] <= high


def _json_values(node) -> list[float]:
    if isinstance(node, bool) or node is None:
        return []
    if isinstance(node, int | float):
        return [abs(float(node))]
    if isinstance(node, str):
        return printed_numbers(node)
    items = node.items() if isinstance(node, dict) else enumerate(node)
    return [v for key, child in items for v in printed_numbers(str(key)) + _json_values(child)]


def _text(value) -> str:
    return "".join(value) if isinstance(value, list) else str(value)


def code_and_outputs(nb: dict) -> str:
    """A notebook's code cells and their stored outputs (stream, text, html, markdown, errors)."""
    parts = []
    for cell in nb["cells"]:
        if cell["cell_type"] != "code":
            continue
        parts.append(_text(cell["source"]))
        for out in cell.get("outputs", []):
            if "text" in out:
                parts.append(_text(out["text"]))
            for mime in ("text/plain", "text/html", "text/markdown", "text/latex"):
                if mime in out.get("data", {}):
                    parts.append(_text(out["data"][mime]))
            if out.get("output_type") == "error":
                parts.append(f"{out.get('ename', '')}: {out.get('evalue', '')}")
    return "\n".join(parts)


def load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


# A chapter reads a results file by its name (`load("cpu-2core-epyc.json")`) or through a loader
# whose default path is that file.
LOADERS = {"position-sweep.json": "load_sweep("}


def results_read_by(code: str) -> list[Path]:
    return [p for p in RESULTS if p.name in code or (p.name in LOADERS and LOADERS[p.name] in code)]


def haystack(nb: dict, tests: str = "") -> Haystack:
    code = code_and_outputs(nb) + "\n" + tests
    stored = [v for path in results_read_by(code) for v in _json_values(load(path))]
    return Haystack(printed_numbers(code), stored)


# Where a code cell keeps the prose of its figure (MyST-NB): the caption under it and the alt text
# that a screen reader says in its place. Both state numbers to the reader, so both are checked.
FIGURE_TEXTS = {"caption": ("mystnb", "figure", "caption"), "alt text": ("mystnb", "image", "alt")}


def figure_texts(cell: dict) -> list[tuple[str, str]]:
    """``(where, text)`` for the caption and the alt text in a cell's metadata, where it has them."""
    found = []
    for where, path in FIGURE_TEXTS.items():
        node = cell.get("metadata", {})
        for key in path:
            node = node.get(key) if isinstance(node, dict) else None
        if node:
            found.append((where, _text(node)))
    return found


def chapter_numbers(nb: dict) -> list[Number]:
    """The numbers of every markdown cell, and of every figure's caption and alt text."""
    numbers = []
    for cell in nb["cells"]:
        cell_id = cell.get("id", "?")
        if cell["cell_type"] == "markdown":
            numbers.extend(prose_numbers(_text(cell["source"]), cell_id))
        for where, text in figure_texts(cell):
            numbers.extend(prose_numbers(text, f"{cell_id} ({where})"))
    return numbers


def cited() -> dict[str, dict[str, dict]]:
    """tests/cited_numbers.toml: per chapter file, each number as written -> {source, where}."""
    return tomllib.loads(CITED_FILE.read_text(encoding="utf-8"))


def _key(written: str) -> str:
    return Number(written, 0, 0).key


def unmatched(nb: dict, listed=(), tests: str = "") -> list[Number]:
    """The prose numbers of a notebook that are neither printed, stored, in its exercises'
    ``tests`` nor in ``listed``."""
    found, keys = haystack(nb, tests), {_key(w) for w in listed}
    return [n for n in chapter_numbers(nb) if n.key not in keys and not found.has(n)]


# --- the chapters ----------------------------------------------------------------------------


@pytest.mark.parametrize("nb_path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_every_number_in_the_prose_was_printed_or_is_cited(nb_path):
    tests = ROOT / "grading" / f"{nb_path.stem}.py"
    missing = unmatched(load(nb_path), cited().get(nb_path.name, {}),
                        tests.read_text(encoding="utf-8") if tests.exists() else "")
    if missing:
        lines = [f"  cell {n.cell}: {n.text!r} in: {n.sentence}" for n in missing]
        pytest.fail(
            f"chapters/{nb_path.name}: {len(missing)} number(s) in the prose are in none of the chapter's "
            "code, its stored outputs, the results files it reads, or tests/cited_numbers.toml:\n"
            + "\n".join(lines)
            + "\nFix each one: if the chapter computes it, print it in a code cell next to the sentence and "
            "re-run the chapter; if the code now prints something else, correct the sentence; if it is a "
            f'constant quoted from a paper or a model card, add it under ["{nb_path.name}"] in '
            "tests/cited_numbers.toml with its source.",
            pytrace=False,
        )


def _sources(entry) -> list[str]:
    source = entry.get("source") if isinstance(entry, dict) else None
    return [source] if isinstance(source, str) else list(source or [])


def test_the_cited_numbers_are_in_their_chapters_with_a_source():
    """Every listed constant is under a real chapter, has a source (a references.bib key or a URL)
    and says where in it the number is; and it still occurs in that chapter's prose (a stale entry
    fails, so the list stays as short as the chapters)."""
    names = {p.name: p for p in NOTEBOOKS}
    problems = []
    for chapter, entries in cited().items():
        if chapter not in names:
            problems.append(f'["{chapter}"]: no such chapter in chapters/')
            continue
        in_prose = {n.key for n in chapter_numbers(load(names[chapter]))}
        for written, entry in entries.items():
            at = f'["{chapter}"] "{written}"'
            if not isinstance(entry, dict) or set(entry) != {"source", "where"} or not _sources(entry):
                problems.append(f"{at}: write it as {{ source = <bib key or URL>, where = <where in it> }}")
                continue
            for source in _sources(entry):
                if source not in BIB_KEYS and not source.startswith("https://"):
                    problems.append(f"{at}: source {source!r} is neither a key of references.bib nor a URL")
            if not str(entry["where"]).strip():
                problems.append(f"{at}: say where in the source the number is (section, table, file)")
            if _key(written) not in in_prose:
                problems.append(f"{at}: the chapter's prose no longer states this number; remove the entry")
    if problems:
        pytest.fail("tests/cited_numbers.toml:\n  " + "\n  ".join(problems), pytrace=False)


def test_the_extractor_finds_the_numbers_of_the_book():
    """A broken pattern that finds nothing would make every chapter pass."""
    total = sum(len(chapter_numbers(load(p))) for p in NOTEBOOKS)
    assert total > 300, f"only {total} numbers found in the prose of {len(NOTEBOOKS)} chapters"


def test_the_loaders_still_open_their_results_files():
    """LOADERS says which call reads which results file; if the loader moves, chapter 12's
    measurements would silently drop out of its haystack."""
    sources = "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "src/tokvec").rglob("*.py"))
    for name, call in LOADERS.items():
        assert (ROOT / "src/tokvec/data" / name).exists() or any(p.name == name for p in RESULTS), name
        assert name in sources and f"def {call}" in sources, f"no tokvec function {call}...) opens {name} any more"


# --- the extractor and the matcher, on small strings -----------------------------------------


def written(source: str) -> list[str]:
    return [n.text for n in prose_numbers(source)]


def test_plain_decimals_thousands_percentages_and_multipliers_are_found():
    assert written("The table has 50,257 rows, 38{,}597{,}376 numbers and 128 256 is two.") == [
        "50,257", "38{,}597{,}376", "128", "256"]
    numbers = prose_numbers("It took 0.05 s, 57.1 % of the time, 4.2x tiktoken's and 1.5× more; 75%.")
    assert [(n.text, n.kind) for n in numbers] == [
        ("0.05", "plain"), ("57.1 %", "percent"), ("4.2x", "plain"), ("1.5×", "plain"), ("75%", "percent")]
    assert [n.value for n in numbers] == [0.05, 57.1, 4.2, 1.5, 75]


def test_scientific_notation_and_scale_words_are_one_number():
    numbers = prose_numbers(r"Off by $5.1 \times 10^{-5}$, 2.7e-7 or about $10^{-12}$; 1.3 million ids.")
    assert [n.text for n in numbers] == [r"5.1 \times 10^{-5}", "2.7e-7", "10^{-12}", "1.3 million"]
    assert numbers[0].value == pytest.approx(5.1e-5) and numbers[1].value == pytest.approx(2.7e-7)
    assert numbers[2].kind == "power" and numbers[3].kind == "scaled"


def test_small_integers_years_names_and_notation_are_skipped():
    assert written("Rows 0 and 4, two of 10 tokens, in 2024.") == []
    assert written("See chapter 12, section 3.5, Algorithms 1 and 2, Table 3, §5.4, seeds 000 and 004.") == []
    assert written("GPT-2, SHA-256, UTF-8, U+00E9, float32, cl100k_base, Llama 3 70B, the 2nd, x_12.") == []
    assert written("torch 2.13.0 on Python 3.11, {cite}`vaswani2017attention`, {doc}`11_positions`.") == []
    assert written(r"$\omega_{12} = 10000^{-2i/64}$ and $x^{16}$") == ["10000"]
    assert written("[the table](https://example.org/a/1234) and <img width=\"600\">") == []
    assert written("1. First item\n12. Twelfth item\n## 12.3 A heading\n(label-42)=\n") == []
    assert written("its table 525,336,576 parameters") == ["525,336,576"]  # "table" names only small numbers
    assert written("a 2048-token context, 2048 rows") == ["2048", "2048"]  # a size, not a year


def test_quoted_code_and_directive_options_are_skipped_but_directive_prose_is_not():
    source = "```python\nx = 1234\n```\n\n```{exercise}\n:label: ex-42\n\nUse 768 dimensions.\n```\n"
    assert written(source) == ["768"]


def test_term_roles_show_their_words_and_hide_their_target():
    assert written("{term}`the 512 rows <Table 4096>`") == ["512"]


def test_the_sentence_marks_the_number():
    (number,) = prose_numbers("Intro. The table is 4.19 GB in bfloat16. Next sentence.", "c03-041")
    assert number.sentence == "The table is »4.19« GB in bfloat16." and number.cell == "c03-041"


def test_a_printed_value_matches_at_the_precision_the_prose_writes():
    (four_two,) = prose_numbers("4.2 times")
    assert Haystack([4.25]).has(four_two) and Haystack([4.1999]).has(four_two)
    assert not Haystack([4.3, 14.25, 42]).has(four_two)  # tokens, not substrings
    (thousands,) = prose_numbers("about 26,000 parameters")
    assert Haystack([25_920]).has(thousands) and not Haystack([25_400]).has(thousands)
    (exact_thousands,) = prose_numbers("a vocabulary of 128,000 tokens")
    assert not Haystack([128_256]).has(exact_thousands) and Haystack([128_000]).has(exact_thousands)
    (exact,) = prose_numbers("1024 rows")
    assert not Haystack([1025]).has(exact)


def test_percentages_fractions_ranges_and_powers_of_ten():
    (percent,) = prose_numbers("57.1 % of the time")
    assert Haystack([0.5714]).has(percent) and Haystack([57.1]).has(percent)
    (fraction,) = prose_numbers("0.75 of it")
    assert Haystack(printed_numbers("75%")).has(fraction)
    *_, end = prose_numbers("ids 0..847 and 12 to 99")
    assert Haystack([100]).has(end)
    (power,) = prose_numbers(r"about $10^{-16}$")
    assert Haystack([2.2e-16]).has(power) and not Haystack([2.2e-15]).has(power)


def test_a_results_file_matches_only_the_value_it_stores():
    (four_two,) = prose_numbers("4.2 times")
    assert not Haystack([], stored=[4.25]).has(four_two)
    assert Haystack([], stored=[4.2]).has(four_two)


def test_printed_numbers_read_code_and_output_like_the_prose():
    assert printed_numbers("x = 100_000; y = 1e-5; print(f'{n:,}') -> 38,597,376 and np.float32") == [
        100_000, 1e-5, 38_597_376]


def test_a_number_the_code_did_not_print_is_reported():
    nb = {"cells": [
        {"cell_type": "markdown", "id": "m1", "source": ["The table is 154 MB, and 4.19 GB for Llama 3.\n"]},
        {"cell_type": "code", "id": "c1", "source": ["print(f'{n * 4 / 1e6:.1f} MB')"],
         "outputs": [{"output_type": "stream", "name": "stdout", "text": ["154.4 MB\n"]}]},
    ]}
    assert [(n.cell, n.text) for n in unmatched(nb)] == [("m1", "4.19")]
    assert unmatched(nb, listed={"4.19": {}}) == []


def test_figure_captions_and_alt_text_are_checked_like_the_prose():
    figure = {"cell_type": "code", "id": "c1", "source": ["print(f'{x:.2f}')"],
              "outputs": [{"output_type": "stream", "name": "stdout", "text": ["0.65\n"]}],
              "metadata": {"mystnb": {"figure": {"caption": "From 0.65 to 1.93 ms.", "name": "fig-x"},
                                      "image": {"alt": "Bars about 30 times lower."}}}}
    nb = {"cells": [figure]}
    assert [(n.cell, n.text) for n in chapter_numbers(nb)] == [
        ("c1 (caption)", "0.65"), ("c1 (caption)", "1.93"), ("c1 (alt text)", "30")]
    assert [(n.cell, n.text) for n in unmatched(nb)] == [("c1 (caption)", "1.93"), ("c1 (alt text)", "30")]
    assert figure_texts({"cell_type": "code", "metadata": {"mystnb": {"figure": {"name": "f"}}}}) == []
