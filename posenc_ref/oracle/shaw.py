"""mpmath twins of the Shaw relative-position ops (:mod:`posenc_ref.shaw`).

Every element is a sum written from the published definition, one term at a time, summed
exactly (``mpmath.fsum`` at the oracle's precision) and rounded once. Table rows are found from
each pair's distance with Python integers.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import mpmath
import numpy as np
from numpy.typing import NDArray

from posenc_ref.oracle._common import Inputs, Oracle, _rows, to_float64


def _shaw_row(qp: int, kp: int, k: int, sign: str) -> int:
    distance = kp - qp if sign == "key_minus_query" else qp - kp
    return max(-k, min(k, distance)) + k


def shaw_index(params: Mapping[str, Any], inputs: Inputs) -> dict[str, NDArray[Any]]:
    k, sign = int(params["max_relative_position"]), params["sign"]
    qs, ks = np.asarray(inputs["q_positions"]).tolist(), np.asarray(inputs["k_positions"]).tolist()
    return {"index": np.array([[_shaw_row(a, b, k, sign) for b in ks] for a in qs], dtype=np.int64)}


def shaw_logits(params: Mapping[str, Any], inputs: Inputs) -> dict[str, NDArray[Any]]:
    k, sign = int(params["max_relative_position"]), params["sign"]
    q, keys, table = _rows(inputs["q"]), _rows(inputs["k"]), _rows(inputs["rel_keys"])
    qs, ks = np.asarray(inputs["q_positions"]).tolist(), np.asarray(inputs["k_positions"]).tolist()
    out = np.empty((len(qs), len(ks)))
    for i, qp in enumerate(qs):
        for j, kp in enumerate(ks):
            rel = table[_shaw_row(qp, kp, k, sign)]
            out[i, j] = to_float64(mpmath.fsum(q[i][d] * (keys[j][d] + rel[d]) for d in range(len(q[i]))))
    return {"logits": out}


def shaw_output(params: Mapping[str, Any], inputs: Inputs) -> dict[str, NDArray[Any]]:
    k, sign = int(params["max_relative_position"]), params["sign"]
    alpha, values, table = _rows(inputs["weights"]), _rows(inputs["v"]), _rows(inputs["rel_values"])
    qs, ks = np.asarray(inputs["q_positions"]).tolist(), np.asarray(inputs["k_positions"]).tolist()
    dim = len(values[0])
    out = np.empty((len(qs), dim))
    for i, qp in enumerate(qs):
        for d in range(dim):
            out[i, d] = to_float64(mpmath.fsum(
                alpha[i][j] * (values[j][d] + table[_shaw_row(qp, kp, k, sign)][d]) for j, kp in enumerate(ks)))
    return {"output": out}


ORACLES: Final[dict[str, Oracle]] = {
    "shaw.index": shaw_index,
    "shaw.logits": shaw_logits,
    "shaw.output": shaw_output,
}
