"""Tolerance scales of the ALiBi ops (tolerances of :mod:`posenc_ref.records.alibi`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from posenc_ref import alibi as al
from posenc_ref.scales import _exact


def _head_factor(params: Mapping[str, Any]) -> NDArray[np.float64]:
    x, k = al.alibi_slope_ladder(num_heads=params["num_heads"], slope_rule=params.get("slope_rule", "press"),
                                 bias_max=params.get("bias_max", 8.0))
    factor: NDArray[np.float64] = 1.0 + x + k
    return factor


def _slopes(params: Mapping[str, Any]) -> NDArray[np.float64]:
    """:func:`posenc_ref.alibi.alibi_slopes`, each ``2 ** -x_h`` correctly rounded."""
    x, _ = al.alibi_slope_ladder(num_heads=params["num_heads"], slope_rule=params.get("slope_rule", "press"),
                                 bias_max=params.get("bias_max", 8.0))
    return _exact.power(2.0, -x)


def _slopes_phase(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> NDArray[np.float64]:
    return _slopes(params) * _head_factor(params)


def _bias_phase(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> NDArray[np.float64]:
    # |distance| exactly: one head of slope 1/2 (bias_max=1) scales it by a power of two
    one = {**params, "num_heads": 1, "slope_rule": "press", "bias_max": 1.0}
    distance = 2.0 * np.abs(al.alibi_bias(inputs["query_positions"], inputs["key_positions"], **one))
    bias = _slopes(params)[:, None, None] * distance  # (..., H, Tq, Tk)
    phase: NDArray[np.float64] = bias * _head_factor(params)[:, None, None]
    return phase
