"""Tolerance scales of the Shaw ops (tolerances of :mod:`posenc_ref.records.shaw`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from posenc_ref import shaw as sh
from posenc_ref.scales import Inputs, _exact


def _shaw_logits_magnitude(params: Mapping[str, Any], inputs: Inputs) -> NDArray[np.float64]:
    """sum over the terms q_i k_i and q_i A^K_i of their absolute values: the op on |inputs|."""
    sh.shaw_logits(inputs["q"], inputs["k"], inputs["rel_keys"], inputs["q_positions"], inputs["k_positions"],
                   **params)  # validates
    index = sh.shaw_relative_index(inputs["q_positions"], inputs["k_positions"], **params)  # (Tq, Tk)
    q, k, table = np.abs(inputs["q"]), np.abs(inputs["k"]), np.abs(inputs["rel_keys"])
    return _exact.einsum("id,jd->ij", q, k) + _exact.einsum("id,ijd->ij", q, table[index])


def _shaw_output_magnitude(params: Mapping[str, Any], inputs: Inputs) -> NDArray[np.float64]:
    """sum over the terms alpha v and alpha A^V of their absolute values: the op on |inputs|."""
    sh.shaw_output(inputs["weights"], inputs["v"], inputs["rel_values"], inputs["q_positions"],
                   inputs["k_positions"], **params)  # validates
    index = sh.shaw_relative_index(inputs["q_positions"], inputs["k_positions"], **params)  # (Tq, Tk)
    alpha, v, table = np.abs(inputs["weights"]), np.abs(inputs["v"]), np.abs(inputs["rel_values"])
    return _exact.einsum("ij,jd->id", alpha, v) + _exact.einsum("ij,ijd->id", alpha, table[index])


def _shaw_logits_scale(params: Mapping[str, Any], inputs: Inputs) -> NDArray[np.float64]:
    # two dot products of length D, then one addition: D + 3 roundings on each product's path
    scale: NDArray[np.float64] = (np.asarray(inputs["q"]).shape[1] + 3) * _shaw_logits_magnitude(params, inputs)
    return scale


def _shaw_output_scale(params: Mapping[str, Any], inputs: Inputs) -> NDArray[np.float64]:
    # sums over Tk keys and over the 2K + 1 rows, then one addition
    length = np.asarray(inputs["v"]).shape[0] + 2 * int(params["max_relative_position"]) + 1
    scale: NDArray[np.float64] = (length + 3) * _shaw_output_magnitude(params, inputs)
    return scale


def _shaw_logits_input_scale(params: Mapping[str, Any], inputs: Inputs) -> NDArray[np.float64]:
    # every term q_i k_i or q_i A^K_i has two value-input factors
    return np.asarray(2.0 * _shaw_logits_magnitude(params, inputs), dtype=np.float64)


def _shaw_output_input_scale(params: Mapping[str, Any], inputs: Inputs) -> NDArray[np.float64]:
    # every term alpha v or alpha A^V has two value-input factors
    return np.asarray(2.0 * _shaw_output_magnitude(params, inputs), dtype=np.float64)
