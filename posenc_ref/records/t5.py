"""Registry records of the T5 relative-bias ops (:mod:`posenc_ref.t5`)."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from posenc_ref import t5
from posenc_ref.errors import ErrorCategory
from posenc_ref.opspec import Case, OpRecord, Output, Param, error_cases

CITATION = ("Raffel et al. 2020, Exploring the Limits of Transfer Learning (T5), arXiv:1910.10683, section 2.1; "
            "Mesh TensorFlow transformer_layers._relative_position_bucket")

NUM_BUCKETS = Param("num_buckets", "int", 32, doc="N: table rows (both sides together when bidirectional)")
MAX_DISTANCE = Param("max_distance", "int", 128, doc="D: the distance the log ladder reaches at its last bucket")
DIRECTION = Param(
    "direction", "str", "bidirectional", t5.DIRECTIONS,
    users={"bidirectional": "HF T5/mT5/UMT5 encoder (bidirectional=not is_decoder); Mesh-TF not fully_autoregressive",
           "unidirectional": "HF T5 decoder self-attention; Mesh-TF fully_autoregressive"},
    doc="two-sided buckets (N/2 per side) or causal (future keys share bucket 0)",
)
TABLE_LAYOUT = Param(
    "table_layout", "str", "buckets_heads", t5.TABLE_LAYOUTS,
    users={"buckets_heads": "HF T5 nn.Embedding(num_buckets, H)", "heads_buckets": "flaxformer / T5X (H, num_buckets)"},
    doc="axis order of the learned table",
)


def _rel(*values: int) -> dict[str, NDArray[np.int64]]:
    return {"relative_positions": np.array(values, dtype=np.int64)}


# every boundary the (32, 128) ladders have, on both sides, and far beyond max_distance
_BOUNDARIES = (0, 1, 7, 8, 11, 12, 15, 16, 22, 23, 31, 32, 45, 46, 63, 64, 90, 91, 112, 113, 127, 128, 129, 200,
               1000, 10**6)
_BIDI = _rel(*sorted({s * n for n in _BOUNDARIES for s in (1, -1)}))
_CAUSAL = _rel(*sorted({-n for n in (*_BOUNDARIES, 18, 19, 20, 21, 86, 87, 98, 99)} | {1, 5, 300}))


def _bucket_cases() -> tuple[Case, ...]:
    cases = [
        Case("t5.bucket.bidirectional.n32.d128.anchor_r10", {}, _rel(*range(-10, 11)),
             "the bidirectional buckets of r = -10..10 quoted in the reference notes", flags=("KnownAnswer",)),
        Case("t5.bucket.bidirectional.n32.d128.boundaries", {}, _BIDI,
             "every bucket boundary on both sides: 16, 32, 64 (exact integer points), 91 (bucket 15 before "
             "max_distance), 128 and beyond", kind="edge", flags=("Boundary",)),
        Case("t5.bucket.unidirectional.n32.d128.boundaries", {"direction": "unidirectional"}, _CAUSAL,
             "causal ladder: 16, 19, 21, 87, 99, 113 (bucket 31 before max_distance), 128 and beyond; future keys "
             "read bucket 0", kind="edge", flags=("Boundary",)),
        Case("t5.bucket.bidirectional.n32.d128.range", {},
             {"relative_positions": np.arange(-160, 161, dtype=np.int64)}, "every distance up to 160 on both sides"),
        Case("t5.bucket.unidirectional.n32.d128.range", {"direction": "unidirectional"},
             {"relative_positions": np.arange(-160, 9, dtype=np.int64)}, "every causal distance up to 160"),
        Case("t5.bucket.bidirectional.n64.d256", {"num_buckets": 64, "max_distance": 256},
             {"relative_positions": np.arange(-300, 301, 3, dtype=np.int64)}, "a 64-bucket, 256-distance ladder"),
        Case("t5.bucket.unidirectional.n8.d20.small", {"num_buckets": 8, "max_distance": 20,
                                                        "direction": "unidirectional"},
             {"relative_positions": np.arange(-30, 3, dtype=np.int64)}, "a tiny ladder: E=4, 4 log buckets",
             kind="edge"),
        Case("t5.bucket.bidirectional.n4.d3.smallest", {"num_buckets": 4, "max_distance": 3},
             {"relative_positions": np.arange(-5, 6, dtype=np.int64)},
             "the smallest bidirectional ladder: one exact and one log bucket per side", kind="edge"),
        Case("t5.bucket.bidirectional.matrix", {},
             {"relative_positions": np.arange(12)[None, :] - np.arange(12)[:, None]},
             "a 12x12 relative-position matrix keeps its shape (the mlx-examples#113 check)"),
        Case("t5.bucket.bidirectional.long", {},
             {"relative_positions": np.array([-(10**7), -65536, 4097, 10**7], dtype=np.int64)},
             "distances far past max_distance stay in the last bucket", kind="long_position",
             flags=("LongPosition",)),
    ]
    errors: list[tuple[str, dict[str, Any], ErrorCategory, str]] = [
        ("num_buckets_too_small_bidirectional", {"num_buckets": 3}, "invalid_argument",
         "3 buckets cannot hold an exact and a log region on each side"),
        ("num_buckets_too_small_unidirectional", {"num_buckets": 1, "direction": "unidirectional"},
         "invalid_argument", "one bucket cannot hold an exact and a log region"),
        ("max_distance_inside_exact_region", {"max_distance": 8}, "invalid_argument",
         "max_distance = E = 8: ln(D/E) = 0"),
        ("max_distance_below_exact_region", {"num_buckets": 32, "max_distance": 12, "direction": "unidirectional"},
         "invalid_argument", "max_distance 12 < E = 16: the log ratio is below 1"),
        ("unknown_direction", {"direction": "causal"}, "invalid_argument", "an unknown direction"),
    ]
    cases += [Case(f"t5.bucket.error.{name}", params, _rel(0, 5, -5), f"error: {why}", kind="error", error=category)
              for name, params, category, why in errors]
    cases.append(Case("t5.bucket.error.fractional", {}, {"relative_positions": np.array([1.5])},
                      "error: a fractional relative position", kind="error", error="invalid_argument"))
    return tuple(cases)


BUCKET = OpRecord(
    name="t5.bucket",
    intermediates="logarithms",
    family="bias",
    function=t5.t5_bucket,
    inputs=("relative_positions",),
    outputs=(Output("buckets", "int64", "exact"),),
    params=(NUM_BUCKETS, MAX_DISTANCE, DIRECTION),
    summary="T5 relative-position buckets of r = j - i (exact floor, capped at the last bucket)",
    citation=CITATION,
    cases=_bucket_cases(),
)


def _bias_inputs(query: Any, key: Any, heads: int = 4, buckets: int = 32, layout: str = "buckets_heads") -> Any:
    def make(rng: np.random.Generator) -> dict[str, NDArray[Any]]:
        table = rng.normal(0.0, 1.0, size=(buckets, heads))
        return {"query_positions": np.asarray(query, dtype=np.int64), "key_positions": np.asarray(key, dtype=np.int64),
                "table": table if layout == "buckets_heads" else np.ascontiguousarray(table.T)}
    return make


def _bias_cases() -> tuple[Case, ...]:
    cases = [
        Case("t5.bias.bidirectional.t8", {}, _bias_inputs(np.arange(8), np.arange(8)),
             "encoder self-attention, 8x8, 4 heads"),
        Case("t5.bias.unidirectional.t8", {"direction": "unidirectional"}, _bias_inputs(np.arange(8), np.arange(8)),
             "decoder self-attention: the upper triangle reads bucket 0"),
        Case("t5.bias.unidirectional.decode_offset", {"direction": "unidirectional"},
             _bias_inputs([130], np.arange(131)), "one decoding step after a cache of 130: the query sits at 130, "
             "Tq=1 != Tk=131, distances cross 113 and 128", flags=("Decoding",)),
        Case("t5.bias.bidirectional.cross_tq3_tk10", {}, _bias_inputs([0, 4, 9], np.arange(10)),
             "Tq=3 != Tk=10 with explicit query positions", flags=("CrossAttention",)),
        Case("t5.bias.heads_buckets.t6", {"table_layout": "heads_buckets"},
             _bias_inputs(np.arange(6), np.arange(6), layout="heads_buckets"),
             "a flaxformer (H, num_buckets) table gives the same bias as its transpose"),
        Case("t5.bias.bidirectional.square_table", {"num_buckets": 8, "max_distance": 16},
             _bias_inputs(np.arange(7), np.arange(7), heads=8, buckets=8),
             "a square (8, 8) table: a transposed layout is not caught by the shape, only by the values", kind="edge"),
        Case("t5.bias.bidirectional.long", {}, _bias_inputs([0, 5000], [0, 90, 91, 4999, 10000]),
             "long positions: bucket 15/31 far from the query", kind="long_position", flags=("LongPosition",)),
        Case("t5.bias.unidirectional.long", {"direction": "unidirectional"},
             _bias_inputs([4095, 10**6], [0, 4000, 4095, 999872, 10**6]),
             "decoder buckets at positions to 10^6: past keys far away read the last bucket, future keys bucket 0",
             kind="long_position", flags=("LongPosition",)),
        Case("t5.bias.heads_buckets.long", {"table_layout": "heads_buckets"},
             _bias_inputs([0, 5000], [0, 90, 91, 4999, 10000], layout="heads_buckets"),
             "the (H, num_buckets) table at long positions", kind="long_position", flags=("LongPosition",)),
    ]
    errors: list[tuple[str, dict[str, Any], Any, ErrorCategory, str]] = [
        ("table_rows_mismatch", {"num_buckets": 16}, _bias_inputs(np.arange(3), np.arange(3)), "invalid_shape",
         "a (32, H) table declared with num_buckets=16"),
        ("table_rank1", {}, lambda rng: {"query_positions": np.arange(2), "key_positions": np.arange(2),
                                         "table": rng.normal(size=32)}, "invalid_shape", "a 1-D table"),
        ("batch_mismatch", {}, _bias_inputs([[0, 1]], [[0, 1], [0, 1]]), "invalid_shape",
         "query and key positions whose leading (batch) shapes differ"),
        ("num_buckets_too_small", {"num_buckets": 2}, _bias_inputs([0], [0], buckets=2), "invalid_argument",
         "2 buckets bidirectional"),
        ("heads_buckets.table_rows_mismatch", {"num_buckets": 16, "table_layout": "heads_buckets"},
         _bias_inputs(np.arange(3), np.arange(3), layout="heads_buckets"), "invalid_shape",
         "an (H, 32) table under table_layout='heads_buckets' declared with num_buckets=16"),
        ("unidirectional.batch_mismatch", {"direction": "unidirectional"}, _bias_inputs([[0, 1]], [[0, 1], [0, 1]]),
         "invalid_shape", "decoder (unidirectional) positions whose leading (batch) shapes differ"),
    ]
    cases += error_cases("t5.bias", errors)
    return tuple(cases)


BIAS = OpRecord(
    name="t5.bias",
    intermediates="logarithms",
    family="bias",
    function=t5.t5_bias,
    inputs=("query_positions", "key_positions", "table"),
    outputs=(Output("bias", "float64", "ulp"),),
    params=(NUM_BUCKETS, MAX_DISTANCE, DIRECTION, TABLE_LAYOUT),
    summary="T5 bias table[bucket(j - i), h] for explicit query and key positions",
    citation=CITATION,
    cases=_bias_cases(),
    position_inputs=("query_positions", "key_positions"),
    value_inputs=("table",),
)

RECORDS = (BUCKET, BIAS)
