"""Tests of chapter 12's exercises (tokvec.course.grading reads this file; see its docstring).

Each section's visible tests go into the student notebook under the exercise; the hidden ones
only into the grader's copy. The names the tests use are the student's (``defines``) and the
chapter's own (``experiment``, ``live``, ``torch``...).
"""
# ruff: noqa: F821 (the names are defined by the notebook the tests run in)

# %% exp-ex-k1 | points: 1 | defines: k1_config, k1
with check("k1_config is the configuration SMALL with k = 1, nothing else changed"):
    import dataclasses

    assert isinstance(k1_config, experiment.Config), f"{type(k1_config).__name__}"
    assert k1_config == dataclasses.replace(experiment.SMALL, k=1), (
        f"differs from SMALL with k = 1: {k1_config}")
with check("k1 is experiment.run's result for ALiBi and RoPE on that configuration"):
    assert isinstance(k1, dict) and set(k1.get("accuracy", {})) == {"alibi", "rope"}, (
        "run experiment.run(k1_config, schemes=('alibi', 'rope'))")
    assert k1["config"] == dataclasses.asdict(k1_config), "k1 was run on another config"
with check("ALiBi does better with k = 1 than with k = 2 (live), at every length"):
    for T, accuracy in k1["accuracy"]["alibi"].items():
        assert accuracy > live["accuracy"]["alibi"][T], (
            f"T = {T}: {accuracy} against {live['accuracy']['alibi'][T]} with k = 2")
# %% hidden
with check("the accuracies are measured from position k = 1 on"):
    for scheme in ("alibi", "rope"):
        by_position = k1["by_position"][scheme]
        assert len(by_position) == max(k1_config.eval_lens) - 1, len(by_position)
        for T, accuracy in k1["accuracy"][scheme].items():
            mean = sum(by_position[:int(T) - 1]) / (int(T) - 1)
            assert abs(accuracy - mean) < 1e-3, (scheme, T, accuracy, mean)
with check("RoPE is perfect at the training length, and fails on unseen positions"):
    rope_accuracy = k1["accuracy"]["rope"]
    assert rope_accuracy["32"] > 0.99, rope_accuracy
    assert k1["unseen"]["rope"]["128"] < k1["unseen"]["alibi"]["128"], k1["unseen"]

# %% exp-ex-spot-leak | points: 2 | defines: counting, hits
with check("counting holds counting runs mod 16: each token is the previous + 1"):
    runs = torch.as_tensor(counting)
    assert runs.dim() == 2 and runs.shape[1] >= 3, (
        f"expected (sequences, T) with T >= 3, got shape {tuple(runs.shape)}")
    assert not runs.is_floating_point(), f"token ids are integers, not {runs.dtype}"
    assert int(runs.min()) >= 0 and int(runs.max()) < 16, "ids must lie in 0 .. 15"
    assert ((runs[:, 1:] - runs[:, :-1]) % 16 == 1).all(), "x[t] = (start + t) % 16"
with check("hits: the rule x[t] - 2 (mod 16) predicts the target x[t-2] every time"):
    assert 0 <= float(hits) <= 1, "hits: the fraction of positions the rule gets right"
    assert float(hits) == 1.0, f"hits = {float(hits)}"
# %% hidden
with check("the runs start at random places"):
    assert len(runs) >= 2 and runs[:, 0].unique().numel() > 1, "one start only"
with check("hits is the rule's hit rate on counting, every position t >= 2"):
    rule_hits = ((runs[:, 2:] - 2) % 16 == runs[:, :-2]).double().mean()
    assert abs(float(hits) - float(rule_hits)) < 1e-9
    random_ids, random_targets = experiment.batch(
        experiment.SMALL, 64, 256, torch.Generator().manual_seed(5))
    random_rule = (random_ids[:, 2:] - 2) % 16
    random_hits = (random_rule == random_targets[:, 2:]).double().mean()
    assert float(random_hits) < 0.1, "on the chapter's random task the rule is a guess"

# %% exp-ex-rope-wavelengths | points: 3 | defines: theta, gap, aliases
with check("theta holds the four RoPE frequencies of a head of width 8"):
    import math

    theta_values = torch.tensor([float(v) for v in theta], dtype=torch.float64)
    expected = rope_frequencies(8)[0]
    assert theta_values.shape == (4,), f"{len(theta_values)} frequencies, not 4"
    torch.testing.assert_close(theta_values, expected, rtol=1e-6, atol=0)
with check("gap(d): pair 0's angle at offset d minus that at offset 2, modulo 2 pi"):
    assert abs(gap(2)) < 1e-12, f"gap(2) = {gap(2)}"
    for d in (3, 5, 8, 33, 40, 46, 60):
        want = abs(math.remainder(d - 2, 2 * math.pi))
        assert abs(abs(gap(d)) - want) < 1e-9, f"gap({d}) = {gap(d)}, distance {want}"
with check("aliases: the unseen offsets 32..60 within 0.5 rad of offset 2 on pair 0"):
    want = [d for d in range(32, 61) if abs(math.remainder(d - 2, 2 * math.pi)) < 0.5]
    assert all(float(a) == int(a) for a in aliases), "aliases are offsets (integers)"
    assert sorted(int(a) for a in aliases) == want, f"{list(aliases)}"
# %% hidden
with check("gap is pair 0's wrapped angle for any offset, far ones included"):
    for d in range(0, 400, 7):
        value = gap(d)
        assert abs(value) <= math.pi + 1e-12, f"gap({d}) = {value} is not wrapped"
        want = abs(math.remainder(d - 2, 2 * math.pi))
        assert abs(abs(value) - want) < 1e-9, f"gap({d}) = {value}"
with check("theta is base 10000: theta_i = 10000^(-2i/8), pair 0 at one radian"):
    assert abs(float(theta[0]) - 1.0) < 1e-12
    for i in range(4):
        assert math.isclose(float(theta[i]), 10000 ** (-2 * i / 8), rel_tol=1e-9)
