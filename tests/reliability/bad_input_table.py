"""The bad-input table: invalid calls of every public reference function, as data.

Each function has one valid *base call* (:data:`BASES`: its positional argument names and a
value for every argument). Each row of :data:`ROWS` replaces one argument of a base call by an
invalid value and says what must happen:

``(function, argument, bad value, exception, category, words)``

``exception`` is ``SpecError`` or ``TypeError``; ``category`` is the SpecError category (``None``
for a TypeError); ``words`` are the fragments the message must contain besides the function
name: the argument and the value (for a wrong kind of object, the type's name). A row whose
argument is ``"*"`` gives the whole call itself as ``(args, kwargs)``.

``tests/reliability/test_bad_input.py`` runs every row.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from posenc_ref import (
    alibi,
    attention,
    attention_pipeline,
    attention_positional,
    checks,
    deberta,
    grid2d,
    learned,
    resample,
    rope,
    rope_scaling,
    rope_variants,
    shaw,
    sinusoidal,
    t5,
    transformer_xl,
)
from posenc_ref.errors import SpecError

IA, OR, IS = "invalid_argument", "out_of_range", "invalid_shape"
BIG = 2**60
NAN, INF = float("nan"), float("inf")
U63 = np.array([2**63], dtype=np.uint64)
_Q = np.ones((1, 1, 2, 4))
_X = np.zeros((1, 1, 2, 4))

Base = tuple[Callable[..., Any], tuple[str, ...], dict[str, Any]]
BASES: dict[str, Base] = {
    # sinusoidal
    "sinusoidal_frequencies": (sinusoidal.sinusoidal_frequencies, (), {"dim": 4}),
    "sinusoidal_angles": (sinusoidal.sinusoidal_angles, ("positions",), {"positions": [0, 1], "dim": 4}),
    "sinusoidal_table": (sinusoidal.sinusoidal_table, ("positions",), {"positions": [0, 1], "dim": 4}),
    "fairseq_positions": (sinusoidal.fairseq_positions, ("tokens",), {"tokens": [[1, 5]], "padding_idx": 1}),
    "fairseq_sinusoidal": (sinusoidal.fairseq_sinusoidal, ("tokens",), {"tokens": [[1, 5]], "dim": 4,
                                                                        "padding_idx": 1}),
    # grid2d
    "grid_coords": (grid2d.grid_coords, ("height", "width"), {"height": 2, "width": 3}),
    "grid_sincos_2d": (grid2d.grid_sincos_2d, ("ys", "xs"), {"ys": [0, 1], "xs": [0, 1], "dim": 4}),
    "grid_sincos_2d_angles": (grid2d.grid_sincos_2d_angles, ("ys", "xs"), {"ys": [0, 1], "xs": [0, 1], "dim": 4}),
    # learned
    "learned_init": (learned.learned_init, ("num_positions", "dim"), {"num_positions": 4, "dim": 3, "seed": 0}),
    "learned_lookup": (learned.learned_lookup, ("table", "positions"), {"table": np.zeros((3, 2)),
                                                                         "positions": [0, 1]}),
    # alibi
    "alibi_slope_ladder": (alibi.alibi_slope_ladder, (), {"num_heads": 4}),
    "alibi_slopes": (alibi.alibi_slopes, (), {"num_heads": 4}),
    "alibi_bias": (alibi.alibi_bias, ("query_positions", "key_positions"),
                   {"query_positions": [0, 1], "key_positions": [0, 1], "num_heads": 2}),
    "alibi_mask_positions": (alibi.alibi_mask_positions, ("attention_mask",), {"attention_mask": [[0, 1, 1]]}),
    # t5
    "log_ladder": (t5.log_ladder, ("n", "exact", "limit", "steps"),
                   {"n": [16], "exact": 8, "limit": 128, "steps": 8, "rounding": "floor"}),
    "t5_bucket": (t5.t5_bucket, ("relative_positions",), {"relative_positions": [-3, 0, 5]}),
    "t5_bias": (t5.t5_bias, ("query_positions", "key_positions", "table"),
                {"query_positions": [0, 1], "key_positions": [0, 1], "table": np.zeros((32, 1))}),
    # deberta
    "deberta_bucket": (deberta.deberta_bucket, ("relative_positions",), {"relative_positions": [-300, 0, 5]}),
    "deberta_index": (deberta.deberta_index, ("query_positions", "key_positions"),
                      {"query_positions": [0], "key_positions": [0, 1]}),
    "deberta_scores": (deberta.deberta_scores,
                       ("query_positions", "key_positions", "q", "k", "pos_key", "pos_query"),
                       {"query_positions": [0], "key_positions": [0, 1], "q": np.ones((1, 1, 3)),
                        "k": np.ones((1, 2, 3)), "pos_key": np.zeros((1, 8, 3)), "pos_query": np.zeros((1, 8, 3)),
                        "position_buckets": 4, "max_relative_positions": 8}),
    # shaw
    "check_self_attention_positions": (shaw.check_self_attention_positions, ("func", "q_positions", "k_positions"),
                                       {"func": "check_self_attention_positions", "q_positions": [1],
                                        "k_positions": [0, 1]}),
    "shaw_relative_index": (shaw.shaw_relative_index, ("q_positions", "k_positions"),
                            {"q_positions": [0, 1], "k_positions": [0, 1], "max_relative_position": 1}),
    "shaw_logits": (shaw.shaw_logits, ("q", "k", "rel_keys", "q_positions", "k_positions"),
                    {"q": np.ones((2, 3)), "k": np.ones((2, 3)), "rel_keys": np.zeros((3, 3)), "q_positions": [0, 1],
                     "k_positions": [0, 1], "max_relative_position": 1}),
    "shaw_output": (shaw.shaw_output, ("weights", "v", "rel_values", "q_positions", "k_positions"),
                    {"weights": np.full((2, 2), 0.5), "v": np.ones((2, 3)), "rel_values": np.zeros((3, 3)),
                     "q_positions": [0, 1], "k_positions": [0, 1], "max_relative_position": 1}),
    # transformer_xl
    "xl_relative_embedding": (transformer_xl.xl_relative_embedding, ("distances",), {"distances": [-1, 0, 2],
                                                                                     "dim": 4}),
    "shift_row_distances": (transformer_xl.shift_row_distances, ("q_len", "k_len"),
                            {"q_len": 2, "k_len": 4, "variant": "xlnet"}),
    "rel_shift_transformer_xl": (transformer_xl.rel_shift_transformer_xl, ("x",), {"x": np.zeros((2, 3))}),
    "rel_shift_xlnet": (transformer_xl.rel_shift_xlnet, ("x", "k_len"), {"x": np.zeros((2, 4)), "k_len": 2}),
    "direct_index": (transformer_xl.direct_index, ("x", "row_distances", "q_positions", "k_positions"),
                     {"x": np.zeros((1, 4)), "row_distances": [3, 2, 1, 0], "q_positions": [3],
                      "k_positions": [0, 1, 2, 3]}),
    "rel_shift": (transformer_xl.rel_shift, ("x",), {"x": np.zeros((2, 3)), "variant": "transformer_xl",
                                                     "k_len": 3}),
    "xl_score": (transformer_xl.xl_score, ("q", "k", "u", "v", "w_r", "q_positions", "k_positions"),
                 {"q": np.ones((1, 2)), "k": np.ones((2, 2)), "u": np.zeros(2), "v": np.zeros(2),
                  "w_r": np.ones((2, 2)), "q_positions": [1], "k_positions": [0, 1]}),
    # resample
    "cubic_kernel": (resample.cubic_kernel, ("x",), {"x": [0.5]}),
    "output_size_and_scale": (resample.output_size_and_scale, (), {"in_size": 4, "new_size": 8}),
    "resample_weights": (resample.resample_weights, (), {"in_size": 4, "new_size": 8}),
    "tap_counts": (resample.tap_counts, (), {"in_size": 4, "new_size": 8}),
    "resample_table_1d": (resample.resample_table_1d, ("table",), {"table": np.zeros((5, 2)), "new_length": 6}),
    "resample_grid_2d": (resample.resample_grid_2d, ("table",),
                         {"table": np.zeros((7, 2)), "grid_height": 2, "grid_width": 3, "new_height": 3,
                          "new_width": 4}),
    # rope
    "rope_cos_sin": (rope.rope_cos_sin, ("positions", "inv_freq"), {"positions": [0, 1], "inv_freq": [1.0, 0.5]}),
    "rope_layout_permutation": (rope.rope_layout_permutation, ("rotary_dim",),
                                {"rotary_dim": 4, "from_layout": "half", "to_layout": "interleaved"}),
    "rope_apply": (rope.rope_apply, ("x", "positions"), {"x": _X, "positions": [0, 1]}),
    "rope_scores": (rope.rope_scores, ("q", "k", "q_positions", "k_positions"),
                    {"q": _Q, "k": _Q, "q_positions": [0, 1], "k_positions": [0, 1]}),
    "yarn_mscale": (rope_scaling.yarn_mscale, ("factor",), {"factor": 2.0}),
    "yarn_correction_range": (rope_scaling.yarn_correction_range, (),
                              {"dim": 8, "base": 10000.0, "original_max_position": 64}),
    "rope_inv_freq": (rope_scaling.rope_inv_freq, (), {"dim": 8}),
    "longrope_inv_freq": (rope_scaling.longrope_inv_freq, ("short_factor", "long_factor"),
                          {"short_factor": [1.0] * 4, "long_factor": [2.0] * 4, "dim": 8, "factor": 4.0,
                           "original_max_position": 64, "context_length": 128}),
    "rope_xpos": (rope_variants.rope_xpos, ("q", "k", "positions"), {"q": _Q, "k": _Q, "positions": [0, 1]}),
    "mrope_cos_sin": (rope_variants.mrope_cos_sin, ("positions", "mrope_section"),
                      {"positions": np.zeros((3, 2), dtype=np.int64), "mrope_section": [2, 1, 1], "dim": 8}),
    # attention
    "attention": (attention.attention, ("q", "k", "v"), {"q": _Q, "k": _Q, "v": _Q}),
    "attention_layer": (attention_pipeline.attention_layer, ("tokens", "embedding", "pe", "w_q", "w_k", "w_v", "w_o"),
                        {"tokens": [[0, 1]], "embedding": np.eye(3, 4), "pe": np.zeros((2, 4)), "w_q": np.eye(4),
                         "w_k": np.eye(4), "w_v": np.eye(4), "w_o": np.eye(4), "num_heads": 2}),
    "rope_qk": (attention_positional.rope_qk, (), {}),
    "shaw_terms": (attention_positional.shaw_terms, ("rel_keys", "rel_values"),
                   {"rel_keys": np.zeros((3, 2)), "rel_values": np.zeros((3, 2)), "max_relative_position": 1}),
    "xl_terms": (attention_positional.xl_terms, ("u", "v", "w_r"), {"u": np.zeros((1, 2)), "v": np.zeros((1, 2)),
                                                                   "w_r": np.ones((1, 2, 2))}),
    # checks
    "scale_check": (checks.scale_check, ("embeddings", "encodings"),
                    {"embeddings": [[1.0, 0.0]], "encodings": [[0.5, 0.0]]}),
    "extrapolation_check": (checks.extrapolation_check, ("encode",),
                            {"encode": lambda p: np.zeros((len(p), 2)), "trained_length": 4}),
    "order_check": (checks.order_check, ("tokens",), {"tokens": [[1.0, 0.0]] + [[0.0, 1.0]] * 4 + [[1.0, 0.0]]}),
}

Row = tuple[str, str, Any, type[Exception], "str | None", tuple[str, ...]]


def _int_rows(func: str, name: str, minimum: int, *, extra: tuple[str, ...] = ()) -> list[Row]:
    """The standard bad values of an integer parameter with a lower bound ``minimum``."""
    return [
        (func, name, minimum - 1, SpecError, IA, (name, str(minimum - 1), *extra)),
        (func, name, BIG, SpecError, IA, (name, str(BIG), "2**53")),
        (func, name, 2.5, TypeError, None, (name, "2.5")),
        (func, name, True, TypeError, None, (name, "bool")),
        (func, name, "4", TypeError, None, (name, "str")),
    ]


def _float_rows(func: str, name: str, *, positive: bool = True) -> list[Row]:
    """The standard bad values of a finite (and optionally positive) float parameter."""
    rows: list[Row] = [
        (func, name, NAN, SpecError, IA, (name, "nan")),
        (func, name, INF, SpecError, IA, (name, "inf")),
        (func, name, "x", TypeError, None, (name, "str")),
    ]
    if positive:
        rows.append((func, name, -1.0, SpecError, IA, (name, "-1.0")))
    return rows


def _choice_rows(func: str, name: str) -> list[Row]:
    return [
        (func, name, "bogus", SpecError, IA, (name, "'bogus'")),
        (func, name, 3, TypeError, None, (name, "int")),
    ]


def _position_rows(func: str, name: str, *, nonnegative: bool = True, shaped: bool = False) -> list[Row]:
    """Bad integer-position arrays; ``shaped`` skips those a shape check would see first."""
    rows: list[Row] = [
        (func, name, [1.5] * 2, SpecError, IA, (name, "1.5")),
        (func, name, [NAN] * 2, SpecError, IA, (name, "nan")),
        (func, name, [BIG] * 2, SpecError, IA, (name, str(BIG), "2**53")),
        (func, name, np.array([2**63] * 2, dtype=np.uint64), SpecError, IA, (name, str(2**63), "2**53")),
        (func, name, np.array([-2**63] * 2, dtype=np.int64), SpecError, IA, (name, str(-2**63), "2**53")),
        (func, name, "ab", TypeError, None, (name, "str")),
        (func, name, [True, False], TypeError, None, (name, "boolean")),
        (func, name, np.array([1 + 1j, 2]), TypeError, None, (name, "complex")),
    ]
    if nonnegative:
        rows.append((func, name, [-1] * 2, SpecError, IA, (name, "-1")))
    if not shaped:
        rows.append((func, name, [], SpecError, IS, (name, "(0,)")))
    return rows


def _array_rows(func: str, name: str, ndim: int) -> list[Row]:
    """Bad float arrays of rank ``ndim``."""
    good = np.ones((2,) * ndim)
    with_nan = good.copy()
    with_nan.flat[0] = NAN
    with_inf = good.copy()
    with_inf.flat[-1] = -INF
    return [
        (func, name, with_nan, SpecError, IA, (name, "nan")),
        (func, name, with_inf, SpecError, IA, (name, "inf")),
        (func, name, np.ones((2,) * (ndim + 1)), SpecError, IS, (name, "shape")),
        (func, name, "x", TypeError, None, (name, "str")),
        (func, name, good.astype(np.complex128), TypeError, None, (name, "complex")),
    ]


ROWS: list[Row] = [
    # --- sinusoidal ------------------------------------------------------------------------
    *_int_rows("sinusoidal_frequencies", "dim", 1),
    *_float_rows("sinusoidal_frequencies", "base"),
    *_choice_rows("sinusoidal_frequencies", "ladder"),
    *_choice_rows("sinusoidal_frequencies", "odd_width"),
    ("sinusoidal_frequencies", "dim", 5, SpecError, IA, ("dim", "5", "even")),
    ("sinusoidal_frequencies", "base", 0.0, SpecError, IA, ("base", "0.0")),
    *_position_rows("sinusoidal_table", "positions", nonnegative=False),
    *_int_rows("sinusoidal_table", "dim", 1),
    *_float_rows("sinusoidal_table", "base"),
    *_float_rows("sinusoidal_table", "scale", positive=False),
    *_choice_rows("sinusoidal_table", "layout"),
    ("sinusoidal_table", "position_offset", -5, SpecError, IA, ("position_offset", "-5")),
    ("sinusoidal_table", "position_offset", BIG, SpecError, IA, ("position_offset", str(BIG))),
    ("sinusoidal_table", "position_offset", 1.0, TypeError, None, ("position_offset", "1.0")),
    ("sinusoidal_table", "dim", 10**9, SpecError, IA, ("size guard", "1000000000")),
    ("sinusoidal_table", "*", (([10**9],), {"dim": 6, "ladder": "t2t", "base": 1e-300}), SpecError, IA,
     ("positions", "frequencies", "1e+300")),
    ("sinusoidal_table", "*", ((np.array([2**52]),), {"dim": 2, "position_offset": 2**52}), SpecError, IA,
     ("positions + position_offset", str(2**53))),
    *_position_rows("sinusoidal_angles", "positions", nonnegative=False),
    *_choice_rows("sinusoidal_angles", "odd_width"),
    ("sinusoidal_angles", "dim", 0, SpecError, IA, ("dim", "0")),
    *_position_rows("fairseq_positions", "tokens", shaped=True),
    *_int_rows("fairseq_positions", "padding_idx", 0),
    *_int_rows("fairseq_positions", "past_length", 0),
    ("fairseq_positions", "tokens", [1, 2], SpecError, IS, ("tokens", "(2,)")),
    ("fairseq_positions", "*", (([[1, 5]],), {"padding_idx": 2**53, "past_length": 2**53}), SpecError, IA,
     ("padding_idx + past_length", str(2**54 + 3))),
    *_int_rows("fairseq_sinusoidal", "dim", 4),
    *_int_rows("fairseq_sinusoidal", "padding_idx", 0),
    *_float_rows("fairseq_sinusoidal", "base"),
    ("fairseq_sinusoidal", "tokens", [[-1, 2]], SpecError, IA, ("tokens", "-1")),
    ("fairseq_sinusoidal", "past_length", -1, SpecError, IA, ("past_length", "-1")),
    # --- grid2d ----------------------------------------------------------------------------
    *_int_rows("grid_coords", "height", 1),
    *_int_rows("grid_coords", "width", 1),
    ("grid_coords", "origin", -1, SpecError, IA, ("origin", "-1")),
    ("grid_coords", "*", ((2**20, 2**20), {}), SpecError, IA, ("size guard", str(2**40))),
    *_position_rows("grid_sincos_2d", "ys"),
    *_position_rows("grid_sincos_2d", "xs"),
    *_int_rows("grid_sincos_2d", "dim", 4),
    ("grid_sincos_2d", "dim", 6, SpecError, IA, ("dim", "6", "multiple of 4")),
    *_float_rows("grid_sincos_2d", "base"),
    *_choice_rows("grid_sincos_2d", "ladder"),
    *_choice_rows("grid_sincos_2d", "axis_order"),
    *_choice_rows("grid_sincos_2d", "block_layout"),
    ("grid_sincos_2d", "xs", [0, 1, 2], SpecError, IS, ("xs", "(3,)")),
    ("grid_sincos_2d_angles", "base", NAN, SpecError, IA, ("base", "nan")),
    ("grid_sincos_2d_angles", "ys", [-2, 0], SpecError, IA, ("ys", "-2")),
    ("grid_sincos_2d_angles", "block_layout", "bogus", SpecError, IA, ("block_layout", "'bogus'")),
    # --- learned ---------------------------------------------------------------------------
    *_int_rows("learned_init", "num_positions", 1),
    *_int_rows("learned_init", "dim", 1),
    ("learned_init", "seed", -1, SpecError, IA, ("seed", "-1")),
    ("learned_init", "seed", 1.0, TypeError, None, ("seed", "1.0")),
    *_float_rows("learned_init", "std", positive=False),
    ("learned_init", "std", -0.5, SpecError, IA, ("std", "-0.5")),
    ("learned_init", "*", ((2**16, 2**16), {"seed": 0}), SpecError, IA, ("size guard", str(2**32))),
    *_array_rows("learned_lookup", "table", 2),
    *_position_rows("learned_lookup", "positions"),
    ("learned_lookup", "positions", [3], SpecError, OR, ("position 3", "3 rows")),
    ("learned_lookup", "offset", -1, SpecError, IA, ("offset", "-1")),
    ("learned_lookup", "offset", BIG, SpecError, IA, ("offset", str(BIG))),
    *_choice_rows("learned_lookup", "out_of_range"),
    # --- alibi -----------------------------------------------------------------------------
    *_int_rows("alibi_slope_ladder", "num_heads", 1),
    *_float_rows("alibi_slope_ladder", "bias_max"),
    *_choice_rows("alibi_slope_ladder", "slope_rule"),
    *_int_rows("alibi_slopes", "num_heads", 1),
    *_float_rows("alibi_slopes", "bias_max"),
    ("alibi_slopes", "bias_max", 1075.0, SpecError, IA, ("bias_max", "1075.0")),
    ("alibi_slopes", "slope_rule", "mono", SpecError, IA, ("slope_rule", "'mono'")),
    *_position_rows("alibi_bias", "query_positions"),
    *_position_rows("alibi_bias", "key_positions"),
    *_choice_rows("alibi_bias", "form"),
    ("alibi_bias", "num_heads", 0, SpecError, IA, ("num_heads", "0")),
    ("alibi_bias", "bias_max", 0.0, SpecError, IA, ("bias_max", "0.0")),
    ("alibi_bias", "key_positions", [[0, 1]], SpecError, IS, ("key_positions", "(1, 2)")),
    ("alibi_bias", "query_positions", 3, SpecError, IS, ("query_positions", "()")),
    ("alibi_mask_positions", "attention_mask", [[0, 2]], SpecError, IA, ("attention_mask", "2")),
    ("alibi_mask_positions", "attention_mask", [0, 1], SpecError, IS, ("attention_mask", "(2,)")),
    ("alibi_mask_positions", "attention_mask", [[0.5, 1]], SpecError, IA, ("attention_mask", "0.5")),
    ("alibi_mask_positions", "attention_mask", [[-1, 1]], SpecError, IA, ("attention_mask", "-1")),
    ("alibi_mask_positions", "attention_mask", "ab", TypeError, None, ("attention_mask", "str")),
    # --- t5 --------------------------------------------------------------------------------
    ("log_ladder", "n", [7], SpecError, IA, ("n", "7")),
    ("log_ladder", "n", [1.5], SpecError, IA, ("n", "1.5")),
    ("log_ladder", "exact", 0, SpecError, IA, ("exact", "0")),
    ("log_ladder", "limit", 8, SpecError, IA, ("limit", "8")),
    ("log_ladder", "steps", 0, SpecError, IA, ("steps", "0")),
    ("log_ladder", "rounding", "round", SpecError, IA, ("rounding", "'round'")),
    ("log_ladder", "exact", 1.0, TypeError, None, ("exact", "1.0")),
    *_position_rows("t5_bucket", "relative_positions", nonnegative=False),
    *_int_rows("t5_bucket", "num_buckets", 1),
    ("t5_bucket", "num_buckets", 3, SpecError, IA, ("num_buckets", "3")),
    *_int_rows("t5_bucket", "max_distance", 1),
    ("t5_bucket", "max_distance", 8, SpecError, IA, ("max_distance", "8")),
    *_choice_rows("t5_bucket", "direction"),
    *_position_rows("t5_bias", "query_positions"),
    *_position_rows("t5_bias", "key_positions"),
    *_array_rows("t5_bias", "table", 2),
    *_choice_rows("t5_bias", "table_layout"),
    ("t5_bias", "table", np.zeros((31, 1)), SpecError, IS, ("table", "(31, 1)")),
    ("t5_bias", "num_buckets", 2, SpecError, IA, ("num_buckets", "2")),
    # --- deberta ---------------------------------------------------------------------------
    *_position_rows("deberta_bucket", "relative_positions", nonnegative=False),
    *_int_rows("deberta_bucket", "position_buckets", 4),
    ("deberta_bucket", "max_relative_positions", 129, SpecError, IA, ("max_relative_positions", "129")),
    ("deberta_bucket", "max_relative_positions", BIG, SpecError, IA, ("max_relative_positions", str(BIG))),
    ("deberta_bucket", "max_relative_positions", 2.0, TypeError, None, ("max_relative_positions", "2.0")),
    *_choice_rows("deberta_bucket", "distance_clamp"),
    ("deberta_bucket", "*", (([-2**52],), {"position_buckets": 2**27, "max_relative_positions": 2**26 + 2}),
     SpecError, IA, ("distance", str(2**52), "2**36")),
    *_position_rows("deberta_index", "query_positions"),
    *_position_rows("deberta_index", "key_positions"),
    ("deberta_index", "position_buckets", 3, SpecError, IA, ("position_buckets", "3")),
    ("deberta_index", "distance_clamp", "max", SpecError, IA, ("distance_clamp", "'max'")),
    *_position_rows("deberta_scores", "query_positions", shaped=True),
    *_array_rows("deberta_scores", "q", 3),
    *_array_rows("deberta_scores", "pos_key", 3),
    *_choice_rows("deberta_scores", "pos_att_type"),
    ("deberta_scores", "k", np.ones((1, 3, 3)), SpecError, IS, ("k", "(1, 3, 3)")),
    ("deberta_scores", "key_positions", [[0, 1]], SpecError, IS, ("key_positions", "(1, 2)")),
    # --- shaw ------------------------------------------------------------------------------
    ("check_self_attention_positions", "q_positions", [5], SpecError, IA, ("query position 5",)),
    ("check_self_attention_positions", "k_positions", [[0, 1]], SpecError, IS, ("k_positions", "(1, 2)")),
    ("check_self_attention_positions", "q_positions", [-1], SpecError, IA, ("q_positions", "-1")),
    *_position_rows("shaw_relative_index", "q_positions"),
    *_position_rows("shaw_relative_index", "k_positions"),
    *_int_rows("shaw_relative_index", "max_relative_position", 1),
    *_choice_rows("shaw_relative_index", "sign"),
    ("shaw_relative_index", "q_positions", [2], SpecError, IA, ("query position 2",)),
    *_array_rows("shaw_logits", "q", 2),
    *_array_rows("shaw_logits", "rel_keys", 2),
    ("shaw_logits", "max_relative_position", 0, SpecError, IA, ("max_relative_position", "0")),
    ("shaw_logits", "k", np.ones((2, 4)), SpecError, IS, ("k", "4")),
    *_array_rows("shaw_output", "weights", 2),
    *_array_rows("shaw_output", "v", 2),
    ("shaw_output", "rel_values", np.zeros((5, 3)), SpecError, IS, ("rel_values", "(5, 3)")),
    ("shaw_output", "sign", "bogus", SpecError, IA, ("sign", "'bogus'")),
    # --- transformer_xl --------------------------------------------------------------------
    *_position_rows("xl_relative_embedding", "distances", nonnegative=False),
    *_int_rows("xl_relative_embedding", "dim", 2),
    ("xl_relative_embedding", "dim", 5, SpecError, IA, ("dim", "5")),
    *_float_rows("xl_relative_embedding", "base"),
    *_int_rows("shift_row_distances", "q_len", 1),
    ("shift_row_distances", "k_len", 1, SpecError, IA, ("k_len", "1")),
    ("shift_row_distances", "k_len", BIG, SpecError, IA, ("k_len", str(BIG))),
    *_choice_rows("shift_row_distances", "variant"),
    *_choice_rows("shift_row_distances", "attn_type"),
    *_array_rows("rel_shift_transformer_xl", "x", 2),
    *_array_rows("rel_shift_xlnet", "x", 2),
    ("rel_shift_xlnet", "k_len", 4, SpecError, IA, ("k_len", "4")),
    ("rel_shift_xlnet", "k_len", 0, SpecError, IA, ("k_len", "0")),
    *_array_rows("direct_index", "x", 2),
    ("direct_index", "row_distances", [3, 3, 1, 0], SpecError, IA, ("row_distances",)),
    ("direct_index", "row_distances", [3, 2, 1, 9], SpecError, OR, ("distance 0",)),
    ("direct_index", "row_distances", [BIG] * 4, SpecError, IA, ("row_distances", str(BIG))),
    ("direct_index", "q_positions", [7], SpecError, IA, ("query position 7",)),
    *_array_rows("rel_shift", "x", 2),
    *_choice_rows("rel_shift", "variant"),
    ("rel_shift", "k_len", 1, SpecError, IA, ("k_len", "1")),
    ("rel_shift", "k_len", 4, SpecError, IS, ("k_len = 4", "(2, 3)")),
    ("rel_shift", "k_len", BIG, SpecError, IA, ("k_len", str(BIG))),
    *_array_rows("xl_score", "q", 2),
    *_array_rows("xl_score", "u", 1),
    ("xl_score", "w_r", np.ones((3, 2)), SpecError, IA, ("w_r", "dim=3")),
    ("xl_score", "clamp_len", -2, SpecError, IA, ("clamp_len", "-2")),
    ("xl_score", "base", NAN, SpecError, IA, ("base", "nan")),
    ("xl_score", "q_positions", [4], SpecError, IA, ("query position 4",)),
    # --- resample --------------------------------------------------------------------------
    *_array_rows("cubic_kernel", "x", 1)[:2],
    ("cubic_kernel", "x", "x", TypeError, None, ("x", "str")),
    *_float_rows("cubic_kernel", "a", positive=False),
    *_int_rows("output_size_and_scale", "in_size", 1),
    *_int_rows("output_size_and_scale", "new_size", 1),
    *_choice_rows("output_size_and_scale", "kernel"),
    *_choice_rows("output_size_and_scale", "coordinates"),
    *_choice_rows("output_size_and_scale", "size_from"),
    ("output_size_and_scale", "scale_offset", 0.1, SpecError, IA, ("scale_offset", "0.1")),
    ("output_size_and_scale", "antialias", "maybe", SpecError, IA, ("antialias", "'maybe'")),
    ("resample_weights", "cubic_a", NAN, SpecError, IA, ("cubic_a", "nan")),
    ("resample_weights", "*", ((), {"in_size": 4, "new_size": 2**40}), SpecError, IA, ("size guard",)),
    ("resample_weights", "*", ((), {"in_size": 4, "new_size": 4, "antialias": "on",
                                    "coordinates": "align_corners"}), SpecError, IA, ("coordinates",
                                                                                      "'align_corners'")),
    ("tap_counts", "in_size", 0, SpecError, IA, ("in_size", "0")),
    ("tap_counts", "scale_offset", -0.5, SpecError, IA, ("scale_offset", "-0.5")),
    *_array_rows("resample_table_1d", "table", 2),
    *_int_rows("resample_table_1d", "new_length", 1),
    ("resample_table_1d", "num_prefix_tokens", 5, SpecError, IS, ("num_prefix_tokens", "5")),
    ("resample_table_1d", "num_prefix_tokens", -1, SpecError, IA, ("num_prefix_tokens", "-1")),
    *_array_rows("resample_grid_2d", "table", 2),
    *_int_rows("resample_grid_2d", "grid_height", 1),
    *_int_rows("resample_grid_2d", "new_width", 1),
    ("resample_grid_2d", "grid_width", 4, SpecError, IS, ("grid_width", "4")),
    ("resample_grid_2d", "kernel", "lanczos", SpecError, IA, ("kernel", "'lanczos'")),
    # --- rope ------------------------------------------------------------------------------
    *_position_rows("rope_cos_sin", "positions"),
    *_array_rows("rope_cos_sin", "inv_freq", 1),
    *_float_rows("rope_cos_sin", "attention_factor"),
    *_choice_rows("rope_cos_sin", "width"),
    ("rope_cos_sin", "*", (([10], [1e308]), {}), SpecError, IA, ("positions", "inv_freq", "1e+308")),
    *_int_rows("rope_layout_permutation", "rotary_dim", 2),
    ("rope_layout_permutation", "rotary_dim", 5, SpecError, IA, ("rotary_dim", "5")),
    *_choice_rows("rope_layout_permutation", "from_layout"),
    *_position_rows("rope_apply", "positions", shaped=True),
    *_array_rows("rope_apply", "x", 4)[:2],
    *_float_rows("rope_apply", "base"),
    *_choice_rows("rope_apply", "layout"),
    *_choice_rows("rope_apply", "x_layout"),
    ("rope_apply", "rotary_dim", 3, SpecError, IA, ("rotary_dim", "3")),
    ("rope_apply", "rotary_dim", 8, SpecError, IA, ("rotary_dim", "8")),
    ("rope_apply", "positions", [0, 1, 2], SpecError, IS, ("positions", "(3,)")),
    ("rope_apply", "attention_factor", NAN, SpecError, IA, ("attention_factor", "nan")),
    *_float_rows("rope_scores", "attention_factor"),
    ("rope_scores", "q_positions", [-1, 0], SpecError, IA, ("q_positions", "-1")),
    ("rope_scores", "k", np.ones((1, 1, 2, 6)), SpecError, IS, ("(1, 1, 2, 6)",)),
    ("rope_scores", "xpos_scale_base", -1.0, SpecError, IA, ("xpos_scale_base", "-1.0")),
    ("rope_scores", "layout", "interleaved_to_half", SpecError, IA, ("layout", "'interleaved_to_half'")),
    ("yarn_mscale", "factor", NAN, SpecError, IA, ("factor", "nan")),
    ("yarn_mscale", "factor", INF, SpecError, IA, ("factor", "inf")),
    ("yarn_mscale", "factor", "2", TypeError, None, ("factor", "str")),
    ("yarn_mscale", "*", ((2.0, NAN), {}), SpecError, IA, ("mscale", "nan")),
    *_int_rows("yarn_correction_range", "dim", 2),
    *_float_rows("yarn_correction_range", "base"),
    ("yarn_correction_range", "original_max_position", 0, SpecError, IA, ("original_max_position", "0")),
    *_int_rows("rope_inv_freq", "dim", 2),
    ("rope_inv_freq", "dim", 7, SpecError, IA, ("dim", "7")),
    *_float_rows("rope_inv_freq", "base"),
    *_choice_rows("rope_inv_freq", "rope_type"),
    ("rope_inv_freq", "*", ((), {"dim": 8, "rope_type": "linear", "factor": NAN}), SpecError, IA, ("factor", "nan")),
    ("rope_inv_freq", "*", ((), {"dim": 8, "rope_type": "linear", "factor": 0.5}), SpecError, IA,
     ("factor", "0.5")),
    ("rope_inv_freq", "*", ((), {"dim": 8, "rope_type": "linear"}), SpecError, IA, ("factor", "None")),
    ("rope_inv_freq", "*", ((), {"dim": 8, "rope_type": "yarn", "factor": 4.0, "original_max_position": 0}),
     SpecError, IA, ("original_max_position", "0")),
    ("rope_inv_freq", "*", ((), {"dim": 8, "rope_type": "llama3", "factor": 8.0, "original_max_position": 64,
                                 "low_freq_factor": 4.0, "high_freq_factor": 1.0}), SpecError, IA,
     ("low_freq_factor", "4.0")),
    ("rope_inv_freq", "dynamic_convention", "bogus", SpecError, IA, ("dynamic_convention", "'bogus'")),
    *_array_rows("longrope_inv_freq", "long_factor", 1)[:2],
    ("longrope_inv_freq", "long_factor", [2.0] * 3, SpecError, IA, ("long_factor", "3")),
    ("longrope_inv_freq", "factor", NAN, SpecError, IA, ("factor", "nan")),
    ("longrope_inv_freq", "longrope_convention", "bogus", SpecError, IA, ("longrope_convention", "'bogus'")),
    ("longrope_inv_freq", "context_length", 0, SpecError, IA, ("context_length", "0")),
    *_position_rows("rope_xpos", "positions", shaped=True),
    *_float_rows("rope_xpos", "scale_base"),
    *_choice_rows("rope_xpos", "centring"),
    ("rope_xpos", "*", ((_Q, np.ones((1, 2, 2, 4)), [0, 1]), {}), SpecError, IS, ("(1, 2, 2, 4)",)),
    ("mrope_cos_sin", "mrope_section", [2, 1, 2], SpecError, IA, ("mrope_section", "[2, 1, 2]")),
    ("mrope_cos_sin", "mrope_section", np.array([2**62, 2**62, -2**63 + 4]), SpecError, IA,
     ("mrope_section", str(2**62))),
    ("mrope_cos_sin", "mrope_section", [5, -1, 0], SpecError, IA, ("mrope_section", "-1")),
    ("mrope_cos_sin", "positions", np.zeros((2, 2), dtype=np.int64), SpecError, IS, ("positions", "(2, 2)")),
    ("mrope_cos_sin", "positions", np.full((3, 2), -1), SpecError, IA, ("positions", "-1")),
    ("mrope_cos_sin", "dim", 7, SpecError, IA, ("dim", "7")),
    *_choice_rows("mrope_cos_sin", "mrope_layout"),
    ("mrope_cos_sin", "base", NAN, SpecError, IA, ("base", "nan")),
    # --- attention -------------------------------------------------------------------------
    *_array_rows("attention", "q", 4)[:2],
    *_array_rows("attention", "v", 4)[:2],
    ("attention", "*", ((_Q, np.ones((1, 1, 2, 3)), np.ones((1, 1, 2, 3))), {}), SpecError, IS, ("D=4", "D=3")),
    ("attention", "*", ((np.ones((1, 3, 2, 4)), np.ones((1, 2, 2, 4)), np.ones((1, 2, 2, 4))), {}), SpecError, IS,
     ("H=3", "Hkv=2")),
    ("attention", "k", np.ones((1, 1, 3, 4)), SpecError, IS, ("k and v", "(1, 1, 3, 4)")),
    ("attention", "scale", NAN, SpecError, IA, ("scale", "nan")),
    ("attention", "scale", 1e308, SpecError, IA, ("scale", "logits")),
    ("attention", "softmax_multiplier", 0.0, SpecError, IA, ("softmax_multiplier", "0.0")),
    ("attention", "window", 0, SpecError, IA, ("window", "0")),
    ("attention", "causal", 1, TypeError, None, ("causal", "int")),
    *_choice_rows("attention", "alignment"),
    *_choice_rows("attention", "fully_masked"),
    ("attention", "mask", np.ones((1, 1, 2, 3), dtype=bool), SpecError, IS, ("mask", "(1, 1, 2, 3)")),
    ("attention", "mask", np.ones((2, 2), dtype=np.int64), TypeError, None, ("mask", "int64")),
    ("attention", "mask", np.full((2, 2), NAN), SpecError, IA, ("mask", "nan")),
    ("attention", "key_padding_mask", np.ones((1, 2)), TypeError, None, ("key_padding_mask", "float64")),
    ("attention", "bias", np.full((2, 2), INF), SpecError, IA, ("bias", "inf")),
    ("attention", "*", ((_Q, _Q, _Q), {"bias": np.full((2, 2), 1e308), "mask": np.full((2, 2), 1e308)}),
     SpecError, IA, ("bias", "mask", "logits")),
    ("attention", "qk_transform", attention_positional.rope_qk(), SpecError, IA, ("q_positions", "None")),
    ("attention", "*", ((_Q, _Q, _Q), {"q_positions": [0, 1, 2], "k_positions": [0, 1]}), SpecError, IS,
     ("q_positions", "(3,)")),
    ("attention", "block_size", 0, SpecError, IA, ("block_size", "0")),
    ("attention", "*", ((np.full((1, 1, 1, 2), 1e155), np.full((1, 1, 2, 2), 1e155), np.ones((1, 1, 2, 2))), {}),
     SpecError, IA, ("q", "k", "1e+155")),
    ("attention_layer", "num_heads", 3, SpecError, IS, ("w_q", "H=3")),
    ("attention_layer", "num_heads", 0, SpecError, IA, ("num_heads", "0")),
    ("attention_layer", "tokens", [[0, 7]], SpecError, OR, ("token id 7", "embedding")),
    ("attention_layer", "tokens", [[-1, 0]], SpecError, IA, ("tokens", "-1")),
    ("attention_layer", "tokens", [0, 1], SpecError, IS, ("tokens", "(2,)")),
    ("attention_layer", "pe", np.zeros((3, 4)), SpecError, IS, ("pe", "(3, 4)")),
    ("attention_layer", "embedding", np.full((3, 4), NAN), SpecError, IA, ("embedding", "nan")),
    ("attention_layer", "pe_placement", "bogus", SpecError, IA, ("pe_placement", "'bogus'")),
    ("rope_qk", "base", NAN, SpecError, IA, ("base", "nan")),
    ("rope_qk", "layout", "bogus", SpecError, IA, ("layout", "'bogus'")),
    ("shaw_terms", "max_relative_position", 0, SpecError, IA, ("max_relative_position", "0")),
    ("shaw_terms", "rel_keys", np.zeros((4, 2)), SpecError, IS, ("rel_keys", "(4, 2)")),
    ("shaw_terms", "rel_values", np.full((3, 2), NAN), SpecError, IA, ("rel_values", "nan")),
    ("xl_terms", "u", np.full((1, 2), NAN), SpecError, IA, ("u", "nan")),
    ("xl_terms", "w_r", np.ones((1, 3, 2)), SpecError, IA, ("w_r", "dim=3")),
    ("xl_terms", "v", np.ones((2, 2)), SpecError, IS, ("v", "(2, 2)")),
    ("xl_terms", "base", -1.0, SpecError, IA, ("base", "-1.0")),
    # --- checks ----------------------------------------------------------------------------
    *_array_rows("scale_check", "embeddings", 2),
    ("scale_check", "embeddings", [[0.0, 0.0]], SpecError, IA, ("embeddings", "0.0")),
    ("scale_check", "encodings", [[1.0, 0.0, 0.0]], SpecError, IS, ("encodings", "3")),
    ("scale_check", "max_ratio", 0.0, SpecError, IA, ("max_ratio", "0.0")),
    ("extrapolation_check", "encode", 3, TypeError, None, ("encode", "int")),
    *_int_rows("extrapolation_check", "trained_length", 1),
    ("extrapolation_check", "factor", 1.0, SpecError, IA, ("factor", "1.0")),
    ("extrapolation_check", "factor", NAN, SpecError, IA, ("factor", "nan")),
    ("order_check", "first", 9, SpecError, OR, ("first=9",)),
    ("order_check", "second", 0, SpecError, IA, ("first and second", "0")),
    ("order_check", "tokens", [[1.0, 0.0]] * 2 + [[0.0, 1.0]] * 4, SpecError, IA, ("tokens[0]", "tokens[5]")),
    ("order_check", "atol", -1.0, SpecError, IA, ("atol", "-1.0")),
    ("order_check", "w_q", np.eye(3), SpecError, IS, ("w_q", "(3, 3)")),
]
