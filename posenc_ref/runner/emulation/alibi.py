"""Low-precision emulations of the attention-bias ops (calibration only; see the package docs).

Each follows the float32 code path of the library it is calibrated on:

* ALiBi slopes as BLOOM/Falcon build them (transformers 5.24 ``build_alibi_tensor``): a float32
  base ``2**(-b/c)`` raised to integer powers with ``pow``, the extra heads from the base
  ``2**(-b/(2c))``; the geometric rule as ``exp2`` of a float32 exponent. The bias is the
  float32 slope times the float32 distance.
* T5 buckets as HF ``_relative_position_bucket``: float32 ``log``, division, product, then
  truncation to an integer and the cap.
* DeBERTa buckets as HF ``make_log_bucket_position``: float32 ``log``, ``ceil``.
* DeBERTa scores: float32 matmuls, gathers and scale.

The transcendental steps run in the angle dtype (float32; float16 for the known-bad point).
Which distance each form multiplies is read off the float64 reference, never restated here.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from posenc_ref import alibi, deberta, t5
from posenc_ref.runner.emulation._common import Emulation


def _slopes(params: Mapping[str, Any], at: type) -> NDArray[Any]:
    heads = int(params["num_heads"])
    bias_max = float(params.get("bias_max", 8.0))
    if params.get("slope_rule", "press") == "geometric":
        exponent = at(bias_max) * np.arange(1, heads + 1).astype(at) / at(heads)
        geometric: NDArray[Any] = np.exp2(-exponent).astype(at)
        return geometric
    closest = 1 << (heads.bit_length() - 1)
    base = at(2.0 ** (-bias_max / closest))
    slopes: NDArray[Any] = np.power(base, np.arange(1, closest + 1).astype(at))
    if closest != heads:
        extra = at(2.0 ** (-bias_max / (2 * closest)))
        slopes = np.concatenate([slopes, np.power(extra, np.arange(1, 2 * (heads - closest), 2).astype(at))])
    result: NDArray[Any] = slopes.astype(at)
    return result


def _alibi_slopes(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]], ct: type,
                  at: type) -> dict[str, NDArray[Any]]:
    alibi.alibi_slopes(**params)  # the reference's validation and errors
    return {"slopes": _slopes(params, at).astype(ct)}


def _alibi_bias(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]], ct: type,
                at: type) -> dict[str, NDArray[Any]]:
    alibi.alibi_bias(inputs["query_positions"], inputs["key_positions"], **params)  # validation and errors
    unit = {**params, "num_heads": 1, "slope_rule": "press", "bias_max": 1.0}  # one head of slope 1/2
    signed = 2.0 * alibi.alibi_bias(inputs["query_positions"], inputs["key_positions"], **unit)  # (..., 1, Tq, Tk)
    slopes: NDArray[Any] = _slopes(params, at).astype(ct)
    return {"bias": slopes[:, None, None] * signed.astype(ct)}


def _mask_positions(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]], ct: type,
                    at: type) -> dict[str, NDArray[Any]]:
    return {"positions": alibi.alibi_mask_positions(inputs["attention_mask"])}


def _t5_buckets(rel: NDArray[np.int64], params: Mapping[str, Any], at: type) -> NDArray[np.int64]:
    buckets, distance = int(params.get("num_buckets", 32)), int(params.get("max_distance", 128))
    if params.get("direction", "bidirectional") == "bidirectional":
        side = buckets // 2
        offset = np.where(rel > 0, side, 0)
        n = np.abs(rel)
    else:
        side, offset, n = buckets, np.zeros_like(rel), np.maximum(-rel, 0)
    exact = side // 2
    small = n < exact
    argument: NDArray[Any] = np.where(small, exact, n).astype(at)  # Note: HF takes log(0) here and discards it
    scaled = np.log(argument / at(exact)) / at(math.log(distance / exact)) * at(side - exact)
    large = np.minimum(exact + scaled.astype(np.int64), side - 1)
    result: NDArray[np.int64] = offset + np.where(small, n, large)
    return result


def _t5_bucket(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]], ct: type,
               at: type) -> dict[str, NDArray[Any]]:
    t5.t5_bucket(inputs["relative_positions"], **params)  # validation and errors
    return {"buckets": _t5_buckets(np.asarray(inputs["relative_positions"]).astype(np.int64), params, at)}


def _t5_bias(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]], ct: type,
             at: type) -> dict[str, NDArray[Any]]:
    t5.t5_bias(inputs["query_positions"], inputs["key_positions"], inputs["table"], **params)  # validation
    table: NDArray[Any] = np.asarray(inputs["table"]).astype(ct)
    if params.get("table_layout", "buckets_heads") == "heads_buckets":
        table = table.T
    q = np.asarray(inputs["query_positions"]).astype(np.int64)
    k = np.asarray(inputs["key_positions"]).astype(np.int64)
    buckets = _t5_buckets(k[..., None, :] - q[..., :, None], params, at)
    return {"bias": np.moveaxis(table[buckets], -1, -3)}


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
    "alibi.slopes": _alibi_slopes,
    "alibi.bias": _alibi_bias,
    "alibi.mask_positions": _mask_positions,
    "t5.bucket": _t5_bucket,
    "t5.bias": _t5_bias,
    "deberta.bucket": _deberta_bucket,
    "deberta.index": _deberta_index,
    "deberta.scores": _deberta_scores,
}
