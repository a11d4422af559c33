"""Mutants of the attention-bias ops (see :mod:`posenc_ref.runner.mutants`).

The bucket mutants are the buggy bucket functions themselves, written in float64 as the ports
that shipped them were; the rest perturb the reference.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from posenc_ref import alibi, deberta
from posenc_ref.registry import get_op
from posenc_ref.runner.emulation import round_bfloat16
from posenc_ref.runner.mutants._common import Mutant, swap, with_params

BucketFn = Callable[[NDArray[np.int64], Mapping[str, Any]], NDArray[np.int64]]


def _t5_clipped_distance(rel: NDArray[np.int64], params: Mapping[str, Any]) -> NDArray[np.int64]:
    """Distance clipped to max_distance first, no cap on the bucket (x-transformers#10 class)."""
    buckets, distance = int(params["num_buckets"]), int(params["max_distance"])
    bidirectional = params["direction"] == "bidirectional"
    side = buckets // 2 if bidirectional else buckets
    offset = np.where(rel > 0, side, 0) if bidirectional else np.zeros_like(rel)
    n = np.abs(rel) if bidirectional else np.maximum(-rel, 0)
    exact = side // 2
    clipped = np.minimum(np.maximum(n, exact), distance)
    large = exact + np.floor(np.log(clipped / exact) / math.log(distance / exact) * (side - exact)).astype(np.int64)
    result: NDArray[np.int64] = offset + np.where(n < exact, n, large)
    return result


def _t5_no_halving(rel: NDArray[np.int64], params: Mapping[str, Any]) -> NDArray[np.int64]:
    """Bidirectional without ``num_buckets //= 2``: offset N and N buckets per side."""
    buckets, distance = int(params["num_buckets"]), int(params["max_distance"])
    bidirectional = params["direction"] == "bidirectional"
    offset = np.where(rel > 0, buckets, 0) if bidirectional else np.zeros_like(rel)
    n = np.abs(rel) if bidirectional else np.maximum(-rel, 0)
    exact = buckets // 2
    scaled = np.log(np.maximum(n, exact) / exact) / math.log(distance / exact) * (buckets - exact)
    large = np.minimum(exact + np.floor(scaled).astype(np.int64), buckets - 1)
    result: NDArray[np.int64] = offset + np.where(n < exact, n, large)
    return result


def _t5_with(bucket: BucketFn) -> Callable[[str, Mapping[str, Any], Mapping[str, NDArray[Any]]], Any]:
    def run(op: str, params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> Any:
        get_op(op).call(params, inputs)  # the reference's validation: the bug is in the buckets, not the checks
        if op == "t5.bucket":
            return bucket(np.asarray(inputs["relative_positions"]).astype(np.int64), params)
        table = np.asarray(inputs["table"], dtype=np.float64)
        table = table.T if params["table_layout"] == "heads_buckets" else table
        q = np.asarray(inputs["query_positions"]).astype(np.int64)
        k = np.asarray(inputs["key_positions"]).astype(np.int64)
        return np.moveaxis(table[bucket(k[..., None, :] - q[..., :, None], params)], -1, -3)
    return run


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


def _alibi_bfloat16_slopes(op: str, params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> Any:
    """Falcon's cast of the slopes to bfloat16 before the product, in a float32 pipeline."""
    reference = get_op(op).call(params, inputs)
    slopes = alibi.alibi_slopes(num_heads=params["num_heads"], slope_rule=params["slope_rule"],
                                bias_max=params["bias_max"])
    narrow = round_bfloat16(slopes.astype(np.float32)).astype(np.float64)
    if op == "alibi.slopes":
        return narrow.astype(np.float32)
    ratio = np.where(slopes > 0, narrow / slopes, 1.0)[:, None, None]
    return (reference["bias"] * ratio).astype(np.float32)


def _alibi_sign_flipped(op: str, params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> Any:
    return -get_op(op).call(params, inputs)["bias"]


MUTANTS: Final[tuple[Mutant, ...]] = (
    Mutant("alibi-slopes-geometric", "paper-literal 2^(-8h/H) slopes for every H instead of the authors' rule",
           "ml-explore/mlx#343; baichuan-inc/Baichuan2#225; ofirpress/attention_with_linear_biases#17",
           ("alibi.slopes", "alibi.bias"), with_params(swap("slope_rule", {"press": "geometric"})),
           diagnosis="slope_rule="),
    Mutant("alibi-sign-flipped", "ALiBi bias added with the wrong sign (+m(i-j): far keys favoured)",
           "paiml/aprender#2143 class; mosaicml/llm-foundry#186", ("alibi.bias",), _alibi_sign_flipped),
    Mutant("alibi-bfloat16-slopes", "slopes rounded to bfloat16 before the product (HF Falcon) in a float32 model",
           "transformers modeling_falcon build_alibi_tensor; reference notes, convention 24",
           ("alibi.slopes", "alibi.bias"), _alibi_bfloat16_slopes, dtype="float32"),
    Mutant("t5-clip-before-bucket", "distance clipped to max_distance before the log, no cap on the bucket",
           "lucidrains/x-transformers#10; huggingface/candle#1312", ("t5.bucket", "t5.bias"),
           _t5_with(_t5_clipped_distance)),
    Mutant("t5-no-bidirectional-halving", "bidirectional buckets without num_buckets //= 2",
           "ml-explore/mlx-examples#113", ("t5.bucket", "t5.bias"), _t5_with(_t5_no_halving)),
    Mutant("t5-table-transposed", "a flaxformer (H, N) table read as HF's (N, H)",
           "T5X-to-HF weight conversion", ("t5.bias",),
           with_params(swap("table_layout", {"buckets_heads": "heads_buckets", "heads_buckets": "buckets_heads"})),
           diagnosis="table_layout="),
    Mutant("deberta-trunc-instead-of-ceil", "T5's truncation in DeBERTa's log buckets",
           "reference notes, convention 27", ("deberta.bucket", "deberta.index"), _deberta_trunc),
    Mutant("deberta-clamp-swapped", "the original's distance clamp where transformers has none, or back",
           "microsoft/DeBERTa#153", ("deberta.bucket", "deberta.index", "deberta.scores"),
           with_params(swap("distance_clamp", {"none": "max_relative_positions", "max_relative_positions": "none"})),
           diagnosis="distance_clamp="),
    Mutant("deberta-p2c-paper-index", "p2c gathered at idx(j - i) as the paper writes, not idx(i - j)",
           "nntrainer/nntrainer#3982; microsoft/DeBERTa#47", ("deberta.scores",), _deberta_p2c_paper_index),
)
