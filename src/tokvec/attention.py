"""Where positions act: attention scores, rotary positions (RoPE) and ALiBi.

Taught in the chapter "Where positions act" (``positions_in_attention``); the experiment chapter
(``position_experiment``) trains tiny models with each scheme (:mod:`tokvec.experiment`).

Shapes follow PyTorch's attention: queries and keys are ``(..., T, d_head)``, with any leading
dimensions (batch, heads); scores are ``(..., T_q, T_k)``. The functions:

* :func:`scores`: ``q @ k^T / sqrt(d_head)``, the numbers a softmax turns into attention weights;
* :func:`rope`: rotary position embedding (Su et al., 2021), in both pairings used in practice;
* :func:`rope_frequencies`: RoPE's frequencies as released models scale them to read past their
  training length (linear position interpolation, dynamic NTK, YaRN, Llama 3.1), in Hugging Face
  transformers' ``rope_parameters`` form;
* :func:`alibi_slopes` and :func:`alibi_bias`: attention with linear biases (Press et al., 2022).

Rotation angles are computed in float64 and rounded once: in float32, ``m * theta`` at position
``m = 4096`` is rounded by up to ``2.4e-4`` radians, an error that RoPE implementations which
stay in float32 pass on to every rotated feature.
"""

from __future__ import annotations

import math
import numbers
import warnings

import torch

from tokvec import validate

__all__ = ["alibi_bias", "alibi_slopes", "rope", "rope_frequencies", "scores"]

#: The most heads :func:`alibi_slopes` accepts: beyond about 2**26 neighbouring float32 slopes
#: would round to the same number.
_MAX_HEADS = 2**20


def _tensor(value: object, name: str, shape_hint: str) -> torch.Tensor:
    """A floating-point tensor with at least two dimensions, ``(..., T, d)``."""
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor of shape {shape_hint}, got {type(value).__name__}; "
                        f"wrap it, e.g. torch.tensor({name}, dtype=torch.float32)")
    if not value.dtype.is_floating_point:
        raise TypeError(f"{name} must have a floating-point dtype, got {value.dtype}; "
                        f"convert it, e.g. {name}.float()")
    if value.ndim < 2:
        raise ValueError(f"{name} must have shape {shape_hint} (at least 2 dimensions), got shape "
                         f"{tuple(value.shape)}; add a sequence dimension, e.g. {name}.unsqueeze(0)")
    return value


def scores(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """Attention scores ``q @ k^T / sqrt(d_head)``: shape ``(..., T_q, T_k)``.

    ``q`` is ``(..., T_q, d_head)`` and ``k`` is ``(..., T_k, d_head)``; leading dimensions
    broadcast. Entry ``[..., i, j]`` says how much query ``i`` matches key ``j``; dividing by
    ``sqrt(d_head)`` keeps the scores of random unit-variance vectors at unit variance, so that
    the softmax that follows does not saturate (Vaswani et al., 2017, section 3.2.1).
    """
    q = _tensor(q, "q", "(..., T_q, d_head)")
    k = _tensor(k, "k", "(..., T_k, d_head)")
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(f"q and k must have the same last dimension d_head, got q {tuple(q.shape)} and "
                         f"k {tuple(k.shape)}; project both to the same head size")
    return q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])


def _positions(positions: object, T: int, scaled: bool) -> torch.Tensor:
    """Positions as given: an integer tensor, or float64 for fractional positions."""
    if not isinstance(positions, torch.Tensor):
        raise TypeError(f"positions must be a 1-D integer torch.Tensor of length T = {T} or None, got "
                        f"{type(positions).__name__}; e.g. positions=torch.arange({T})")
    if positions.dtype == torch.bool or positions.dtype.is_complex or (
            positions.dtype.is_floating_point and positions.dtype != torch.float64):
        raise TypeError(f"positions must have an integer dtype, or float64 for fractional positions, got "
                        f"{positions.dtype}; positions count tokens, convert with positions.long() (or "
                        f"positions.double() for fractions: float32 cannot even hold 2**24 + 1)")
    if positions.ndim != 1 or positions.shape[0] != T:
        raise ValueError(f"positions must have shape (T,) = ({T},), one position per row of x along "
                         f"dim -2, got shape {tuple(positions.shape)}")
    if positions.dtype == torch.float64 and not bool(positions.isfinite().all()):
        raise ValueError("positions must be finite, got NaN or infinity; check how the positions were "
                         "computed (e.g. a division by zero)")
    if scaled and T and float(positions.min()) < 0:
        raise ValueError(f"positions must be >= 0 with scaling (they index the tokens 0 .. seq_len - 1 "
                         f"that the scaled model reads), got {float(positions.min()):g}; count positions "
                         f"from 0, or use scaling=None for the relative form rope(k, n - m)")
    return positions


# --- RoPE scaling: the frequencies of models that read past their training length --------------

#: The keys each ``rope_type`` takes, as Hugging Face transformers names them in
#: ``config.rope_parameters``: (required, optional).
_ROPE_KEYS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "default": ((), ()),
    "linear": (("factor",), ()),
    "dynamic": (("factor",), ()),
    "yarn": (("factor", "original_max_position_embeddings"),
             ("beta_fast", "beta_slow", "attention_factor", "mscale", "mscale_all_dim", "truncate")),
    "llama3": (("factor", "original_max_position_embeddings", "low_freq_factor", "high_freq_factor"), ()),
}

#: Keys that any ``rope_type`` may carry, as transformers stores them: ``type`` (the old name of
#: ``rope_type``, which transformers keeps beside it), ``rope_theta`` (the base),
#: ``partial_rotary_factor`` (accepted when it is 1) and ``max_position_embeddings`` (a config
#: attribute in transformers; read by ``"dynamic"`` only).
_ANY_TYPE = ("rope_type", "type", "rope_theta", "partial_rotary_factor", "max_position_embeddings")

#: the rope types of transformers that this module does not implement: what they do instead, and
#: what to use for them
_OTHER_TYPES = {
    "longrope": ("LongRoPE (Phi-3) divides each pair by its own short_factor or long_factor",
                 "for its frequencies call transformers' "
                 "modeling_rope_utils.ROPE_INIT_FUNCTIONS['longrope'](config, seq_len=T)"),
    "proportional": ("'proportional' (Gemma 4) rotates part of each head with frequencies of the whole "
                     "head",
                     "with partial_rotary_factor 1 it equals rope_type 'linear' with the same factor "
                     "('default' without one), so pass that; otherwise call transformers' "
                     "modeling_rope_utils.ROPE_INIT_FUNCTIONS['proportional'](config, layer_type=...)"),
    "axial": ("'axial' (vision encoders) rotates image patches by their row and their column, 2-D RoPE",
              "use the vision model's own rotary module in transformers, e.g. "
              "Qwen3VLVisionRotaryEmbedding(config.vision_config)"),
}

#: keys that a model's own code reads beside the frequencies: they change what the model computes,
#: so they are refused with what they do, never dropped in silence
_MODEL_KEYS = {
    "llama_4_scaling_beta": (
        "Ministral 3 and Mistral 4 (in transformers) also multiply each query at position m by "
        "1 + beta * ln(1 + floor(m / original_max_position_embeddings)), a scale that grows with the "
        "position and is not part of RoPE's frequencies, so this function does not return it; for the "
        "frequencies alone, pass scaling without the key and apply that query scale in your attention"),
    "mrope_section": (
        "multimodal RoPE (Qwen2-VL and its successors) splits the pairs into sections turned by three "
        "positions (time, and an image patch's row and column), which rope() does not do; the "
        "frequencies are those of rope_type {rope_type!r}: for them, or for text alone (where the three "
        "positions agree), pass scaling without 'mrope_section' and without 'type': 'mrope'"),
}


#: the largest head ``rope_frequencies`` accepts: far above any model's (64 to 256), far below
#: what would exhaust memory
_MAX_HEAD = 1 << 20


def _head_size(d_head: object) -> int:
    if isinstance(d_head, bool) or not isinstance(d_head, numbers.Integral):
        raise TypeError(f"d_head must be an even int >= 2 (the size of one attention head), got "
                        f"{type(d_head).__name__} {d_head!r:.40}; pass e.g. d_head=128")
    if d_head < 2 or d_head % 2:
        raise ValueError(f"d_head must be an even int >= 2, got {validate._short(int(d_head))}: RoPE rotates "
                         f"features in pairs; use an even head size such as 64 or 128")
    if d_head > _MAX_HEAD:
        raise ValueError(f"d_head = {validate._short(int(d_head))} is more than the {_MAX_HEAD:,} features "
                         f"this function accepts (models use 64 to 256); check d_head")
    return int(d_head)


def _real(params: dict, key: str, low: float, *, low_ok: bool, hint: str) -> float:
    """``params[key]`` as a finite float ``>= low`` (or ``> low``), with the fix in the message."""
    value = params[key]
    name = f"scaling[{key!r}]"
    bound = f">= {low:g}" if low_ok else f"> {low:g}"
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number {bound}, got {type(value).__name__} {value!r:.40}; {hint}")
    try:
        as_float = float(value)
    except OverflowError:
        raise ValueError(f"{name} = {value!r:.40} is too large for a float; {hint}") from None
    if not math.isfinite(as_float) or as_float < low or (as_float == low and not low_ok):
        raise ValueError(f"{name} must be a finite number {bound}, got {value!r}; {hint}")
    return as_float


def _tokens(value: object, name: str) -> int:
    """``value`` as a context length in tokens: an ``int >= 1`` (8192 for Llama 3.1), at most 2**53."""
    length = validate.positive_int(value, name)
    if length > 2**53:
        raise ValueError(f"{name} = {validate._short(length)} is more positions than float64 counts exactly "
                         f"(2**53); it is a context length in tokens, such as 8192")
    return length


def _length(params: dict, key: str) -> int:
    """``params[key]`` as a context length in tokens."""
    return _tokens(params[key], f"scaling[{key!r}]")


def _rope_type(scaling: dict) -> object:
    """``rope_type``, or ``type`` where an older config has only that; ``None`` if neither."""
    return scaling["rope_type"] if "rope_type" in scaling else scaling.get("type")


def _scaling_params(d: int, scaling: object, base: object,
                    max_position_embeddings: object) -> tuple[str, dict, float, int | None]:
    """``(rope_type, params, base, max_position_embeddings)`` after checking every key.

    ``params`` holds the keys of the rope type with a value (``None`` means "the default", as in
    transformers). The keys that cannot change the frequencies are settled here: ``type`` must
    agree with ``rope_type``, ``rope_theta`` with ``base`` (or it is the base), a
    ``partial_rotary_factor`` must be 1, and ``max_position_embeddings`` may come as the argument
    (the config attribute) or in the dict, where only ``"dynamic"`` reads it.
    """
    if max_position_embeddings is not None:
        max_position_embeddings = _tokens(max_position_embeddings, "max_position_embeddings")
    if scaling is None:
        return "default", {}, validate.base(10000.0 if base is None else base), max_position_embeddings
    if not isinstance(scaling, dict):
        raise TypeError(f"scaling must be None or a dict in Hugging Face's rope_parameters form, got "
                        f"{type(scaling).__name__} {scaling!r:.60}; e.g. "
                        f"scaling={{'rope_type': 'linear', 'factor': 2.0}}")
    types = ", ".join(repr(t) for t in _ROPE_KEYS)
    rope_type = _rope_type(scaling)
    if "rope_type" not in scaling and "type" not in scaling:
        if scaling and all(isinstance(value, dict) or value is None for value in scaling.values()):
            layers = list(scaling)
            example = "full_attention" if "full_attention" in layers else layers[0]
            raise ValueError(f"scaling holds one rope_parameters dict per layer type ({layers}), as transformers "
                             f"stores them for models whose layers use different RoPE settings (Gemma 3, "
                             f"ModernBERT, OLMo 3); pass the dict of the layers you compute, e.g. "
                             f"scaling=config.rope_parameters[{example!r}]")
        raise ValueError(f"scaling must name its rope_type (one of {types}); add it, e.g. "
                         f"scaling={{'rope_type': 'linear', 'factor': 2.0}}")
    if "mrope_section" in scaling or scaling.get("type") == "mrope":
        section = scaling.get("mrope_section")
        named = "type'] = 'mrope'" if section is None else f"mrope_section'] = {section!r:.40}"
        raise ValueError(f"scaling['{named}: "
                         + _MODEL_KEYS["mrope_section"].format(rope_type=scaling.get("rope_type", "default")))
    for key, why in _MODEL_KEYS.items():
        if key in scaling:
            raise ValueError(f"scaling[{key!r}] = {scaling[key]!r:.40}: {why}")
    if not isinstance(rope_type, str) or rope_type not in _ROPE_KEYS:
        other = _OTHER_TYPES.get(rope_type) if isinstance(rope_type, str) else None
        why = (f"{other[0]}, which this module does not implement; {other[1]}" if other
               else "this module does not implement other schemes; check the spelling")
        raise ValueError(f"scaling['rope_type'] must be one of {types}, got {rope_type!r:.40}: {why}")
    if "type" in scaling and scaling["type"] != rope_type:
        raise ValueError(f"scaling['type'] = {scaling['type']!r:.40} differs from scaling['rope_type'] = "
                         f"{rope_type!r}: 'type' is the old name of 'rope_type', and transformers reads "
                         f"rope_type only; drop 'type' or make the two agree")
    required, optional = _ROPE_KEYS[rope_type]
    implicit_factor = rope_type == "yarn" and "factor" in scaling and scaling["factor"] is None
    missing = [key for key in required if scaling.get(key) is None and not (key == "factor" and implicit_factor)]
    if missing:
        raise ValueError(f"scaling is missing {', '.join(repr(k) for k in missing)}: rope_type {rope_type!r} "
                         f"needs {', '.join(required)}; add "
                         f"{'them' if len(missing) > 1 else 'it'} to scaling")
    unknown = sorted(set(scaling) - {*_ANY_TYPE, *required, *optional}, key=str)
    if unknown:
        takes = ", ".join(("rope_type", *required, *optional))
        raise ValueError(f"scaling has keys that rope_type {rope_type!r} does not use: {unknown}; it takes "
                         f"{takes} (and type, rope_theta, max_position_embeddings). Check the spelling; a key "
                         f"that a model's own code reads changes what that model computes, so find out what "
                         f"it does before you drop it")
    if scaling.get("partial_rotary_factor") is not None:
        share = _real(scaling, "partial_rotary_factor", 0.0, low_ok=False,
                      hint="the share of each head that RoPE rotates, e.g. 0.25 for GPT-NeoX")
        if share != 1.0:
            rotary = int(d * share)
            raise ValueError(f"scaling['partial_rotary_factor'] = {share:g}: transformers then computes the "
                             f"frequencies of the first int(d_head * {share:g}) = {rotary} features only "
                             f"(partial rotary, 'Where positions act'), which this function does not do for you; call "
                             f"it with d_head={rotary} and without the key, and rotate only those features")
    if scaling.get("rope_theta") is not None:
        theta = validate.base(scaling["rope_theta"], "scaling['rope_theta']")
        if base is not None and validate.base(base) != theta:
            raise ValueError(f"scaling['rope_theta'] = {theta:g} differs from base = {float(base):g}; they are the "
                             f"same number: pass base={theta:g}, leave base out, or drop rope_theta from scaling")
        base = theta
    base = validate.base(10000.0 if base is None else base)
    if scaling.get("max_position_embeddings") is not None:
        in_dict = _length(scaling, "max_position_embeddings")
        if max_position_embeddings is not None and in_dict != max_position_embeddings:
            raise ValueError(f"scaling['max_position_embeddings'] = {in_dict} differs from "
                             f"max_position_embeddings = {max_position_embeddings}; give it once")
        if rope_type != "dynamic":
            warnings.warn(f"scaling['max_position_embeddings'] is not used by rope_type {rope_type!r} "
                          f"(transformers warns of it as an unrecognized key and ignores it); it is a "
                          f"config attribute: pass max_position_embeddings= instead", stacklevel=3)
        max_position_embeddings = in_dict
    # None means "the default" for an optional key, as in Hugging Face's configs; not for truncate,
    # where Hugging Face reads None as False: that one must be True or False
    params = {key: value for key, value in scaling.items()
              if key in (*required, *optional) and (value is not None or key == "truncate")}
    return rope_type, params, base, max_position_embeddings


def _warn_like_transformers(rope_type: str, params: dict, trained: int | None, extended: int | None) -> None:
    """The warnings transformers gives when it validates a config with these settings.

    ``trained`` is ``original_max_position_embeddings``, ``extended`` the config's
    ``max_position_embeddings`` (``None``: not given, nothing to compare).
    """
    if extended is None or trained is None:
        return
    if rope_type == "llama3" and trained >= extended:
        warnings.warn(f"scaling['original_max_position_embeddings'] = {trained} is not less than "
                      f"max_position_embeddings = {extended}: the model is scaled to read no further than it "
                      f"was trained (transformers warns of this too)", stacklevel=3)
    if rope_type == "yarn" and extended / trained not in (params["factor"], 1):
        warnings.warn(f"scaling['factor'] = {params['factor']:g} is not max_position_embeddings / "
                      f"original_max_position_embeddings = {extended} / {trained} = {extended / trained:g}; the "
                      f"explicit factor is used, as transformers does (with the same warning)", stacklevel=3)


def rope_frequencies(d_head: int, *, base: float | None = None, scaling: dict | None = None,
                     seq_len: int | None = None,
                     max_position_embeddings: int | None = None) -> tuple[torch.Tensor, float]:
    """RoPE's inverse frequencies ``theta_i`` and the attention factor, with a model's scaling.

    Taught in the chapter "Where positions act" (``positions_in_attention``). Returns
    ``(inv_freq, attention_factor)``: ``inv_freq`` is a float64 tensor of shape ``(d_head // 2,)``
    (the ``theta_i`` that :func:`rope` rotates pair ``i`` by, per position) and
    ``attention_factor`` the float that multiplies cos and sin (1.0 except for YaRN).

    ``scaling`` is ``None`` or a dict in Hugging Face transformers' ``rope_parameters`` form, and
    the results equal that library's RoPE initialisation functions (``ROPE_INIT_FUNCTIONS``),
    computed in float64. With ``L`` the training length and ``s = factor >= 1``:

    * ``None`` or ``{"rope_type": "default"}``: ``theta_i = base**(-2i/d_head)`` (Su et al.);
    * ``"linear"`` (``factor``): position interpolation (Chen et al., 2023), ``theta_i / s``,
      the same as reading position ``m`` as ``m / s``;
    * ``"dynamic"`` (``factor``; ``L`` = ``max_position_embeddings``; needs ``seq_len``):
      dynamic NTK-aware scaling (bloc97, emozilla, 2023): the base grows to
      ``base * (s * n / L - (s - 1)) ** (d/(d-2))`` with ``n = max(seq_len, L)``, so nothing
      changes up to ``L``. Hugging Face's module caches the largest ``seq_len`` it has seen;
      this function is evaluated at the ``seq_len`` given;
    * ``"yarn"`` (``factor``, ``original_max_position_embeddings`` = ``L``; optional
      ``beta_fast`` = 32, ``beta_slow`` = 1, ``truncate`` = True, ``attention_factor``,
      ``mscale``, ``mscale_all_dim``): YaRN as its reference code computes it (Peng et al., 2023).
      Pairs that turn more than ``beta_fast`` times over ``L`` positions keep ``theta_i``, pairs
      that turn fewer than ``beta_slow`` times get ``theta_i / s``, and a ramp that is linear in
      the pair index (not in the rotations, as the paper's formula is), clamped at pair 0, blends
      the two in between; the attention factor is ``0.1 ln s + 1`` (or
      ``(0.1 mscale ln s + 1) / (0.1 mscale_all_dim ln s + 1)`` when both are given). A ``factor``
      of ``None`` means ``max_position_embeddings / L``, as in transformers;
    * ``"llama3"`` (``factor``, ``original_max_position_embeddings`` = ``L``, ``low_freq_factor``,
      ``high_freq_factor``): Llama 3.1's scaling. Wavelengths ``2 pi / theta_i`` shorter than
      ``L / high_freq_factor`` are kept, longer than ``L / low_freq_factor`` divided by ``s``, and
      in between blended with the weight ``(L / wavelength - low) / (high - low)``: the paper
      formula of YaRN's NTK-by-parts, with ``alpha = low`` and ``beta = high``.

    What transformers hands you can be passed as it is: ``scaling=config.rope_parameters`` and
    ``max_position_embeddings=config.max_position_embeddings``, with ``d_head`` the rotated head
    size. So are the keys beside the ones above that cannot change the result: ``rope_theta``
    (the base: ``base`` may then be left out, and must equal it if given), ``type`` (the old name
    of ``rope_type``, kept beside it; alone, it names the type), ``partial_rotary_factor`` equal
    to 1, and ``max_position_embeddings`` in the dict (read by ``"dynamic"``; for the other types
    a warning says it is unused, as transformers warns). Warnings also come where transformers
    warns when it loads the config: a llama3 ``original_max_position_embeddings`` not below
    ``max_position_embeddings``, a yarn ``factor`` that is not their ratio.

    Refused with an error that says why and what to pass or use instead: a dict of dicts, one per
    layer type, as transformers stores Gemma 3's or ModernBERT's (pass
    ``config.rope_parameters["full_attention"]`` or another layer type's); a
    ``partial_rotary_factor`` other than 1 (call this with the rotated part's size instead); the
    types this module does not implement (``"longrope"`` and its per-pair ``short_factor`` and
    ``long_factor``, ``"proportional"``, ``"axial"``: use transformers' own functions or module,
    or, for ``"proportional"`` with ``partial_rotary_factor`` 1, ``"linear"``); keys that a
    model's own code reads beside the frequencies (Ministral 3's ``llama_4_scaling_beta``, a query
    scale that grows with the position; Qwen2-VL's ``mrope_section``, with ``"type": "mrope"``);
    any other key; and values transformers silently replaces by a default (``beta_fast`` or
    ``beta_slow`` of 0, ``truncate`` of ``None``, ``mscale`` without ``mscale_all_dim``, where
    DeepSeek's own code would not ignore it).

    Llama 3.1: ``rope_frequencies(128, scaling={"rope_type": "llama3", "factor": 8.0,
    "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 8192,
    "rope_theta": 500000.0})``. ``base`` defaults to ``rope_theta``, else 10000. ``seq_len`` is
    used by ``"dynamic"`` only.
    """
    d = _head_size(d_head)
    rope_type, params, base, max_len = _scaling_params(d, scaling, base, max_position_embeddings)
    if seq_len is not None or rope_type == "dynamic":
        if seq_len is None:
            raise ValueError("seq_len is missing: rope_type 'dynamic' scales the frequencies to the length "
                             "of the sequence; pass seq_len=T (the number of positions, max position + 1)")
        seq_len = validate.positive_int(seq_len, "seq_len")
    half = d // 2
    theta = base ** (-2.0 * torch.arange(half, dtype=torch.float64) / d)        # (d/2,): Su et al.
    if rope_type == "default":
        return theta, 1.0

    hint = "factor >= 1 is how many times longer the context becomes, e.g. 8.0 for Llama 3.1"
    lengths = {key: _length(params, key) for key in ("original_max_position_embeddings",) if key in params}
    if rope_type == "yarn" and "factor" not in params:       # None: the ratio of the two lengths
        if max_len is None:
            raise ValueError("scaling['factor'] is None: transformers then uses max_position_embeddings / "
                             "original_max_position_embeddings; pass max_position_embeddings "
                             "(config.max_position_embeddings) or a factor")
        warnings.warn(f"scaling['factor'] is None: using max_position_embeddings / "
                      f"original_max_position_embeddings = {max_len / lengths['original_max_position_embeddings']:g}"
                      f", as transformers does (with a warning too)", stacklevel=2)
        s = _real({"factor": max_len / lengths["original_max_position_embeddings"]}, "factor", 1.0, low_ok=True,
                  hint="max_position_embeddings must be at least original_max_position_embeddings")
    else:
        s = _real(params, "factor", 1.0, low_ok=True, hint=hint)
        _warn_like_transformers(rope_type, params, lengths.get("original_max_position_embeddings"), max_len)
    if rope_type == "linear":
        return theta / s, 1.0

    if rope_type == "dynamic":
        if d < 4:
            raise ValueError(f"d_head must be >= 4 for rope_type 'dynamic', got {d}: its exponent d/(d-2) "
                             f"is infinite at d = 2; use a larger head or rope_type 'linear'")
        if max_len is None:
            raise ValueError("max_position_embeddings is missing: rope_type 'dynamic' grows the base once the "
                             "sequence is longer than the length the model was trained on; pass "
                             "max_position_embeddings=config.max_position_embeddings (2048 for Llama 1)")
        L = max_len
        n = max(seq_len, L)
        try:
            grown = base * ((s * n / L) - (s - 1)) ** (d / (d - 2))
        except OverflowError:
            grown = math.inf
        if not math.isfinite(grown):
            raise ValueError(f"seq_len = {validate._short(n)} with factor = {s:g} grows the base past the largest "
                             f"float for rope_type 'dynamic'; check seq_len (the number of positions) and factor")
        return grown ** (-2.0 * torch.arange(half, dtype=torch.float64) / d), 1.0

    L = lengths["original_max_position_embeddings"]
    if rope_type == "llama3":
        low = _real(params, "low_freq_factor", 0.0, low_ok=False,
                    hint="Llama 3.1 uses low_freq_factor = 1.0 and high_freq_factor = 4.0")
        high = _real(params, "high_freq_factor", 0.0, low_ok=False,
                     hint="Llama 3.1 uses low_freq_factor = 1.0 and high_freq_factor = 4.0")
        if low >= high:
            raise ValueError(f"scaling['low_freq_factor'] = {low:g} must be less than scaling['high_freq_factor'] "
                             f"= {high:g}: they bound the band of wavelengths that is blended; Llama 3.1 uses "
                             f"1.0 and 4.0")
        wavelength = 2 * math.pi / theta
        kept = wavelength < L / high                    # fast pairs: turn many times within L
        divided = wavelength > L / low                  # slow pairs: interpolated like "linear"
        blend = (L / wavelength - low) / (high - low)   # 0 at L/low .. 1 at L/high
        blended = (1 - blend) * theta / s + blend * theta
        return torch.where(kept, theta, torch.where(divided, theta / s, blended)), 1.0

    # yarn
    fast = _real(params, "beta_fast", 0.0, low_ok=False, hint="YaRN's default is 32") if "beta_fast" in params \
        else 32.0
    slow = _real(params, "beta_slow", 0.0, low_ok=False, hint="YaRN's default is 1") if "beta_slow" in params \
        else 1.0
    if fast <= slow:
        raise ValueError(f"scaling['beta_fast'] = {fast:g} must be greater than scaling['beta_slow'] = {slow:g} "
                         f"(rotations within the training length; YaRN's defaults are 32 and 1)")
    truncate = validate.flag(params.get("truncate", True), "scaling['truncate']")
    weights = {key: _real(params, key, 0.0, low_ok=False, hint="DeepSeek-V3 uses mscale = mscale_all_dim = 1.0")
               for key in ("mscale", "mscale_all_dim") if key in params}
    if len(weights) == 1:
        raise ValueError(f"scaling has {next(iter(weights))!r} without the other of 'mscale' and "
                         f"'mscale_all_dim': the attention factor is their ratio, so give both "
                         f"(DeepSeek's configs do) or neither")

    def mscale(weight: float) -> float:                 # YaRN's sqrt(1/t) = 0.1 ln(s) + 1
        return 1.0 if s <= 1 else 0.1 * weight * math.log(s) + 1.0

    if "attention_factor" in params:                    # given: it wins, as in Hugging Face
        attention_factor = _real(params, "attention_factor", 0.0, low_ok=False,
                                 hint="leave it out to get YaRN's 0.1 ln(factor) + 1")
    elif weights:
        attention_factor = mscale(weights["mscale"]) / mscale(weights["mscale_all_dim"])
    else:
        attention_factor = mscale(1.0)

    def pair_index(rotations: float) -> float:          # the pair i that turns `rotations` times within L
        return d * math.log(L / (rotations * 2 * math.pi)) / (2 * math.log(base))

    first, last = pair_index(fast), pair_index(slow)
    if truncate:
        first, last = math.floor(first), math.ceil(last)
    first, last = max(first, 0), min(last, d - 1)       # d - 1, not d/2 - 1: as Hugging Face and YaRN's code
    if first == last:
        last += 0.001                                   # their guard against a zero-width ramp
    ramp = ((torch.arange(half, dtype=torch.float64) - first) / (last - first)).clamp(0, 1)  # 0 keep .. 1 divide
    return theta / s * ramp + theta * (1 - ramp), float(attention_factor)


def rope(x: torch.Tensor, positions: torch.Tensor | None = None, *, base: float | None = None,
         interleaved: bool = True, scaling: dict | None = None,
         max_position_embeddings: int | None = None) -> torch.Tensor:
    """Rotary position embedding: rotate pairs of features of ``x`` by position-dependent angles.

    ``x`` is ``(..., T, d)`` with ``d`` even; ``positions`` is a 1-D integer tensor of length
    ``T`` (default ``arange(T)``), applied along dim -2; a float64 tensor gives fractional
    positions (position interpolation by ``s`` reads position ``m`` as ``m / s``). With
    ``theta_i = base**(-2i/d)`` for ``i = 0 .. d/2-1`` (``base`` 10000 unless given, or set by
    ``scaling["rope_theta"]``), the row at position ``m`` has pair ``i`` rotated by the angle
    ``m * theta_i``:

    * ``interleaved=True`` (the RoFormer paper, GPT-J, Meta's original Llama code) pairs
      features ``(2i, 2i+1)``: ``out[2i] = x[2i] cos - x[2i+1] sin``,
      ``out[2i+1] = x[2i+1] cos + x[2i] sin``;
    * ``interleaved=False`` (GPT-NeoX, Hugging Face's Llama and Qwen: "rotate half") pairs
      features ``(i, i + d/2)`` with the same formulas.

    Applied to queries and keys, the score of a query at ``m`` and a key at ``n`` depends on the
    positions only through ``m - n``. ``scaling`` (a dict such as
    ``{"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}``) replaces
    ``theta_i`` by the scaled frequencies of :func:`rope_frequencies` and multiplies cos and sin
    by its attention factor, as Hugging Face transformers does; ``"dynamic"`` is evaluated at
    ``seq_len = max(positions) + 1``. ``scaling`` and ``max_position_embeddings`` take what
    :func:`rope_frequencies` takes (a transformers config's ``rope_parameters`` and
    ``max_position_embeddings`` as they are). Frequencies and angles are computed in float64; the result
    has ``x``'s dtype and device. ``x`` is never modified.
    """
    x = _tensor(x, "x", "(..., T, d)")
    T, d = x.shape[-2], x.shape[-1]
    if d % 2:
        raise ValueError(f"the last dimension of x (d = {d}) must be even: RoPE rotates features in "
                         f"pairs; use an even head size")
    scaled = scaling is not None and not (isinstance(scaling, dict) and _rope_type(scaling) == "default")
    positions = torch.arange(T) if positions is None else _positions(positions, T, scaled)
    if base is not None:
        base = validate.base(base)
    validate.flag(interleaved, "interleaved")

    half = d // 2
    seq_len = int(positions.max()) + 1 if scaled and T else 1   # what "dynamic" scales to
    theta, attention_factor = rope_frequencies(d, base=base, scaling=scaling, seq_len=seq_len,
                                               max_position_embeddings=max_position_embeddings)  # (d/2,) float64
    angles = positions.to("cpu", torch.float64)[:, None] * theta[None, :]       # (T, d/2), exact to 1e-16
    work = torch.promote_types(x.dtype, torch.float32)   # bfloat16/float16 rotate in float32, round once
    if x.device.type == "mps":
        work = torch.float32                             # MPS has no float64
    cos = (angles.cos() * attention_factor).to(x.device, work)   # the factor is 1.0 except for YaRN
    sin = (angles.sin() * attention_factor).to(x.device, work)
    xw = x.to(work)
    if interleaved:
        first, second = xw[..., 0::2], xw[..., 1::2]
    else:
        first, second = xw[..., :half], xw[..., half:]
    out_first = first * cos - second * sin
    out_second = second * cos + first * sin
    if interleaved:
        out = torch.stack((out_first, out_second), dim=-1).flatten(-2)
    else:
        out = torch.cat((out_first, out_second), dim=-1)
    return out.to(x.dtype)


def _n_heads(n_heads: object) -> int:
    if isinstance(n_heads, bool) or not isinstance(n_heads, numbers.Integral):
        raise TypeError(f"n_heads must be an int >= 1, got {type(n_heads).__name__} {n_heads!r:.40}")
    if n_heads < 1:
        raise ValueError(f"n_heads must be an int >= 1 (one slope per attention head), got {n_heads}")
    if n_heads > _MAX_HEADS:
        raise ValueError(f"n_heads = {validate._short(n_heads)} is more than the {_MAX_HEADS:,} heads this "
                         f"function accepts (models use 1 to 128); check n_heads")
    return int(n_heads)


def _power_of_two_slopes(n: int) -> list[float]:
    """``2**(-8/n), 2**(-16/n), ..., 2**(-8)``: the geometric sequence of Press et al. for ``n = 2**k``."""
    return [2.0 ** (-8.0 * (h + 1) / n) for h in range(n)]


def alibi_slopes(n_heads: int) -> torch.Tensor:
    """The ALiBi slope of each head, shape ``(n_heads,)``, float32 (Press et al., 2022).

    For ``n_heads`` a power of two, head ``h = 1..n`` gets ``2**(-8h/n)``: for 8 heads
    ``1/2, 1/4, ..., 1/256``. For other head counts the authors' code takes the slopes of the
    largest power of two ``p < n_heads`` and adds the first ``n_heads - p`` of the slopes of
    ``2p`` heads that are not already among them (every other one, from the steepest), so the
    added slopes all sit at the steep end: a workaround in their code, not a rule the paper
    derives.
    """
    n = _n_heads(n_heads)
    p = 2 ** int(math.floor(math.log2(n)))
    slopes = _power_of_two_slopes(p)
    if p < n:
        slopes += _power_of_two_slopes(2 * p)[0::2][: n - p]
    return torch.tensor(slopes, dtype=torch.float64).to(torch.float32)


def alibi_bias(n_heads: int, T: int) -> torch.Tensor:
    """The causal ALiBi bias, shape ``(n_heads, T, T)``, float32, added to the attention scores.

    ``bias[h, i, j] = -slope[h] * (i - j)`` for keys ``j <= i`` (a penalty that grows linearly
    with the distance back) and ``-inf`` for ``j > i`` (the future is masked).
    """
    n = _n_heads(n_heads)
    T = validate.positive_int(T, "T")
    validate.table_size(n * T, T, ("n_heads * T", "T"), validate.ARRAY_TABLE_LIMIT)
    slopes = alibi_slopes(n).to(torch.float64)
    i = torch.arange(T, dtype=torch.float64)
    offset = i[None, :] - i[:, None]                    # (T, T): j - i, so 0.0 (not -0.0) on the diagonal
    bias = slopes[:, None, None] * offset               # float64, then one rounding to float32
    bias = bias.masked_fill(offset > 0, float("-inf"))
    return bias.to(torch.float32)
