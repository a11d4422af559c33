"""Tolerance scales of the ALiBi ops (tolerances of :mod:`posenc_ref.records.alibi`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from posenc_ref import alibi as al


def _head_factor(params: Mapping[str, Any]) -> NDArray[np.float64]:
    x, k = al.alibi_slope_ladder(num_heads=params["num_heads"], slope_rule=params.get("slope_rule", "press"),
                                 bias_max=params.get("bias_max", 8.0))
    factor: NDArray[np.float64] = 1.0 + x + k
    return factor


def _slopes_phase(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> NDArray[np.float64]:
    return al.alibi_slopes(**params) * _head_factor(params)


def _bias_phase(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> NDArray[np.float64]:
    bias = al.alibi_bias(inputs["query_positions"], inputs["key_positions"], **params)
    phase: NDArray[np.float64] = np.abs(bias) * _head_factor(params)[:, None, None]
    return phase
