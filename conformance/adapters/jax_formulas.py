"""The ``jax.numpy`` port of the ops: one function per formula, in the compute dtype the caller
gives. The adapter that checks the inputs and calls these is :mod:`jax_port`.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

if str(Path(__file__).resolve().parent) not in sys.path:  # the shared helpers live next to this file
    sys.path.insert(0, str(Path(__file__).resolve().parent))
from jax_library import dot_product_attention  # noqa: E402
from posenc_adapter_shared import Rejected, require  # noqa: E402

jax = require("jax", "jax")
jnp = jax.numpy


def _frequencies(width: int, base: float, ladder: str, compute: Any) -> Any:
    """``base ** -e``: e = 2k/width (paper) or k/max(n-1, 1) (t2t), n = ceil(width/2) (n,)."""
    n = (width + 1) // 2
    k = jnp.arange(n, dtype=compute)
    exponent = 2 * k / width if ladder == "paper" else k / max(n - 1, 1)
    return jnp.power(jnp.asarray(base, dtype=compute), -exponent)


def table(rows: np.ndarray, p: Mapping[str, Any], compute: Any) -> Any:
    """The sinusoidal table (*rows.shape, dim)."""
    dim, odd = int(p["dim"]), int(p["dim"]) % 2 == 1
    width = dim - 1 if odd and p["odd_width"] == "zero_pad_last" else dim
    angles = jnp.asarray(rows).astype(compute)[..., None] * _frequencies(width, p["base"], p["ladder"], compute)
    n = angles.shape[-1]
    n_cos = n - 1 if odd and p["odd_width"] == "sin_gets_extra" else n
    sin, cos = jnp.sin(angles), jnp.cos(angles[..., :n_cos])
    pad = jnp.zeros(angles.shape[:-1] + (dim - n - n_cos,), dtype=compute)
    if p["layout"] == "interleaved":
        pairs = jnp.stack([sin[..., :n_cos], cos], axis=-1).reshape(angles.shape[:-1] + (2 * n_cos,))
        out = jnp.concatenate([pairs, sin[..., n_cos:], pad], axis=-1)
    elif p["layout"] == "concat_sin_cos":
        out = jnp.concatenate([sin, cos, pad], axis=-1)
    else:
        out = jnp.concatenate([cos, sin, pad], axis=-1)
    return out * jnp.asarray(p["scale"], dtype=compute)


def fairseq(tokens: np.ndarray, params: Mapping[str, Any], compute: Any) -> tuple[Any, Any]:
    """fairseq rows (B, T) and embedding (B, T, dim); ``cache_rule="m2m100"``: rows
    ``(cumsum(real) + past) * real + pad`` for any chunk length (transformers M2M100)."""
    ids, pad, past = jnp.asarray(tokens), int(params["padding_idx"]), int(params["past_length"])
    real = (ids != pad).astype(ids.dtype)
    if params.get("cache_rule", "fairseq") == "m2m100":  # any chunk after ``past`` cached tokens
        rows = (jnp.cumsum(real, axis=1) + past) * real + pad
    elif past:  # fairseq's incremental step: one token, whatever it holds
        rows = jnp.full(ids.shape, pad + past + 1)
    else:
        rows = jnp.cumsum(real, axis=1) * real + pad
    p = {"dim": params["dim"], "base": params["base"], "ladder": "t2t", "layout": "concat_sin_cos",
         "odd_width": "zero_pad_last", "scale": 1.0}
    emb = table(np.asarray(rows), p, compute) * (rows != pad).astype(compute)[..., None]
    return rows, emb


def grid(ys: np.ndarray, xs: np.ndarray, params: Mapping[str, Any], compute: Any) -> Any:
    """2-D sin-cos encodings (*ys.shape, dim)."""
    w = _frequencies(int(params["dim"]) // 2, params["base"], params["ladder"], compute)  # (D/4,)
    y = jnp.asarray(ys).astype(compute)[..., None] * w
    x = jnp.asarray(xs).astype(compute)[..., None] * w
    a, b = (x, y) if params["axis_order"] == "x_first" else (y, x)
    if params["block_layout"] == "sin_cos":
        return jnp.concatenate([jnp.sin(a), jnp.cos(a), jnp.sin(b), jnp.cos(b)], axis=-1)
    if params["block_layout"] == "sin_sin_cos_cos":
        return jnp.concatenate([jnp.sin(a), jnp.sin(b), jnp.cos(a), jnp.cos(b)], axis=-1)
    shape = a.shape[:-1] + (2 * a.shape[-1],)
    return jnp.concatenate([jnp.stack([jnp.sin(a), jnp.cos(a)], -1).reshape(shape),
                            jnp.stack([jnp.sin(b), jnp.cos(b)], -1).reshape(shape)], axis=-1)


def yarn_ramp(i: Any, low: float, high: float) -> Any:
    """YaRN's ramp over the pair indices ``i``: 0 up to ``low``, 1 from ``high``, linear between."""
    return jnp.clip((i - low) / (high - low), 0, 1)


def inv_freq(c: Mapping[str, Any], compute: Any) -> Any:
    """The (P,) inverse frequencies of one RoPE variant, ``1 / base ** (2i/d)`` in ``compute`` and
    the per-pair blends in ``compute``; ``c`` holds the scalars (:func:`posenc_adapter_checks.inv_freq`)."""
    dim, s = c["dim"], c["s"]
    i = jnp.arange(dim // 2, dtype=compute)
    w = 1 / jnp.power(jnp.asarray(c["base"], dtype=compute), 2 * i / dim)
    if c["type"] == "proportional":
        return jnp.where(i < c["turning"], w, 0) / s
    if c["type"] == "linear":
        return w / s
    if c["type"] == "llama3":
        wavelength = 2 * np.pi / w
        smooth = (c["original"] / wavelength - c["low"]) / (c["high"] - c["low"])
        blended = (1 - smooth) * w / s + smooth * w
        return jnp.where(wavelength < c["original"] / c["high"], w,
                         jnp.where(wavelength > c["original"] / c["low"], w / s, blended))
    if c["type"] == "yarn":
        ramp = yarn_ramp(i, *c["ramp"])
        ext = c.get("ext", 1.0)
        if ext != 1.0:  # ggml's ext_factor scales the extrapolation weight 1 - ramp
            ramp = ramp + (1 - ramp) * (1 - ext)
        return w * (1 - ramp) + (w / s) * ramp
    return w  # default, and ntk_aware / dynamic with their scaled base


def cos_sin(pos: np.ndarray, inv_freq: np.ndarray, params: Mapping[str, Any], compute: Any) -> tuple[Any, Any]:
    """``a cos(p w)``, ``a sin(p w)`` (*pos.shape, P or 2P); angles in ``compute``."""
    angle = jnp.asarray(pos).astype(compute)[..., None] * jnp.asarray(inv_freq, dtype=compute)
    factor = jnp.asarray(params["attention_factor"], dtype=compute)
    cos, sin = factor * jnp.cos(angle), factor * jnp.sin(angle)
    if params["width"] == "full":
        return jnp.concatenate([cos, cos], -1), jnp.concatenate([sin, sin], -1)
    if params["width"] == "full_interleaved":
        return jnp.repeat(cos, 2, axis=-1), jnp.repeat(sin, 2, axis=-1)
    return cos, sin


def rotary_freq(space: int, rd: int, base: float, compute: Any) -> Any:
    """``base ** (-2i/S)`` for the ``rd/2`` rotated pairs, zero for the rest of the ``S/2``."""
    i = jnp.arange(space // 2, dtype=compute)
    return jnp.where(i < rd // 2, jnp.power(jnp.asarray(base, dtype=compute), -(2 * i) / space), 0)


def scaled_freq(scaling: Mapping[str, Any], space: int, rd: int, compute: Any) -> Any:
    """The ``S/2`` frequencies of a scaled ``rope.apply``/``rope.scores`` case
    (:func:`posenc_adapter_checks.scaling`): the variant's ``rope.inv_freq`` (LongRoPE's
    ``rope.longrope_inv_freq``) at ``dim = S``, zero for the pairs from ``rd/2`` on."""
    c = scaling["freq"]
    if scaling["type"] == "default":
        return rotary_freq(space, rd, c["base"], compute)
    if scaling["type"] == "longrope":
        w = longrope_inv_freq(c["factors"], space, c["base"], compute)
    else:
        w = inv_freq(c, compute)
    return jnp.where(jnp.arange(space // 2) < rd // 2, w, 0)


def rotate(x: Any, pos: np.ndarray, space: int, rd: int, params: Mapping[str, Any], layout: str,
           compute: Any, freq: Any = None) -> Any:
    """RoPE of x (B, H, T, D) or (B, T, H, D) at positions (B|1, T), at the frequencies ``freq``
    (S/2; default: :func:`rotary_freq` of ``params["base"]``) and ``params["attention_factor"]``."""
    freq = rotary_freq(space, rd, params["base"], compute) if freq is None else freq
    angle = jnp.asarray(pos).astype(compute)[..., None] * freq
    angle = angle[:, None] if params["x_layout"] == "BHTD" else angle[:, :, None]
    factor = jnp.asarray(params["attention_factor"], dtype=compute)
    cos, sin = factor * jnp.cos(angle), factor * jnp.sin(angle)
    return turn(x, cos, sin, space, layout)


def turn(x: Any, cos: Any, sin: Any, space: int, layout: str) -> Any:
    """The pairs of the first ``space`` channels of x turned by ``cos``/``sin`` (broadcastable to the
    (..., space/2) pairs); the rest pass through."""
    n = space // 2
    if layout == "half":
        u, v = x[..., :n], x[..., n:space]
    else:
        u, v = x[..., 0:space:2], x[..., 1:space:2]
    ru, rv = u * cos - v * sin, u * sin + v * cos
    if layout == "interleaved":
        rotated = jnp.stack([ru, rv], axis=-1).reshape(x.shape[:-1] + (space,))
    else:  # half, and interleaved_to_half (pairs read interleaved, written in half order)
        rotated = jnp.concatenate([ru, rv], axis=-1)
    return jnp.concatenate([rotated, x[..., space:]], axis=-1)


def rotate_cached(x: Any, rows: np.ndarray, cos: Any, sin: Any, layout: str, x_layout: str) -> Any:
    """``rope.rotate``: x (B, H, T, D) or (B, T, H, D) turned by the cache rows ``cos[rows]``,
    ``sin[rows]`` (rows (B|1, T), caches (N, P)) over its first 2P channels (ONNX RotaryEmbedding)."""
    index = jnp.asarray(rows)
    c, s = jnp.take(cos, index, axis=0), jnp.take(sin, index, axis=0)  # (B|1, T, P)
    c, s = (c[:, None], s[:, None]) if x_layout == "BHTD" else (c[:, :, None], s[:, :, None])
    return turn(x, c, s, 2 * cos.shape[1], layout)


def xpos_zeta(width: int, compute: Any) -> Any:
    """xPos's per-pair decay ``zeta_i = (2i + 0.4 D) / (1.4 D)`` for the pairs i < D/2 of a width D; (P,)."""
    return (2 * jnp.arange(width // 2, dtype=compute) + 0.4 * width) / (1.4 * width)


def scores(q: Any, k: Any, qp: np.ndarray, kp: np.ndarray, space: int, rd: int, params: Mapping[str, Any],
           compute: Any, freq: Any = None) -> Any:
    """``<R(m) q_m, R(n) k_n>`` (B, H, Tq, Tk), with the xPos pair weights when asked."""
    qr = rotate(q, qp, space, rd, params, params["layout"], compute, freq)
    kr = rotate(k, kp, space, rd, params, params["layout"], compute, freq)
    if params["x_layout"] == "BTHD":
        qr, kr = qr.transpose(0, 2, 1, 3), kr.transpose(0, 2, 1, 3)
    if params["xpos_scale_base"] is None:
        return jnp.einsum("bhqd,bhkd->bhqk", qr, kr)
    n = space // 2
    zeta = xpos_zeta(space, compute)  # (P,)
    offset = (jnp.asarray(qp)[:, :, None] - jnp.asarray(kp)[:, None, :]).astype(compute)
    weight = zeta ** (offset[:, None, :, :, None] / params["xpos_scale_base"])  # (B|1, 1, Tq, Tk, P)
    if params["layout"] == "half":
        pairs = (jnp.einsum("bhqp,bhkp->bhqkp", qr[..., :n], kr[..., :n])
                 + jnp.einsum("bhqp,bhkp->bhqkp", qr[..., n:space], kr[..., n:space]))
    else:
        pairs = (jnp.einsum("bhqp,bhkp->bhqkp", qr[..., 0:space:2], kr[..., 0:space:2])
                 + jnp.einsum("bhqp,bhkp->bhqkp", qr[..., 1:space:2], kr[..., 1:space:2]))
    rest = jnp.einsum("bhqd,bhkd->bhqk", qr[..., space:], kr[..., space:])
    return (pairs * weight).sum(axis=-1) + rest


def xpos(q: Any, k: Any, pos: np.ndarray, params: Mapping[str, Any], compute: Any) -> tuple[Any, Any]:
    """xPos: RoPE over the whole head, then q times and k divided by ``zeta ** ((p - c) / B)``."""
    width = q.shape[-1]
    t = pos.shape[-1]
    p = {**params, "attention_factor": 1.0}
    qr = rotate(q, pos, width, width, p, params["layout"], compute)
    kr = rotate(k, pos, width, width, p, params["layout"], compute)
    centre = t // 2 if params["centring"] == "lucidrains" else -(-t // 2)
    zeta = xpos_zeta(width, compute)  # (P,)
    power = (jnp.asarray(pos) - centre).astype(compute) / params["scale_base"]  # (B|1, T)
    power = power[:, None, :, None] if params["x_layout"] == "BHTD" else power[:, :, None, None]
    up = zeta**power
    if not bool(jnp.isfinite(up).all() & jnp.isfinite(1 / up).all()):
        raise Rejected("out_of_range", f"zeta ** (+-(p - c) / {params['scale_base']}) overflows {compute}")
    scale = jnp.repeat(up, 2, axis=-1) if params["layout"] == "interleaved" else jnp.concatenate([up, up], -1)
    return qr * scale, kr / scale


def mrope(pos: np.ndarray, stream: np.ndarray, params: Mapping[str, Any], compute: Any) -> tuple[Any, Any]:
    """MRoPE cos/sin: pair ``i`` turns at the position of its own stream."""
    dim = int(params["dim"])
    i = jnp.arange(dim // 2, dtype=compute)
    w = 1 / jnp.power(jnp.asarray(params["base"], dtype=compute), 2 * i / dim)
    chosen = jnp.moveaxis(jnp.asarray(pos)[stream], 0, -1).astype(compute)  # (..., P)
    angle = chosen * w
    cos, sin = jnp.cos(angle), jnp.sin(angle)
    if params["width"] == "full":
        return jnp.concatenate([cos, cos], -1), jnp.concatenate([sin, sin], -1)
    return cos, sin


def alibi_bias(q: np.ndarray, k: np.ndarray, slopes: Any, form: str, compute: Any) -> Any:
    """ALiBi bias (..., H, Tq, Tk) of (..., Tq) and (..., Tk) positions."""
    i, j = jnp.asarray(q)[..., :, None], jnp.asarray(k)[..., None, :]
    if form == "relative_causal":
        signed = j - i
    elif form == "key_only":
        signed = jnp.broadcast_to(j, i.shape[:-1] + j.shape[-1:])
    elif form == "symmetric":
        signed = -jnp.abs(i - j)
    else:
        signed = -jnp.abs(i + (k.shape[-1] - q.shape[-1]) - j)
    distance = signed.astype(compute)
    if distance.ndim > 2:
        distance = distance[..., None, :, :]
    return slopes[:, None, None] * distance


def t5_buckets(rel: Any, limit: int, side: int, direction: str, compute: Any) -> Any:
    """T5 ``_relative_position_bucket`` in floating point, as T5 computes it (truncating cast)."""
    rel = jnp.asarray(rel)
    if direction == "bidirectional":
        offset, n = jnp.where(rel > 0, side, 0), jnp.abs(rel)
    else:
        offset, n = jnp.zeros_like(rel), jnp.maximum(-rel, 0)
    exact = side // 2
    large = exact + (jnp.log(n.astype(compute) / exact) / np.log(limit / exact) * (side - exact)).astype(rel.dtype)
    return offset + jnp.where(n < exact, n, jnp.minimum(large, side - 1))


def deberta_buckets(delta: Any, buckets: int, limit: int, clamp: str, compute: Any) -> Any:
    """DeBERTa v2 ``make_log_bucket_position`` in floating point (ceil of the log ladder)."""
    delta = jnp.asarray(delta)
    if clamp == "max_relative_positions":
        delta = jnp.clip(delta, -(limit - 1), limit - 1)
    mid = buckets // 2
    n = jnp.abs(delta)
    ratio = jnp.log(jnp.maximum(n, mid).astype(compute) / mid) / np.log((limit - 1) / mid) * (mid - 1)
    return jnp.where(n <= mid, delta, jnp.sign(delta) * (mid + jnp.ceil(ratio).astype(delta.dtype)))


def deberta_scores(a: Mapping[str, Any], compute: Any, out: Any) -> Any:
    """transformers DebertaV2 ``disentangled_attention_bias``: c2p gathers ``q Kr^T`` at
    ``idx(i - j)``, p2c gathers ``k Qr^T`` at the same ``idx(i - j)``, all over ``sqrt(d (1 + n))``."""
    q, k, kr, qr = (jnp.asarray(a[n], dtype=out).astype(compute) for n in ("q", "k", "pos_key", "pos_query"))
    b = a["buckets"]
    delta = a["qp"][:, None] - a["kp"][None, :]
    index = jnp.clip(deberta_buckets(delta, b, a["limit"], a["clamp"], compute) + b, 0, 2 * b - 1)  # (Tq, Tk)
    scores = q @ jnp.swapaxes(k, -1, -2)
    heads = q.shape[0]
    if "c2p" in a["terms"]:
        c2p = q @ jnp.swapaxes(kr, -1, -2)  # (H, Tq, 2b)
        scores = scores + jnp.take_along_axis(c2p, jnp.broadcast_to(index, (heads,) + index.shape), axis=-1)
    if "p2c" in a["terms"]:
        p2c = k @ jnp.swapaxes(qr, -1, -2)  # (H, Tk, 2b)
        scores = scores + p2c[:, jnp.arange(k.shape[1])[None, :], index]
    return scores / np.sqrt(q.shape[-1] * (1 + len(a["terms"])))


def attention(a: Mapping[str, Any], compute: Any, use_library: bool, held: Any = None) -> tuple[Any, Any]:
    """(output, weights): the weights by a port of the softmax, the output by
    ``jax.nn.dot_product_attention`` (``use_library``) or by the same port.

    An optional ``a["term"]`` (broadcastable to (B, H, Tq, Tk)) is added to the dot product inside
    the scale, and an optional ``a["value_term"]`` (broadcastable to (B, H, Tq, Tk, D)) to the
    values under the weights (Shaw, Transformer-XL): the library receives ``scale * term`` in its
    ``bias`` and the value term is added to its output as ``weights @ value_term``
    (:func:`jax_library.dot_product_attention`)."""
    held = held or compute  # the dtype q, k, v and the bias are held in (the adapter's dtype)
    q, k, v = (jnp.asarray(a[n], dtype=held).astype(compute) for n in ("q", "k", "v"))
    g = a["groups"]
    keep = jnp.asarray(a["keep"])
    scale = jnp.asarray(a["scale"], dtype=compute)
    term = a.get("term")
    dots = jnp.einsum("bhqd,bhkd->bhqk", q, jnp.repeat(k, g, axis=1))
    logits = (dots if term is None else dots + jnp.asarray(term).astype(compute)) * scale
    logits = logits + jnp.asarray(a["bias"], dtype=compute) + jnp.asarray(a["additive"], dtype=compute)
    logits = jnp.where(keep, logits, -jnp.inf)
    m = logits.max(axis=-1, keepdims=True)
    m = jnp.where(jnp.isneginf(m), 0, m)
    e = jnp.exp(logits - m)
    total = e.sum(axis=-1, keepdims=True)
    weights = e / jnp.where(total == 0, 1, total)
    empty = jnp.asarray(a["empty"])[..., None]
    tk = k.shape[2]
    if a["policy"] == "nan":
        weights = jnp.where(empty, jnp.nan, weights)
    elif a["policy"] == "uniform":
        weights = jnp.where(empty, 1 / tk, weights)
    value_term = a.get("value_term")
    extra = 0 if value_term is None else jnp.einsum(  # sum_j p_ij u_ij
        "bhqk,bhqkd->bhqd", weights, jnp.broadcast_to(jnp.asarray(value_term).astype(compute),
                                                      weights.shape + (v.shape[-1],)))
    if not use_library:
        return jnp.einsum("bhqk,bhkd->bhqd", weights, jnp.repeat(v, g, axis=1)) + extra, weights
    bias = jnp.asarray(a["bias"]) + jnp.asarray(a["additive"])
    if term is not None:  # the term inside the scale becomes a bias after it
        bias = bias + jnp.asarray(term).astype(compute) * scale
    return dot_product_attention(a, bias, held) + extra, weights


def longrope_inv_freq(factors: np.ndarray, dim: int, base: float, compute: Any) -> Any:
    """LongRoPE ``1 / (e_i * base ** (2i/d))`` (P,) for the chosen factor list ``e``, as transformers
    ``_compute_longrope_parameters`` writes it, in ``compute``."""
    exponent = jnp.arange(0, dim, 2, dtype=compute) / dim
    return 1 / (jnp.asarray(factors, dtype=compute) * jnp.power(jnp.asarray(base, dtype=compute), exponent))


def xl_embedding(distance: Any, width: int, base: float, compute: Any) -> Any:
    """Transformer-XL ``PositionalEmbedding``: ``[sin(d w) | cos(d w)]`` (*distance.shape, D_r), with
    ``w = 1 / base ** (arange(0, D_r, 2) / D_r)``."""
    w = 1 / jnp.power(jnp.asarray(base, dtype=compute), jnp.arange(0, width, 2, dtype=compute) / width)
    theta = jnp.asarray(distance).astype(compute)[..., None] * w
    return jnp.concatenate([jnp.sin(theta), jnp.cos(theta)], axis=-1)


def xl_score(q: Any, k: Any, u: Any, v: Any, w_r: Any, distance: Any, base: float, compute: Any) -> Any:
    """``(q_i + u) . k_j + (q_i + v) . W_R^T R_{d_ij}`` (Tq, Tk) by direct indexing of the distances."""
    r = xl_embedding(distance, w_r.shape[0], base, compute) @ w_r  # (Tq, Tk, D)
    return (q + u) @ k.T + jnp.einsum("qd,qkd->qk", q + v, r)


def rel_shift(x: Any, variant: str, k_len: int) -> tuple[Any, Any]:
    """The codebase's pad-and-reshape shift of ``BD`` (Tq, R) and where it equals direct indexing."""
    tq, rows = x.shape
    i, j = jnp.arange(tq)[:, None], jnp.arange(k_len)[None, :]
    if variant == "transformer_xl":  # kimiyoung/transformer-xl _rel_shift
        padded = jnp.concatenate([jnp.zeros((tq, 1), dtype=x.dtype), x], axis=1)  # (Tq, Tk + 1)
        return padded.reshape(k_len + 1, tq)[1:].reshape(tq, k_len), (j <= k_len - tq + i).astype(int)
    shifted = x.reshape(rows, tq)[1:].reshape(tq, rows - 1)[:, :k_len]  # zihangdai/xlnet rel_shift
    return shifted, (j + tq - i < rows).astype(int)


def rope_qk(q: Any, k: Any, qp: np.ndarray, kp: np.ndarray, base: float, layout: str, compute: Any) -> tuple[Any, Any]:
    """RoPE on q (B, H, Tq, D) at its positions and on k (B, Hkv, Tk, D) at its own (B|1, T)."""
    params = {"base": base, "x_layout": "BHTD", "attention_factor": 1.0}
    width = q.shape[-1]
    return (rotate(q, qp, width, width, params, layout, compute), rotate(k, kp, width, width, params, layout, compute))


def shaw_terms(q: Any, index: Any, rel_keys: Any, rel_values: Any) -> tuple[Any, Any]:
    """Shaw's ``t_ij = q_i . A^K[r_ij]`` (B, H, Tq, Tk) and ``u_ij = A^V[r_ij]`` (Tq, Tk, D)."""
    per_distance = q @ rel_keys.T  # (B, H, Tq, 2K + 1)
    rows = jnp.broadcast_to(jnp.asarray(index), q.shape[:2] + index.shape)
    return jnp.take_along_axis(per_distance, rows, axis=-1), rel_values[jnp.asarray(index)]


def xl_terms(q: Any, k: Any, u: Any, v: Any, w_r: Any, distance: Any, base: float, compute: Any) -> Any:
    """Transformer-XL terms (b)-(d) per head: ``u_h . k_j + (q_i + v_h) . W_{R,h}^T R_{d_ij}`` (B, H, Tq, Tk),
    k mapped to the query heads (B, H, Tk, D), u and v (H, D), w_r (H, D_r, D)."""
    r = jnp.einsum("qkc,hcd->hqkd", xl_embedding(distance, w_r.shape[1], base, compute), w_r)  # (H, Tq, Tk, D)
    position = jnp.einsum("bhqd,hqkd->bhqk", q + v[:, None, :], r)  # terms (b) + (d)
    return position + jnp.einsum("hd,bhkd->bhk", u, k)[:, :, None, :]  # term (c): u . k_j


def split_heads(x: Any, heads: int) -> Any:
    """(B, T, heads * D) -> (B, heads, T, D): head ``h`` owns columns ``h*D .. h*D + D - 1``."""
    b, t, width = x.shape
    return x.reshape(b, t, heads, width // heads).transpose(0, 2, 1, 3)
