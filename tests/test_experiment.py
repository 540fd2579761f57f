"""tokvec.experiment: the task, the baselines, the models, fairness, determinism, the committed results."""

import dataclasses
import itertools
import math

import numpy as np
import pytest
import torch

from tokvec import experiment
from tokvec.attention import rope, rope_frequencies
from tokvec.experiment import SCHEMES, SMALL, Config, TinyTransformer

STORED = experiment.load_sweep()
TINY = dataclasses.replace(SMALL, d_model=16, n_heads=2, n_layers=1)


def test_targets_are_the_tokens_k_places_back_and_content_says_nothing():
    ids, targets = experiment.batch(SMALL, 40, 200, torch.Generator().manual_seed(0))
    k = SMALL.k
    assert ids.shape == targets.shape == (200, 40)
    assert bool((targets[:, :k] == -1).all())
    assert torch.equal(targets[:, k:], ids[:, :-k])
    # tokens are uniform and independent: the current token predicts the target 1 time in 16
    same = (ids[:, k:] == targets[:, k:]).double().mean()
    assert abs(float(same) - 1 / SMALL.vocab_size) < 0.01


# --- the baselines ---------------------------------------------------------------------------


def _enumerated_order_blind(V: int, n: int) -> float:
    """E[max count] / n over all V**n sequences of n earlier tokens, exactly."""
    total = sum(max(np.bincount(seq, minlength=V)) for seq in itertools.product(range(V), repeat=n))
    return total / V**n / n


@pytest.mark.parametrize("V", [1, 2, 3, 5])
def test_the_order_blind_formula_equals_exact_enumeration(V):
    n_max = 6 if V < 5 else 5
    formula = experiment.order_blind_accuracy(V, n_max)
    assert formula.shape == (n_max,)
    exact = [_enumerated_order_blind(V, n) for n in range(1, n_max + 1)]
    np.testing.assert_allclose(formula, exact, rtol=0, atol=1e-12)


def test_the_order_blind_formula_matches_a_brute_force_guesser_on_the_real_task():
    """Monte Carlo with a fixed seed: guess the most frequent earlier token, score against x[t-2]."""
    rng = np.random.default_rng(0)
    V, T, n = 16, 40, 40_000
    x = rng.integers(0, V, size=(n, T))
    counts = np.zeros((n, V), dtype=int)
    hits = np.zeros(T)
    for t in range(T):
        if t >= 2:
            best = counts.max(1, keepdims=True)
            # ties: each tied token is guessed with equal probability, so score the expectation
            hits[t] = ((counts[np.arange(n), x[:, t - 2]] == best[:, 0]) / (counts == best).sum(1)).mean()
        counts[np.arange(n), x[:, t]] += 1
    formula = experiment.order_blind_accuracy(V, T)[1:T - 1]        # t = 2 .. T-1: t earlier tokens
    assert np.abs(hits[2:] - formula).max() < 0.012                # about 4 standard errors
    assert formula[0] == pytest.approx(17 / 32, abs=1e-12)          # t = 2: both earlier tokens alike 1/16
    assert formula[0] > 1 / V and formula[-1] > 1 / V


def test_the_order_blind_formula_is_not_chance_and_falls_with_position():
    acc = experiment.order_blind_accuracy(16, 255)
    assert acc[0] == 1.0                                            # one earlier token: it is the target
    assert np.all(np.diff(acc) < 0) and acc[-1] > 1 / 16
    assert acc[1:31].mean() == pytest.approx(0.2206, abs=1e-4)
    assert acc[31:].mean() == pytest.approx(0.1067, abs=1e-4)


# --- the models ------------------------------------------------------------------------------


@pytest.mark.parametrize("scheme", SCHEMES)
def test_every_scheme_builds_a_causal_model(scheme):
    """Changing a later token never changes the logits at earlier positions."""
    with experiment.deterministic(0):
        model = experiment.build(TINY, scheme).eval()
        ids = torch.randint(0, TINY.vocab_size, (2, 20))
        changed = ids.clone()
        changed[:, 12:] = (changed[:, 12:] + 1) % TINY.vocab_size
        a, b = model(ids), model(changed)
    assert a.shape == (2, 20, TINY.vocab_size)
    assert torch.equal(a[:, :12], b[:, :12])
    assert not torch.allclose(a[:, 12:], b[:, 12:])


@pytest.mark.parametrize("scheme", ["none", "none+bos"])
def test_without_positions_one_layer_is_blind_to_order_at_the_last_position(scheme):
    with experiment.deterministic(1):
        model = experiment.build(TINY, scheme).eval()
        ids = torch.randint(0, TINY.vocab_size, (1, 12))
        shuffled = ids.clone()
        shuffled[0, :11] = ids[0, torch.randperm(11)]
        assert not torch.equal(shuffled, ids)
        assert torch.allclose(model(ids)[0, -1], model(shuffled)[0, -1], atol=1e-5)
        rope_model = experiment.build(TINY, "rope").eval()
        assert not torch.allclose(rope_model(ids)[0, -1], rope_model(shuffled)[0, -1], atol=1e-3)


def test_the_bos_token_is_a_row_of_its_own_and_gets_no_prediction():
    model = experiment.build(TINY, "none+bos")
    assert model.token_table.shape == (TINY.vocab_size + 1, TINY.d_model)
    keep = []
    assert model(torch.zeros(3, 7, dtype=torch.long), keep=keep).shape == (3, 7, TINY.vocab_size)
    assert keep[0].shape == (3, TINY.n_heads, 7, 7)


def test_the_window_mask_hides_exactly_the_keys_window_or_more_back():
    mask = experiment.window_mask(6, 2)
    i, j = torch.meshgrid(torch.arange(6), torch.arange(6), indexing="ij")
    assert torch.equal(mask, i - j >= 2)
    with pytest.raises(ValueError, match="window"):
        experiment.window_mask(6, 0)


@pytest.mark.parametrize("scheme", ["rope", "alibi", "learned"])
def test_a_windowed_model_ignores_tokens_window_or_more_back(scheme):
    with experiment.deterministic(2):
        model = experiment.build(TINY, scheme).eval()              # one layer: reach window - 1
        ids = torch.randint(0, TINY.vocab_size, (2, 30))
        far, near = ids.clone(), ids.clone()
        far[:, 20] = (far[:, 20] + 1) % TINY.vocab_size            # 5 before t = 25
        near[:, 21] = (near[:, 21] + 1) % TINY.vocab_size          # 4 before t = 25
        out = model(ids, window=5)[:, 25]
        assert torch.equal(out, model(far, window=5)[:, 25])
        assert not torch.allclose(out, model(near, window=5)[:, 25])
        assert not torch.allclose(out, model(far)[:, 25])          # without the window it sees it
        keep = []
        model(ids, window=5, keep=keep)
        assert torch.all(keep[0][..., experiment.window_mask(30, 5)] == 0)
        assert torch.equal(model(ids, window=30), model(ids))      # a window >= T masks nothing


def test_every_scheme_starts_from_the_same_shared_weights():
    cfg = dataclasses.replace(SMALL, seed=3)
    models = {scheme: experiment.build(cfg, scheme) for scheme in SCHEMES}
    reference = models["none"].state_dict()
    for scheme, model in models.items():
        state = model.state_dict()
        for name, value in reference.items():
            if not name.startswith("embed."):
                assert torch.equal(state[name], value), (scheme, name)
        table = model.token_table.detach()[:cfg.vocab_size]
        scale = model.embed.scale if scheme == "sinusoidal" else 1.0
        torch.testing.assert_close(table * scale, reference["embed.weight"])
    other = experiment.build(dataclasses.replace(cfg, seed=4), "rope").state_dict()
    assert not torch.equal(other["head.weight"], reference["head.weight"])
    again = experiment.build(cfg, "learned").state_dict()
    assert torch.equal(again["embed.position.weight"], models["learned"].state_dict()["embed.position.weight"])


def test_the_sinusoidal_token_table_gets_the_same_effective_step():
    """Its table is multiplied by sqrt(d_model), so its learning rate is divided by it: one Adam
    step then moves the layer's output by the same amount as the other schemes' tables."""
    cfg = dataclasses.replace(TINY, steps=1, log_every=1)
    moved = {}
    for scheme in ("none", "sinusoidal"):
        start = experiment.build(cfg, scheme).token_table.detach().clone()
        model, _ = experiment.train(cfg, scheme)
        scale = model.embed.scale if scheme == "sinusoidal" else 1.0
        moved[scheme] = float(((model.token_table.detach() - start) * scale).abs().max())
    assert moved["sinusoidal"] == pytest.approx(moved["none"], rel=1e-3)
    assert moved["none"] == pytest.approx(cfg.lr, rel=1e-3)        # Adam's first step: lr per entry


def test_deterministic_restores_the_global_state():
    threads, flag = torch.get_num_threads(), torch.are_deterministic_algorithms_enabled()
    before = torch.random.get_rng_state()
    with experiment.deterministic(5):
        assert torch.get_num_threads() == 1 and torch.are_deterministic_algorithms_enabled()
        torch.rand(3)
    assert torch.get_num_threads() == threads
    assert torch.are_deterministic_algorithms_enabled() == flag
    assert torch.equal(torch.random.get_rng_state(), before)


def test_training_twice_gives_identical_losses():
    cfg = dataclasses.replace(SMALL, steps=15, log_every=5)
    _, first = experiment.train(cfg, "rope")
    _, second = experiment.train(cfg, "rope")
    assert first == second and len(first) == 4


def test_the_cliff_is_the_first_unseen_position_where_accuracy_falls_below_half():
    acc = [1.0] * 40 + [0.1] * 20                                  # positions 2 .. 61
    assert experiment.cliff(acc, SMALL) == 41                       # mean over t .. t+3 below 0.5
    assert experiment.cliff([1.0] * 60, SMALL) is None


def test_a_tiny_run_has_every_field_and_consistent_accuracies():
    cfg = dataclasses.replace(TINY, steps=3, log_every=1, eval_lens=(32, 40), eval_sequences=4)
    result = experiment.run(cfg, schemes=("none", "rope"))
    for scheme in ("none", "rope"):
        acc = result["by_position"][scheme]
        assert len(acc) == len(result["windowed"][scheme]) == 40 - cfg.k
        assert result["accuracy"][scheme]["40"] == pytest.approx(np.mean(acc), abs=1e-4)
        assert result["accuracy"][scheme]["32"] == pytest.approx(np.mean(acc[:30]), abs=1e-4)
        assert result["unseen"][scheme]["40"] == pytest.approx(np.mean(acc[30:]), abs=1e-4)
        assert np.array(result["far_mass"][scheme]).shape == (cfg.n_layers, cfg.n_heads)


@pytest.mark.slow
def test_the_smallest_configuration_reproduces_the_committed_accuracies():
    """Chapter 12 runs this live; the committed file must be what this code computes."""
    assert STORED["small"]["config"] == dataclasses.asdict(SMALL) | {"eval_lens": list(SMALL.eval_lens)}
    live = experiment.run(SMALL)
    for scheme in SCHEMES:
        for T, acc in STORED["small"]["accuracy"][scheme].items():
            assert live["accuracy"][scheme][T] == pytest.approx(acc, abs=0.01), (scheme, T)
        assert live["loss"][scheme][0] == pytest.approx(STORED["small"]["loss"][scheme][0], rel=1e-4)


# --- RoPE scaling at inference --------------------------------------------------------------

# a RoPE model that has seen a few steps, evaluated on short sequences: quick, and not symmetric
SCALED = dataclasses.replace(TINY, steps=20, eval_lens=(32, 48), eval_sequences=8)


@pytest.fixture(scope="module")
def rope_model():
    return experiment.train(SCALED, "rope")[0]


def test_rope_scaling_none_is_the_unscaled_evaluation_bit_for_bit(rope_model):
    plain = experiment.evaluate(rope_model, SCALED)
    for kwargs in ({"rope_scaling": None}, {"rope_base": 10000.0},
                   {"rope_scaling": {"rope_type": "default"}},
                   {"rope_scaling": {"rope_type": "linear", "factor": 1.0}}):
        assert torch.equal(experiment.evaluate(rope_model, SCALED, **kwargs), plain), kwargs
    windowed = experiment.evaluate(rope_model, SCALED, window=8)
    assert torch.equal(experiment.evaluate(rope_model, SCALED, window=8, rope_base=10000.0), windowed)
    ids = experiment.batch(SCALED, 48, 4, torch.Generator().manual_seed(3))[0]
    with torch.no_grad():
        logits = rope_model(ids)
        with experiment.scaled_rope(rope_model, {"rope_type": "linear", "factor": 1.0}):
            assert torch.equal(rope_model(ids), logits)       # linear with factor 1: the same bits


def _rotated(x: torch.Tensor, theta: torch.Tensor, factor: float = 1.0) -> torch.Tensor:
    """Adjacent pairs of x (..., T, d) rotated by position * theta_i, written out by hand."""
    angles = torch.arange(x.shape[-2], dtype=torch.float64)[:, None] * theta[None, :]
    cos, sin = (factor * angles.cos()).float(), (factor * angles.sin()).float()
    a, b = x[..., 0::2], x[..., 1::2]
    return torch.stack((a * cos - b * sin, b * cos + a * sin), dim=-1).flatten(-2)


_TRAINED = 10000.0 ** (-torch.arange(4, dtype=torch.float64) / 4)      # d_head = 8: 1, 0.1, 0.01, 0.001
_RULES = experiment.rope_rules(SCALED)
# YaRN's NTK-by-parts as its paper writes it (section 3.2): r = L / wavelength turns within L = 32,
# gamma = (r - alpha) / (beta - alpha) clipped to [0, 1] with alpha = 1, beta = 32, s = 4
_R = 32 * _TRAINED / (2 * np.pi)
_GAMMA = ((_R - 1) / (32 - 1)).clamp(0, 1)
_PAPER_BY_PARTS = (1 - _GAMMA) / 4 + _GAMMA                            # pair 0: 0.349, the rest 0.25


@pytest.mark.parametrize("rule,theta,factor", [
    ("none", _TRAINED, 1.0),
    ("PI", _TRAINED / 4, 1.0),                                          # every pair slowed by s
    ("NTK-aware", _TRAINED / 4 ** (torch.arange(4) / 3), 1.0),          # pair i by s**(2i/(d-2))
    ("dynamic NTK", _TRAINED / (48 / 32) ** (torch.arange(4) / 3), 1.0),  # s = n / L at n = 48
    ("by-parts (paper)", _TRAINED * _PAPER_BY_PARTS, 1.0),             # YaRN's eq.: a ramp in r
    ("NTK-by-parts", _TRAINED / torch.tensor([1.0, 4, 4, 4]), 1.0),    # pair 0 kept, the rest / s
    ("YaRN", _TRAINED / torch.tensor([1.0, 4, 4, 4]), 0.1 * np.log(4) + 1),
])
def test_a_scaled_model_rotates_queries_and_keys_by_the_rules_frequencies(rope_model, monkeypatch, rule,
                                                                          theta, factor):
    """The rotated queries and keys that reach the scores, against rope and a rotation by hand."""
    seen = []
    monkeypatch.setattr(experiment, "scores", lambda q, k: seen.append((q, k)) or q @ k.transpose(-2, -1) / 8**0.5)
    layer, T = rope_model.blocks[0].attention, 48
    x = torch.randn(2, T, SCALED.d_model, generator=torch.Generator().manual_seed(0))
    q, k, _ = layer.qkv(x).view(2, T, 3, SCALED.n_heads, 8).permute(2, 0, 3, 1, 4)
    kwargs = _RULES[rule]
    with torch.no_grad(), experiment.scaled_rope(rope_model, kwargs.get("rope_scaling"), kwargs.get("rope_base")):
        layer(x)
    (q_seen, k_seen), = seen
    base, scaling = kwargs.get("rope_base", 10000.0), kwargs.get("rope_scaling")
    assert torch.equal(q_seen, rope(q.detach(), base=base, scaling=scaling))
    assert torch.equal(k_seen, rope(k.detach(), base=base, scaling=scaling))
    torch.testing.assert_close(q_seen, _rotated(q.detach(), theta, factor), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(k_seen, _rotated(k.detach(), theta, factor), rtol=1e-5, atol=1e-5)
    assert (layer.rope_base, layer.rope_scaling) == (10000.0, None)      # the trained rule is back


def test_dynamic_ntk_reads_each_position_from_its_own_prefix(rope_model):
    dynamic = _RULES["dynamic NTK"]
    plain = experiment.evaluate(rope_model, SCALED)
    scaled = experiment.evaluate(rope_model, SCALED, **dynamic)
    L, k = SCALED.train_len, SCALED.k
    assert torch.equal(scaled[:L - k], plain[:L - k])                  # nothing changes up to L
    ids, targets = experiment.eval_batch(SCALED)
    t = 45                                                              # past L: the prefix 0..45
    with torch.no_grad(), experiment.scaled_rope(rope_model, dynamic["rope_scaling"]):
        guess = rope_model(ids[:, :t + 1])[:, -1].argmax(-1)
    assert scaled[t - k] == (guess == targets[:, t]).double().mean()


def test_every_rule_gives_one_accuracy_per_position_and_restores_the_model(rope_model):
    before = {name: value.clone() for name, value in rope_model.state_dict().items()}
    for rule, kwargs in _RULES.items():
        acc = experiment.evaluate(rope_model, SCALED, **kwargs)
        assert acc.shape == (48 - SCALED.k,) and bool(((acc >= 0) & (acc <= 1)).all()), rule
    for name, value in rope_model.state_dict().items():
        assert torch.equal(value, before[name]), name
    assert all((b.attention.rope_base, b.attention.rope_scaling) == (10000.0, None) for b in rope_model.blocks)


def test_scaled_rope_restores_the_trained_rule_after_an_error_and_refuses_bad_input(rope_model):
    with pytest.raises(RuntimeError), experiment.scaled_rope(rope_model, {"rope_type": "linear", "factor": 4.0}):
        raise RuntimeError
    assert all((b.attention.rope_base, b.attention.rope_scaling) == (10000.0, None) for b in rope_model.blocks)
    with pytest.raises(ValueError, match="factor"), experiment.scaled_rope(rope_model, {"rope_type": "linear"}):
        pass
    with pytest.raises(ValueError, match="'rope' model only"):
        experiment.evaluate(TinyTransformer(SCALED, "alibi"), SCALED, rope_base=40000.0)


def test_the_papers_by_parts_keeps_only_part_of_pair_0_where_the_code_keeps_all_of_it():
    """At d = 8 and L = 32 pair 0 turns 5.09 times within L, inside the paper's ramp (1 to 32 turns)."""
    assert float(_R[0]) == pytest.approx(5.093, abs=1e-3) and float(_R[1]) < 1
    assert float(_PAPER_BY_PARTS[0]) == pytest.approx(0.349, abs=1e-3)
    ratio = {rule: rope_frequencies(8, scaling=_RULES[rule]["rope_scaling"])[0] / _TRAINED
             for rule in ("by-parts (paper)", "NTK-by-parts")}
    torch.testing.assert_close(ratio["by-parts (paper)"], _PAPER_BY_PARTS, rtol=1e-12, atol=0)
    assert ratio["NTK-by-parts"].tolist() == [1.0, 0.25, 0.25, 0.25]


# --- the controls ----------------------------------------------------------------------------


def test_rope_per_pair_is_rope_and_slows_only_the_chosen_pairs():
    x = torch.randn(2, 4, 50, 8, generator=torch.Generator().manual_seed(0))
    assert torch.equal(experiment.rope_per_pair(x, (1, 1, 1, 1)), rope(x))
    by_parts = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32, "attention_factor": 1.0}
    assert torch.equal(experiment.rope_per_pair(x, (1, 4, 4, 4)), rope(x, scaling=by_parts))
    for divide in ((1, 4, 1, 1), (1, 1, 4, 4), (2, 1, 3, 1)):
        expected = _rotated(x, _TRAINED / torch.tensor(divide, dtype=torch.float64))
        torch.testing.assert_close(experiment.rope_per_pair(x, divide), expected, rtol=1e-5, atol=1e-5)
        kept = [i for i, v in enumerate(divide) if v == 1]                  # these pairs are untouched
        same = experiment.rope_per_pair(x, divide).unflatten(-1, (4, 2))[..., kept, :]
        assert torch.equal(same, rope(x).unflatten(-1, (4, 2))[..., kept, :])
    for bad in ((1, 4, 1), (1, 0, 1, 1), (1, -4, 1, 1)):
        with pytest.raises(ValueError, match="one positive divisor per pair"):
            experiment.rope_per_pair(x, bad)


def test_a_model_read_with_divided_pairs_rotates_by_them(rope_model):
    plain = experiment.evaluate(rope_model, SCALED)
    assert torch.equal(experiment.evaluate(rope_model, SCALED, rope_divide=(1, 1, 1, 1)), plain)
    by_parts = experiment.evaluate(rope_model, SCALED, rope_scaling=_RULES["NTK-by-parts"]["rope_scaling"])
    assert torch.equal(experiment.evaluate(rope_model, SCALED, rope_divide=(1, 4, 4, 4)), by_parts)
    assert all(b.attention.rope_divide is None for b in rope_model.blocks)           # restored
    linear = {"rope_type": "linear", "factor": 2.0}
    with pytest.raises(ValueError, match="not both"), experiment.scaled_rope(rope_model, linear, divide=(1,) * 4):
        pass


def test_the_aliases_of_offset_2_on_pair_0():
    assert experiment.alias_offsets(2, range(32, 61)) == [33, 40, 46, 52, 59]
    assert experiment.alias_offsets(2, range(0, 32)) == [2, 8, 15, 21, 27]         # 2 + 2 pi n, rounded
    assert experiment.alias_offsets(2, range(32, 61), tolerance=0.05) == [46]


@pytest.mark.parametrize("scheme", ["rope", "alibi"])
def test_hide_masks_exactly_the_keys_at_the_given_offsets(scheme):
    mask = experiment.offset_mask(6, [1, 3])
    i, j = torch.meshgrid(torch.arange(6), torch.arange(6), indexing="ij")
    assert torch.equal(mask, (i - j == 1) | (i - j == 3))
    with experiment.deterministic(2):
        model = experiment.build(TINY, scheme).eval()              # one layer: a hidden key is never read
        ids = torch.randint(0, TINY.vocab_size, (2, 30))
        hidden, seen = ids.clone(), ids.clone()
        hidden[:, 20] = (hidden[:, 20] + 1) % TINY.vocab_size      # 5 before t = 25
        seen[:, 21] = (seen[:, 21] + 1) % TINY.vocab_size          # 4 before t = 25
        out = model(ids, hide=[5, 7])[:, 25]
        assert torch.equal(out, model(hidden, hide=[5, 7])[:, 25])
        assert not torch.allclose(out, model(seen, hide=[5, 7])[:, 25])
        assert not torch.allclose(out, model(hidden)[:, 25])
        assert torch.equal(model(ids, hide=[]), model(ids))
    with pytest.raises(ValueError, match="offsets"):
        experiment.offset_mask(6, [0])


def test_a_silenced_head_contributes_nothing_and_comes_back():
    with experiment.deterministic(3):
        model = experiment.build(TINY, "alibi").eval()
        ids = torch.randint(0, TINY.vocab_size, (2, 20))
    layer = model.blocks[0].attention
    d_h = TINY.d_model // TINY.n_heads
    with torch.no_grad():
        plain = model(ids)
        values = slice(2 * TINY.d_model + d_h, 2 * TINY.d_model + 2 * d_h)      # head 1's value rows
        saved = layer.qkv.weight[values].clone()
        with experiment.ablated(model, [(0, 1)]):
            silenced = model(ids)
            layer.qkv.weight[values] += 1.0
            assert torch.equal(model(ids), silenced)                     # head 1 is not read
            layer.qkv.weight[values] = saved
        assert not torch.allclose(silenced, plain)
        assert torch.equal(model(ids), plain) and layer.silent == frozenset()
    with pytest.raises(ValueError, match=r"\(layer, head\) = \(1, 0\) is not in this model"), \
            experiment.ablated(model, [(1, 0)]):
        pass


def test_the_head_profile_of_a_head_that_ignores_content_is_its_bias():
    cfg = dataclasses.replace(TINY, eval_lens=(32,), eval_sequences=8)
    model = experiment.build(cfg, "alibi")
    profile = experiment.head_profile(model, cfg)
    assert np.array(profile["mean"]).shape == np.array(profile["sd"]).shape == (1, 2, 9)
    assert min(np.array(profile["largest_gap"]).ravel()) > 0.001            # random weights: content moves them
    with torch.no_grad():
        model.blocks[0].attention.qkv.weight[:2 * cfg.d_model] = 0.0       # q = k = 0: every score is the bias
    blind = experiment.head_profile(model, cfg)
    assert max(np.array(blind["largest_gap"]).ravel()) < 1e-6
    np.testing.assert_allclose(blind["mean"][0], blind["bias_only"][0], atol=1e-4)
    # same and other token differ only through the mix of query positions in each group
    np.testing.assert_allclose(blind["same_token"], blind["other_token"], atol=0.01)


@pytest.mark.parametrize("reference", [SMALL, experiment.SWEEP], ids=["small", "sweep"])
def test_no_evaluation_sequence_is_a_training_sequence(reference):
    """Every measurement (accuracies, controls, probes) reads sequences that training never drew."""
    for seed in experiment.SWEEP_SEEDS:
        cfg = dataclasses.replace(reference, seed=seed)
        data = torch.Generator().manual_seed(cfg.seed + 1)                 # the training stream, as train draws it
        trained = {tuple(row) for _ in range(cfg.steps)
                   for row in experiment.batch(cfg, cfg.train_len, cfg.batch_size, data)[0].tolist()}
        ids, _ = experiment.eval_batch(cfg)
        assert not any(tuple(row) in trained for row in ids[:, :cfg.train_len].tolist())
        # a probe drawn from the training generator, as chapter 12 once did, would be training data
        probe = experiment.batch(cfg, max(cfg.eval_lens), 8, torch.Generator().manual_seed(cfg.seed + 1))[0]
        assert tuple(probe[0, :cfg.train_len].tolist()) in trained


# --- the committed results -------------------------------------------------------------------


def _check_entry(entry, reference: Config, schemes=SCHEMES):
    cfg = entry["config"]
    expected = dataclasses.asdict(reference) | {"eval_lens": list(reference.eval_lens)}
    assert cfg == expected
    T = max(cfg["eval_lens"])
    assert set(entry["by_position"]) == set(schemes)
    for scheme in schemes:
        acc = np.array(entry["by_position"][scheme])
        assert acc.shape == (T - cfg["k"],) and len(entry["windowed"][scheme]) == T - cfg["k"]
        assert np.all((acc >= 0) & (acc <= 1))
        # the accuracy at each length is the mean over that prefix of the same sequences
        for length, value in entry["accuracy"][scheme].items():
            assert value == pytest.approx(acc[:int(length) - cfg["k"]].mean(), abs=1e-4)
        for length, value in entry["unseen"][scheme].items():
            assert value == pytest.approx(acc[cfg["train_len"] - cfg["k"]:int(length) - cfg["k"]].mean(), abs=1e-4)
        assert set(entry["unseen"][scheme]) == {str(L) for L in cfg["eval_lens"] if cfg["train_len"] < L}
        windowed = np.array(entry["windowed"][scheme])[cfg["train_len"] - cfg["k"]:]
        assert entry["windowed_unseen"][scheme] == pytest.approx(windowed.mean(), abs=1e-4)
        assert np.array(entry["far_mass"][scheme]).shape == (cfg["n_layers"], cfg["n_heads"])
        assert len(entry["loss"][scheme]) == (cfg["steps"] - 1) // cfg["log_every"] + 2
    if "cliff" in entry:
        at = entry["cliff"]
        assert at == experiment.cliff(entry["by_position"]["rope"], reference)
        for key in ("before_cliff", "after_cliff"):
            weights = np.array(entry[key])
            assert weights.shape[:2] == (cfg["n_layers"], cfg["n_heads"])
            assert np.allclose(weights.sum(-1), 1, atol=2e-3)     # each query's weights sum to 1


def test_the_committed_sweep_is_complete_and_consistent():
    _check_entry(STORED["small"], SMALL)
    sweep = STORED["sweep"]
    assert [entry["config"]["seed"] for entry in sweep] == list(experiment.SWEEP_SEEDS)
    for entry in sweep:
        _check_entry(entry, dataclasses.replace(experiment.SWEEP, seed=entry["config"]["seed"]))
        assert "cliff" in entry                                     # RoPE falls in every seed
    offsets = [(e["config"]["k"], e["config"]["seed"]) for e in STORED["offsets"]]
    assert offsets == [(k, s) for k in experiment.OFFSETS for s in experiment.SWEEP_SEEDS]
    for entry in STORED["offsets"]:
        cfg = entry["config"]
        _check_entry(entry, dataclasses.replace(experiment.SWEEP, k=cfg["k"], seed=cfg["seed"]),
                     experiment.OFFSET_SCHEMES)
    assert STORED["machine"]["cpu"] and STORED["versions"]["torch"].startswith("2.13.0")
    # the wall time and the processes are recorded; the time depends on what else the machine ran
    assert STORED["minutes"] > 0 and STORED["workers"] >= 1


def test_the_committed_baselines_are_the_formula():
    baselines = STORED["baselines"]
    assert baselines["context_blind"] == 1 / experiment.SWEEP.vocab_size
    n = max(experiment.SWEEP.eval_lens) - 1
    np.testing.assert_allclose(baselines["order_blind"],
                               experiment.order_blind_accuracy(experiment.SWEEP.vocab_size, n), atol=1e-6)


def test_the_chapters_claims_hold_in_the_committed_sweep():
    """What the prose says in words, checked on the file (the numbers are checked by the
    prose-numbers test): who beats the order-blind guess on unseen positions, and the controls."""
    sweep, order_blind = STORED["sweep"], np.array(STORED["baselines"]["order_blind"])
    k, L = experiment.SWEEP.k, experiment.SWEEP.train_len
    blind_unseen = order_blind[L - 1:].mean()                      # positions L .. 255
    for entry in sweep:
        unseen = {s: entry["unseen"][s]["256"] for s in SCHEMES}
        # learned and sinusoidal score below the order-blind guess on unseen positions: misled
        assert unseen["learned"] < blind_unseen and unseen["sinusoidal"] < blind_unseen
        assert unseen["alibi"] == max(unseen.values())
        # the windowed evaluation brings RoPE back: its failure is the far keys
        assert entry["windowed_unseen"]["rope"] > 0.9 > unseen["rope"]
        # ALiBi does better without the far keys; its steepest head looks at them least
        assert entry["windowed_unseen"]["alibi"] > unseen["alibi"]
        for layer in entry["far_mass"]["alibi"]:
            assert layer[0] == min(layer) and max(layer) >= 0.5
        # the model without positions extrapolates better than RoPE
        assert unseen["none"] > unseen["rope"]
        # RoPE's attention after the cliff goes to the aliases of offset 2 (2 + 2 pi n)
        layer2 = np.array(entry["after_cliff"])[1].mean(0)
        far = set(np.argsort(layer2[L:])[::-1][:2] + L)
        assert far <= {33, 34, 39, 40, 46, 47}, far
    # ALiBi fails when the target is far back; RoPE, windowed, never does
    for entry in STORED["offsets"]:
        assert entry["windowed_unseen"]["rope"] > 0.9
        if entry["config"]["k"] == 24:
            assert entry["unseen"]["alibi"]["256"] < 0.1
    del k


def test_the_chapters_per_position_claims_hold_in_the_committed_sweep():
    """RoPE steps down at t = 40 and collapses at t = 46 in every seed, then falls below the
    order-blind guess; none+bos holds a few positions; far aliases of k = 8 and 24 do no harm
    up to t = 63; ALiBi declines with the window of 32 keys too, less than with all keys."""
    order_blind = np.array(STORED["baselines"]["order_blind"])

    def band(curve, lo, hi, k=experiment.SWEEP.k):
        return float(np.mean(curve[lo - k:hi - k]))

    for entry in STORED["sweep"]:
        rope = entry["by_position"]["rope"]
        assert min(rope[32 - 2:39 - 2]) == 1.0                  # perfect up to t = 38
        assert rope[39 - 2] - rope[40 - 2] > 0.1              # the step at t = 40
        assert max(rope[40 - 2:46 - 2]) < 0.95 and max(rope[46 - 2:51 - 2]) < 0.25
        assert band(rope, 128, 256) < order_blind[127:].mean()
        assert band(entry["by_position"]["none+bos"], 32, 40) > 0.8
        full, window = entry["by_position"]["alibi"], entry["windowed"]["alibi"]
        assert band(window, 24, 32) - band(window, 192, 256) > 0.01
        assert band(window, 192, 256) > band(full, 192, 256)
    for entry in STORED["offsets"]:
        k = entry["config"]["k"]
        assert band(entry["by_position"]["rope"], 32, 64, k) == 1.0


CONTROLS = experiment.load_controls()


def test_the_committed_controls_read_the_sweeps_own_models_and_are_complete():
    assert CONTROLS["config"] == dataclasses.asdict(experiment.SWEEP) | {"seed": None,
                                                                          "eval_lens": list(experiment.SWEEP.eval_lens)}
    assert CONTROLS["pair_controls"] == {name: list(v) for name, v in experiment.PAIR_CONTROLS.items()}
    assert CONTROLS["alibi_windows"] == list(experiment.ALIBI_WINDOWS) == [4, 8, 16, 32]
    T, k, L = max(experiment.SWEEP.eval_lens), experiment.SWEEP.k, experiment.SWEEP.train_len
    for scheme in ("rope", "alibi"):
        assert [c["seed"] for c in CONTROLS[scheme]] == list(experiment.SWEEP_SEEDS)
        for control, entry in zip(CONTROLS[scheme], STORED["sweep"]):
            # retrained from the same seed and code: bit for bit the sweep's model
            assert control["by_position"] == entry["by_position"][scheme]
    for control in CONTROLS["rope"]:
        assert control["aliases"] == experiment.alias_offsets(k, range(L, T))
        curves = [*control["divide"].values(), control["hide_aliases"], control["aliases_only"]]
        assert set(control["divide"]) == set(experiment.PAIR_CONTROLS)
        assert all(len(c) == T - k and min(c) >= 0 and max(c) <= 1 for c in curves)
        at = control["hide_aliases_cliff"]
        assert at == experiment.cliff(control["hide_aliases"], experiment.SWEEP)
        weights = np.array(control["hide_aliases_after_cliff"])            # [layer][head][offset 0 .. at + 3]
        assert weights.shape == (experiment.SWEEP.n_layers, experiment.SWEEP.n_heads, at + 4)
        assert np.allclose(weights.sum(-1), 1, atol=2e-3)
        hidden = [d for d in control["aliases"] if d < at + 4]
        assert hidden and weights[..., hidden].max() == 0                  # the hidden offsets get nothing
    for control, entry in zip(CONTROLS["alibi"], STORED["sweep"]):
        silenced = np.array(control["silenced"])
        assert silenced.shape == (experiment.SWEEP.n_layers, experiment.SWEEP.n_heads, T - k)
        assert set(control["windows"]) == {str(w) for w in experiment.ALIBI_WINDOWS}
        assert all(len(curve) == T - k for curve in control["windows"].values())
        assert control["windows"][str(L)] == entry["windowed"]["alibi"]    # the sweep's own window, bit for bit
        profile = control["profile"]
        assert np.array(profile["mean"]).shape == (experiment.SWEEP.n_layers, experiment.SWEEP.n_heads, 9)
        assert np.array(profile["largest_gap"]).shape == (experiment.SWEEP.n_layers, experiment.SWEEP.n_heads, 1)
    assert CONTROLS["minutes"] > 0 and CONTROLS["versions"]["torch"].startswith("2.13.0")


@pytest.mark.slow
def test_the_committed_rope_controls_are_what_this_code_computes():
    """Seed 0's RoPE controls recomputed (one sweep model trained again, about 30 s)."""
    control = CONTROLS["rope"][0]
    again = experiment._control_job((dataclasses.replace(experiment.SWEEP, seed=0), "rope"))
    for key in ("by_position", "aliases", "divide", "hide_aliases", "hide_aliases_cliff",
                "hide_aliases_after_cliff", "aliases_only"):
        assert again[key] == control[key], key


@pytest.mark.slow
def test_the_committed_alibi_controls_are_what_this_code_computes():
    """Seed 0's ALiBi controls recomputed (one sweep model trained again, about 40 s)."""
    control = CONTROLS["alibi"][0]
    again = experiment._control_job((dataclasses.replace(experiment.SWEEP, seed=0), "alibi"))
    for key in ("by_position", "silenced", "windows", "profile"):
        assert again[key] == control[key], key


def test_the_chapters_claims_about_the_controls_hold():
    """Pair 1 alone decides RoPE's failure, at about 4 rad whatever its divisor; pair 0 slowed
    alone breaks even the trained positions; the aliases suffice but are not needed, and without
    them the weight goes to the keys just past the hidden aliases. ALiBi's steep heads carry the
    task, and layer 1's ignores the tokens; at positions 192 to 255, the fewer keys in reach, the
    better ALiBi does, while inside the training length every narrower window costs."""
    k = experiment.SWEEP.k

    def band(curve, lo, hi):
        return float(np.mean(curve[lo - k:hi - k]))

    for control in CONTROLS["rope"]:
        none, slowed = control["by_position"], control["divide"]["pair 1 / 4"]
        assert band(slowed, 40, 128) > 0.9995 and band(none, 40, 64) < 0.3        # pair 1 alone fixes it
        cliff = experiment.cliff(slowed, experiment.SWEEP)
        assert 4.0 <= cliff * 0.1 / 4 <= 4.5 and 4.0 <= experiment.cliff(none, experiment.SWEEP) * 0.1 <= 4.5
        pairs_2_3 = control["divide"]["pairs 2-3 / 4"]
        assert abs(experiment.cliff(pairs_2_3, experiment.SWEEP)
                   - experiment.cliff(none, experiment.SWEEP)) <= 1             # pairs 2-3: nothing...
        assert abs(band(pairs_2_3, 40, 64) - band(none, 40, 64)) <= 0.025        # ...beyond a point or two
        halved = control["divide"]["pair 1 / 2"]                                # a second factor
        assert band(halved, 40, 64) > 0.9995 and 4.0 <= experiment.cliff(halved, experiment.SWEEP) * 0.1 / 2 <= 4.5
        order_blind = np.array(STORED["baselines"]["order_blind"])
        assert band(control["divide"]["pair 0 / 4"], 2, 32) < order_blind[1:31].mean()   # pair 0 needed as is
        assert abs(band(control["aliases_only"], 40, 64) - band(none, 40, 64)) < 0.01   # aliases suffice
        hidden = control["hide_aliases"]
        assert band(hidden, 40, 64) > band(none, 40, 64) + 0.2 and band(hidden, 64, 128) < 0.15  # not needed
        layer2 = np.array(control["hide_aliases_after_cliff"])[1].mean(0)
        far = {int(d) for d in np.argsort(layer2[32:])[::-1][:2] + 32}
        assert far == {47, 53}                                                  # the next keys round pair 0
        assert all(0.5 < abs(math.remainder(d - k, 2 * math.pi)) < 1.1 for d in far)
    for control, entry in zip(CONTROLS["alibi"], STORED["sweep"]):
        seen = {(layer, h): band(curve, 2, 32) for layer, heads in enumerate(control["silenced"])
                for h, curve in enumerate(heads)}
        assert seen[0, 0] < 0.1 and seen[1, 0] < 0.3                           # the steep heads carry it
        assert min(v for (layer, h), v in seen.items() if h) > 0.8              # the gentle ones do not
        profile = control["profile"]
        assert profile["largest_gap"][0][0][0] < 0.005                          # layer 1's steep head: its bias
        assert np.argmax(profile["mean"][0][0]) == 0                            # most weight on its own token
        assert min(profile["largest_gap"][1][h][0] for h in range(2)) > 0.15    # layer 2 reads the tokens
        full, window = entry["by_position"]["alibi"], control["windows"]
        far = {w: band(window[w], 192, 256) for w in window} | {"all": band(full, 192, 256)}
        assert far["all"] < far["32"] < far["8"] and far["4"] > 0.97             # fewer keys, better
        assert 0.02 <= far["32"] - far["all"] <= 0.035                         # keys 32+ back: about 2.5
        assert 0.02 <= far["8"] - far["32"] <= 0.035                           # keys 8-31 back: about 3 more
        assert abs(far["16"] - far["32"]) < 0.01                               # 16 is no better than 32
        assert window["32"][:30] == full[:30]                                  # nothing to mask before t = 32
        inside = {w: band(full, 16, 32) - band(window[w], 16, 32) for w in ("16", "8", "4")}
        assert inside["16"] > 0.02 and inside["16"] > inside["8"] > inside["4"] > -0.005   # costs, unevenly


@pytest.mark.parametrize("changes,match", [
    ({"k": 0}, "k must be an int >= 1"),
    ({"k": 32}, "k = 32 must be smaller than train_len"),
    ({"d_model": 20, "n_heads": 4}, "multiple of 2 \\* n_heads"),
    ({"eval_lens": (16,)}, "eval_lens"),
    ({"eval_lens": ()}, "eval_lens"),
    ({"lr": 0}, "lr"),
    ({"steps": 2.5}, "steps"),
])
def test_bad_configurations_are_refused_with_the_field_named(changes, match):
    with pytest.raises((ValueError, TypeError), match=match):
        Config(**changes)


def test_an_unknown_scheme_names_the_valid_ones():
    with pytest.raises(ValueError, match="none, none\\+bos, learned, sinusoidal, rope, alibi"):
        TinyTransformer(SMALL, "t5")
