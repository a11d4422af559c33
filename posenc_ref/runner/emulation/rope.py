"""Low-precision emulations of the RoPE ops (calibration only; see the package docs).

Frequencies are built as transformers 5.x builds them: ``base ** (arange(0, d, 2).float() / d)``
in float32, scalar bookkeeping (scaled bases, attention factors, band edges) in Python float64,
the YaRN / Llama 3 blends in float32. Positions are converted to the angle dtype, the angle
``p * w`` and its cos/sin are computed in it, and the rotation and dot products in float32.
Which channels form a pair is taken from the reference's own helpers, never restated.

``freq_round`` and ``position_round`` let the mutant catalogue inject the bfloat16 bugs
(sglang-jax #1472, candle #3520) into exactly these computations.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from posenc_ref import rope, rope_scaling, rope_variants
from posenc_ref.runner.emulation._common import Emulation, NameTable

Round = Callable[[NDArray[Any]], NDArray[Any]]


def _keep(values: NDArray[Any]) -> NDArray[Any]:
    return values


def transformers_frequencies(base: float, dim: int, ct: type, pairs: int | None = None) -> NDArray[Any]:
    """``1 / base ** (arange(0, 2 * pairs, 2).float() / dim)`` in ``ct``."""
    count = dim // 2 if pairs is None else pairs
    exponent = np.arange(0, 2 * count, 2).astype(ct) / ct(dim)
    w: NDArray[Any] = (ct(1.0) / np.power(ct(base), exponent)).astype(ct)
    return w


def emulate_inv_freq(params: Mapping[str, Any], ct: type, freq_round: Round = _keep) -> tuple[NDArray[Any], float,
                                                                                                float]:
    """The frequencies (``ct``), attention factor and softmax multiplier, transformers style."""
    _, factor_a, softmax = rope_scaling.rope_inv_freq(**params)  # validation; Python-float scalars
    w = FREQUENCIES[params["rope_type"]](params, ct, freq_round)
    return np.asarray(w, dtype=ct), float(factor_a[0]), float(softmax[0])


def _factor(params: Mapping[str, Any]) -> float:
    return float(params["factor"]) if params.get("factor") is not None else 1.0


def _default(params: Mapping[str, Any], ct: type, freq_round: Round) -> NDArray[Any]:
    return freq_round(transformers_frequencies(float(params["base"]), int(params["dim"]), ct))


def _linear(params: Mapping[str, Any], ct: type, freq_round: Round) -> NDArray[Any]:
    w: NDArray[Any] = _default(params, ct, freq_round) / ct(_factor(params))
    return w


def _base_change(params: Mapping[str, Any], ct: type, freq_round: Round) -> NDArray[Any]:
    """ntk_aware and dynamic: the scaled base in Python float64, then the frequencies in ``ct``."""
    d, s = int(params["dim"]), _factor(params)
    length = params.get("context_length") or 0
    trained = params.get("original_max_position") or 1
    if params["rope_type"] == "dynamic" and params["dynamic_convention"] == "transformers":
        length = max(length, trained)
    bracket = s if params["rope_type"] == "ntk_aware" else s * length / trained - (s - 1.0)
    base = float(params["base"]) * bracket ** (d / (d - 2))
    return freq_round(transformers_frequencies(base, d, ct))


def _yarn(params: Mapping[str, Any], ct: type, freq_round: Round) -> NDArray[Any]:
    d, s, w = int(params["dim"]), _factor(params), _default(params, ct, freq_round)
    truncate = bool(params["truncate"]) or params["yarn_convention"] == "vllm_deepseek"
    low, high = rope_scaling.yarn_correction_range(
        dim=d, base=float(params["base"]), original_max_position=int(params["original_max_position"]),
        beta_fast=params["beta_fast"], beta_slow=params["beta_slow"], truncate=truncate)
    ramp = rope_scaling.yarn_ramp(low, high, d // 2, dtype=ct)
    ext = ct(params.get("ext_factor", 1.0))
    if ext != 1:
        ramp = ramp + (ct(1.0) - ramp) * (ct(1.0) - ext)
    blended: NDArray[Any] = (ct(1.0) / (ct(s) / w)) * ramp + w * (ct(1.0) - ramp)
    return blended


def _llama3(params: Mapping[str, Any], ct: type, freq_round: Round) -> NDArray[Any]:
    s, w = _factor(params), _default(params, ct, freq_round)
    original = float(params["original_max_position"])
    low, high = float(params["low_freq_factor"]), float(params["high_freq_factor"])
    wavelength = ct(2 * math.pi) / w
    kept = np.where(wavelength > original / low, w / ct(s), w)
    smooth = (ct(original) / wavelength - ct(low)) / ct(high - low)
    blended = (ct(1.0) - smooth) * kept / ct(s) + smooth * kept
    medium = ~(wavelength < original / high) & ~(wavelength > original / low)
    result: NDArray[Any] = np.where(medium, blended, kept)
    return result


def _longrope_frequencies(params: Mapping[str, Any], ct: type, freq_round: Round) -> NDArray[Any]:
    d = int(params["dim"])
    chosen = "long_factor" if params["context_length"] > params["original_max_position"] else "short_factor"
    ext: NDArray[Any] = np.asarray(params[chosen]).astype(ct)
    exponent = np.arange(0, d, 2).astype(ct) / ct(d)
    w: NDArray[Any] = freq_round(ct(1.0) / (ext * np.power(ct(params["base"]), exponent)))
    return w


def _proportional(params: Mapping[str, Any], ct: type, freq_round: Round) -> NDArray[Any]:
    d, s = int(params["dim"]), _factor(params)
    turning = int(float(params["partial_rotary_factor"]) * d // 2)
    w: NDArray[Any] = np.zeros(d // 2, dtype=ct)
    w[:turning] = transformers_frequencies(float(params["base"]), d, ct, turning)
    scaled: NDArray[Any] = freq_round(w / ct(s)).astype(ct)
    return scaled


FREQUENCIES: Final = NameTable[Callable[[Mapping[str, Any], type, Round], NDArray[Any]]]({
    "default": _default,
    "linear": _linear,
    "ntk_aware": _base_change,
    "dynamic": _base_change,
    "yarn": _yarn,
    "llama3": _llama3,
    "longrope": _longrope_frequencies,
    "proportional": _proportional,
}, "runner.emulation.rope.FREQUENCIES (rope_type)")
"""Each ``rope_type``'s frequencies as transformers builds them in the compute dtype."""


def _inv_freq(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]], ct: type, at: type) -> dict[
        str, NDArray[Any]]:
    w, factor_a, softmax = emulate_inv_freq(params, ct)
    return {"inv_freq": w, "attention_factor": np.array([factor_a], dtype=ct),
            "softmax_scale": np.array([softmax], dtype=ct)}


def _longrope(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]], ct: type, at: type) -> dict[
        str, NDArray[Any]]:
    _, factor_a = rope_scaling.longrope_inv_freq(inputs["short_factor"], inputs["long_factor"], **params)
    lists = {"short_factor": inputs["short_factor"], "long_factor": inputs["long_factor"]}
    w = _longrope_frequencies({**params, **lists}, ct, _keep)
    return {"inv_freq": w.astype(ct), "attention_factor": factor_a.astype(ct)}


def _cos_sin(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]], ct: type, at: type) -> dict[
        str, NDArray[Any]]:
    rope.rope_cos_sin(inputs["positions"], inputs["inv_freq"], **params)  # validation and errors
    w: NDArray[Any] = np.asarray(inputs["inv_freq"]).astype(ct).astype(at)
    angle = np.asarray(inputs["positions"]).astype(at)[..., None] * w
    factor = ct(params["attention_factor"])
    cos, sin = np.cos(angle).astype(ct) * factor, np.sin(angle).astype(ct) * factor
    if params["width"] == "full":
        return {"cos": np.concatenate([cos, cos], -1), "sin": np.concatenate([sin, sin], -1)}
    if params["width"] == "full_interleaved":
        return {"cos": np.repeat(cos, 2, -1), "sin": np.repeat(sin, 2, -1)}
    return {"cos": cos, "sin": sin}


def _scaling(params: Mapping[str, Any]) -> dict[str, Any]:
    return {k: params[k] for k in rope.SCALING if k in params}


def whole_factor(params: Mapping[str, Any], head_dim: int) -> float:
    """A ``rope.apply``/``rope.scores`` case's attention factor times its scaling variant's (float64)."""
    _, _, scaled = rope.scaled_frequencies(head_dim, base=params["base"], rotary_dim=params["rotary_dim"],
                                           partial=params["partial"], func="emulation", **_scaling(params))
    return float(params["attention_factor"]) * scaled


def rotary_frequencies_lowp(params: Mapping[str, Any], head_dim: int, ct: type, freq_round: Round = _keep,
                            denominator: int | None = None) -> tuple[NDArray[Any], int]:
    """The rotary frequencies of a ``rope.apply``/``rope.scores`` case in ``ct``, transformers style,
    under its scaling (:data:`FREQUENCIES` at ``dim = S``); and ``S``. ``denominator`` overrides
    the exponent's width (a mutant)."""
    rd = head_dim if params["rotary_dim"] is None else int(params["rotary_dim"])
    space = rd if params["partial"] == "prefix" else head_dim
    w: NDArray[Any] = np.zeros(space // 2, dtype=ct)
    kind = params.get("rope_type", "default")
    if kind == "default":
        w[: rd // 2] = transformers_frequencies(float(params["base"]), denominator or space, ct, rd // 2)
        return freq_round(w), space
    variant = {**rope.SCALING, **_scaling(params), "dim": denominator or space, "base": params["base"],
               "partial_rotary_factor": 1.0, "attention_factor": params.get("scaling_attention_factor")}
    w[: rd // 2] = np.asarray(FREQUENCIES[kind](variant, ct, freq_round), dtype=ct)[: rd // 2]
    return w, space


def rotate_lowp(x: NDArray[Any], positions: NDArray[Any], params: Mapping[str, Any], ct: type, at: type,
                freq_round: Round = _keep, position_round: Round = _keep,
                denominator: int | None = None) -> tuple[NDArray[Any], int]:
    """x rotated in ``ct`` with angles in ``at``; ``denominator`` overrides the exponent's (a mutant)."""
    head_dim = x.shape[-1]
    w, space = rotary_frequencies_lowp(params, head_dim, ct, freq_round, denominator)
    w = w.astype(at)
    pos: NDArray[Any] = position_round(np.asarray(positions).astype(ct)).astype(at)
    pos2 = pos.reshape(-1, pos.shape[-1])
    angle = pos2[..., None] * w  # (B|1, T, P) in the angle dtype
    angle = angle[:, None] if params["x_layout"] == "BHTD" else angle[:, :, None]
    rotated = rope._rotate(x.astype(ct), angle.astype(ct), space, params["layout"], whole_factor(params, head_dim))
    return rotated, space


def rotate_running_product(x: NDArray[Any], positions: NDArray[Any], params: Mapping[str, Any]) -> NDArray[Any]:
    """x rotated in float32 at ggml's running-product angles (``ggml_rope`` with ``ext_factor`` 0).

    ggml starts from ``theta = p`` and after each pair multiplies ``theta *= theta_scale`` with
    ``theta_scale = powf(base, -2.0f / n_dims)``, all in float32: pair ``i``'s angle carries ``i``
    roundings of the running product besides the rounding of ``theta_scale`` itself, so its error
    grows with the pair index where ``p * w_i`` rounds once.
    """
    f32 = np.float32
    head_dim = x.shape[-1]
    rd = head_dim if params["rotary_dim"] is None else int(params["rotary_dim"])
    space = rd if params["partial"] == "prefix" else head_dim
    scale = f32(np.power(f32(params["base"]), f32(-2.0) / f32(space)))
    pos = np.asarray(positions).astype(f32).reshape(-1, np.shape(positions)[-1])
    angle = np.zeros(pos.shape + (space // 2,), dtype=f32)
    theta = pos.copy()
    for i in range(rd // 2):
        angle[..., i] = theta
        theta = (theta * scale).astype(f32)
    angle = angle[:, None] if params["x_layout"] == "BHTD" else angle[:, :, None]
    rotated: NDArray[Any] = rope._rotate(x.astype(f32), angle, space, params["layout"], params["attention_factor"])
    return rotated


def has_pass_through_factor(params: Mapping[str, Any], head_dim: int) -> bool:
    """Whether a ``rope.apply`` case (full parameters) has an attention factor other than 1 and
    prefix pass-through channels for :func:`factor_on_pass_through` to scale."""
    rd = params["rotary_dim"]
    return (whole_factor(params, head_dim) != 1.0 and rd is not None and params["partial"] == "prefix"
            and int(rd) < head_dim)


def factor_on_pass_through(y: NDArray[Any], params: Mapping[str, Any]) -> NDArray[Any]:
    """``rope.apply``'s output ``y`` with the attention factor applied to the prefix pass-through
    channels too (a whole-head scale); ``params`` are the case's full parameters."""
    scaled = np.array(y, dtype=np.float64)
    scaled[..., int(params["rotary_dim"]):] *= whole_factor(params, scaled.shape[-1])
    return scaled


def _apply(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]], ct: type, at: type) -> dict[
        str, NDArray[Any]]:
    rope.rope_apply(inputs["x"], inputs["positions"], **params)  # validation and errors
    return {"y": rotate_lowp(np.asarray(inputs["x"]), inputs["positions"], params, ct, at)[0]}


def _rotate_cached(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]], ct: type, at: type) -> dict[
        str, NDArray[Any]]:
    rope.rope_rotate_cached(inputs["x"], inputs["positions"], inputs["cos_cache"], inputs["sin_cache"], **params)
    pos = np.asarray(inputs["positions"]).reshape(-1, np.asarray(inputs["positions"]).shape[-1])
    c, s = np.asarray(inputs["cos_cache"]).astype(ct)[pos], np.asarray(inputs["sin_cache"]).astype(ct)[pos]
    c, s = (c[:, None], s[:, None]) if params["x_layout"] == "BHTD" else (c[:, :, None], s[:, :, None])
    x: NDArray[Any] = np.asarray(inputs["x"]).astype(ct)
    n = c.shape[-1]
    u, v = (x[..., :n], x[..., n:2 * n]) if params["layout"] == "half" else (x[..., 0:2 * n:2], x[..., 1:2 * n:2])
    out = np.array(np.broadcast_to(x, np.broadcast_shapes(x.shape, c.shape[:-1] + (x.shape[-1],))))
    first, second = u * c - v * s, v * c + u * s
    if params["layout"] == "half":
        out[..., :n], out[..., n:2 * n] = first, second
    else:
        out[..., 0:2 * n:2], out[..., 1:2 * n:2] = first, second
    return {"y": out}


def _rotate_freq(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]], ct: type, at: type) -> dict[
        str, NDArray[Any]]:
    """The caller's frequencies held in ``ct`` (a float32 buffer, as transformers keeps ``inv_freq``),
    the angle in ``at``, the rotation in ``ct``."""
    rope.rope_rotate_freq(inputs["x"], inputs["positions"], inputs["inv_freq"], **params)  # validation and errors
    w: NDArray[Any] = np.asarray(inputs["inv_freq"]).astype(ct).astype(at)
    pos: NDArray[Any] = np.asarray(inputs["positions"]).astype(at)
    angle = pos.reshape(-1, pos.shape[-1])[..., None] * w  # (B|1, T, P) in the angle dtype
    angle = angle[:, None] if params["x_layout"] == "BHTD" else angle[:, :, None]
    x: NDArray[Any] = np.asarray(inputs["x"]).astype(ct)
    rotated = rope._rotate(x, angle.astype(ct), 2 * w.size, params["layout"], float(params["attention_factor"]))
    return {"y": rotated}


def scores_lowp(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]], ct: type, at: type,
                q_sign: float = -1.0, freq_round: Round = _keep, position_round: Round = _keep) -> NDArray[Any]:
    """Scores in ``ct``; ``q_sign`` is the sign of the key power relative to the query's (xPos)."""
    qr, space = rotate_lowp(np.asarray(inputs["q"]), inputs["q_positions"], params, ct, at, freq_round, position_round)
    kr, _ = rotate_lowp(np.asarray(inputs["k"]), inputs["k_positions"], params, ct, at, freq_round, position_round)
    if params["x_layout"] == "BTHD":
        qr, kr = qr.transpose(0, 2, 1, 3), kr.transpose(0, 2, 1, 3)
    scale_base = params.get("xpos_scale_base")
    if scale_base is None:
        plain: NDArray[Any] = np.einsum("bhqd,bhkd->bhqk", qr, kr)
        return plain
    n = space // 2
    zeta = rope_variants.xpos_zeta(space, dtype=ct)
    qp: NDArray[Any] = np.asarray(inputs["q_positions"]).astype(ct).reshape(-1, qr.shape[2])
    kp: NDArray[Any] = np.asarray(inputs["k_positions"]).astype(ct).reshape(-1, kr.shape[2])
    # lucidrains: q scaled by zeta^((t - c)/B), k by zeta^(-(t - c)/B); c the window's centre
    centre = ct((min(qp.min(), kp.min()) + max(qp.max(), kp.max())) // 2)
    q_scale = zeta ** ((qp[:, None, :, None] - centre) / ct(scale_base))
    k_scale = zeta ** (q_sign * (kp[:, None, :, None] - centre) / ct(scale_base))
    qs, ks = qr.copy(), kr.copy()
    if params["layout"] == "half":
        qs[..., :n] *= q_scale
        qs[..., n:space] *= q_scale
        ks[..., :n] *= k_scale
        ks[..., n:space] *= k_scale
    else:
        qs[..., 0:space:2] *= q_scale
        qs[..., 1:space:2] *= q_scale
        ks[..., 0:space:2] *= k_scale
        ks[..., 1:space:2] *= k_scale
    weighted: NDArray[Any] = np.einsum("bhqd,bhkd->bhqk", qs, ks)
    return weighted


def _scores(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]], ct: type, at: type) -> dict[
        str, NDArray[Any]]:
    rope.rope_scores(inputs["q"], inputs["k"], inputs["q_positions"], inputs["k_positions"], **params)
    return {"scores": scores_lowp(params, inputs, ct, at)}


def _xpos(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]], ct: type, at: type) -> dict[
        str, NDArray[Any]]:
    rope_variants.rope_xpos(inputs["q"], inputs["k"], inputs["positions"], **params)  # validation and errors
    common = {"base": params["base"], "rotary_dim": None, "partial": "prefix", "layout": params["layout"],
              "x_layout": params["x_layout"], "attention_factor": 1.0}
    q, space = rotate_lowp(np.asarray(inputs["q"]), inputs["positions"], common, ct, at)
    k, _ = rotate_lowp(np.asarray(inputs["k"]), inputs["positions"], common, ct, at)
    t_axis = 2 if params["x_layout"] == "BHTD" else 1
    zeta = rope_variants.xpos_zeta(space, dtype=ct)
    centre = rope_variants.xpos_centre(q.shape[t_axis], params["centring"])
    pos = np.asarray(inputs["positions"]).reshape(-1, q.shape[t_axis])
    power = ((pos - centre).astype(ct) / ct(params["scale_base"])).astype(ct)
    power = power[:, None, :, None] if params["x_layout"] == "BHTD" else power[:, :, None, None]
    up = zeta**power
    scale = np.repeat(up, 2, axis=-1) if params["layout"] == "interleaved" else np.concatenate([up, up], axis=-1)
    return {"q_rot": q * scale, "k_rot": k / scale}


def _mrope(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]], ct: type, at: type) -> dict[
        str, NDArray[Any]]:
    rope_variants.mrope_cos_sin(inputs["positions"], inputs["mrope_section"], **params)  # validation and errors
    d = int(params["dim"])
    section = tuple(int(v) for v in np.asarray(inputs["mrope_section"]).tolist())
    stream = rope_variants.mrope_stream(d // 2, (section[0], section[1], section[2]), params["mrope_layout"])
    w: NDArray[Any] = transformers_frequencies(float(params["base"]), d, ct).astype(at)
    chosen: NDArray[Any] = np.moveaxis(np.asarray(inputs["positions"]).astype(at)[stream], 0, -1)
    angle = chosen * w
    cos, sin = np.cos(angle).astype(ct), np.sin(angle).astype(ct)
    if params["width"] == "full":
        return {"cos": np.concatenate([cos, cos], -1), "sin": np.concatenate([sin, sin], -1)}
    return {"cos": cos, "sin": sin}


EMULATIONS: Final[dict[str, Emulation]] = {
    "rope.inv_freq": _inv_freq,
    "rope.longrope_inv_freq": _longrope,
    "rope.cos_sin": _cos_sin,
    "rope.apply": _apply,
    "rope.rotate": _rotate_cached,
    "rope.rotate_freq": _rotate_freq,
    "rope.scores": _scores,
    "rope.xpos": _xpos,
    "rope.mrope_cos_sin": _mrope,
}
