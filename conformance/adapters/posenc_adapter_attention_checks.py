"""Input checks of the attention ops for the framework adapters (NumPy only, independent of posenc_ref):
``attention``, ``attention.terms``, ``attention.pipeline`` and the ``attention.<scheme>`` ops. Each
returns the checked arrays and parameters the adapters compute from, or raises
:class:`posenc_adapter_shared.Rejected` with the corpus's error category. The other ops' checks are
in :mod:`posenc_adapter_checks`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from posenc_adapter_checks import (
    _self_positions,
    _sinusoid_width,
    alibi_exponents,
    finite_array,
    query_key,
    rotary,
    shaw,
    t5,
    t5_table,
)
from posenc_adapter_shared import Rejected, base_value, choice, integer, invalid, invalid_shape, positions


def attention(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> dict[str, Any]:
    """``attention``: checked arrays, the resolved keep mask (B|1, H|1, Tq, Tk) with and without
    (``keep_nc``) the causal part, the additive part, the scale and the fully masked rows."""
    q, k, v = (finite_array(n, inputs[n], ndim=4) for n in ("q", "k", "v"))
    b, h, tq, d = q.shape
    if k.shape != v.shape or k.shape[0] != b or k.shape[3] != d or h % k.shape[1]:
        raise invalid_shape(f"k and v must be (B, Hkv, Tk, D) with H % Hkv == 0, "
                            f"got q {q.shape}, k {k.shape}, v {v.shape}")
    tk = k.shape[2]
    alignment = choice("alignment", params["alignment"], ("top_left", "bottom_right"))
    choice("fully_masked", params["fully_masked"], ("zeros", "nan", "uniform", "error"))
    if not isinstance(params["causal"], (bool, np.bool_)):
        raise TypeError(f"causal must be a bool, got {params['causal']!r}")
    window = None if params["window"] is None else integer("window", params["window"], 1)
    scale = 1.0 / np.sqrt(d) if params["scale"] is None else float(params["scale"])
    if not np.isfinite(scale):
        raise invalid(f"scale must be finite, got {params['scale']!r}")
    multiplier = float(params.get("softmax_multiplier", 1.0))  # DeepSeek's YaRN factor (1 elsewhere)
    if not (np.isfinite(multiplier) and multiplier > 0):
        raise invalid(f"softmax_multiplier must be a finite number > 0, got {multiplier!r}")
    scale *= multiplier
    target = (b, h, tq, tk)

    def fits(name: str, array: np.ndarray) -> None:
        if array.ndim > 4 or any(a not in (1, t) for a, t in zip(array.shape[::-1], target[::-1])):
            raise invalid_shape(f"{name} must broadcast to {target}, got {array.shape}")

    mask = np.asarray(inputs["mask"])
    fits("mask", mask)
    padding = np.asarray(inputs["key_padding_mask"])
    if padding.dtype.kind != "b":
        raise TypeError(f"key_padding_mask must be boolean, got {padding.dtype}")
    if padding.ndim != 2 or padding.shape[1] != tk or padding.shape[0] not in (1, b):
        raise invalid_shape(f"key_padding_mask must have shape ({b}, {tk}), got {padding.shape}")
    bias = finite_array("bias", inputs["bias"])
    fits("bias", bias)
    i = np.arange(tq)[:, None] + (tk - tq if alignment == "bottom_right" else 0)
    j = np.arange(tk)[None, :]
    keep = np.ones((tq, tk), dtype=bool)
    if window is not None:
        keep &= (i - j) < window
        if not params["causal"]:
            keep &= (j - i) < window
    keep_nc = keep[None, None] & padding[:, None, None, :]  # without the causal mask
    keep = keep_nc & (j <= i) if params["causal"] else keep_nc
    additive = np.zeros((1, 1, 1, 1))
    if mask.dtype == np.bool_:
        keep, keep_nc = keep & mask, keep_nc & mask
    else:
        additive = np.asarray(mask, dtype=np.float64)
        if np.isnan(additive).any() or np.isposinf(additive).any():
            raise invalid("an additive mask must hold finite values or -inf")
        keep, keep_nc = keep & ~np.isneginf(additive), keep_nc & ~np.isneginf(additive)
        additive = np.where(np.isneginf(additive), 0.0, additive)
    empty = ~np.broadcast_to(keep, target).any(axis=-1)
    if params["fully_masked"] == "error" and empty.any():
        raise invalid(f"query row {tuple(int(x) for x in np.argwhere(empty)[0])} has every key masked")
    return {"q": q, "k": k, "v": v, "keep": keep, "keep_nc": keep_nc, "additive": additive, "bias": bias,
            "scale": scale, "empty": empty, "policy": params["fully_masked"], "groups": h // k.shape[1]}


def plain_attention(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> dict[str, Any]:
    """:func:`attention` of q, k, v under ``scale``, ``softmax_multiplier`` (1 when absent),
    ``causal`` and ``alignment``: no mask, padding, window or bias (``bias`` and ``additive`` are
    zeros (1, 1, 1, 1); the positional op supplies its own), fully masked rows give zeros."""
    k_shape = np.shape(inputs["k"])
    tk = k_shape[2] if len(k_shape) == 4 else 1
    full = {"scale": params["scale"], "softmax_multiplier": params.get("softmax_multiplier", 1.0),
            "causal": params["causal"], "alignment": params["alignment"], "window": None, "fully_masked": "zeros"}
    return attention(full, {"q": inputs["q"], "k": inputs["k"], "v": inputs["v"],
                            "mask": np.ones((1, 1, 1, 1), dtype=bool),
                            "key_padding_mask": np.ones((1, tk), dtype=bool), "bias": np.zeros((1, 1, 1, 1))})


def _broadcasts(name: str, shape: tuple[int, ...], target: tuple[int, ...]) -> None:
    if len(shape) > len(target) or any(a not in (1, t) for a, t in zip(shape[::-1], target[::-1])):
        raise invalid_shape(f"{name} must broadcast to {target}, got shape {shape}")


def attention_terms(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> dict[str, Any]:
    """``attention.terms``: :func:`plain_attention` plus ``"term"`` (broadcastable to (B, H, Tq, Tk),
    added to q . k *before* the scale) and ``"value_term"`` (broadcastable to (B, H, Tq, Tk, D),
    added to v under the weights), both float64."""
    a = plain_attention(params, inputs)
    b, h, tq, d = a["q"].shape
    tk = a["k"].shape[2]
    term = finite_array("term", inputs["term"])
    value_term = finite_array("value_term", inputs["value_term"])
    _broadcasts("term", term.shape, (b, h, tq, tk))
    _broadcasts("value_term", value_term.shape, (b, h, tq, tk, d))
    return {**a, "term": term, "value_term": value_term}


PE_PLACEMENTS = ("input", "after_block")


def attention_pipeline(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> dict[str, Any]:
    """``attention.pipeline``: one layer ``(E[tokens] + pe) W -> attention -> W_O`` (or pe added
    after W_O under ``pe_placement="after_block"``).

    Returns ``{"tokens": (B, T) int64 < N, "embedding": (N, d), "pe": (T, d) or (B, T, d), "w_q":
    (d, H*D), "w_k", "w_v": (d, Hkv*D), "w_o": (H*D, d) float64, "heads": H, "kv_heads": Hkv,
    "head_dim": D, "groups": H // Hkv, "scale": 1/sqrt(D), "causal": bool, "keep": (T, T) bool
    (lower triangle when causal, else all True), "placement": "input" | "after_block"}``. Heads
    split as (B, T, H, D) -> (B, H, T, D); query head h reads kv head h // groups.
    """
    placement = choice("pe_placement", params["pe_placement"], PE_PLACEMENTS)
    heads = integer("num_heads", params["num_heads"], 1)
    kv_heads = heads if params["num_kv_heads"] is None else integer("num_kv_heads", params["num_kv_heads"], 1)
    tokens = positions("tokens", inputs["tokens"])
    embedding = finite_array("embedding", inputs["embedding"], ndim=2)
    width = embedding.shape[1]
    if tokens.ndim != 2:
        raise invalid_shape(f"tokens must have shape (B, T), got {tokens.shape}")
    if tokens.max() >= embedding.shape[0]:
        raise Rejected("out_of_range", f"token id {int(tokens.max())} is beyond the {embedding.shape[0]}-row embedding")
    b, t = tokens.shape
    pe = finite_array("pe", inputs["pe"])
    if pe.shape not in ((t, width), (b, t, width)):
        raise invalid_shape(f"pe must have shape ({t}, {width}) or ({b}, {t}, {width}), got {pe.shape}")
    w = {name: finite_array(name, inputs[name], ndim=2) for name in ("w_q", "w_k", "w_v", "w_o")}
    if w["w_q"].shape[0] != width or w["w_q"].shape[1] % heads:
        raise invalid_shape(f"w_q must have shape ({width}, H*D) with H={heads}, got {w['w_q'].shape}")
    head_dim = w["w_q"].shape[1] // heads
    for name in ("w_k", "w_v"):
        if w[name].shape != (width, kv_heads * head_dim):
            raise invalid_shape(f"{name} must have shape ({width}, {kv_heads * head_dim}), got {w[name].shape}")
    if w["w_o"].shape != (heads * head_dim, width):
        raise invalid_shape(f"w_o must have shape ({heads * head_dim}, {width}), got {w['w_o'].shape}")
    if heads % kv_heads:
        raise invalid_shape(f"num_heads must be a multiple of num_kv_heads, got {heads} and {kv_heads}")
    causal = params["causal"]
    if not isinstance(causal, (bool, np.bool_)):
        raise TypeError(f"causal must be a bool, got {causal!r}")
    keep = np.tril(np.ones((t, t), dtype=bool)) if causal else np.ones((t, t), dtype=bool)
    return {"tokens": tokens, "embedding": embedding, "pe": pe, **w, "heads": heads, "kv_heads": kv_heads,
            "head_dim": head_dim, "groups": heads // kv_heads, "scale": 1.0 / np.sqrt(head_dim),
            "causal": bool(causal), "keep": keep, "placement": placement}


def _attention_positions(name: str, value: Any, batch: int, length: int) -> np.ndarray:
    """Positions (length,) or (1 | batch, length) as int64 (B|1, T)."""
    pos = positions(name, value)
    if pos.ndim not in (1, 2) or pos.shape[-1] != length or (pos.ndim == 2 and pos.shape[0] not in (1, batch)):
        raise invalid_shape(f"{name} must have shape ({length},) or ({batch}, {length}), got {pos.shape}")
    return pos.reshape(-1, length)


def attention_rope(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> dict[str, Any]:
    """``attention.rope``: :func:`plain_attention` plus ``"q_positions"`` (B|1, Tq) and
    ``"k_positions"`` (B|1, Tk) int64, ``"base"`` and ``"layout"`` ("half" | "interleaved"). The
    port rotates q at q_positions and k at k_positions over the whole (even) head dim with
    ``base ** (-2i / D)``, then attends (kv heads not repeated before the rotation)."""
    layout = choice("layout", params["layout"], ("half", "interleaved"))
    a = plain_attention(params, inputs)
    b, _, tq, d = a["q"].shape
    qp = _attention_positions("q_positions", inputs["q_positions"], b, tq)
    kp = _attention_positions("k_positions", inputs["k_positions"], b, a["k"].shape[2])
    rotary({"base": params["base"], "partial": "prefix", "attention_factor": 1.0, "rotary_dim": None}, d)
    return {**a, "q_positions": qp, "k_positions": kp, "base": base_value(params["base"]), "layout": layout}


ALIBI_FORMS = ("relative_causal", "key_only", "symmetric", "bottom_right")


def _bias_target(a: Mapping[str, Any]) -> tuple[int, int, int, int]:
    b, h, tq, _ = a["q"].shape
    return b, h, tq, a["k"].shape[2]


def attention_alibi(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> dict[str, Any]:
    """``attention.alibi``: :func:`plain_attention` plus ``"form"``, ``"q_positions"`` (..., Tq) and
    ``"k_positions"`` (..., Tk) int64 (equal leading shapes) and ``"exponents"`` (H,): head h's
    slope is ``2 ** -exponents[h]`` (press rule, bias_max 8, one slope per query head). The bias
    (..., H, Tq, Tk) of alibi.bias is added after the scale; it must broadcast to (B, H, Tq, Tk)."""
    form = choice("form", params["form"], ALIBI_FORMS)
    qp, kp = query_key(inputs, "q_positions", "k_positions")
    a = plain_attention(params, inputs)
    b, h, tq, tk = _bias_target(a)
    _broadcasts("the ALiBi bias of q_positions and k_positions", qp.shape[:-1] + (h, qp.shape[-1], kp.shape[-1]),
                (b, h, tq, tk))
    return {**a, "form": form, "q_positions": qp, "k_positions": kp, "exponents": alibi_exponents(h, "press", 8.0)}


def attention_t5(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> dict[str, Any]:
    """``attention.t5``: :func:`plain_attention` plus the :func:`t5` parameters (``"buckets"``,
    ``"limit"``, ``"side"``, ``"direction"``), ``"table"`` (N, Ht) float64 (buckets_heads layout),
    ``"q_positions"`` (..., Tq) and ``"k_positions"`` (..., Tk) int64. The bias
    ``table[bucket(j - i), h]`` (..., Ht, Tq, Tk) is added after the scale; it must broadcast to
    (B, H, Tq, Tk), so Ht is H or 1."""
    buckets, limit, side, direction = t5(params)
    table = t5_table({"table_layout": "buckets_heads"}, inputs, buckets)
    qp, kp = query_key(inputs, "q_positions", "k_positions")
    a = plain_attention(params, inputs)
    _broadcasts("the T5 bias of table, q_positions and k_positions",
                qp.shape[:-1] + (table.shape[1], qp.shape[-1], kp.shape[-1]), _bias_target(a))
    return {**a, "buckets": buckets, "limit": limit, "side": side, "direction": direction, "table": table,
            "q_positions": qp, "k_positions": kp}


def attention_shaw(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> dict[str, Any]:
    """``attention.shaw``: :func:`plain_attention` plus ``"index"`` (Tq, Tk) int64 (the clipped
    distance + K, as :func:`shaw`), ``"rel_keys"`` and ``"rel_values"`` (2K + 1, D) float64. The
    key term ``q_i . rel_keys[index[i, j]]`` is added to q . k *before* the scale, the value term
    ``rel_values[index[i, j]]`` to v under the weights. Positions: 1-D, queries among the keys."""
    k = integer("max_relative_position", params["max_relative_position"], 1)
    shaw_part = shaw(params, inputs, "attention.shaw")
    tables = {n: finite_array(n, inputs[n], ndim=2) for n in ("rel_keys", "rel_values")}
    if tables["rel_keys"].shape != tables["rel_values"].shape or tables["rel_keys"].shape[0] != 2 * k + 1:
        raise invalid_shape(f"rel_keys and rel_values must both have shape (2K + 1, D) with K={k}, "
                     f"got {tables['rel_keys'].shape} and {tables['rel_values'].shape}")
    a = plain_attention(params, inputs)
    b, _, tq, d = a["q"].shape
    _attention_positions("q_positions", inputs["q_positions"], b, tq)
    _attention_positions("k_positions", inputs["k_positions"], b, a["k"].shape[2])
    if tables["rel_keys"].shape[1] != d:
        raise invalid_shape(f"rel_keys and rel_values must have D={d} columns, got {tables['rel_keys'].shape}")
    return {**a, "index": shaw_part["index"], **tables}


def attention_xl(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> dict[str, Any]:
    """``attention.xl``: :func:`plain_attention` plus ``"u_bias"``, ``"v_bias"`` (H, D), ``"w_r"``
    (H, D_r, D) float64 with D_r even, ``"distance"`` (Tq, Tk) int64 ``p_i - p_j`` (query minus key,
    no clamping) and ``"base"``. The term ``(q_i + v_h) . (R_distance @ w_r[h]) + u_h . k_j`` (k
    mapped to query heads) is added to q . k *before* the scale. Positions: 1-D, queries among the keys."""
    qp, kp = _self_positions(inputs)
    u, v = finite_array("u_bias", inputs["u_bias"], ndim=2), finite_array("v_bias", inputs["v_bias"], ndim=2)
    w_r = finite_array("w_r", inputs["w_r"], ndim=3)
    heads, dim = u.shape
    if v.shape != (heads, dim) or w_r.shape[0] != heads or w_r.shape[2] != dim:
        raise invalid_shape(f"u_bias and v_bias must have shape (H, D) and w_r (H, D_r, D), got {u.shape}, {v.shape} "
                     f"and {w_r.shape}")
    a = plain_attention(params, inputs)
    b, h, tq, d = a["q"].shape
    _attention_positions("q_positions", qp, b, tq)
    _attention_positions("k_positions", kp, b, a["k"].shape[2])
    if (heads, dim) != (h, d):
        raise invalid_shape(f"u_bias, v_bias and w_r are for H={heads}, D={dim}, got queries of shape {a['q'].shape}")
    _sinusoid_width("w_r", w_r.shape[1])
    return {**a, "u_bias": u, "v_bias": v, "w_r": w_r, "distance": qp[:, None] - kp[None, :],
            "base": base_value(params["base"])}
