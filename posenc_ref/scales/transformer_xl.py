"""Tolerance scales of the Transformer-XL score (tolerances of :mod:`posenc_ref.records.transformer_xl`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from posenc_ref import transformer_xl as xl
from posenc_ref.scales import Inputs, _exact
from posenc_ref.scales.sinusoidal import frequencies


def _xl_distinct_rows(params: Mapping[str, Any], inputs: Inputs) -> tuple[Any, Any, NDArray[np.float64]]:
    """The (clamped) query - key distances as ``(distinct, index of each pair's distance, |R| rows (U, D_r))``."""
    distance = np.asarray(inputs["q_positions"])[:, None] - np.asarray(inputs["k_positions"])[None, :]
    if int(params["clamp_len"]) > 0:
        distance = np.clip(distance, -params["clamp_len"], params["clamp_len"])
    distinct, inverse = np.unique(distance, return_inverse=True)
    dim_r = np.shape(inputs["w_r"])[0]
    xl.xl_relative_embedding(distinct, dim=dim_r, base=params["base"])  # validates
    theta = distinct.astype(np.float64)[:, None] * frequencies(dim=dim_r, base=params["base"])  # (U, D_r / 2)
    rows = np.abs(np.concatenate([_exact.sin(theta), _exact.cos(theta)], axis=-1))
    return distinct, inverse.reshape(distance.shape), rows


def _xl_score_scale(params: Mapping[str, Any], inputs: Inputs) -> NDArray[np.float64]:
    q, k = np.abs(inputs["q"]), np.abs(inputs["k"])
    u, v, w_r = np.abs(inputs["u"]), np.abs(inputs["v"]), np.abs(inputs["w_r"])
    dim, dim_r = q.shape[1], w_r.shape[0]
    distinct, inverse, rows = _xl_distinct_rows(params, inputs)  # rows (U, D_r)
    w = frequencies(dim=dim_r, base=params["base"])
    theta = np.abs(distinct.astype(np.float64))[:, None] * np.concatenate([w, w])  # (U, D_r)
    # a sinusoid whose angle carries a few roundings of the frequency and of p * w: 12 |theta| + 2
    per_distance = ((dim + dim_r + 4) * _exact.einsum("uc,cd->ud", rows, w_r)
                    + _exact.einsum("uc,cd->ud", 12.0 * theta + 2.0, w_r))  # (U, D)
    position = np.take_along_axis(_exact.einsum("id,ud->iu", q + v, per_distance), inverse, axis=1)
    scale: NDArray[np.float64] = (dim + 3) * _exact.einsum("id,jd->ij", q + u, k) + position
    return scale


def _xl_score_input_scale(params: Mapping[str, Any], inputs: Inputs) -> NDArray[np.float64]:
    # terms q_i k_i, u_i k_i, q_i W_ji R_j and v_i W_ji R_j: two value-input factors each
    q, k = np.abs(inputs["q"]), np.abs(inputs["k"])
    u, v, w_r = np.abs(inputs["u"]), np.abs(inputs["v"]), np.abs(inputs["w_r"])
    _, inverse, rows = _xl_distinct_rows(params, inputs)
    position = np.take_along_axis(_exact.einsum("id,ud->iu", q + v, _exact.einsum("uc,cd->ud", rows, w_r)), inverse,
                                  axis=1)
    return np.asarray(2.0 * (_exact.einsum("id,jd->ij", q + u, k) + position), dtype=np.float64)
