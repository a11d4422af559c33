"""Tolerance scales of the DeBERTa scores (tolerances of :mod:`posenc_ref.records.deberta`)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from posenc_ref import deberta as db
from posenc_ref.scales import _exact


def _scores_phase(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> NDArray[np.float64]:
    terms = params.get("pos_att_type", "c2p|p2c").split("|")
    index = db.deberta_index(inputs["query_positions"], inputs["key_positions"],
                             **{k: v for k, v in params.items() if k != "pos_att_type"})
    q, k = np.abs(inputs["q"]), np.abs(inputs["k"])
    size = _exact.einsum("hqd,hkd->hqk", q, k)
    if "c2p" in terms:
        size = size + np.take_along_axis(_exact.einsum("hqd,hrd->hqr", q, np.abs(inputs["pos_key"])),
                                         np.broadcast_to(index, (q.shape[0],) + index.shape), axis=-1)
    if "p2c" in terms:
        rows = _exact.einsum("hkd,hrd->hkr", k, np.abs(inputs["pos_query"]))
        size = size + rows[:, np.arange(k.shape[1])[None, :], index]
    phase: NDArray[np.float64] = size / math.sqrt(q.shape[-1] * (1 + len(terms)))
    return phase


def _scores_input_scale(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> NDArray[np.float64]:
    # every term is a product of two value inputs (q or a position row with k or a position row)
    return 2.0 * _scores_phase(params, inputs)
