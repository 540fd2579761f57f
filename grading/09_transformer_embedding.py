"""Tests of chapter 9's exercises (tokvec.course.grading reads this file; see its
docstring).

Each section's visible tests go into the student notebook under the exercise; the hidden
ones only into the grader's copy. The names the tests use are the student's
(``defines``) and the chapter's own (``layer``, ``x``, ``out``, ``input_embeddings``,
``HaikuPositionalEncoding``...).
"""
# ruff: noqa: F821 (the names are defined by the notebook the tests run in)

# %% layer-ex-is-train | points: 2 | defines: run_1, run_2, FixedPositionalEncoding
with check("run_1 and run_2: the sentence through the two modules, twice"):
    assert torch.is_tensor(run_1) and torch.is_tensor(run_2), "two tensors"
    assert run_1.shape == run_2.shape == (1, T, d_model), "the (1, T) sentence, twice"
with check("FixedPositionalEncoding after .eval(): the layer's output, every call"):
    torch.manual_seed(0)
    fx = FixedPositionalEncoding(d_model, max_len).eval()
    h = input_embeddings(x[None])                           # (1, T, d_model)
    once, twice = fx(h), fx(h)                              # no is_train argument
    assert torch.equal(once, twice), "after .eval(), two calls should give one output"
    torch.testing.assert_close(once[0], out, atol=1e-6, rtol=0)
with check("FixedPositionalEncoding in train mode still drops entries"):
    torch.manual_seed(0)
    fx = FixedPositionalEncoding(d_model, max_len).train()
    y = fx(torch.ones(8, max_len, d_model))                 # 1,024 entries
    assert (y == 0).any(), "in train mode dropout must zero some entries"
# %% hidden
with check("run_1 and run_2 differ: the tutorial's class still drops after .eval()"):
    assert not torch.equal(run_1, run_2)
with check("a parent's .eval() switches the fixed module's dropout off too"):
    torch.manual_seed(1)
    model = torch.nn.Sequential(input_embeddings,
                                FixedPositionalEncoding(d_model, max_len))
    model.eval()
    pair = torch.stack([x, x.flip(0)])                      # (2, T)
    assert torch.equal(model(pair), model(pair))
    model.train()
    assert not torch.equal(model(pair), model(pair)), "train mode: random masks"
    input_embeddings.eval()
with check("in train mode it is dropout with p_dropout: survivors times 1/(1-p)"):
    torch.manual_seed(2)
    fx = FixedPositionalEncoding(d_model, max_len, p_dropout=0.5).train()
    h = torch.randn(64, max_len, d_model)
    kept_sum = h + sinusoidal_table(max_len, d_model)       # (64, max_len, d): no mask
    y = fx(h)
    survivors = y != 0
    dropped = 1 - survivors.float().mean().item()
    assert abs(dropped - 0.5) < 0.05, f"p_dropout=0.5 dropped {dropped:.0%} of entries"
    torch.testing.assert_close(y[survivors], 2 * kept_sum[survivors])

# %% layer-ex-scale-order | points: 2 | defines: late, pos_len
with check("late is embed_scaled_late on the sentence x"):
    assert late.shape == (T, d_model), f"shape {tuple(late.shape)}, not (T, d_model)"
    # what the exercise's embed_scaled_late computes, written out: scaled after the sum
    torch.testing.assert_close(late, (layer.token(x) + layer.pe[:T]) * layer.scale)
with check("pos_len: the length of each position vector PE[t], one per position"):
    assert torch.is_tensor(pos_len), "pos_len: a tensor of lengths"
    assert pos_len.shape == (T,), "one length per position t of the sentence"
    assert (pos_len > 0).all() and (pos_len <= math.sqrt(d_model) + 1e-6).all(), (
        "a length of a vector of d_model entries in [-1, 1]: above 0, at most "
        "sqrt(d_model)")
# %% hidden
with check("late - out is (sqrt(d_model) - 1) * PE[t], row by row"):
    torch.testing.assert_close(late - out, (layer.scale - 1) * layer.pe[:T],
                               atol=1e-5, rtol=0)
with check("pos_len is the Euclidean length of the rows PE[t]"):
    torch.testing.assert_close(pos_len.float(), layer.pe[:T].norm(dim=-1))
with check("every position vector has length sqrt(d_model / 2) before scaling"):
    torch.testing.assert_close(pos_len.float(), torch.full((T,), math.sqrt(d_model / 2)))
with check("in late the positions have length sqrt(d_model) * pos_len"):
    token_part = layer.token(x) * layer.scale               # (T, d_model)
    torch.testing.assert_close((late - token_part).norm(dim=-1), layer.scale * pos_len.float(),
                               atol=1e-4, rtol=1e-5)

# %% layer-ex-offset | points: 2 | defines: embed_from
with check("with start=0, embed_from is the layer's own forward"):
    torch.testing.assert_close(embed_from(layer, x, start=0), out, atol=1e-6, rtol=0)
with check("the sentence one token at a time gives the whole sentence's vectors"):
    steps_ = [embed_from(layer, x[t:t + 1], start=t) for t in range(T)]
    assert all(s.shape == (1, d_model) for s in steps_), "each step is (1, d_model)"
    torch.testing.assert_close(torch.cat(steps_), out, atol=1e-6, rtol=0)
    torch.testing.assert_close(embed_from(layer, x[3:], start=3), out[3:],
                               atol=1e-6, rtol=0)
with check("embed_from(layer, ids, start) is what layer(ids, offsets=start) computes"):
    torch.testing.assert_close(embed_from(layer, x[2:5], start=4), layer(x[2:5], offsets=4),
                               atol=1e-6, rtol=0)
with check("start + T > max_len is refused: a ValueError, IndexError or assert"):
    refused = False
    try:
        embed_from(layer, x, start=12)                      # 12 + 7 > 16
    except (ValueError, IndexError, AssertionError):
        refused = True
    assert refused, "embed_from(layer, x, start=12) should raise an error of its own"
# %% hidden
with check("the last positions that fit are accepted: start + T == max_len"):
    full = torch.cat([x, x])[:max_len]                      # (max_len,) = (16,)
    start = max_len - T                                     # 9 + 7 = 16
    torch.testing.assert_close(embed_from(layer, full[start:], start=start),
                               layer(full)[start:], atol=1e-6, rtol=0)
with check("another layer, a batch: the positions of that layer's table"):
    torch.manual_seed(5)
    other = TransformerEmbedding(30, 6, 10).eval()
    ids = torch.randint(30, (3, 10))                        # (B, T) = (3, 10)
    whole = other(ids)                                      # (3, 10, 6)
    torch.testing.assert_close(embed_from(other, ids[:, 4:], start=4), whole[:, 4:],
                               atol=1e-6, rtol=0)
    torch.testing.assert_close(embed_from(other, ids[:, :1], start=0), whole[:, :1],
                               atol=1e-6, rtol=0)
with check("another layer refuses one position past its table"):
    refused = False
    try:
        embed_from(other, ids[:, :4], start=7)              # 7 + 4 > 10
    except (ValueError, IndexError, AssertionError):
        refused = True
    assert refused, "start=7, T=4 on a table of max_len = 10 should be refused"
