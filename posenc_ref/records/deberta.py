"""Registry records of the DeBERTa v2/v3 ops (:mod:`posenc_ref.deberta`).

The scores use the ``phase`` tolerance class with ``theta`` = the sum of the absolute values of
every product in the three dot products, divided by the scale: the size of the reduction, which
bounds a float32 implementation's rounding error however much the terms cancel.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from posenc_ref import deberta as db
from posenc_ref.errors import ErrorCategory
from posenc_ref.opspec import Case, OpRecord, Output, Param
from posenc_ref.scales.deberta import _scores_input_scale, _scores_phase

CITATION = ("He, Gao, Chen 2021, DeBERTaV3, arXiv:2111.09543; He et al. 2020, DeBERTa, arXiv:2006.03654, eq. 4; "
            "microsoft/DeBERTa da_utils.make_log_bucket_position")

POSITION_BUCKETS = Param("position_buckets", "int", 256, doc="b: relative rows per side (v3 configs: 256)")
MAX_RELATIVE = Param("max_relative_positions", "int", 512, doc="M: the log ladder reaches bucket b-1 at |d| = M-1")
DISTANCE_CLAMP = Param(
    "distance_clamp", "str", "none", db.DISTANCE_CLAMPS,
    users={"none": "HF transformers deberta_v2 5.24; microsoft/DeBERTa first releases",
           "max_relative_positions": "microsoft/DeBERTa da_utils at HEAD 4d7fe0b (clamp to +-(M-1) first)"},
    doc="whether |i - j| is clamped to M - 1 before bucketing",
)
POS_ATT_TYPE = Param("pos_att_type", "str", "c2p|p2c", db.POS_ATT_TYPES, doc="relative terms used (v3: c2p|p2c)")


def _rel(*values: int) -> dict[str, NDArray[np.int64]]:
    return {"relative_positions": np.array(values, dtype=np.int64)}


_ANCHORS = (0, 1, 127, 128, 129, 130, 200, 300, 400, 510, 511, 512, 513, 600, 1000, 4096)
_SIGNED = _rel(*sorted({s * n for n in _ANCHORS for s in (1, -1)}))


def _bucket_cases() -> tuple[Case, ...]:
    cases = [
        Case(f"deberta.bucket.v3.anchors.{clamp}", {"distance_clamp": clamp}, _SIGNED,
             f"the reference notes' anchors (127..511, 512, 600) on both sides, distance_clamp={clamp}",
             flags=("KnownAnswer",))
        for clamp in db.DISTANCE_CLAMPS
    ]
    cases += [
        Case("deberta.bucket.v3.range", {}, {"relative_positions": np.arange(-700, 701, dtype=np.int64)},
             "every distance up to 700 on both sides: the ceil ladder and its cut at 512"),
        Case("deberta.bucket.small.b16.m64", {"position_buckets": 16, "max_relative_positions": 64},
             {"relative_positions": np.arange(-80, 81, dtype=np.int64)}, "a small ladder: mid 8, 7 log steps"),
        Case("deberta.bucket.small.b8.m16.exact_top", {"position_buckets": 8, "max_relative_positions": 16},
             {"relative_positions": np.arange(-20, 21, dtype=np.int64)},
             "mid 4, M-1 = 15: the log argument is an exact integer at 15 (ceil must not round up)", kind="edge"),
        Case("deberta.bucket.long", {}, _rel(-(10**6), -20000, 20000, 10**6),
             "very long distances: buckets keep growing without the clamp", kind="long_position",
             flags=("LongPosition",)),
    ]
    errors: list[tuple[str, dict[str, Any], ErrorCategory, str]] = [
        ("position_buckets_too_small", {"position_buckets": 2}, "invalid_argument", "position_buckets < 4"),
        ("max_relative_not_above_exact", {"position_buckets": 256, "max_relative_positions": 129},
         "invalid_argument", "M - 1 = 128 = mid: ln((M-1)/mid) = 0"),
        ("unknown_clamp", {"distance_clamp": "clip"}, "invalid_argument", "an unknown distance_clamp"),
    ]
    cases += [Case(f"deberta.bucket.error.{name}", params, _rel(0, 300), f"error: {why}", kind="error",
                   error=category) for name, params, category, why in errors]
    return tuple(cases)


BUCKET = OpRecord(
    name="deberta.bucket",
    intermediates="logarithms",
    family="bias",
    function=db.deberta_bucket,
    inputs=("relative_positions",),
    outputs=(Output("buckets", "int64", "exact"),),
    params=(POSITION_BUCKETS, MAX_RELATIVE, DISTANCE_CLAMP),
    summary="DeBERTa v2/v3 signed log buckets of i - j (exact ceil)",
    citation=CITATION,
    cases=_bucket_cases(),
)


def _qk(query: Any, key: Any) -> dict[str, NDArray[np.int64]]:
    return {"query_positions": np.asarray(query, dtype=np.int64), "key_positions": np.asarray(key, dtype=np.int64)}


INDEX = OpRecord(
    name="deberta.index",
    intermediates="logarithms",
    family="bias",
    function=db.deberta_index,
    inputs=("query_positions", "key_positions"),
    outputs=(Output("index", "int64", "exact"),),
    params=(POSITION_BUCKETS, MAX_RELATIVE, DISTANCE_CLAMP),
    summary="DeBERTa relative-embedding rows clip(bucket(i - j) + b, 0, 2b - 1)",
    citation=CITATION,
    cases=(
        *(Case(f"deberta.index.seq600.{clamp}", {"distance_clamp": clamp}, _qk([0, 88, 511, 599], np.arange(600)),
               f"a 600-token sequence, distance_clamp={clamp}: from |i - j| >= 512 the two conventions read "
               "different rows (row 0 vs row 1 on the negative side)", flags=("KnownAnswer",))
          for clamp in db.DISTANCE_CLAMPS),
        *(Case(f"deberta.index.long.{clamp}", {"distance_clamp": clamp},
               _qk([4095, 10**6], [0, 4095, 4607, 999488, 10**6]),
               f"positions to 10^6 under distance_clamp={clamp}: distances of 10^6 land on the outer rows",
               kind="long_position", flags=("LongPosition",))
          for clamp in db.DISTANCE_CLAMPS),
        Case("deberta.index.cross_tq3_tk9", {"position_buckets": 8, "max_relative_positions": 16},
             _qk([2, 5, 30], np.arange(9)), "Tq=3 != Tk=9 with offset query positions", flags=("CrossAttention",)),
        Case("deberta.index.batched", {"position_buckets": 16, "max_relative_positions": 64},
             _qk([[0, 1], [40, 41]], [[0, 1, 2], [0, 20, 41]]), "batched positions keep their leading shape"),
        Case("deberta.index.error.batch_mismatch", {}, _qk([[0, 1]], [[0, 1], [0, 1]]),
             "error: query and key positions whose leading shapes differ", kind="error", error="invalid_shape"),
        Case("deberta.index.error.negative_position", {}, _qk([-1], [0]), "error: a negative position",
             kind="error", error="invalid_argument"),
        Case("deberta.index.error.clamped.negative_position", {"distance_clamp": "max_relative_positions"},
             _qk([0, 1], [0, -2]), "error under distance_clamp='max_relative_positions': a negative key position",
             kind="error", error="invalid_argument"),
    ),
    position_inputs=("query_positions", "key_positions"),
)


def _score_inputs(query: Any, key: Any, heads: int = 2, dim: int = 8, buckets: int = 8) -> Any:
    def make(rng: np.random.Generator) -> dict[str, NDArray[Any]]:
        q_pos, k_pos = np.asarray(query, dtype=np.int64), np.asarray(key, dtype=np.int64)
        return {"query_positions": q_pos, "key_positions": k_pos,
                "q": rng.normal(size=(heads, q_pos.size, dim)), "k": rng.normal(size=(heads, k_pos.size, dim)),
                "pos_key": rng.normal(size=(heads, 2 * buckets, dim)),
                "pos_query": rng.normal(size=(heads, 2 * buckets, dim))}
    return make


_SMALL = {"position_buckets": 8, "max_relative_positions": 16}

SCORES = OpRecord(
    name="deberta.scores",
    intermediates="logarithms",
    family="bias",
    function=db.deberta_scores,
    inputs=("query_positions", "key_positions", "q", "k", "pos_key", "pos_query"),
    outputs=(Output("scores", "float64", "phase", _scores_phase, _scores_input_scale),),
    params=(POSITION_BUCKETS, MAX_RELATIVE, DISTANCE_CLAMP, POS_ATT_TYPE),
    summary="DeBERTa disentangled logits (c2c + c2p + p2c) / sqrt(d (1 + n_terms))",
    citation=CITATION,
    cases=(
        Case("deberta.scores.c2p_p2c.t6", _SMALL, _score_inputs(np.arange(6), np.arange(6)),
             "self-attention with both relative terms: scale sqrt(3 d); p2c reads idx(i - j)"),
        Case("deberta.scores.c2p_p2c.beyond_m", _SMALL, _score_inputs([0, 20], np.arange(0, 40, 3)),
             "distances past M - 1 = 15: the index clamp and the distance clamp both matter"),
        Case("deberta.scores.c2p_p2c.beyond_m.clamped", {**_SMALL, "distance_clamp": "max_relative_positions"},
             _score_inputs([0, 20], np.arange(0, 40, 3)), "as above under the original's distance clamp"),
        *(Case(f"deberta.scores.c2p_p2c.long.{clamp}", {**_SMALL, "distance_clamp": clamp},
               _score_inputs([4095, 10**6], [0, 4090, 4095, 999990, 10**6]),
               f"positions to 10^6 under distance_clamp={clamp}", kind="long_position", flags=("LongPosition",))
          for clamp in db.DISTANCE_CLAMPS),
        Case("deberta.scores.c2p.cross_tq3_tk7", {**_SMALL, "pos_att_type": "c2p"},
             _score_inputs([3, 4, 5], np.arange(7)), "c2p only (scale sqrt(2 d)); Tq=3 != Tk=7, offset queries",
             flags=("CrossAttention",)),
        Case("deberta.scores.p2c.t5", {**_SMALL, "pos_att_type": "p2c"}, _score_inputs(np.arange(5), np.arange(5)),
             "p2c only: an asymmetric Qr catches the paper's idx(j - i)"),
        Case("deberta.scores.error.q_width_mismatch", _SMALL,
             lambda rng: {**_score_inputs(np.arange(3), np.arange(3))(rng), "k": rng.normal(size=(2, 3, 4))},
             "error: keys of another width than the queries", kind="error", error="invalid_shape"),
        Case("deberta.scores.error.pos_rows_mismatch", {**_SMALL, "position_buckets": 16},
             _score_inputs(np.arange(3), np.arange(3)), "error: 2b relative rows expected, table built for b=8",
             kind="error", error="invalid_shape"),
        Case("deberta.scores.error.positions_2d", _SMALL, _score_inputs([[0, 1]], [[0, 1]]),
             "error: the scores op takes 1-D positions", kind="error", error="invalid_shape"),
        Case("deberta.scores.error.clamped.pos_rows_mismatch",
             {**_SMALL, "position_buckets": 16, "distance_clamp": "max_relative_positions"},
             _score_inputs(np.arange(3), np.arange(3)), "error under distance_clamp='max_relative_positions': 2b "
             "relative rows expected, table built for b=8", kind="error", error="invalid_shape"),
    ),
    position_inputs=("query_positions", "key_positions"),
    value_inputs=("q", "k", "pos_key", "pos_query"),
)

RECORDS = (BUCKET, INDEX, SCORES)
