"""Do positions matter? Tiny attention models trained with six position schemes, on a CPU.

The experiment chapter, "An experiment: do positions matter?" (``position_experiment``), runs the smallest
configuration live and plots the sweep stored in ``data/position-sweep.json``, which
``python -m tokvec.experiment`` (or ``experiments/position_sweep.py``) writes.

The task needs order: the input is a sequence of random tokens, and at every position
``t >= k`` the model must output the token ``k`` places back, ``x[t - k]``. Two baselines say
what a model gets without order (:func:`order_blind_accuracy`):

* *context-blind*: a model that sees only the current token is right ``1 / vocab_size`` of the
  time, since the tokens are independent;
* *order-blind*: a model that sees *which* tokens came before, as a bag, but not their order,
  does better, because the target is one of them: guessing the most frequent earlier token is
  right ``E[max count] / t`` of the time at position ``t`` (53 % at ``t = 2`` for 16 tokens).

Each scheme gets the same model, data, initial weights and budget:

* ``"none"``: token embeddings only (a causal mask, but no positional signal);
* ``"none+bos"``: the same, with a beginning-of-sequence token in front of every input, the
  construction by which Kazemnejad et al. (2023) show that a causal model without positions
  can recover absolute positions;
* ``"learned"``: a trained table of absolute positions added at the input, as in GPT-2
  (:class:`tokvec.layers.LearnedTransformerEmbedding`);
* ``"sinusoidal"``: the fixed table of Vaswani et al. added at the input
  (:class:`tokvec.layers.TransformerEmbedding`);
* ``"rope"``: queries and keys rotated in every layer (:func:`tokvec.attention.rope`);
* ``"alibi"``: a linear distance penalty on the scores of every layer
  (:func:`tokvec.attention.alibi_bias`).

Fairness: for one seed every scheme starts from the same token table, attention, MLP, norm and
read-out weights (:func:`build`); only what a scheme adds (the learned position table, the
BOS row) is its own. The sinusoidal layer multiplies its token table by ``sqrt(d_model)``, so
that table gets a learning rate divided by ``sqrt(d_model)``: the same effective Adam step as
the other schemes' tables. Heads of width 8 give RoPE four frequencies only.

A trained RoPE model can also be read with other frequencies, without retraining: the scaling
rules that released models use to read past their training length (position interpolation,
NTK-aware and dynamic NTK scaling, YaRN; :func:`tokvec.attention.rope_frequencies`), through
``evaluate(..., rope_scaling=..., rope_base=...)``, :func:`scaled_rope` and :func:`rope_rules`.

Models are trained on sequences of ``train_len`` tokens and evaluated on one longer length,
``max(eval_lens)``; a causal model's output at ``t`` depends only on tokens ``0..t``, so the
accuracy "at length ``T``" is the mean over positions ``k..T-1`` of the same sequences. The
learned table is built with ``max(eval_lens)`` rows so that longer inputs can be evaluated at
all; the rows past ``train_len`` never receive a gradient.

Everything runs on the CPU, in one thread per run, with ``torch.use_deterministic_algorithms``,
from fixed seeds: the same configuration gives the same numbers on every run on the same
machine, whether the runs go one after the other or in parallel processes.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import json
import math
import multiprocessing
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import torch
from torch import nn

from tokvec import validate
from tokvec.attention import alibi_bias, rope, scores
from tokvec.layers import LearnedTransformerEmbedding, TransformerEmbedding

__all__ = ["ALIBI_WINDOWS", "CONTROLS_PATH", "OFFSETS", "OFFSET_SCHEMES", "PAIR_CONTROLS", "SCHEMES", "SMALL",
           "SWEEP", "SWEEP_PATH", "SWEEP_SEEDS", "Config", "TinyTransformer", "ablated", "alias_offsets",
           "attention_weights", "batch", "build", "cliff", "controls", "deterministic", "eval_batch", "evaluate",
           "head_profile", "load_controls", "load_sweep", "main", "offset_mask", "order_blind_accuracy",
           "rope_per_pair", "rope_rules", "run", "scaled_rope", "sweep", "train", "window_mask"]

SCHEMES = ("none", "none+bos", "learned", "sinusoidal", "rope", "alibi")
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
    eval_sequences: int = 64                     # sequences of length max(eval_lens)
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


def order_blind_accuracy(vocab_size: int, n_max: int) -> np.ndarray:
    """The best accuracy without order: ``E[max count] / n`` for ``n = 1 .. n_max`` earlier tokens.

    At position ``t`` the target ``x[t - k]`` is one of the ``n = t`` earlier tokens
    ``x[0..t-1]``; given only which tokens those are (a bag), every earlier position is equally
    likely to be the target, so the best guess is the most frequent earlier token, right
    ``max count / n`` of the time. Its expectation uses ``E[M] = sum_c P(M > c)``, with
    ``P(M <= c)`` (every count at most ``c``) computed exactly, category by category:
    ``p_v(n) = sum_j Binomial(n, j; 1/v) p_{v-1}(n - j)`` over ``j <= c``. Float64 throughout;
    returns an array of shape ``(n_max,)``, entry ``n - 1`` for ``n`` earlier tokens.
    """
    V, N = validate.positive_int(vocab_size, "vocab_size"), validate.positive_int(n_max, "n_max")
    n = np.arange(N + 1)
    pmf = []                                                  # pmf[v-1][n, j] = Binomial(n, j; 1/v)
    for v in range(1, V + 1):
        table = np.zeros((N + 1, N + 1))
        table[0, 0] = 1.0
        for row in range(1, N + 1):
            table[row, 0] = table[row - 1, 0] * (1 - 1 / v)
            table[row, 1:] = table[row - 1, 1:] * (1 - 1 / v) + table[row - 1, :-1] / v
        pmf.append(table)
    back = n[:, None] - n[None, :]                            # (N+1, N+1): n - j
    expected = np.zeros(N + 1)
    for c in range(N + 1):
        p = (n == 0).astype(float)                            # p_0(n): no category, no tokens
        j_ok = (back >= 0) & (n[None, :] <= c)
        for v in range(1, V + 1):
            p = (pmf[v - 1] * np.where(j_ok, p[np.clip(back, 0, N)], 0.0)).sum(1)
        tail = 1.0 - p                                        # P(M > c), shape (N+1,)
        expected += tail
        if tail.max() < 1e-17:
            break
    return expected[1:] / n[1:]


class _Attention(nn.Module):
    """Causal multi-head self-attention; positions enter only if the scheme puts them here."""

    def __init__(self, cfg: Config, scheme: str):
        super().__init__()
        self.h, self.scheme = cfg.n_heads, scheme
        # RoPE's base, scaling rule and per-pair divisors; only scaled_rope changes them
        self.rope_base, self.rope_scaling, self.rope_divide = 10000.0, None, None
        self.silent: frozenset[int] = frozenset()      # heads whose output is zeroed (ablated)
        self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model, bias=False)
        self.out = nn.Linear(cfg.d_model, cfg.d_model, bias=False)

    def rotate(self, x: torch.Tensor) -> torch.Tensor:
        """RoPE with this layer's rule: the trained one unless :func:`scaled_rope` set another."""
        if self.rope_divide is not None:
            return rope_per_pair(x, self.rope_divide, base=self.rope_base)
        return rope(x, base=self.rope_base, scaling=self.rope_scaling)

    def forward(self, x: torch.Tensor, window: int | None = None, keep: list | None = None,
                hide: torch.Tensor | None = None) -> torch.Tensor:
        B, T, d = x.shape
        qkv = self.qkv(x).view(B, T, 3, self.h, d // self.h)
        q, k, v = qkv.permute(2, 0, 3, 1, 4)                                  # each (B, h, T, d_h)
        if self.scheme == "rope":
            q, k = self.rotate(q), self.rotate(k)
        s = scores(q, k)                                                      # (B, h, T, T)
        if self.scheme == "alibi":
            s = s + alibi_bias(self.h, T)                                     # causal mask included
        else:
            s = s.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf"))
        if window is not None:
            s = s.masked_fill(window_mask(T, window), float("-inf"))          # keys too far back
        if hide is not None:
            s = s.masked_fill(hide[:T, :T], float("-inf"))                    # chosen offsets
        weights = torch.softmax(s, dim=-1)                                    # (B, h, T, T)
        if keep is not None:
            keep.append(weights)
        y = weights @ v                                                       # (B, h, T, d_h)
        if self.silent:                                                       # an ablation
            y = y.masked_fill(torch.tensor([h in self.silent for h in range(self.h)])[:, None, None], 0.0)
        return self.out(y.transpose(1, 2).reshape(B, T, d))


def window_mask(T: int, window: int) -> torch.Tensor:
    """``(T, T)`` booleans, True where key ``j`` is ``window`` or more places before query ``i``."""
    i = torch.arange(T)
    return (i[:, None] - i[None, :]) >= validate.positive_int(window, "window")


def offset_mask(T: int, offsets: Sequence[int]) -> torch.Tensor:
    """``(T, T)`` booleans, True where key ``j`` is one of ``offsets`` places before query ``i``."""
    i = torch.arange(T)
    wanted = torch.tensor([validate.positive_int(o, "offsets") for o in offsets], dtype=torch.long)
    return torch.isin(i[:, None] - i[None, :], wanted)


def rope_per_pair(x: torch.Tensor, divide: Sequence[float], base: float = 10000.0) -> torch.Tensor:
    """RoPE with pair ``i`` turned ``divide[i]`` times slower: a control that slows chosen pairs only.

    The experiment chapter slows pair 1 alone, leaving pair 0 (and so every offset that aliases the target on
    pair 0) as trained. Each pair ``(2i, 2i+1)`` of ``x`` (``(..., T, d)``, adjacent pairs) is a
    RoPE of two features at the fractional positions ``m theta_i / divide[i]``: with two features
    :func:`tokvec.attention.rope` turns by one radian per position, so the angle is
    ``m theta_i / divide[i]``, computed in float64 as ``rope`` computes its angles.
    """
    d = x.shape[-1]
    if len(divide) != d // 2 or not all(isinstance(v, (int, float)) and v > 0 for v in divide):
        raise ValueError(f"divide must hold one positive divisor per pair ({d // 2} for d = {d}), got {divide!r}")
    theta = validate.base(base) ** (-2.0 * torch.arange(d // 2, dtype=torch.float64) / d)
    m = torch.arange(x.shape[-2], dtype=torch.float64)
    return torch.cat([rope(x[..., 2 * i:2 * i + 2], m * theta[i] / divide[i]) for i in range(d // 2)], dim=-1)


class _Block(nn.Module):
    def __init__(self, cfg: Config, scheme: str):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(cfg.d_model), nn.LayerNorm(cfg.d_model)
        self.attention = _Attention(cfg, scheme)
        self.mlp = nn.Sequential(nn.Linear(cfg.d_model, 4 * cfg.d_model), nn.GELU(),
                                 nn.Linear(4 * cfg.d_model, cfg.d_model))

    def forward(self, x: torch.Tensor, window: int | None = None, keep: list | None = None,
                hide: torch.Tensor | None = None) -> torch.Tensor:
        x = x + self.attention(self.norm1(x), window, keep, hide)
        return x + self.mlp(self.norm2(x))


class TinyTransformer(nn.Module):
    """A decoder-only transformer of ``n_layers`` pre-norm blocks; ``scheme`` is one of :data:`SCHEMES`.

    ``forward(ids, window=None, keep=None, hide=None)``: ``window`` masks the keys ``window`` or
    more places back in every layer, ``hide`` the keys at the given offsets; ``keep``, a list,
    receives each layer's attention weights ``(B, h, T, T)``.
    """

    def __init__(self, cfg: Config, scheme: str):
        super().__init__()
        if scheme not in SCHEMES:
            raise ValueError(f"scheme must be one of {', '.join(SCHEMES)}; got {scheme!r}")
        self.scheme, self.vocab_size = scheme, cfg.vocab_size
        max_len = max(cfg.eval_lens)
        if scheme == "learned":
            self.embed = LearnedTransformerEmbedding(cfg.vocab_size, cfg.d_model, max_len, dropout=0.0)
        elif scheme == "sinusoidal":
            self.embed = TransformerEmbedding(cfg.vocab_size, cfg.d_model, max_len, dropout=0.0)
        else:                                            # "none+bos": one more row, the BOS token
            self.embed = nn.Embedding(cfg.vocab_size + (scheme == "none+bos"), cfg.d_model)
        self.blocks = nn.ModuleList(_Block(cfg, scheme) for _ in range(cfg.n_layers))
        self.norm = nn.LayerNorm(cfg.d_model)
        self.head = nn.Linear(cfg.d_model, cfg.vocab_size)

    @property
    def token_table(self) -> nn.Parameter:
        """The trained token table (for "sinusoidal", the one multiplied by ``sqrt(d_model)``)."""
        return self.embed.weight if isinstance(self.embed, nn.Embedding) else self.embed.token.weight

    def forward(self, ids: torch.Tensor, window: int | None = None, keep: list | None = None,
                hide: Sequence[int] | None = None) -> torch.Tensor:
        if self.scheme == "none+bos":
            bos = torch.full_like(ids[:, :1], self.vocab_size)
            ids = torch.cat((bos, ids), dim=1)           # (B, T + 1)
        x = self.embed(ids)                              # (B, T, d)
        hidden = None if hide is None else offset_mask(ids.shape[1], hide)    # (T, T)
        for block in self.blocks:
            x = block(x, window, keep, hidden)
        logits = self.head(self.norm(x))                 # (B, T, vocab_size)
        if self.scheme == "none+bos":
            logits = logits[:, 1:]                       # no prediction at the BOS token
            if keep is not None:
                keep[-len(self.blocks):] = [w[..., 1:, 1:] for w in keep[-len(self.blocks):]]
        return logits


def build(cfg: Config, scheme: str) -> TinyTransformer:
    """The ``scheme`` model with the initial weights that every scheme shares for ``cfg.seed``.

    The token table (its first ``vocab_size`` rows; for "sinusoidal" divided by ``sqrt(d_model)``,
    so that the layer's output starts the same), the attention, MLP, norm and read-out weights
    are those of the ``"none"`` model drawn from ``cfg.seed``; what only this scheme has (the
    learned position table, the BOS row) is drawn next, from the same generator.
    """
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(cfg.seed)
        shared = TinyTransformer(cfg, "none").state_dict()
        model = TinyTransformer(cfg, scheme)
    scale = model.embed.scale if scheme == "sinusoidal" else 1.0
    with torch.no_grad():
        model.token_table[:cfg.vocab_size] = shared.pop("embed.weight") / scale
        missing = model.load_state_dict(shared, strict=False).missing_keys
    assert all(name.startswith("embed.") for name in missing), missing
    return model


def train(cfg: Config, scheme: str) -> tuple[TinyTransformer, list[float]]:
    """Train one model from ``cfg.seed``; return it and its training loss every ``log_every`` steps."""
    with deterministic(cfg.seed):
        model = build(cfg, scheme)
        data = torch.Generator().manual_seed(cfg.seed + 1)
        table = model.token_table
        lr_table = cfg.lr / model.embed.scale if scheme == "sinusoidal" else cfg.lr
        groups = [{"params": [p for p in model.parameters() if p is not table]},
                  {"params": [table], "lr": lr_table}]
        optimizer = torch.optim.AdamW(groups, lr=cfg.lr, weight_decay=0.0)
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


def eval_batch(cfg: Config) -> tuple[torch.Tensor, torch.Tensor]:
    """The evaluation sequences: the same for every scheme, of length ``max(eval_lens)``.

    Drawn from a generator seeded ``10000 * seed + T``, never the training stream (seeded
    ``seed + 1``): every measurement of the chapter is made on sequences no model trained on.
    """
    T = max(cfg.eval_lens)
    return batch(cfg, T, cfg.eval_sequences, torch.Generator().manual_seed(10_000 * cfg.seed + T))


@contextlib.contextmanager
def scaled_rope(model: TinyTransformer, scaling: dict | None = None, base: float | None = None,
                divide: Sequence[float] | None = None) -> Iterator[TinyTransformer]:
    """Read a trained RoPE ``model`` with a scaling rule applied, without retraining.

    Inside the ``with`` block every attention layer rotates queries and keys with
    ``rope(x, base=base, scaling=scaling)`` (:func:`tokvec.attention.rope`): ``scaling`` is a
    dict in Hugging Face's form, e.g. ``{"rope_type": "linear", "factor": 4.0}`` (position
    interpolation), and ``base`` replaces 10000 (NTK-aware scaling is a larger base). ``divide``
    (one divisor per pair, instead of ``scaling``) slows chosen pairs only
    (:func:`rope_per_pair`). All ``None``: the frequencies the model was trained with. The trained
    ones are restored on exit.
    """
    if model.scheme != "rope":
        raise ValueError(f"RoPE scaling applies to a 'rope' model only, got scheme {model.scheme!r}")
    if divide is not None and scaling is not None:
        raise ValueError("give scaling (a rule for every pair) or divide (one divisor per pair), not both")
    base = 10000.0 if base is None else base
    layers = [block.attention for block in model.blocks]
    d_head = layers[0].qkv.in_features // layers[0].h
    rope(torch.zeros(1, d_head), base=base, scaling=scaling)      # check them before changing anything
    if divide is not None:
        rope_per_pair(torch.zeros(1, d_head), divide, base)
    trained = [(layer.rope_base, layer.rope_scaling, layer.rope_divide) for layer in layers]
    try:
        for layer in layers:
            layer.rope_base, layer.rope_scaling, layer.rope_divide = base, scaling, divide
        yield model
    finally:
        for layer, (b, s, v) in zip(layers, trained):
            layer.rope_base, layer.rope_scaling, layer.rope_divide = b, s, v


@contextlib.contextmanager
def ablated(model: TinyTransformer, heads: Sequence[tuple[int, int]]) -> Iterator[TinyTransformer]:
    """Zero the output of the given ``(layer, head)`` pairs (0-based) inside the ``with`` block."""
    layers = [block.attention for block in model.blocks]
    chosen: dict[int, set[int]] = {}
    for layer, head in heads:
        if not (0 <= layer < len(layers) and 0 <= head < layers[0].h):
            raise ValueError(f"(layer, head) = ({layer}, {head}) is not in this model: layers 0..{len(layers) - 1}, "
                             f"heads 0..{layers[0].h - 1}")
        chosen.setdefault(layer, set()).add(head)
    try:
        for i, layer in enumerate(layers):
            layer.silent = frozenset(chosen.get(i, ()))
        yield model
    finally:
        for layer in layers:
            layer.silent = frozenset()


@torch.no_grad()
def evaluate(model: TinyTransformer, cfg: Config, window: int | None = None, *,
             hide: Sequence[int] | None = None, rope_scaling: dict | None = None,
             rope_base: float | None = None, rope_divide: Sequence[float] | None = None,
             silence: Sequence[tuple[int, int]] = ()) -> torch.Tensor:
    """The fraction of correct predictions at each position ``t = k .. max(eval_lens) - 1``.

    On :func:`eval_batch`'s sequences. ``window`` and ``hide`` mask keys (``window`` or more places
    back; at the offsets in ``hide``), ``silence`` zeroes the output of ``(layer, head)`` pairs
    (:func:`ablated`), and ``rope_scaling``, ``rope_base`` and ``rope_divide`` read a RoPE model
    with other frequencies (:func:`scaled_rope`); without them nothing changes. One forward pass
    over the whole evaluation sequence gives every position, except with ``rope_type``
    ``"dynamic"``, whose frequencies depend on the length of the input: there each position ``t``
    is predicted from its own prefix ``0..t``, with the frequencies of a sequence of ``t + 1``
    tokens, as a model that recomputes its keys at every step (without a cache) reads it.
    """
    dynamic = isinstance(rope_scaling, dict) and rope_scaling.get("rope_type") == "dynamic"
    with contextlib.ExitStack() as stack:
        stack.enter_context(deterministic(cfg.seed))
        if rope_scaling is not None or rope_base is not None or rope_divide is not None:
            stack.enter_context(scaled_rope(model, rope_scaling, rope_base, rope_divide))
        stack.enter_context(ablated(model, silence))
        ids, targets = eval_batch(cfg)
        model.eval()
        try:
            if dynamic:
                predicted = torch.stack([model(ids[:, :t + 1], window=window, hide=hide)[:, -1].argmax(-1)
                                         for t in range(ids.shape[1])], dim=1)
            else:
                predicted = model(ids, window=window, hide=hide).argmax(-1)
        finally:
            model.train()
    return (predicted == targets)[:, cfg.k:].double().mean(0)


def rope_rules(cfg: Config, factor: float = 4.0) -> dict[str, dict]:
    """The RoPE scaling rules the experiment chapter applies to a trained model: name -> keywords of :func:`evaluate`.

    With ``s = factor``, ``L = cfg.train_len`` and heads of width ``d``: ``"none"``, the trained
    frequencies; ``"PI"``, position interpolation, every ``theta_i / s``; ``"NTK-aware"``, the
    base raised to ``10000 * s**(d/(d-2))``, which keeps pair 0 and divides the slowest pair by
    ``s``; ``"dynamic NTK"``, the same rule with ``s = n / L`` for a sequence of ``n > L``
    tokens (``factor`` 1, nothing changes up to ``L``); ``"by-parts (paper)"``, NTK-by-parts as
    YaRN's paper defines it (section 3.2): pair ``i`` turns ``r = L / wavelength`` times within
    ``L`` and gets ``(1 - g) theta_i / s + g theta_i`` with ``g = (r - 1) / (32 - 1)`` clipped to
    ``[0, 1]``, which is transformers' ``"llama3"`` rule with ``low_freq_factor`` 1 and
    ``high_freq_factor`` 32; ``"NTK-by-parts"``, the same idea as YaRN's reference code (and
    transformers' ``"yarn"``) computes it, with a ramp linear in the pair index and clamped at
    pair 0, and the attention factor 1; ``"YaRN"``, that code with its attention factor
    ``0.1 ln s + 1`` on cos and sin.
    """
    d, L = cfg.d_model // cfg.n_heads, cfg.train_len
    return {
        "none": {},
        "PI": {"rope_scaling": {"rope_type": "linear", "factor": factor}},
        "NTK-aware": {"rope_base": 10000.0 * factor ** (d / (d - 2))},
        "dynamic NTK": {"rope_scaling": {"rope_type": "dynamic", "factor": 1.0, "max_position_embeddings": L}},
        "by-parts (paper)": {"rope_scaling": {"rope_type": "llama3", "factor": factor, "low_freq_factor": 1.0,
                                              "high_freq_factor": 32.0, "original_max_position_embeddings": L}},
        "NTK-by-parts": {"rope_scaling": {"rope_type": "yarn", "factor": factor, "original_max_position_embeddings": L,
                                          "attention_factor": 1.0}},
        "YaRN": {"rope_scaling": {"rope_type": "yarn", "factor": factor, "original_max_position_embeddings": L}},
    }


@torch.no_grad()
def attention_weights(model: TinyTransformer, cfg: Config, window: int | None = None, *,
                      hide: Sequence[int] | None = None) -> torch.Tensor:
    """Attention weights on the evaluation sequences, averaged over them: ``(layers, h, T, T)``.

    ``window`` and ``hide`` mask keys as in :func:`evaluate`.
    """
    with deterministic(cfg.seed):
        keep = []
        model.eval()(eval_batch(cfg)[0], window=window, keep=keep, hide=hide)
        model.train()
    return torch.stack([w.double().mean(0) for w in keep])


def cliff(by_position: Sequence[float], cfg: Config) -> int | None:
    """The first unseen position ``t >= train_len`` where the mean accuracy over ``t .. t+3``
    falls below 50 %; None if it never does."""
    acc = np.asarray(by_position)
    for t in range(cfg.train_len, cfg.k + len(acc) - 3):
        if acc[t - cfg.k: t - cfg.k + 4].mean() < 0.5:
            return t
    return None


def _by_offset(weights: torch.Tensor, queries: range) -> list:
    """Mean weight by offset ``0 .. max(queries)`` for the given queries: ``[layer][head][offset]``."""
    out = torch.zeros(weights.shape[:2] + (queries[-1] + 1,), dtype=torch.float64)
    for t in queries:
        out[..., :t + 1] += weights[..., t, :t + 1].flip(-1) / len(queries)
    return [[[round(float(x), 4) for x in head] for head in layer] for layer in out]


def _round(values, digits: int = 4) -> list:
    return [round(float(x), digits) for x in values]


def _train_and_measure(cfg: Config, scheme: str) -> dict:
    """One model: its losses, per-position accuracy (full and windowed) and attention summaries."""
    start = time.perf_counter()
    model, losses = train(cfg, scheme)
    full, windowed = evaluate(model, cfg), evaluate(model, cfg, window=cfg.train_len)
    weights = attention_weights(model, cfg)                         # (layers, h, T, T)
    T = max(cfg.eval_lens)
    i = torch.arange(T)
    far = (i[:, None] - i[None, :]) >= cfg.train_len                # keys train_len or more back
    last_quarter = slice(T - T // 4, T)
    mass_far = (weights * far).sum(-1)[..., last_quarter].mean(-1)  # (layers, h)
    out = {"loss": _round(losses), "by_position": _round(full), "windowed": _round(windowed),
           "far_mass": [_round(layer) for layer in mass_far], "seconds": 0.0}
    at = cliff(full, cfg)
    if scheme == "rope" and at is not None:
        out["cliff"] = at
        out["before_cliff"] = _by_offset(weights, range(at - 4, at))
        out["after_cliff"] = _by_offset(weights, range(at, at + 4))
    out["seconds"] = round(time.perf_counter() - start, 2)
    return out


def _summarise(cfg: Config, measured: dict) -> dict:
    """The JSON entry of one configuration: accuracy at each length and on the unseen positions."""
    result = {"config": dataclasses.asdict(cfg), "accuracy": {}, "unseen": {}, "windowed_unseen": {}}
    for scheme, m in measured.items():
        acc = np.asarray(m["by_position"])
        result["accuracy"][scheme] = {str(T): round(float(acc[:T - cfg.k].mean()), 4) for T in cfg.eval_lens}
        result["unseen"][scheme] = {str(T): round(float(acc[cfg.train_len - cfg.k:T - cfg.k].mean()), 4)
                                    for T in cfg.eval_lens if cfg.train_len < T}
        windowed = np.asarray(m["windowed"])[cfg.train_len - cfg.k:]
        result["windowed_unseen"][scheme] = round(float(windowed.mean()), 4)
    for key in ("loss", "by_position", "windowed", "far_mass", "seconds"):
        result[key] = {scheme: m[key] for scheme, m in measured.items()}
    for key in ("cliff", "before_cliff", "after_cliff"):
        if key in measured.get("rope", {}):
            result[key] = measured["rope"][key]
    return result


def run(cfg: Config, schemes: Sequence[str] = SCHEMES) -> dict:
    """Train and evaluate each scheme, one after the other; a JSON-ready dict.

    ``accuracy[scheme][str(T)]`` is the accuracy over positions ``k .. T-1``; ``unseen[scheme]
    [str(T)]`` only over positions ``train_len .. T-1`` (never seen in training);
    ``by_position[scheme]`` the accuracy at each position ``k .. max(eval_lens) - 1`` and
    ``windowed[scheme]`` the same with the keys ``train_len`` or more places back masked;
    ``far_mass[scheme][layer][head]`` the attention weight on those keys, for queries in the last
    quarter of the sequence; for RoPE, ``cliff`` (see :func:`cliff`) and the attention weight by
    offset of the four queries before and the four from it.
    """
    return _summarise(cfg, {scheme: _train_and_measure(cfg, scheme) for scheme in schemes})


#: The smallest configuration: the one the experiment chapter runs live and the tests re-run.
SMALL = Config()
#: The sweep: longer training (2,000 steps), several seeds, longer evaluation.
SWEEP = dataclasses.replace(SMALL, steps=2000, eval_lens=(32, 64, 128, 256), eval_sequences=128,
                            log_every=50)
SWEEP_SEEDS = (0, 1, 2)
#: The offset sweep: the same, with the target further back, for three schemes.
OFFSETS = (8, 24)
OFFSET_SCHEMES = ("none", "rope", "alibi")


def _job(args: tuple[Config, str]) -> dict:
    return _train_and_measure(*args)


def sweep(path: Path = SWEEP_PATH, seeds: Sequence[int] = SWEEP_SEEDS, workers: int = 2) -> dict:
    """Run :data:`SMALL`, :data:`SWEEP` for every seed and every offset; write ``path``.

    The runs are independent and each is seeded and single-threaded, so they go to ``workers``
    processes; the results do not depend on how many.
    """
    from tokvec.bench.common import describe

    start = time.perf_counter()
    results = describe("python -m tokvec.experiment")
    configs = [(SMALL, SCHEMES)] + [(dataclasses.replace(SWEEP, seed=s), SCHEMES) for s in seeds]
    configs += [(dataclasses.replace(SWEEP, k=k, seed=s), OFFSET_SCHEMES) for k in OFFSETS for s in seeds]
    jobs = [(cfg, scheme) for cfg, schemes in configs for scheme in schemes]
    ctx = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(workers, mp_context=ctx) as pool:
        measured = dict(zip(jobs, pool.map(_job, jobs)))
    entries = [_summarise(cfg, {scheme: measured[cfg, scheme] for scheme in schemes}) for cfg, schemes in configs]
    results["workers"] = workers
    results["small"] = entries[0]
    results["sweep"] = [e for e in entries[1:] if e["config"]["k"] == SWEEP.k]
    results["offsets"] = [e for e in entries[1:] if e["config"]["k"] != SWEEP.k]
    n = max(SWEEP.eval_lens) - 1
    results["baselines"] = {"context_blind": 1 / SWEEP.vocab_size, "first_position": 1,
                            "order_blind": _round(order_blind_accuracy(SWEEP.vocab_size, n), 6)}
    results["minutes"] = round((time.perf_counter() - start) / 60, 1)
    path.write_text(json.dumps(results, indent=1) + "\n")
    return results


def load_sweep(path: Path = SWEEP_PATH) -> dict:
    """The committed results of :func:`sweep`."""
    return json.loads(path.read_text())


# --- the controls of the experiment chapter: which pair, which keys, which heads --------------------

CONTROLS_PATH = Path(__file__).parent / "data" / "position-controls.json"
#: RoPE read with chosen pairs slowed: pair 1 alone by 4 or by 2 (pair 0 and so its aliases
#: untouched), pairs 2-3, or pair 0 alone (the fast pair that points at the target)
PAIR_CONTROLS = {"pair 1 / 4": (1, 4, 1, 1), "pairs 2-3 / 4": (1, 1, 4, 4), "pair 1 / 2": (1, 2, 1, 1),
                 "pair 0 / 4": (4, 1, 1, 1)}
#: ALiBi read with every key ``w`` or more places back masked in both layers, for each ``w``
ALIBI_WINDOWS = (4, 8, 16, 32)


def alias_offsets(k: int, offsets: Sequence[int], tolerance: float = 0.5) -> list[int]:
    """The offsets ``d`` whose pair-0 angle is within ``tolerance`` radians of offset ``k``'s.

    Pair 0 turns by one radian per position (``theta_0 = 1`` for every base), so offset ``d`` has
    the angle of offset ``k`` again, modulo ``2 pi``, near ``d = k + 2 pi n``.
    """
    return [int(d) for d in offsets if abs(math.remainder(d - k, 2 * math.pi)) < tolerance]


@torch.no_grad()
def head_profile(model: TinyTransformer, cfg: Config, queries: range = range(8, 32), offsets: int = 9) -> dict:
    """Where each head puts its weight among the nearest keys, and whether the tokens move it.

    On :func:`eval_batch`'s sequences, for the queries ``t`` in ``queries`` (inside the training
    length): each head's weight on the keys ``0 .. offsets - 1`` places back, its mean and its
    standard deviation over all (sequence, query) pairs, ``[layer][head][offset]``; and, for
    offsets 1 and 2, its mean weight when that key holds the query's own token and when it does
    not. For an ALiBi model, also the weights its bias alone gives (``"bias_only"``, the softmax of
    ``-slope * offset`` over the ``t + 1`` keys, averaged over the queries) and each head's largest
    distance from them over every sequence, query and offset (``"largest_gap"``): a head whose
    weights do not move with the tokens is the bias alone, and its gap is near 0.
    """
    with deterministic(cfg.seed):
        ids, _ = eval_batch(cfg)
        keep = []
        model.eval()(ids, keep=keep)
        model.train()
    weights = torch.stack(keep).double()                                  # (layers, B, h, T, T)
    t = torch.tensor(list(queries))
    near = torch.stack([weights[..., t, t - o] for o in range(offsets)], -1)   # (layers, B, h, Q, offsets)
    flat = near.permute(0, 2, 1, 3, 4).flatten(2, 3)                      # (layers, h, B * Q, offsets)
    out = {"queries": [queries.start, queries.stop], "mean": flat.mean(2), "sd": flat.std(2),
           "same_token": [], "other_token": []}
    for o in (1, 2):
        same = (ids[:, t] == ids[:, t - o]).double()[None, :, None, :]    # (1, B, 1, Q)
        w = near[..., o]                                                  # (layers, B, h, Q)
        out["same_token"].append((w * same).sum((1, 3)) / same.sum())
        out["other_token"].append((w * (1 - same)).sum((1, 3)) / (1 - same).sum())
    for key in ("same_token", "other_token"):
        out[key] = torch.stack(out[key], -1)                              # (layers, h, 2): offsets 1, 2
    if model.scheme == "alibi":
        bias = torch.softmax(alibi_bias(weights.shape[2], weights.shape[-1]).double(), -1)   # (h, T, T)
        alone = torch.stack([bias[:, t, t - o] for o in range(offsets)], -1)               # (h, Q, offsets)
        out["bias_only"] = alone.mean(1)[None]                                             # (1, h, offsets)
        out["largest_gap"] = (near - alone[None, None]).abs().amax((1, 3, 4))[..., None]   # (layers, h, 1)
    return {key: value if key == "queries" else [[_round(head) for head in layer] for layer in value]
            for key, value in out.items()}


def _control_job(args: tuple[Config, str]) -> dict:
    """One sweep model, retrained, and every control of the experiment chapter that reads it."""
    cfg, scheme = args
    start = time.perf_counter()
    model, _ = train(cfg, scheme)
    out = {"seed": cfg.seed, "by_position": _round(evaluate(model, cfg))}
    if scheme == "rope":
        far = range(cfg.train_len, max(cfg.eval_lens))
        aliases = alias_offsets(cfg.k, far)
        out["aliases"] = aliases
        out["divide"] = {name: _round(evaluate(model, cfg, rope_divide=div)) for name, div in PAIR_CONTROLS.items()}
        hidden = evaluate(model, cfg, hide=aliases)
        out["hide_aliases"] = _round(hidden)
        at = cliff(hidden, cfg)                    # where it collapses with the aliases hidden
        if at is not None:
            out["hide_aliases_cliff"] = at
            weights = attention_weights(model, cfg, hide=aliases)           # (layers, h, T, T)
            out["hide_aliases_after_cliff"] = _by_offset(weights, range(at, at + 4))
        out["aliases_only"] = _round(evaluate(model, cfg, hide=[d for d in far if d not in aliases]))
    else:
        out["silenced"] = [[_round(evaluate(model, cfg, silence=[(layer, head)])) for head in range(cfg.n_heads)]
                           for layer in range(cfg.n_layers)]
        out["windows"] = {str(w): _round(evaluate(model, cfg, window=w)) for w in ALIBI_WINDOWS}
        out["profile"] = head_profile(model, cfg)
    out["seconds"] = round(time.perf_counter() - start, 2)
    return out


def controls(path: Path = CONTROLS_PATH, seeds: Sequence[int] = SWEEP_SEEDS, workers: int = 2) -> dict:
    """Retrain the sweep's RoPE and ALiBi models (``k = 2``) and run the experiment chapter's controls; write ``path``.

    For RoPE: the pair controls of :data:`PAIR_CONTROLS` (:func:`rope_per_pair`), and the keys at the
    unseen offsets that alias offset ``k`` on pair 0 (:func:`alias_offsets`) hidden, or every other
    unseen offset hidden; with the aliases hidden, the cliff (:func:`cliff`) and the attention by
    offset of the four queries from it. For ALiBi: every head silenced in turn (:func:`ablated`),
    the windows of :data:`ALIBI_WINDOWS` keys, and :func:`head_profile`. Every measurement is on
    :func:`eval_batch`'s sequences; the models are the sweep's (same seeds, same code), so their
    plain accuracies equal the sweep's.
    """
    from tokvec.bench.common import describe

    start = time.perf_counter()
    results = describe("python -m tokvec.experiment controls")
    jobs = [(dataclasses.replace(SWEEP, seed=s), scheme) for scheme in ("rope", "alibi") for s in seeds]
    ctx = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(workers, mp_context=ctx) as pool:
        measured = list(pool.map(_control_job, jobs))
    results["config"] = dataclasses.asdict(SWEEP) | {"seed": None}
    results["pair_controls"] = {name: list(div) for name, div in PAIR_CONTROLS.items()}
    results["alibi_windows"] = list(ALIBI_WINDOWS)
    for scheme in ("rope", "alibi"):
        results[scheme] = [m for (cfg, s), m in zip(jobs, measured) if s == scheme]
    results["workers"] = workers
    results["minutes"] = round((time.perf_counter() - start) / 60, 1)
    path.write_text(json.dumps(results, indent=1) + "\n")
    return results


def load_controls(path: Path = CONTROLS_PATH) -> dict:
    """The committed results of :func:`controls`."""
    return json.loads(path.read_text())


def main(argv: Sequence[str] | None = None) -> None:
    """Run :func:`sweep` (or, with the argument ``controls``, :func:`controls`); print where the file went."""
    import sys

    argv = sys.argv[1:] if argv is None else list(argv)
    if argv == ["controls"]:
        results = controls()
        print(f"wrote {CONTROLS_PATH} in {results['minutes']} min with {results['workers']} processes")
        return
    if argv:
        raise SystemExit(f"usage: python -m tokvec.experiment [controls]; got {' '.join(argv)}")
    results = sweep()
    for entry in results["sweep"] + results["offsets"]:
        cfg = entry["config"]
        unseen = {s: value[str(max(cfg["eval_lens"]))] for s, value in entry["unseen"].items()}
        print(f"k={cfg['k']} seed {cfg['seed']}:", unseen)
    print(f"wrote {SWEEP_PATH} in {results['minutes']} min with {results['workers']} processes")


if __name__ == "__main__":
    main()
