"""JAX adapter: a ``jax.numpy`` port of every op, with JAX's own library functions where one exists.

=============================  ==================================================================
op                             computed by
=============================  ==================================================================
sinusoidal.*, grid2d.sincos,   ``jax.numpy`` port (``learned.lookup``: ``jnp.take(mode="clip")``)
learned.lookup
rope.inv_freq (every           ``jax.numpy`` port of transformers' init functions; LongRoPE is
rope_type but longrope),       ``rope.longrope_inv_freq`` (``1 / (e_i * base ** (2i/d))``, the
rope.longrope_inv_freq         factor list and attention factor chosen by the wrapper)
rope.cos_sin, rope.apply,      ``jax.numpy`` port
rope.scores, rope.xpos,
rope.mrope_cos_sin
alibi.*, t5.*, deberta.*,      ``jax.numpy`` port
shaw.*
transformer_xl.score           ``jax.numpy`` port: ``R = [sin | cos]`` of ``p_i - p_j`` as
                               Transformer-XL's ``PositionalEmbedding``, by direct indexing
transformer_xl.rel_shift       ``jax.numpy`` port of the codebase's pad-and-reshape shift
resample.*                     ``jax.image.scale_and_translate``: ``"cubic-pytorch"`` (a=-0.75,
                               edges replicated) without antialias, ``"cubic"`` (a=-0.5) with it,
                               ``"linear"`` for bilinear; align corners through its scale and
                               translation; other kernel parameters are not_applicable (below)
attention, attention.*         ``jax.nn.dot_product_attention`` for the output (float32, float16,
                               bfloat16), a ``jax.numpy`` softmax port for the weights; the
                               scheme is the port's own: RoPE on q and k at their positions
                               (``attention.rope``, the RoPE block's whole-pipeline parity case),
                               the ALiBi and T5 biases, Shaw's and Transformer-XL's terms
attention.pipeline             ``jax.numpy`` embedding, projections and head split around the same
                               attention
=============================  ==================================================================

``resample.*``: ``jax.image`` has a cubic with a=-0.5 only antialiased ("cubic"; "cubic-pytorch"
falls back to it when antialiased) and a cubic that replicates the edges as PyTorch does only with
a=-0.75 and no antialias ("cubic-pytorch"; plain "cubic" renormalises the edge weights), so bicubic
with ``antialias="on"`` and ``cubic_a=-0.75``, or ``"off"`` and ``-0.5``, is not_applicable.
``"linear"`` without antialias renormalises the in-range taps, which equals PyTorch's clamp of the
source coordinate at the edges. Align corners is ``scale = (m-1)/(n-1)``, ``translation = 0.5 (1 -
scale)`` (the ``scale_and_translate`` docstring), one output sample reading sample 0.

Logits terms (``attention.terms``, ``attention.shaw``, ``attention.xl``) enter
``dot_product_attention`` as ``scale * term`` in its ``bias``; the value term is added to its output
as ``weights @ value_term``, with the port's weights.

JAX computes in float32 unless ``jax_enable_x64`` is on, and then it *silently* downcasts a
requested float64 to float32. So the adapter's dtype follows the flag: ``ADAPTER`` is float64
when x64 is on and float32 when it is off; ``at_dtype("float64")`` refuses when x64 is off, and
every run checks the dtype of what JAX returned, so the adapter never claims float64 for
float32 values. float16 and bfloat16 inputs are held in that dtype, computed in float32 and
rounded once at the end, except for the library attention below.

``attention``: the output is ``jax.nn.dot_product_attention(implementation="xla")`` on q, k, v
held in the adapter's dtype (B, T, N, H layout, GQA from the shapes, the bias and the additive
mask as ``bias``, causal/window/padding/boolean masks resolved into ``mask``; ``attention.*`` hand
it q and k after RoPE, ``attention.pipeline`` the projected heads, rounded to that dtype as a
half-precision layer holds them); its fully masked rows hold the mean of V (a finite fill), so
``fully_masked="zeros"``/``"nan"`` are applied to them afterwards, as a caller does. It computes
its softmax in float32 whatever the input dtype (``jax/_src/nn/functions.py``,
``_dot_product_attention_core``: ``padded_logits.astype(np.float32)``), so the float64 adapter uses
the port's own softmax for the output instead of claiming float64. The weights come from the port.

``t5.bucket`` / ``deberta.*``: the float log ladders as transformers writes them (T5 truncates,
DeBERTa ceils), in the compute dtype; the scalar logs are Python float64 as in transformers.
``rope.inv_freq``: scalar bookkeeping (scaled bases, YaRN ramp ends and factors) in Python float64,
the per-pair arrays in the compute dtype, as transformers does. Bad input is refused by the
wrapper checks in :mod:`posenc_adapter_checks`.

``learned.lookup``: JAX indexing never raises; an index past the end reads the last row (the
``out_of_range="clamp"`` policy, ``jnp.take(..., mode="clip")``). The ``"error"`` policy is the
wrapper's check before the lookup (:mod:`posenc_adapter_shared`).

Run::

    JAX_ENABLE_X64=1 posenc-ref conformance conformance/adapters/jax_adapter.py:ADAPTER \
        --expectations conformance/adapters/jax_float64.toml                               # float64
    posenc-ref conformance conformance/adapters/jax_adapter.py:ADAPTER                        # float32
    posenc-ref conformance conformance/adapters/jax_adapter.py:ADAPTER --dtype bfloat16    # or float16

No expectations file at float32, float16 or bfloat16: every case passes (the narrow-dtype
policies include the rounding of inputs held in that dtype; docs/tolerance.md).

Needs ``pip install 'posenc-ref[jax]'``.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

if str(Path(__file__).resolve().parent) not in sys.path:  # the shared helpers live next to this file
    sys.path.insert(0, str(Path(__file__).resolve().parent))
import posenc_adapter_checks as checks  # noqa: E402
from posenc_adapter_shared import (  # noqa: E402
    Adapter,
    require,
    validate_fairseq,
    validate_grid,
    validate_lookup,
    validate_table,
)

jax = require("jax", "jax")
jnp = jax.numpy

Pair = tuple[np.ndarray, np.ndarray]  # (output, weights) of the attention ops
DTYPES = {"float64": jnp.float64, "float32": jnp.float32, "float16": jnp.float16, "bfloat16": jnp.bfloat16}


def x64_enabled() -> bool:
    return bool(jax.config.jax_enable_x64)


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
    """fairseq rows (B, T) and embedding (B, T, dim)."""
    ids, pad, past = jnp.asarray(tokens), int(params["padding_idx"]), int(params["past_length"])
    if past:
        rows = jnp.full(ids.shape, pad + past + 1)
    else:
        real = (ids != pad).astype(ids.dtype)
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
        low, high = c["ramp"]
        ramp = jnp.clip((i - low) / (high - low), 0, 1)
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


def rotate(x: Any, pos: np.ndarray, space: int, rd: int, params: Mapping[str, Any], layout: str,
           compute: Any) -> Any:
    """RoPE of x (B, H, T, D) or (B, T, H, D) at positions (B|1, T)."""
    angle = jnp.asarray(pos).astype(compute)[..., None] * rotary_freq(space, rd, params["base"], compute)
    angle = angle[:, None] if params["x_layout"] == "BHTD" else angle[:, :, None]
    factor = jnp.asarray(params["attention_factor"], dtype=compute)
    cos, sin = factor * jnp.cos(angle), factor * jnp.sin(angle)
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


def scores(q: Any, k: Any, qp: np.ndarray, kp: np.ndarray, space: int, rd: int, params: Mapping[str, Any],
           compute: Any) -> Any:
    """``<R(m) q_m, R(n) k_n>`` (B, H, Tq, Tk), with the xPos pair weights when asked."""
    qr = rotate(q, qp, space, rd, params, params["layout"], compute)
    kr = rotate(k, kp, space, rd, params, params["layout"], compute)
    if params["x_layout"] == "BTHD":
        qr, kr = qr.transpose(0, 2, 1, 3), kr.transpose(0, 2, 1, 3)
    if params["xpos_scale_base"] is None:
        return jnp.einsum("bhqd,bhkd->bhqk", qr, kr)
    n = space // 2
    zeta = (2 * jnp.arange(n, dtype=compute) + 0.4 * space) / (1.4 * space)
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
    zeta = (2 * jnp.arange(width // 2, dtype=compute) + 0.4 * width) / (1.4 * width)
    power = (jnp.asarray(pos) - centre).astype(compute) / params["scale_base"]  # (B|1, T)
    power = power[:, None, :, None] if params["x_layout"] == "BHTD" else power[:, :, None, None]
    up = zeta**power
    if not bool(jnp.isfinite(up).all() & jnp.isfinite(1 / up).all()):
        raise checks.Rejected("out_of_range", f"zeta ** (+-(p - c) / {params['scale_base']}) overflows {compute}")
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
    ``bias`` and the value term is added to its output as ``weights @ value_term``."""
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
    bias = bias.astype(held)
    shape = (q.shape[0], q.shape[1], q.shape[2], tk)
    qh, kh, vh = (jnp.asarray(a[n], dtype=held) for n in ("q", "k", "v"))  # the library runs at the held dtype
    out = jax.nn.dot_product_attention(  # (B, T, N, H) layout
        qh.transpose(0, 2, 1, 3), kh.transpose(0, 2, 1, 3), vh.transpose(0, 2, 1, 3),
        bias=jnp.broadcast_to(bias, shape), mask=jnp.broadcast_to(keep, shape), scale=float(a["scale"]),
        implementation="xla").transpose(0, 2, 1, 3)
    if a["policy"] == "zeros":  # the library fills a fully masked row with the mean of V (a finite fill)
        out = jnp.where(empty, 0, out)
    elif a["policy"] == "nan":
        out = jnp.where(empty, jnp.nan, out)
    return out + extra, weights


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


def resample_method(kernel: str, antialias: bool, cubic_a: float) -> str | None:
    """The ``jax.image`` method with the case's kernel, or None where jax.image has none: its
    antialiased cubic is Keys a=-0.5 ("cubic"; "cubic-pytorch" falls back to it), its cubic without
    antialias that replicates the edges as PyTorch does is a=-0.75 ("cubic-pytorch"; plain "cubic"
    renormalises the edge weights instead), and "linear" is the triangle either way."""
    if kernel == "bilinear":
        return "linear"
    if antialias:
        return "cubic" if cubic_a == -0.5 else None
    return "cubic-pytorch" if cubic_a == -0.75 else None


def resample_geometry(n: int, m: int, step: float, align_corners: bool) -> tuple[float, float]:
    """``jax.image.scale_and_translate``'s (scale, translation) for ``n -> m`` samples, ``step`` input
    samples per output sample: ``1 / step`` (half-pixel centres; ``m / n``, or the scale factor);
    align corners as its docstring says, ``(m-1)/(n-1)`` and ``0.5 (1 - scale)`` (one output sample
    reads sample 0; one input sample is read everywhere)."""
    if not align_corners:
        return 1 / step, 0.0
    if m == 1:
        return 1.0, 0.0
    if n == 1:
        return float(m), 0.0
    scale = (m - 1) / (n - 1)
    return scale, 0.5 * (1 - scale)


def resample(x: Any, axes: tuple[int, ...], sizes: tuple[int, ...], geometry: tuple[tuple[float, float], ...],
             method: str, antialias: bool, compute: Any) -> Any:
    """``jax.image.scale_and_translate`` of x along ``axes`` to ``sizes`` (scale, translation per axis)."""
    shape = list(x.shape)
    for axis, size in zip(axes, sizes):
        shape[axis] = size
    scale = jnp.asarray([g[0] for g in geometry], dtype=compute)
    translation = jnp.asarray([g[1] for g in geometry], dtype=compute)
    return jax.image.scale_and_translate(x.astype(compute), tuple(shape), axes, scale, translation, method,
                                         antialias=antialias)


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


def resample_supports(op: str, params: Mapping[str, Any]) -> bool | str:
    """True, or why jax.image has no resampling with these parameters (not_applicable). Invalid
    combinations run, so the wrapper's refusal is judged."""
    if not op.startswith("resample.") or params.get("kernel") != "bicubic":
        return True
    antialias, a = params.get("antialias"), params.get("cubic_a")
    if antialias == "on" and params.get("coordinates") == "half_pixel" and a != -0.5:
        return ("jax.image's antialiased cubic is Keys a=-0.5 (scale_and_translate 'cubic'; 'cubic-pytorch' "
                f"falls back to it with antialias=True), not a={a}")
    if antialias == "off" and a != -0.75:
        return ("jax.image's cubic without antialias that replicates the edges is PyTorch's a=-0.75 "
                f"('cubic-pytorch'); its a=-0.5 'cubic' renormalises the edge weights instead, so a={a} has none")
    return True


class _SupportsAdapter(Adapter):
    """An :class:`Adapter` whose ``supports`` refuses, with the reason, what jax.image cannot express."""

    def supports(self, op: str, params: Mapping[str, Any]) -> bool | str:
        if op not in self.capabilities:
            return f"{op} not supported"
        if op == "rope.inv_freq" and params.get("rope_type") == "longrope":
            return "LongRoPE takes its factor lists as inputs: the port computes it as rope.longrope_inv_freq"
        return resample_supports(op, params)


def _checked(value: Any, dtype: str) -> np.ndarray:
    """A JAX float array as NumPy, refusing one whose dtype is not the claimed one."""
    if value.dtype != DTYPES[dtype]:
        raise RuntimeError(f"JAX computed in {value.dtype}, the adapter claims {dtype} "
                           "(float64 needs jax_enable_x64)")
    array = np.asarray(value.astype(jnp.float32) if dtype == "bfloat16" else value)
    return array


def jax_port(dtype: str | None = None) -> Adapter:
    """The JAX port at ``dtype`` (default: float64 with x64 on, float32 without).

    Raises
    ------
    ValueError
        ``dtype="float64"`` while ``jax_enable_x64`` is off.
    """
    dtype = dtype or ("float64" if x64_enabled() else "float32")
    if dtype == "float64" and not x64_enabled():
        raise ValueError("jax-port: float64 needs jax_enable_x64 (JAX_ENABLE_X64=1 or "
                         "jax.config.update('jax_enable_x64', True)); without it JAX silently computes in float32")
    out = DTYPES[dtype]
    compute = jnp.float64 if dtype == "float64" else jnp.float32

    def run_table(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        rows, p = validate_table(params, inputs)
        return _checked(table(rows, p, compute).astype(out), dtype)

    def run_fairseq(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        rows, emb = fairseq(validate_fairseq(params, inputs), params, compute)
        return np.asarray(rows), _checked(emb.astype(out), dtype)

    def run_grid(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        ys, xs = validate_grid(params, inputs)
        return _checked(grid(ys, xs, params, compute).astype(out), dtype)

    def run_lookup(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        weights, rows = validate_lookup(params, inputs)
        return _checked(jnp.take(jnp.asarray(weights, dtype=out), jnp.asarray(rows), axis=0, mode="clip"), dtype)

    def floats(value: Any) -> np.ndarray:
        return _checked(value.astype(out), dtype)

    def run_inv_freq(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> tuple[np.ndarray, ...]:
        c = checks.inv_freq(params)
        return (floats(inv_freq(c, compute)), floats(jnp.asarray([c["a"]], dtype=compute)),
                floats(jnp.asarray([c["softmax"]], dtype=compute)))

    def run_cos_sin(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        pos, inv_freq = checks.cos_sin(params, inputs)
        cos, sin = cos_sin(pos, inv_freq, params, compute)
        return floats(cos), floats(sin)

    def run_apply(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        x, pos, space, rd = checks.rope_apply(params, inputs)
        return floats(rotate(jnp.asarray(x, dtype=out).astype(compute), pos, space, rd, params, params["layout"],
                             compute))

    def run_scores(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        q, k, qp, kp, space = checks.rope_scores(params, inputs)
        rd = space if params["rotary_dim"] is None else int(params["rotary_dim"])  # < S: proportional
        qx, kx = (jnp.asarray(a, dtype=out).astype(compute) for a in (q, k))
        return floats(scores(qx, kx, qp, kp, space, rd, params, compute))

    def run_xpos(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        q, k, pos = checks.xpos(params, inputs)
        qx, kx = (jnp.asarray(a, dtype=out).astype(compute) for a in (q, k))
        q_rot, k_rot = xpos(qx, kx, pos, params, compute)
        return floats(q_rot), floats(k_rot)

    def run_mrope(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        cos, sin = mrope(*checks.mrope(params, inputs), params, compute)
        return floats(cos), floats(sin)

    def run_slopes(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        heads, rule, bias_max = checks.alibi(params)
        return floats(jnp.exp2(-jnp.asarray(checks.alibi_exponents(heads, rule, bias_max), dtype=compute)))

    def run_alibi(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        form = checks.choice("form", params["form"], ("relative_causal", "key_only", "symmetric", "bottom_right"))
        heads, rule, bias_max = checks.alibi(params)
        q, k = checks.query_key(inputs)
        slopes = jnp.exp2(-jnp.asarray(checks.alibi_exponents(heads, rule, bias_max), dtype=compute))
        return floats(alibi_bias(q, k, slopes, form, compute))

    def run_mask_positions(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        mask = jnp.asarray(checks.attention_mask(inputs))
        return np.asarray((jnp.cumsum(mask, axis=-1) - 1) * mask)

    def run_t5_bucket(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        _, limit, side, direction = checks.t5(params)
        rel = checks.relative("relative_positions", inputs["relative_positions"])
        return np.asarray(t5_buckets(rel, limit, side, direction, compute))

    def run_t5_bias(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        buckets, limit, side, direction = checks.t5(params)
        table = checks.t5_table(params, inputs, buckets)
        q, k = checks.query_key(inputs)
        rel = k[..., None, :] - q[..., :, None]
        index = t5_buckets(rel, limit, side, direction, compute)  # (..., Tq, Tk)
        values = jnp.take(jnp.asarray(table, dtype=out), index, axis=0)  # (..., Tq, Tk, H)
        return floats(jnp.moveaxis(values, -1, -3))

    def run_deberta_bucket(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        buckets, limit, clamp = checks.deberta(params)
        delta = checks.relative("relative_positions", inputs["relative_positions"])
        return np.asarray(deberta_buckets(delta, buckets, limit, clamp, compute))

    def run_deberta_index(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        buckets, limit, clamp = checks.deberta(params)
        q, k = checks.query_key(inputs)
        delta = q[..., :, None] - k[..., None, :]
        return np.asarray(jnp.clip(deberta_buckets(delta, buckets, limit, clamp, compute) + buckets, 0,
                                   2 * buckets - 1))

    def run_deberta_scores(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        return floats(deberta_scores(checks.deberta_scores(params, inputs), compute, out))

    def run_shaw_index(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        return np.asarray(jnp.asarray(checks.shaw(params, inputs, "shaw.index")["index"]))

    def run_shaw_logits(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        a = checks.shaw(params, inputs, "shaw.logits")
        q, k, table = (jnp.asarray(a[n], dtype=out).astype(compute) for n in ("q", "k", "table"))
        per_distance = q @ table.T  # (Tq, 2K+1)
        return floats(q @ k.T + jnp.take_along_axis(per_distance, jnp.asarray(a["index"]), axis=1))

    def run_shaw_output(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        a = checks.shaw(params, inputs, "shaw.output")
        alpha, v, table = (jnp.asarray(a[n], dtype=out).astype(compute) for n in ("weights", "v", "table"))
        onehot = jax.nn.one_hot(jnp.asarray(a["index"]), a["rows"], dtype=compute)  # (Tq, Tk, 2K+1)
        per_distance = jnp.einsum("qk,qkr->qr", alpha, onehot)  # weight of each clipped distance
        return floats(alpha @ v + per_distance @ table)

    def run_attention(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        # jax.nn.dot_product_attention computes its softmax in float32 whatever the input dtype
        # (jax/_src/nn/functions.py, _dot_product_attention_core: padded_logits.astype(np.float32)),
        # so the float64 adapter computes the output with its own port instead of claiming float64.
        output, weights = attention(checks.attention(params, inputs), compute, use_library=dtype != "float64",
                                    held=out)
        return floats(output), floats(weights)

    def held(a: Any) -> Any:
        """An input held in the adapter's dtype, computed in ``compute``."""
        return jnp.asarray(a, dtype=out).astype(compute)

    def run_longrope(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        c = checks.longrope(params, inputs)
        return (floats(longrope_inv_freq(c["factors"], c["dim"], c["base"], compute)),
                floats(jnp.asarray([c["a"]], dtype=compute)))

    def run_xl_score(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        c = checks.xl_score(params, inputs)
        q, k, u, v, w_r = (held(c[n]) for n in ("q", "k", "u", "v", "w_r"))
        return floats(xl_score(q, k, u, v, w_r, jnp.asarray(c["distance"]), c["base"], compute))

    def run_rel_shift(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        c = checks.rel_shift(params, inputs)
        shifted, valid = rel_shift(jnp.asarray(c["x"], dtype=out), c["variant"], c["k_len"])
        return _checked(shifted, dtype), np.asarray(valid)

    def resampled(x: Any, axes: tuple[int, ...], specs: tuple[dict[str, Any], ...]) -> Any:
        first = specs[0]
        method = resample_method(first["kernel"], first["antialias"], first["a"])
        if method is None:  # supports() keeps these cases away
            raise RuntimeError(f"jax.image has no {first['kernel']} a={first['a']} with antialias={first['antialias']}")
        geometry = tuple(resample_geometry(c["n"], c["m"], c["scale"], c["align_corners"]) for c in specs)
        return resample(x, axes, tuple(c["m"] for c in specs), geometry, method, first["antialias"], compute)

    def run_resample_weights(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        c = checks.resample_weights(params, inputs)
        return floats(resampled(jnp.eye(c["n"], dtype=compute), (0,), (c,)))  # W @ I = W

    def run_resample_1d(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        c = checks.resample_table_1d(params, inputs)
        body = resampled(held(c["rows"]), (0,), (c["axis"],))
        return floats(jnp.concatenate([held(c["prefix"]), body], axis=0))

    def run_resample_2d(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        c = checks.resample_grid_2d(params, inputs)
        body = resampled(held(c["grid"]), (0, 1), (c["height"], c["width"]))  # (m_H, m_W, D)
        return floats(jnp.concatenate([held(c["prefix"]), body.reshape(-1, body.shape[-1])], axis=0))

    def attend(a: Mapping[str, Any]) -> tuple[np.ndarray, np.ndarray]:
        output, weights = attention(a, compute, use_library=dtype != "float64", held=out)
        return floats(output), floats(weights)

    def run_terms(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> Pair:
        a = checks.attention_terms(params, inputs)
        return attend({**a, "term": held(a["term"]), "value_term": held(a["value_term"])})

    def run_pipeline(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        c = checks.attention_pipeline(params, inputs)
        pe, w_q, w_k, w_v, w_o = (held(c[n]) for n in ("pe", "w_q", "w_k", "w_v", "w_o"))
        x = jnp.take(held(c["embedding"]), jnp.asarray(c["tokens"]), axis=0)  # (B, T, d)
        if c["placement"] == "input":
            x = x + pe
        q = split_heads(x @ w_q, c["heads"])
        k, v = split_heads(x @ w_k, c["kv_heads"]), split_heads(x @ w_v, c["kv_heads"])
        b, t = c["tokens"].shape
        zero = np.zeros((1, 1, 1, 1))
        heads_out, _ = attention({"q": q, "k": k, "v": v, "groups": c["groups"], "keep": c["keep"][None, None],
                                  "scale": c["scale"], "bias": zero, "additive": zero, "policy": "zeros",
                                  "empty": np.zeros((b, c["heads"], t), dtype=bool)},
                                 compute, use_library=dtype != "float64", held=out)  # (B, H, T, D)
        y = heads_out.astype(compute).transpose(0, 2, 1, 3).reshape(b, t, -1) @ w_o
        return floats(y + pe if c["placement"] == "after_block" else y)

    def run_attention_rope(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> Pair:
        a = checks.attention_rope(params, inputs)
        q, k = rope_qk(held(a["q"]), held(a["k"]), a["q_positions"], a["k_positions"], a["base"], a["layout"], compute)
        return attend({**a, "q": q, "k": k})

    def run_attention_alibi(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> Pair:
        a = checks.attention_alibi(params, inputs)
        slopes = jnp.exp2(-jnp.asarray(a["exponents"], dtype=compute))
        return attend({**a, "bias": alibi_bias(a["q_positions"], a["k_positions"], slopes, a["form"], compute)})

    def run_attention_t5(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> Pair:
        a = checks.attention_t5(params, inputs)
        rel = a["k_positions"][..., None, :] - a["q_positions"][..., :, None]
        index = t5_buckets(rel, a["limit"], a["side"], a["direction"], compute)  # (..., Tq, Tk)
        bias = jnp.moveaxis(jnp.take(jnp.asarray(a["table"], dtype=out), index, axis=0), -1, -3)  # (..., H, Tq, Tk)
        return attend({**a, "bias": bias.astype(compute)})

    def run_attention_shaw(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> Pair:
        a = checks.attention_shaw(params, inputs)
        term, value_term = shaw_terms(held(a["q"]), a["index"], held(a["rel_keys"]), held(a["rel_values"]))
        return attend({**a, "term": term, "value_term": value_term})

    def run_attention_xl(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> Pair:
        a = checks.attention_xl(params, inputs)
        k_heads = jnp.repeat(held(a["k"]), a["groups"], axis=1)  # (B, H, Tk, D)
        term = xl_terms(held(a["q"]), k_heads, held(a["u_bias"]), held(a["v_bias"]), held(a["w_r"]),
                        jnp.asarray(a["distance"]), a["base"], compute)
        return attend({**a, "term": term})

    ops = {"sinusoidal.table": run_table, "sinusoidal.fairseq": run_fairseq, "grid2d.sincos": run_grid,
           "learned.lookup": run_lookup, "rope.inv_freq": run_inv_freq, "rope.cos_sin": run_cos_sin,
           "rope.apply": run_apply, "rope.scores": run_scores, "rope.xpos": run_xpos,
           "rope.mrope_cos_sin": run_mrope, "alibi.slopes": run_slopes, "alibi.bias": run_alibi,
           "alibi.mask_positions": run_mask_positions, "t5.bucket": run_t5_bucket, "t5.bias": run_t5_bias,
           "deberta.bucket": run_deberta_bucket,
           "deberta.index": run_deberta_index, "deberta.scores": run_deberta_scores, "shaw.index": run_shaw_index,
           "shaw.logits": run_shaw_logits, "shaw.output": run_shaw_output, "attention": run_attention,
           "rope.longrope_inv_freq": run_longrope, "transformer_xl.score": run_xl_score,
           "transformer_xl.rel_shift": run_rel_shift, "resample.weights": run_resample_weights,
           "resample.table_1d": run_resample_1d, "resample.grid_2d": run_resample_2d, "attention.terms": run_terms,
           "attention.pipeline": run_pipeline, "attention.rope": run_attention_rope,
           "attention.alibi": run_attention_alibi, "attention.t5": run_attention_t5,
           "attention.shaw": run_attention_shaw, "attention.xl": run_attention_xl}
    calls = {op: "jax.numpy port (conformance/adapters/jax_adapter.py)" for op in ops}
    calls["attention"] = ("jax.nn.dot_product_attention (implementation='xla') for the output "
                          "(float32/float16/bfloat16; its softmax is float32, so float64 uses the port), "
                          "a jax.numpy softmax port for the weights")
    for op in ("attention.terms", "attention.pipeline", "attention.rope", "attention.alibi", "attention.t5",
               "attention.shaw", "attention.xl"):
        calls[op] = calls["attention"] + ", around the scheme's jax.numpy port"
    for op in ("resample.weights", "resample.table_1d", "resample.grid_2d"):
        calls[op] = ("jax.image.scale_and_translate ('cubic-pytorch' without antialias, 'cubic' with it, 'linear'; "
                     "align corners through scale and translation)")
    capabilities: dict[str, dict[str, tuple[Any, ...]]] = {op: {} for op in ops}
    capabilities["rope.inv_freq"] = {"rope_type": checks.INV_FREQ_TYPES}  # longrope: rope.longrope_inv_freq
    return _SupportsAdapter("jax-port", f"jax {jax.__version__}", dtype, ops, capabilities, calls, jax_port,
                            tuple(DTYPES))


ADAPTER = jax_port
JAX = jax_port
