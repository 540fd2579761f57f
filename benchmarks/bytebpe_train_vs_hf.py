"""Training a byte-level BPE from a file: tokvec.bytebpe.train_file against Hugging Face tokenizers.

    python benchmarks/bytebpe_train_vs_hf.py --out src/tokvec/bench/results/bytebpe-train-vs-hf-<machine>.json

Both learn ``--vocab-size`` ids (10,000 by default: the 256 bytes, ``<|endoftext|>`` and the merges)
from the same UTF-8 file, with GPT-2's pre-tokenizer pattern, on one thread and on all of them:
``tokvec.bytebpe.train_file(path, ..., num_workers=n)`` (pure Python, ``n`` processes for the
counting) and HF's ``BpeTrainer`` behind a ``ByteLevel`` pre-tokenizer (Rust; ``RAYON_NUM_THREADS``
sets its threads). Every measurement runs in a fresh Python process (``--one``), so that
``RAYON_NUM_THREADS`` takes effect and the peak resident memory (``ru_maxrss``) belongs to that
call alone; the seconds are those of the training call only (not the interpreter's start nor the
imports). The rounds are interleaved (each round runs every contender once) and the median of
``--repeats`` rounds is kept, after one untimed warm-up round (which also brings the text file
into the page cache). Memory, three ways:

* ``rss_mb``: the process's peak resident set (``VmHWM`` in ``/proc/self/status``), and
  ``rss_before_mb`` the same just before training (the interpreter and the imports), so
  ``rss_mb - rss_before_mb`` is what training added;
* ``workers_rss_mb``: the largest peak resident set of one worker process (tokvec, ``n > 1``);
* ``traced_mb`` (tokvec, one worker): the peak of Python's allocations under ``tracemalloc``, in
  a separate untimed process; with one worker every allocation of the training is Python's.

The texts are ``<|endoftext|>``-separated documents of ten paragraphs of the mixed text of
``benchmarks/bytebpe_vs_tiktoken.py`` (English prose, Python code, about 50 languages, all from
its fixed list of sources: the pinned requirements' descriptions and catalogues and the
standard library's modules, not the files that describe the installation; ``sources`` in the
results, with the code text's SHA-256), its first 6 MB, repeated as
often as needed to reach each ``--sizes-mb`` size: the 5 MB text repeats nothing, the 50 MB one
holds the 6 MB about eight times (so it has the distinct pre-tokens of 6 MB and ten times the
counting). The SHA-256 of each is in the results, and every record names its text.

The two trainers do not do the same work, so they learn nearly, not exactly, the same merges.
HF's ``ByteLevel`` pre-tokenizer cuts like GPT-2's pattern, but ``Tokenizer.train([path])`` reads
the file line by line, so no pre-token spans a line end: a run of line breaks (``"\\n\\n"`` in
``"\\n\\n\\nNext"``), which ``train_file`` counts as one pre-token, never reaches HF's counts.
And HF does not cut the special token out before pre-tokenizing: its trainer counts ``<|``,
``endoftext``, ``|>`` as text. The script checks that both reach the vocabulary size, and that
``train_file`` gives exactly ``train``'s merges with one worker and with all of them (a fast
wrong answer is not timed).

A load average cannot tell the benchmark's own processes from anyone else's, so each
measurement records, around the training call, the process's own CPU time with its finished
workers' (``cpu_s``), and what the rest of the machine did meanwhile (``other_cpu_s``: the busy
time of all CPUs in ``/proc/stat`` less ``cpu_s``; ``steal_s``: the time the hypervisor gave to
other guests). ``/proc/stat`` counts in ticks of 10 ms, and the two counters disagree by more
than that: the committed run's one-thread rounds of Hugging Face's trainer read -0.12 to -0.17 s
each (``/proc/stat`` misses part of its CPU time), so only a value well above that, a large
``other_cpu_s``, says that a round shared the machine. ``task_load`` sums them over all the timed calls of one text.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
from importlib import metadata
from pathlib import Path

EOT = "<|endoftext|>"
HERE = Path(__file__).resolve().parent


def documents(n_bytes: int, base_bytes: int = 6_000_000, per_document: int = 10) -> str:
    """``<|endoftext|>``-separated documents of the mixed text, repeated to ``n_bytes`` of UTF-8."""
    sys.path.insert(0, str(HERE))
    from bytebpe_vs_tiktoken import mixed_text

    paragraphs = mixed_text(base_bytes).split("\n\n")
    cycle = EOT.join("\n\n".join(paragraphs[i:i + per_document]) for i in range(0, len(paragraphs), per_document))
    data = (EOT.join([cycle] * (n_bytes // len(cycle.encode()) + 1))).encode()[:n_bytes]
    return data.decode("utf-8", errors="ignore")


def _rss_mb(who=resource.RUSAGE_SELF) -> float:
    """Peak resident set in MB: this process's ``VmHWM``, or the largest child's ``ru_maxrss``.

    ``ru_maxrss`` of this process would not do: Linux keeps it across ``exec``, so a fresh
    process started by a large parent reports the parent's peak. ``VmHWM`` starts afresh.
    """
    if who == resource.RUSAGE_SELF:
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:")) / 1e3
    return resource.getrusage(who).ru_maxrss / 1e3          # Linux reports KiB


def train_hf(path: str, vocab_size: int):
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=0, special_tokens=[EOT],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tokenizer.train([path], trainer)
    return tokenizer


def one(impl: str, path: str, vocab_size: int, workers: int, traced: bool) -> dict:
    """One measurement in this (fresh) process: seconds and memory of one training call."""
    import tracemalloc

    from tokvec import bytebpe

    sys.path.insert(0, str(HERE))
    from bytebpe_vs_tiktoken import timed

    before = _rss_mb()
    if traced:
        tracemalloc.start()
    try:
        result = {}

        def training():
            if impl == "hf":
                result["size"] = train_hf(path, vocab_size).get_vocab_size()
            else:
                result["size"] = len(bytebpe.train_file(path, vocab_size, [EOT], num_workers=workers)[0])

        call = timed(training)            # seconds, and the CPU time of this process and of the others
        out = {"seconds": call["seconds"], "cpu_s": call["cpu_s"], "other_cpu_s": call["other_cpu_s"],
               "steal_s": call["steal_s"], "vocab": result["size"], "rss_before_mb": before, "rss_mb": _rss_mb(),
               "workers_rss_mb": _rss_mb(resource.RUSAGE_CHILDREN)}
        if traced:
            out["traced_mb"] = tracemalloc.get_traced_memory()[1] / 1e6
    finally:
        if traced:          # a caller that measures memory later must not inherit this trace
            tracemalloc.stop()
    return out


def _run_one(impl: str, path: str, vocab_size: int, threads: int, traced: bool = False) -> dict:
    env = dict(os.environ, RAYON_NUM_THREADS=str(threads))
    cmd = [sys.executable, __file__, "--one", impl, "--file", path, "--vocab-size", str(vocab_size),
           "--threads", str(threads)] + (["--traced"] if traced else [])
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if done.returncode:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def check(path: str, text: str, vocab_size: int, threads: int) -> int:
    """``train_file`` equals ``train`` with one worker and with ``threads``; the number of merges."""
    from tokvec import bytebpe

    whole = bytebpe.train(text, vocab_size, [EOT])
    for workers in sorted({1, threads}):
        if bytebpe.train_file(path, vocab_size, [EOT], num_workers=workers) != whole:
            raise RuntimeError(f"train_file with {workers} workers differs from train: not timing a wrong answer")
    return len(whole[1])


def run(sizes_mb=(5, 50), vocab_size: int = 10_000, repeats: int = 3, threads: int | None = None,
        workdir: str | None = None) -> dict:
    sys.path.insert(0, str(HERE))
    from bytebpe_vs_tiktoken import task_load

    threads = threads or os.cpu_count()
    texts, records = {}, []
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        for mb in sizes_mb:
            text = documents(int(mb * 1e6))
            path = os.path.join(tmp, f"documents-{mb:g}mb.txt")
            with open(path, "w", encoding="utf-8", newline="") as f:
                f.write(text)
            data = text.encode()
            label = f"documents, {mb:g} MB"
            digest = hashlib.sha256(data).hexdigest()
            texts[label] = {"bytes": len(data), "sha256": digest, "documents": text.count(EOT) + 1}
            merges = check(path, text, vocab_size, threads)
            del text, data
            contenders = [("tokvec", 1), ("hf", 1), ("tokvec", threads), ("hf", threads)]
            runs: dict[tuple[str, int], list[dict]] = {c: [] for c in contenders}
            for k in range(-1, repeats):                 # round -1: the warm-up, not kept
                for impl, n in contenders:
                    one_run = _run_one(impl, path, vocab_size, n)
                    if k >= 0:
                        runs[impl, n].append(one_run)
            load = task_load([r for rs in runs.values() for r in rs])
            traced = _run_one("tokvec", path, vocab_size, 1, traced=True)["traced_mb"]
            hf_s = {n: statistics.median(r["seconds"] for r in runs["hf", n]) for n in {1, threads}}
            for (impl, n), rs in runs.items():
                if any(r["vocab"] != vocab_size for r in rs):
                    raise RuntimeError(f"{impl} did not reach vocab_size {vocab_size}: {[r['vocab'] for r in rs]}")
                s = statistics.median(r["seconds"] for r in rs)
                record = {"task": "train_file", "text": label, "text_sha256": digest, "bytes": texts[label]["bytes"],
                          "impl": impl, "threads": n, "vocab_size": vocab_size, "seconds": round(s, 3),
                          "seconds_all": [round(r["seconds"], 3) for r in rs],
                          # per round: this measurement's CPU time, and other processes' meanwhile
                          "cpu_s_all": [round(r["cpu_s"], 3) for r in rs],
                          "other_cpu_s_all": [None if r["other_cpu_s"] is None else round(r["other_cpu_s"], 3)
                                              for r in rs],
                          "steal_s_all": [None if r["steal_s"] is None else round(r["steal_s"], 3) for r in rs],
                          "vs_hf_same_threads": round(s / hf_s[n], 2),
                          "rss_mb": round(max(r["rss_mb"] for r in rs), 1),
                          "rss_before_mb": round(max(r["rss_before_mb"] for r in rs), 1), "repeats": repeats,
                          "warmup_rounds": 1, "task_load": load}
                if impl == "tokvec":
                    record["merges"] = merges
                    if n > 1:
                        record["workers_rss_mb"] = round(max(r["workers_rss_mb"] for r in rs), 1)
                    else:
                        record["traced_mb"] = round(traced, 1)
                records.append(record)
    return {"texts": texts, "records": records}


def main(argv=None) -> dict | None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes-mb", default="5,50", help="comma-separated text sizes in MB")
    parser.add_argument("--vocab-size", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=None, help="'all threads' (default: every core)")
    parser.add_argument("--out", help="write the results here as JSON")
    parser.add_argument("--one", choices=("tokvec", "hf"), help=argparse.SUPPRESS)
    parser.add_argument("--file", help=argparse.SUPPRESS)
    parser.add_argument("--traced", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(one(args.one, args.file, args.vocab_size, args.threads, args.traced)))
        return None
    from tokvec.bench.common import report
    from tokvec.environment import cpu_name

    sys.path.insert(0, str(HERE))
    from bytebpe_vs_tiktoken import sources

    body = run([float(s) for s in args.sizes_mb.split(",")], args.vocab_size, args.repeats, args.threads)
    result = {
        "command": "python benchmarks/bytebpe_train_vs_hf.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "machine": {"cpu": cpu_name(), "cores": os.cpu_count(), "python": platform.python_version(),
                    "tokvec": metadata.version("tokvec"), "tokenizers": metadata.version("tokenizers"),
                    "regex": metadata.version("regex")},
        "sources": sources(),
        "hf_setup": "Tokenizer(models.BPE()), pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True), "
                    "BpeTrainer(vocab_size, min_frequency=0, special_tokens=['<|endoftext|>'], "
                    "initial_alphabet=ByteLevel.alphabet()), tokenizer.train([path])",
        **body,
    }
    return report(result, args.out)


if __name__ == "__main__":
    main()
