"""Tests of the exercises of "An experiment: do positions matter?"
(tokvec.course.grading reads this file; see its docstring).

Each section's visible tests go into the student notebook under the exercise; the hidden
ones only into the grader's copy. The names the tests use are the student's
(``defines``) and the chapter's own (``experiment``, ``live``, ``torch``...).
"""
# ruff: noqa: F821 (the names are defined by the notebook the tests run in)

# %% exp-ex-k1 | points: 1 | defines: k1_config, k1
with check("k1_config is an experiment.Config with k = 1"):
    import dataclasses

    assert isinstance(k1_config, experiment.Config), f"{type(k1_config).__name__}"
    assert k1_config.k == 1, f"k = {k1_config.k}: predict the previous token"
with check("k1 is experiment.run's result for ALiBi and RoPE on that configuration"):
    assert isinstance(k1, dict) and set(k1.get("accuracy", {})) == {"alibi", "rope"}, (
        "k1: the dict experiment.run returns, for the schemes 'alibi' and 'rope'")
    assert k1["config"] == dataclasses.asdict(k1_config), "k1 was run on another config"
with check("the accuracies are fractions, one per evaluation length"):
    for scheme, by_length in k1["accuracy"].items():
        assert set(by_length) == {str(T) for T in k1_config.eval_lens}, scheme
        assert all(0 <= a <= 1 for a in by_length.values()), scheme
# %% hidden
with check("k1_config is the short configuration SMALL, with k = 1 and nothing else"):
    assert k1_config == dataclasses.replace(experiment.SMALL, k=1), (
        "change only k of experiment.SMALL")
with check("ALiBi does better with k = 1 than with k = 2 (live), at every length"):
    for T, accuracy in k1["accuracy"]["alibi"].items():
        assert accuracy > live["accuracy"]["alibi"][T], f"T = {T}"
with check("the accuracies are measured from position k = 1 on"):
    for scheme in ("alibi", "rope"):
        by_position = k1["by_position"][scheme]
        assert len(by_position) == max(k1_config.eval_lens) - 1, len(by_position)
        for T, accuracy in k1["accuracy"][scheme].items():
            mean = sum(by_position[:int(T) - 1]) / (int(T) - 1)
            assert abs(accuracy - mean) < 1e-3, (scheme, T)
with check("RoPE is perfect at the training length, and fails on unseen positions"):
    rope_accuracy = k1["accuracy"]["rope"]
    assert rope_accuracy["32"] > 0.99
    assert k1["unseen"]["rope"]["128"] < k1["unseen"]["alibi"]["128"]

# %% exp-ex-spot-leak | points: 2 | defines: counting, hits
with check("counting holds counting runs mod 16: each token is the previous + 1"):
    runs = torch.as_tensor(counting)
    assert runs.dim() == 2 and runs.shape[1] >= 3, (
        f"expected (sequences, T) with T >= 3, got shape {tuple(runs.shape)}")
    assert not runs.is_floating_point(), f"token ids are integers, not {runs.dtype}"
    assert int(runs.min()) >= 0 and int(runs.max()) < 16, "ids must lie in 0 .. 15"
    assert ((runs[:, 1:] - runs[:, :-1]) % 16 == 1).all(), "x[t] = (start + t) % 16"
with check("hits: a hit rate on counting, one number from 0 to 1"):
    assert torch.as_tensor(hits).numel() == 1, "hits is one number, not one per target"
    assert 0 <= float(hits) <= 1, "hits: the fraction of the targets x[t-2] predicted"
# %% hidden
with check("the runs start at random places"):
    assert len(runs) >= 2 and runs[:, 0].unique().numel() > 1, "one start only"
with check("hits: the current token alone, x[t] - 2 (mod 16), predicts every target"):
    rule_hits = ((runs[:, 2:] - 2) % 16 == runs[:, :-2]).double().mean()
    assert abs(float(hits) - float(rule_hits)) < 1e-9
    assert float(hits) == 1.0
    random_ids, random_targets = experiment.batch(
        experiment.SMALL, 64, 256, torch.Generator().manual_seed(5))
    random_rule = (random_ids[:, 2:] - 2) % 16
    random_hits = (random_rule == random_targets[:, 2:]).double().mean()
    assert float(random_hits) < 0.1, "on the chapter's random task the rule is a guess"

# %% exp-ex-rope-wavelengths | points: 3 | defines: theta, gap, aliases
with check("theta holds four positive frequencies, pair 0 the fastest"):
    import math

    theta_values = [float(v) for v in theta]
    assert len(theta_values) == 4, f"{len(theta_values)} frequencies, not 4"
    assert all(v > 0 for v in theta_values), "frequencies are positive"
    assert theta_values == sorted(theta_values, reverse=True), "pair 0 turns fastest"
with check("gap(d): pair 0's angle at offset d minus that at offset 2, modulo 2 pi"):
    for d in (2, 3, 40):
        value = gap(d)
        assert isinstance(value, (int, float)) or torch.as_tensor(value).numel() == 1, (
            f"gap({d}) should be one number (radians)")
    assert abs(math.remainder(float(gap(2)), 2 * math.pi)) < 1e-9, "offset 2 itself: 0"
    assert abs(float(gap(40))) <= 2 * math.pi + 1e-9, (
        "reduce the difference modulo 2 pi (into [0, 2 pi) or (-pi, pi])")
with check("aliases: offsets from 32 to 60, each within 0.5 rad of offset 2 by gap"):
    assert len(aliases) > 0, "aliases: a list of the offsets d that come that close"
    assert all(float(a) == int(a) for a in aliases), "aliases are offsets (integers)"
    listed = [int(a) for a in aliases]
    assert len(set(listed)) == len(listed), "each offset once"
    assert all(32 <= d <= 60 for d in listed), "only the unseen offsets 32 to 60"
    far = [d for d in listed if abs(math.remainder(float(gap(d)), 2 * math.pi)) >= 0.5]
    assert not far, f"by your gap, these are 0.5 rad or more from offset 2: {far}"
# %% hidden
with check("gap is right modulo 2 pi for any offset, far ones included, and reduced"):
    for d in range(0, 400, 7):
        value = float(gap(d))
        assert abs(value) <= 2 * math.pi + 1e-9, f"gap({d}) is not reduced modulo 2 pi"
        assert min(abs(math.remainder(value - (d - 2), 2 * math.pi)),
                   abs(math.remainder(value + (d - 2), 2 * math.pi))) < 1e-9, (
            f"gap({d})")
with check("aliases are all the offsets 32..60 within 0.5 rad of offset 2 on pair 0"):
    want = [d for d in range(32, 61) if abs(math.remainder(d - 2, 2 * math.pi)) < 0.5]
    assert sorted(int(a) for a in aliases) == want
with check("theta is base 10000: theta_i = 10000^(-2i/8), pair 0 at one radian"):
    assert abs(float(theta[0]) - 1.0) < 1e-12
    for i in range(4):
        assert math.isclose(float(theta[i]), 10000 ** (-2 * i / 8), rel_tol=1e-6)
