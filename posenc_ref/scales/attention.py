"""Carried phase scales of attention with RoPE (tolerances of :mod:`posenc_ref.records.attention_positional`).

An implementation computes each angle ``theta = p w`` in a precision ``eps_P``; the ``phase``
class allows ``c eps_P (1 + |theta|)`` per angle (:mod:`posenc_ref.tolerance`). A rotation of a
pair by ``delta`` moves it by ``|pair| delta``, so the logit of query ``i`` and key ``j`` moves
by at most ``c eps_P`` times

.. math::

    D_{ij} = \\sigma \\sum_\\text{pairs} |q_i|\\,|k_j|\\,(2 + |\\theta_i| + |\\theta_j|)

(``sigma`` the logit scale with its multiplier). To first order a softmax weight moves by
``w_ij (delta_ij + sum_l w_il delta_il)`` and an output element by the sum of the weight moves
times ``|v|``; those sums, with ``D`` for ``delta``, are the scales ``m`` of the weights and the
outputs. The weights inside them come from machine-independent arithmetic (:mod:`._exact`), not
from the reference pass, so the stored scales have the same bits on every machine.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from posenc_ref.attention import prepare_pass
from posenc_ref.attention_positional import rope_qk
from posenc_ref.scales import Inputs, _exact

F64 = NDArray[np.float64]


def _pairs(x: F64, layout: str) -> tuple[F64, F64]:
    half = x.shape[-1] // 2
    return (x[..., :half], x[..., half:]) if layout == "half" else (x[..., 0::2], x[..., 1::2])


def _rotated(x: F64, positions: Any, w: F64, layout: str) -> tuple[F64, F64, F64]:
    """x rotated at its positions with correctly rounded cos/sin; the pair norms; |theta| (B|1, 1, T, P)."""
    pos = np.asarray(positions, dtype=np.float64)
    theta = (pos.reshape(-1, pos.shape[-1])[:, None, :, None] * w)  # (B|1, 1, T, P)
    c, s = _exact.cos(theta), _exact.sin(theta)
    u, v = _pairs(x, layout)
    out = np.empty(x.shape, dtype=np.float64)
    ru, rv = u * c - v * s, v * c + u * s
    if layout == "half":
        out[..., : u.shape[-1]], out[..., u.shape[-1]:] = ru, rv
    else:
        out[..., 0::2], out[..., 1::2] = ru, rv
    return out, _exact.hypot(u, v), np.abs(theta)


def _weights_and_logit_scale(params: Mapping[str, Any], inputs: Inputs) -> tuple[F64, F64, F64]:
    """(weights, D, |v| repeated over the query heads) of an ``attention.rope`` case."""
    q, k, v = (np.asarray(inputs[n], dtype=np.float64) for n in ("q", "k", "v"))
    base, layout = float(params["base"]), params["layout"]
    common = {n: params[n] for n in ("scale", "softmax_multiplier", "causal", "alignment") if n in params}
    p = prepare_pass(q, k, v, q_positions=inputs["q_positions"], k_positions=inputs["k_positions"],
                     qk_transform=rope_qk(base=base, layout=layout), **common)  # validates; mask, scale
    dim = q.shape[-1]
    w = _exact.power(base, -np.arange(0, dim, 2, dtype=np.float64) / dim)
    group = q.shape[1] // k.shape[1]
    qr, qn, qt = _rotated(q, inputs["q_positions"], w, layout)
    kr, kn, kt = _rotated(k, inputs["k_positions"], w, layout)
    kr, kn, va = (np.repeat(a, group, axis=1) for a in (kr, kn, np.abs(v)))
    logits = _exact.einsum("bhid,bhjd->bhij", qr, kr) * p.scale
    keep = np.ones(logits.shape, dtype=bool) if p.keep is None else np.broadcast_to(p.keep, logits.shape)
    logits = np.where(keep, logits, -np.inf)
    top = logits.max(axis=-1, keepdims=True)
    e = _exact.exp(logits - np.where(np.isfinite(top), top, 0.0))
    total = _exact.einsum("bhij->bhi", e)[..., None]
    weights = np.where(total > 0, e / np.where(total > 0, total, 1.0), 0.0)
    d = (_exact.einsum("bhip,bhjp->bhij", qn * (2.0 + qt), kn) + _exact.einsum("bhip,bhjp->bhij", qn, kn * kt))
    return weights, d * abs(p.scale), va


def _rope_weights_scale(params: Mapping[str, Any], inputs: Inputs) -> F64:
    """The carried phase scale ``m`` of the weights: ``w_ij (D_ij + sum_l w_il D_il)``."""
    weights, d, _ = _weights_and_logit_scale(params, inputs)
    return np.asarray(weights * (d + _exact.einsum("bhil->bhi", weights * d)[..., None]), dtype=np.float64)


def _rope_output_scale(params: Mapping[str, Any], inputs: Inputs) -> F64:
    """The carried phase scale ``m`` of the outputs: ``sum_j m^w_ij |v_j|``."""
    weights, d, va = _weights_and_logit_scale(params, inputs)
    moved = weights * (d + _exact.einsum("bhil->bhi", weights * d)[..., None])
    return _exact.einsum("bhij,bhjd->bhid", moved, va)
