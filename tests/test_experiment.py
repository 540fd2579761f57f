"""tokvec.experiment: the task, the models, determinism, and the committed results of chapter 12."""

import dataclasses

import pytest
import torch

from tokvec import experiment
from tokvec.experiment import SCHEMES, SMALL, Config, TinyTransformer

STORED = experiment.load_sweep()


def test_targets_are_the_tokens_k_places_back_and_content_says_nothing():
    ids, targets = experiment.batch(SMALL, 40, 200, torch.Generator().manual_seed(0))
    k = SMALL.k
    assert ids.shape == targets.shape == (200, 40)
    assert bool((targets[:, :k] == -1).all())
    assert torch.equal(targets[:, k:], ids[:, :-k])
    # tokens are uniform and independent: the current token predicts the target at chance
    same = (ids[:, k:] == targets[:, k:]).double().mean()
    assert abs(float(same) - 1 / SMALL.vocab_size) < 0.01


@pytest.mark.parametrize("scheme", SCHEMES)
def test_every_scheme_builds_a_causal_model(scheme):
    """Changing a later token never changes the logits at earlier positions."""
    cfg = dataclasses.replace(SMALL, d_model=16, n_heads=2, n_layers=1)
    with experiment.deterministic(0):
        model = TinyTransformer(cfg, scheme).eval()
        ids = torch.randint(0, cfg.vocab_size, (2, 20))
        changed = ids.clone()
        changed[:, 12:] = (changed[:, 12:] + 1) % cfg.vocab_size
        a, b = model(ids), model(changed)
    assert a.shape == (2, 20, cfg.vocab_size)
    assert torch.equal(a[:, :12], b[:, :12])
    assert not torch.allclose(a[:, 12:], b[:, 12:])


def test_without_positions_and_mask_a_model_is_blind_to_order_but_the_mask_is_not():
    """Scheme "none": the last position sees a set; permuting the earlier tokens changes nothing."""
    cfg = dataclasses.replace(SMALL, d_model=16, n_heads=2, n_layers=1)
    with experiment.deterministic(1):
        model = TinyTransformer(cfg, "none").eval()
        ids = torch.randint(0, cfg.vocab_size, (1, 12))
        shuffled = ids.clone()
        shuffled[0, :11] = ids[0, torch.randperm(11)]
        assert not torch.equal(shuffled, ids)
        assert torch.allclose(model(ids)[0, -1], model(shuffled)[0, -1], atol=1e-5)
        rope_model = TinyTransformer(cfg, "rope").eval()
        assert not torch.allclose(rope_model(ids)[0, -1], rope_model(shuffled)[0, -1], atol=1e-3)


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


@pytest.mark.slow
def test_the_smallest_configuration_reproduces_the_committed_accuracies():
    """Chapter 12 runs this live; the committed file must be what this code computes."""
    assert STORED["small"]["config"] == dataclasses.asdict(SMALL) | {"eval_lens": list(SMALL.eval_lens)}
    live = experiment.run(SMALL)
    for scheme in SCHEMES:
        for T, acc in STORED["small"]["accuracy"][scheme].items():
            assert live["accuracy"][scheme][T] == pytest.approx(acc, abs=0.01), (scheme, T)
        assert live["loss"][scheme][0] == pytest.approx(STORED["small"]["loss"][scheme][0], rel=1e-4)


def test_the_committed_sweep_is_complete_and_consistent():
    sweep = STORED["sweep"]
    assert [entry["config"]["seed"] for entry in sweep] == list(experiment.SWEEP_SEEDS)
    for entry in sweep:
        cfg = entry["config"]
        assert {k: v for k, v in cfg.items() if k != "seed"} == {
            k: v for k, v in dataclasses.asdict(experiment.SWEEP).items() if k != "seed"
        } | {"eval_lens": list(experiment.SWEEP.eval_lens)}
        for scheme in SCHEMES:
            accuracy = entry["accuracy"][scheme]
            assert set(accuracy) == {str(T) for T in cfg["eval_lens"]}
            assert all(0.0 <= a <= 1.0 for a in accuracy.values())
            by_position = entry["by_position"][scheme]
            assert len(by_position) == max(cfg["eval_lens"]) - cfg["k"]
            # the mean over all positions of the longest length is the stored accuracy
            mean = sum(by_position) / len(by_position)
            assert mean == pytest.approx(accuracy[str(max(cfg["eval_lens"]))], abs=1e-3)
            assert len(entry["loss"][scheme]) == cfg["steps"] // cfg["log_every"] + 1
    assert STORED["machine"]["cpu"] and STORED["versions"]["torch"].startswith("2.13.0")


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
    with pytest.raises(ValueError, match="none, learned, sinusoidal, rope, alibi"):
        TinyTransformer(SMALL, "t5")
