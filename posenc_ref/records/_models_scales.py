"""The phase and input-scale functions of the model ops' outputs (the tolerances described in
:mod:`posenc_ref.records.models`, whose records use them).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import mpmath
import numpy as np
from numpy.typing import NDArray

from posenc_ref.models import compute, resolve
from posenc_ref.models.resolve import LayerPositions
from posenc_ref.scales import _exact as exact
from posenc_ref.scales import sinusoidal as scales_sinusoidal
from posenc_ref.scales.alibi import _head_factor


def _layer(params: Mapping[str, Any]) -> LayerPositions:
    return resolve(params["config"]).layers[int(params["layer"])]


def _angles(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> tuple[NDArray[np.float64], float,
                                                                                     LayerPositions]:
    """|p w| per (T, P), the attention factor, and the layer."""
    angle, factor, lp, _ = _angles_rounds(params, inputs)
    return angle, factor, lp


def _exact_frequencies(lp: LayerPositions, context_length: int | None) -> tuple[NDArray[np.float64], float]:
    """The layer's frequencies and attention factor from the oracle, each rounded once (no CPU-dependent bits)."""
    from posenc_ref.oracle import models as oracle_models
    from posenc_ref.oracle._common import DPS, to_float64

    with mpmath.workdps(DPS):
        freqs, a = oracle_models.frequencies(lp.params, context_length)
        return np.array([to_float64(f) for f in freqs], dtype=np.float64), to_float64(a)


def _angles_rounds(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> tuple[
        NDArray[np.float64], float, LayerPositions, float]:
    """|p w| per (T, P), the attention factor, the layer and the roundings behind each phase."""
    lp = _layer(params)
    w, factor = _exact_frequencies(lp, params.get("context_length"))
    pos = np.asarray(inputs["positions"], dtype=np.float64)
    # Note: a scaled variant's frequency carries a few roundings of its own (YaRN's ramp from logarithms,
    # Llama 3's blend, LongRoPE's division), each multiplied by the position: 8 roundings of the phase
    rounds = 1.0 if lp.params.get("rope_type") in ("default", "linear", None) else 8.0
    angle = np.abs(pos[..., None] * w)
    if lp.scheme == "mrope":
        from posenc_ref.rope_variants import mrope_stream
        s = lp.params["mrope_section"]
        stream = mrope_stream(len(w), (s[0], s[1], s[2]), lp.params["mrope_layout"])
        angle = angle[stream, :, np.arange(len(w))].T
    return angle, factor, lp, rounds


def _channels(lp: LayerPositions) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """The two channels (read order = write order except interleaved_to_half) of each pair."""
    p = lp.params
    start = lp.head_dim - int(p["rotary_dim"]) if p["partial"] == "suffix" else 0
    space = lp.head_dim if p["partial"] == "proportional" else int(p["rotary_dim"])
    i = np.arange(space // 2)
    if p["layout"] == "half":
        return start + i, start + i + space // 2
    return start + 2 * i, start + 2 * i + 1


def _rotated_phase(name: str) -> Any:
    def phase(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> NDArray[np.float64]:
        angle, factor, lp, rounds = _angles_rounds(params, inputs)
        x = np.asarray(inputs[name], dtype=np.float64)  # (T, H, D)
        u_ch, v_ch = _channels(lp)
        norm = np.hypot(x[..., u_ch], x[..., v_ch])  # (T, H, P)
        value = factor * norm * (1.0 + rounds * angle[:, None, :])
        out = np.zeros_like(x)
        write_u, write_v = (u_ch, v_ch) if lp.params["layout"] != "interleaved_to_half" else _half(lp)
        out[..., write_u], out[..., write_v] = value, value
        return out
    return phase


def _half(lp: LayerPositions) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    start = lp.head_dim - int(lp.params["rotary_dim"]) if lp.params["partial"] == "suffix" else 0
    n = int(lp.params["rotary_dim"]) // 2
    return start + np.arange(n), start + n + np.arange(n)


def _rotated_scale(name: str) -> Any:
    def scale(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> NDArray[np.float64]:
        angle, factor, lp = _angles(params, inputs)
        x = np.abs(np.asarray(inputs[name], dtype=np.float64))
        u_ch, v_ch = _channels(lp)
        c, s = factor * np.abs(exact.cos(angle))[:, None, :], factor * np.abs(exact.sin(angle))[:, None, :]
        u, v = x[..., u_ch], x[..., v_ch]
        out = x.copy()  # pass-through channels: |x|
        write_u, write_v = (u_ch, v_ch) if lp.params["layout"] != "interleaved_to_half" else _half(lp)
        out[..., write_u], out[..., write_v] = u * c + v * s, u * s + v * c
        return out
    return scale


def _table_phase(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> NDArray[np.float64]:
    angle, factor, _, rounds = _angles_rounds(params, inputs)
    return factor * rounds * angle


def _scale_phase(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> NDArray[np.float64]:
    lp = _layer(params)
    pos = np.asarray(inputs["positions"])
    return 4.0 * np.abs(lp.logit_scale * compute.temperature(lp, pos[0] if pos.ndim == 2 else pos))


def _zero_scale(name: str) -> Any:
    """Input scale 0: the output does not depend on the value inputs (q, k, the table)."""
    def scale(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> NDArray[np.float64]:
        pos = np.asarray(inputs["positions"])
        t = pos.shape[-1]
        if name == "logit_scale":
            return np.zeros(t)
        angle, _, _ = _angles(params, inputs)
        return np.zeros_like(angle)
    return scale


def _copy_phase(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> NDArray[np.float64]:
    """A copied value has no phase."""
    return np.zeros(1)


def _copy_scale(name: str) -> Any:
    """A copied value moves by the rounding of the value itself: input scale |x|."""
    def scale(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> NDArray[np.float64]:
        return np.abs(np.asarray(inputs[name], dtype=np.float64))
    return scale


def _alibi_phase(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> NDArray[np.float64]:
    lp = _layer(params)
    bias = compute.model_alibi(inputs["query_positions"], inputs["key_positions"], config=params["config"],
                               layer=params["layer"])
    factor: NDArray[np.float64] = _head_factor(lp.params)
    return np.asarray(np.abs(bias) * factor[:, None, None], dtype=np.float64)


def _sinusoid_phase(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> NDArray[np.float64]:
    p = _layer(params).params
    return scales_sinusoidal._angles(inputs["positions"], dim=p["dim"], base=p["base"], ladder=p["ladder"],
                                     layout=p["layout"], position_offset=p["position_offset"])  # CPU-independent


def _xl_phase(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> NDArray[np.float64]:
    """``|delta w_k|`` in both halves of each R row (the clamped distance; frequencies correctly rounded)."""
    p = _layer(params).params
    return scales_sinusoidal._angles(np.abs(compute.xl_clamped(p, inputs["distances"])), dim=p["dim"], base=p["base"],
                                     ladder="paper", layout="concat_sin_cos")
