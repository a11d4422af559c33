"""Registry records of the Shaw relative-position ops (:mod:`posenc_ref.shaw`).

Scores and resampled tables are sums of products, judged with the ``reduction`` tolerance
(:mod:`posenc_ref.tolerance`): each output element carries its error scale ``m``, the sum over
its terms of ``(number of roundings on the term's path) * |term|`` plus the error of factors that
are themselves computed (sinusoids, interpolation weights), in units of half an epsilon.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from posenc_ref import shaw as sh
from posenc_ref.errors import ErrorCategory
from posenc_ref.opspec import Case, OpRecord, Output, Param
from posenc_ref.scales.shaw import (
    _shaw_logits_input_scale,
    _shaw_logits_scale,
    _shaw_output_input_scale,
    _shaw_output_scale,
)

Inputs = Mapping[str, NDArray[Any]]

SHAW_CITATION = "Shaw, Uszkoreit, Vaswani 2018, Self-Attention with Relative Position Representations, " \
                "arXiv:1803.02155, eqs. 3-5; tensor2tensor common_attention._relative_attention_inner"
SIGN = Param(
    "sign", "str", "key_minus_query", sh.SIGNS,
    users={"key_minus_query": "Shaw 2018; tensor2tensor _generate_relative_positions_matrix",
           "query_minus_key": "HF BERT-family position_embedding_type='relative_key' (4.x)"},
    doc="relative distance p_j - p_i or p_i - p_j",
)
K_PARAM = Param("max_relative_position", "int", doc="clipping distance K >= 1; tables have 2K + 1 rows")


def _pos(*values: int) -> NDArray[np.int64]:
    return np.array(values, dtype=np.int64)


def _shaw_inputs(tq: int, tk: int, dim: int, k: int, q_start: int | None = None, *, output: bool = False,
                 offset: int = 0) -> Any:
    start = (tk - tq if q_start is None else q_start) + offset

    def make(rng: np.random.Generator) -> dict[str, NDArray[Any]]:
        first = ("weights", rng.dirichlet(np.ones(tk), size=tq)) if output else ("q", rng.normal(size=(tq, dim)))
        second = ("v", rng.normal(size=(tk, dim))) if output else ("k", rng.normal(size=(tk, dim)))
        table = ("rel_values" if output else "rel_keys", rng.normal(size=(2 * k + 1, dim)))
        return dict([first, second, table, ("q_positions", np.arange(start, start + tq)),
                     ("k_positions", np.arange(offset, offset + tk))])
    return make


def _shaw_cases(op: str, output: bool) -> tuple[Case, ...]:
    cases = [
        Case(f"shaw.{op}.self.t7.k2", {"max_relative_position": 2}, _shaw_inputs(7, 7, 8, 2, output=output),
             "self-attention, 7 positions, K=2: distances up to 6 are clipped on both sides"),
        Case(f"shaw.{op}.self.t7.k2.query_minus_key", {"max_relative_position": 2, "sign": "query_minus_key"},
             _shaw_inputs(7, 7, 8, 2, output=output), "sign i - j (HF relative_key) reads the mirrored rows"),
        Case(f"shaw.{op}.memory.tq3.tk8.k3", {"max_relative_position": 3}, _shaw_inputs(3, 8, 6, 3, output=output),
             "Tq != Tk with memory: the queries are the last 3 of 8 key positions (tensor2tensor)", kind="edge"),
        Case(f"shaw.{op}.cache.tq1.tk12.k4", {"max_relative_position": 4}, _shaw_inputs(1, 12, 6, 4, output=output),
             "decoding with a cache: one query at position Tk - 1 sees distances -(Tk-1)..0", kind="edge"),
        Case(f"shaw.{op}.hf_relative_key.unclipped", {"max_relative_position": 5, "sign": "query_minus_key"},
             _shaw_inputs(6, 6, 4, 5, output=output),
             "HF relative_key with max_position_embeddings=6: K = 5 never clips inside 6 positions"),
        Case(f"shaw.{op}.offset_positions.k2", {"max_relative_position": 2},
             _shaw_inputs(4, 9, 4, 2, q_start=3, output=output),
             "queries at key positions 3..6 of 0..8 (not the last ones): explicit offsets"),
        *(Case(f"shaw.{op}.long.k2.{sign}", {"max_relative_position": 2, "sign": sign},
               _shaw_inputs(4, 6, 4, 2, output=output, offset=999994),
               f"sign={sign} at positions 999994..10^6-1: only the distances matter", kind="long_position",
               flags=("LongPosition",))
          for sign in ("key_minus_query", "query_minus_key")),
    ]
    base = _shaw_inputs(4, 4, 4, 2, output=output)(np.random.default_rng(5))
    table = "rel_values" if output else "rel_keys"
    errors: list[tuple[str, dict[str, Any], dict[str, Any], ErrorCategory, str]] = [
        ("k0", {"max_relative_position": 0}, {table: base[table][:1]}, "invalid_argument", "K < 1"),
        ("cross_attention", {"max_relative_position": 2}, {"q_positions": _pos(7, 8, 9, 10)}, "invalid_argument",
         "query positions that are not key positions: a cross-attention alignment is undefined"),
        ("positions_mismatch", {"max_relative_position": 2}, {"q_positions": _pos(1, 2, 3)}, "invalid_shape",
         "3 query positions for 4 query rows"),
        ("table_rows", {"max_relative_position": 3}, {}, "invalid_shape", "a table of 2K+1 = 5 rows for K=3"),
        ("positions_2d", {"max_relative_position": 2}, {"k_positions": np.arange(4).reshape(2, 2)},
         "invalid_shape", "2-D key positions"),
        ("unknown_sign", {"max_relative_position": 2, "sign": "absolute"}, {}, "invalid_argument",
         "an unknown sign convention"),
    ]
    if not output:
        errors.append(("width_mismatch", {"max_relative_position": 2}, {"k": base["k"][:, :3]}, "invalid_shape",
                       "q and k of different widths"))
    cases += [Case(f"shaw.{op}.error.{name}", params, {**base, **change}, f"error: {why}", kind="error", error=cat)
              for name, params, change, cat, why in errors]
    return tuple(cases)


def _index_cases() -> tuple[Case, ...]:
    def both(q: NDArray[np.int64], k: NDArray[np.int64]) -> dict[str, NDArray[np.int64]]:
        return {"q_positions": q, "k_positions": k}
    return (
        Case("shaw.index.self.t6.k2", {"max_relative_position": 2}, both(np.arange(6), np.arange(6)),
             "clip(j - i, -2, 2) + 2 over 6 positions", flags=("KnownAnswer",)),
        Case("shaw.index.self.t6.k2.query_minus_key", {"max_relative_position": 2, "sign": "query_minus_key"},
             both(np.arange(6), np.arange(6)), "sign i - j: the transposed index"),
        *(Case(f"shaw.index.long.k3.{sign}", {"max_relative_position": 3, "sign": sign},
               both(np.arange(999995, 999999), np.arange(999992, 10**6)),
               f"sign={sign} at positions to 10^6 - 1: the index depends on the distances only",
               kind="long_position", flags=("LongPosition",))
          for sign in ("key_minus_query", "query_minus_key")),
        Case("shaw.index.memory.tq3.tk7.k3", {"max_relative_position": 3}, both(np.arange(4, 7), np.arange(7)),
             "memory: queries are the last 3 of 7 key positions", kind="edge"),
        Case("shaw.index.cache.tq1.tk10.k4", {"max_relative_position": 4}, both(_pos(9), np.arange(10)),
             "cache mode: one query at Tk - 1", kind="edge"),
        Case("shaw.index.sparse_positions.k3", {"max_relative_position": 3}, both(_pos(2, 7), _pos(0, 2, 5, 7, 11)),
             "non-contiguous explicit positions", kind="edge"),
        Case("shaw.index.error.k0", {"max_relative_position": 0}, both(np.arange(3), np.arange(3)),
             "error: K < 1", kind="error", error="invalid_argument"),
        Case("shaw.index.error.cross_attention", {"max_relative_position": 2}, both(_pos(8), np.arange(5)),
             "error: a query position beyond the keys (cross-attention alignment undefined)", kind="error",
             error="invalid_argument"),
        Case("shaw.index.error.negative_position", {"max_relative_position": 2}, both(_pos(-1), _pos(-1, 0)),
             "error: a negative position", kind="error", error="invalid_argument"),
        Case("shaw.index.error.empty_keys", {"max_relative_position": 2},
             both(_pos(0), np.zeros((0,), dtype=np.int64)), "error: empty key positions", kind="error",
             error="invalid_shape"),
        Case("shaw.index.error.query_minus_key.k0", {"max_relative_position": 0, "sign": "query_minus_key"},
             both(np.arange(3), np.arange(3)), "error under sign='query_minus_key': K < 1", kind="error",
             error="invalid_argument"),
    )


SHAW_INDEX = OpRecord(
    name="shaw.index", family="relative", function=sh.shaw_relative_index,
    inputs=("q_positions", "k_positions"), outputs=(Output("index", "int64", "exact"),),
    params=(K_PARAM, SIGN), summary="clipped relative table rows clip(d, -K, K) + K",
    citation=SHAW_CITATION, cases=_index_cases(), position_inputs=("q_positions", "k_positions"),
)
SHAW_LOGITS = OpRecord(
    name="shaw.logits", family="relative", function=sh.shaw_logits,
    inputs=("q", "k", "rel_keys", "q_positions", "k_positions"),
    outputs=(Output("logits", "float64", "reduction", _shaw_logits_scale, _shaw_logits_input_scale),),
    params=(K_PARAM, SIGN), summary="q_i . k_j + q_i . A^K[r_ij] (unscaled), without a (Tq, Tk, D) gather",
    citation=SHAW_CITATION, cases=_shaw_cases("logits", False), position_inputs=("q_positions", "k_positions"),
    value_inputs=("q", "k", "rel_keys"),
)
SHAW_OUTPUT = OpRecord(
    name="shaw.output", family="relative", function=sh.shaw_output,
    inputs=("weights", "v", "rel_values", "q_positions", "k_positions"),
    outputs=(Output("output", "float64", "reduction", _shaw_output_scale, _shaw_output_input_scale),),
    params=(K_PARAM, SIGN), summary="sum_j alpha_ij (v_j + A^V[r_ij]) through the 2K + 1 distinct rows",
    citation=SHAW_CITATION, cases=_shaw_cases("output", True), position_inputs=("q_positions", "k_positions"),
    value_inputs=("weights", "v", "rel_values"),
)

RECORDS = (SHAW_INDEX, SHAW_LOGITS, SHAW_OUTPUT)
