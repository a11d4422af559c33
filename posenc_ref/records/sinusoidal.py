"""Registry records of the 1-D sinusoidal ops (:mod:`posenc_ref.sinusoidal`)."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from posenc_ref import sinusoidal as sn
from posenc_ref.errors import ErrorCategory
from posenc_ref.opspec import Case, OpRecord, Output, Param, error_cases
from posenc_ref.scales.sinusoidal import _fairseq_phase, _table_phase

CITATION = "Vaswani et al. 2017, Attention Is All You Need, arXiv:1706.03762, section 3.5"

LADDER = Param(
    "ladder", "str", "paper", sn.LADDERS,
    users={"paper": "Vaswani 2017; HF DistilBERT; HF Marian; Transformer-XL R",
           "t2t": "tensor2tensor; fairseq; HF M2M100/FSMT/XGLM; Whisper; marian-nmt"},
    doc="frequency ladder: exponent 2k/d (paper) or k/max(n-1,1) (t2t)",
)
LAYOUT = Param(
    "layout", "str", "interleaved", sn.LAYOUTS,
    users={"interleaved": "Vaswani 2017; HF DistilBERT",
           "concat_sin_cos": "tensor2tensor; fairseq; Whisper; HF Marian",
           "concat_cos_sin": "DiT; diffusers flip_sin_to_cos=True"},
    doc="channel layout of the sines and cosines",
)
ODD_WIDTH = Param(
    "odd_width", "str", "error", sn.ODD_WIDTHS,
    users={"error": "Whisper; MAE; big_vision", "zero_pad_last": "tensor2tensor; fairseq; diffusers",
           "sin_gets_extra": "HF DistilBERT; HF Marian"},
    doc="what an odd dim means",
)
BASE = Param("base", "float", 10000.0, doc="base of the geometric frequency ladder")


def _positions(*values: int) -> dict[str, NDArray[np.int64]]:
    return {"positions": np.array(values, dtype=np.int64)}


_RANGE16 = {"positions": np.arange(16, dtype=np.int64)}
_LONG = {"positions": np.array([0, 1, 4095, 8191, 10**4, 131071, 10**5, 10**6], dtype=np.int64)}


def _table_cases() -> tuple[Case, ...]:
    cases = [
        Case("sinusoidal.table.position0.d8", {"dim": 8}, _positions(0),
             "position 0 is [0, 1, 0, 1, ...] in the interleaved layout", kind="edge", flags=("KnownAnswer",)),
        Case("sinusoidal.table.d6.position1.known_answer", {"dim": 6}, _positions(1),
             "the paper row at d=6, p=1 quoted in the reference notes", flags=("KnownAnswer",)),
    ]
    for ladder in sn.LADDERS:
        for layout in sn.LAYOUTS:
            cases.append(Case(
                f"sinusoidal.table.{ladder}.{layout}.d16.p0-15", {"dim": 16, "ladder": ladder, "layout": layout},
                _RANGE16, f"ladder={ladder} with layout={layout}: every pair is distinguishable",
            ))
    for ladder in sn.LADDERS:
        cases.append(Case(
            f"sinusoidal.table.{ladder}.long_positions.d64", {"dim": 64, "ladder": ladder}, _LONG,
            "positions up to 10^6: the phase-aware tolerance at long positions",
            kind="long_position", flags=("LongPosition",),
        ))
    for layout in ("concat_sin_cos", "concat_cos_sin"):
        cases.append(Case(
            f"sinusoidal.table.{layout}.long_positions.d32", {"dim": 32, "layout": layout}, _LONG,
            f"layout={layout} at positions up to 10^6", kind="long_position", flags=("LongPosition",)))
    for policy in ("zero_pad_last", "sin_gets_extra"):
        cases.append(Case(
            f"sinusoidal.table.odd_width.{policy}.long_positions.d9",
            {"dim": 9, "ladder": "t2t" if policy == "zero_pad_last" else "paper", "odd_width": policy}, _LONG,
            f"odd width d=9 under odd_width={policy} at positions up to 10^6", kind="long_position",
            flags=("LongPosition", "OddWidth")))
    for layout in sn.LAYOUTS:
        for policy in ("zero_pad_last", "sin_gets_extra"):
            cases.append(Case(
                f"sinusoidal.table.odd_width.{policy}.{layout}.d7",
                {"dim": 7, "ladder": "t2t" if policy == "zero_pad_last" else "paper", "layout": layout,
                 "odd_width": policy},
                {"positions": np.arange(5, dtype=np.int64)},
                f"odd width d=7 under odd_width={policy} in layout={layout}", kind="edge", flags=("OddWidth",),
            ))
    cases += [
        Case("sinusoidal.table.t2t.d2.guard", {"dim": 2, "ladder": "t2t"}, _positions(0, 1, 2, 3),
             "t2t ladder with one frequency: tensor2tensor's max(n-1, 1) guard gives w=1", kind="edge"),
        Case("sinusoidal.table.position_offset3.t2t.concat",
             {"dim": 12, "ladder": "t2t", "layout": "concat_sin_cos", "position_offset": 3},
             {"positions": np.arange(6, dtype=np.int64)},
             "marian-nmt start=3: the offset is added to every position"),
        Case("sinusoidal.table.base500000.scale0.5", {"dim": 16, "base": 500000.0, "scale": 0.5},
             lambda rng: {"positions": rng.integers(0, 5000, size=(2, 3))},
             "a non-default base and a scale factor; 2-D positions keep their shape"),
        Case("sinusoidal.table.whole_float_positions", {"dim": 8},
             {"positions": np.array([0.0, 2.0, 7.0])},
             "whole-number float positions are the integers they equal", kind="edge"),
    ]
    errors: list[tuple[str, dict[str, Any], dict[str, Any], ErrorCategory, str]] = [
        ("odd_dim_error_policy", {"dim": 7}, _positions(0), "invalid_argument", "odd width under odd_width='error'"),
        ("non_integer_position", {"dim": 8}, {"positions": np.array([0.0, 2.5])}, "invalid_argument",
         "a fractional position"),
        ("nan_position", {"dim": 8}, {"positions": np.array([1.0, np.nan])}, "invalid_argument",
         "a non-finite position"),
        ("negative_position", {"dim": 8}, _positions(3, -1), "invalid_argument", "a negative position"),
        ("base_zero", {"dim": 8, "base": 0.0}, _positions(1), "invalid_argument", "base <= 0"),
        ("base_negative", {"dim": 8, "base": -10.0}, _positions(1), "invalid_argument", "base <= 0"),
        ("unknown_ladder", {"dim": 8, "ladder": "geometric"}, _positions(1), "invalid_argument",
         "an unknown ladder (the message lists the valid ones)"),
        ("unknown_layout", {"dim": 8, "layout": "blocked"}, _positions(1), "invalid_argument", "an unknown layout"),
        ("unknown_odd_width", {"dim": 7, "odd_width": "truncate"}, _positions(1), "invalid_argument",
         "an unknown odd-width policy"),
        ("dim_zero", {"dim": 0}, _positions(1), "invalid_argument", "dim < 1"),
        ("empty_positions", {"dim": 8}, {"positions": np.zeros((0,), dtype=np.int64)}, "invalid_shape",
         "empty positions"),
        ("offset_makes_negative", {"dim": 8, "position_offset": -2}, _positions(1), "invalid_argument",
         "positions + position_offset below 0"),
    ]
    cases += error_cases("sinusoidal.table", errors)
    return tuple(cases)


TABLE = OpRecord(
    name="sinusoidal.table",
    family="absolute",
    function=sn.sinusoidal_table,
    inputs=("positions",),
    outputs=(Output("table", "float64", "phase", _table_phase),),
    params=(
        Param("dim", "int", doc="encoded width d"),
        BASE, LADDER, LAYOUT, ODD_WIDTH,
        Param("position_offset", "int", 0, doc="added to every position first (marian-nmt start, t2t start_index)"),
        Param("scale", "float", 1.0, doc="multiplies the table"),
    ),
    summary="sin/cos table rows for explicit integer positions",
    citation=CITATION,
    cases=_table_cases(),
    position_inputs=("positions",),
)


def _tokens(*rows: list[int]) -> dict[str, NDArray[np.int64]]:
    return {"tokens": np.array(rows, dtype=np.int64)}


_LEFT_PADDED = _tokens([1, 1, 1, 7, 8, 9], [5, 6, 7, 8, 9, 10], [1, 4, 4, 4, 4, 4])

FAIRSEQ = OpRecord(
    name="sinusoidal.fairseq",
    family="absolute",
    function=sn.fairseq_sinusoidal,
    inputs=("tokens",),
    outputs=(Output("positions", "int64", "exact"), Output("embedding", "float64", "phase", _fairseq_phase)),
    params=(
        Param("dim", "int", doc="width, >= 4"),
        Param("padding_idx", "int", doc="padding token id and zero row", suspects=(0, 1)),
        Param("past_length", "int", 0, doc="tokens already decoded (incremental step when > 0)"),
        BASE,
        Param("cache_rule", "str", "fairseq", ("fairseq", "m2m100"),
              users={"fairseq": "fairseq SinusoidalPositionalEmbedding incremental_state (one token per step)",
                     "m2m100": "transformers M2M100 / NLLB-MoE create_position_ids_from_input_ids "
                               "(any chunk after past_key_values_length)"},
              doc="rows of the tokens after a cache"),
    ),
    summary="fairseq padding-aware sinusoidal embedding (rows padding_idx + k, zero padding row)",
    citation="fairseq SinusoidalPositionalEmbedding / utils.make_positions; HF M2M100",
    cases=(
        Case("sinusoidal.fairseq.left_padded.d8", {"dim": 8, "padding_idx": 1}, _LEFT_PADDED,
             "left-padded batch: the first real token reads row padding_idx + 1, pads read the zero row"),
        Case("sinusoidal.fairseq.right_padded.d10", {"dim": 10, "padding_idx": 1},
             _tokens([5, 6, 7, 1, 1], [5, 6, 7, 8, 9]), "right padding: positions run 2, 3, 4 then the zero row"),
        Case("sinusoidal.fairseq.odd_dim9.pad0", {"dim": 9, "padding_idx": 0},
             _tokens([0, 3, 3, 3], [3, 3, 0, 3]), "odd width gets a zero last column; pad id 0 in the middle",
             kind="edge", flags=("OddWidth",)),
        Case("sinusoidal.fairseq.incremental_step", {"dim": 8, "padding_idx": 1, "past_length": 5},
             _tokens([9], [4]), "an incremental step reads row padding_idx + past_length + 1 for every row",
             kind="edge"),
        Case("sinusoidal.fairseq.m2m100.chunk_after_cache", {"dim": 8, "padding_idx": 1, "past_length": 5,
                                                             "cache_rule": "m2m100"},
             _tokens([7, 8, 9], [1, 8, 9]), "a 3-token chunk after 5 cached: rows 7, 8, 9; a left pad keeps row 1 "
             "and the count restarts in the chunk (8, 9 read rows 7, 8)"),
        Case("sinusoidal.fairseq.m2m100.long_cache", {"dim": 16, "padding_idx": 1, "past_length": 4094,
                                                      "cache_rule": "m2m100"},
             _tokens([5, 6], [1, 6]), "two tokens after a cache of 4094: rows to 4097", kind="long_position"),
        Case("sinusoidal.fairseq.m2m100.full_pass", {"dim": 8, "padding_idx": 1, "cache_rule": "m2m100"},
             _LEFT_PADDED, "past_length 0: the two rules agree on a full pass"),
        Case("sinusoidal.fairseq.error.m2m100_negative_past", {"dim": 8, "padding_idx": 1, "past_length": -1,
                                                                "cache_rule": "m2m100"}, _tokens([5, 6]),
             "error: past_length < 0 under the M2M100 rule", kind="error", error="invalid_argument"),
        Case("sinusoidal.fairseq.error.unknown_cache_rule", {"dim": 8, "padding_idx": 1, "cache_rule": "marian"},
             _tokens([5, 6]), "error: an unknown cache_rule", kind="error", error="invalid_argument"),
        Case("sinusoidal.fairseq.error.dim2", {"dim": 2, "padding_idx": 1}, _tokens([5, 6]),
             "error: dim < 4 (fairseq divides by dim//2 - 1)", kind="error", error="invalid_argument"),
        Case("sinusoidal.fairseq.error.rank1_tokens", {"dim": 8, "padding_idx": 1},
             {"tokens": np.array([5, 6, 7], dtype=np.int64)}, "error: tokens must be (B, T)",
             kind="error", error="invalid_shape"),
        Case("sinusoidal.fairseq.error.incremental_two_tokens", {"dim": 8, "padding_idx": 1, "past_length": 3},
             _tokens([5, 6]), "error: an incremental step takes one token per row", kind="error",
             error="invalid_argument"),
    ),
    position_inputs=(),
)

RECORDS = (TABLE, FAIRSEQ)
