"""Low-precision emulations of the T5 bucket ops (calibration only; see the package docs).

Buckets as HF ``_relative_position_bucket``: float32 ``log``, division, product, then truncation
to an integer and the cap, the transcendental steps in the angle dtype (float32; float16 for
the known-bad point).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from posenc_ref import t5
from posenc_ref.runner.emulation._common import Emulation


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


EMULATIONS: Final[dict[str, Emulation]] = {
    "t5.bucket": _t5_bucket,
    "t5.bias": _t5_bias,
}
