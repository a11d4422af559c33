"""Low-precision emulations of the DeBERTa ops (calibration only; see the package docs).

Buckets as HF ``make_log_bucket_position``: float32 ``log``, ``ceil``, in the angle dtype
(float32; float16 for the known-bad point). Scores: float32 matmuls, gathers and scale.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from posenc_ref import deberta
from posenc_ref.runner.emulation._common import Emulation


def _deberta_buckets(rel: NDArray[np.int64], params: Mapping[str, Any], at: type) -> NDArray[np.int64]:
    buckets, limit = int(params.get("position_buckets", 256)), int(params.get("max_relative_positions", 512))
    if params.get("distance_clamp", "none") == "max_relative_positions":
        rel = np.clip(rel, -(limit - 1), limit - 1)
    mid = buckets // 2
    magnitude = np.where((rel < mid) & (rel > -mid), mid - 1, np.abs(rel))
    ratio = np.log(magnitude.astype(at) / at(mid)) / np.log(at((limit - 1) / mid))
    log_pos = np.ceil(ratio * at(mid - 1)).astype(np.int64) + mid
    result: NDArray[np.int64] = np.where(magnitude <= mid, rel, log_pos * np.sign(rel))
    return result


def _deberta_rows(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]], at: type) -> NDArray[np.int64]:
    q = np.asarray(inputs["query_positions"]).astype(np.int64)
    k = np.asarray(inputs["key_positions"]).astype(np.int64)
    span = int(params.get("position_buckets", 256))
    rows: NDArray[np.int64] = np.clip(_deberta_buckets(q[..., :, None] - k[..., None, :], params, at) + span,
                                      0, 2 * span - 1)
    return rows


def _deberta_bucket(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]], ct: type,
                    at: type) -> dict[str, NDArray[Any]]:
    deberta.deberta_bucket(inputs["relative_positions"], **params)  # validation and errors
    return {"buckets": _deberta_buckets(np.asarray(inputs["relative_positions"]).astype(np.int64), params, at)}


def _deberta_index(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]], ct: type,
                   at: type) -> dict[str, NDArray[Any]]:
    deberta.deberta_index(inputs["query_positions"], inputs["key_positions"], **params)  # validation and errors
    return {"index": _deberta_rows(params, inputs, at)}


def _deberta_scores(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]], ct: type,
                    at: type) -> dict[str, NDArray[Any]]:
    deberta.deberta_scores(*(inputs[name] for name in ("query_positions", "key_positions", "q", "k", "pos_key",
                                                         "pos_query")), **params)  # validation and errors
    q: NDArray[Any] = np.asarray(inputs["q"]).astype(ct)
    k: NDArray[Any] = np.asarray(inputs["k"]).astype(ct)
    pos_key: NDArray[Any] = np.asarray(inputs["pos_key"]).astype(ct)
    pos_query: NDArray[Any] = np.asarray(inputs["pos_query"]).astype(ct)
    rows = _deberta_rows(params, inputs, at)
    terms = params.get("pos_att_type", "c2p|p2c").split("|")
    scale = ct(math.sqrt(q.shape[-1] * (1 + len(terms))))
    scores = q @ np.swapaxes(k, -1, -2) / scale
    if "c2p" in terms:
        c2p = q @ np.swapaxes(pos_key, -1, -2) / scale
        scores = scores + np.take_along_axis(c2p, np.broadcast_to(rows, (q.shape[0],) + rows.shape), axis=-1)
    if "p2c" in terms:
        p2c = k @ np.swapaxes(pos_query, -1, -2) / scale
        scores = scores + p2c[:, np.arange(k.shape[1])[None, :], rows]
    return {"scores": scores.astype(ct)}


EMULATIONS: Final[dict[str, Emulation]] = {
    "deberta.bucket": _deberta_bucket,
    "deberta.index": _deberta_index,
    "deberta.scores": _deberta_scores,
}
