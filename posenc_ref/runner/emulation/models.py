"""Low-precision emulations of the model ops (calibration only; see the package docs).

A model op is its layer's scheme op, so each emulation resolves the layer and computes as the
scheme's own emulation does: frequencies as transformers builds them (float32), angles and their
cos/sin in the angle dtype, the rotation in float32; the logit multiplier in float32.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from posenc_ref import rope_scaling
from posenc_ref.models import compute, resolve
from posenc_ref.models.resolve import LayerPositions
from posenc_ref.rope_variants import mrope_stream
from posenc_ref.runner.emulation import alibi, deberta, sinusoidal, t5
from posenc_ref.runner.emulation._common import Emulation, lowp_frequencies
from posenc_ref.runner.emulation.rope import emulate_inv_freq
from posenc_ref.sinusoidal import sinusoidal_frequencies

_DEFAULTS: Final = {name: p.default for name, p in inspect.signature(rope_scaling.rope_inv_freq).parameters.items()
                    if p.default is not inspect.Parameter.empty}


def _layer(params: Mapping[str, Any]) -> LayerPositions:
    return resolve(params["config"]).layers[int(params["layer"])]


def _frequencies(lp: LayerPositions, context_length: int | None, ct: type) -> tuple[NDArray[Any], float]:
    p = lp.params
    if p["rope_type"] == "longrope":
        _, factor = compute.inv_freq(p, context_length, "emulation")
        d = int(p["dim"])
        ext: NDArray[Any] = np.asarray(p["long_factor"] if int(context_length or 0) > int(p["original_max_position"])
                         else p["short_factor"]).astype(ct)
        w = ct(1.0) / (ext * np.power(ct(p["base"]), np.arange(0, d, 2).astype(ct) / ct(d)))
        return w.astype(ct), factor
    freq = {**_DEFAULTS, **{k: v for k, v in p.items() if k in compute.FREQUENCY_KEYS}}
    if p["rope_type"] in ("dynamic", "longrope"):
        freq["context_length"] = context_length
    w, factor, _ = emulate_inv_freq(compute.llama3_step(freq, "emulation"), ct)
    return w, factor


def _rotate(x: NDArray[Any], c: NDArray[Any], s: NDArray[Any], lp: LayerPositions, ct: type) -> NDArray[Any]:
    p = lp.params
    values: NDArray[Any] = np.asarray(x).astype(ct)
    start = lp.head_dim - int(p["rotary_dim"]) if p["partial"] == "suffix" else 0
    space = lp.head_dim if p["partial"] == "proportional" else int(p["rotary_dim"])
    n = space // 2
    part = values[..., start:start + space]
    u, v = (part[..., :n], part[..., n:]) if p["layout"] == "half" else (part[..., 0::2], part[..., 1::2])
    c, s = c[:, None, :], s[:, None, :]
    new_u, new_v = u * c - v * s, v * c + u * s
    out = values.copy()
    if p["layout"] == "interleaved":
        out[..., start:start + space:2], out[..., start + 1:start + space:2] = new_u, new_v
    else:
        out[..., start:start + n], out[..., start + n:start + space] = new_u, new_v
    return out


def _scale(lp: LayerPositions, positions: NDArray[Any], ct: type) -> NDArray[Any]:
    scale: NDArray[Any] = (ct(lp.logit_scale) * compute.temperature(lp, positions).astype(ct)).astype(ct)
    return scale


def _rope(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]], ct: type, at: type) -> dict[
        str, NDArray[Any]]:
    compute.model_rope(inputs["positions"], inputs["q"], inputs["k"], **params)  # validation and errors
    lp = _layer(params)
    w, factor = _frequencies(lp, params.get("context_length"), ct)
    pos = np.asarray(inputs["positions"])
    angle: NDArray[Any] = pos.astype(at)[..., None] * w.astype(at)  # (T, P) or (3, T, P)
    if lp.scheme == "mrope":
        sec = lp.params["mrope_section"]
        stream = mrope_stream(len(w), (sec[0], sec[1], sec[2]), lp.params["mrope_layout"])
        angle = angle[stream, :, np.arange(len(w))].T
    c, s = np.cos(angle).astype(ct) * ct(factor), np.sin(angle).astype(ct) * ct(factor)
    time = pos[0] if lp.scheme == "mrope" else pos
    return {"q_rot": _rotate(inputs["q"], c, s, lp, ct), "k_rot": _rotate(inputs["k"], c, s, lp, ct),
            "cos": c, "sin": s, "logit_scale": _scale(lp, time, ct)}


def _nope(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]], ct: type, at: type) -> dict[
        str, NDArray[Any]]:
    compute.model_nope(inputs["positions"], inputs["q"], inputs["k"], **params)
    lp = _layer(params)
    return {"q_rot": np.asarray(inputs["q"]).astype(ct), "k_rot": np.asarray(inputs["k"]).astype(ct),
            "logit_scale": _scale(lp, np.asarray(inputs["positions"]), ct)}


def _alibi(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]], ct: type, at: type) -> dict[
        str, NDArray[Any]]:
    compute.model_alibi(inputs["query_positions"], inputs["key_positions"], **params)
    lp = _layer(params)
    out = alibi.EMULATIONS["alibi.bias"](dict(lp.params), inputs, ct, at)
    if lp.bias_scale != 1.0:  # Falcon: the bias over sqrt(head_dim), the product rounded to the compute dtype
        out = {"bias": (np.asarray(out["bias"]).astype(ct) * ct(lp.bias_scale)).astype(ct)}
    return out


def _t5(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]], ct: type, at: type) -> dict[
        str, NDArray[Any]]:
    buckets, _ = compute.model_t5(inputs["query_positions"], inputs["key_positions"], inputs["table"], **params)
    p = _layer(params).params
    out = t5.EMULATIONS["t5.bias"]({**p, "table_layout": "buckets_heads"}, inputs, ct, at)
    return {"bucket": buckets, "bias": out["bias"]}


def _deberta(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]], ct: type, at: type) -> dict[
        str, NDArray[Any]]:
    compute.model_deberta(inputs["query_positions"], inputs["key_positions"], **params)
    p = _layer(params).params
    keys = {"position_buckets": p["position_buckets"], "max_relative_positions": p["max_relative_positions"]}
    return deberta.EMULATIONS["deberta.index"](keys, inputs, ct, at)


def _learned(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]], ct: type, at: type) -> dict[
        str, NDArray[Any]]:
    return {"index": compute.model_learned(inputs["positions"], **params)}


def _sinusoidal(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]], ct: type, at: type) -> dict[
        str, NDArray[Any]]:
    compute.model_sinusoidal(inputs["positions"], **params)
    p = _layer(params).params
    keys = {k: p[k] for k in ("dim", "base", "ladder", "layout", "position_offset")}
    return {"embedding": sinusoidal.EMULATIONS["sinusoidal.table"](keys, inputs, ct, at)["table"]}


def _transformer_xl(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]], ct: type, at: type) -> dict[
        str, NDArray[Any]]:
    compute.model_transformer_xl(inputs["distances"], **params)  # validates
    p = _layer(params).params
    # as the Transformer-XL score emulation: frequencies in ct (transformers: float32), angles in at
    w = lowp_frequencies(sinusoidal_frequencies(dim=int(p["dim"]), base=float(p["base"])), float(p["base"]), ct)
    theta: NDArray[Any] = compute.xl_clamped(p, inputs["distances"]).astype(at)[:, None] * w.astype(at)
    return {"embedding": np.concatenate([np.sin(theta), np.cos(theta)], axis=-1).astype(ct)}


EMULATIONS: Final[dict[str, Emulation]] = {
    "model.rope": _rope,
    "model.nope": _nope,
    "model.alibi": _alibi,
    "model.t5": _t5,
    "model.deberta": _deberta,
    "model.learned": _learned,
    "model.sinusoidal": _sinusoidal,
    "model.transformer_xl": _transformer_xl,
}
