"""Tests of the training primer's exercises (tokvec.course.grading reads this file; see its
docstring).

Each section's visible tests go into the student notebook under the exercise; the hidden
ones only into the grader's copy. The names the tests use are the student's
(``defines``) and the page's own (``torch``, ``F``, ``nn``, ``vocab``, ``word_tokenize``,
``SENTENCE``...).
"""
# ruff: noqa: F821 (the names are defined by the notebook the tests run in)

# %% prim-ex-stable | points: 2 | defines: stable_loss
with check("stable_loss is finite, and 200, where the naive loss is inf"):
    value_ = torch.as_tensor(stable_loss(torch.tensor([200.0, 0.0]), 1)).float()
    assert torch.isfinite(value_), f"stable_loss gave {value_.item()}"
    assert abs(value_.item() - 200.0) < 1e-3, f"the loss is 200, got {value_.item()}"
with check("stable_loss matches F.cross_entropy on ordinary logits"):
    z_ = torch.randn(7, generator=torch.Generator().manual_seed(1))
    for y_ in range(7):
        expected_ = F.cross_entropy(z_[None], torch.tensor([y_]))
        got_ = torch.as_tensor(stable_loss(z_, y_)).float()
        assert torch.isclose(got_, expected_, atol=1e-5), f"y = {y_}: {got_} != {expected_}"
# %% hidden
with check("very negative and very large logits stay finite and exact"):
    for z_, y_, want_ in ((torch.tensor([-1000.0, -1000.0]), 0, math.log(2)),
                          (torch.tensor([0.0, 300.0, -300.0]), 2, 600.0),
                          (torch.tensor([5000.0, 5000.0, 5000.0, 5000.0]), 3, math.log(4))):
        got_ = torch.as_tensor(stable_loss(z_, y_)).float().item()
        assert math.isfinite(got_) and abs(got_ - want_) < 1e-3 * max(1.0, want_), (
            f"logits {z_.tolist()}, y = {y_}: {got_}, not {want_}")
with check("float64 logits give the float64 loss"):
    z_ = torch.randn(11, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    got_ = torch.as_tensor(stable_loss(z_, 4))
    assert abs(float(got_) - F.cross_entropy(z_[None], torch.tensor([4])).item()) < 1e-12

# %% prim-ex-sentences | points: 2 | defines: sentence_batch
with check("two sentences: inputs and targets of shape (2, 8), shifted by one"):
    inputs_, targets_ = sentence_batch(["The cat sat.", SENTENCE], vocab)
    assert tuple(inputs_.shape) == tuple(targets_.shape) == (2, 8), (
        f"shapes {tuple(inputs_.shape)} and {tuple(targets_.shape)}")
    full_ = vocab.encode(word_tokenize(SENTENCE), add_bos_eos=True)
    assert inputs_[1].tolist() == full_[:-1] and targets_[1].tolist() == full_[1:]
with check("the shorter row is padded: inputs with <pad>, targets with -1"):
    short_ = vocab.encode(word_tokenize("The cat sat."), add_bos_eos=True)
    n_ = len(short_) - 1
    assert inputs_[0, :n_].tolist() == short_[:-1] and targets_[0, :n_].tolist() == short_[1:]
    assert (inputs_[0, n_:] == vocab.token_to_id("<pad>")).all(), f"inputs {inputs_[0].tolist()}"
    assert (targets_[0, n_:] == -1).all(), f"targets {targets_[0].tolist()}"
# %% hidden
with check("three sentences, the longest in the middle, and one sentence alone"):
    texts_ = ["A cat.", "The mat sat on the cat, and the cat sat.", "On the mat."]
    inputs_, targets_ = sentence_batch(texts_, vocab)
    rows_ = [vocab.encode(word_tokenize(s), add_bos_eos=True) for s in texts_]
    width_ = max(len(r) for r in rows_) - 1
    assert tuple(inputs_.shape) == tuple(targets_.shape) == (3, width_)
    for b_, r_ in enumerate(rows_):
        pad_ = width_ - (len(r_) - 1)
        assert inputs_[b_].tolist() == r_[:-1] + [vocab.token_to_id("<pad>")] * pad_
        assert targets_[b_].tolist() == r_[1:] + [-1] * pad_
    one_in_, one_t_ = sentence_batch(["The cat sat."], vocab)
    assert tuple(one_in_.shape) == (1, len(vocab.encode(word_tokenize("The cat sat."))) + 1)
    assert (one_t_ != -1).all(), "a batch of one sentence has no padding"
with check("the loss with ignore_index=-1 counts only the real places"):
    logits_ = torch.randn(*inputs_.shape, len(vocab), generator=torch.Generator().manual_seed(3))
    loss_ = F.cross_entropy(logits_.flatten(0, 1), targets_.flatten(), ignore_index=-1)
    real_ = targets_ != -1
    assert torch.isclose(loss_, F.cross_entropy(logits_[real_], targets_[real_]))
    assert int(real_.sum()) == sum(len(r) - 1 for r in rows_)

# %% prim-ex-layernorm | points: 2 | defines: layer_norm
with check("layer_norm matches nn.LayerNorm(8) with random weight and bias"):
    norm_ = nn.LayerNorm(8)
    g_ = torch.Generator().manual_seed(4)
    with torch.no_grad():
        norm_.weight.copy_(torch.randn(8, generator=g_))
        norm_.bias.copy_(torch.randn(8, generator=g_))
    x_ = torch.randn(2, 3, 8, generator=g_)                      # (B, T, d)
    got_ = layer_norm(x_, norm_.weight, norm_.bias)
    assert tuple(got_.shape) == (2, 3, 8), f"shape {tuple(got_.shape)}"
    assert torch.allclose(got_, norm_(x_), atol=1e-5), "not nn.LayerNorm's values"
# %% hidden
with check("any leading shape, another width, and the eps argument"):
    norm_ = nn.LayerNorm(5, eps=0.5)
    g_ = torch.Generator().manual_seed(5)
    with torch.no_grad():
        norm_.weight.copy_(torch.randn(5, generator=g_))
        norm_.bias.copy_(torch.randn(5, generator=g_))
    for shape_ in ((5,), (4, 5), (2, 2, 3, 5)):
        x_ = torch.randn(*shape_, generator=g_)
        got_ = layer_norm(x_, norm_.weight, norm_.bias, eps=0.5)
        assert torch.allclose(got_, norm_(x_), atol=1e-5), f"input of shape {shape_}"
with check("a constant vector gives the bias (its variance is 0)"):
    bias_ = torch.arange(6.0)
    got_ = layer_norm(torch.full((6,), 3.0), torch.ones(6), bias_)
    assert torch.allclose(got_, bias_, atol=1e-5), f"got {got_.tolist()}"
