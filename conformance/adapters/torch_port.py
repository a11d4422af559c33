"""Adapter ``TORCH``: a torch port of every op but the MRoPE and resampling ops (those run
transformers' and torch's own functions, in the sibling modules).

The absolute ops (``sinusoidal.fairseq`` under both cache rules), ``rope.inv_freq`` (every
rope_type but longrope, ggml's ``ext_factor`` included) and ``rope.longrope_inv_freq`` (as
transformers' init functions build them), ``rope.apply`` and ``rope.scores`` under every RoPE
scaling (the variant's frequencies over the rotary space, its attention factor times the op's;
xPos weighting included), ``rope.rotate`` (cached cos/sin rows), ``rope.rotate_freq`` (the caller's
inverse frequencies), ``rope.cos_sin``,
``rope.xpos``, the ALiBi, T5 and DeBERTa ops, ``shaw.*``, ``transformer_xl.*``, ``attention``,
``attention.terms``, ``attention.pipeline`` and ``attention`` with RoPE, ALiBi, T5, Shaw and
Transformer-XL plugged in (``attention.rope`` ... ``attention.xl``: the scheme's torch port feeding
the one :func:`port_attention`), every convention of each. float64 and float32; float16 and
bfloat16 computed in float32 and rounded once at the end, as frameworks do. Inputs are checked
by :mod:`posenc_adapter_shared`, :mod:`posenc_adapter_checks` and :mod:`torch_common` first.

Run::

    posenc-ref conformance conformance/adapters/torch_port.py:TORCH --dtype bfloat16

(it passes every case of the ops it declares and takes no expectations file).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Mapping
from functools import partial
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

if str(Path(__file__).resolve().parent) not in sys.path:  # the shared helpers live next to this file
    sys.path.insert(0, str(Path(__file__).resolve().parent))
import posenc_adapter_attention_checks as attention_checks  # noqa: E402
import posenc_adapter_checks as checks  # noqa: E402
from posenc_adapter_shared import (
    Adapter,
    Rejected,
    choice,
    invalid_shape,
    positions,
    require,
    validate_fairseq,
    validate_grid,
    validate_lookup,
    validate_table,
)
from torch_common import (
    TORCH_DTYPES,
    _alibi_slopes_check,
    _back,
    _deberta_params,
    _finite_float,
    _numpy,
    _rope_scaling,
    _rope_x,
    _t5_bias_inputs,
    _t5_params,
)

torch = require("torch", "torch")


def _frequencies(width: int, base: float, ladder: str, compute: Any) -> Any:
    """``base ** -e``: e = 2k/width (paper) or k/max(n-1, 1) (t2t), n = ceil(width/2) (n,)."""
    n = (width + 1) // 2
    k = torch.arange(n, dtype=compute)
    exponent = 2 * k / width if ladder == "paper" else k / max(n - 1, 1)
    return torch.pow(torch.tensor(base, dtype=compute), -exponent)


def port_table(rows: np.ndarray, p: Mapping[str, Any], compute: Any) -> Any:
    """The sinusoidal table in torch, (*rows.shape, dim)."""
    dim, odd = int(p["dim"]), int(p["dim"]) % 2 == 1
    width = dim - 1 if odd and p["odd_width"] == "zero_pad_last" else dim
    angles = torch.from_numpy(rows).to(compute)[..., None] * _frequencies(width, p["base"], p["ladder"], compute)
    n = angles.shape[-1]
    n_cos = n - 1 if odd and p["odd_width"] == "sin_gets_extra" else n
    sin, cos = torch.sin(angles), torch.cos(angles[..., :n_cos])
    pad = torch.zeros(angles.shape[:-1] + (dim - n - n_cos,), dtype=compute)
    if p["layout"] == "interleaved":
        pairs = torch.stack([sin[..., :n_cos], cos], dim=-1).flatten(-2)
        table = torch.cat([pairs, sin[..., n_cos:], pad], dim=-1)
    elif p["layout"] == "concat_sin_cos":
        table = torch.cat([sin, cos, pad], dim=-1)
    else:
        table = torch.cat([cos, sin, pad], dim=-1)
    return table * float(p["scale"])


def port_fairseq(tokens: np.ndarray, params: Mapping[str, Any], compute: Any) -> tuple[Any, Any]:
    """fairseq rows (B, T) and embedding (B, T, dim); ``cache_rule="m2m100"`` numbers a cached chunk's real
    tokens ``(cumsum + past) * real + pad`` (transformers' create_position_ids_from_input_ids)."""
    ids, pad = torch.from_numpy(tokens), int(params["padding_idx"])
    past = int(params["past_length"])
    real = (ids != pad).to(torch.int64)
    if params.get("cache_rule", "fairseq") == "m2m100":  # every real token numbered on from the cache
        rows = (torch.cumsum(real, dim=1) + past) * real + pad
    elif past:
        rows = torch.full_like(ids, pad + past + 1)
    else:
        rows = torch.cumsum(real, dim=1) * real + pad
    p = {"dim": params["dim"], "base": params["base"], "ladder": "t2t", "layout": "concat_sin_cos",
         "odd_width": "zero_pad_last", "scale": 1.0}
    table = port_table(rows.numpy(), p, compute)
    return rows, table * (rows != pad).to(compute)[..., None]


def port_grid(ys: np.ndarray, xs: np.ndarray, params: Mapping[str, Any], compute: Any) -> Any:
    """2-D sin-cos encodings (*ys.shape, dim)."""
    w = _frequencies(int(params["dim"]) // 2, params["base"], params["ladder"], compute)  # (D/4,)
    y = torch.from_numpy(ys).to(compute)[..., None] * w
    x = torch.from_numpy(xs).to(compute)[..., None] * w
    a, b = (x, y) if params["axis_order"] == "x_first" else (y, x)
    if params["block_layout"] == "sin_cos":
        return torch.cat([a.sin(), a.cos(), b.sin(), b.cos()], dim=-1)
    if params["block_layout"] == "sin_sin_cos_cos":
        return torch.cat([a.sin(), b.sin(), a.cos(), b.cos()], dim=-1)
    return torch.cat([torch.stack([a.sin(), a.cos()], -1).flatten(-2),
                      torch.stack([b.sin(), b.cos()], -1).flatten(-2)], dim=-1)


def port_t5_bucket(rel: Any, direction: str, buckets: int, distance: int, exact: int) -> Any:
    """T5 buckets of ``r = j - i`` in torch: the log region floors in float64, capped at the last bucket."""
    side = buckets // 2 if direction == "bidirectional" else buckets
    offset = (rel > 0).to(torch.int64) * side if direction == "bidirectional" else torch.zeros_like(rel)
    n = rel.abs() if direction == "bidirectional" else torch.clamp(-rel, min=0)
    large = exact + torch.floor(torch.log(n.clamp(min=1).to(torch.float64) / exact) / math.log(distance / exact)
                                * (side - exact)).to(torch.int64)
    return offset + torch.where(n < exact, n, torch.clamp(large, max=side - 1))


def port_deberta_bucket(delta: Any, buckets: int, max_position: int, clamp: str) -> Any:
    """Signed log buckets of ``delta = i - j`` in float64 torch (ceil), optionally clamped first."""
    if clamp == "max_relative_positions":
        delta = delta.clamp(-(max_position - 1), max_position - 1)
    mid = buckets // 2
    size = delta.abs()
    scaled = torch.ceil(torch.log(size.clamp(min=1).to(torch.float64) / mid) / math.log((max_position - 1) / mid)
                        * (mid - 1))
    log_bucket = (scaled.to(torch.int64) + mid) * torch.sign(delta)
    return torch.where(size <= mid, delta, log_bucket)


def port_alibi_slopes(heads: int, rule: str, bias_max: float, compute: Any) -> Any:
    """``2 ** -x_h`` with the press or geometric exponents (exact dyadic exponents built in float64)."""
    power = 2 ** int(math.floor(math.log2(heads)))
    if rule == "geometric" or power == heads:
        exponents = bias_max * torch.arange(1, heads + 1, dtype=torch.float64) / heads
    else:
        exponents = torch.cat([bias_max * torch.arange(1, power + 1, dtype=torch.float64) / power,
                               bias_max * torch.arange(1, 2 * (heads - power), 2, dtype=torch.float64) / (2 * power)])
    return torch.exp2(-exponents).to(compute)


def port_yarn_ramp(i: Any, low: float, high: float, ext: float = 1.0) -> Any:
    """YaRN's blend weight over the pair indices ``i``: the ramp ``gamma`` (0 up to ``low``, 1 from
    ``high``, linear between), with ggml's ``ext_factor`` e: ``gamma + (1 - gamma) (1 - e)``."""
    ramp = torch.clamp((i - low) / (high - low), 0, 1)
    return ramp if ext == 1.0 else ramp + (1 - ramp) * (1 - ext)


def port_inv_freq(c: Mapping[str, Any], compute: Any) -> Any:
    """The (P,) inverse frequencies of one RoPE variant (every type but longrope), as transformers'
    init functions build them: ``1 / base ** (2i/d)`` and the per-pair blends in ``compute``; ``c``
    holds the scalars (:func:`posenc_adapter_checks.inv_freq`)."""
    dim, s = c["dim"], c["s"]
    i = torch.arange(dim // 2, dtype=compute)
    w = 1 / torch.pow(torch.tensor(c["base"], dtype=compute), 2 * i / dim)
    if c["type"] == "proportional":
        return torch.where(i < c["turning"], w, torch.zeros((), dtype=compute)) / s
    if c["type"] == "linear":
        return w / s
    if c["type"] == "llama3":
        wavelength = 2 * math.pi / w
        smooth = (c["original"] / wavelength - c["low"]) / (c["high"] - c["low"])
        blended = (1 - smooth) * w / s + smooth * w
        return torch.where(wavelength < c["original"] / c["high"], w,
                           torch.where(wavelength > c["original"] / c["low"], w / s, blended))
    if c["type"] == "yarn":
        weight = port_yarn_ramp(i, *c["ramp"], c.get("ext", 1.0))
        return w * (1 - weight) + (w / s) * weight
    return w  # default, and ntk_aware / dynamic with their scaled base


def port_longrope_inv_freq(factors: np.ndarray, dim: int, base: float, compute: Any) -> Any:
    """LongRoPE ``1 / (e_i * base ** (2i/d))`` (P,) for the factor list ``e`` in use, as transformers
    ``_compute_longrope_parameters`` writes it."""
    exponent = torch.arange(0, dim, 2, dtype=compute) / dim
    return 1 / (torch.from_numpy(np.asarray(factors, dtype=np.float64)).to(compute)
                * torch.pow(torch.tensor(base, dtype=compute), exponent))


def port_scaled_frequencies(scaled: Mapping[str, Any], space: int, rotary: int, compute: Any) -> Any:
    """The (S/2,) frequencies of a scaled ``rope.apply``/``rope.scores`` (:func:`posenc_adapter_checks.scaling`):
    the variant's ``rope.inv_freq`` at ``dim = S``, pairs from ``rotary/2`` on at frequency 0."""
    freq = scaled["freq"]
    if scaled["type"] == "longrope":
        w = port_longrope_inv_freq(freq["factors"], freq["dim"], freq["base"], compute)
    else:
        w = port_inv_freq(freq, compute)
    if rotary < space:  # proportional rotation: the pairs past rotary_dim / 2 never turn
        w = torch.where(torch.arange(space // 2) < rotary // 2, w, torch.zeros((), dtype=compute))
    return w


def port_rope_apply(x: np.ndarray, pos: np.ndarray, rotary: int, params: Mapping[str, Any], compute: Any,
                    scaled: Mapping[str, Any] | None = None) -> Any:
    """Rotate x (B, H, T, D) at positions (B, T) in torch; (B, H, T, D). ``scaled`` is the case's
    scaling (:func:`posenc_adapter_checks.scaling`): its frequencies and whole attention factor; None
    or type "default" rotate at ``base ** (-2i/S)`` times the op's ``attention_factor``."""
    d = x.shape[-1]
    space = rotary if params["partial"] == "prefix" else d
    if scaled is None or scaled["type"] == "default":
        i = torch.arange(space // 2, dtype=compute)
        w = torch.where(i < rotary // 2, torch.tensor(float(params["base"]), dtype=compute) ** (-(2 * i) / space),
                        torch.zeros((), dtype=compute))
    else:
        w = port_scaled_frequencies(scaled, space, rotary, compute)
    angle = torch.from_numpy(np.array(pos)).to(compute)[:, None, :, None] * w  # (B, 1, T, S/2)
    factor = float(params["attention_factor"]) if scaled is None else float(scaled["a"])
    cos, sin = torch.cos(angle) * factor, torch.sin(angle) * factor
    return port_rotate(torch.from_numpy(x).to(compute), cos, sin, space, params["layout"])


def port_rotate(xt: Any, cos: Any, sin: Any, space: int, layout: str) -> Any:
    """Rotate the first ``space`` channels of xt (B, H, T, D) by cos/sin (broadcasting to (B, H, T, space/2)):
    pairs (i, i + space/2) for "half", (2i, 2i + 1) read for "interleaved"/"interleaved_to_half", written
    interleaved or in half order; the rest pass through."""
    n = space // 2
    if layout == "half":
        u, v = xt[..., :n], xt[..., n:space]
    else:
        u, v = xt[..., 0:space:2], xt[..., 1:space:2]
    ru, rv = u * cos - v * sin, u * sin + v * cos
    interleaved = layout == "interleaved"
    rotated = torch.stack([ru, rv], dim=-1).flatten(-2) if interleaved else torch.cat([ru, rv], dim=-1)
    return torch.cat([rotated, xt[..., space:]], dim=-1)


def port_softmax_attention(q: Any, k: Any, v: Any, keep: Any, scale: float, *, groups: int = 1,
                           biases: tuple[Any, ...] = (), term: Any = None, value: Any = None,
                           policy: str = "zeros") -> tuple[Any, Any]:
    """Attention in torch: ``(q . k + term) * scale + biases``, softmax over the kept keys, then
    ``weights @ v`` plus ``value(weights)`` (the value term); (output, weights).

    q (B, H, Tq, D); k, v (B, Hkv, Tk, D) with query head h reading kv head h // groups; keep
    (boolean) and the biases broadcast to (B, H, Tq, Tk). A row with every key masked gets
    zeros, NaN or uniform weights (``policy``)."""
    kt, vt = k.repeat_interleave(groups, dim=1), v.repeat_interleave(groups, dim=1)
    dot = q @ kt.transpose(-1, -2)
    if term is not None:
        dot = dot + term
    logits = dot * scale
    for bias in biases:
        logits = logits + bias
    keep = keep.expand(logits.shape)
    empty = ~keep.any(dim=-1, keepdim=True)
    masked = logits.masked_fill(~keep, -math.inf)
    top = masked.amax(dim=-1, keepdim=True).masked_fill(empty, 0.0)
    e = torch.exp(masked - top)
    weights = e / e.sum(dim=-1, keepdim=True).masked_fill(empty, 1.0)
    if policy == "nan":
        weights = weights.masked_fill(empty, math.nan)
    elif policy == "uniform":
        weights = torch.where(empty, torch.full_like(weights, 1.0 / kt.shape[2]), weights)
    output = weights @ vt
    return (output if value is None else output + value(weights)), weights


def port_attention(a: Mapping[str, Any], compute: Any, *, q: Any = None, k: Any = None, bias: Any = None,
                   term: Any = None, value: Any = None) -> tuple[Any, Any]:
    """:func:`port_softmax_attention` of a checked ``attention`` case (:func:`posenc_adapter_checks.attention`:
    masks, padding, window and causal folded into ``keep``, the bias and the additive mask added
    after the scale); a scheme passes its rotated ``q``/``k``, its ``bias``, or its ``term`` and
    ``value`` (Shaw, Transformer-XL)."""
    def tensor(name: str) -> Any:
        return torch.from_numpy(np.ascontiguousarray(a[name])).to(compute)

    biases = (tensor("bias"), tensor("additive")) + (() if bias is None else (bias,))
    keep = torch.from_numpy(np.ascontiguousarray(a["keep"]))
    return port_softmax_attention(tensor("q") if q is None else q, tensor("k") if k is None else k, tensor("v"),
                                  keep, float(a["scale"]), groups=a["groups"], biases=biases, term=term, value=value,
                                  policy=a["policy"])


def port_alibi_bias(qp: np.ndarray, kp: np.ndarray, slopes: Any, form: str, compute: Any) -> Any:
    """ALiBi bias ``m_h * signed distance`` (..., H, Tq, Tk) of (..., Tq) and (..., Tk) positions."""
    i, j = torch.from_numpy(qp)[..., :, None], torch.from_numpy(kp)[..., None, :]
    signed = {"relative_causal": j - i, "key_only": j.expand(i.shape[:-1] + j.shape[-1:]),
              "symmetric": -(i - j).abs(), "bottom_right": -(i + kp.shape[-1] - qp.shape[-1] - j).abs()}[form]
    return slopes[:, None, None] * signed[..., None, :, :].to(compute)


def port_t5_bias(qp: np.ndarray, kp: np.ndarray, per_bucket: Any, conventions: tuple[str, int, int, int]) -> Any:
    """T5 bias ``table[bucket(j - i), h]`` (..., H, Tq, Tk) of a (N, H) table."""
    rel = torch.from_numpy(kp)[..., None, :] - torch.from_numpy(qp)[..., :, None]  # (..., Tq, Tk)
    return torch.movedim(per_bucket[port_t5_bucket(rel, *conventions)], -1, -3)


def port_xl_position(q: Any, v_bias: Any, w_r: Any, distance: np.ndarray, base: float, compute: Any) -> Any:
    """Transformer-XL terms (b) + (d), ``(q_i + v_h) . (R_{d_ij} @ W_R[h])`` with ``R_d = [sin(d w) | cos(d w)]``,
    ``w_k = base ** (-2k / D_r)``: q (..., H, Tq, D), v_bias (H, D), w_r (H, D_r, D), distance (Tq, Tk);
    each distinct distance is embedded once. (..., H, Tq, Tk)."""
    distinct, inverse = torch.unique(torch.from_numpy(distance), return_inverse=True)
    width = w_r.shape[-2]
    w = torch.tensor(base, dtype=compute) ** (-(2 * torch.arange(width // 2, dtype=compute)) / width)
    theta = distinct.to(compute)[:, None] * w  # (U, D_r / 2)
    r = torch.einsum("uc,hcd->hud", torch.cat([theta.sin(), theta.cos()], dim=-1), w_r)  # (H, U, D)
    per_distance = (q + v_bias[:, None, :]) @ r.transpose(-1, -2)  # (..., H, Tq, U)
    return torch.take_along_dim(per_distance, inverse.expand(per_distance.shape[:-2] + inverse.shape), dim=-1)


def port_rel_shift(x: Any, variant: str, k_len: int) -> tuple[Any, Any]:
    """The codebases' shifts of BD rows (Tq, R) in torch: Transformer-XL pads a zero column on the
    left and reshapes (R = Tk); XLNet reshapes, drops a row and keeps Tk columns. (shifted, valid)."""
    tq, rows = x.shape
    i, j = torch.arange(tq)[:, None], torch.arange(k_len)[None, :]
    if variant == "transformer_xl":
        padded = torch.nn.functional.pad(x, (1, 0))  # (Tq, Tk + 1)
        return padded.reshape(k_len + 1, tq)[1:].reshape(tq, k_len), (j <= k_len - tq + i).to(torch.int64)
    return x.reshape(rows, tq)[1:].reshape(tq, rows - 1)[:, :k_len], (j + tq - i < rows).to(torch.int64)


def port_xpos_zeta(width: int, compute: Any) -> Any:
    """xPos's per-pair decay ``zeta_i = (2i + 0.4 D) / (1.4 D)`` for the pairs i < D/2 of a width D; (P,)."""
    return (2 * torch.arange(width // 2, dtype=compute) + 0.4 * width) / (1.4 * width)


def port_xpos(q: np.ndarray, k: np.ndarray, pos: np.ndarray, params: Mapping[str, Any],
              compute: Any) -> tuple[Any, Any]:
    """xPos in torch: RoPE over the whole head, then q times and k divided by ``zeta ** ((p - c) / B)``."""
    bthd = params["x_layout"] == "BTHD"
    qx, kx = (x.transpose(0, 2, 1, 3) if bthd else x for x in (q, k))  # (B, H, T, D)
    width, t = qx.shape[-1], pos.shape[-1]
    rope = {"base": params["base"], "partial": "prefix", "layout": params["layout"], "attention_factor": 1.0}
    qr, kr = (port_rope_apply(x, pos, width, rope, compute) for x in (qx, kx))
    centre = t // 2 if params["centring"] == "lucidrains" else -(-t // 2)
    zeta = port_xpos_zeta(width, compute)  # (P,)
    power = (torch.from_numpy(pos) - centre).to(compute)[:, None, :, None] / float(params["scale_base"])
    up = zeta**power  # (B|1, 1, T, P)
    if not bool(torch.isfinite(up).all() & torch.isfinite(1 / up).all()):
        raise Rejected("out_of_range", f"zeta ** (+-(p - c) / {params['scale_base']}) overflows {compute}")
    scale = up.repeat_interleave(2, dim=-1) if params["layout"] == "interleaved" else torch.cat([up, up], dim=-1)
    qs, ks = qr * scale, kr / scale
    return (qs.transpose(1, 2), ks.transpose(1, 2)) if bthd else (qs, ks)


def port_deberta_scores(a: Mapping[str, Any], compute: Any) -> Any:
    """DeBERTa's disentangled logits in torch: c2p gathers ``q Kr^T`` at ``idx(i - j)``, p2c gathers
    ``k Qr^T`` at the same ``idx(i - j)``, all over ``sqrt(d (1 + n))``; (H, Tq, Tk)."""
    q, k, kr, qr = (torch.from_numpy(a[n]).to(compute) for n in ("q", "k", "pos_key", "pos_query"))
    b = a["buckets"]
    delta = torch.from_numpy(a["qp"][:, None] - a["kp"][None, :])
    index = torch.clamp(port_deberta_bucket(delta, b, a["limit"], a["clamp"]) + b, 0, 2 * b - 1)  # (Tq, Tk)
    heads, tk = q.shape[0], k.shape[1]
    scores = q @ k.transpose(-1, -2)
    if "c2p" in a["terms"]:
        scores = scores + torch.take_along_dim(q @ kr.transpose(-1, -2), index.expand(heads, -1, -1), dim=-1)
    if "p2c" in a["terms"]:
        scores = scores + (k @ qr.transpose(-1, -2))[:, torch.arange(tk)[None, :], index]
    return scores / math.sqrt(q.shape[-1] * (1 + len(a["terms"])))


def port_shaw_index(qp: np.ndarray, kp: np.ndarray, k: int, sign: str) -> Any:
    """Shaw's clipped table rows ``clip(d, -K, K) + K`` in torch, d = p_j - p_i or p_i - p_j; (Tq, Tk)."""
    distance = torch.from_numpy(kp)[None, :] - torch.from_numpy(qp)[:, None]
    return torch.clamp(-distance if sign == "query_minus_key" else distance, -k, k) + k


def port_shaw_key_term(q: Any, table: Any, index: Any) -> Any:
    """``q_i . A^K[r_ij]`` (..., Tq, Tk): every query against the 2K + 1 rows, then gathered (no (Tq, Tk, D) gather)."""
    per_row = q @ table.transpose(-1, -2)  # (..., Tq, 2K + 1)
    return torch.take_along_dim(per_row, index.expand(per_row.shape[:-1] + index.shape[-1:]), dim=-1)


def port_shaw_value_term(weights: Any, table: Any, index: Any) -> Any:
    """``sum_j alpha_ij A^V[r_ij]`` (..., Tq, D): the weights summed per table row, times the rows."""
    per_row = torch.zeros(weights.shape[:-1] + (table.shape[0],), dtype=weights.dtype)
    return per_row.scatter_add(-1, index.expand(weights.shape), weights) @ table  # (..., Tq, 2K + 1) @ (2K + 1, D)


def port_shaw_logits(q: Any, k: Any, table: Any, index: Any) -> Any:
    """``q_i . k_j + q_i . A^K[r_ij]`` (..., Tq, Tk)."""
    return q @ k.transpose(-1, -2) + port_shaw_key_term(q, table, index)


def port_shaw_output(weights: Any, v: Any, table: Any, index: Any) -> Any:
    """``sum_j alpha_ij (v_j + A^V[r_ij])`` (..., Tq, D)."""
    return weights @ v + port_shaw_value_term(weights, table, index)


Params = Mapping[str, Any]  # a case's parameters, every default filled in
Inputs = Mapping[str, np.ndarray]  # a case's inputs


class PortDtypes(NamedTuple):
    """What the port computes in (float64, or float32 for every narrower dtype) and what it returns (the adapter's)."""

    compute: Any
    out: Any


def _pair(result: tuple[Any, Any], dt: PortDtypes) -> tuple[np.ndarray, np.ndarray]:
    """Two port results as NumPy in the adapter's dtype."""
    return _numpy(result[0].to(dt.out)), _numpy(result[1].to(dt.out))


def _tensor(array: np.ndarray, dt: PortDtypes) -> Any:
    """A checked NumPy input as a tensor in the compute dtype."""
    return torch.from_numpy(np.ascontiguousarray(array)).to(dt.compute)


def run_table(params: Params, inputs: Inputs, dt: PortDtypes) -> np.ndarray:
    rows, p = validate_table(params, inputs)
    return _numpy(port_table(rows, p, dt.compute).to(dt.out))


def run_fairseq(params: Params, inputs: Inputs, dt: PortDtypes) -> tuple[np.ndarray, np.ndarray]:
    rows, emb = port_fairseq(validate_fairseq(params, inputs), params, dt.compute)
    return _numpy(rows), _numpy(emb.to(dt.out))


def run_grid(params: Params, inputs: Inputs, dt: PortDtypes) -> np.ndarray:
    ys, xs = validate_grid(params, inputs)
    return _numpy(port_grid(ys, xs, params, dt.compute).to(dt.out))


def run_lookup(params: Params, inputs: Inputs, dt: PortDtypes) -> np.ndarray:
    weights, rows = validate_lookup(params, inputs)
    return _numpy(torch.from_numpy(weights).to(dt.out)[torch.from_numpy(rows)])


def run_rope_apply(params: Params, inputs: Inputs, dt: PortDtypes) -> np.ndarray:
    x, pos, rotary = _rope_x(params, inputs, ("half", "interleaved", "interleaved_to_half"))
    scaled = _rope_scaling("rope.apply", params, x, rotary)
    return _back(port_rope_apply(x, pos, rotary, params, dt.compute, scaled).to(dt.out), params["x_layout"])


def run_rope_rotate(params: Params, inputs: Inputs, dt: PortDtypes) -> np.ndarray:
    a = checks.rotate_cached(params, inputs)
    bthd = params["x_layout"] == "BTHD"
    x = _tensor(a["x"], dt)
    x = x.transpose(1, 2) if bthd else x  # (B, H, T, D)
    rows = torch.from_numpy(a["positions"])  # (B|1, T)
    cos, sin = (_tensor(a[n], dt)[rows][:, None] for n in ("cos", "sin"))  # (B|1, 1, T, P)
    y = port_rotate(x, cos, sin, 2 * a["cos"].shape[1], params["layout"])
    return _numpy((y.transpose(1, 2) if bthd else y).to(dt.out))


def run_rope_rotate_freq(params: Params, inputs: Inputs, dt: PortDtypes) -> np.ndarray:
    """The caller's ``inv_freq`` as a buffer in the compute dtype (float32 below float64, as transformers
    keeps it), ``angle = positions * inv_freq``, cos and sin times the attention factor."""
    a = checks.rotate_freq(params, inputs)
    bthd = params["x_layout"] == "BTHD"
    x = _tensor(a["x"], dt)
    x = x.transpose(1, 2) if bthd else x  # (B, H, T, D)
    w = _tensor(a["inv_freq"], dt)
    angle = torch.from_numpy(a["positions"]).to(dt.compute)[:, None, :, None] * w  # (B|1, 1, T, P)
    cos, sin = torch.cos(angle) * a["a"], torch.sin(angle) * a["a"]
    y = port_rotate(x, cos, sin, 2 * a["inv_freq"].size, params["layout"])
    return _numpy((y.transpose(1, 2) if bthd else y).to(dt.out))


def run_inv_freq(params: Params, inputs: Inputs, dt: PortDtypes) -> tuple[np.ndarray, ...]:
    c = checks.inv_freq(params)
    scalars = (torch.tensor([c[n]], dtype=dt.compute).to(dt.out) for n in ("a", "softmax"))
    return (_numpy(port_inv_freq(c, dt.compute).to(dt.out)), *(_numpy(v) for v in scalars))


def run_longrope_inv_freq(params: Params, inputs: Inputs, dt: PortDtypes) -> tuple[np.ndarray, np.ndarray]:
    c = checks.longrope(params, inputs)
    w = port_longrope_inv_freq(c["factors"], c["dim"], c["base"], dt.compute)
    return _numpy(w.to(dt.out)), _numpy(torch.tensor([c["a"]], dtype=dt.compute).to(dt.out))


def run_rope_scores(params: Params, inputs: Inputs, dt: PortDtypes) -> np.ndarray:
    layouts = ("half", "interleaved")
    q, qpos, rotary = _rope_x(params, {"x": inputs["q"], "positions": inputs["q_positions"]}, layouts)
    k, kpos, _ = _rope_x(params, {"x": inputs["k"], "positions": inputs["k_positions"]}, layouts)
    if q.shape[0] != k.shape[0] or q.shape[1] != k.shape[1] or q.shape[-1] != k.shape[-1]:
        raise invalid_shape(f"q and k must agree on B, H and D, got {inputs['q'].shape} and {inputs['k'].shape}")
    scale_base = params["xpos_scale_base"]
    if scale_base is not None:
        scale_base = _finite_float("xpos_scale_base", scale_base, positive=True)
    scaled = _rope_scaling("rope.scores", params, q, rotary)
    qr, kr = (port_rope_apply(x, p, rotary, params, dt.compute, scaled) for x, p in ((q, qpos), (k, kpos)))
    if scale_base is None:
        return _numpy((qr @ kr.transpose(-1, -2)).to(dt.out))
    space = rotary if params["partial"] == "prefix" else q.shape[-1]
    n = space // 2
    u, v = (slice(0, n), slice(n, space)) if params["layout"] == "half" else (slice(0, space, 2),
                                                                              slice(1, space, 2))
    pairs = qr[..., None, u] * kr[..., None, :, u] + qr[..., None, v] * kr[..., None, :, v]  # (B, H, Tq, Tk, P)
    zeta = port_xpos_zeta(space, dt.compute)  # (P,)
    offset = torch.from_numpy(np.array(qpos))[:, :, None] - torch.from_numpy(np.array(kpos))[:, None, :]
    weight = zeta ** (offset.to(dt.compute)[:, None, :, :, None] / scale_base)  # xPos: zeta_i ** ((m - n) / B)
    rest = qr[..., space:] @ kr[..., space:].transpose(-1, -2)
    return _numpy(((pairs * weight).sum(-1) + rest).to(dt.out))


def run_t5_bucket(params: Params, inputs: Inputs, dt: PortDtypes) -> np.ndarray:
    conventions = _t5_params(params)
    rel = positions("relative_positions", inputs["relative_positions"], nonnegative=False)
    return _numpy(port_t5_bucket(torch.from_numpy(rel), *conventions))


def run_t5_bias(params: Params, inputs: Inputs, dt: PortDtypes) -> np.ndarray:
    per_bucket, qp, kp, conventions = _t5_bias_inputs(params, inputs)
    return _numpy(port_t5_bias(qp, kp, torch.from_numpy(per_bucket).to(dt.out), conventions))


def run_alibi_slopes(params: Params, inputs: Inputs, dt: PortDtypes) -> np.ndarray:
    heads = _alibi_slopes_check(params)
    return _numpy(port_alibi_slopes(heads, params["slope_rule"], float(params["bias_max"]), dt.compute).to(dt.out))


def run_alibi_bias(params: Params, inputs: Inputs, dt: PortDtypes) -> np.ndarray:
    heads = _alibi_slopes_check(params)
    form = choice("form", params["form"], ("relative_causal", "key_only", "symmetric", "bottom_right"))
    qp, kp = positions("query_positions", inputs["query_positions"]), positions("key_positions",
                                                                                 inputs["key_positions"])
    if qp.shape[:-1] != kp.shape[:-1]:
        raise invalid_shape(f"query and key positions must share their batch shape, got {qp.shape} and {kp.shape}")
    m = port_alibi_slopes(heads, params["slope_rule"], float(params["bias_max"]), dt.compute)
    return _numpy(port_alibi_bias(qp, kp, m, form, dt.compute).to(dt.out))


def run_alibi_mask_positions(params: Params, inputs: Inputs, dt: PortDtypes) -> np.ndarray:
    mask = checks.attention_mask(inputs)
    m = torch.from_numpy(mask)
    return _numpy((m.cumsum(-1) - 1) * m)


def run_attention(params: Params, inputs: Inputs, dt: PortDtypes) -> tuple[np.ndarray, np.ndarray]:
    return _pair(port_attention(attention_checks.attention(params, inputs), dt.compute), dt)


def run_attention_terms(params: Params, inputs: Inputs, dt: PortDtypes) -> tuple[np.ndarray, np.ndarray]:
    a = attention_checks.attention_terms(params, inputs)
    value_term = _tensor(a["value_term"], dt)
    return _pair(port_attention(a, dt.compute, term=_tensor(a["term"], dt),
                               value=lambda w: (w[..., None] * value_term).sum(dim=-2)), dt)


def run_attention_rope(params: Params, inputs: Inputs, dt: PortDtypes) -> tuple[np.ndarray, np.ndarray]:
    a = attention_checks.attention_rope(params, inputs)
    rope = {"base": a["base"], "partial": "prefix", "layout": a["layout"], "attention_factor": 1.0}
    d = a["q"].shape[-1]
    return _pair(port_attention(a, dt.compute, q=port_rope_apply(a["q"], a["q_positions"], d, rope, dt.compute),
                               k=port_rope_apply(a["k"], a["k_positions"], d, rope, dt.compute)), dt)


def run_attention_alibi(params: Params, inputs: Inputs, dt: PortDtypes) -> tuple[np.ndarray, np.ndarray]:
    a = attention_checks.attention_alibi(params, inputs)
    slopes = port_alibi_slopes(a["q"].shape[1], "press", 8.0, dt.compute)
    return _pair(port_attention(a, dt.compute, bias=port_alibi_bias(a["q_positions"], a["k_positions"], slopes,
                                                                a["form"], dt.compute)), dt)


def run_attention_t5(params: Params, inputs: Inputs, dt: PortDtypes) -> tuple[np.ndarray, np.ndarray]:
    a = attention_checks.attention_t5(params, inputs)
    conventions = (a["direction"], a["buckets"], a["limit"], a["side"] // 2)
    return _pair(port_attention(a, dt.compute, bias=port_t5_bias(a["q_positions"], a["k_positions"],
                                                             _tensor(a["table"], dt), conventions)), dt)


def run_attention_shaw(params: Params, inputs: Inputs, dt: PortDtypes) -> tuple[np.ndarray, np.ndarray]:
    a = attention_checks.attention_shaw(params, inputs)
    qp, kp = (positions(n, inputs[n]).reshape(-1) for n in ("q_positions", "k_positions"))
    index = port_shaw_index(qp, kp, int(params["max_relative_position"]), params["sign"])
    keys, values = _tensor(a["rel_keys"], dt), _tensor(a["rel_values"], dt)
    q = _tensor(a["q"], dt)
    return _pair(port_attention(a, dt.compute, q=q, term=port_shaw_key_term(q, keys, index),
                               value=lambda w: port_shaw_value_term(w, values, index)), dt)


def run_attention_xl(params: Params, inputs: Inputs, dt: PortDtypes) -> tuple[np.ndarray, np.ndarray]:
    a = attention_checks.attention_xl(params, inputs)
    q, k = _tensor(a["q"], dt), _tensor(a["k"], dt).repeat_interleave(a["groups"], dim=1)  # k mapped to query heads
    content = torch.einsum("hd,bhkd->bhk", _tensor(a["u_bias"], dt), k)[:, :, None, :]  # term (c): u_h . k_j
    position = port_xl_position(q, _tensor(a["v_bias"], dt), _tensor(a["w_r"], dt), a["distance"], a["base"],
                                dt.compute)
    return _pair(port_attention(a, dt.compute, q=q, term=position + content), dt)


def run_attention_pipeline(params: Params, inputs: Inputs, dt: PortDtypes) -> np.ndarray:
    a = attention_checks.attention_pipeline(params, inputs)
    b, t = a["tokens"].shape
    heads, kv_heads, d = a["heads"], a["kv_heads"], a["head_dim"]
    x = _tensor(a["embedding"], dt)[torch.from_numpy(a["tokens"])]  # (B, T, width)
    pe = _tensor(a["pe"], dt)
    if a["placement"] == "input":
        x = x + pe
    q, k, v = ((x @ _tensor(a[w], dt)).reshape(b, t, n, d).transpose(1, 2)
               for w, n in (("w_q", heads), ("w_k", kv_heads), ("w_v", kv_heads)))
    output, _ = port_softmax_attention(q, k, v, torch.from_numpy(a["keep"]), float(a["scale"]), groups=a["groups"])
    y = output.transpose(1, 2).reshape(b, t, heads * d) @ _tensor(a["w_o"], dt)
    return _numpy((y + pe if a["placement"] == "after_block" else y).to(dt.out))


def run_xl_score(params: Params, inputs: Inputs, dt: PortDtypes) -> np.ndarray:
    a = checks.xl_score(params, inputs)
    q = _tensor(a["q"], dt)
    v, w_r = _tensor(a["v"], dt)[None], _tensor(a["w_r"], dt)[None]
    position = port_xl_position(q[None], v, w_r, a["distance"], a["base"], dt.compute)[0]
    return _numpy(((q + _tensor(a["u"], dt)) @ _tensor(a["k"], dt).T + position).to(dt.out))


def run_rel_shift(params: Params, inputs: Inputs, dt: PortDtypes) -> tuple[np.ndarray, np.ndarray]:
    a = checks.rel_shift(params, inputs)
    shifted, valid = port_rel_shift(_tensor(a["x"], dt), a["variant"], a["k_len"])
    return _numpy(shifted.to(dt.out)), _numpy(valid)


def run_rope_cos_sin(params: Params, inputs: Inputs, dt: PortDtypes) -> tuple[np.ndarray, np.ndarray]:
    pos, inv_freq = checks.cos_sin(params, inputs)
    width, factor = params["width"], float(params["attention_factor"])
    angle = torch.from_numpy(pos).to(dt.compute)[..., None] * torch.from_numpy(inv_freq).to(dt.compute)
    if width == "full":
        angle = torch.cat([angle, angle], dim=-1)
    elif width == "full_interleaved":
        angle = angle.repeat_interleave(2, dim=-1)
    return _numpy((torch.cos(angle) * factor).to(dt.out)), _numpy((torch.sin(angle) * factor).to(dt.out))


def run_deberta_bucket(params: Params, inputs: Inputs, dt: PortDtypes) -> np.ndarray:
    conventions = _deberta_params(params)
    rel = positions("relative_positions", inputs["relative_positions"], nonnegative=False)
    return _numpy(port_deberta_bucket(torch.from_numpy(rel), *conventions))


def run_deberta_index(params: Params, inputs: Inputs, dt: PortDtypes) -> np.ndarray:
    conventions = _deberta_params(params)
    qp, kp = positions("query_positions", inputs["query_positions"]), positions("key_positions",
                                                                                 inputs["key_positions"])
    if qp.shape[:-1] != kp.shape[:-1]:
        raise invalid_shape(f"query and key positions must share their batch shape, got {qp.shape} and {kp.shape}")
    delta = torch.from_numpy(qp)[..., :, None] - torch.from_numpy(kp)[..., None, :]
    span = conventions[0]
    return _numpy(torch.clamp(port_deberta_bucket(delta, *conventions) + span, 0, 2 * span - 1))


def run_xpos(params: Params, inputs: Inputs, dt: PortDtypes) -> tuple[np.ndarray, np.ndarray]:
    q, k, pos = checks.xpos(params, inputs)
    qs, ks = port_xpos(q, k, pos, params, dt.compute)
    return _numpy(qs.to(dt.out)), _numpy(ks.to(dt.out))


def run_deberta_scores(params: Params, inputs: Inputs, dt: PortDtypes) -> np.ndarray:
    return _numpy(port_deberta_scores(checks.deberta_scores(params, inputs), dt.compute).to(dt.out))


def run_shaw(op: str, params: Params, inputs: Inputs, dt: PortDtypes) -> np.ndarray:
    a = checks.shaw(params, inputs, op)
    qp, kp = (positions(n, inputs[n]) for n in ("q_positions", "k_positions"))
    index = port_shaw_index(qp, kp, int(params["max_relative_position"]), params["sign"])
    if op == "shaw.index":
        return _numpy(index)
    first, second = ("q", "k") if op == "shaw.logits" else ("weights", "v")
    x, y, table = (torch.from_numpy(a[n]).to(dt.compute) for n in (first, second, "table"))
    port = port_shaw_logits if op == "shaw.logits" else port_shaw_output
    return _numpy(port(x, y, table, index).to(dt.out))


PORT_OPS: dict[str, Callable[..., Any]] = {  # op -> run_*(params, inputs, dt)
    "sinusoidal.table": run_table, "sinusoidal.fairseq": run_fairseq, "grid2d.sincos": run_grid,
    "learned.lookup": run_lookup,
    "rope.cos_sin": run_rope_cos_sin, "deberta.bucket": run_deberta_bucket, "deberta.index": run_deberta_index,
    "rope.apply": run_rope_apply, "rope.scores": run_rope_scores, "rope.rotate": run_rope_rotate,
    "rope.rotate_freq": run_rope_rotate_freq,
    "rope.inv_freq": run_inv_freq, "rope.longrope_inv_freq": run_longrope_inv_freq,
    "t5.bucket": run_t5_bucket, "t5.bias": run_t5_bias,
    "alibi.slopes": run_alibi_slopes, "alibi.bias": run_alibi_bias, "alibi.mask_positions": run_alibi_mask_positions,
    "attention": run_attention, "rope.xpos": run_xpos, "deberta.scores": run_deberta_scores,
    **{op: partial(run_shaw, op) for op in ("shaw.index", "shaw.logits", "shaw.output")},
    "transformer_xl.score": run_xl_score, "transformer_xl.rel_shift": run_rel_shift,
    "attention.terms": run_attention_terms, "attention.pipeline": run_attention_pipeline,
    "attention.rope": run_attention_rope, "attention.alibi": run_attention_alibi, "attention.t5": run_attention_t5,
    "attention.shaw": run_attention_shaw, "attention.xl": run_attention_xl,
}


def torch_port(dtype: str = "float64") -> Adapter:
    """The torch port of its ops; float16/bfloat16 computed in float32, rounded at the end."""
    dt = PortDtypes(torch.float64 if dtype == "float64" else torch.float32, TORCH_DTYPES[dtype])
    ops = {op: partial(run, dt=dt) for op, run in PORT_OPS.items()}
    return Adapter("torch-port", f"torch {torch.__version__}", dtype, ops, {op: {} for op in ops},
                   {op: "torch port (conformance/adapters/torch_port.py)" for op in ops}, torch_port,
                   tuple(TORCH_DTYPES))


TORCH = torch_port
ADAPTER = torch_port
