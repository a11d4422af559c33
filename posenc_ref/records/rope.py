"""Registry records of the RoPE ops (:mod:`posenc_ref.rope`, :mod:`posenc_ref.rope_variants`).

The frequency ops live in :mod:`posenc_ref.records.rope_scaling` and are listed first in :data:`RECORDS`.

Tolerance phases: a table element ``a cos(p w)`` has phase ``a p w``. A rotated channel has
phase ``a |(u, v)| (1 + |p w|)``: an angle error ``delta`` moves the pair by ``|(u, v)| delta``,
and the ``1 +`` covers the rounding of the products at unit phase. A score sums such pair
errors over the pairs of q and k: its phase is ``a^2 sum_i |q_i| |k_i| (1 + |m w_i| + |n w_i|)``
(times the xPos weight), plus ``sum |q_j k_j|`` over pass-through channels.

Input scales (the input-rounding term, :mod:`posenc_ref.tolerance`): a rotated channel
``a (u cos - v sin)`` has the terms ``a u cos`` and ``a v sin`` with one input factor each, so
its scale is ``a (|u| |cos| + |v| |sin|)`` (``|x|`` on pass-through channels). A score
``<R q, R k>`` expands into products of such terms with two input factors each: its scale is
``2 sum_d A_q,d A_k,d`` with ``A`` those per-channel sums (times the xPos weight of the pair).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from posenc_ref import rope as rp
from posenc_ref.opspec import Case, OpRecord, Output, Param, case_rng, error_cases
from posenc_ref.records.rope_scaling import BASE, BASES, HEAD_DIMS, INV_FREQ, exact_inv_freq
from posenc_ref.records.rope_scaling import RECORDS as SCALING_RECORDS
from posenc_ref.scales.rope import (
    _apply_input_scale,
    _apply_phase,
    _cached_error_scale,
    _cached_input_scale,
    _freq_input_scale,
    _freq_phase,
    _scores_input_scale,
    _scores_phase,
    _table_phase,
)

CITATION = "Su et al. 2021, RoFormer, arXiv:2104.09864, section 3.4.2 (eq. 34)"
LONG = np.array([0, 1, 4095, 8191, 131071, 10**6], dtype=np.int64)
LAYOUT_USERS = {
    "half": "transformers rotate_half; GPT-NeoX; vLLM is_neox_style=True; ONNX interleaved=0; flash-attn",
    "interleaved": "RoFormer; Meta Llama complex; GPT-J; Cohere; GLM; vLLM is_neox_style=False; ONNX interleaved=1",
    "interleaved_to_half": "transformers 5.x DeepSeek-V3 apply_rotary_pos_emb_interleave",
}
LAYOUT = Param("layout", "str", "half", rp.LAYOUTS, users=LAYOUT_USERS, doc="which channels form a pair")
SCORE_LAYOUT = Param("layout", "str", "half", ("half", "interleaved"),
                     users={k: LAYOUT_USERS[k] for k in ("half", "interleaved")}, doc="which channels form a pair")
PARTIAL = Param("partial", "str", "prefix", rp.PARTIALS,
                users={"prefix": "GPT-NeoX rotary_pct; Phi; GLM; vLLM rotary_dim; ONNX rotary_embedding_dim",
                       "proportional": "Gemma 4 (transformers 5.x, vLLM Gemma4RotaryEmbedding); Gemma JAX"},
                doc="meaning of rotary_dim < head dim")
X_LAYOUT = Param("x_layout", "str", "BHTD", rp.X_LAYOUTS,
                 users={"BHTD": "transformers; ONNX 4-D", "BTHD": "flash-attn; vLLM"}, doc="axis order of x")
ROTARY_DIM = Param("rotary_dim", "int", None, doc="rotated channels (None: whole head)")
FACTOR_A = Param("attention_factor", "float", 1.0, doc="multiplies cos and sin (transformers attention_scaling), "
                                                       "on top of the scaling variant's own factor")
SCALING_PARAMS = tuple(
    INV_FREQ.param(name) for name in ("rope_type", "factor", "original_max_position", "context_length",
                                      "low_freq_factor", "high_freq_factor", "beta_fast", "beta_slow", "mscale",
                                      "mscale_all_dim")
) + (
    Param("scaling_attention_factor", "float", None,
          doc="the variant's explicit attention factor (transformers rope_parameters attention_factor; yarn, "
              "longrope); None: the variant's rule"),
    INV_FREQ.param("truncate"), INV_FREQ.param("ext_factor"),
    Param("short_factor", "float", None, doc="longrope: list of S/2 floats"),
    Param("long_factor", "float", None, doc="longrope: list of S/2 floats"),
    INV_FREQ.param("dynamic_convention"), INV_FREQ.param("yarn_convention"),
)
"""The scaling parameters of ``rope.apply`` and ``rope.scores`` (:data:`posenc_ref.rope.SCALING`)."""


# --- rope.cos_sin ----------------------------------------------------------------------------

def _table_inputs(positions: Any, **freq: Any) -> dict[str, NDArray[Any]]:
    return {"positions": np.asarray(positions, dtype=np.int64), "inv_freq": exact_inv_freq(**freq)["inv_freq"]}


_YARN16 = exact_inv_freq(dim=128, rope_type="yarn", factor=16.0, original_max_position=4096)


def _cos_sin_cases() -> tuple[Case, ...]:
    p = "rope.cos_sin"
    cases = [Case(f"{p}.d{d}.base{int(b)}.long", {"width": "half"}, _table_inputs(LONG, dim=d, base=b),
                  f"half-width cache at positions to 10^6, head dim {d}, base {b:g}", kind="long_position",
                  flags=("LongPosition",))
             for d, b in zip(HEAD_DIMS, BASES)]
    cases += [Case(f"{p}.{width}.d16.positions0-15", {"width": width}, _table_inputs(np.arange(16), dim=16),
                   f"width={width}: where each column's frequency lands") for width in rp.WIDTHS]
    cases += [
        Case(f"{p}.yarn_attention_factor_folded",
             {"width": "full", "attention_factor": float(_YARN16["attention_factor"][0])},
             {"positions": np.array([0, 1, 4095, 65535]), "inv_freq": _YARN16["inv_freq"]},
             "YaRN s16 frequencies with attention factor 1.2773 folded into cos and sin (transformers)"),
        Case(f"{p}.full_interleaved.d32.long", {"width": "full_interleaved"}, _table_inputs(LONG, dim=32),
             "GPT-J / GLM repeat_interleave width at positions to 10^6", kind="long_position", flags=("LongPosition",)),
        Case(f"{p}.positions_2d_repeated", {"width": "full"},
             _table_inputs([[0, 0, 1, 2], [5, 3, 3, 8191]], dim=32),
             "(B, T) positions, repeated and non-monotonic", kind="edge"),
    ]
    cases += error_cases(p, [
        ("negative_position", {"width": "half"}, _table_inputs([1, -1], dim=8), "invalid_argument",
         "a negative position"),
        ("inv_freq_2d", {"width": "half"}, {"positions": np.array([1]), "inv_freq": np.ones((2, 2))},
         "invalid_shape", "inv_freq must be (P,)"),
        ("attention_factor_zero", {"width": "half", "attention_factor": 0.0}, _table_inputs([1], dim=8),
         "invalid_argument", "attention_factor <= 0"),
        ("unknown_width", {"width": "double"}, _table_inputs([1], dim=8), "invalid_argument", "unknown width"),
    ])
    return tuple(cases)


COS_SIN = OpRecord(
    name="rope.cos_sin",
    family="rope",
    function=rp.rope_cos_sin,
    inputs=("positions", "inv_freq"),
    outputs=(Output("cos", "float64", "phase", _table_phase), Output("sin", "float64", "phase", _table_phase)),
    params=(
        FACTOR_A,
        Param("width", "str", "full", rp.WIDTHS,
              users={"half": "ONNX RotaryEmbedding caches; flash-attn; vLLM cos_sin_cache halves",
                     "full": "transformers cat(freqs, freqs)",
                     "full_interleaved": "GPT-J / GLM repeat_interleave"},
              doc="table width and column order"),
    ),
    summary="cos/sin tables for explicit positions, attention factor folded in",
    citation=CITATION,
    cases=_cos_sin_cases(),
    position_inputs=("positions",),
)


# --- rope.apply ------------------------------------------------------------------------------

def _x(shape: tuple[int, ...], positions: Any) -> Any:
    def make(rng: np.random.Generator) -> dict[str, NDArray[Any]]:
        return {"x": rng.normal(size=shape), "positions": np.asarray(positions, dtype=np.int64)}
    return make


LONG8 = [0, 1, 2, 4095, 8191, 131071, 999999, 10**6]


def _apply_cases() -> tuple[Case, ...]:
    p = "rope.apply"
    cases = [Case(f"{p}.{layout}.long.d64", {"layout": layout}, _x((1, 2, 8, 64), LONG8),
                  f"layout={layout} at positions 0..10^6", kind="long_position", flags=("LongPosition",))
             for layout in rp.LAYOUTS]
    cases += [Case(f"{p}.half.d{d}.base{int(b)}", {"base": b}, _x((1, 2, 6, d), [0, 1, 2, 3, 8191, 131071]),
                   f"head dim {d}, base {b:g}") for d, b in zip(HEAD_DIMS, BASES)]
    for d, rd in ((96, 24), (96, 48), (80, 40)):
        for layout in ("half", "interleaved"):
            cases.append(Case(f"{p}.prefix.{layout}.d{d}.rotary{rd}", {"rotary_dim": rd, "layout": layout},
                              _x((1, 2, 4, d), [0, 7, 4095, 131071]),
                              f"partial prefix {rd}/{d}: exponent over {rd}, channels {rd}.. untouched"))
        cases.append(Case(f"{p}.proportional.d{d}.rotary{rd}", {"rotary_dim": rd, "partial": "proportional"},
                          _x((1, 2, 4, d), [0, 7, 4095, 131071]),
                          f"proportional {rd}/{d}: pairs (i, i + {d // 2}), exponent over {d}, zero frequencies"))
    cases += [
        Case(f"{p}.bthd.long.d32", {"x_layout": "BTHD"}, _x((1, 8, 2, 32), LONG8),
             "(B, T, H, D) at positions to 10^6", kind="long_position", flags=("LongPosition",)),
        Case(f"{p}.bthd.batch_positions", {"x_layout": "BTHD"},
             _x((2, 5, 3, 16), [[0, 1, 2, 3, 4], [0, 0, 0, 1, 2]]),
             "(B, T, H, D) with per-row positions (left padding)"),
        Case(f"{p}.attention_factor", {"attention_factor": 1.2772588722239782}, _x((1, 1, 3, 32), [0, 9, 4095]),
             "YaRN attention factor folded into cos and sin scales the rotated channels"),
        Case(f"{p}.prefix.half.d96.rotary24.attention_factor",
             {"rotary_dim": 24, "attention_factor": 1.2772588722239782},
             _x((1, 2, 4, 96), [0, 7, 4095, 131071]),
             "partial prefix with an attention factor: it scales the 24 rotated channels only, never the pass-through"),
        Case(f"{p}.half.d128.base10000.long", {}, _x((1, 2, 8, 128), LONG8),
             "Llama 2 shape (head 128, base 1e4) at positions to 10^6: an angle rounded once per pair "
             "(ggml's running product theta *= theta_scale rounds pair i's angle i times)",
             kind="long_position", flags=("LongPosition",)),
        Case(f"{p}.decode_offset", {}, _x((1, 2, 1, 64), [4100]), "one decoding step at position 4100", kind="edge"),
        *_scaled_apply_cases(p),
        Case(f"{p}.interleaved_to_half.rotary32.d64", {"layout": "interleaved_to_half", "rotary_dim": 32},
             _x((1, 1, 3, 64), [0, 5, 4095]), "DeepSeek-V3 order on a rope-part prefix", kind="edge"),
    ]
    cases += error_cases(p, [
        ("odd_rotary_dim", {"rotary_dim": 5}, _x((1, 1, 2, 8), [0, 1]), "invalid_argument", "odd rotary dim"),
        ("rotary_dim_above_head_dim", {"rotary_dim": 16}, _x((1, 1, 2, 8), [0, 1]), "invalid_argument",
         "rotary_dim > head dim"),
        ("unknown_layout", {"layout": "neox"}, _x((1, 1, 2, 8), [0, 1]), "invalid_argument", "unknown layout"),
        ("positions_wrong_length", {}, _x((1, 1, 2, 8), [0, 1, 2]), "invalid_shape", "positions of length 3 for T = 2"),
        ("x_rank3", {}, _x((1, 2, 8), [0, 1]), "invalid_shape", "x must be 4-D"),
        ("negative_position", {}, _x((1, 1, 2, 8), [0, -1]), "invalid_argument", "a negative position"),
        ("odd_head_dim", {}, _x((1, 1, 2, 7), [0, 1]), "invalid_argument", "odd head dim rotated whole"),
        ("yarn_missing_original_max_position", {"rope_type": "yarn", "factor": 4.0, "layout": "interleaved"},
         _x((1, 1, 2, 8), [0, 1]), "invalid_argument", "yarn without original_max_position (named)"),
        ("longrope_factor_list_length", {**_longrope_params("rope.apply.error.longrope", 3, 8192),
                                         "x_layout": "BTHD"}, _x((1, 2, 1, 8), [0, 1]), "invalid_argument",
         "long_factor of 3 values for 4 pairs"),
        ("proportional_type_with_prefix", {"rope_type": "proportional", "rotary_dim": 4}, _x((1, 1, 2, 8), [0, 1]),
         "invalid_argument", "rope_type='proportional' needs partial='proportional'"),
        ("unknown_scaling_keyword", {"rope_scaling": "yarn"}, _x((1, 1, 2, 8), [0, 1]), "invalid_argument",
         "an unknown keyword (rope_scaling is transformers' dict, not a parameter)"),
    ])
    return tuple(cases)


def _factor_list(case_id: str, pairs: int, low: float, high: float) -> list[float]:
    """A sorted LongRoPE factor list drawn from the case id (a parameter, so a list of floats)."""
    return sorted(float(v) for v in case_rng(case_id + ".factors").uniform(low, high, pairs))


Y16 = {"rope_type": "yarn", "factor": 16.0, "original_max_position": 4096}
DSV3 = {"rope_type": "yarn", "factor": 40.0, "original_max_position": 4096, "mscale": 1.0, "mscale_all_dim": 1.0,
        "beta_fast": 32.0, "beta_slow": 1.0}


def _longrope_params(case_id: str, pairs: int, context_length: int) -> dict[str, Any]:
    return {"rope_type": "longrope", "factor": 32.0, "original_max_position": 4096, "context_length": context_length,
            "short_factor": _factor_list(case_id + ".short", pairs, 1.0, 3.0),
            "long_factor": _factor_list(case_id + ".long", pairs, 1.0, 60.0)}


def _scaled_apply_cases(p: str) -> list[Case]:
    """``rope.apply`` under every scaling at positions to 10^6 (a fused kernel's forward pass)."""
    lr_long, lr_short = f"{p}.longrope.phi3.d96.long_factors", f"{p}.longrope.phi3.d96.short_factors"
    return [
        Case(f"{p}.linear.d128.factor8.long", {"rope_type": "linear", "factor": 8.0}, _x((1, 1, 8, 128), LONG8),
             "position interpolation s = 8: every angle p w / 8", kind="long_position", flags=("LongPosition",)),
        Case(f"{p}.ntk_aware.d64.factor4.long", {"rope_type": "ntk_aware", "factor": 4.0}, _x((1, 1, 8, 64), LONG8),
             "static NTK-aware base b s^(d/(d-2))", kind="long_position", flags=("LongPosition",)),
        Case(f"{p}.dynamic.d128.L8192.long", {"rope_type": "dynamic", "factor": 2.0, "original_max_position": 4096,
                                              "context_length": 8192}, _x((1, 1, 8, 128), LONG8),
             "dynamic NTK at context length 8192 (transformers: rescaled since L > M)",
             kind="long_position", flags=("LongPosition",)),
        Case(f"{p}.dynamic.d128.L3072.below_trained", {"rope_type": "dynamic", "factor": 2.0,
                                                       "original_max_position": 4096, "context_length": 3072},
             _x((1, 1, 4, 128), [0, 7, 3071, 4095]),
             "dynamic NTK at context length 3072 < M (transformers: the plain frequencies)"),
        Case(f"{p}.dynamic.vllm_static.d128.L3072.long",
             {"rope_type": "dynamic", "factor": 2.0, "original_max_position": 4096, "context_length": 3072,
              "dynamic_convention": "vllm_static"}, _x((1, 1, 8, 128), LONG8),
             "vLLM static dynamic NTK below M: the bracket shrinks the base",
             kind="long_position", flags=("LongPosition",)),
        Case(f"{p}.yarn.d128.s16.long", dict(Y16), _x((1, 1, 8, 128), LONG8),
             "YaRN s16: ramped frequencies and the attention factor 1.2773 folded into cos and sin",
             kind="long_position", flags=("LongPosition",)),
        Case(f"{p}.yarn.gpt_oss.truncate_false.d64.long",
             {"rope_type": "yarn", "base": 150000.0, "factor": 32.0, "original_max_position": 4096,
              "truncate": False}, _x((1, 1, 8, 64), LONG8),
             "gpt-oss: fractional ramp bounds, attention factor 1.3466", kind="long_position", flags=("LongPosition",)),
        Case(f"{p}.yarn.explicit_attention_factor.d128.long", {**Y16, "factor": 64.0, "scaling_attention_factor": 1.0},
             _x((1, 1, 8, 128), LONG8), "explicit attention_factor 1.0 wins over g(64) = 1.4159 (Laguna)",
                  kind="long_position", flags=("LongPosition",)),
        Case(f"{p}.yarn.ggml_ext_factor_0.5.d128.long", {**Y16, "ext_factor": 0.5}, _x((1, 1, 8, 128), LONG8),
             "ggml ext_factor 0.5: half the extrapolation weight", kind="long_position", flags=("LongPosition",)),
        Case(f"{p}.yarn.vllm_deepseek.interleaved.rotary64.d96.long",
             {**DSV3, "yarn_convention": "vllm_deepseek", "rotary_dim": 64, "layout": "interleaved", "mscale": 0.707,
              "mscale_all_dim": None}, _x((1, 1, 8, 96), LONG8),
             "vLLM DeepseekScalingRotaryEmbedding: interleaved rope part 64 of 96, factor g(40, 0.707) / g(40, 0)",
             kind="long_position", flags=("LongPosition",)),
        Case(f"{p}.yarn.deepseek_v3.interleaved_to_half.rotary64.d192.long",
             {**DSV3, "rotary_dim": 64, "layout": "interleaved_to_half", "base": 10000.0}, _x((1, 1, 6, 192),
                                                                                            LONG8[2:]),
             "DeepSeek-V3 rope part (64 of 192, transformers 5.x order): cos/sin factor g/g = 1",
             kind="long_position", flags=("LongPosition",)),
        Case(f"{p}.llama3.d128.base500000.long", {"rope_type": "llama3", "base": 5e5, "factor": 8.0,
                                                  "original_max_position": 8192, "low_freq_factor": 1.0,
                                                  "high_freq_factor": 4.0}, _x((1, 1, 8, 128), LONG8),
             "Llama 3.1 frequencies: kept, smoothed and divided bands", kind="long_position", flags=("LongPosition",)),
        Case(lr_long, _longrope_params(lr_long, 48, 131072), _x((1, 1, 8, 96), LONG8),
             "Phi-3 LongRoPE at context 131072 > 4096: the long factors and sqrt(1 + ln 32 / ln 4096)",
             kind="long_position", flags=("LongPosition",)),
        Case(lr_short, _longrope_params(lr_short, 48, 4096), _x((1, 1, 8, 96), LONG8),
             "Phi-3 LongRoPE at context 4096 = L0: the short factors (long only when L > L0)",
             kind="long_position", flags=("LongPosition",)),
        Case(f"{p}.proportional.gemma4.d128.rotary32.long",
             {"rope_type": "proportional", "partial": "proportional", "rotary_dim": 32, "base": 1e6, "factor": 2.0},
             _x((1, 1, 8, 128), LONG8),
             "proportional (Gemma 4): 16 pairs at b^(-2i/128) / 2 over pairs (i, i + 64), 48 at frequency 0",
             kind="long_position", flags=("LongPosition",)),
        Case(f"{p}.yarn.prefix.rotary32.d64.attention_factor", {**Y16, "rotary_dim": 32, "attention_factor": 2.0},
             _x((1, 1, 4, 64), [0, 7, 4095, 131071]),
             "YaRN on a prefix rope part with an extra attention factor 2: 2 * 1.2773 on the rotated channels only"),
    ]


APPLY_PARAMS = (BASE, ROTARY_DIM, PARTIAL, LAYOUT, X_LAYOUT, FACTOR_A, *SCALING_PARAMS)
APPLY = OpRecord(
    name="rope.apply",
    family="rope",
    function=rp.rope_apply,
    inputs=("x", "positions"),
    outputs=(Output("y", "float64", "phase", _apply_phase, _apply_input_scale),),
    params=APPLY_PARAMS,
    summary="rotate q or k at explicit positions: layouts, partial prefix / proportional, every RoPE scaling",
    citation=CITATION,
    cases=_apply_cases(),
    position_inputs=("positions",),
    value_inputs=("x",),
)


# --- rope.rotate -----------------------------------------------------------------------------

def _cached(shape: tuple[int, ...], positions: Any, rows: int, pairs: int, *, cache: str = "random",
            base: float = 10000.0) -> Any:
    """x, positions and (rows, pairs) caches: the oracle's cos/sin of a default table, or random
    numbers in [-1, 1] (what the ONNX node tests feed: the op rotates with whatever it is given)."""
    def make(rng: np.random.Generator) -> dict[str, NDArray[Any]]:
        x = rng.normal(size=shape)
        if cache == "random":
            cos, sin = rng.uniform(-1.0, 1.0, (rows, pairs)), rng.uniform(-1.0, 1.0, (rows, pairs))
        else:
            from posenc_ref import oracle

            tables = oracle.expected("rope.cos_sin", COS_SIN.full_params({"width": "half"}),
                                     _table_inputs(np.arange(rows), dim=2 * pairs, base=base))
            cos, sin = tables["cos"], tables["sin"]
        return {"x": x, "positions": np.asarray(positions, dtype=np.int64), "cos_cache": cos, "sin_cache": sin}
    return make


def _rotate_cases() -> tuple[Case, ...]:
    p = "rope.rotate"
    return (
        Case(f"{p}.onnx.half.random_cache", {}, _cached((2, 3, 4, 8), [[0, 1, 2, 3], [5, 6, 7, 8]], 16, 4),
             "ONNX RotaryEmbedding node-test style: random caches, position_ids (B, T), interleaved=0"),
        Case(f"{p}.onnx.interleaved.random_cache", {"layout": "interleaved"},
             _cached((2, 3, 4, 8), [[0, 1, 2, 3], [5, 6, 7, 8]], 16, 4), "interleaved=1 with random caches"),
        Case(f"{p}.onnx.rotary_dim4.d8", {}, _cached((1, 2, 3, 8), [2, 0, 9], 10, 2),
             "rotary_embedding_dim 4 of 8: caches of 2 columns, channels 4.. pass through; positions out of order"),
        Case(f"{p}.bthd.table_cache", {"x_layout": "BTHD"}, _cached((1, 5, 2, 16), [3, 4, 5, 6, 7], 8, 8,
                                                                     cache="table"),
             "(B, T, H, D) with a true cos/sin cache (base 1e4), flash-attn layout"),
        Case(f"{p}.half.long.cache4096", {}, _cached((1, 1, 4, 8), [0, 1, 4094, 4095], 4096, 2, cache="table"),
             "cache rows to 4095 (a true table, head 8 rotary 4)", kind="long_position", flags=("LongPosition",)),
        Case(f"{p}.interleaved.bthd.long.cache4096", {"layout": "interleaved", "x_layout": "BTHD"},
             _cached((1, 3, 1, 8), [4095, 17, 2048], 4096, 2), "interleaved, (B, T, H, D), random cache rows to 4095",
             kind="long_position", flags=("LongPosition",)),
    ) + tuple(error_cases(p, [
        ("position_past_cache", {"layout": "interleaved"}, _cached((1, 1, 2, 8), [0, 16], 16, 4), "out_of_range",
         "position 16 of a 16-row cache"),
        ("cache_shapes_differ", {}, lambda rng: {**_cached((1, 1, 2, 8), [0, 1], 4, 4)(rng),
                                                 "sin_cache": np.zeros((4, 3))}, "invalid_shape",
         "cos_cache (4, 4) and sin_cache (4, 3)"),
        ("caches_wider_than_head", {"x_layout": "BTHD"}, _cached((1, 2, 1, 4), [0, 1], 4, 4), "invalid_shape",
         "2P = 8 channels for a head of 4"),
        ("negative_position", {}, _cached((1, 1, 2, 8), [0, -1], 4, 4), "invalid_argument", "a negative position"),
    ]))


ROTATE = OpRecord(
    name="rope.rotate",
    family="rope",
    function=rp.rope_rotate_cached,
    inputs=("x", "positions", "cos_cache", "sin_cache"),
    outputs=(Output("y", "float64", "reduction", _cached_error_scale, _cached_input_scale),),
    params=(SCORE_LAYOUT, X_LAYOUT),
    summary="rotate q or k with caller-given cos/sin caches indexed by position (ONNX RotaryEmbedding, vLLM, "
            "flash-attn)",
    citation="ONNX RotaryEmbedding (opset 23); " + CITATION,
    cases=_rotate_cases(),
    position_inputs=("positions",),
    value_inputs=("x", "cos_cache", "sin_cache"),
)


# --- rope.rotate_freq ------------------------------------------------------------------------

def _freq_x(shape: tuple[int, ...], positions: Any, inv_freq: Any) -> Any:
    """Random x, the positions and caller-given frequencies (oracle values or exact constants)."""
    def make(rng: np.random.Generator) -> dict[str, NDArray[Any]]:
        return {"x": rng.normal(size=shape), "positions": np.asarray(positions, dtype=np.int64),
                "inv_freq": np.asarray(inv_freq, dtype=np.float64)}
    return make


GPT_OSS = exact_inv_freq(dim=64, base=150000.0, rope_type="yarn", factor=32.0, original_max_position=4096,
                         beta_fast=32.0, beta_slow=1.0, truncate=False)
_PHI3_ID = "rope.rotate_freq.longrope.phi3_mini_128k.d96.long"
PHI3_LONG = exact_inv_freq(dim=96, **_longrope_params(_PHI3_ID, 48, 131072))


def _plain(dim: int, base: float = 10000.0) -> NDArray[Any]:
    return exact_inv_freq(dim=dim, base=base)["inv_freq"]


def _zero_tail(dim: int, turning: int) -> NDArray[Any]:
    w = _plain(dim).copy()
    w[turning:] = 0.0  # pairs that never turn (proportional rotation's zero frequencies)
    return w


def _rotate_freq_cases() -> tuple[Case, ...]:
    p = "rope.rotate_freq"
    yarn_factor = float(GPT_OSS["attention_factor"][0])
    phi3_factor = float(PHI3_LONG["attention_factor"][0])
    return (
        Case(f"{p}.half.d16", {}, _freq_x((2, 2, 5, 16), [0, 1, 2, 7, 100], _plain(16)),
             "plain frequencies b^(-2i/16) given by the caller, (B, H, T, D)"),
        Case(f"{p}.interleaved.bthd.batch_positions", {"layout": "interleaved", "x_layout": "BTHD"},
             _freq_x((2, 5, 2, 16), [[0, 1, 2, 3, 4], [3, 3, 4, 9, 12]], _plain(16)),
             "interleaved pairs, (B, T, H, D), (B, T) positions with repeats"),
        Case(f"{p}.half.d32.long", {}, _freq_x((1, 2, 8, 32), LONG8, _plain(32)),
             "half layout at positions to 10^6", kind="long_position", flags=("LongPosition",)),
        Case(f"{p}.interleaved.bthd.d32.long", {"layout": "interleaved", "x_layout": "BTHD"},
             _freq_x((1, 8, 2, 32), LONG8, _plain(32, 500000.0)),
             "interleaved, (B, T, H, D), base 5e5, positions to 10^6", kind="long_position", flags=("LongPosition",)),
        Case(f"{p}.half.pass_through.p4.d16", {}, _freq_x((1, 2, 3, 16), [0, 5, 4095], _plain(8)),
             "4 frequencies for a head of 16: channels 8.. pass through untouched"),
        Case(f"{p}.interleaved.pass_through.p4.d12", {"layout": "interleaved"},
             _freq_x((1, 1, 3, 12), [2, 9, 4096], _plain(8)),
             "interleaved pairs (0, 1) .. (6, 7) rotate, channels 8.. pass through"),
        Case(f"{p}.yarn.gpt_oss.d64.long", {"attention_factor": yarn_factor},
             _freq_x((1, 1, 8, 64), LONG8, GPT_OSS["inv_freq"]),
             "gpt-oss YaRN frequencies (base 1.5e5, s 32, truncate False) and factor 1.3466 given by the caller",
             kind="long_position", flags=("LongPosition",)),
        Case(_PHI3_ID, {"attention_factor": phi3_factor},
             _freq_x((1, 1, 5, 96), [0, 1, 4095, 131071, 10**6], PHI3_LONG["inv_freq"]),
             "Phi-3-mini-128k LongRoPE long-factor frequencies, as MLX SuScaledRoPE passes them (freqs = 1 / w), "
             "and sqrt(1 + ln 32 / ln 4096)", kind="long_position", flags=("LongPosition",)),
        Case(f"{p}.zero_frequency_pairs.d16", {}, _freq_x((1, 2, 4, 16), [0, 7, 4095, 131071], _zero_tail(16, 5)),
             "pairs 5..7 at frequency 0 never turn (proportional rotation)", kind="edge"),
        Case(f"{p}.attention_factor.bthd", {"attention_factor": 1.2772588722239782, "x_layout": "BTHD"},
             _freq_x((1, 3, 2, 16), [0, 9, 4095], _plain(16)),
             "attention factor folded into cos and sin scales the rotated channels"),
        Case(f"{p}.decode_offset.batch_positions", {}, _freq_x((2, 2, 1, 32), [[4100], [17]], _plain(32)),
             "one decoding step per sequence at its own offset, (B, 1) positions", kind="edge"),
    ) + tuple(error_cases(p, [
        ("inv_freq_2d", {}, _freq_x((1, 1, 2, 8), [0, 1], np.ones((2, 2))), "invalid_shape", "inv_freq must be (P,)"),
        ("inv_freq_wider_than_head", {"layout": "interleaved", "x_layout": "BTHD"},
         _freq_x((1, 2, 1, 4), [0, 1], _plain(8)), "invalid_shape", "2P = 8 channels for a head of 4"),
        ("negative_frequency", {}, _freq_x((1, 1, 2, 8), [0, 1], [1.0, -0.01]), "invalid_argument",
         "a negative frequency"),
        ("nonfinite_frequency", {"layout": "interleaved"}, _freq_x((1, 1, 2, 8), [0, 1], [1.0, np.inf]),
         "invalid_argument", "an infinite frequency"),
        ("negative_position", {}, _freq_x((1, 1, 2, 8), [0, -1], _plain(8)), "invalid_argument",
         "a negative position"),
        ("positions_wrong_length", {"x_layout": "BTHD"}, _freq_x((1, 2, 1, 8), [0, 1, 2], _plain(8)),
         "invalid_shape", "positions of length 3 for T = 2"),
        ("unknown_layout", {"layout": "neox"}, _freq_x((1, 1, 2, 8), [0, 1], _plain(8)), "invalid_argument",
         "unknown layout"),
        ("attention_factor_zero", {"attention_factor": 0.0}, _freq_x((1, 1, 2, 8), [0, 1], _plain(8)),
         "invalid_argument", "attention_factor <= 0"),
    ]))


ROTATE_FREQ = OpRecord(
    name="rope.rotate_freq",
    family="rope",
    function=rp.rope_rotate_freq,
    inputs=("x", "positions", "inv_freq"),
    outputs=(Output("y", "float64", "phase", _freq_phase, _freq_input_scale),),
    params=(SCORE_LAYOUT, X_LAYOUT, Param("attention_factor", "float", 1.0,
                                          doc="multiplies cos and sin (> 0), not the pass-through channels")),
    summary="rotate q or k at caller-given inverse frequencies (MLX fast.rope freqs, a transformers inv_freq "
            "buffer, vLLM)",
    citation="MLX mx.fast.rope (freqs); " + CITATION,
    cases=_rotate_freq_cases(),
    position_inputs=("positions",),
    # Note: inv_freq is not a value input: rounding it to float16 is the float16-angle bug class
    value_inputs=("x",),
)


# --- rope.scores -----------------------------------------------------------------------------

def _qk(shape_q: tuple[int, ...], shape_k: tuple[int, ...], qpos: Any, kpos: Any) -> Any:
    def make(rng: np.random.Generator) -> dict[str, NDArray[Any]]:
        return {"q": rng.normal(size=shape_q), "k": rng.normal(size=shape_k),
                "q_positions": np.asarray(qpos, dtype=np.int64), "k_positions": np.asarray(kpos, dtype=np.int64)}
    return make


def _scores_cases() -> tuple[Case, ...]:
    p = "rope.scores"
    cases = [Case(f"{p}.{layout}.d64", {"layout": layout}, _qk((1, 2, 3, 64), (1, 2, 5, 64), [2, 3, 4], range(5)),
                  f"layout={layout}: q at 2..4, k at 0..4") for layout in ("half", "interleaved")]
    cases += [
        Case(f"{p}.decode.kv_cache", {}, _qk((1, 2, 1, 64), (1, 2, 4, 64), [4100], [0, 1, 4095, 4100]),
             "one query at 4100 against cached keys"),
        Case(f"{p}.long.offsets_near_1e6", {"base": 5e5}, _qk((1, 1, 2, 128), (1, 1, 3, 128),
                                                                [999999, 10**6], [999000, 999999, 10**6]),
             "positions near 10^6: scores depend on m - n only, but implementations round p * w",
             kind="long_position", flags=("LongPosition",)),
        Case(f"{p}.interleaved.long.d64", {"layout": "interleaved"},
             _qk((1, 1, 2, 64), (1, 1, 3, 64), [4095, 10**6], [0, 4095, 999999]),
             "interleaved pairs at positions to 10^6", kind="long_position", flags=("LongPosition",)),
        Case(f"{p}.bthd.long.d32", {"x_layout": "BTHD"}, _qk((1, 2, 2, 32), (1, 3, 2, 32), [8191, 10**6],
                                                              [0, 8191, 999999]),
             "(B, T, H, D) at positions to 10^6", kind="long_position", flags=("LongPosition",)),
        Case(f"{p}.proportional.d96.rotary48.long", {"rotary_dim": 48, "partial": "proportional"},
             _qk((1, 1, 2, 96), (1, 1, 3, 96), [4095, 10**6], [0, 4095, 999999]),
             "proportional rotation at positions to 10^6", kind="long_position", flags=("LongPosition",)),
        Case(f"{p}.cross_attention", {"x_layout": "BTHD"}, _qk((2, 3, 2, 32), (2, 4, 2, 32),
                                                                [[0, 1, 2], [7, 8, 9]], [0, 10, 20, 30]),
             "cross-attention: q and k positions unrelated, (B, T, H, D)"),
        Case(f"{p}.prefix.d96.rotary24", {"rotary_dim": 24}, _qk((1, 1, 3, 96), (1, 1, 3, 96), [0, 5, 9], [1, 2, 3]),
             "partial prefix: pass-through channels add their plain dot product"),
        Case(f"{p}.proportional.d96.rotary48", {"rotary_dim": 48, "partial": "proportional"},
             _qk((1, 1, 3, 96), (1, 1, 3, 96), [0, 5, 9], [1, 2, 3]), "proportional rotation"),
        Case(f"{p}.attention_factor_squared", {"attention_factor": 1.2772588722239782},
             _qk((1, 1, 2, 32), (1, 1, 2, 32), [3, 4], [0, 4]), "the attention factor scales logits by its square"),
        Case(f"{p}.xpos.interleaved", {"layout": "interleaved", "xpos_scale_base": 512.0},
             _qk((1, 2, 4, 32), (1, 2, 4, 32), [0, 1, 2, 3], [0, 1, 2, 3]),
             "xPos (lucidrains): pair weights zeta^((m - n)/512), centring-independent"),
        Case(f"{p}.yarn.gpt_oss.truncate_false.d64.long",
             {"rope_type": "yarn", "base": 150000.0, "factor": 32.0, "original_max_position": 4096,
              "truncate": False}, _qk((1, 1, 2, 64), (1, 1, 3, 64), [4095, 10**6], [0, 8191, 999999]),
             "YaRN logits with gpt-oss's fractional ramp: the attention factor 1.3466 squared",
             kind="long_position", flags=("LongPosition",)),
        Case(f"{p}.dynamic.d64.L3072", {"rope_type": "dynamic", "factor": 2.0, "original_max_position": 4096,
                                        "context_length": 3072},
             _qk((1, 1, 2, 64), (1, 1, 3, 64), [7, 3071], [0, 7, 3000]),
             "dynamic NTK below M in the logits (transformers: the plain frequencies)"),
        Case(f"{p}.llama3.d128.long", {"rope_type": "llama3", "base": 5e5, "factor": 8.0, "original_max_position": 8192,
                                       "low_freq_factor": 1.0, "high_freq_factor": 4.0},
             _qk((1, 2, 2, 128), (1, 2, 3, 128), [8191, 10**6], [0, 8191, 999999]), "Llama 3.1 logits at long offsets",
             kind="long_position", flags=("LongPosition",)),
        Case(f"{p}.dynamic.vllm_static.d64.long", {"rope_type": "dynamic", "factor": 2.0, "original_max_position": 4096,
                                                   "context_length": 3072, "dynamic_convention": "vllm_static"},
             _qk((1, 1, 2, 64), (1, 1, 3, 64), [4095, 10**6], [0, 4095, 999999]),
             "vLLM static dynamic NTK logits", kind="long_position", flags=("LongPosition",)),
        Case(f"{p}.yarn.vllm_deepseek.mscale_only.interleaved.rotary64.d96.long",
             {**DSV3, "yarn_convention": "vllm_deepseek", "rotary_dim": 64, "layout": "interleaved", "mscale": 0.707,
              "mscale_all_dim": None},
             _qk((1, 1, 2, 96), (1, 1, 3, 96), [4095, 10**6], [0, 4095, 999999]),
             "vLLM DeepseekScalingRotaryEmbedding with mscale 0.707 only: cos/sin factor g(40, 0.707) / g(40, 0), "
             "squared in the logits (transformers: g(40, 1))", kind="long_position", flags=("LongPosition",)),
        Case(f"{p}.longrope.d64.long", _longrope_params(f"{p}.longrope.d64.long", 32, 131072),
             _qk((1, 1, 2, 64), (1, 1, 3, 64), [4095, 10**6], [0, 4095, 999999]),
             "LongRoPE long factors in the logits", kind="long_position", flags=("LongPosition",)),
        Case(f"{p}.xpos.half.long", {"xpos_scale_base": 512.0},
             _qk((1, 1, 2, 64), (1, 1, 3, 64), [8191, 8192], [4095, 8000, 8192]),
             "xPos at offsets up to 4097", kind="long_position", flags=("LongPosition",)),
    ]
    cases += error_cases(p, [
        ("head_mismatch", {}, _qk((1, 2, 2, 8), (1, 3, 2, 8), [0, 1], [0, 1]), "invalid_shape",
         "q and k with different head counts"),
        ("k_positions_wrong_length", {}, _qk((1, 1, 2, 8), (1, 1, 3, 8), [0, 1], [0, 1]), "invalid_shape",
         "k_positions of length 2 for Tk = 3"),
        ("xpos_scale_base_zero", {"xpos_scale_base": 0.0}, _qk((1, 1, 2, 8), (1, 1, 2, 8), [0, 1], [0, 1]),
         "invalid_argument", "xpos_scale_base <= 0"),
        ("dynamic_bracket_not_positive", {"rope_type": "dynamic", "factor": 2.0, "original_max_position": 4096,
                                          "context_length": 2048, "dynamic_convention": "vllm_static"},
         _qk((1, 1, 2, 8), (1, 1, 2, 8), [0, 1], [0, 1]), "invalid_argument",
         "vLLM static bracket 2 * 2048 / 4096 - 1 = 0 gives no base"),
    ])
    return tuple(cases)


SCORES = OpRecord(
    name="rope.scores",
    family="rope",
    function=rp.rope_scores,
    inputs=("q", "k", "q_positions", "k_positions"),
    outputs=(Output("scores", "float64", "phase", _scores_phase, _scores_input_scale),),
    params=(BASE, ROTARY_DIM, PARTIAL, SCORE_LAYOUT, X_LAYOUT, FACTOR_A,
            Param("xpos_scale_base", "float", None, doc="xPos scale base (512); None: plain RoPE"), *SCALING_PARAMS),
    summary="q.k logits with q and k rotated at their own positions (layout- and xPos-centre-independent)",
    citation=CITATION + "; Sun et al. 2022 xPos arXiv:2212.10554",
    cases=_scores_cases(),
    position_inputs=("q_positions", "k_positions"),
    value_inputs=("q", "k"),
)


RECORDS = (*SCALING_RECORDS, COS_SIN, APPLY, ROTATE, ROTATE_FREQ, SCORES)
