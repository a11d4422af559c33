"""The model ops: a layer of a model config applied to explicit positions and inputs.

Each function resolves the config (:func:`posenc_ref.models.resolve`), takes the layer's
parameters and calls the existing scheme functions; nothing here is a new formula except the
two per-position query temperatures, which are the models' own (written out below).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from posenc_ref import alibi, deberta, rope, rope_scaling, sinusoidal, t5
from posenc_ref._transformer_xl_core import _embedding
from posenc_ref.errors import SpecError, check_float_array, check_positions
from posenc_ref.models.resolve import LayerPositions, resolve
from posenc_ref.rope_variants import mrope_stream

FREQUENCY_KEYS = ("dim", "base", "rope_type", "factor", "original_max_position", "context_length", "low_freq_factor",
                  "high_freq_factor", "beta_fast", "beta_slow", "mscale", "mscale_all_dim", "attention_factor",
                  "truncate", "partial_rotary_factor", "short_factor", "long_factor", "dynamic_convention",
                  "yarn_convention")


def layer_of(func: str, config: Mapping[str, Any], layer: Any, schemes: tuple[str, ...], *,
             interpretation: str = "transformers-5") -> LayerPositions:
    """The resolved layer ``layer`` of ``config``; SpecError when its scheme is not one of ``schemes``."""
    if not isinstance(config, Mapping):
        raise TypeError(f"{func}: config must be a mapping (the model's config.json), got {type(config).__name__}")
    layers = resolve(config, interpretation=interpretation).layers
    if isinstance(layer, bool) or not isinstance(layer, (int, np.integer)) or not 0 <= int(layer) < len(layers):
        raise SpecError(f"{func}: layer must be an integer in [0, {len(layers)}), got layer={layer!r}")
    chosen = layers[int(layer)]
    if chosen.scheme not in schemes:
        raise SpecError(f"{func}: layer {layer} uses scheme {chosen.scheme!r}, not {' or '.join(schemes)}")
    return chosen


def inv_freq(params: Mapping[str, Any], context_length: int | None, func: str
             ) -> tuple[NDArray[np.float64], float]:
    """The layer's inverse frequencies (P,) and attention factor, from :func:`posenc_ref.rope_scaling.rope_inv_freq`."""
    freq = {k: v for k, v in params.items() if k in FREQUENCY_KEYS}
    if freq["rope_type"] in ("dynamic", "longrope"):
        if context_length is None:
            raise SpecError(f"{func}: rope_type={freq['rope_type']!r} needs context_length (transformers: "
                            f"max(position_ids) + 1), got None")
        freq["context_length"] = context_length
    w, factor, _ = rope_scaling.rope_inv_freq(**llama3_step(freq, func))
    return w, float(factor[0])


def llama3_step(freq: dict[str, Any], func: str) -> dict[str, Any]:
    """``freq`` (rope_inv_freq keywords) as rope_inv_freq takes it: llama3 with equal low and high
    factors (Llama 4) gets an empty blend band, as transformers computes it; anything else as given."""
    if freq["rope_type"] != "llama3" or freq["low_freq_factor"] != freq["high_freq_factor"]:
        return freq
    # Llama 4 sets low_freq_factor == high_freq_factor: transformers' blend band is then empty (each
    # pair is either kept or divided by the factor, split at wavelength L0 / f). rope_inv_freq needs
    # low < high; a band (L0 / (f (1 + 1e-9)), L0 / f) that holds no pair's wavelength gives exactly
    # the same frequencies, which is checked here.
    f, original = float(freq["high_freq_factor"]), float(freq["original_max_position"])
    nudged = f * (1.0 + 1e-9)
    i = np.arange(int(freq["dim"]) // 2, dtype=np.float64)
    wavelength = 2.0 * math.pi / (float(freq["base"]) ** -((2.0 * i) / int(freq["dim"])))
    if ((wavelength > original / nudged) & (wavelength < original / f)).any():
        raise SpecError(f"{func}: llama3 with low_freq_factor == high_freq_factor == {f}: a wavelength lies within "
                        f"1e-9 of L0/f; transformers' rule is undefined there")
    return {**freq, "high_freq_factor": nudged}


def _check_qk(func: str, q: Any, k: Any, lp: LayerPositions, t: int) -> tuple[NDArray[np.float64], ...]:
    qv = check_float_array(func, "q", q, ndim=3)
    kv = check_float_array(func, "k", k, ndim=3)
    if qv.shape[0] != t or kv.shape[0] != t or qv.shape[2] != lp.head_dim or kv.shape[2] != lp.head_dim:
        raise SpecError(f"{func}: q and k must have shapes (T, H, D) and (T, Hkv, D) with T={t} and the layer's "
                        f"head dim D={lp.head_dim}, got {qv.shape} and {kv.shape}", category="invalid_shape")
    ratio = lp.num_heads // lp.num_kv_heads
    if kv.shape[1] < 1 or qv.shape[1] % kv.shape[1] or not 1 <= qv.shape[1] // kv.shape[1] <= ratio:
        raise SpecError(f"{func}: q must have a whole number of heads per key head, at most the model's GQA ratio "
                        f"{lp.num_heads}/{lp.num_kv_heads} = {ratio}, got H={qv.shape[1]}, Hkv={kv.shape[1]}",
                        category="invalid_shape")
    return qv, kv


def temperature(lp: LayerPositions, positions: NDArray[np.int64], func: str = "temperature") -> NDArray[np.float64]:
    """The per-position query temperature of the layer, shape (T,) (1 where the model has none); ``func``
    names the caller in the SpecError of a temperature that overflows."""
    rule = lp.temperature
    p = positions.astype(np.float64)
    if rule is None:
        return np.ones(positions.shape[-1])
    with np.errstate(over="ignore", invalid="ignore"):
        if rule["rule"] == "llama4":  # Llama 4 NoPE layers: log1p(floor((p + 1) / floor_scale)) * attn_scale + 1
            steps = np.floor((p + 1.0) / float(rule["floor_scale"]))
            out = np.asarray(np.log1p(steps) * float(rule["attn_scale"]) + 1.0, dtype=np.float64)
        else:  # llama4_beta (Ministral 3): 1 + beta * log(1 + floor(p / original_max_position_embeddings))
            steps = np.floor(p / float(rule["original_max_position"]))
            out = np.asarray(1.0 + float(rule["beta"]) * np.log1p(steps), dtype=np.float64)
    if not np.isfinite(out).all():  # Note: a floor_scale near 1e-308 overflows the quotient
        raise SpecError(f"{func}: layer {lp.index}'s {rule['rule']} query temperature overflows float64 at positions "
                        f"{positions[~np.isfinite(out)][:3].tolist()} ({rule})")
    return out


def _rotate(x: NDArray[np.float64], angle: NDArray[np.float64], lp: LayerPositions, factor: float
            ) -> NDArray[np.float64]:
    """x (T, H, D) rotated by angle (T, P) under the layer's partial style and layout."""
    params = lp.params
    view = x.transpose(1, 0, 2)[None]  # (1, H, T, D): rope_apply's BHTD
    a = angle[None, None]  # (1, 1, T, P)
    if params["partial"] == "suffix":
        start = lp.head_dim - int(params["rotary_dim"])
        out = view.copy()
        out[..., start:] = rope._rotate(view[..., start:], a, int(params["rotary_dim"]), params["layout"], factor)
    else:
        space = lp.head_dim if params["partial"] == "proportional" else int(params["rotary_dim"])
        out = rope._rotate(view, a, space, params["layout"], factor)
    if not np.isfinite(out).all():
        raise SpecError("model_rope: the result overflows float64 (q or k too large)")
    return np.asarray(out[0].transpose(1, 0, 2), dtype=np.float64)


def model_rope(positions: Any, q: Any, k: Any, /, *, model: str = "", config: Mapping[str, Any], layer: int,
               context_length: int | None = None) -> tuple[NDArray[np.float64], ...]:
    """A RoPE (or MRoPE) layer of ``config`` at explicit positions.

    Returns
    -------
    q_rot (T, H, D), k_rot (T, Hkv, D), cos (T, P), sin (T, P), logit_scale (T,) : float64
    """
    func = "model_rope"
    lp = layer_of(func, config, layer, ("rope", "mrope"))
    streams = lp.scheme == "mrope"
    pos = check_positions(func, "positions", positions, min_ndim=1)
    if (streams and (pos.ndim != 2 or pos.shape[0] != 3)) or (not streams and pos.ndim != 1):
        raise SpecError(f"{func}: positions must have shape {'(3, T)' if streams else '(T,)'} for this layer, "
                        f"got {pos.shape}", category="invalid_shape")
    qv, kv = _check_qk(func, q, k, lp, pos.shape[-1])
    w, factor = inv_freq(lp.params, context_length, func)
    cos, sin = rope.rope_cos_sin(pos, w, attention_factor=factor, width="half")  # (T, P) or (3, T, P)
    angle = pos.astype(np.float64)[..., None] * w
    if streams:
        section = lp.params["mrope_section"]
        stream = mrope_stream(len(w), (section[0], section[1], section[2]), lp.params["mrope_layout"])
        cols = np.arange(len(w))
        cos, sin, angle = cos[stream, :, cols].T, sin[stream, :, cols].T, angle[stream, :, cols].T
    t_pos = pos[0] if streams else pos
    scale = lp.logit_scale * temperature(lp, t_pos, func)
    return _rotate(qv, angle, lp, factor), _rotate(kv, angle, lp, factor), cos, sin, scale


def model_nope(positions: Any, q: Any, k: Any, /, *, model: str = "", config: Mapping[str, Any], layer: int,
               context_length: int | None = None) -> tuple[NDArray[np.float64], ...]:
    """A NoPE layer: q and k unchanged, the logit multiplier per position (Llama 4 temperature tuning)."""
    func = "model_nope"
    lp = layer_of(func, config, layer, ("nope",))
    pos = check_positions(func, "positions", positions, min_ndim=1)
    if pos.ndim != 1:
        raise SpecError(f"{func}: positions must have shape (T,), got {pos.shape}", category="invalid_shape")
    qv, kv = _check_qk(func, q, k, lp, pos.shape[0])
    return qv.copy(), kv.copy(), lp.logit_scale * temperature(lp, pos, func)


def model_alibi(query_positions: Any, key_positions: Any, /, *, model: str = "", config: Mapping[str, Any],
                layer: int, context_length: int | None = None) -> NDArray[np.float64]:
    """The ALiBi bias (H, Tq, Tk) an ALiBi layer adds to its scaled logits ``logit_scale * q.k``, in the
    relative_causal form: the slope rule's bias times the layer's ``bias_scale`` (Falcon: ``head_dim ** -0.5``)."""
    lp = layer_of("model_alibi", config, layer, ("alibi",))
    p = lp.params
    bias = alibi.alibi_bias(query_positions, key_positions, num_heads=p["num_heads"], form=p["form"],
                            slope_rule=p["slope_rule"], bias_max=p["bias_max"])
    return bias if lp.bias_scale == 1.0 else bias * lp.bias_scale


def model_t5(query_positions: Any, key_positions: Any, table: Any, /, *, model: str = "",
             config: Mapping[str, Any], layer: int, context_length: int | None = None
             ) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """T5 buckets (Tq, Tk) and bias (H, Tq, Tk) of a T5 layer (encoder bidirectional, decoder causal)."""
    p = layer_of("model_t5", config, layer, ("t5",)).params
    direction = p["direction"]
    bias = t5.t5_bias(query_positions, key_positions, table, num_buckets=p["num_buckets"],
                      max_distance=p["max_distance"], direction=direction)
    q = check_positions("model_t5", "query_positions", query_positions, min_ndim=1)
    k = check_positions("model_t5", "key_positions", key_positions, min_ndim=1)
    buckets = t5.t5_bucket(k[None, :] - q[:, None], num_buckets=p["num_buckets"], max_distance=p["max_distance"],
                           direction=direction)
    return buckets, bias


def model_deberta(query_positions: Any, key_positions: Any, /, *, model: str = "", config: Mapping[str, Any],
                  layer: int, context_length: int | None = None) -> NDArray[np.int64]:
    """DeBERTa-v2/v3 relative-embedding rows (Tq, Tk) of a layer."""
    p = layer_of("model_deberta", config, layer, ("deberta",)).params
    return deberta.deberta_index(query_positions, key_positions, position_buckets=p["position_buckets"],
                                 max_relative_positions=p["max_relative_positions"])


def model_learned(positions: Any, /, *, model: str = "", config: Mapping[str, Any], layer: int,
                  context_length: int | None = None) -> NDArray[np.int64]:
    """The learned-table row (T,) each position reads; SpecError past the table (transformers: an index error)."""
    func = "model_learned"
    p = layer_of(func, config, layer, ("learned",)).params
    pos = check_positions(func, "positions", positions, min_ndim=1)
    rows = pos + int(p["offset"])
    if pos.size and int(rows.max()) >= int(p["num_positions"]):
        raise SpecError(f"{func}: position {int(pos.max())} reads row {int(rows.max())} of a table of "
                        f"{p['num_positions']} rows", category="out_of_range")
    return rows


def model_sinusoidal(positions: Any, /, *, model: str = "", config: Mapping[str, Any], layer: int,
                     context_length: int | None = None) -> NDArray[np.float64]:
    """The fixed sinusoidal embedding (T, d_model) the layer's stack adds."""
    p = layer_of("model_sinusoidal", config, layer, ("sinusoidal",)).params
    return sinusoidal.sinusoidal_table(positions, dim=p["dim"], base=p["base"], ladder=p["ladder"],
                                       layout=p["layout"], position_offset=p["position_offset"])


def model_transformer_xl(distances: Any, /, *, model: str = "", config: Mapping[str, Any], layer: int,
                         context_length: int | None = None) -> NDArray[np.float64]:
    """The relative sinusoid rows ``R_delta`` (N, d_model) an XLNet layer projects, one per distance.

    ``delta`` is query position minus key position (``(mlen + i) - j``), clamped to
    ``[-clamp_len, clamp_len]`` when the config's ``clamp_len > 0``; ``attn_type="uni"`` builds no
    row for a negative distance (SpecError).
    """
    func = "model_transformer_xl"
    p = layer_of(func, config, layer, ("transformer_xl",)).params
    delta = check_positions(func, "distances", distances, nonnegative=False)
    if p["attn_type"] == "uni" and delta.size and int(delta.min()) < 0:
        raise SpecError(f"{func}: an attn_type='uni' layer builds rows for distances >= 0 only (klen down to 0), "
                        f"got distance {int(delta.min())}", category="out_of_range")
    return _embedding(func, xl_clamped(p, delta), p["dim"], p["base"])  # xl_relative_embedding, errors named here


def xl_clamped(params: Mapping[str, Any], distances: Any) -> NDArray[np.int64]:
    """The distances an XLNet layer's rows are built at: clamped to ``[-clamp_len, clamp_len]`` if ``clamp_len > 0``."""
    delta = np.asarray(distances, dtype=np.int64)
    clamp = int(params["clamp_len"])
    return np.clip(delta, -clamp, clamp) if clamp > 0 else delta
