"""mpmath twins of the RoPE formulas (:mod:`posenc_ref.rope`, :mod:`posenc_ref.rope_scaling`).

Each frequency is defined pair by pair from the published formula; each rotation is the
complex product ``(u + i v) * a * exp(i p w)`` of one pair, with the pair's channels named by
the layout's definition; scores are dot products of the rotated vectors, element by element.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import mpmath
import numpy as np
from numpy.typing import NDArray

from posenc_ref.oracle._common import Oracle, to_float64


def _g(s: Any, m: Any) -> Any:
    """YaRN's magnitude g(s, m) = 0.1 m ln s + 1 for s > 1, else 1."""
    s = mpmath.mpf(s)
    return mpmath.mpf(1) if s <= 1 else mpmath.mpf("0.1") * mpmath.mpf(m) * mpmath.log(s) + 1


def _plain(base: Any, i: int, d: int) -> Any:
    return mpmath.power(mpmath.mpf(base), -mpmath.mpf(2 * i) / d)


def _yarn(params: Mapping[str, Any]) -> tuple[list[Any], Any, Any]:
    d, b, s = int(params["dim"]), mpmath.mpf(params["base"]), mpmath.mpf(params["factor"])
    original = mpmath.mpf(params["original_max_position"])
    vllm = params["yarn_convention"] == "vllm_deepseek"

    def correction(beta: Any) -> Any:  # pair index at which a wavelength completes `beta` turns in L0
        return d * mpmath.log(original / (beta * 2 * mpmath.pi)) / (2 * mpmath.log(b))

    low = correction(mpmath.mpf(params["beta_fast"] or 32))
    high = correction(mpmath.mpf(params["beta_slow"] or 1))
    if params["truncate"] or vllm:
        low, high = mpmath.floor(low), mpmath.ceil(high)
    low, high = max(low, mpmath.mpf(0)), min(high, mpmath.mpf(d - 1))
    if low == high:
        high += mpmath.mpf("0.001")
    ext = mpmath.mpf(params.get("ext_factor", 1.0))
    freqs = []
    for i in range(d // 2):
        gamma = min(max((i - low) / (high - low), mpmath.mpf(0)), mpmath.mpf(1))
        gamma = 1 - (1 - gamma) * ext  # ggml: ext_factor weights the extrapolation side 1 - gamma
        w = _plain(b, i, d)
        freqs.append(w * (1 - gamma) + (w / s) * gamma)
    m, m_all = params["mscale"], params["mscale_all_dim"]
    if vllm:
        factor = _g(s, 1 if m is None else m) / _g(s, 0 if m_all is None else m_all)
    elif params["attention_factor"] is not None:
        factor = mpmath.mpf(params["attention_factor"])
    elif ext == 0:
        factor = mpmath.mpf(1)
    elif m and m_all:
        factor = _g(s, m) / _g(s, m_all)
    else:
        factor = _g(s, 1)
    softmax = _g(s, m_all) ** 2 if m_all else mpmath.mpf(1)
    return freqs, factor, softmax


def _llama3(params: Mapping[str, Any]) -> list[Any]:
    d, s = int(params["dim"]), mpmath.mpf(params["factor"])
    original = mpmath.mpf(params["original_max_position"])
    low, high = mpmath.mpf(params["low_freq_factor"]), mpmath.mpf(params["high_freq_factor"])
    freqs = []
    for i in range(d // 2):
        w = _plain(params["base"], i, d)
        wavelength = 2 * mpmath.pi / w
        if wavelength < original / high:
            freqs.append(w)
        elif wavelength > original / low:
            freqs.append(w / s)
        else:
            sigma = (original / wavelength - low) / (high - low)
            freqs.append((1 - sigma) * w / s + sigma * w)
    return freqs


def _ntk_base(params: Mapping[str, Any]) -> Any:
    d, s, b = int(params["dim"]), mpmath.mpf(params["factor"]), mpmath.mpf(params["base"])
    if params["rope_type"] == "ntk_aware":
        return b * s ** (mpmath.mpf(d) / (d - 2))
    trained, length = int(params["original_max_position"]), int(params["context_length"])
    if params["dynamic_convention"] == "transformers" and length <= trained:
        return b
    return b * (s * length / trained - (s - 1)) ** (mpmath.mpf(d) / (d - 2))


def _longrope_mp(params: Mapping[str, Any], short: Any, long: Any) -> tuple[list[Any], Any]:
    d, original = int(params["dim"]), int(params["original_max_position"])
    ext = long if int(params["context_length"]) > original else short
    freqs = [1 / (mpmath.mpf(float(ext[i])) * mpmath.power(mpmath.mpf(params["base"]), mpmath.mpf(2 * i) / d))
             for i in range(d // 2)]
    s = mpmath.mpf(params["factor"])
    if params["attention_factor"] is not None and params.get("longrope_convention", "transformers") == "transformers":
        factor = mpmath.mpf(params["attention_factor"])
    else:
        factor = mpmath.mpf(1) if s <= 1 else mpmath.sqrt(1 + mpmath.log(s) / mpmath.log(original))
    return freqs, factor


def frequencies(params: Mapping[str, Any]) -> tuple[list[Any], Any, Any]:
    """Exact inverse frequencies, attention factor and softmax multiplier of ``rope.inv_freq``'s
    parameters (``longrope`` reads ``short_factor``/``long_factor`` from them)."""
    d, kind = int(params["dim"]), params["rope_type"]
    one = mpmath.mpf(1)
    factor, softmax = one, one
    if kind == "longrope":
        freqs, factor = _longrope_mp(params, params["short_factor"], params["long_factor"])
    elif kind == "default":
        freqs = [_plain(params["base"], i, d) for i in range(d // 2)]
    elif kind == "linear":
        freqs = [_plain(params["base"], i, d) / mpmath.mpf(params["factor"]) for i in range(d // 2)]
    elif kind in ("ntk_aware", "dynamic"):
        base = _ntk_base(params)
        freqs = [_plain(base, i, d) for i in range(d // 2)]
    elif kind == "yarn":
        freqs, factor, softmax = _yarn(params)
    elif kind == "llama3":
        freqs = _llama3(params)
    elif kind == "proportional":
        turning = int(mpmath.floor(mpmath.mpf(params["partial_rotary_factor"]) * d / 2))
        s = mpmath.mpf(params["factor"] if params["factor"] is not None else 1)
        freqs = [_plain(params["base"], i, d) / s if i < turning else mpmath.mpf(0) for i in range(d // 2)]
    else:
        raise KeyError(f"rope.inv_freq oracle: no twin for rope_type={kind!r}")
    return freqs, factor, softmax


def inv_freq(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> dict[str, NDArray[Any]]:
    freqs, factor, softmax = frequencies(params)
    return {"inv_freq": np.array([to_float64(w) for w in freqs]),
            "attention_factor": np.array([to_float64(factor)]), "softmax_scale": np.array([to_float64(softmax)])}


def longrope(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> dict[str, NDArray[Any]]:
    freqs, factor = _longrope_mp(params, np.asarray(inputs["short_factor"]), np.asarray(inputs["long_factor"]))
    return {"inv_freq": np.array([to_float64(w) for w in freqs]), "attention_factor": np.array([to_float64(factor)])}


def cos_sin(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> dict[str, NDArray[Any]]:
    positions = np.asarray(inputs["positions"])
    w = [mpmath.mpf(float(v)) for v in np.asarray(inputs["inv_freq"]).tolist()]
    a = mpmath.mpf(params["attention_factor"])
    n = len(w)
    width = n if params["width"] == "half" else 2 * n
    cos = np.empty(positions.shape + (width,))
    sin = np.empty(positions.shape + (width,))
    for index, p in zip(np.ndindex(positions.shape), positions.reshape(-1).tolist()):
        for j in range(width):
            # column j holds frequency j (half), j mod P (full) or j // 2 (full_interleaved)
            i = j if params["width"] == "half" else (j % n if params["width"] == "full" else j // 2)
            angle = mpmath.mpf(p) * w[i]
            cos[index + (j,)] = to_float64(a * mpmath.cos(angle))
            sin[index + (j,)] = to_float64(a * mpmath.sin(angle))
    return {"cos": cos, "sin": sin}


_SCALING_DEFAULTS: Final = {"rope_type": "default", "factor": None, "original_max_position": None,
                            "context_length": None, "low_freq_factor": None, "high_freq_factor": None,
                            "beta_fast": None, "beta_slow": None, "mscale": None, "mscale_all_dim": None,
                            "scaling_attention_factor": None, "truncate": True, "ext_factor": 1.0,
                            "short_factor": None, "long_factor": None, "dynamic_convention": "transformers",
                            "yarn_convention": "transformers"}


def rotation(params: Mapping[str, Any], head_dim: int) -> tuple[int, list[Any], Any]:
    """The rotary space width, its exact frequencies and the whole attention factor of a
    ``rope.apply``/``rope.scores`` case: the scaling variant's frequencies at ``dim = S``, pairs
    from ``rotary_dim/2`` on at 0, and ``attention_factor`` times the variant's factor."""
    rd = head_dim if params["rotary_dim"] is None else int(params["rotary_dim"])
    space = rd if params["partial"] == "prefix" else head_dim
    scaling = {k: params.get(k, v) for k, v in _SCALING_DEFAULTS.items()}
    if scaling["rope_type"] == "default":
        freqs, variant = [_plain(params["base"], i, space) for i in range(space // 2)], mpmath.mpf(1)
    else:
        freq_params = {**scaling, "dim": space, "base": params["base"], "partial_rotary_factor": 1.0,
                       "attention_factor": scaling["scaling_attention_factor"]}
        freqs, variant, _ = frequencies(freq_params)
    freqs = [w if i < rd // 2 else mpmath.mpf(0) for i, w in enumerate(freqs)]
    return space, freqs, mpmath.mpf(params.get("attention_factor", 1.0)) * variant


def _space(params: Mapping[str, Any], head_dim: int) -> tuple[int, list[Any]]:
    space, freqs, _ = rotation(params, head_dim)
    return space, freqs


def _pair_channels(layout: str, i: int, space: int) -> tuple[tuple[int, int], tuple[int, int]]:
    """The channels pair ``i`` is read from and written to."""
    half, interleaved = (i, i + space // 2), (2 * i, 2 * i + 1)
    read = half if layout == "half" else interleaved
    write = interleaved if layout == "interleaved" else half
    return read, write


def _rotate_row(row: list[float], p: int, params: Mapping[str, Any]) -> list[Any]:
    """One (D,) vector at position p, rotated pair by pair as a complex product."""
    space, freqs, a = rotation(params, len(row))
    out: list[Any] = [mpmath.mpf(v) for v in row]
    for i, w in enumerate(freqs):
        (ru, rv), (wu, wv) = _pair_channels(params["layout"], i, space)
        z = mpmath.mpc(row[ru], row[rv]) * a * mpmath.expj(mpmath.mpf(p) * w)
        out[wu], out[wv] = z.real, z.imag
    return out


def _rows(x: NDArray[Any], positions: NDArray[Any], x_layout: str) -> dict[tuple[int, int, int], tuple[Any, int]]:
    """(b, h, t) -> (the (D,) row, its position), whatever the axis order."""
    pos = np.asarray(positions).reshape(-1, np.asarray(positions).shape[-1])
    rows = {}
    for b, h, t in np.ndindex(x.shape[0], x.shape[1] if x_layout == "BHTD" else x.shape[2],
                              x.shape[2] if x_layout == "BHTD" else x.shape[1]):
        row = x[b, h, t] if x_layout == "BHTD" else x[b, t, h]
        rows[(b, h, t)] = (row.tolist(), int(pos[b if pos.shape[0] > 1 else 0, t]))
    return rows


def apply(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> dict[str, NDArray[Any]]:
    x = np.asarray(inputs["x"], dtype=np.float64)
    out = np.empty_like(x)
    for (b, h, t), (row, p) in _rows(x, inputs["positions"], params["x_layout"]).items():
        values = [to_float64(v) for v in _rotate_row(row, p, params)]
        if params["x_layout"] == "BHTD":
            out[b, h, t] = values
        else:
            out[b, t, h] = values
    return {"y": out}


def scores(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> dict[str, NDArray[Any]]:
    q, k = np.asarray(inputs["q"], dtype=np.float64), np.asarray(inputs["k"], dtype=np.float64)
    q_rows = _rows(q, inputs["q_positions"], params["x_layout"])
    k_rows = _rows(k, inputs["k_positions"], params["x_layout"])
    q_rot = {key: (_rotate_row(row, p, params), p) for key, (row, p) in q_rows.items()}
    k_rot = {key: (_rotate_row(row, p, params), p) for key, (row, p) in k_rows.items()}
    head_dim = q.shape[-1]
    space, _ = _space(params, head_dim)
    scale_base = params["xpos_scale_base"]
    tq, tk = max(t for _, _, t in q_rows) + 1, max(t for _, _, t in k_rows) + 1
    batch, heads = max(b for b, _, _ in q_rows) + 1, max(h for _, h, _ in q_rows) + 1
    out = np.empty((batch, heads, tq, tk))
    for b, h, m, n in np.ndindex(batch, heads, tq, tk):
        qv, qp = q_rot[(b, h, m)]
        kv, kp = k_rot[(b, h, n)]
        total = mpmath.mpf(0)
        for j in range(head_dim):
            term = qv[j] * kv[j]
            if scale_base is not None and j < space:
                i = j % (space // 2) if params["layout"] == "half" else j // 2
                zeta = (2 * mpmath.mpf(i) + mpmath.mpf("0.4") * space) / (mpmath.mpf("1.4") * space)
                term *= zeta ** (mpmath.mpf(qp - kp) / mpmath.mpf(scale_base))
            total += term
        out[b, h, m, n] = to_float64(total)
    return {"scores": out}


def xpos(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> dict[str, NDArray[Any]]:
    layout = params["layout"]
    outputs = {}
    for name, sign in (("q", 1), ("k", -1)):
        x = np.asarray(inputs[name], dtype=np.float64)
        rows = _rows(x, inputs["positions"], params["x_layout"])
        length = x.shape[2] if params["x_layout"] == "BHTD" else x.shape[1]
        # lucidrains: c = floor(T/2); torchscale: powers start at floor(-T/2), so c = ceil(T/2)
        centre = length // 2 if params["centring"] == "lucidrains" else -((-length) // 2)
        out = np.empty_like(x)
        for (b, h, t), (row, p) in rows.items():
            width = len(row)
            rotated = _rotate_row(row, p, {"base": params["base"], "rotary_dim": None, "partial": "prefix",
                                           "layout": layout, "attention_factor": 1.0})
            power = sign * mpmath.mpf(p - centre) / mpmath.mpf(params["scale_base"])
            for j in range(width):
                i = j // 2 if layout == "interleaved" else j % (width // 2)
                zeta = (2 * mpmath.mpf(i) + mpmath.mpf("0.4") * width) / (mpmath.mpf("1.4") * width)
                rotated[j] *= zeta**power
            values = [to_float64(v) for v in rotated]
            if params["x_layout"] == "BHTD":
                out[b, h, t] = values
            else:
                out[b, t, h] = values
        outputs[f"{name}_rot"] = out
    return outputs


def mrope(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> dict[str, NDArray[Any]]:
    d = int(params["dim"])
    s_t, s_h, s_w = (int(v) for v in np.asarray(inputs["mrope_section"]).tolist())
    streams = np.asarray(inputs["positions"])
    pairs = d // 2
    width = pairs if params["width"] == "half" else d
    cos = np.empty(streams.shape[1:] + (width,))
    sin = np.empty(streams.shape[1:] + (width,))
    for index in np.ndindex(streams.shape[1:]):
        for j in range(width):
            i = j % pairs
            if params["mrope_layout"] == "chunked":
                stream = 0 if i < s_t else (1 if i < s_t + s_h else 2)
            else:  # Qwen3-VL: T H W T H W ... while each stream has sections left, then T
                stream = 1 if (i % 3 == 1 and i < 3 * s_h) else (2 if (i % 3 == 2 and i < 3 * s_w) else 0)
            angle = mpmath.mpf(int(streams[(stream,) + index])) * _plain(params["base"], i, d)
            cos[index + (j,)] = to_float64(mpmath.cos(angle))
            sin[index + (j,)] = to_float64(mpmath.sin(angle))
    return {"cos": cos, "sin": sin}


def rotate_cached(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> dict[str, NDArray[Any]]:
    x = np.asarray(inputs["x"], dtype=np.float64)
    cos, sin = np.asarray(inputs["cos_cache"], dtype=np.float64), np.asarray(inputs["sin_cache"], dtype=np.float64)
    n = cos.shape[1]
    out = np.empty_like(x)
    for (b, h, t), (row, p) in _rows(x, inputs["positions"], params["x_layout"]).items():
        values = [mpmath.mpf(v) for v in row]
        for i in range(n):
            (ru, rv), (wu, wv) = _pair_channels(params["layout"], i, 2 * n)
            c, s = mpmath.mpf(float(cos[p, i])), mpmath.mpf(float(sin[p, i]))
            values[wu] = mpmath.mpf(row[ru]) * c - mpmath.mpf(row[rv]) * s
            values[wv] = mpmath.mpf(row[rv]) * c + mpmath.mpf(row[ru]) * s
        rounded = [to_float64(v) for v in values]
        if params["x_layout"] == "BHTD":
            out[b, h, t] = rounded
        else:
            out[b, t, h] = rounded
    return {"y": out}


def rotate_freq(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> dict[str, NDArray[Any]]:
    """Each pair turned by ``a exp(i p w_i)`` at the given float64 frequencies, taken exactly."""
    x = np.asarray(inputs["x"], dtype=np.float64)
    w = [mpmath.mpf(float(v)) for v in np.asarray(inputs["inv_freq"], dtype=np.float64).tolist()]
    a = mpmath.mpf(params["attention_factor"])
    space = 2 * len(w)
    out = np.empty_like(x)
    for (b, h, t), (row, p) in _rows(x, inputs["positions"], params["x_layout"]).items():
        values: list[Any] = [mpmath.mpf(v) for v in row]
        for i, wi in enumerate(w):
            (ru, rv), (wu, wv) = _pair_channels(params["layout"], i, space)
            z = mpmath.mpc(row[ru], row[rv]) * a * mpmath.expj(mpmath.mpf(p) * wi)
            values[wu], values[wv] = z.real, z.imag
        rounded = [to_float64(v) for v in values]
        if params["x_layout"] == "BHTD":
            out[b, h, t] = rounded
        else:
            out[b, t, h] = rounded
    return {"y": out}


ORACLES: Final[dict[str, Oracle]] = {
    "rope.rotate": rotate_cached,
    "rope.rotate_freq": rotate_freq,
    "rope.inv_freq": inv_freq,
    "rope.longrope_inv_freq": longrope,
    "rope.cos_sin": cos_sin,
    "rope.apply": apply,
    "rope.scores": scores,
    "rope.xpos": xpos,
    "rope.mrope_cos_sin": mrope,
}
