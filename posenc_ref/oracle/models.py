"""mpmath twins of the model ops (:mod:`posenc_ref.models.compute`).

The layer's parameters come from the resolver (reading a config is no arithmetic); every number
is then computed here from the published formulas, through the RoPE and bias twins
(:mod:`posenc_ref.oracle.rope`, :mod:`posenc_ref.oracle.bias`, :mod:`posenc_ref.oracle.absolute`):
frequencies at 50 digits, each rotated pair as ``(u c - v s, v c + u s)`` with ``(c, s) = a (cos, sin)(p w)``
at 50 digits and the products formed exactly in integers, rounded once; the
logit multiplier from ``head_dim`` (or ``query_pre_attn_scalar``; 1 for Gemma 4), DeepSeek's ``g(s, m_all)^2``
and the per-position temperature, each rounded once.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from fractions import Fraction
from typing import Any, Final

import mpmath
import numpy as np
from numpy.typing import NDArray

from posenc_ref.models import resolve
from posenc_ref.models.resolve import LayerPositions
from posenc_ref.oracle import alibi as oalibi
from posenc_ref.oracle import deberta as odeberta
from posenc_ref.oracle import rope as orope
from posenc_ref.oracle import sinusoidal as osinusoidal
from posenc_ref.oracle import t5 as ot5
from posenc_ref.oracle import transformer_xl as oxl
from posenc_ref.oracle._common import Oracle, to_float64

Inputs = Mapping[str, NDArray[Any]]
_YARN_KEYS: Final = ("beta_fast", "beta_slow", "mscale", "mscale_all_dim", "attention_factor")


def _layer(params: Mapping[str, Any]) -> LayerPositions:
    return resolve(params["config"]).layers[int(params["layer"])]


def _text(config: Mapping[str, Any]) -> Mapping[str, Any]:
    inner = config.get("text_config")
    return inner if isinstance(inner, Mapping) else config


def frequencies(p: Mapping[str, Any], context_length: int | None) -> tuple[list[Any], Any]:
    """The layer's inverse frequencies and attention factor, in mpmath."""
    d, kind = int(p["dim"]), p["rope_type"]
    one = mpmath.mpf(1)
    if kind == "default":
        return [orope._plain(p["base"], i, d) for i in range(d // 2)], one
    if kind == "linear":
        return [orope._plain(p["base"], i, d) / mpmath.mpf(p["factor"]) for i in range(d // 2)], one
    if kind == "proportional":
        turning = int(mpmath.floor(mpmath.mpf(p["partial_rotary_factor"]) * d / 2))
        s = mpmath.mpf(p.get("factor", 1))
        return [orope._plain(p["base"], i, d) / s if i < turning else mpmath.mpf(0) for i in range(d // 2)], one
    if kind == "llama3":
        return orope._llama3(p), one
    if kind == "dynamic":
        full = {**p, "context_length": context_length, "dynamic_convention": p.get("dynamic_convention",
                                                                                   "transformers")}
        return [orope._plain(orope._ntk_base(full), i, d) for i in range(d // 2)], one
    if kind == "yarn":
        full = {"yarn_convention": "transformers", "truncate": True, **{k: None for k in _YARN_KEYS}, **p}
        freqs, factor, _ = orope._yarn(full)
        return freqs, factor
    if kind == "longrope":
        original = int(p["original_max_position"])
        ext = p["long_factor"] if int(context_length or 0) > original else p["short_factor"]
        freqs = [1 / (mpmath.mpf(ext[i]) * mpmath.power(mpmath.mpf(p["base"]), mpmath.mpf(2 * i) / d))
                 for i in range(d // 2)]
        s = mpmath.mpf(p["factor"])
        if p.get("attention_factor") is not None:
            return freqs, mpmath.mpf(p["attention_factor"])
        return freqs, one if s <= 1 else mpmath.sqrt(1 + mpmath.log(s) / mpmath.log(original))
    raise KeyError(f"model.rope oracle: no twin for rope_type={kind!r}")


def _pairs(lp: LayerPositions) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """For each pair: the channels it is read from and written to (model layouts, suffix partial)."""
    p = lp.params
    start = lp.head_dim - int(p["rotary_dim"]) if p["partial"] == "suffix" else 0
    space = lp.head_dim if p["partial"] == "proportional" else int(p["rotary_dim"])
    out = []
    for i in range(space // 2):
        (ru, rv), (wu, wv) = orope._pair_channels(p["layout"], i, space)
        out.append(((start + ru, start + rv), (start + wu, start + wv)))
    return out


def _temperature(lp: LayerPositions, p: int) -> Any:
    rule = lp.temperature
    if rule is None:
        return mpmath.mpf(1)
    if rule["rule"] == "llama4":
        steps = (Fraction(p + 1) / Fraction(rule["floor_scale"])).__floor__()
        return mpmath.log1p(steps) * mpmath.mpf(rule["attn_scale"]) + 1
    steps = (Fraction(p) / Fraction(rule["original_max_position"])).__floor__()
    return 1 + mpmath.mpf(rule["beta"]) * mpmath.log1p(steps)


def _logit_base(lp: LayerPositions, config: Mapping[str, Any]) -> Any:
    text = _text(config)
    if text.get("model_type") == "gemma4_text":
        return mpmath.mpf(1)  # Gemma 4: scaling 1.0 (q and k RMS-normed instead)
    scalar = text.get("query_pre_attn_scalar") if text.get("model_type") in ("gemma2", "gemma3_text") else None
    if text.get("model_type") in ("gemma2", "gemma3_text") and scalar is None:
        scalar = 256
    value = 1 / mpmath.sqrt(mpmath.mpf(scalar if scalar is not None else lp.head_dim))
    p = lp.params
    if text.get("model_type") in ("deepseek_v2", "deepseek_v3") and p.get("rope_type") == "yarn" and \
            p.get("mscale_all_dim"):
        value *= orope._g(p["factor"], p["mscale_all_dim"]) ** 2
    return value


def _scales(lp: LayerPositions, config: Mapping[str, Any], positions: list[int]) -> NDArray[np.float64]:
    base = _logit_base(lp, config)
    return np.array([to_float64(base * _temperature(lp, p)) for p in positions])


def _exact(value: Any) -> tuple[int, int]:
    """An mpf or a float as ``(n, e)`` with value == n * 2**e exactly."""
    if isinstance(value, float):
        mantissa, exponent = math.frexp(value)
        return int(mantissa * (1 << 53)), exponent - 53
    sign, man, exp, _ = mpmath.mpf(value)._mpf_
    return (-int(man) if sign else int(man)), int(exp)


def _difference(a: tuple[int, int], b: tuple[int, int], c: tuple[int, int], d: tuple[int, int]) -> float:
    """``a*b - c*d`` for exact ``(n, e)`` numbers, rounded once to float64 (big-integer arithmetic)."""
    n1, e1 = a[0] * b[0], a[1] + b[1]
    n2, e2 = c[0] * d[0], c[1] + d[1]
    e = min(e1, e2)
    n = (n1 << (e1 - e)) - (n2 << (e2 - e))
    if n == 0:
        return 0.0
    # Note: the top 64 bits and a sticky bit round like the whole integer; int -> float rounds once, to
    # nearest even (CPython), and the power of two is then exact
    sign, n = (-1.0 if n < 0 else 1.0), abs(n)
    shift = max(n.bit_length() - 64, 0)
    head = (n >> shift) << 1 | (1 if n & ((1 << shift) - 1) else 0)
    return sign * math.ldexp(float(head), e + shift - 1)


def _rotate(x: NDArray[Any], turns: list[list[tuple[Any, Any]]], pairs: list[Any]) -> NDArray[np.float64]:
    """x (T, H, D) with pair i of row t turned by (c, s) = turns[t][i]: (u c - v s, v c + u s), rounded once."""
    out = np.asarray(x, dtype=np.float64).copy()
    exact_turns = [[(_exact(c), _exact(sn)) for c, sn in row] for row in turns]
    for t, h in np.ndindex(x.shape[0], x.shape[1]):
        row = [float(v) for v in x[t, h].tolist()]
        values = list(row)
        for ((ru, rv), (wu, wv)), (c, sn) in zip(pairs, exact_turns[t]):
            u, v = _exact(row[ru]), _exact(row[rv])
            values[wu], values[wv] = _difference(u, c, v, sn), _difference(v, c, (-u[0], u[1]), sn)
        out[t, h] = values
    return out


def _mrope_stream(i: int, section: Any, layout: str) -> int:
    """The position stream (0 = T, 1 = H, 2 = W) pair ``i`` reads, as Qwen2-VL / Qwen3-VL define it."""
    s_t, s_h, s_w = (int(v) for v in section)
    if layout == "chunked":
        return 0 if i < s_t else (1 if i < s_t + s_h else 2)
    return 1 if (i % 3 == 1 and i < 3 * s_h) else (2 if (i % 3 == 2 and i < 3 * s_w) else 0)


def rope(params: Mapping[str, Any], inputs: Inputs) -> dict[str, NDArray[Any]]:
    lp = _layer(params)
    freqs, a = frequencies(lp.params, params.get("context_length"))
    positions = np.asarray(inputs["positions"]).astype(np.int64)
    if lp.scheme == "mrope":
        stream = [_mrope_stream(i, lp.params["mrope_section"], lp.params["mrope_layout"]) for i in range(len(freqs))]
        per_pair = [[int(positions[stream[i], t]) for i in range(len(freqs))] for t in range(positions.shape[1])]
        time = positions[0].tolist()
    else:
        per_pair = [[int(p)] * len(freqs) for p in positions.tolist()]
        time = positions.tolist()
    turns = [[tuple(a * v for v in mpmath.cos_sin(mpmath.mpf(p) * w)) for p, w in zip(row, freqs)]
             for row in per_pair]  # (c, s) = a (cos, sin) of each pair's angle
    cos = np.array([[to_float64(c) for c, _ in row] for row in turns]).reshape(len(time), len(freqs))
    sin = np.array([[to_float64(sn) for _, sn in row] for row in turns]).reshape(len(time), len(freqs))
    pairs = _pairs(lp)
    return {"q_rot": _rotate(inputs["q"], turns, pairs), "k_rot": _rotate(inputs["k"], turns, pairs),
            "cos": cos, "sin": sin, "logit_scale": _scales(lp, params["config"], time)}


def nope(params: Mapping[str, Any], inputs: Inputs) -> dict[str, NDArray[Any]]:
    lp = _layer(params)
    positions = np.asarray(inputs["positions"]).astype(np.int64).tolist()
    return {"q_rot": np.asarray(inputs["q"], dtype=np.float64).copy(),
            "k_rot": np.asarray(inputs["k"], dtype=np.float64).copy(),
            "logit_scale": _scales(lp, params["config"], positions)}


def alibi(params: Mapping[str, Any], inputs: Inputs) -> dict[str, NDArray[Any]]:
    lp = _layer(params)
    if lp.bias_scale == 1.0:
        return oalibi.alibi_bias({**lp.params}, inputs)
    # Falcon: the bias enters the scaled logits as slope * distance / sqrt(head_dim), rounded once here
    if lp.bias_scale != float(lp.head_dim) ** -0.5:
        raise ValueError(f"oracle model.alibi: bias_scale {lp.bias_scale!r} is not head_dim ** -0.5")
    root = mpmath.sqrt(lp.head_dim)
    slopes = [oalibi._slope(x) for x in oalibi._exponents(lp.params)]
    q = [int(x) for x in np.asarray(inputs["query_positions"]).ravel()]
    k = [int(x) for x in np.asarray(inputs["key_positions"]).ravel()]
    out = np.array([[[to_float64(m * oalibi._distance(lp.params["form"], i, j, len(q), len(k)) / root)
                      for j in k] for i in q] for m in slopes], dtype=np.float64)
    return {"bias": out}


def t5(params: Mapping[str, Any], inputs: Inputs) -> dict[str, NDArray[Any]]:
    p = _layer(params).params
    q = np.asarray(inputs["query_positions"]).astype(np.int64)
    k = np.asarray(inputs["key_positions"]).astype(np.int64)
    buckets = [[ot5._t5_one(int(kj) - int(qi), int(p["num_buckets"]), int(p["max_distance"]), p["direction"])
                for kj in k.tolist()] for qi in q.tolist()]
    table = ot5.t5_bias({**p, "table_layout": "buckets_heads"}, inputs)["bias"]
    return {"bucket": np.array(buckets, dtype=np.int64).reshape(len(q), len(k)), "bias": table}


def deberta(params: Mapping[str, Any], inputs: Inputs) -> dict[str, NDArray[Any]]:
    p = _layer(params).params
    out = odeberta.deberta_index({"position_buckets": p["position_buckets"],
                              "max_relative_positions": p["max_relative_positions"], "distance_clamp": "none"}, inputs)
    return {"index": out["index"]}


def learned(params: Mapping[str, Any], inputs: Inputs) -> dict[str, NDArray[Any]]:
    p = _layer(params).params
    rows = [int(x) + int(p["offset"]) for x in np.asarray(inputs["positions"]).tolist()]
    return {"index": np.array(rows, dtype=np.int64)}


def sinusoid(params: Mapping[str, Any], inputs: Inputs) -> dict[str, NDArray[Any]]:
    p = _layer(params).params
    table = osinusoidal.sinusoidal_table({"dim": p["dim"], "base": p["base"], "ladder": p["ladder"],
                                          "layout": p["layout"], "odd_width": "error", "scale": 1.0,
                                          "position_offset": p["position_offset"]}, inputs)["table"]
    return {"embedding": table}


def xl_rows(params: Mapping[str, Any], inputs: Inputs) -> dict[str, NDArray[Any]]:
    p = _layer(params).params
    clamp = int(p["clamp_len"])
    rows = []
    for delta in np.asarray(inputs["distances"]).tolist():
        delta = max(-clamp, min(clamp, int(delta))) if clamp > 0 else int(delta)
        rows.append([to_float64(x) for x in oxl._xl_r(delta, int(p["dim"]), float(p["base"]))])
    return {"embedding": np.array(rows, dtype=np.float64).reshape(len(rows), int(p["dim"]))}


ORACLES: Final[dict[str, Oracle]] = {
    "model.rope": rope,
    "model.nope": nope,
    "model.alibi": alibi,
    "model.t5": t5,
    "model.deberta": deberta,
    "model.learned": learned,
    "model.sinusoidal": sinusoid,
    "model.transformer_xl": xl_rows,
}
