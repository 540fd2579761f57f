"""Every public function, fed bad input: a clear error that names the argument, never a generic one.

One table drives the sweep: for each public function, valid arguments, and for each argument the
kinds of bad value it must refuse (wrong types, None, bools, floats for ints, negatives, zero, huge
values, NaN and infinity, empty input). A call must raise ``TypeError``, ``ValueError``,
``IndexError`` or ``KeyError`` whose message names the argument (or the regex given), and never
one of Python's generic messages ("'NoneType' object has no attribute", "unsupported operand",
"math domain error", ...), which tell a learner nothing about what to fix.

When you add a public function, add a row: the test of the next function is one line.
"""

from __future__ import annotations

import re
from collections import Counter

import numpy as np
import pytest
import torch

from tokvec import arrays, attention, layers, parallel, reference, text, validate, vocab, windows

GENERIC = re.compile("|".join([
    r"object has no attribute", r"unsupported operand", r"not supported between instances",
    r"object is not iterable", r"object is not subscriptable", r"math domain error",
    r"can only concatenate", r"cannot be interpreted as an integer", r"index out of range$",
    r"unhashable type", r"must be real number, not", r"invalid literal", r"has no len\(\)",
    r"bad operand type", r"Python int too large", r"Overflow when unpacking",
    r"expected str instance", r"argument must be", r"got an unexpected keyword",
]))

NAN, INF = float("nan"), float("inf")
HUGE = 10**400

# kinds of bad value, by what the argument should be
TEXT = [None, b"abc", 3, ["a"]]
SIZE = [None, 0, -1, True, 2.5, NAN, "3", HUGE]
SIZE_NO_HUGE = SIZE[:-1]             # a huge count or vocabulary size is a valid (if slow) request
BASE = [None, 1, 0.5, -3, NAN, INF, HUGE, "10000", True]
FLAG = [None, "yes", 1, 0.0]
TOKENS = ["abc", None, 3, [1, 2], [None]]
MATRIX = [None, [], [[]], [[1.0, 2.0], [3.0]], "abc", [1.0, 2.0]]
FLOAT_DTYPE = [torch.int64, torch.bool, "float32", np.float32]
NP_FLOAT_DTYPE = [np.int32, np.bool_]

W = reference.random_matrix(3, 5, seed=0)   # d_e = 3, N_V = 5
P = reference.sinusoidal_positions(3, 4)    # d_e = 3, l_max = 4
V = vocab.Vocabulary(["cat", "sat"])
BPE = text.BPE.train("the cat sat on the mat " * 3, 40)

# (id, function, valid keyword arguments, {argument: bad values, or (bad values, message regex)})
CASES = [
    ("normalize", text.normalize, {"text": "a b"}, {"text": TEXT, "lowercase": FLAG}),
    ("whitespace_tokenize", text.whitespace_tokenize, {"text": "a b"}, {"text": TEXT}),
    ("word_tokenize", text.word_tokenize, {"text": "a b"}, {"text": TEXT}),
    ("char_tokenize", text.char_tokenize, {"text": "a b"}, {"text": TEXT}),
    ("pretokenize", text.pretokenize, {"text": "a b"}, {"text": TEXT}),
    ("BPE.train", text.BPE.train, {"corpus": "a b a b", "vocab_size": 10},
     {"corpus": TEXT, "vocab_size": SIZE_NO_HUGE, "min_frequency": SIZE_NO_HUGE, "lowercase": FLAG}),
    ("BPE", text.BPE, {"alphabet": ["a", "b"], "merges": [("a", "b")]},
     {"alphabet": [None, "ab", 3, [1], ["ab"]], "merges": [None, "ab", 3, [("a",)], [(1, 2)], [("a", "c")]],
      "lowercase": FLAG}),
    ("train_hf_bpe", text.train_hf_bpe, {"corpus": "a b a b", "vocab_size": 10},
     {"corpus": TEXT, "vocab_size": SIZE_NO_HUGE, "min_frequency": SIZE_NO_HUGE}),
    ("count_pairs", text.count_pairs, {"splits": {"ab": ["a", "b"]}, "word_counts": Counter(ab=2)},
     {"splits": [None, [["a", "b"]], "ab"], "word_counts": [None, ["ab"], 3]}),
    ("merge_pair", text.merge_pair, {"symbols": ["a", "b"], "pair": ("a", "b")},
     {"symbols": [None, "ab", ("a", "b")], "pair": [None, ("a",), "ab", ["a", "b"], ("a", 1), ("a", "b", "c")]}),
    ("BPE.tokenize", BPE.tokenize, {"text": "the cat"}, {"text": TEXT}),
    ("BPE.tokenize_word", BPE.tokenize_word, {"word": "cat"}, {"word": TEXT}),
    ("BPE.detokenize", text.BPE.detokenize, {"tokens": ["a"]}, {"tokens": ([None, 3, [1], "ab"], "tokens")}),
    ("Vocabulary", vocab.Vocabulary, {"tokens": ["a"]},
     {"tokens": (TOKENS, "token"), "specials": ([None, "<unk>", 3, [1]], "specials|token"),
      "unk_token": ([3, "<oov>"], "unk_token")}),
    ("Vocabulary.from_corpus", vocab.Vocabulary.from_corpus, {"tokens": ["a", "b"]},
     {"tokens": ([*TOKENS, []], "token|corpus"), "specials": ([None, "<unk>", 3, [1]], "specials|token"),
      "min_count": SIZE_NO_HUGE,
      "max_size": [0, -1, True, 2.5, NAN, "3"]}),
    ("Vocabulary.token_to_id", V.token_to_id, {"token": "cat"}, {"token": ([None, 3, b"cat"], "token")}),
    ("Vocabulary.id_to_token", V.id_to_token, {"token_id": 4},
     {"token_id": ([None, -1, 6, 1.5, True, HUGE, "4"], "id")}),
    ("Vocabulary.encode", V.encode, {"tokens": ["cat"]},
     {"tokens": (TOKENS, "token|encode"), "add_bos_eos": FLAG, "allow_specials": FLAG}),
    ("Vocabulary.decode", V.decode, {"ids": [4]},
     {"ids": ([None, [-1], [6], [1.5], [True], "12", 4], "id"), "skip_specials": FLAG}),
    ("Vocabulary.save", V.save, {"path": "unused"}, {"path": ([None, 3], "path")}),
    ("Vocabulary.load", vocab.Vocabulary.load, {"path": "unused"}, {"path": ([None, 3], "path")}),
    ("one_hot", reference.one_hot, {"v": 1, "N_V": 5}, {"v": ([None, -1, 5, 1.5, True], "token id"),
                                                          "N_V": SIZE}),
    ("matvec", reference.matvec, {"M": W, "x": [1.0] * 5}, {"M": (MATRIX, "matrix"),
                                                           "x": ([None, [1.0], "abc", 3], "vector|x")}),
    ("transpose", reference.transpose, {"M": W}, {"M": (MATRIX, "matrix")}),
    ("random_matrix", reference.random_matrix, {"rows": 2, "cols": 3, "seed": 0},
     {"rows": SIZE, "cols": SIZE, "seed": [None, 1.5, "0"], "std": [None, -1.0, NAN, INF, "1"]}),
    ("token_embedding", reference.token_embedding, {"v": 1, "W_e": W},
     {"v": ([None, -1, 5, 1.5, True, HUGE], "token id"), "W_e": (MATRIX, "W_e")}),
    ("positional_embedding", reference.positional_embedding, {"t": 1, "W_p": P},
     {"t": ([None, -1, 4, 1.5, True, HUGE], "position"), "W_p": (MATRIX, "W_p")}),
    ("embed", reference.embed, {"x": [1, 2], "W_e": W, "W_p": P},
     {"x": ([None, "ab", [-1], [5], [1.5], [1] * 5, 3, {1, 2}], "x|token id|sequence"),
      "W_e": (MATRIX, "W_e"), "W_p": (MATRIX, "W_p")}),
    ("frequencies", reference.frequencies, {"d_e": 4}, {"d_e": SIZE, "base": BASE,
                                                        "first_i": [None, -1, 2, 1.5, "1"]}),
    ("sinusoidal_positions", reference.sinusoidal_positions, {"d_e": 4, "l_max": 3},
     {"d_e": SIZE, "l_max": SIZE, "base": BASE}),
    ("paper_positions", reference.paper_positions, {"d_e": 4, "l_max": 3},
     {"d_e": SIZE, "l_max": ([*SIZE, 1], "l_max")}),
    ("check_ids", validate.check_ids, {"ids": np.array([1, 2]), "vocab_size": 5, "max_len": 4},
     {"ids": ([None, [1, 2], "12", np.array([1.5]), np.array([-1]), np.array([5]), np.zeros((1, 1, 1), int)],
              "ids|token id|shape"),
      "vocab_size": SIZE_NO_HUGE, "max_len": SIZE_NO_HUGE}),  # huge bounds are valid bounds
    ("sinusoidal_table_numpy", arrays.sinusoidal_table_numpy, {"length": 4, "d_model": 4},
     {"length": SIZE, "d_model": SIZE, "base": BASE, "dtype": NP_FLOAT_DTYPE}),
    ("embed_numpy", arrays.embed_numpy,
     {"ids": np.array([1, 2]), "weight": np.zeros((5, 3)), "table": np.zeros((4, 3))},
     {"ids": ([None, [1, 2], np.array([1.5]), np.array([-1]), np.array([5])], "ids|token id"),
      "weight": ([None, np.zeros(3), np.zeros((5, 2)), np.array([["a"]])], "weight"),
      "table": ([None, np.zeros(3), np.zeros((4, 2))], "table"),
      "scale": ([NAN, INF, "2", True], "scale")}),
    ("sinusoidal_table", layers.sinusoidal_table, {"length": 4, "d_model": 4},
     {"length": SIZE, "d_model": SIZE, "base": BASE, "dtype": FLOAT_DTYPE}),
    ("TransformerEmbedding", layers.TransformerEmbedding, {"vocab_size": 10, "d_model": 4, "max_len": 8},
     {"vocab_size": SIZE, "d_model": SIZE, "max_len": SIZE, "dropout": [None, -0.1, 1.0, NAN, "0.1", True],
      "base": BASE, "padding_idx": [-1, 10, 1.5, True, "0"], "init_std": [-1.0, NAN, INF, "1", True],
      "dtype": FLOAT_DTYPE}),
    ("LearnedTransformerEmbedding", layers.LearnedTransformerEmbedding,
     {"vocab_size": 10, "d_model": 4, "max_len": 8},
     {"vocab_size": SIZE, "d_model": SIZE, "max_len": SIZE, "dropout": [None, -0.1, 1.0, NAN, "0.1"],
      "padding_idx": [-1, 10, 1.5], "dtype": FLOAT_DTYPE}),
]

X = torch.zeros(3, 4)                        # (T, d) = (3, 4)
BAD_X = [None, [[1.0, 2.0]], torch.zeros(3, 5), torch.zeros(4), torch.zeros(3, 4, dtype=torch.long)]
CASES += [
    ("scores", attention.scores, {"q": X, "k": X},
     {"q": ([None, [[1.0]], torch.zeros(4), torch.zeros(3, 5), torch.zeros(3, 4, dtype=torch.int32)], r"\bq\b"),
      "k": ([None, [[1.0]], torch.zeros(4), torch.zeros(3, 5), torch.zeros(3, 4, dtype=torch.int32)], r"\bk\b")}),
    ("rope", attention.rope, {"x": X},
     {"x": (BAD_X, r"\bx\b|d = "),
      "positions": [[0, 1, 2], torch.arange(4), torch.zeros(3), torch.tensor([True] * 3),
                    torch.zeros(1, 3, dtype=torch.long)],
      "base": [b for b in BASE if b is not None], "interleaved": FLAG}),
    ("rope_frequencies", attention.rope_frequencies, {"d_head": 8},
     {"d_head": SIZE, "base": [b for b in BASE if b is not None], "seq_len": [0, -1, True, 2.5, "8"],
      "scaling": ([3, "linear", {}, {"rope_type": "nope"}, {"rope_type": "linear"},
                   {"rope_type": "linear", "factor": 0.5}], "scaling|rope_type|factor")}),
    ("alibi_slopes", attention.alibi_slopes, {"n_heads": 4}, {"n_heads": SIZE}),
    ("alibi_bias", attention.alibi_bias, {"n_heads": 4, "T": 3}, {"n_heads": SIZE, "T": SIZE}),
]

PARALLEL = parallel.VocabParallelEmbedding(10, 4)
CASES += [
    ("VocabParallelEmbedding", parallel.VocabParallelEmbedding, {"vocab_size": 10, "d_model": 4},
     {"vocab_size": SIZE, "d_model": SIZE, "dtype": FLOAT_DTYPE}),
    ("VocabParallelEmbedding.forward", PARALLEL, {"ids": torch.tensor([1])},
     {"ids": ([None, [1, 2], "12", 3, np.array([1, 2]), torch.tensor([1.5]), torch.tensor([True]),
               torch.tensor([-1]), torch.tensor([10]), torch.tensor([1], dtype=torch.uint64)], "ids|token id")}),
    ("VocabParallelEmbedding.load_full_weight", PARALLEL.load_full_weight, {"weight": torch.zeros(10, 4)},
     {"weight": [None, [[0.0] * 4] * 10, torch.zeros(4, 10), torch.zeros(9, 4), torch.zeros(10)]}),
]

LAYER = layers.TransformerEmbedding(10, 4, 8)
LEARNED = layers.LearnedTransformerEmbedding(10, 4, 8)
BAD_IDS = [None, [1, 2], "12", 3, np.array([1, 2]), torch.tensor([1.5]), torch.tensor([True]),
           torch.tensor([-1]), torch.tensor([10]), torch.zeros(9, dtype=torch.long),
           torch.zeros(1, 1, 1, dtype=torch.long), torch.tensor(3), torch.tensor([1], dtype=torch.uint64)]
CASES += [("TransformerEmbedding.forward", LAYER, {"ids": torch.tensor([1])},
           {"ids": (BAD_IDS, "ids|token id|sequence")}),
          ("LearnedTransformerEmbedding.forward", LEARNED, {"ids": torch.tensor([1])},
           {"ids": (BAD_IDS, "ids|token id|sequence")})]


STREAM = [3, 1, 4, 1, 5, 9]
BAD_STREAM = [None, [], [4], "314", 3, [1, 2.5, 3], [1, True, 3], [1, -2, 3], torch.tensor([1.5, 2.5]),
              torch.tensor([True, False]), torch.zeros(2, 3, dtype=torch.long), torch.tensor(4), {1, 2, 3},
              [1, 2**63, 3], [1, HUGE], np.array([1, 2**63], dtype=np.uint64), np.array([1, -2])]
WINDOWS = windows.WindowDataset(STREAM, 2, 2)
CASES += [
    ("join_documents", windows.join_documents, {"docs_ids": [[1, 2], [3]], "eot_id": 0},
     {"docs_ids": ([None, [], "ab", [1, 2], [[1.5]], [[-1]], [[True]], [torch.zeros(2, 2, dtype=torch.long)],
                   [[2**63]]],
                   "docs_ids"),
      "eot_id": ([None, -1, 1.5, True, "0", NAN, 2**63, HUGE], "eot_id")}),
    ("windows", windows.windows, {"ids": STREAM, "context_length": 2, "stride": 1},
     {"ids": (BAD_STREAM, r"\bids\b"), "context_length": [*SIZE, 6, 7], "stride": [*SIZE, 7]}),
    ("WindowDataset", windows.WindowDataset, {"ids": STREAM, "context_length": 2, "stride": 1},
     {"ids": (BAD_STREAM, r"\bids\b"), "context_length": [*SIZE, 6, 7], "stride": [*SIZE, 7]}),
    ("WindowDataset.__getitem__", WINDOWS.__getitem__, {"index": 0},
     {"index": ([None, -1, 2, 1.5, True, "0", HUGE], "window index")}),
]


def bad_calls(cases):
    """One pytest parameter per (case, argument, bad value) of a table like ``CASES``."""
    for case_id, fn, valid, params in cases:
        for name, spec in params.items():
            values, pattern = spec if isinstance(spec, tuple) else (spec, re.escape(name))
            for k, value in enumerate(values):
                yield pytest.param(fn, valid, name, value, pattern, id=f"{case_id}-{name}-{k}")


def test_every_case_is_valid_with_its_valid_arguments(tmp_path):
    for case_id, fn, valid, _ in CASES:
        if case_id == "Vocabulary.save" or case_id == "Vocabulary.load":
            fn(tmp_path / "v.json")
        else:
            fn(**valid)


@pytest.mark.parametrize("fn, valid, name, value, pattern", list(bad_calls(CASES)))
def test_bad_argument_is_a_clear_error(fn, valid, name, value, pattern):
    with pytest.raises((TypeError, ValueError, IndexError, KeyError)) as info:
        fn(**{**valid, name: value})
    message = str(info.value)
    assert not GENERIC.search(message), f"generic error for {name}={value!r:.40}: {message}"
    assert re.search(pattern, message), f"{name}={value!r:.40}: the message does not name it: {message}"


def test_no_public_function_is_missing_from_the_sweep():
    """A new public function of the data path must get a row above (or be listed here as pure data)."""
    covered = {case_id.split(".")[-1] for case_id, *_ in CASES} | {case_id.split(".")[0] for case_id, *_ in CASES}
    not_functions = {"SENTENCE", "SPACE_MARKER", "SPECIALS", "PAD", "UNK", "BOS", "EOS", "Matrix",
                     "UnknownTokenError", "load_corpus", "device",  # constants, or no arguments
                     # building blocks the chapters show bare (chapter 1's BPE steps, chapter 3's
                     # column); every public function that calls them checks its input first
                     "column", "learn_merges", "learn_merges_simple",
                     "check_index", "shape",  # the checks themselves (tests/test_reference.py)
                     # tokvec.parallel's functions beyond the layer: swept, with a completeness
                     # check of their own, in tests/test_parallel_bad_input.py
                     "COLLECTIVES", "communication_bytes", "compare_with_embedding",
                     "dtensor_shard_ranges", "loopback_environment", "main", "parallelize_embedding",
                     "run_group", "self_check", "shard_ranges", "vocab_parallel_cross_entropy"}
    public = {name for module in (text, vocab, reference, arrays, layers, attention, parallel, windows)
              for name in module.__all__}
    public |= {"check_ids"}                 # from tokvec.validate: the one check a reader calls directly
    assert public - not_functions - covered == set()


def test_a_vocabulary_file_with_a_100000_digit_count_is_named_as_damaged(tmp_path):
    """Python refuses to parse integers past 4,300 digits; that must not leak out as its own error."""
    path = tmp_path / "v.json"
    vocab.Vocabulary.from_corpus(["cat", "sat", "cat"]).save(path)
    raw = path.read_text(encoding="utf-8")
    damaged = re.sub(r'("counts": \{[^}]*?": )\d+', lambda m: m.group(1) + "9" * 100_000, raw, count=1)
    assert damaged != raw
    path.write_text(damaged, encoding="utf-8")
    with pytest.raises(ValueError, match=r"not a valid vocabulary file: .*number too long") as info:
        vocab.Vocabulary.load(path)
    assert str(path) in str(info.value)
