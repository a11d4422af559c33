"""Tolerance scales of the RoPE ops (tolerances of :mod:`posenc_ref.records.rope` and ``rope_variants``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from posenc_ref import rope as rp
from posenc_ref import rope_variants as rv
from posenc_ref.scales import _exact


def _scaled(params: Mapping[str, Any]) -> bool:
    return bool(params.get("rope_type", "default") != "default")


def _exact_rotation(params: Mapping[str, Any], head_dim: int) -> tuple[NDArray[np.float64], float]:
    """A scaled case's frequencies and whole attention factor from the oracle's exact values, each
    rounded once (mpmath imported at generation time only)."""
    import mpmath

    from posenc_ref.oracle._common import to_float64
    from posenc_ref.oracle.rope import rotation

    with mpmath.workdps(_exact.DIGITS):
        _, freqs, factor = rotation(params, head_dim)
        return np.array([to_float64(w) for w in freqs]), to_float64(factor)


def _factor(params: Mapping[str, Any], head_dim: int) -> float:
    """The whole attention factor of a case: ``attention_factor`` times the scaling variant's."""
    if not _scaled(params):
        return float(params.get("attention_factor", 1.0))
    return _exact_rotation(params, head_dim)[1]


_BLENDS = ("yarn", "llama3")
"""Variants whose frequency is a blend ``w (1 - g) + (w / s) g`` of the plain frequency and its scaled one."""


def _frequencies(head_dim: int, params: Mapping[str, Any], func: str) -> tuple[int, NDArray[np.float64]]:
    """:func:`posenc_ref.rope.scaled_frequencies`, each frequency correctly rounded.

    For a phase (``func="phase"``) a blended variant's pair uses the larger of its frequency and
    the plain ``w_i``: the blend's rounding (its weight ``g`` comes from logarithms and
    differences such as ``i - low``) errs by a few ulp of the larger term ``w_i``, which is up to
    ``s`` times the result where ``g`` is near 1; an angle ``p w'_i`` is then off by a few ulp of
    ``p w_i`` in every correct implementation.
    """
    rotary_dim, partial = params.get("rotary_dim"), params.get("partial", "prefix")
    space, _ = rp.rotary_frequencies(head_dim, base=params["base"], rotary_dim=rotary_dim, partial=partial, func=func)
    if _scaled(params):
        scaled = _exact_rotation(params, head_dim)[0]
        if func == "phase" and params["rope_type"] in _BLENDS:
            _, plain = _frequencies(head_dim, {**params, "rope_type": "default"}, func)
            return space, np.maximum(scaled, plain)
        return space, scaled
    rd = head_dim if rotary_dim is None else int(rotary_dim)
    i = np.arange(space // 2, dtype=np.float64)
    return space, np.where(i < rd // 2, _exact.power(float(params["base"]), -((2.0 * i) / space)), 0.0)


def _pair_norms(x: NDArray[np.float64], space: int, layout: str) -> NDArray[np.float64]:
    """|(u, v)| of each channel's pair (0 for pass-through channels), same shape as x."""
    n = space // 2
    out = np.zeros_like(x)
    if layout == "half":
        r = _exact.hypot(x[..., :n], x[..., n:space])
        out[..., :n], out[..., n:space] = r, r
    else:
        r = _exact.hypot(x[..., 0:space:2], x[..., 1:space:2])
        out[..., 0:space:2], out[..., 1:space:2] = r, r
        if layout == "interleaved_to_half":  # results land in half order
            out[..., :n], out[..., n:space] = r, r
    return out


def _given(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> tuple[int, NDArray[np.float64],
                                                                                   float]:
    """``rope.rotate_freq``: the rotary width ``S = 2P``, the caller's frequencies and the factor."""
    w = np.asarray(inputs["inv_freq"], dtype=np.float64)
    return 2 * w.size, w, float(params["attention_factor"])


def _abs_rotated(params: Mapping[str, Any], x: NDArray[Any], positions: NDArray[Any],
                 given: tuple[int, NDArray[np.float64], float] | None = None) -> NDArray[np.float64]:
    """Per channel, ``sum |term|`` of the rotated value: ``a (|u| |cos| + |v| |sin|)``, ``|x|`` if not rotated.

    Same shape and axis order as ``x``; pairs and output slots as :func:`posenc_ref.rope.rope_apply`;
    ``given`` (:func:`_given`) replaces the case's frequencies and factor.
    """
    values = np.abs(np.asarray(x, dtype=np.float64))
    space, w = given[:2] if given else _frequencies(values.shape[-1], params, "input_scale")
    angle = rp._angles("input_scale", positions, w, values.shape, params["x_layout"], "positions")
    factor = given[2] if given else _factor(params, values.shape[-1])
    cos, sin = factor * np.abs(_exact.cos(angle)), factor * np.abs(_exact.sin(angle))
    n, layout = space // 2, params["layout"]
    u, v = (values[..., :n], values[..., n:space]) if layout == "half" else (
        values[..., 0:space:2], values[..., 1:space:2])
    out = np.empty(np.broadcast_shapes(values.shape, angle.shape[:-1] + (values.shape[-1],)))
    out[..., space:] = values[..., space:]
    if layout == "interleaved":
        out[..., 0:space:2], out[..., 1:space:2] = u * cos + v * sin, u * sin + v * cos
    else:
        out[..., :n], out[..., n:space] = u * cos + v * sin, u * sin + v * cos
    return out


def _apply_input_scale(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> NDArray[np.float64]:
    return _abs_rotated(params, inputs["x"], inputs["positions"])


def _freq_input_scale(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> NDArray[np.float64]:
    """``rope.rotate_freq``: as ``rope.apply``'s, at the caller's frequencies (x the one value input)."""
    return _abs_rotated(params, inputs["x"], inputs["positions"], _given(params, inputs))


def _scores_input_scale(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> NDArray[np.float64]:
    aq = _abs_rotated(params, inputs["q"], inputs["q_positions"])
    ak = _abs_rotated(params, inputs["k"], inputs["k_positions"])
    if params["x_layout"] == "BTHD":
        aq, ak = aq.transpose(0, 2, 1, 3), ak.transpose(0, 2, 1, 3)
    if params.get("xpos_scale_base") is None:
        return np.asarray(2.0 * _exact.einsum("bhqd,bhkd->bhqk", aq, ak), dtype=np.float64)
    space, _ = _frequencies(aq.shape[-1], params, "input_scale")
    n = space // 2
    zeta = (2.0 * np.arange(n) + 0.4 * space) / (1.4 * space)
    qp = np.asarray(inputs["q_positions"]).reshape(-1, aq.shape[2]).astype(np.float64)
    kp = np.asarray(inputs["k_positions"]).reshape(-1, ak.shape[2]).astype(np.float64)
    weight = _exact.power(zeta, (qp[:, :, None] - kp[:, None, :])[:, None, :, :, None] / params["xpos_scale_base"])
    first, second = (slice(0, n), slice(n, space)) if params["layout"] == "half" else (
        slice(0, space, 2), slice(1, space, 2))
    pairs = (_exact.einsum("bhqp,bhkp->bhqkp", aq[..., first], ak[..., first])
             + _exact.einsum("bhqp,bhkp->bhqkp", aq[..., second], ak[..., second]))
    rest = _exact.einsum("bhqd,bhkd->bhqk", aq[..., space:], ak[..., space:])
    return np.asarray(2.0 * (_exact.einsum("bhqkp->bhqk", pairs * weight) + rest), dtype=np.float64)


def _angle_per_channel(params: Mapping[str, Any], x: NDArray[Any], positions: NDArray[Any],
                       given: tuple[int, NDArray[np.float64], float] | None = None) -> tuple[NDArray[np.float64], int]:
    space, w = given[:2] if given else _frequencies(x.shape[-1], params, "phase")
    angle = np.abs(rp._angles("phase", positions, w, x.shape, params["x_layout"], "positions"))
    full = np.zeros(np.broadcast_shapes(angle.shape[:-1], x.shape[:-1]) + (x.shape[-1],))
    full[..., : space // 2] = angle
    full[..., space // 2: space] = angle
    if params["layout"] == "interleaved":
        full[..., :space] = np.repeat(angle, 2, axis=-1)
    return full, space


def _rotated_phase(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]],
                   given: tuple[int, NDArray[np.float64], float] | None = None) -> NDArray[np.float64]:
    """``a |(u, v)| (1 + |p w|)`` per channel (module notes of the records); ``given`` as for
    :func:`_abs_rotated`."""
    x = np.asarray(inputs["x"], dtype=np.float64)
    angle, space = _angle_per_channel(params, x, inputs["positions"], given)
    norms = _pair_norms(x, space, params["layout"])
    factor = given[2] if given else _factor(params, x.shape[-1])
    return np.asarray(factor * norms * (1.0 + angle), dtype=np.float64)


def _apply_phase(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> NDArray[np.float64]:
    return _rotated_phase(params, inputs)


def _freq_phase(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> NDArray[np.float64]:
    """``rope.rotate_freq``: as ``rope.apply``'s, the angle ``p w`` from the caller's frequencies."""
    return _rotated_phase(params, inputs, _given(params, inputs))


def _pair_phase(params: Mapping[str, Any], x: NDArray[np.float64], positions: NDArray[Any]) -> tuple[
        NDArray[np.float64], NDArray[np.float64], int]:
    """Per pair: ``|(u, v)|`` (B, H, T, P) and ``|p w|`` (B|1, 1, T, P), in BHTD order; and ``S``."""
    space, w = _frequencies(x.shape[-1], params, "phase")
    angle = np.abs(rp._angles("phase", positions, w, x.shape, params["x_layout"], "positions"))
    n = space // 2
    u, v = (x[..., :n], x[..., n:space]) if params["layout"] == "half" else (x[..., 0:space:2], x[..., 1:space:2])
    norm = _exact.hypot(u, v)
    if params["x_layout"] == "BTHD":
        norm, angle = norm.transpose(0, 2, 1, 3), angle.transpose(0, 2, 1, 3)
    return norm, angle, space


def _scores_phase(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> NDArray[np.float64]:
    q, k = np.asarray(inputs["q"], dtype=np.float64), np.asarray(inputs["k"], dtype=np.float64)
    rq, aq, space = _pair_phase(params, q, inputs["q_positions"])
    rk, ak, _ = _pair_phase(params, k, inputs["k_positions"])
    if params.get("xpos_scale_base") is None:
        total = (_exact.einsum("bhqp,bhkp->bhqk", rq * (1.0 + aq), rk)
                 + _exact.einsum("bhqp,bhkp->bhqk", rq, rk * ak))
    else:  # pair weights zeta^x and their own rounding |x ln zeta|
        n = space // 2
        zeta = (2.0 * np.arange(n) + 0.4 * space) / (1.4 * space)
        qp = np.asarray(inputs["q_positions"]).reshape(-1, rq.shape[2]).astype(np.float64)
        kp = np.asarray(inputs["k_positions"]).reshape(-1, rk.shape[2]).astype(np.float64)
        x = (qp[:, :, None] - kp[:, None, :])[:, None, :, :, None] / params["xpos_scale_base"]
        weight = _exact.power(zeta, x)  # (B|1, 1, Tq, Tk, P)
        own = weight * (1.0 + np.abs(x * _exact.log(zeta)))
        total = (_exact.einsum("bhqp,bhkp,bhqkp->bhqk", rq * (1.0 + aq), rk, own)
                 + _exact.einsum("bhqp,bhkp,bhqkp->bhqk", rq, rk * ak, weight))
    if params["x_layout"] == "BTHD":
        q, k = q.transpose(0, 2, 1, 3), k.transpose(0, 2, 1, 3)
    rest = _exact.einsum("bhqd,bhkd->bhqk", np.abs(q[..., space:]), np.abs(k[..., space:]))
    factor = _factor(params, q.shape[-1])
    phase: NDArray[np.float64] = np.asarray(factor * factor * total + rest, dtype=np.float64)
    return phase


def _table_phase(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> NDArray[np.float64]:
    product = np.asarray(inputs["positions"], dtype=np.float64)[..., None] * np.asarray(inputs["inv_freq"])
    angle: NDArray[np.float64] = params["attention_factor"] * np.abs(product)
    if params["width"] == "full":
        return np.concatenate([angle, angle], axis=-1)
    if params["width"] == "full_interleaved":
        return np.repeat(angle, 2, axis=-1)
    return angle


def _xpos_phase_of(name: str) -> Any:
    def phase(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> NDArray[np.float64]:
        x = np.asarray(inputs[name], dtype=np.float64)
        common = {"base": params["base"], "rotary_dim": None, "partial": "prefix", "x_layout": params["x_layout"]}
        angle, space = _angle_per_channel({**common, "layout": params["layout"]}, x, inputs["positions"])
        norms = _pair_norms(x, space, params["layout"])
        t_axis = 2 if params["x_layout"] == "BHTD" else 1
        centre = rv.xpos_centre(x.shape[t_axis], params["centring"])
        pos = np.asarray(inputs["positions"]).reshape(-1, x.shape[t_axis]).astype(np.float64)
        power = np.abs(pos - centre) / params["scale_base"]
        power = power[:, None, :, None] if params["x_layout"] == "BHTD" else power[:, :, None, None]
        # the largest scale of any pair bounds this channel's: zeta^-|power| <= (1.4/0.4)^|power|
        bound = _exact.power(1.4 / 0.4, power) * (1.0 + power * _exact.log(1.4 / 0.4))
        return np.asarray(norms * (1.0 + angle) * bound, dtype=np.float64)
    return phase


def _xpos_input_scale_of(name: str) -> Any:
    def input_scale(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> NDArray[np.float64]:
        x = np.asarray(inputs[name], dtype=np.float64)
        common = {"base": params["base"], "rotary_dim": None, "partial": "prefix", "x_layout": params["x_layout"],
                  "layout": params["layout"]}
        rotated = _abs_rotated(common, x, inputs["positions"])
        t_axis = 2 if params["x_layout"] == "BHTD" else 1
        width = x.shape[-1]
        zeta = (2.0 * np.arange(width // 2) + 0.4 * width) / (1.4 * width)
        pos = np.asarray(inputs["positions"]).reshape(-1, x.shape[t_axis]).astype(np.float64)
        power = (pos - rv.xpos_centre(x.shape[t_axis], params["centring"])) / params["scale_base"]
        power = power[:, None, :, None] if params["x_layout"] == "BHTD" else power[:, :, None, None]
        up = _exact.power(zeta, power if name == "q" else -power)
        scale = np.repeat(up, 2, axis=-1) if params["layout"] == "interleaved" else np.concatenate([up, up], axis=-1)
        return np.asarray(rotated * scale, dtype=np.float64)
    return input_scale


def _mrope_phase(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> NDArray[np.float64]:
    section = np.asarray(inputs["mrope_section"])
    dim = int(params["dim"])
    stream = rv.mrope_stream(dim // 2, (int(section[0]), int(section[1]), int(section[2])), params["mrope_layout"])
    w = _frequencies(dim, {"base": params["base"]}, "mrope_cos_sin")[1]
    pos = np.asarray(inputs["positions"], dtype=np.float64)
    angle: NDArray[np.float64] = np.moveaxis(pos[stream], 0, -1) * w
    return np.concatenate([angle, angle], axis=-1) if params["width"] == "full" else angle


def _cached_terms(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> NDArray[np.float64]:
    """Per channel of ``rope.rotate``'s output, ``|u c| + |v s|`` (``|x|`` on pass-through channels)."""
    x = np.abs(np.asarray(inputs["x"], dtype=np.float64))
    pos = np.asarray(inputs["positions"]).reshape(-1, np.asarray(inputs["positions"]).shape[-1])
    c, s = np.abs(np.asarray(inputs["cos_cache"], dtype=np.float64)[pos]), np.abs(
        np.asarray(inputs["sin_cache"], dtype=np.float64)[pos])
    c, s = (c[:, None], s[:, None]) if params["x_layout"] == "BHTD" else (c[:, :, None], s[:, :, None])
    n = c.shape[-1]
    space = 2 * n
    u, v = (x[..., :n], x[..., n:space]) if params["layout"] == "half" else (x[..., 0:space:2], x[..., 1:space:2])
    out = np.array(np.broadcast_to(x, np.broadcast_shapes(x.shape, c.shape[:-1] + (x.shape[-1],))))
    first, second = u * c + v * s, v * c + u * s
    if params["layout"] == "half":
        out[..., :n], out[..., n:space] = first, second
    else:
        out[..., 0:space:2], out[..., 1:space:2] = first, second
    return out


def _cached_error_scale(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> NDArray[np.float64]:
    """``rope.rotate``: ``u c - v s`` is a sum of L = 2 products, error scale ``(L + 2) sum |terms|``."""
    return 4.0 * _cached_terms(params, inputs)


def _cached_input_scale(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> NDArray[np.float64]:
    """``rope.rotate``: every term has two value factors (x and a cache); pass-through channels one."""
    terms = _cached_terms(params, inputs)
    n = np.asarray(inputs["cos_cache"]).shape[-1]
    terms[..., : 2 * n] *= 2.0
    return terms
