"""Registry records of the Transformer-XL / XLNet ops (:mod:`posenc_ref.transformer_xl`).

Scores and resampled tables are sums of products, judged with the ``reduction`` tolerance
(:mod:`posenc_ref.tolerance`): each output element carries its error scale ``m``, the sum over
its terms of ``(number of roundings on the term's path) * |term|`` plus the error of factors that
are themselves computed (sinusoids, interpolation weights), in units of half an epsilon.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from posenc_ref import transformer_xl as xl
from posenc_ref.errors import ErrorCategory
from posenc_ref.opspec import Case, OpRecord, Output, Param
from posenc_ref.records.shaw import _pos
from posenc_ref.scales.transformer_xl import _xl_score_input_scale, _xl_score_scale

XL_CITATION = "Dai et al. 2019, Transformer-XL, arXiv:1901.02860, section 3.3; Yang et al. 2019, XLNet, " \
              "arXiv:1906.08237; kimiyoung/transformer-xl mem_transformer.py; zihangdai/xlnet modeling.py"


def _xl_inputs(tq: int, tk: int, dim: int, dim_r: int, q_positions: NDArray[np.int64] | None = None) -> Any:
    def make(rng: np.random.Generator) -> dict[str, NDArray[Any]]:
        return {"q": rng.normal(size=(tq, dim)), "k": rng.normal(size=(tk, dim)), "u": rng.normal(size=dim),
                "v": rng.normal(size=dim), "w_r": rng.normal(size=(dim_r, dim)) / np.sqrt(dim_r),
                "q_positions": np.arange(tk - tq, tk) if q_positions is None else q_positions,
                "k_positions": np.arange(tk)}
    return make


def _xl_score_cases() -> tuple[Case, ...]:
    base = _xl_inputs(3, 5, 4, 6)(np.random.default_rng(7))
    errors: list[tuple[str, dict[str, Any], ErrorCategory, str]] = [
        ("odd_dim_r", {"w_r": base["w_r"][:5]}, "invalid_argument", "an odd sinusoid width D_r"),
        ("cross_attention", {"q_positions": _pos(5, 6, 7)}, "invalid_argument",
         "query positions beyond the keys: Transformer-XL defines no cross-attention alignment"),
        ("u_shape", {"u": base["u"][:3]}, "invalid_shape", "u of the wrong width"),
        ("positions_mismatch", {"q_positions": _pos(3, 4)}, "invalid_shape", "2 query positions for 3 query rows"),
        ("k_width", {"k": base["k"][:, :3]}, "invalid_shape", "k of another width than q"),
    ]
    return (
        Case("transformer_xl.score.mem3.tq4.tk7", {}, _xl_inputs(4, 7, 4, 6),
             "memory length 3, segment 4: the four terms with Tq != Tk"),
        Case("transformer_xl.score.mem0.tq5.bidirectional", {}, _xl_inputs(5, 5, 6, 8),
             "no memory, every pair (XLNet bi): negative distances j > i included"),
        Case("transformer_xl.score.clamp_len2", {"clamp_len": 2}, _xl_inputs(3, 7, 4, 6),
             "clamp_len = 2 clips distances to [-2, 2]", kind="edge"),
        Case("transformer_xl.score.cache.tq1.tk9", {}, _xl_inputs(1, 9, 4, 4),
             "decoding: one query at position 8 over 9 keys", kind="edge"),
        Case("transformer_xl.score.offset_queries", {}, _xl_inputs(2, 8, 4, 6, q_positions=_pos(2, 5)),
             "explicit query positions 2 and 5 among keys 0..7"),
        Case("transformer_xl.score.long_distance", {},
             lambda rng: {**_xl_inputs(2, 3, 4, 8)(rng), "q_positions": _pos(3000, 3001),
                          "k_positions": _pos(0, 3000, 3001)},
             "distances up to 3001: the sinusoid's phase enters the error scale", kind="long_position"),
        *(Case(f"transformer_xl.score.error.{name}", {}, {**base, **change}, f"error: {why}", kind="error",
               error=cat) for name, change, cat, why in errors),
    )


XL_SCORE = OpRecord(
    name="transformer_xl.score", family="relative", function=xl.xl_score, intermediates="angles",
    inputs=("q", "k", "u", "v", "w_r", "q_positions", "k_positions"),
    outputs=(Output("score", "float64", "reduction", _xl_score_scale, _xl_score_input_scale),),
    params=(Param("base", "float", 10000.0, doc="sinusoid base"),
            Param("clamp_len", "int", -1, doc="clip distances to +/-clamp_len when > 0")),
    summary="(q_i + u) . k_j + (q_i + v) . W_R^T R_{p_i - p_j} by direct indexing",
    citation=XL_CITATION, cases=_xl_score_cases(), position_inputs=("q_positions", "k_positions"),
    value_inputs=("q", "k", "u", "v", "w_r"),
)


VARIANT = Param(
    "variant", "str", "transformer_xl", xl.VARIANTS,
    users={"transformer_xl": "kimiyoung/transformer-xl _rel_shift; HF TransfoXL",
           "xlnet": "zihangdai/xlnet rel_shift; HF XLNet"},
    doc="which pad-and-reshape shift",
)


def _shift_case(name: str, variant: str, tq: int, tk: int, rows: int, comment: str, kind: Any = "normal") -> Case:
    return Case(f"transformer_xl.rel_shift.{name}", {"variant": variant, "k_len": tk},
                lambda rng: {"x": rng.normal(size=(tq, rows))}, comment, kind=kind)


REL_SHIFT = OpRecord(
    name="transformer_xl.rel_shift", family="relative", function=xl.rel_shift,
    inputs=("x",), outputs=(Output("shifted", "float64", "ulp"), Output("valid", "int64", "exact")),
    params=(VARIANT, Param("k_len", "int", doc="key length Tk >= Tq")),
    summary="the Transformer-XL / XLNet shift of BD rows, and where it equals direct indexing",
    citation=XL_CITATION,
    cases=(
        _shift_case("transformer_xl.mem2.tq3.tk5", "transformer_xl", 3, 5, 5,
                    "XL shift with memory 2: valid for j <= 2 + i, zeros and wrapped rows above"),
        _shift_case("transformer_xl.mem0.tq4", "transformer_xl", 4, 4, 4,
                    "XL shift without memory: the upper triangle is not direct (transformer-xl#8)", kind="edge"),
        _shift_case("xlnet.bi.tq3.tk5", "xlnet", 3, 5, 8, "XLNet shift, attn_type bi (R = Tk + Tq): valid everywhere"),
        _shift_case("xlnet.uni.tq3.tk5", "xlnet", 3, 5, 6, "XLNet shift, attn_type uni (R = Tk + 1): j <= m + i"),
        Case("transformer_xl.rel_shift.error.xl_rows", {"variant": "transformer_xl", "k_len": 5},
             {"x": np.zeros((3, 8))}, "error: the XL shift needs R = Tk rows", kind="error", error="invalid_shape"),
        Case("transformer_xl.rel_shift.error.xlnet_rows", {"variant": "xlnet", "k_len": 5},
             {"x": np.zeros((3, 5))}, "error: the XLNet shift needs R >= Tk + 1 rows", kind="error",
             error="invalid_shape"),
        Case("transformer_xl.rel_shift.error.negative_memory", {"variant": "transformer_xl", "k_len": 2},
             {"x": np.zeros((3, 2))}, "error: Tk < Tq", kind="error", error="invalid_argument"),
        Case("transformer_xl.rel_shift.error.x_1d", {"variant": "xlnet", "k_len": 2}, {"x": np.zeros(4)},
             "error: x must be (Tq, R)", kind="error", error="invalid_shape"),
    ),
    value_inputs=("x",),
)

RECORDS = (XL_SCORE, REL_SHIFT)
