"""Mutants of the DeBERTa ops (see :mod:`posenc_ref.runner.mutants`).

The truncation mutant is the buggy bucket function itself, written in float64; the rest
perturb the reference.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from posenc_ref import deberta
from posenc_ref.registry import get_op
from posenc_ref.runner.mutants._common import Mutant, swap, with_params


def _deberta_trunc(op: str, params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> Any:
    """T5's truncation where DeBERTa rounds up: a bucket function reused across the two."""
    get_op(op).call(params, inputs)  # the reference's validation
    if op == "deberta.bucket":
        rel = np.asarray(inputs["relative_positions"]).astype(np.int64)
    else:
        q = np.asarray(inputs["query_positions"]).astype(np.int64)
        rel = q[..., :, None] - np.asarray(inputs["key_positions"]).astype(np.int64)[..., None, :]
    buckets, limit = int(params["position_buckets"]), int(params["max_relative_positions"])
    if params["distance_clamp"] == "max_relative_positions":
        rel = np.clip(rel, -(limit - 1), limit - 1)
    mid = buckets // 2
    n = np.maximum(np.abs(rel), mid)
    scaled = np.log(n / mid) / math.log((limit - 1) / mid) * (mid - 1)
    result = np.where(np.abs(rel) <= mid, rel, np.sign(rel) * (mid + np.trunc(scaled).astype(np.int64)))
    return result if op == "deberta.bucket" else np.clip(result + buckets, 0, 2 * buckets - 1)


def _deberta_p2c_paper_index(op: str, params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> Any:
    """p2c read at idx(j - i), the paper's delta(j, i), where both codebases use idx(i - j)."""
    scores = get_op(op).call(params, inputs)["scores"]
    if "p2c" not in params["pos_att_type"].split("|"):
        return scores
    index_params = {k: v for k, v in params.items() if k != "pos_att_type"}
    right = deberta.deberta_index(inputs["query_positions"], inputs["key_positions"], **index_params)
    wrong = deberta.deberta_index(inputs["key_positions"], inputs["query_positions"], **index_params).T
    k = np.asarray(inputs["k"], dtype=np.float64)
    rows = k @ np.swapaxes(np.asarray(inputs["pos_query"], dtype=np.float64), -1, -2)  # (H, Tk, 2b)
    keys = np.arange(k.shape[1])[None, :]
    scale = math.sqrt(k.shape[-1] * (1 + len(params["pos_att_type"].split("|"))))
    return scores + (rows[:, keys, wrong] - rows[:, keys, right]) / scale


MUTANTS: Final[tuple[Mutant, ...]] = (
    Mutant("deberta-trunc-instead-of-ceil", "T5's truncation in DeBERTa's log buckets",
           "reference notes, convention 27", ("deberta.bucket", "deberta.index"), _deberta_trunc),
    Mutant("deberta-clamp-swapped", "the original's distance clamp where transformers has none, or back",
           "microsoft/DeBERTa#153", ("deberta.bucket", "deberta.index", "deberta.scores"),
           with_params(swap("distance_clamp", {"none": "max_relative_positions", "max_relative_positions": "none"})),
           diagnosis="distance_clamp="),
    Mutant("deberta-p2c-paper-index", "p2c gathered at idx(j - i) as the paper writes, not idx(i - j)",
           "nntrainer/nntrainer#3982; microsoft/DeBERTa#47", ("deberta.scores",), _deberta_p2c_paper_index),
)
