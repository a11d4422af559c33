"""Independent twins of the T5 bias ops (:mod:`posenc_ref.t5`), and the log ladder DeBERTa shares.

Written element by element from the published code's definitions, not from the reference:

* T5 and DeBERTa buckets evaluate the log formula in mpmath at :data:`~posenc_ref.oracle.DPS`
  digits and floor (T5) or ceil (DeBERTa) it; where the value lies within ``10**-30`` of an
  integer, the side is decided by an exact integer comparison of the powers.
* Biases and scores are assembled one (head, query, key) element at a time.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import mpmath
import numpy as np
from numpy.typing import NDArray

from posenc_ref.oracle._common import Oracle


def _log_ladder(n: int, exact: int, limit: int, steps: int, rounding: str) -> int:
    """floor or ceil of steps * ln(n/exact) / ln(limit/exact), exactly."""
    value = steps * mpmath.log(mpmath.mpf(n) / exact) / mpmath.log(mpmath.mpf(limit) / exact)
    nearest = int(mpmath.nint(value))
    if abs(value - nearest) < mpmath.mpf(10) ** -30:  # decide (n/E)^S against (L/E)^r in integers
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


ORACLES: Final[dict[str, Oracle]] = {
    "t5.bucket": t5_bucket,
    "t5.bias": t5_bias,
}
