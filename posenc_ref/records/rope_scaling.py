"""Registry records of the RoPE frequency ops (:mod:`posenc_ref.rope_scaling`)."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from posenc_ref import rope_scaling as rs
from posenc_ref.opspec import Case, OpRecord, Output, Param, error_cases

BASES = (1e4, 5e5, 1e6, 1.5e5)
HEAD_DIMS = (64, 128, 80, 96)
BASE = Param("base", "float", 10000.0, doc="rope_theta (transformers), base (vLLM), freq_base (ggml)")


# --- rope.inv_freq -------------------------------------------------------------------------

YARN = {"rope_type": "yarn"}
DYN = {"rope_type": "dynamic", "dim": 128, "factor": 2.0, "original_max_position": 4096}
L3 = {"rope_type": "llama3", "dim": 128, "base": 5e5, "factor": 8.0, "original_max_position": 8192,
      "low_freq_factor": 1.0, "high_freq_factor": 4.0}


def exact_inv_freq(**freq: Any) -> dict[str, NDArray[Any]]:
    """The correctly rounded outputs of ``rope.inv_freq`` (the oracle's), for use as case inputs and parameters.

    Case inputs are never made by the float64 reference: its ``base ** -e`` changes in the last bits
    with NumPy's SIMD code path.
    """
    from posenc_ref import oracle

    return oracle.expected("rope.inv_freq", INV_FREQ.full_params(freq), {})


def _llama3_edge(pair: int, which: str) -> dict[str, Any]:
    """llama3 parameters that put pair ``pair``'s wavelength on a band edge (to float64 rounding)."""
    wavelength = 2 * np.pi / float(rs.rope_inv_freq(dim=128, base=5e5)[0][pair])
    if which == "high":
        return {**L3, "high_freq_factor": 8192 / wavelength}
    return {**L3, "low_freq_factor": 8192 / wavelength}


def _inv_freq_cases() -> tuple[Case, ...]:
    p = "rope.inv_freq"
    cases = [Case(f"{p}.default.d{d}.base{int(b)}", {"dim": d, "base": b}, {},
                  f"default frequencies b^(-2i/d) at head dim {d}, base {b:g}")
             for d in HEAD_DIMS for b in BASES]
    cases += [
        Case(f"{p}.default.partial0.25.d24", {"dim": 24}, {},
             "partial rotation 0.25 of head 96: the exponent denominator is the rotary dim 24", kind="edge"),
        Case(f"{p}.linear.d128.factor8", {"dim": 128, "rope_type": "linear", "factor": 8.0}, {},
             "position interpolation: every frequency divided by 8"),
        Case(f"{p}.linear.gemma3_global.d256.base1e6", {"dim": 256, "base": 1e6, "rope_type": "linear",
                                                        "factor": 8.0}, {}, "Gemma 3 global layers: linear 8"),
        Case(f"{p}.ntk_aware.d128.factor4", {"dim": 128, "rope_type": "ntk_aware", "factor": 4.0}, {},
             "static NTK-aware base change b * s^(d/(d-2))"),
        Case(f"{p}.dynamic.sanity.L8192", {**DYN, "context_length": 8192}, {},
             "dynamic NTK d128 s2 M4096 L8192: base 1e4 * 3^(128/126) = 30527.74 (reference note)",
             flags=("KnownAnswer",)),
        Case(f"{p}.dynamic.vllm_static.L3072", {**DYN, "context_length": 3072, "dynamic_convention": "vllm_static"},
             {}, "vLLM static dynamic NTK applies the bracket even below M (base shrinks)", kind="edge"),
        Case(f"{p}.dynamic.vllm_static.L8192", {**DYN, "context_length": 8192, "dynamic_convention": "vllm_static"},
             {}, "vLLM static at L > M agrees with transformers"),
        Case(f"{p}.yarn.sanity.d128.s16", {**YARN, "dim": 128, "factor": 16.0, "original_max_position": 4096},
             {}, "YaRN d128 b1e4 s16 L0 4096: ramp 20..46, attention factor 1.2772588722239782",
             flags=("KnownAnswer",)),
        Case(f"{p}.yarn.deepseek_v3", {**YARN, "dim": 64, "factor": 40.0, "original_max_position": 4096,
                                       "mscale": 1.0, "mscale_all_dim": 1.0, "beta_fast": 32.0, "beta_slow": 1.0},
             {}, "DeepSeek-V3: cos/sin factor 1.0, softmax multiplier 1.8738542070926265", flags=("KnownAnswer",)),
        Case(f"{p}.yarn.gpt_oss.truncate_false", {**YARN, "dim": 64, "base": 150000.0, "factor": 32.0,
                                                  "original_max_position": 4096, "truncate": False},
             {}, "gpt-oss: fractional ramp 8.0928..17.3980, attention factor 1.3465735902799727",
             flags=("KnownAnswer",)),
        Case(f"{p}.yarn.qwen.d128.base1e6.s4", {**YARN, "dim": 128, "base": 1e6, "factor": 4.0,
                                                "original_max_position": 32768}, {},
             "Qwen long-context recipe: ramp 23..40, attention factor 1.1386294361119890", flags=("KnownAnswer",)),
        Case(f"{p}.yarn.explicit_attention_factor", {**YARN, "dim": 128, "factor": 64.0, "original_max_position": 4096,
                                                     "attention_factor": 1.0}, {},
             "explicit attention_factor 1.0 wins over 0.1 ln 64 + 1 (vLLM #46280, Laguna)"),
        Case(f"{p}.yarn.mscale_without_all_dim", {**YARN, "dim": 64, "factor": 40.0, "original_max_position": 4096,
                                                  "mscale": 0.707}, {},
             "mscale set, mscale_all_dim unset: transformers uses g(s, 1), vLLM DeepSeek g(s, mscale)", kind="edge"),
        Case(f"{p}.yarn.mscale_all_dim_only", {**YARN, "dim": 64, "factor": 40.0, "original_max_position": 4096,
                                               "mscale_all_dim": 1.0}, {},
             "mscale_all_dim set, mscale unset: transformers uses g(s, 1) = 1.3689 and softmax scale g(s, 1)^2; "
             "reading the unset mscale as 1 gives g(s, 1) / g(s, 1) = 1", kind="edge"),
        Case(f"{p}.yarn.explicit_attention_factor_below_1", {**YARN, "dim": 128, "factor": 16.0,
                                                         "original_max_position": 4096, "attention_factor": 0.8}, {},
             "an explicit attention_factor other than 1 is returned as given (not squared, not times g(s, 1))"),
        Case(f"{p}.yarn.vllm_deepseek.mscale_only", {**YARN, "dim": 64, "factor": 40.0, "original_max_position": 4096,
                                                     "mscale": 0.707, "yarn_convention": "vllm_deepseek"}, {},
             "vLLM DeepseekScalingRotaryEmbedding: mscale_all_dim defaults to 0, factor g(s, 0.707)"),
        Case(f"{p}.yarn.high_clamped_to_d_minus_1", {**YARN, "dim": 64, "factor": 8.0,
                                                     "original_max_position": 2**20}, {},
             "high = 42 > d/2 - 1: clamped to d - 1 = 63, not to 31 (keras-hub PR #2981)", kind="edge"),
        Case(f"{p}.yarn.beta_zero_means_default", {**YARN, "dim": 128, "factor": 16.0, "original_max_position": 4096,
                                                   "beta_fast": 0.0, "beta_slow": 0.0}, {},
             "beta 0 means the default (transformers reads `x or default`)", kind="edge"),
        Case(f"{p}.yarn.ggml_ext_factor_0.5", {**YARN, "dim": 128, "factor": 16.0, "original_max_position": 4096,
                                               "ext_factor": 0.5}, {},
             "ggml ext_factor 0.5: half the extrapolation weight 1 - gamma, so pairs below the ramp move halfway "
             "to w/s; the attention factor stays g(s, 1)", kind="edge"),
        Case(f"{p}.yarn.ggml_ext_factor_0", {**YARN, "dim": 128, "factor": 16.0, "original_max_position": 4096,
                                             "ext_factor": 0.0}, {},
             "ggml ext_factor 0: every pair interpolated (w/s) and no magnitude correction (attention factor 1)",
             kind="edge"),
        Case(f"{p}.yarn.zero_width_ramp", {**YARN, "dim": 128, "factor": 16.0, "original_max_position": 4096,
                                           "beta_fast": 2.0, "beta_slow": 2.0, "truncate": False}, {},
             "low == high: high += 0.001 makes the ramp a step", kind="edge"),
        Case(f"{p}.llama3.sanity.d128", dict(L3), {},
             "Llama 3.1: pairs 0-28 kept, 29-34 smoothed, 35-63 divided by 8", flags=("KnownAnswer",)),
        Case(f"{p}.llama3.factor32", {**L3, "factor": 32.0}, {}, "Llama 3.2 1B/3B: factor 32"),
        Case(f"{p}.llama3.edge.high_pair29", _llama3_edge(29, "high"), {},
             "pair 29's wavelength exactly on L0/high_freq_factor: continuity makes the side immaterial",
             kind="edge"),
        Case(f"{p}.llama3.edge.low_pair35", _llama3_edge(35, "low"), {},
             "pair 35's wavelength exactly on L0/low_freq_factor: continuity makes the side immaterial",
             kind="edge"),
        Case(f"{p}.proportional.gemma4.h256.rho0.25", {"rope_type": "proportional", "dim": 256, "base": 1e6,
                                                       "partial_rotary_factor": 0.25}, {},
             "Gemma 4 global: 32 pairs at b^(-2i/256), 96 zero frequencies"),
        Case(f"{p}.proportional.h80.rho0.25.factor2", {"rope_type": "proportional", "dim": 80,
                                                       "partial_rotary_factor": 0.25, "factor": 2.0}, {},
             "proportional with int(0.25 * 80 // 2) = 10 turning pairs, divided by factor 2", kind="edge"),
    ]
    cases += [Case(f"{p}.dynamic.L{length}", {**DYN, "context_length": length}, {},
                   f"dynamic NTK threshold: L = M{sign} rescales only when L > M", kind="edge")
              for length, sign in ((4095, " - 1"), (4096, ""), (4097, " + 1"))]
    cases += error_cases(p, [
        ("odd_dim", {"dim": 7}, {}, "invalid_argument", "odd rotary dim"),
        ("unknown_rope_type", {"dim": 8, "rope_type": "su"}, {}, "invalid_argument",
         "unknown rope_type (the message lists the valid ones)"),
        ("linear_missing_factor", {"dim": 8, "rope_type": "linear"}, {}, "invalid_argument",
         "missing required factor (the message names it)"),
        ("yarn_missing_original_max_position", {**YARN, "dim": 8, "factor": 4.0}, {}, "invalid_argument",
         "missing original_max_position (message gives transformers' original_max_position_embeddings)"),
        ("linear_factor_below_1", {"dim": 8, "rope_type": "linear", "factor": 0.5}, {}, "invalid_argument",
         "factor < 1 where not allowed"),
        ("yarn_factor_below_1", {**YARN, "dim": 8, "factor": 0.5, "original_max_position": 4096}, {},
         "invalid_argument", "factor < 1 for yarn"),
        ("dynamic_bracket_not_positive", {**DYN, "context_length": 2048, "dynamic_convention": "vllm_static"}, {},
         "invalid_argument", "vLLM static bracket s L / M - (s - 1) = 0 gives no base"),
        ("dynamic_missing_context_length", {**DYN}, {}, "invalid_argument", "dynamic NTK without context_length"),
        ("llama3_low_not_below_high", {**L3, "low_freq_factor": 4.0}, {}, "invalid_argument",
         "low_freq_factor >= high_freq_factor"),
        ("proportional_rho_above_1", {"dim": 8, "rope_type": "proportional", "partial_rotary_factor": 1.5}, {},
         "invalid_argument", "partial_rotary_factor > 1"),
        ("base_zero", {"dim": 8, "base": 0.0}, {}, "invalid_argument", "base <= 0"),
        ("yarn_ext_factor_above_1", {**YARN, "dim": 8, "factor": 4.0, "original_max_position": 4096,
                                     "ext_factor": 1.5, "yarn_convention": "vllm_deepseek"}, {}, "invalid_argument",
         "ext_factor outside [0, 1] (under the vLLM DeepSeek rules)"),
    ])
    return tuple(cases)


INV_FREQ = OpRecord(
    name="rope.inv_freq",
    family="rope",
    function=rs.rope_inv_freq,
    inputs=(),
    outputs=(Output("inv_freq", "float64", "power"), Output("attention_factor", "float64", "ulp"),
             Output("softmax_scale", "float64", "ulp")),
    params=(
        Param("dim", "int", doc="rotary dim d (head dim h for proportional)"),
        BASE,
        Param("rope_type", "str", "default", rs.ROPE_TYPES, doc="transformers rope_type"),
        Param("factor", "float", None, doc="scale s (transformers factor; vLLM scaling_factor; ggml freq_scale = 1/s)"),
        Param("original_max_position", "int", None,
              doc="L0 / M: transformers original_max_position_embeddings (dynamic: max_position_embeddings); "
                  "vLLM max_position / max_trained_positions; ggml n_ctx_orig"),
        Param("context_length", "int", None, doc="L = max(position_ids) + 1 (dynamic, longrope)"),
        Param("low_freq_factor", "float", None, doc="llama3 low_freq_factor"),
        Param("high_freq_factor", "float", None, doc="llama3 high_freq_factor"),
        Param("beta_fast", "float", None, doc="YaRN beta_fast (32; ggml beta_fast)"),
        Param("beta_slow", "float", None, doc="YaRN beta_slow (1; ggml beta_slow)"),
        Param("mscale", "float", None, doc="YaRN mscale"),
        Param("mscale_all_dim", "float", None, doc="YaRN mscale_all_dim"),
        Param("attention_factor", "float", None, doc="explicit attention factor (ggml attn_factor)"),
        Param("truncate", "int", True, (True, False), doc="bool: YaRN floors/ceils the ramp bounds"),
        Param("ext_factor", "float", 1.0,
              doc="YaRN: ggml ext_factor, weight of the ramp's extrapolation side in [0, 1] (1: transformers)"),
        Param("partial_rotary_factor", "float", 1.0, doc="proportional: fraction of the head that turns"),
        Param("dynamic_convention", "str", "transformers", rs.DYNAMIC_CONVENTIONS,
              users={"transformers": "transformers 5.x (rescale only when L > M)",
                     "vllm_static": "vLLM 0.33 DynamicNTKScalingRotaryEmbedding (static, always)"},
              doc="dynamic NTK semantics"),
        Param("yarn_convention", "str", "transformers", rs.YARN_CONVENTIONS,
              users={"transformers": "transformers 5.x _compute_yarn_parameters",
                     "vllm_deepseek": "vLLM 0.33 DeepseekScalingRotaryEmbedding"},
              doc="YaRN truncation and attention-factor rules"),
    ),
    summary="inverse frequencies, attention factor and softmax multiplier of every RoPE scaling variant",
    citation="transformers 5.x modeling_rope_utils; Peng et al. 2023 YaRN arXiv:2309.00071; Chen et al. 2023 "
             "arXiv:2306.15595; Llama 3.1 apply_scaling",
    cases=_inv_freq_cases(),
)


# --- rope.longrope_inv_freq ------------------------------------------------------------------

def _factor_lists(pairs: int) -> Any:
    def make(rng: np.random.Generator) -> dict[str, NDArray[np.float64]]:
        return {"short_factor": np.sort(rng.uniform(1.0, 3.0, pairs)),
                "long_factor": np.sort(rng.uniform(1.0, 60.0, pairs))}
    return make


PHI3 = {"dim": 96, "factor": 32.0, "original_max_position": 4096}
LONGROPE = OpRecord(
    name="rope.longrope_inv_freq",
    family="rope",
    function=rs.longrope_inv_freq,
    inputs=("short_factor", "long_factor"),
    outputs=(Output("inv_freq", "float64", "power"), Output("attention_factor", "float64", "ulp")),
    params=(
        Param("dim", "int", doc="rotary dim d"), BASE,
        Param("factor", "float", doc="s = max_position_embeddings / L0"),
        Param("original_max_position", "int", doc="L0 (transformers original_max_position_embeddings)"),
        Param("context_length", "int", doc="L = max(position_ids) + 1; long factors when L > L0"),
        Param("attention_factor", "float", None, doc="explicit attention factor"),
        Param("longrope_convention", "str", "transformers", rs.LONGROPE_CONVENTIONS,
              users={"transformers": "transformers 5.x _compute_longrope_parameters (explicit attention_factor wins)",
                     "vllm": "vLLM 0.33 Phi3LongRoPEScaledRotaryEmbedding; llama.cpp converter (ignored)"},
              doc="whether an explicit attention_factor is honoured"),
    ),
    summary="LongRoPE (Phi-3) frequencies with short/long factors chosen by explicit context length",
    citation="transformers 5.x _compute_longrope_parameters; microsoft/LongRoPE",
    cases=tuple([
        Case(f"rope.longrope_inv_freq.phi3.L{length}", {**PHI3, "context_length": length}, _factor_lists(48),
             f"threshold L0{sign}: {'long' if length > 4096 else 'short'} factors; attention factor "
             "sqrt(1 + ln 32 / ln 4096) = 1.1902380714238083", kind="normal" if length == 4097 else "edge",
             flags=("KnownAnswer",))
        for length, sign in ((4095, " - 1"), (4096, ""), (4097, " + 1"))
    ] + [
        Case("rope.longrope_inv_freq.explicit_attention_factor", {**PHI3, "context_length": 131072,
                                                                  "attention_factor": 1.25}, _factor_lists(48),
             "an explicit attention_factor wins (transformers)"),
        Case("rope.longrope_inv_freq.vllm.explicit_attention_factor_ignored",
             {**PHI3, "context_length": 131072, "attention_factor": 1.25, "longrope_convention": "vllm"},
             _factor_lists(48), "vLLM ignores the explicit attention_factor: sqrt(1 + ln 32 / ln 4096)"),
        Case("rope.longrope_inv_freq.factor_below_1", {**PHI3, "factor": 0.5, "context_length": 10},
             _factor_lists(48), "s <= 1: attention factor 1", kind="edge"),
    ] + error_cases("rope.longrope_inv_freq", [
        ("wrong_length", {**PHI3, "context_length": 5000}, _factor_lists(47), "invalid_argument",
         "factor list of length 47 for d/2 = 48"),
        ("odd_dim", {**PHI3, "dim": 95, "context_length": 10}, _factor_lists(47), "invalid_argument", "odd dim"),
        ("vllm.wrong_length", {**PHI3, "context_length": 131072, "longrope_convention": "vllm"}, _factor_lists(49),
         "invalid_argument", "under longrope_convention='vllm': factor lists of length 49 for d/2 = 48"),
    ])),
)

RECORDS = (INV_FREQ, LONGROPE)
