"""Tests of chapter 8's exercises, read by tokvec.course.grading (see its docstring).

Each section's visible tests go into the student notebook under the exercise; the hidden
ones only into the grader's copy. The names the tests use are the student's
(``defines``) and the chapter's own (``batch``, ``weight``, ``table``, ``embed_numpy``...),
bound before the exercise: a name defined inside an exercise (``TableAsParameter``) is
checked by name. The tests' own names start with ``_`` so that they never replace a name of
the chapter, and their random numbers come from their own seeded generators, not the global
ones.
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

with check("gather_embed does the gather itself: it does not call embed_numpy"):
    import dis as _dis
    import types as _types

    def _code_objects(_code):
        """_code and the code of the functions, lambdas and comprehensions in it."""
        yield _code
        for _const in _code.co_consts:
            if isinstance(_const, _types.CodeType):
                yield from _code_objects(_const)

    def _library_calls(_f):
        """The course's functions _f reaches, through helpers of the notebook."""
        _banned = {"embed_numpy", "embed", "token_embedding", "positional_embedding"}
        _allowed = ("tokvec.validate", "tokvec.course")       # checks, feedback
        _found, _todo, _seen = set(), [_f], set()
        while _todo:
            _g = _todo.pop()
            if id(_g) in _seen:
                continue
            _seen.add(id(_g))
            _refs = [*(_g.__defaults__ or ()), *(_g.__kwdefaults__ or {}).values()]
            _refs += [_cell.cell_contents for _cell in _g.__closure__ or ()]
            for _code in _code_objects(_g.__code__):
                _loads = [(_i.opname, _i.argval) for _i in _dis.get_instructions(_code)]
                _found |= _banned & {_name for _op, _name in _loads       # not a local of that name
                                     if _op in ("LOAD_GLOBAL", "LOAD_NAME", "LOAD_DEREF", "LOAD_ATTR",
                                                "LOAD_METHOD")}
                _refs += [_g.__globals__.get(_name) for _op, _name in _loads
                          if _op in ("LOAD_GLOBAL", "LOAD_NAME")]
            for _obj in _refs:
                _module = getattr(_obj, "__module__", None) or ""
                if _obj is embed_numpy or (
                        callable(_obj) and _module.split(".")[0] == "tokvec"
                        and not _module.startswith(_allowed)):
                    _found.add(getattr(_obj, "__name__", repr(_obj)))
                elif isinstance(_obj, _types.FunctionType) and (
                        _obj.__module__ == _f.__module__):
                    _todo.append(_obj)                         # a helper of yours
        return _found

    assert isinstance(gather_embed, _types.FunctionType), (
        "gather_embed: a function you write (def or lambda)")
    _calls = _library_calls(gather_embed)
    assert not _calls, (f"gather_embed calls {sorted(_calls)}: index weight and slice "
                        "table yourself")

# %% vec-ex-buffer | points: 2 | defines: param, before
with check("param is a TableAsParameter: its table pe is a trainable parameter"):
    # by name: the class is the chapter's, defined in the exercise itself
    assert "TableAsParameter" in [_c.__name__ for _c in type(param).__mro__], (
        f"param: a TableAsParameter(N_V, d_e, l_max), got {type(param).__name__}")
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
with check("product is computed from a one-hot matrix by a product, not looked up"):
    import ast as _ast

    def _assigned(_tree, _name):
        """The expressions the cell _tree assigns to _name."""
        _values = []
        for _node in _ast.walk(_tree):
            if isinstance(_node, _ast.Assign):
                _targets = [_t for _tg in _node.targets for _t in _ast.walk(_tg)]
            elif isinstance(_node, (_ast.AnnAssign, _ast.AugAssign, _ast.NamedExpr)):
                _targets = [_node.target]
            else:
                continue
            if _node.value is not None and any(
                    isinstance(_t, _ast.Name) and _t.id == _name
                    and isinstance(_t.ctx, _ast.Store) for _t in _targets):
                _values.append(_node.value)
        return _values

    def _reached(_tree, _name):
        """The nodes _name's value is computed from, through the cell's assignments."""
        _nodes, _todo, _names = [], _assigned(_tree, _name), {_name}
        while _todo:
            for _node in _ast.walk(_todo.pop()):
                _nodes.append(_node)
                if isinstance(_node, _ast.Name) and _node.id not in _names:
                    _names.add(_node.id)
                    _todo += _assigned(_tree, _node.id)
        return _nodes, _names

    def _is_product(_node):
        """A matrix product: @, or matmul, dot, einsum, tensordot or inner."""
        if isinstance(_node, _ast.BinOp) and isinstance(_node.op, _ast.MatMult):
            return True
        _func = getattr(_node, "func", None)
        _called = getattr(_func, "attr", None) or getattr(_func, "id", None)
        return isinstance(_node, _ast.Call) and _called in {
            "matmul", "dot", "einsum", "tensordot", "inner"}

    # the answer's cell: the last cell run before this one that assigns product
    _answer = None
    for _source in reversed(list(globals().get("In") or [])):
        if "Checks(" in _source:
            continue                                     # a test cell
        try:
            _tree = _ast.parse(_source)
        except SyntaxError:
            continue
        if _assigned(_tree, "product"):
            _answer = _tree
            break
    # IPython (every Jupyter, and nbgrader's autograder) keeps the cells run in In
    assert _answer is not None, "no cell run in this kernel assigns product"
    _nodes, _names = _reached(_answer, "product")
    _multiplied = any(isinstance(_node, _ast.BinOp)
                      and isinstance(_node.op, _ast.Mult) for _node in _nodes)
    assert any(map(_is_product, _nodes)) or ("one_hot" in _names and _multiplied), (
        "product: multiply one_hot by weight (one_hot @ weight), not weight[batch]")
