"""Registry records of the ALiBi ops (:mod:`posenc_ref.alibi`).

Slopes and biases use the ``phase`` tolerance class with the phase ``theta = |value| * (1 + x_h
+ k_h)`` (``x_h = -log2 m_h``, ``k_h`` the ladder power of :func:`~posenc_ref.alibi.alibi_slope_ladder`):
a float32 implementation that rounds the exponent, or raises a rounded base to the power
``k_h`` as BLOOM does, is off by about that many roundings of the value. Wrong slope rules,
signs and forms are off by whole percents and fail.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from posenc_ref import alibi as al
from posenc_ref.errors import ErrorCategory
from posenc_ref.opspec import Case, OpRecord, Output, Param, error_cases
from posenc_ref.scales.alibi import _bias_phase, _slopes_phase

CITATION = "Press, Smith, Lewis 2022, Train Short, Test Long (ALiBi), arXiv:2108.12409, section 3; get_slopes"

NUM_HEADS = Param("num_heads", "int", doc="number of heads H >= 1")
SLOPE_RULE = Param(
    "slope_rule", "str", "press", al.SLOPE_RULES,
    users={"press": "ofirpress get_slopes; HF BLOOM/Falcon/MPT 5.24; NeMo; Megatron-DeepSpeed; flash-attn callers",
           "geometric": "paper text read literally; MLX before mlx#343; Baichuan2-13B reading (Baichuan2#225)"},
    doc="slopes for non-power-of-two H",
)
BIAS_MAX = Param("bias_max", "float", 8.0, doc="b in the exponents (paper 8; MPT alibi_bias_max)")
FORM = Param(
    "form", "str", "relative_causal", al.FORMS,
    users={"relative_causal": "paper -m(i-j); x-transformers; NeMo causal",
           "key_only": "ofirpress fairseq fork +m*j; BLOOM/Falcon (mask positions); flash-attn causal",
           "symmetric": "llm-foundry full=True; NeMo bidirectional; data2vec 2.0",
           "bottom_right": "flash-attn non-causal -m|i + Tk - Tq - j|"},
    doc="which of the shift-equivalent (or encoder) bias forms",
)


_HEAD_COUNTS = (1, 2, 3, 5, 6, 8, 12, 40, 112)


def _slope_cases() -> tuple[Case, ...]:
    cases = [Case(f"alibi.slopes.press.h{h}", {"num_heads": h},
                  {}, f"authors' rule at H={h}" + ("" if h & (h - 1) == 0 else " (not a power of two)"),
                  flags=("KnownAnswer",) if h in (3, 5, 6, 8, 12) else ())
             for h in _HEAD_COUNTS]
    cases += [Case(f"alibi.slopes.geometric.h{h}", {"num_heads": h, "slope_rule": "geometric"}, {},
                   f"paper-literal geometric rule at H={h}: differs from the authors' rule") for h in (3, 12, 40)]
    cases += [
        Case("alibi.slopes.geometric.h16.equals_press", {"num_heads": 16, "slope_rule": "geometric"}, {},
             "for H a power of two both rules give 2^(-8h/H)", kind="edge"),
        Case("alibi.slopes.press.h12.bias_max16", {"num_heads": 12, "bias_max": 16.0}, {},
             "MPT alibi_bias_max=16 with a non-power-of-two head count"),
        Case("alibi.slopes.press.h7.bias_max6", {"num_heads": 7, "bias_max": 6.0}, {},
             "a bias_max that is not a power of two: non-dyadic exponents", kind="edge"),
    ]
    errors: list[tuple[str, dict[str, Any], ErrorCategory, str]] = [
        ("num_heads0", {"num_heads": 0}, "invalid_argument", "num_heads < 1"),
        ("num_heads_negative", {"num_heads": -4}, "invalid_argument", "num_heads < 1"),
        ("bias_max0", {"num_heads": 8, "bias_max": 0.0}, "invalid_argument", "bias_max <= 0"),
        ("unknown_rule", {"num_heads": 8, "slope_rule": "monotone"}, "invalid_argument", "an unknown slope rule"),
    ]
    cases += [Case(f"alibi.slopes.error.{name}", params, {}, f"error: {why}", kind="error", error=category)
              for name, params, category, why in errors]
    return tuple(cases)


SLOPES = OpRecord(
    name="alibi.slopes",
    family="bias",
    function=al.alibi_slopes,
    inputs=(),
    outputs=(Output("slopes", "float64", "phase", _slopes_phase),),
    params=(NUM_HEADS, SLOPE_RULE, BIAS_MAX),
    summary="ALiBi head slopes m_h = 2^-x_h (authors' rule, geometric rule, MPT bias_max)",
    citation=CITATION,
    cases=_slope_cases(),
)


def _qk(query: Any, key: Any) -> dict[str, NDArray[np.int64]]:
    return {"query_positions": np.asarray(query, dtype=np.int64), "key_positions": np.asarray(key, dtype=np.int64)}


_SQUARE = _qk(np.arange(6), np.arange(6))


def _bias_cases() -> tuple[Case, ...]:
    cases = [Case(f"alibi.bias.{form}.h8.t6", {"num_heads": 8, "form": form}, _SQUARE,
                  f"form={form} on a 6x6 self-attention block") for form in al.FORMS]
    cases += [
        Case("alibi.bias.relative_causal.h12.decode_offset", {"num_heads": 12}, _qk([9], np.arange(10)),
             "one decoding step with a cache of 9: the query sits at position 9, Tq=1 != Tk=10",
             flags=("Decoding",)),
        Case("alibi.bias.key_only.h12.decode_offset", {"num_heads": 12, "form": "key_only"}, _qk([9], np.arange(10)),
             "key-only form at a decoding step: +m*j, whatever the query position", flags=("Decoding",)),
        Case("alibi.bias.bottom_right.h6.cross_tq3_tk7", {"num_heads": 6, "form": "bottom_right"},
             _qk(np.arange(3), np.arange(7)), "flash-attn bottom-right alignment with Tq=3 < Tk=7",
             flags=("CrossAttention",)),
        Case("alibi.bias.symmetric.h5.cross_tq4_tk9", {"num_heads": 5, "form": "symmetric"},
             _qk([2, 3, 4, 5], np.arange(9)), "symmetric encoder form, query positions offset by 2, Tq != Tk",
             flags=("CrossAttention",)),
        Case("alibi.bias.relative_causal.h40.baichuan", {"num_heads": 40}, _qk(np.arange(5), np.arange(5)),
             "Baichuan2-13B head count (40) with the authors' slopes"),
        Case("alibi.bias.relative_causal.h3.geometric", {"num_heads": 3, "slope_rule": "geometric"},
             _qk(np.arange(4), np.arange(4)), "geometric slopes reach the bias too"),
        Case("alibi.bias.key_only.h4.batched", {"num_heads": 4, "form": "key_only"},
             _qk([[0, 1, 2], [0, 0, 1]], [[0, 1, 2], [0, 0, 1]]),
             "batched positions (B=2) from a left-padded mask: output (B, H, Tq, Tk)"),
        Case("alibi.bias.relative_causal.h4.long", {"num_heads": 4}, _qk([4095, 2048], [0, 1, 1000, 2047, 4095]),
             "positions up to 4095: bias magnitude up to 2047.5", kind="long_position", flags=("LongPosition",)),
        *(Case(f"alibi.bias.{form}.h4.long", {"num_heads": 4, "form": form},
               _qk([4095, 8191], [0, 4095, 8000, 8191]),
               f"form={form} at positions to 8191 (Tq=2 < Tk=4): biases up to 2048, inside float16's range",
               kind="long_position", flags=("LongPosition",))
          for form in ("key_only", "symmetric", "bottom_right")),
        Case("alibi.bias.relative_causal.h6.geometric.long", {"num_heads": 6, "slope_rule": "geometric"},
             _qk([8191, 131071], [0, 8191, 131071]), "geometric slopes (6 heads, not a power of two) to 131071",
             kind="long_position", flags=("LongPosition",)),
    ]
    errors: list[tuple[str, dict[str, Any], dict[str, Any], ErrorCategory, str]] = [
        ("num_heads0", {"num_heads": 0}, _SQUARE, "invalid_argument", "num_heads < 1"),
        ("unknown_form", {"num_heads": 4, "form": "causal"}, _SQUARE, "invalid_argument", "an unknown form"),
        ("negative_position", {"num_heads": 4}, _qk([0, -1], [0, 1]), "invalid_argument", "a negative position"),
        ("batch_mismatch", {"num_heads": 4}, _qk([[0, 1]], [[0, 1], [0, 1]]), "invalid_shape",
         "query and key positions whose leading (batch) shapes differ"),
        ("empty_keys", {"num_heads": 4}, _qk([0], np.zeros(0)), "invalid_shape", "no keys"),
    ]
    cases += error_cases("alibi.bias", errors)
    return tuple(cases)


BIAS = OpRecord(
    name="alibi.bias",
    family="bias",
    function=al.alibi_bias,
    inputs=("query_positions", "key_positions"),
    outputs=(Output("bias", "float64", "phase", _bias_phase),),
    params=(NUM_HEADS, FORM, SLOPE_RULE, BIAS_MAX),
    summary="ALiBi bias (..., H, Tq, Tk) for explicit query and key positions in four forms",
    citation=CITATION,
    cases=_bias_cases(),
    position_inputs=("query_positions", "key_positions"),
)


def _mask(*rows: list[int]) -> dict[str, NDArray[np.int64]]:
    return {"attention_mask": np.array(rows, dtype=np.int64)}


MASK_POSITIONS = OpRecord(
    name="alibi.mask_positions",
    family="bias",
    function=al.alibi_mask_positions,
    inputs=("attention_mask",),
    outputs=(Output("positions", "int64", "exact"),),
    params=(),
    summary="BLOOM/Falcon key positions (cumsum(mask) - 1) * mask",
    citation="HF transformers 5.24 modeling_bloom.build_alibi_tensor; transformers#17202",
    cases=(
        Case("alibi.mask_positions.left_padded", {}, _mask([0, 0, 1, 1, 1], [1, 1, 1, 1, 1], [0, 1, 1, 1, 1]),
             "left padding: the first real token is position 0, pads read 0"),
        Case("alibi.mask_positions.right_padded", {}, _mask([1, 1, 1, 0, 0], [1, 1, 1, 1, 0]),
             "right padding: positions run 0, 1, 2 then pads read 0"),
        Case("alibi.mask_positions.all_padding_row", {}, _mask([0, 0, 0], [1, 0, 1]),
             "a row of padding only, and a hole in the middle", kind="edge"),
        Case("alibi.mask_positions.error.non_binary", {}, _mask([1, 2, 1]), "error: mask values other than 0/1",
             kind="error", error="invalid_argument"),
        Case("alibi.mask_positions.error.rank1", {}, {"attention_mask": np.array([1, 1, 0], dtype=np.int64)},
             "error: a mask that is not (B, T)", kind="error", error="invalid_shape"),
    ),
)

RECORDS = (SLOPES, BIAS, MASK_POSITIONS)
