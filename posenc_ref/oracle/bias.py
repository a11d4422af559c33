"""Independent twins of the attention-bias ops (ALiBi, T5, DeBERTa).

Written element by element from the published code's definitions, not from the reference:

* ALiBi slopes follow the authors' recursive ``get_slopes`` (power-of-two ladder, then every
  other slope of the doubled ladder), with exponents as exact fractions and ``2**-x`` in mpmath.
* T5 and DeBERTa buckets evaluate the log formula in mpmath at :data:`~posenc_ref.oracle.DPS`
  digits and floor (T5) or ceil (DeBERTa) it; where the value lies within ``10**-30`` of an
  integer, the side is decided by an exact integer comparison of the powers.
* Biases and scores are assembled one (head, query, key) element at a time.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Any, Final

import mpmath
import numpy as np
from numpy.typing import NDArray

from posenc_ref.oracle._common import Oracle, to_float64

_NEAR: Final = mpmath.mpf(10) ** -30


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


def _log_ladder(n: int, exact: int, limit: int, steps: int, rounding: str) -> int:
    """floor or ceil of steps * ln(n/exact) / ln(limit/exact), exactly."""
    value = steps * mpmath.log(mpmath.mpf(n) / exact) / mpmath.log(mpmath.mpf(limit) / exact)
    nearest = int(mpmath.nint(value))
    if abs(value - nearest) < _NEAR:  # decide (n/E)^S against (L/E)^r in integers
        at_least = n**steps * exact**nearest >= limit**nearest * exact**steps
        at_most = n**steps * exact**nearest <= limit**nearest * exact**steps
        if rounding == "floor":
            return nearest if at_least else nearest - 1
        return nearest if at_most else nearest + 1
    return int(mpmath.floor(value)) if rounding == "floor" else int(mpmath.ceil(value))


def _t5_one(rel: int, buckets: int, max_distance: int, direction: str) -> int:
    if direction == "bidirectional":
        side = buckets // 2
        offset = side if rel > 0 else 0
        n = abs(rel)
    else:
        side, offset, n = buckets, 0, max(-rel, 0)
    exact = side // 2
    if n < exact:
        return offset + n
    return offset + min(side - 1, exact + _log_ladder(n, exact, max_distance, side - exact, "floor"))


def t5_bucket(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> dict[str, NDArray[Any]]:
    rel = np.asarray(inputs["relative_positions"]).astype(np.int64)
    values = [_t5_one(int(r), int(params["num_buckets"]), int(params["max_distance"]), params["direction"])
              for r in rel.reshape(-1).tolist()]
    return {"buckets": np.array(values, dtype=np.int64).reshape(rel.shape)}


def t5_bias(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> dict[str, NDArray[Any]]:
    table = np.asarray(inputs["table"], dtype=np.float64)
    if params["table_layout"] == "heads_buckets":
        table = table.T
    q = np.asarray(inputs["query_positions"]).astype(np.int64)
    k = np.asarray(inputs["key_positions"]).astype(np.int64)
    lead, tq, tk, heads = q.shape[:-1], q.shape[-1], k.shape[-1], table.shape[1]
    out = np.empty(lead + (heads, tq, tk), dtype=np.float64)
    for batch in np.ndindex(*lead):
        for a in range(tq):
            for b in range(tk):
                bucket = _t5_one(int(k[batch + (b,)]) - int(q[batch + (a,)]), int(params["num_buckets"]),
                                 int(params["max_distance"]), params["direction"])
                for h in range(heads):
                    out[batch + (h, a, b)] = table[bucket, h]
    return {"bias": out}


def _deberta_one(delta: int, params: Mapping[str, Any]) -> int:
    buckets, limit = int(params["position_buckets"]), int(params["max_relative_positions"])
    if params["distance_clamp"] == "max_relative_positions":
        delta = max(-(limit - 1), min(limit - 1, delta))
    mid = buckets // 2
    if abs(delta) <= mid:
        return delta
    magnitude = mid + _log_ladder(abs(delta), mid, limit - 1, mid - 1, "ceil")
    return magnitude if delta > 0 else -magnitude


def deberta_bucket(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> dict[str, NDArray[Any]]:
    rel = np.asarray(inputs["relative_positions"]).astype(np.int64)
    values = [_deberta_one(int(d), params) for d in rel.reshape(-1).tolist()]
    return {"buckets": np.array(values, dtype=np.int64).reshape(rel.shape)}


def _deberta_row(i: int, j: int, params: Mapping[str, Any]) -> int:
    span = int(params["position_buckets"])
    return max(0, min(2 * span - 1, _deberta_one(i - j, params) + span))


def deberta_index(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> dict[str, NDArray[Any]]:
    q = np.asarray(inputs["query_positions"]).astype(np.int64)
    k = np.asarray(inputs["key_positions"]).astype(np.int64)
    lead, tq, tk = q.shape[:-1], q.shape[-1], k.shape[-1]
    out = np.empty(lead + (tq, tk), dtype=np.int64)
    for batch in np.ndindex(*lead):
        for a in range(tq):
            for b in range(tk):
                out[batch + (a, b)] = _deberta_row(int(q[batch + (a,)]), int(k[batch + (b,)]), params)
    return {"index": out}


def _dot(x: NDArray[Any], y: NDArray[Any]) -> mpmath.mpf:
    return mpmath.fsum(mpmath.mpf(float(a)) * mpmath.mpf(float(b)) for a, b in zip(x.tolist(), y.tolist()))


def deberta_scores(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> dict[str, NDArray[Any]]:
    terms = params["pos_att_type"].split("|")
    qp = np.asarray(inputs["query_positions"]).astype(np.int64).tolist()
    kp = np.asarray(inputs["key_positions"]).astype(np.int64).tolist()
    q, k = np.asarray(inputs["q"], dtype=np.float64), np.asarray(inputs["k"], dtype=np.float64)
    pos_key, pos_query = np.asarray(inputs["pos_key"]), np.asarray(inputs["pos_query"])
    heads, dim = q.shape[0], q.shape[-1]
    scale = mpmath.sqrt(mpmath.mpf(dim * (1 + len(terms))))
    out = np.empty((heads, len(qp), len(kp)), dtype=np.float64)
    for h in range(heads):
        for a, i in enumerate(qp):
            for b, j in enumerate(kp):
                row = _deberta_row(i, j, params)
                total = _dot(q[h, a], k[h, b])
                if "c2p" in terms:
                    total += _dot(q[h, a], pos_key[h, row])
                if "p2c" in terms:  # the code's index idx(i - j), as for c2p
                    total += _dot(k[h, b], pos_query[h, row])
                out[h, a, b] = to_float64(total / scale)
    return {"scores": out}


ORACLES: Final[dict[str, Oracle]] = {
    "alibi.slopes": alibi_slopes,
    "alibi.bias": alibi_bias,
    "alibi.mask_positions": alibi_mask_positions,
    "t5.bucket": t5_bucket,
    "t5.bias": t5_bias,
    "deberta.bucket": deberta_bucket,
    "deberta.index": deberta_index,
    "deberta.scores": deberta_scores,
}
