"""Precondition checks of the RoPE-scaling, relative and resampling ops for the framework adapters.

NumPy only and independent of posenc_ref, like :mod:`posenc_adapter_shared`: the framework
kernels do not validate (they broadcast, wrap or return NaN), so these are the wrapper a user
of the framework would write. Each raises :class:`~posenc_adapter_shared.Rejected` with the
corpus's error category. Shape letters: ``B`` batch, ``H`` heads, ``T`` positions, ``D`` head dim.

The validators of the relative and resampling ops (``longrope`` to ``resample_grid_2d``) return
a dict of the checked arrays (float64, positions int64) and the resolved parameters the port
reads, described in each docstring. The attention ops' checks are in
:mod:`posenc_adapter_attention_checks`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from posenc_adapter_shared import Rejected, base_value, choice, integer, invalid, invalid_shape, positions


def positive(name: str, value: Any) -> float:
    number = float(value)
    if not np.isfinite(number) or number <= 0:
        raise invalid(f"{name} must be finite and > 0, got {value!r}")
    return number


def finite_array(name: str, value: Any, ndim: int | None = None) -> np.ndarray:
    array = np.asarray(value, dtype=np.float64)
    if ndim is not None and array.ndim != ndim:
        raise invalid_shape(f"{name} must have {ndim} dimensions, got shape {array.shape}")
    if array.size == 0:
        raise invalid_shape(f"{name} must not be empty, got shape {array.shape}")
    if not np.all(np.isfinite(array)):
        raise invalid(f"{name} must be finite")
    return array


def query_key(inputs: Mapping[str, np.ndarray], q_name: str = "query_positions",
              k_name: str = "key_positions") -> tuple[np.ndarray, np.ndarray]:
    """(..., Tq) and (..., Tk) positions >= 0 with equal leading shapes."""
    q, k = positions(q_name, inputs[q_name]), positions(k_name, inputs[k_name])
    if q.ndim == 0 or k.ndim == 0 or q.shape[:-1] != k.shape[:-1]:
        raise invalid_shape(f"{q_name} and {k_name} must share their leading shape, got {q.shape} and {k.shape}")
    return q, k


def cos_sin(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """``rope.cos_sin``: positions (int64) and inv_freq (P,)."""
    choice("width", params["width"], ("half", "full", "full_interleaved"))
    positive("attention_factor", params["attention_factor"])
    return positions("positions", inputs["positions"]), finite_array("inv_freq", inputs["inv_freq"], ndim=1)


def rotary(params: Mapping[str, Any], head_dim: int) -> tuple[int, int]:
    """``(S, rd)``: the rotary space width and the rotated channels (rope.apply / rope.scores)."""
    base_value(params["base"])
    partial = choice("partial", params["partial"], ("prefix", "proportional"))
    positive("attention_factor", params["attention_factor"])
    rotary_dim = params["rotary_dim"]
    if head_dim % 2 and (partial == "proportional" or rotary_dim is None):
        raise invalid(f"the head dim must be even to rotate it whole, got {head_dim}")
    rd = head_dim if rotary_dim is None else integer("rotary_dim", rotary_dim, 2)
    if rd % 2 or rd > head_dim:
        raise invalid(f"rotary_dim must be even and <= the head dim {head_dim}, got {rd}")
    return (rd if partial == "prefix" else head_dim), rd


def rope_positions(name: str, value: Any, x: np.ndarray, x_layout: str) -> np.ndarray:
    """Positions (B or 1, T) for x in ``x_layout``."""
    t = x.shape[2 if x_layout == "BHTD" else 1]
    pos = positions(name, value)
    if pos.ndim not in (1, 2) or pos.shape[-1] != t or (pos.ndim == 2 and pos.shape[0] not in (1, x.shape[0])):
        raise invalid_shape(f"{name} must have shape (T,) or (B, T) with T={t}, got {pos.shape}")
    return pos.reshape(-1, t)


SCALING_KEYS = ("rope_type", "factor", "original_max_position", "context_length", "low_freq_factor",
                "high_freq_factor", "beta_fast", "beta_slow", "mscale", "mscale_all_dim", "scaling_attention_factor",
                "truncate", "ext_factor", "short_factor", "long_factor", "dynamic_convention", "yarn_convention")
"""The scaling parameters of rope.apply / rope.scores (the corpus params carry every one)."""
_OWN_KEYS = {"rope.apply": ("base", "rotary_dim", "partial", "layout", "x_layout", "attention_factor"),
             "rope.scores": ("base", "rotary_dim", "partial", "layout", "x_layout", "attention_factor",
                             "xpos_scale_base")}


def scaling(op: str, params: Mapping[str, Any], space: int, rd: int) -> dict[str, Any]:
    """The scaling of a ``rope.apply``/``rope.scores`` case over its rotary space ``S`` (``space``).

    Returns ``{"type": rope_type, "a": the whole attention factor (the op's attention_factor times
    the variant's), "freq": the variant's bookkeeping}``, where ``freq`` is :func:`inv_freq` at
    ``dim = S`` (for ``type == "default"`` the plain ``base ** -(2i / S)``) or, for longrope,
    :func:`longrope`'s dict at ``dim = S``. The port computes the variant's ``S/2`` frequencies
    from ``freq`` exactly as for ``rope.inv_freq`` and sets pairs ``i >= rd/2`` to frequency 0
    (proportional rotation). ``rope_type="proportional"`` needs ``partial="proportional"`` and
    is the plain frequencies over ``S`` divided by ``factor`` (1 when None). An unknown keyword
    is rejected, as the reference rejects it.
    """
    unknown = sorted(set(params) - set(SCALING_KEYS) - set(_OWN_KEYS[op]))
    if unknown:
        raise invalid(f"unknown keyword {unknown[0]!r}")
    kind = choice("rope_type", params.get("rope_type", "default"), (*INV_FREQ_TYPES, "longrope"))
    if kind == "proportional" and params["partial"] != "proportional":
        raise invalid("rope_type='proportional' needs partial='proportional'")
    explicit = params.get("scaling_attention_factor")
    if kind == "longrope":
        lists = {"short_factor": params["short_factor"], "long_factor": params["long_factor"]}
        for name, value in lists.items():
            if value is None and (name == "long_factor") == (
                    int(params["context_length"] or 0) > int(params["original_max_position"] or 0)):
                raise invalid(f"rope_type='longrope' needs {name}")
        freq = longrope({**params, "dim": space, "attention_factor": explicit, "longrope_convention": "transformers"},
                        {k: np.asarray(v if v is not None else [1.0], dtype=np.float64) for k, v in lists.items()})
    else:
        freq = inv_freq({**params, "dim": space, "attention_factor": explicit, "partial_rotary_factor": 1.0})
    return {"type": kind, "a": positive("attention_factor", params["attention_factor"]) * float(freq["a"]),
            "freq": freq}


def rotate_cached(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> dict[str, Any]:
    """``rope.rotate``: ``{"x": 4-D, "positions": (B|1, T) int64 rows, "cos": (N, P), "sin": (N, P)}``.

    The first ``2P`` channels rotate at ``cos[positions]``/``sin[positions]``; the rest pass through.
    """
    choice("layout", params["layout"], ("half", "interleaved"))
    x_layout = choice("x_layout", params["x_layout"], ("BHTD", "BTHD"))
    x = finite_array("x", inputs["x"], ndim=4)
    cos, sin = finite_array("cos_cache", inputs["cos_cache"], ndim=2), finite_array("sin_cache", inputs["sin_cache"],
                                                                                     ndim=2)
    if cos.shape != sin.shape:
        raise invalid_shape(f"cos_cache and sin_cache must have the same shape, got {cos.shape} and {sin.shape}")
    if 2 * cos.shape[1] > x.shape[-1]:
        raise invalid_shape(f"the caches rotate {2 * cos.shape[1]} channels, more than the head dim {x.shape[-1]}")
    pos = rope_positions("positions", inputs["positions"], x, x_layout)
    if pos.size and int(pos.max()) >= cos.shape[0]:
        raise Rejected("out_of_range", f"positions must be < the cache length {cos.shape[0]}, got {int(pos.max())}")
    return {"x": x, "positions": pos, "cos": cos, "sin": sin}


def rotate_freq(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> dict[str, Any]:
    """``rope.rotate_freq``: ``{"x": 4-D, "positions": (B|1, T) int64, "inv_freq": (P,) >= 0, "a": float}``.

    The first ``2P`` channels rotate at angle ``positions[t] * inv_freq[i]``; the rest pass through.
    """
    choice("layout", params["layout"], ("half", "interleaved"))
    x_layout = choice("x_layout", params["x_layout"], ("BHTD", "BTHD"))
    a = positive("attention_factor", params["attention_factor"])
    x = finite_array("x", inputs["x"], ndim=4)
    w = finite_array("inv_freq", inputs["inv_freq"], ndim=1)
    if (w < 0).any():
        raise invalid(f"inv_freq must be >= 0, got {float(w.min())!r}")
    if 2 * w.size > x.shape[-1]:
        raise invalid_shape(f"inv_freq rotates {2 * w.size} channels, more than the head dim {x.shape[-1]}")
    return {"x": x, "positions": rope_positions("positions", inputs["positions"], x, x_layout), "inv_freq": w, "a": a}


def rope_apply(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray, int, int]:
    """``rope.apply``: x (4-D), positions (B|1, T), S, rd."""
    choice("layout", params["layout"], ("half", "interleaved", "interleaved_to_half"))
    x_layout = choice("x_layout", params["x_layout"], ("BHTD", "BTHD"))
    x = finite_array("x", inputs["x"], ndim=4)
    space, rd = rotary(params, x.shape[-1])
    return x, rope_positions("positions", inputs["positions"], x, x_layout), space, rd


def rope_scores(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> tuple[
        np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
    """``rope.scores``: q, k, q_positions, k_positions, S."""
    choice("layout", params["layout"], ("half", "interleaved"))
    x_layout = choice("x_layout", params["x_layout"], ("BHTD", "BTHD"))
    q, k = finite_array("q", inputs["q"], ndim=4), finite_array("k", inputs["k"], ndim=4)
    h_axis = 1 if x_layout == "BHTD" else 2
    if q.shape[0] != k.shape[0] or q.shape[h_axis] != k.shape[h_axis] or q.shape[-1] != k.shape[-1]:
        raise invalid_shape(f"q and k must agree on B, H and D, got {q.shape} and {k.shape}")
    space, _ = rotary(params, q.shape[-1])
    if params["xpos_scale_base"] is not None:
        positive("xpos_scale_base", params["xpos_scale_base"])
    return (q, k, rope_positions("q_positions", inputs["q_positions"], q, x_layout),
            rope_positions("k_positions", inputs["k_positions"], k, x_layout), space)


def alibi(params: Mapping[str, Any]) -> tuple[int, str, float]:
    """``alibi.slopes`` / ``alibi.bias`` parameters: H, rule, bias_max."""
    heads = integer("num_heads", params["num_heads"], 1)
    rule = choice("slope_rule", params["slope_rule"], ("press", "geometric"))
    return heads, rule, positive("bias_max", params["bias_max"])


def alibi_exponents(heads: int, rule: str, bias_max: float) -> np.ndarray:
    """``x_h`` with ``m_h = 2**-x_h``: the authors' power-of-two ladder plus every other head of
    the ``2c`` ladder (press), or ``bias_max * h / H`` (geometric). Exact in float64."""
    h = np.arange(1, heads + 1, dtype=np.float64)
    if rule == "geometric":
        return bias_max * h / heads
    c = 1 << (heads.bit_length() - 1)
    extra = 2 * np.arange(heads - c, dtype=np.float64) + 1
    return np.concatenate([bias_max * h[:c] / c, bias_max * extra / (2 * c)])


def t5(params: Mapping[str, Any]) -> tuple[int, int, int, str]:
    """T5 parameters: (num_buckets, max_distance, side, direction)."""
    direction = choice("direction", params["direction"], ("bidirectional", "unidirectional"))
    buckets = integer("num_buckets", params["num_buckets"], 1)
    limit = integer("max_distance", params["max_distance"], 1)
    side = buckets // 2 if direction == "bidirectional" else buckets
    if side < 2:
        raise invalid(f"num_buckets={buckets} leaves no log region under direction={direction!r}")
    if limit <= side // 2:
        raise invalid(f"max_distance must be > {side // 2}, got {limit}")
    return buckets, limit, side, direction


def t5_table(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray], buckets: int) -> np.ndarray:
    """The (N, H) table of ``t5.bias`` whatever its layout."""
    layout = choice("table_layout", params["table_layout"], ("buckets_heads", "heads_buckets"))
    table = finite_array("table", inputs["table"], ndim=2)
    per_bucket = table if layout == "buckets_heads" else table.T
    if per_bucket.shape[0] != buckets:
        raise invalid_shape(f"table has {per_bucket.shape[0]} bucket rows, num_buckets={buckets}")
    return per_bucket


def deberta(params: Mapping[str, Any]) -> tuple[int, int, str]:
    """DeBERTa parameters: (position_buckets, max_relative_positions, distance_clamp)."""
    clamp = choice("distance_clamp", params["distance_clamp"], ("none", "max_relative_positions"))
    buckets = integer("position_buckets", params["position_buckets"], 4)
    limit = integer("max_relative_positions", params["max_relative_positions"], 1)
    if limit - 1 <= buckets // 2:
        raise invalid(f"max_relative_positions - 1 must be > {buckets // 2}, got {limit}")
    return buckets, limit, clamp


def relative(name: str, value: Any) -> np.ndarray:
    return positions(name, value, nonnegative=False)


INV_FREQ_TYPES = ("default", "linear", "ntk_aware", "dynamic", "yarn", "llama3", "proportional")


def _needed(params: Mapping[str, Any], name: str) -> Any:
    if params[name] is None:
        raise invalid(f"rope_type={params['rope_type']!r} needs {name}")
    return params[name]


def inv_freq(params: Mapping[str, Any]) -> dict[str, Any]:
    """``rope.inv_freq`` (every type but longrope): the scalar bookkeeping in Python float64, as
    transformers does it: ``base`` and the scaled base, the per-type scalars, and for YaRN the ramp
    ends and the two factors. The per-pair arrays are the adapter's to compute."""
    kind = choice("rope_type", params["rope_type"], INV_FREQ_TYPES)
    dim = integer("dim", params["dim"], 4 if kind in ("dynamic", "ntk_aware") else 2)
    if dim % 2:
        raise invalid(f"dim must be even, got {dim}")
    base = base_value(params["base"])
    choice("dynamic_convention", params["dynamic_convention"], ("transformers", "vllm_static"))
    yarn_convention = choice("yarn_convention", params["yarn_convention"], ("transformers", "vllm_deepseek"))
    s = 1.0
    if kind not in ("default", "proportional") or params["factor"] is not None:
        s = positive("factor", _needed(params, "factor"))
        if s < 1.0:
            raise invalid(f"factor must be >= 1 for rope_type={kind!r}, got {s}")
    out: dict[str, Any] = {"type": kind, "dim": dim, "base": base, "s": s, "a": 1.0, "softmax": 1.0}
    if kind == "proportional":
        rho = positive("partial_rotary_factor", params["partial_rotary_factor"])
        if rho > 1.0:
            raise invalid(f"partial_rotary_factor must be <= 1, got {rho}")
        out["turning"] = int(rho * dim // 2)
    elif kind == "ntk_aware":
        out["base"] = base * s ** (dim / (dim - 2))
    elif kind == "dynamic":
        trained = integer("original_max_position", _needed(params, "original_max_position"), 1)
        length = integer("context_length", _needed(params, "context_length"), 1)
        if params["dynamic_convention"] == "transformers":
            length = max(length, trained)
        bracket = s * length / trained - (s - 1.0)
        if bracket <= 0:
            raise invalid(f"the dynamic NTK bracket must be > 0, got {bracket}")
        out["base"] = base * bracket ** (dim / (dim - 2))
    elif kind == "llama3":
        out["original"] = integer("original_max_position", _needed(params, "original_max_position"), 1)
        low = positive("low_freq_factor", _needed(params, "low_freq_factor"))
        high = positive("high_freq_factor", _needed(params, "high_freq_factor"))
        if low >= high:
            raise invalid(f"low_freq_factor must be < high_freq_factor, got {low} >= {high}")
        out["low"], out["high"] = low, high
    elif kind == "yarn":
        original = integer("original_max_position", _needed(params, "original_max_position"), 1)
        if base <= 1.0:
            raise invalid(f"base must be > 1 for yarn, got {base}")

        def mscale(m: float = 1.0) -> float:
            return 1.0 if s <= 1.0 else 0.1 * m * np.log(s) + 1.0

        m, m_all = params["mscale"], params["mscale_all_dim"]
        truncate = bool(params["truncate"])
        ext = float(params.get("ext_factor", 1.0))
        if not 0.0 <= ext <= 1.0:
            raise invalid(f"ext_factor must be in [0, 1], got {params.get('ext_factor')!r}")
        out["ext"] = ext
        if yarn_convention == "vllm_deepseek":
            truncate = True
            out["a"] = mscale(1.0 if m is None else float(m)) / mscale(0.0 if m_all is None else float(m_all))
        elif params["attention_factor"] is not None:
            out["a"] = positive("attention_factor", params["attention_factor"])
        elif ext == 0.0:
            out["a"] = 1.0  # ggml: no magnitude correction without extrapolation
        elif m and m_all:
            out["a"] = mscale(float(m)) / mscale(float(m_all))
        else:
            out["a"] = mscale()

        def correction(rotations: float) -> float:
            return float(dim * np.log(original / (rotations * 2 * np.pi)) / (2 * np.log(base)))

        lo, hi = correction(float(params["beta_fast"] or 32.0)), correction(float(params["beta_slow"] or 1.0))
        if truncate:
            lo, hi = float(np.floor(lo)), float(np.ceil(hi))
        lo, hi = max(lo, 0.0), min(hi, dim - 1.0)
        out["ramp"] = (lo, hi + 0.001 if lo == hi else hi)  # gamma = clip((i - lo) / (hi - lo), 0, 1)
        # with ext_factor e the blend weight is gamma + (1 - gamma) * (1 - e) (gamma itself when e = 1)
        out["softmax"] = mscale(float(m_all)) ** 2 if m_all else 1.0
    return out


def attention_mask(inputs: Mapping[str, np.ndarray]) -> np.ndarray:
    """``alibi.mask_positions``: a (B, T) mask of 0 and 1 as int64."""
    mask = positions("attention_mask", inputs["attention_mask"])
    if mask.ndim != 2:
        raise invalid_shape(f"attention_mask must have shape (B, T), got {mask.shape}")
    if mask.max() > 1:
        raise invalid(f"attention_mask must hold 0 or 1, got {int(mask.max())}")
    return mask


def xpos(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``rope.xpos``: q, k (same 4-D shape, even D) and positions (B|1, T)."""
    choice("centring", params["centring"], ("lucidrains", "torchscale"))
    choice("layout", params["layout"], ("interleaved", "half"))
    x_layout = choice("x_layout", params["x_layout"], ("BHTD", "BTHD"))
    positive("scale_base", params["scale_base"])
    base_value(params["base"])
    q, k = finite_array("q", inputs["q"], ndim=4), finite_array("k", inputs["k"], ndim=4)
    if q.shape != k.shape:
        raise invalid_shape(f"q and k must have the same shape, got {q.shape} and {k.shape}")
    if q.shape[-1] % 2:
        raise invalid(f"the head dim must be even, got {q.shape[-1]}")
    return q, k, rope_positions("positions", inputs["positions"], q, x_layout)


def mrope(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """``rope.mrope_cos_sin``: positions (3, ...) and each pair's stream (P,) (0 = T, 1 = H, 2 = W)."""
    dim = integer("dim", params["dim"], 2)
    if dim % 2:
        raise invalid(f"dim must be even, got {dim}")
    layout = choice("mrope_layout", params["mrope_layout"], ("chunked", "interleaved"))
    choice("width", params["width"], ("half", "full"))
    base_value(params["base"])
    section = positions("mrope_section", inputs["mrope_section"])
    if section.shape != (3,) or int(section.sum()) != dim // 2:
        raise invalid(f"mrope_section must be three counts summing to dim/2 = {dim // 2}, got {section.tolist()}")
    pos = positions("positions", inputs["positions"])
    if pos.ndim < 1 or pos.shape[0] != 3:
        raise invalid_shape(f"positions must have three streams on axis 0, got shape {pos.shape}")
    i = np.arange(dim // 2)
    if layout == "chunked":  # the first s0 pairs read T, the next s1 read H, the rest W
        stream = np.searchsorted(np.cumsum(section), i, side="right")
    else:  # T, H, W round robin while each stream has pairs left, then T
        stream = np.zeros(dim // 2, dtype=np.int64)
        stream[(i % 3 == 1) & (i < 3 * section[1])] = 1
        stream[(i % 3 == 2) & (i < 3 * section[2])] = 2
    return pos, stream


def deberta_scores(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> dict[str, Any]:
    """``deberta.scores``: 1-D positions, q (H, Tq, D), k (H, Tk, D), pos_key/pos_query (H, 2b, D)."""
    terms = choice("pos_att_type", params["pos_att_type"], ("c2p|p2c", "c2p", "p2c")).split("|")
    buckets, limit, clamp = deberta(params)
    qp = positions("query_positions", inputs["query_positions"])
    kp = positions("key_positions", inputs["key_positions"])
    if qp.ndim != 1 or kp.ndim != 1:
        raise invalid_shape(f"query_positions and key_positions must be 1-D, got {qp.shape} and {kp.shape}")
    arrays = {n: finite_array(n, inputs[n], ndim=3) for n in ("q", "k", "pos_key", "pos_query")}
    heads, _, dim = arrays["q"].shape
    wanted = {"q": (heads, qp.size, dim), "k": (heads, kp.size, dim), "pos_key": (heads, 2 * buckets, dim),
              "pos_query": (heads, 2 * buckets, dim)}
    for name, shape in wanted.items():
        if arrays[name].shape != shape:
            raise invalid_shape(f"{name} must have shape {shape}, got {arrays[name].shape}")
    return {**arrays, "qp": qp, "kp": kp, "terms": terms, "buckets": buckets, "limit": limit, "clamp": clamp}


def shaw(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray], op: str) -> dict[str, Any]:
    """``shaw.*``: K, the clipped table rows ``index`` (Tq, Tk) and the op's checked arrays. Query
    positions must be among the key positions (self-attention, with memory or a cache)."""
    k = integer("max_relative_position", params["max_relative_position"], 1)
    sign = choice("sign", params["sign"], ("key_minus_query", "query_minus_key"))
    qp, kp = positions("q_positions", inputs["q_positions"]), positions("k_positions", inputs["k_positions"])
    if qp.ndim != 1 or kp.ndim != 1:
        raise invalid_shape(f"q_positions and k_positions must be 1-D, got {qp.shape} and {kp.shape}")
    if not np.isin(qp, kp).all():
        raise invalid("every query position must be a key position (cross-attention is not defined)")
    distance = kp[None, :] - qp[:, None]
    index = np.clip(-distance if sign == "query_minus_key" else distance, -k, k) + k
    out: dict[str, Any] = {"index": index, "rows": 2 * k + 1}
    tq, tk = index.shape
    if op == "shaw.logits":
        q, kk = finite_array("q", inputs["q"], ndim=2), finite_array("k", inputs["k"], ndim=2)
        table = finite_array("rel_keys", inputs["rel_keys"], ndim=2)
        if q.shape[0] != tq or kk.shape[0] != tk or kk.shape[1] != q.shape[1] or table.shape != (2 * k + 1, q.shape[1]):
            raise invalid_shape(f"q {q.shape}, k {kk.shape}, rel_keys {table.shape} do not fit Tq={tq}, Tk={tk}, K={k}")
        out.update(q=q, k=kk, table=table)
    elif op == "shaw.output":
        alpha = finite_array("weights", inputs["weights"], ndim=2)
        v, table = finite_array("v", inputs["v"], ndim=2), finite_array("rel_values", inputs["rel_values"], ndim=2)
        if alpha.shape != (tq, tk) or v.shape[0] != tk or table.shape != (2 * k + 1, v.shape[1]):
            raise invalid_shape(f"weights {alpha.shape}, v {v.shape}, rel_values {table.shape} do not fit "
                         f"Tq={tq}, Tk={tk}, K={k}")
        out.update(weights=alpha, v=v, table=table)
    return out


LONGROPE_CONVENTIONS = ("transformers", "vllm")


def longrope(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> dict[str, Any]:
    """``rope.longrope_inv_freq``: the factor list in use and the scalars, as transformers picks them.

    Returns ``{"dim": d, "base": float, "s": factor (may be < 1), "original": L0, "length": L,
    "long": L > L0, "factors": (d/2,) float64 (long_factor if L > L0 else short_factor, each > 0),
    "a": the attention factor (float; the explicit one under "transformers", else 1 for s <= 1 and
    sqrt(1 + ln s / ln L0) otherwise)}``. The port computes ``1 / (factors * base ** (2i / d))``.
    Only the list in use is checked, as the reference does.
    """
    convention = choice("longrope_convention", params["longrope_convention"], LONGROPE_CONVENTIONS)
    dim = integer("dim", params["dim"], 2)
    if dim % 2:
        raise invalid(f"dim must be even, got {dim}")
    base = base_value(params["base"])
    s = positive("factor", _needed({**params, "rope_type": "longrope"}, "factor"))
    original = integer("original_max_position", params["original_max_position"], 1)
    length = integer("context_length", params["context_length"], 1)
    long = length > original
    name = "long_factor" if long else "short_factor"
    factors = finite_array(name, inputs[name], ndim=1)
    if factors.shape != (dim // 2,):
        raise invalid(f"{name} must have length dim/2 = {dim // 2}, got length {factors.shape[0]}")
    if (factors <= 0).any():
        raise invalid(f"{name} must be > 0, got {float(factors.min())!r}")
    with np.errstate(over="ignore", divide="ignore", under="ignore"):  # the smallest factor * base ** (2i / d)
        low = factors.min() * min(1.0, np.float64(base) ** ((dim - 2) / dim))
        if not np.isfinite(1.0 / low):
            raise invalid(f"base={base} and {name} overflow float64 in the inverse frequencies")
    explicit = params["attention_factor"]
    if convention == "transformers" and explicit is not None:
        a = positive("attention_factor", explicit)
    else:  # vLLM and llama.cpp never read an explicit attention_factor
        a = 1.0 if s <= 1.0 else float(np.sqrt(1.0 + np.log(s) / np.log(original)))
    return {"dim": dim, "base": base, "s": s, "original": original, "length": length, "long": long,
            "factors": factors, "a": a}


def _self_positions(inputs: Mapping[str, np.ndarray], q_name: str = "q_positions",
                    k_name: str = "k_positions") -> tuple[np.ndarray, np.ndarray]:
    """1-D query and key positions (int64), every query position among the keys (self-attention)."""
    qp, kp = positions(q_name, inputs[q_name]), positions(k_name, inputs[k_name])
    for name, pos in ((q_name, qp), (k_name, kp)):
        if pos.ndim != 1:
            raise invalid_shape(f"{name} must be 1-D, got shape {pos.shape}")
    outside = ~np.isin(qp, kp)
    if outside.any():
        where = int(np.argmax(outside))
        raise invalid(f"query position {int(qp[where])} ({q_name}[{where}]) is not among the key positions "
                       "(cross-attention is not defined)")
    return qp, kp


def _sinusoid_width(name: str, width: int) -> int:
    if width < 2 or width % 2:
        raise invalid(f"the sinusoid width D_r of {name} must be even and >= 2, got {width}")
    return width


def xl_score(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> dict[str, Any]:
    """``transformer_xl.score``: one head, direct indexing by ``p_i - p_j`` (query minus key).

    Returns ``{"q": (Tq, D), "k": (Tk, D), "u": (D,), "v": (D,), "w_r": (D_r, D) float64 with D_r
    even, "qp": (Tq,), "kp": (Tk,) int64, "distance": (Tq, Tk) int64 p_i - p_j, clipped to
    [-clamp_len, clamp_len] when clamp_len > 0, "base": float, "clamp_len": int}``. The score is
    ``(q + u) @ k.T + (q + v) . (R_distance @ w_r)`` with ``R = [sin(distance w) | cos(distance w)]``,
    ``w_k = base ** (-2k / D_r)``; no scale.
    """
    qp, kp = _self_positions(inputs)
    clamp_len = integer("clamp_len", params["clamp_len"], -1)
    q, k = finite_array("q", inputs["q"], ndim=2), finite_array("k", inputs["k"], ndim=2)
    w_r = finite_array("w_r", inputs["w_r"], ndim=2)
    dim = q.shape[1]
    for name, array, want in (("q", q, (qp.size, dim)), ("k", k, (kp.size, dim)), ("w_r", w_r, (w_r.shape[0], dim))):
        if array.shape != want:
            raise invalid_shape(f"{name} must have shape {want} (positions and the width of q), got {array.shape}")
    biases = {}
    for name in ("u", "v"):
        biases[name] = finite_array(name, inputs[name], ndim=1)
        if biases[name].shape != (dim,):
            raise invalid_shape(f"{name} must have shape ({dim},), got {biases[name].shape}")
    _sinusoid_width("w_r", w_r.shape[0])
    base = base_value(params["base"])
    distance = qp[:, None] - kp[None, :]
    if clamp_len > 0:
        distance = np.clip(distance, -clamp_len, clamp_len)
    return {"q": q, "k": k, "u": biases["u"], "v": biases["v"], "w_r": w_r, "qp": qp, "kp": kp,
            "distance": distance, "base": base, "clamp_len": clamp_len}


def rel_shift(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> dict[str, Any]:
    """``transformer_xl.rel_shift``: ``{"variant": str, "x": (Tq, R) float64, "k_len": Tk, "tq": Tq,
    "rows": R}`` with ``Tk >= Tq``; ``R == Tk`` (transformer_xl) or ``R >= Tk + 1`` (xlnet).

    The port does the codebase's pad-and-reshape itself, and builds ``valid`` (Tq, Tk) int64:
    ``j <= Tk - Tq + i`` (transformer_xl) or ``j + Tq - i < R`` (xlnet).
    """
    variant = choice("variant", params["variant"], ("transformer_xl", "xlnet"))
    x = finite_array("x", inputs["x"], ndim=2)
    tq, rows = x.shape
    k_len = integer("k_len", params["k_len"], 1)
    if k_len < tq:
        raise invalid(f"k_len must be >= Tq = {tq} (memory length k_len - Tq >= 0), got {k_len}")
    if variant == "transformer_xl" and rows != k_len:
        raise invalid_shape(f"the transformer_xl shift takes R = k_len = {k_len} rows, got x of shape {x.shape}")
    if variant == "xlnet" and rows < k_len + 1:
        raise invalid_shape(f"the xlnet shift takes R >= k_len + 1 = {k_len + 1} rows, got x of shape {x.shape}")
    return {"variant": variant, "x": x, "k_len": k_len, "tq": tq, "rows": rows}


RESAMPLE_KERNELS = ("bicubic", "bilinear")


def resample_axis(params: Mapping[str, Any], in_size: Any, new_size: Any, name: str = "new_size") -> dict[str, Any]:
    """One resampled axis: ``{"n": input size, "m": output size, "scale": input samples per output
    sample (float; (n-1)/(m-1), or 0 for m = 1, under align_corners), "kernel": "bicubic" | "bilinear",
    "a": cubic_a (float), "antialias": bool, "align_corners": bool}``.

    ``m`` is ``new_size`` under ``size_from="size"``, else ``floor(n * ((new_size + scale_offset) /
    n))`` in float64 (F.interpolate's floor) with ``scale = n / (new_size + scale_offset)``.
    """
    n = integer("in_size", in_size, 1)
    new = integer(name, new_size)
    if new < 1:
        raise invalid(f"{name} must be >= 1 (resampling to an empty table), got {new}")
    kernel = choice("kernel", params["kernel"], RESAMPLE_KERNELS)
    a = float(params["cubic_a"])
    if not np.isfinite(a):
        raise invalid(f"cubic_a must be finite, got {params['cubic_a']!r}")
    antialias = choice("antialias", params["antialias"], ("off", "on")) == "on"
    align = choice("coordinates", params["coordinates"], ("half_pixel", "align_corners")) == "align_corners"
    by_size = choice("size_from", params["size_from"], ("size", "scale_factor")) == "size"
    offset = float(params["scale_offset"])
    if not np.isfinite(offset) or offset < 0:
        raise invalid(f"scale_offset must be finite and >= 0, got {params['scale_offset']!r}")
    if antialias and align:
        raise invalid("antialias='on' is defined for coordinates='half_pixel' only, got coordinates='align_corners'")
    if by_size:
        if offset:
            raise invalid(f"scale_offset applies under size_from='scale_factor' only, got {offset!r}")
        m, scale = new, n / new
    else:
        factor = (new + offset) / n
        m = int(np.floor(float(n) * factor))
        if m < 1:
            raise invalid(f"scale factor {factor!r} gives an output size < 1 for in_size={n}")
        scale = 1.0 / factor
    if align:
        scale = (n - 1) / (m - 1) if m > 1 else 0.0
    return {"n": n, "m": m, "scale": scale, "kernel": kernel, "a": a, "antialias": antialias, "align_corners": align}


def resample_weights(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> dict[str, Any]:
    """``resample.weights``: :func:`resample_axis` of ``in_size -> new_size``; the port builds the
    (m, n) matrix."""
    return resample_axis(params, params["in_size"], params["new_size"])


def resample_table_1d(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> dict[str, Any]:
    """``resample.table_1d``: ``{"prefix": (P, D), "rows": (L, D) float64 (L >= 1), "axis":
    resample_axis(L -> new_length)}``; the output is ``prefix`` then ``W @ rows``."""
    table = finite_array("table", inputs["table"], ndim=2)
    prefix = integer("num_prefix_tokens", params["num_prefix_tokens"], 0)
    if table.shape[0] <= prefix:
        raise invalid_shape(f"table has {table.shape[0]} rows, expected num_prefix_tokens = {prefix} prefix rows "
                     "and at least one more")
    axis = resample_axis(params, table.shape[0] - prefix, params["new_length"], "new_length")
    return {"prefix": table[:prefix], "rows": table[prefix:], "axis": axis}


def resample_grid_2d(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> dict[str, Any]:
    """``resample.grid_2d``: ``{"prefix": (P, D), "grid": (H, W, D) float64 (rows in row-major
    order), "height": resample_axis(H -> new_height), "width": resample_axis(W -> new_width)}``;
    the output is ``prefix`` then ``einsum("ph,hwd,qw->pqd", W_h, grid, W_w).reshape(m_H * m_W, D)``."""
    height = integer("grid_height", params["grid_height"], 1)
    width = integer("grid_width", params["grid_width"], 1)
    table = finite_array("table", inputs["table"], ndim=2)
    prefix = integer("num_prefix_tokens", params["num_prefix_tokens"], 0)
    if table.shape[0] != prefix + height * width:
        raise invalid_shape(f"table has {table.shape[0]} rows, expected num_prefix_tokens + grid_height * grid_width = "
                     f"{prefix} + {height} x {width} = {prefix + height * width}")
    return {"prefix": table[:prefix], "grid": table[prefix:].reshape(height, width, -1),
            "height": resample_axis(params, height, params["new_height"], "new_height"),
            "width": resample_axis(params, width, params["new_width"], "new_width")}
