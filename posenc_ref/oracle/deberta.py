"""Independent twins of the DeBERTa ops (:mod:`posenc_ref.deberta`).

Buckets evaluate the log formula in mpmath and ceil it (the shared ladder of
:mod:`posenc_ref.oracle.t5`); scores are summed one (head, query, key) element at a time.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import mpmath
import numpy as np
from numpy.typing import NDArray

from posenc_ref.oracle._common import Oracle, to_float64
from posenc_ref.oracle.t5 import _log_ladder


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
    "deberta.bucket": deberta_bucket,
    "deberta.index": deberta_index,
    "deberta.scores": deberta_scores,
}
