"""Do positions matter? Tiny attention models trained with five position schemes, on a CPU.

Chapter 12, "An experiment: do positions matter?" (``12_position_experiment``), runs the smallest
configuration live and plots the sweep stored in ``data/position-sweep.json``, which
``python -m tokvec.experiment`` (or ``experiments/position_sweep.py``) writes.

The task needs order and nothing else: the input is a sequence of random tokens, and at every
position ``t >= k`` the model must output the token ``k`` places back, ``x[t - k]``. Tokens are
drawn uniformly, so content alone says nothing (chance is ``1 / vocab_size``): a model can only
solve it by knowing where each token is. Each scheme gets the same model, data, seed and budget:

* ``"none"``: token embeddings only (a causal mask, but no positional signal);
* ``"learned"``: a trained table of absolute positions added at the input, as in GPT-2
  (:class:`tokvec.layers.LearnedTransformerEmbedding`);
* ``"sinusoidal"``: the fixed table of Vaswani et al. added at the input
  (:class:`tokvec.layers.TransformerEmbedding`);
* ``"rope"``: queries and keys rotated in every layer (:func:`tokvec.attention.rope`);
* ``"alibi"``: a linear distance penalty on the scores of every layer
  (:func:`tokvec.attention.alibi_bias`).

Models are trained on sequences of ``train_len`` tokens and evaluated on longer ones too. The
learned table is built with ``max(eval_lens)`` rows so that longer inputs can be evaluated at
all; the rows past ``train_len`` never receive a gradient, exactly as in a model whose table
is longer than anything it was trained on.

Everything runs on the CPU, in one thread, with ``torch.use_deterministic_algorithms``, from
fixed seeds: the same configuration gives the same numbers on every run on the same machine.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import torch
from torch import nn

from tokvec import validate
from tokvec.attention import alibi_bias, rope, scores
from tokvec.layers import LearnedTransformerEmbedding, TransformerEmbedding

__all__ = ["SCHEMES", "SMALL", "SWEEP", "SWEEP_PATH", "SWEEP_SEEDS", "Config", "TinyTransformer",
           "accuracy_by_position", "batch", "deterministic", "load_sweep", "main", "run", "sweep", "train"]

SCHEMES = ("none", "learned", "sinusoidal", "rope", "alibi")
SWEEP_PATH = Path(__file__).parent / "data" / "position-sweep.json"


@dataclasses.dataclass(frozen=True)
class Config:
    """One experiment: the task, the model, the training budget and the evaluation lengths."""

    k: int = 2                                   # predict the token k places back
    vocab_size: int = 16
    d_model: int = 32
    n_heads: int = 4
    n_layers: int = 2
    train_len: int = 32
    eval_lens: tuple[int, ...] = (32, 64, 128)
    steps: int = 300
    batch_size: int = 32
    lr: float = 3e-3
    seed: int = 0
    eval_sequences: int = 64                     # sequences per evaluation length
    log_every: int = 10                          # record the training loss every this many steps

    def __post_init__(self):
        for name in ("k", "vocab_size", "d_model", "n_heads", "n_layers", "train_len", "steps",
                     "batch_size", "eval_sequences", "log_every"):
            validate.positive_int(getattr(self, name), name)
        if self.d_model % (2 * self.n_heads):
            raise ValueError(f"d_model = {self.d_model} must be a multiple of 2 * n_heads = {2 * self.n_heads}: "
                             f"each head needs an even size for RoPE")
        if self.k >= self.train_len:
            raise ValueError(f"k = {self.k} must be smaller than train_len = {self.train_len}")
        if not self.eval_lens or min(self.eval_lens) < self.train_len:
            raise ValueError(f"eval_lens = {self.eval_lens} must be lengths >= train_len = {self.train_len}")
        if not (isinstance(self.lr, float) and 0 < self.lr < 1):
            raise ValueError(f"lr must be a float in (0, 1), got {self.lr!r}")


@contextlib.contextmanager
def deterministic(seed: int) -> Iterator[None]:
    """Seeded, single-threaded, deterministic PyTorch on the CPU; restores the previous state."""
    threads = torch.get_num_threads()
    was_deterministic = torch.are_deterministic_algorithms_enabled()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        torch.set_num_threads(1)
        torch.use_deterministic_algorithms(True)
        try:
            yield
        finally:
            torch.use_deterministic_algorithms(was_deterministic)
            torch.set_num_threads(threads)


def batch(cfg: Config, T: int, n: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """``n`` random sequences of length ``T`` and their targets: ``x[t - k]``, or -1 for ``t < k``."""
    ids = torch.randint(0, cfg.vocab_size, (n, T), generator=generator)
    targets = torch.full_like(ids, -1)
    targets[:, cfg.k:] = ids[:, :-cfg.k]
    return ids, targets


class _Attention(nn.Module):
    """Causal multi-head self-attention; positions enter only if the scheme puts them here."""

    def __init__(self, cfg: Config, scheme: str):
        super().__init__()
        self.h, self.scheme = cfg.n_heads, scheme
        self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model, bias=False)
        self.out = nn.Linear(cfg.d_model, cfg.d_model, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, d = x.shape
        qkv = self.qkv(x).view(B, T, 3, self.h, d // self.h)
        q, k, v = qkv.permute(2, 0, 3, 1, 4)                                  # each (B, h, T, d_h)
        if self.scheme == "rope":
            q, k = rope(q), rope(k)
        s = scores(q, k)                                                      # (B, h, T, T)
        if self.scheme == "alibi":
            s = s + alibi_bias(self.h, T)                                     # causal mask included
        else:
            s = s.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf"))
        y = torch.softmax(s, dim=-1) @ v                                      # (B, h, T, d_h)
        return self.out(y.transpose(1, 2).reshape(B, T, d))


class _Block(nn.Module):
    def __init__(self, cfg: Config, scheme: str):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(cfg.d_model), nn.LayerNorm(cfg.d_model)
        self.attention = _Attention(cfg, scheme)
        self.mlp = nn.Sequential(nn.Linear(cfg.d_model, 4 * cfg.d_model), nn.GELU(),
                                 nn.Linear(4 * cfg.d_model, cfg.d_model))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attention(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class TinyTransformer(nn.Module):
    """A decoder-only transformer of ``n_layers`` pre-norm blocks; ``scheme`` is one of :data:`SCHEMES`."""

    def __init__(self, cfg: Config, scheme: str):
        super().__init__()
        if scheme not in SCHEMES:
            raise ValueError(f"scheme must be one of {', '.join(SCHEMES)}; got {scheme!r}")
        self.scheme = scheme
        max_len = max(cfg.eval_lens)
        if scheme == "learned":
            self.embed = LearnedTransformerEmbedding(cfg.vocab_size, cfg.d_model, max_len, dropout=0.0)
        elif scheme == "sinusoidal":
            self.embed = TransformerEmbedding(cfg.vocab_size, cfg.d_model, max_len, dropout=0.0)
        else:
            self.embed = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.blocks = nn.ModuleList(_Block(cfg, scheme) for _ in range(cfg.n_layers))
        self.norm = nn.LayerNorm(cfg.d_model)
        self.head = nn.Linear(cfg.d_model, cfg.vocab_size)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.embed(ids)                                  # (B, T, d)
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x))                       # (B, T, vocab_size) logits


def train(cfg: Config, scheme: str) -> tuple[TinyTransformer, list[float]]:
    """Train one model from ``cfg.seed``; return it and its training loss every ``log_every`` steps."""
    with deterministic(cfg.seed):
        model = TinyTransformer(cfg, scheme)
        data = torch.Generator().manual_seed(cfg.seed + 1)
        optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=0.0)
        losses = []
        for step in range(cfg.steps):
            ids, targets = batch(cfg, cfg.train_len, cfg.batch_size, data)
            loss = nn.functional.cross_entropy(model(ids).flatten(0, 1), targets.flatten(), ignore_index=-1)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if step % cfg.log_every == 0 or step == cfg.steps - 1:
                losses.append(loss.item())
    return model, losses


@torch.no_grad()
def accuracy_by_position(model: TinyTransformer, cfg: Config, T: int) -> torch.Tensor:
    """The fraction of correct predictions at each position ``t = k .. T-1``, shape ``(T - k,)``.

    Evaluated on ``cfg.eval_sequences`` fresh sequences from a generator seeded by ``cfg.seed``
    and ``T``, the same for every scheme.
    """
    with deterministic(cfg.seed):
        ids, targets = batch(cfg, T, cfg.eval_sequences, torch.Generator().manual_seed(10_000 * cfg.seed + T))
        correct = model.eval()(ids).argmax(-1) == targets
        model.train()
    return correct[:, cfg.k:].double().mean(0)


def run(cfg: Config, schemes: Sequence[str] = SCHEMES) -> dict:
    """Train and evaluate each scheme; a JSON-ready dict of losses and accuracies.

    ``accuracy[scheme][str(T)]`` is the accuracy over all positions ``k .. T-1`` of length
    ``T``; ``beyond[scheme][str(T)]`` only over positions ``>= train_len`` (those never seen in
    training); ``by_position[scheme]`` the accuracy at each position of the longest length.
    """
    result = {"config": dataclasses.asdict(cfg), "loss": {}, "accuracy": {}, "beyond": {},
              "by_position": {}, "seconds": {}}
    for scheme in schemes:
        start = time.perf_counter()
        model, losses = train(cfg, scheme)
        result["seconds"][scheme] = round(time.perf_counter() - start, 2)
        result["loss"][scheme] = [round(x, 4) for x in losses]
        result["accuracy"][scheme], result["beyond"][scheme] = {}, {}
        for length in cfg.eval_lens:
            acc = accuracy_by_position(model, cfg, length)
            result["accuracy"][scheme][str(length)] = round(float(acc.mean()), 4)
            if length > cfg.train_len:
                result["beyond"][scheme][str(length)] = round(float(acc[cfg.train_len - cfg.k:].mean()), 4)
            if length == max(cfg.eval_lens):
                result["by_position"][scheme] = [round(float(a), 4) for a in acc]
    return result


#: The smallest configuration: the one chapter 12 runs live and the tests re-run.
SMALL = Config()
#: The sweep: more steps, several seeds, longer evaluation.
SWEEP = dataclasses.replace(SMALL, steps=1500, eval_lens=(32, 64, 128, 256))
SWEEP_SEEDS = (0, 1, 2)


def sweep(path: Path = SWEEP_PATH, seeds: Sequence[int] = SWEEP_SEEDS) -> dict:
    """Run :data:`SMALL` once and :data:`SWEEP` for every seed; write the results to ``path``."""
    from tokvec.bench.common import describe

    results = describe("python -m tokvec.experiment")
    results["small"] = run(SMALL)
    results["sweep"] = [run(dataclasses.replace(SWEEP, seed=s)) for s in seeds]
    path.write_text(json.dumps(results, indent=1) + "\n")
    return results


def load_sweep(path: Path = SWEEP_PATH) -> dict:
    """The committed results of :func:`sweep`."""
    return json.loads(path.read_text())


def main() -> None:
    """Run :func:`sweep`, print the accuracies and where the file went."""
    start = time.perf_counter()
    results = sweep()
    minutes = (time.perf_counter() - start) / 60
    for entry in results["sweep"]:
        print(f"seed {entry['config']['seed']}:", {s: entry["accuracy"][s] for s in SCHEMES})
    print(f"wrote {SWEEP_PATH} in {minutes:.1f} min")


if __name__ == "__main__":
    main()

