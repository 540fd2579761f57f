"""Tests of chapter 8's exercises, read by tokvec.course.grading (see its docstring).

Each section's visible tests go into the student notebook under the exercise; the hidden
ones only into the grader's copy. The names the tests use are the student's
(``defines``) and the chapter's own (``batch``, ``weight``, ``table``, ``embed_numpy``,
``TableAsParameter``...). The tests' own names start with ``_`` so that they never
replace a name of the chapter, and their random numbers come from their own seeded
generators, not the global ones.
"""
# ruff: noqa: F821 (the names are defined by the notebook the tests run in)

# %% vec-ex-gather | points: 2 | defines: gather_embed, fast
with check("gather_embed(batch, weight, table) is embed_numpy with its default scale"):
    import numpy as _np

    _out = _np.asarray(gather_embed(batch, weight, table))
    assert _out.shape == (*batch.shape, weight.shape[1]), f"{_out.shape}: not (B, T, d)"
    assert _np.allclose(_out, embed_numpy(batch, weight, table), rtol=0, atol=1e-12), (
        "embed_numpy scales the token vectors by sqrt(d) unless told otherwise")
with check("fast is that (B, T, d) output"):
    assert _np.shape(fast) == (3, 11, 4), f"shape {_np.shape(fast)}, not (3, 11, 4)"
    assert _np.allclose(fast, embed_numpy(batch, weight, table), rtol=0, atol=1e-12)
with check("feedback.on_embedding_output accepts fast"):
    from tokvec.course import feedback as _feedback

    _fb = _feedback.on_embedding_output(fast, batch, weight)
    assert _fb, _fb.message
# %% hidden
with check("other sizes: a 5 x 7 batch of 20 tokens, d = 6, a table of 10 positions"):
    from tokvec.arrays import sinusoidal_table_numpy as _table_numpy

    _rng = _np.random.default_rng(29)
    _weight = _rng.normal(size=(20, 6))
    _table = _table_numpy(10, 6)
    _ids = _rng.integers(0, 20, size=(5, 7))
    _out = _np.asarray(gather_embed(_ids, _weight, _table))
    assert _out.shape == (5, 7, 6)
    assert _np.allclose(_out, embed_numpy(_ids, _weight, _table), rtol=0, atol=1e-12)
with check("it agrees with a double loop over b and t"):
    _loop = _np.array([[_weight[_ids[_b, _t]] * _np.sqrt(6) + _table[_t]
                        for _t in range(7)] for _b in range(5)])
    assert _np.allclose(_out, _loop, rtol=0, atol=1e-12)
    _one = _np.asarray(gather_embed(_ids[:1, :3], _weight, _table))
    assert _np.allclose(_one, _loop[:1, :3], rtol=0, atol=1e-12), "a 1 x 3 batch"

# %% vec-ex-buffer | points: 2 | defines: param, before
with check("param is a TableAsParameter: its table pe is a trainable parameter"):
    assert isinstance(param, TableAsParameter), f"got {type(param).__name__}"
    _names = [_name for _name, _ in param.named_parameters()]
    assert "pe" in _names, f"parameters: {_names}"
with check("its state_dict saves the table with the weights"):
    assert "pe" in param.state_dict(), f"state_dict: {list(param.state_dict())}"
with check("before is the sinusoidal table; an optimizer step moved param.pe away"):
    import torch as _torch

    _sin = sinusoidal_table(*param.pe.shape)                   # (max_len, d)
    assert tuple(before.shape) == tuple(_sin.shape), "before: a copy of param.pe"
    assert _torch.allclose(before.detach().float(), _sin, rtol=0, atol=1e-7), (
        "before: a copy of param.pe taken before training (.detach().clone())")
    assert not _torch.allclose(param.pe.detach().float(), _sin, rtol=0, atol=1e-3), (
        "train param one step (a loss, backward, optimizer.step()): pe must move")
# %% hidden
with check("before is a separate copy, not the parameter itself"):
    assert before is not param.pe and before.data_ptr() != param.pe.data_ptr()
with check("the trained module still embeds the batch: (B, T, d)"):
    assert param.pe.requires_grad
    with _torch.no_grad():
        assert tuple(param(ids_t).shape) == (*ids_t.shape, d_e)

# %% vec-ex-onehot | points: 2 | defines: one_hot, product
with check("one_hot has shape (B, T, N_V)"):
    import numpy as _np

    assert _np.shape(one_hot) == (*batch.shape, N_V), (
        f"shape {_np.shape(one_hot)}, not {(*batch.shape, N_V)}")
with check("each token of batch is a one-hot vector with its 1 at the token's id"):
    _oh = _np.asarray(one_hot)
    assert _np.array_equal(_oh.sum(axis=-1), _np.ones(batch.shape)), "a single 1 each"
    assert _np.array_equal(_oh.argmax(axis=-1), batch), "the 1 sits at the id"
with check("product equals weight[batch] exactly"):
    _prod = _np.asarray(product)
    assert _prod.shape == (*batch.shape, weight.shape[1]), f"shape {_prod.shape}"
    assert _np.array_equal(_prod, weight[batch]), "use one_hot @ weight"
# %% hidden
with check("one_hot holds only zeros and ones"):
    assert set(_np.unique(_oh).tolist()) <= {0, 1}
    assert int(_oh.sum()) == batch.size
with check("product is one_hot @ weight"):
    assert _np.array_equal(_prod, _oh @ weight)
