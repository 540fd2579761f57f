"""Chapter 1's BPE against Hugging Face ``tokenizers``: encoding one long word, and training.

    python benchmarks/bpe_vs_hf.py --out src/tokvec/bench/results/bpe-vs-hf-<machine>.json

Pure Python against Rust, on the same input, interleaved (each round runs both), median of
``--repeats`` rounds. Before timing, it checks that both give the same tokens and the same merges:
a fast wrong answer is not timed. The inputs are made from the course corpus with a seeded
generator, so every machine times the same text:

* ``encode_word``: one 1,000,000-character word (the corpus's letters, repeated), tokenized by a
  BPE with 400 symbols trained on the corpus. The simple quadratic loop took minutes here; the
  heap version in ``BPE.tokenize_word`` is ``O(n log n)``.
* ``train``: a 1 MB corpus (corpus words drawn at random, 30% with one random letter inserted so
  that there are many distinct words), trained to ``vocab_size`` symbols.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import statistics
import sys
from importlib import metadata

from tokvec.bench.common import time_call
from tokvec.text import BPE, load_corpus, train_hf_bpe


def long_word(n: int = 1_000_000) -> str:
    letters = "".join(ch for ch in load_corpus() if ch.isalpha())
    return (letters * (n // len(letters) + 1))[:n]


def training_text(n: int = 1_000_000, seed: int = 0) -> str:
    rng, words = random.Random(seed), load_corpus().split()
    out, size = [], 0
    while size < n:
        word = rng.choice(words)
        if rng.random() < 0.3:
            k = rng.randrange(len(word) + 1)
            word = word[:k] + rng.choice("abcdefghijklmnopqrstuvwxyz") + word[k:]
        out.append(word)
        size += len(word) + 1
    return " ".join(out)


def _seconds(fn) -> float:
    return time_call(fn, repeats=1, warmup=0)[0] / 1e3


def _hf_merges(tokenizer) -> list[tuple[str, str]]:
    return [tuple(m) for m in json.loads(tokenizer.to_str())["model"]["merges"]]


def run(repeats: int = 3, vocab_size: int = 1000) -> list[dict]:
    corpus = load_corpus()
    ours, hf = BPE.train(corpus, 400), train_hf_bpe(corpus, 400)
    word, text = long_word(), training_text()
    if hf.encode(word).tokens != BPE(ours.alphabet, ours.merges).tokenize(word):
        raise RuntimeError("the two tokenizers disagree on the long word: not timing a wrong answer")
    if _hf_merges(train_hf_bpe(text, vocab_size)) != BPE.train(text, vocab_size).merges:
        raise RuntimeError("the two trainers learn different merges: not timing a wrong answer")
    times: dict[tuple[str, str], list[float]] = {}
    for _ in range(repeats):
        fresh = BPE(ours.alphabet, ours.merges)  # an empty cache each round
        for task, impl, fn in (
            ("encode_word", "tokvec", lambda fresh=fresh: fresh.tokenize(word)),
            ("encode_word", "hf", lambda: hf.encode(word)),
            ("train", "tokvec", lambda: BPE.train(text, vocab_size)),
            ("train", "hf", lambda: train_hf_bpe(text, vocab_size)),
        ):
            times.setdefault((task, impl), []).append(_seconds(fn))
    records = []
    for task, size in (("encode_word", len(word)), ("train", len(text))):
        ours_s = statistics.median(times[task, "tokvec"])
        hf_s = statistics.median(times[task, "hf"])
        records.append({"task": task, "characters": size,
                        "vocab_size": 400 if task == "encode_word" else vocab_size,
                        "tokvec_s": round(ours_s, 4), "hf_s": round(hf_s, 4),
                        "ratio": round(ours_s / hf_s, 2), "repeats": repeats})
    return records


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--vocab-size", type=int, default=1000)
    parser.add_argument("--out", help="write the results here as JSON")
    args = parser.parse_args(argv)
    from tokvec.bench.common import report
    from tokvec.environment import cpu_name

    result = {
        "command": "python benchmarks/bpe_vs_hf.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "machine": {"cpu": cpu_name(), "python": platform.python_version(),
                    "tokvec": metadata.version("tokvec"), "tokenizers": metadata.version("tokenizers")},
        "records": run(args.repeats, args.vocab_size),
    }
    return report(result, args.out)


if __name__ == "__main__":
    main()
