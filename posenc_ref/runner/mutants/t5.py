"""Mutants of the T5 bucket ops (see :mod:`posenc_ref.runner.mutants`).

The bucket mutants are the buggy bucket functions themselves, written in float64 as the ports
that shipped them were; the rest perturb the reference.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from posenc_ref.registry import get_op
from posenc_ref.runner.mutants._common import Mutant, swap, with_params

BucketFn = Callable[[NDArray[np.int64], Mapping[str, Any]], NDArray[np.int64]]


def _sides(rel: NDArray[np.int64], params: Mapping[str, Any], *, halve: bool = True) -> tuple[
        int, int, NDArray[np.int64], NDArray[np.int64], int]:
    """T5's split of a relative distance: ``(side, max_distance, offset, n, exact)`` per the direction."""
    buckets, distance = int(params["num_buckets"]), int(params["max_distance"])
    bidirectional = params["direction"] == "bidirectional"
    side = buckets // 2 if bidirectional and halve else buckets
    offset = np.where(rel > 0, side, 0) if bidirectional else np.zeros_like(rel)
    n = np.abs(rel) if bidirectional else np.maximum(-rel, 0)
    return side, distance, offset, n, side // 2


def _t5_clipped_distance(rel: NDArray[np.int64], params: Mapping[str, Any]) -> NDArray[np.int64]:
    """Distance clipped to max_distance first, no cap on the bucket (x-transformers#10 class)."""
    side, distance, offset, n, exact = _sides(rel, params)
    clipped = np.minimum(np.maximum(n, exact), distance)
    large = exact + np.floor(np.log(clipped / exact) / math.log(distance / exact) * (side - exact)).astype(np.int64)
    result: NDArray[np.int64] = offset + np.where(n < exact, n, large)
    return result


def _t5_no_halving(rel: NDArray[np.int64], params: Mapping[str, Any]) -> NDArray[np.int64]:
    """Bidirectional without ``num_buckets //= 2``: offset N and N buckets per side."""
    buckets, distance, offset, n, exact = _sides(rel, params, halve=False)
    scaled = np.log(np.maximum(n, exact) / exact) / math.log(distance / exact) * (buckets - exact)
    large = np.minimum(exact + np.floor(scaled).astype(np.int64), buckets - 1)
    result: NDArray[np.int64] = offset + np.where(n < exact, n, large)
    return result


def _t5_rounded_log(rel: NDArray[np.int64], params: Mapping[str, Any]) -> NDArray[np.int64]:
    """The log buckets rounded to nearest instead of floored (one bucket late at some distances)."""
    side, distance, offset, n, exact = _sides(rel, params)
    scaled = np.log(np.maximum(n, exact) / exact) / math.log(distance / exact) * (side - exact)
    large = np.minimum(exact + np.round(scaled).astype(np.int64), side - 1)
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


MUTANTS: Final[tuple[Mutant, ...]] = (
    Mutant("t5-clip-before-bucket", "distance clipped to max_distance before the log, no cap on the bucket",
           "lucidrains/x-transformers#10; huggingface/candle#1312", ("t5.bucket", "t5.bias"),
           _t5_with(_t5_clipped_distance)),
    Mutant("t5-no-bidirectional-halving", "bidirectional buckets without num_buckets //= 2",
           "ml-explore/mlx-examples#113", ("t5.bucket", "t5.bias"), _t5_with(_t5_no_halving)),
    Mutant("t5-table-transposed", "a flaxformer (H, N) table read as HF's (N, H)",
           "T5X-to-HF weight conversion", ("t5.bias",),
           with_params(swap("table_layout", {"buckets_heads": "heads_buckets", "heads_buckets": "buckets_heads"})),
           diagnosis="table_layout="),
    Mutant("t5-bucket-rounded-log", "log buckets rounded to nearest instead of floored",
           "ports writing round() for the int() truncation of T5's log bucket", ("t5.bucket",),
           _t5_with(_t5_rounded_log), diagnosis="buckets off by +1"),
)
