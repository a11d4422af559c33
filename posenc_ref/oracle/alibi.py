"""Independent twins of the ALiBi ops (:mod:`posenc_ref.alibi`).

Slopes follow the authors' recursive ``get_slopes`` (power-of-two ladder, then every other
slope of the doubled ladder), with exponents as exact fractions and ``2**-x`` in mpmath; biases
are assembled one (head, query, key) element at a time.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Any, Final

import mpmath
import numpy as np
from numpy.typing import NDArray

from posenc_ref.oracle._common import Oracle, to_float64


def _press_exponents(n: int, bias_max: Fraction) -> list[Fraction]:
    """The authors' get_slopes, as exponents x (slope 2**-x), by its recursion."""
    if n & (n - 1) == 0:  # a power of two: start = ratio = 2**(-b/n), slope h = start**h
        return [bias_max * h / n for h in range(1, n + 1)]
    closest = 2 ** (n.bit_length() - 1)
    return _press_exponents(closest, bias_max) + _press_exponents(2 * closest, bias_max)[0::2][: n - closest]


def _exponents(params: Mapping[str, Any]) -> list[Fraction]:
    heads = int(params["num_heads"])
    bias_max = Fraction(float(params["bias_max"]))
    if params["slope_rule"] == "geometric":
        return [bias_max * h / heads for h in range(1, heads + 1)]
    return _press_exponents(heads, bias_max)


def _slope(x: Fraction) -> mpmath.mpf:
    return mpmath.power(2, -(mpmath.mpf(x.numerator) / x.denominator))


def alibi_slopes(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> dict[str, NDArray[Any]]:
    return {"slopes": np.array([to_float64(_slope(x)) for x in _exponents(params)], dtype=np.float64)}


def _distance(form: str, i: int, j: int, tq: int, tk: int) -> int:
    """The signed multiplier of the slope for one (query, key) pair."""
    if form == "relative_causal":
        return -(i - j)
    if form == "key_only":
        return j
    if form == "symmetric":
        return -abs(i - j)
    return -abs(i + tk - tq - j)  # bottom_right


def alibi_bias(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> dict[str, NDArray[Any]]:
    slopes = [_slope(x) for x in _exponents(params)]
    q = np.asarray(inputs["query_positions"]).astype(np.int64)
    k = np.asarray(inputs["key_positions"]).astype(np.int64)
    lead = q.shape[:-1]
    tq, tk = q.shape[-1], k.shape[-1]
    out = np.empty(lead + (len(slopes), tq, tk), dtype=np.float64)
    for batch in np.ndindex(*lead):
        for h, m in enumerate(slopes):
            for a in range(tq):
                for b in range(tk):
                    d = _distance(params["form"], int(q[batch + (a,)]), int(k[batch + (b,)]), tq, tk)
                    out[batch + (h, a, b)] = to_float64(m * d)
    return {"bias": out}


def alibi_mask_positions(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> dict[str, NDArray[Any]]:
    rows = []
    for line in np.asarray(inputs["attention_mask"]).tolist():
        seen, row = 0, []
        for flag in line:
            if flag:
                row.append(seen)
                seen += 1
            else:
                row.append(0)
        rows.append(row)
    return {"positions": np.array(rows, dtype=np.int64)}


ORACLES: Final[dict[str, Oracle]] = {
    "alibi.slopes": alibi_slopes,
    "alibi.bias": alibi_bias,
    "alibi.mask_positions": alibi_mask_positions,
}
