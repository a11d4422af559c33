"""Registry records of the RoPE ops (:mod:`posenc_ref.rope`, :mod:`posenc_ref.rope_scaling`).

Tolerance phases: a table element ``a cos(p w)`` has phase ``a p w``. A rotated channel has
phase ``a |(u, v)| (1 + |p w|)``: an angle error ``delta`` moves the pair by ``|(u, v)| delta``,
and the ``1 +`` covers the rounding of the products at unit phase. A score sums such pair
errors over the pairs of q and k: its phase is ``a^2 sum_i |q_i| |k_i| (1 + |m w_i| + |n w_i|)``
(times the xPos weight), plus ``sum |q_j k_j|`` over pass-through channels.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from posenc_ref import rope as rp
from posenc_ref import rope_scaling as rs
from posenc_ref import rope_variants as rv
from posenc_ref.errors import ErrorCategory
from posenc_ref.opspec import Case, OpRecord, Output, Param

CITATION = "Su et al. 2021, RoFormer, arXiv:2104.09864, section 3.4.2 (eq. 34)"
LONG = np.array([0, 1, 4095, 8191, 131071, 10**6], dtype=np.int64)
BASES = (1e4, 5e5, 1e6, 1.5e5)
HEAD_DIMS = (64, 128, 80, 96)

BASE = Param("base", "float", 10000.0, doc="rope_theta (transformers), base (vLLM), freq_base (ggml)")
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
FACTOR_A = Param("attention_factor", "float", 1.0, doc="multiplies cos and sin (transformers attention_scaling)")


def _pair_norms(x: NDArray[np.float64], space: int, layout: str) -> NDArray[np.float64]:
    """|(u, v)| of each channel's pair (0 for pass-through channels), same shape as x."""
    n = space // 2
    out = np.zeros_like(x)
    if layout == "half":
        r = np.hypot(x[..., :n], x[..., n:space])
        out[..., :n], out[..., n:space] = r, r
    else:
        r = np.hypot(x[..., 0:space:2], x[..., 1:space:2])
        out[..., 0:space:2], out[..., 1:space:2] = r, r
        if layout == "interleaved_to_half":  # results land in half order
            out[..., :n], out[..., n:space] = r, r
    return out


def _angle_per_channel(params: Mapping[str, Any], x: NDArray[Any], positions: NDArray[Any]) -> tuple[
        NDArray[np.float64], int]:
    space, w = rp.rotary_frequencies(x.shape[-1], base=params["base"], rotary_dim=params["rotary_dim"],
                                     partial=params["partial"], func="phase")
    angle = np.abs(rp._angles("phase", positions, w, x.shape, params["x_layout"], "positions"))
    full = np.zeros(np.broadcast_shapes(angle.shape[:-1], x.shape[:-1]) + (x.shape[-1],))
    full[..., : space // 2] = angle
    full[..., space // 2: space] = angle
    if params["layout"] == "interleaved":
        full[..., :space] = np.repeat(angle, 2, axis=-1)
    return full, space


def _apply_phase(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> NDArray[np.float64]:
    x = np.asarray(inputs["x"], dtype=np.float64)
    angle, space = _angle_per_channel(params, x, inputs["positions"])
    norms = _pair_norms(x, space, params["layout"])
    return np.asarray(params["attention_factor"] * norms * (1.0 + angle), dtype=np.float64)


def _pair_phase(params: Mapping[str, Any], x: NDArray[np.float64], positions: NDArray[Any]) -> tuple[
        NDArray[np.float64], NDArray[np.float64], int]:
    """Per pair: ``|(u, v)|`` (B, H, T, P) and ``|p w|`` (B|1, 1, T, P), in BHTD order; and ``S``."""
    space, w = rp.rotary_frequencies(x.shape[-1], base=params["base"], rotary_dim=params["rotary_dim"],
                                     partial=params["partial"], func="phase")
    angle = np.abs(rp._angles("phase", positions, w, x.shape, params["x_layout"], "positions"))
    n = space // 2
    u, v = (x[..., :n], x[..., n:space]) if params["layout"] == "half" else (x[..., 0:space:2], x[..., 1:space:2])
    norm = np.hypot(u, v)
    if params["x_layout"] == "BTHD":
        norm, angle = norm.transpose(0, 2, 1, 3), angle.transpose(0, 2, 1, 3)
    return norm, angle, space


def _scores_phase(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> NDArray[np.float64]:
    q, k = np.asarray(inputs["q"], dtype=np.float64), np.asarray(inputs["k"], dtype=np.float64)
    rq, aq, space = _pair_phase(params, q, inputs["q_positions"])
    rk, ak, _ = _pair_phase(params, k, inputs["k_positions"])
    if params.get("xpos_scale_base") is None:
        total = np.einsum("bhqp,bhkp->bhqk", rq * (1.0 + aq), rk) + np.einsum("bhqp,bhkp->bhqk", rq, rk * ak)
    else:  # pair weights zeta^x and their own rounding |x ln zeta|
        n = space // 2
        zeta = (2.0 * np.arange(n) + 0.4 * space) / (1.4 * space)
        qp = np.asarray(inputs["q_positions"]).reshape(-1, rq.shape[2]).astype(np.float64)
        kp = np.asarray(inputs["k_positions"]).reshape(-1, rk.shape[2]).astype(np.float64)
        x = (qp[:, :, None] - kp[:, None, :])[:, None, :, :, None] / params["xpos_scale_base"]
        weight = zeta**x  # (B|1, 1, Tq, Tk, P)
        own = weight * (1.0 + np.abs(x * np.log(zeta)))
        total = (np.einsum("bhqp,bhkp,bhqkp->bhqk", rq * (1.0 + aq), rk, own)
                 + np.einsum("bhqp,bhkp,bhqkp->bhqk", rq, rk * ak, weight))
    if params["x_layout"] == "BTHD":
        q, k = q.transpose(0, 2, 1, 3), k.transpose(0, 2, 1, 3)
    rest = np.einsum("bhqd,bhkd->bhqk", np.abs(q[..., space:]), np.abs(k[..., space:]))
    phase: NDArray[np.float64] = np.asarray(params["attention_factor"] ** 2 * total + rest, dtype=np.float64)
    return phase


def _table_phase(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> NDArray[np.float64]:
    product = np.asarray(inputs["positions"], dtype=np.float64)[..., None] * np.asarray(inputs["inv_freq"])
    angle: NDArray[np.float64] = params["attention_factor"] * np.abs(product)
    if params["width"] == "full":
        return np.concatenate([angle, angle], axis=-1)
    if params["width"] == "full_interleaved":
        return np.repeat(angle, 2, axis=-1)
    return angle


def _errors(prefix: str, rows: list[tuple[str, dict[str, Any], Any, ErrorCategory, str]]) -> list[Case]:
    return [Case(f"{prefix}.error.{name}", params, inputs, f"error: {why}", kind="error", error=category)
            for name, params, inputs, category, why in rows]


# --- rope.inv_freq -------------------------------------------------------------------------

YARN = {"rope_type": "yarn"}
DYN = {"rope_type": "dynamic", "dim": 128, "factor": 2.0, "original_max_position": 4096}
L3 = {"rope_type": "llama3", "dim": 128, "base": 5e5, "factor": 8.0, "original_max_position": 8192,
      "low_freq_factor": 1.0, "high_freq_factor": 4.0}


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
        Case(f"{p}.yarn.vllm_deepseek.mscale_only", {**YARN, "dim": 64, "factor": 40.0, "original_max_position": 4096,
                                                     "mscale": 0.707, "yarn_convention": "vllm_deepseek"}, {},
             "vLLM DeepseekScalingRotaryEmbedding: mscale_all_dim defaults to 0, factor g(s, 0.707)"),
        Case(f"{p}.yarn.high_clamped_to_d_minus_1", {**YARN, "dim": 64, "factor": 8.0,
                                                     "original_max_position": 2**20}, {},
             "high = 42 > d/2 - 1: clamped to d - 1 = 63, not to 31 (keras-hub PR #2981)", kind="edge"),
        Case(f"{p}.yarn.beta_zero_means_default", {**YARN, "dim": 128, "factor": 16.0, "original_max_position": 4096,
                                                   "beta_fast": 0.0, "beta_slow": 0.0}, {},
             "beta 0 means the default (transformers reads `x or default`)", kind="edge"),
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
    cases += _errors(p, [
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
             "an explicit attention_factor wins"),
        Case("rope.longrope_inv_freq.factor_below_1", {**PHI3, "factor": 0.5, "context_length": 10},
             _factor_lists(48), "s <= 1: attention factor 1", kind="edge"),
    ] + _errors("rope.longrope_inv_freq", [
        ("wrong_length", {**PHI3, "context_length": 5000}, _factor_lists(47), "invalid_argument",
         "factor list of length 47 for d/2 = 48"),
        ("odd_dim", {**PHI3, "dim": 95, "context_length": 10}, _factor_lists(47), "invalid_argument", "odd dim"),
    ])),
)


# --- rope.cos_sin ----------------------------------------------------------------------------

def _table_inputs(positions: Any, **freq: Any) -> dict[str, NDArray[Any]]:
    return {"positions": np.asarray(positions, dtype=np.int64), "inv_freq": rs.rope_inv_freq(**freq)[0]}


_YARN16 = rs.rope_inv_freq(dim=128, rope_type="yarn", factor=16.0, original_max_position=4096)


def _cos_sin_cases() -> tuple[Case, ...]:
    p = "rope.cos_sin"
    cases = [Case(f"{p}.d{d}.base{int(b)}.long", {"width": "half"}, _table_inputs(LONG, dim=d, base=b),
                  f"half-width cache at positions to 10^6, head dim {d}, base {b:g}", kind="long_position",
                  flags=("LongPosition",))
             for d, b in zip(HEAD_DIMS, BASES)]
    cases += [Case(f"{p}.{width}.d16.positions0-15", {"width": width}, _table_inputs(np.arange(16), dim=16),
                   f"width={width}: where each column's frequency lands") for width in rp.WIDTHS]
    cases += [
        Case(f"{p}.yarn_attention_factor_folded", {"width": "full", "attention_factor": float(_YARN16[1][0])},
             {"positions": np.array([0, 1, 4095, 65535]), "inv_freq": _YARN16[0]},
             "YaRN s16 frequencies with attention factor 1.2773 folded into cos and sin (transformers)"),
        Case(f"{p}.positions_2d_repeated", {"width": "full"},
             _table_inputs([[0, 0, 1, 2], [5, 3, 3, 8191]], dim=32),
             "(B, T) positions, repeated and non-monotonic", kind="edge"),
    ]
    cases += _errors(p, [
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
        Case(f"{p}.bthd.batch_positions", {"x_layout": "BTHD"},
             _x((2, 5, 3, 16), [[0, 1, 2, 3, 4], [0, 0, 0, 1, 2]]),
             "(B, T, H, D) with per-row positions (left padding)"),
        Case(f"{p}.attention_factor", {"attention_factor": 1.2772588722239782}, _x((1, 1, 3, 32), [0, 9, 4095]),
             "YaRN attention factor folded into cos and sin scales the rotated channels"),
        Case(f"{p}.decode_offset", {}, _x((1, 2, 1, 64), [4100]), "one decoding step at position 4100", kind="edge"),
        Case(f"{p}.interleaved_to_half.rotary32.d64", {"layout": "interleaved_to_half", "rotary_dim": 32},
             _x((1, 1, 3, 64), [0, 5, 4095]), "DeepSeek-V3 order on a rope-part prefix", kind="edge"),
    ]
    cases += _errors(p, [
        ("odd_rotary_dim", {"rotary_dim": 5}, _x((1, 1, 2, 8), [0, 1]), "invalid_argument", "odd rotary dim"),
        ("rotary_dim_above_head_dim", {"rotary_dim": 16}, _x((1, 1, 2, 8), [0, 1]), "invalid_argument",
         "rotary_dim > head dim"),
        ("unknown_layout", {"layout": "neox"}, _x((1, 1, 2, 8), [0, 1]), "invalid_argument", "unknown layout"),
        ("positions_wrong_length", {}, _x((1, 1, 2, 8), [0, 1, 2]), "invalid_shape", "positions of length 3 for T = 2"),
        ("x_rank3", {}, _x((1, 2, 8), [0, 1]), "invalid_shape", "x must be 4-D"),
        ("negative_position", {}, _x((1, 1, 2, 8), [0, -1]), "invalid_argument", "a negative position"),
        ("odd_head_dim", {}, _x((1, 1, 2, 7), [0, 1]), "invalid_argument", "odd head dim rotated whole"),
    ])
    return tuple(cases)


APPLY_PARAMS = (BASE, ROTARY_DIM, PARTIAL, LAYOUT, X_LAYOUT, FACTOR_A)
APPLY = OpRecord(
    name="rope.apply",
    family="rope",
    function=rp.rope_apply,
    inputs=("x", "positions"),
    outputs=(Output("y", "float64", "phase", _apply_phase),),
    params=APPLY_PARAMS,
    summary="rotate q or k at explicit positions: layouts, partial prefix / proportional",
    citation=CITATION,
    cases=_apply_cases(),
    position_inputs=("positions",),
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
        Case(f"{p}.xpos.half.long", {"xpos_scale_base": 512.0},
             _qk((1, 1, 2, 64), (1, 1, 3, 64), [8191, 8192], [4095, 8000, 8192]),
             "xPos at offsets up to 4097", kind="long_position", flags=("LongPosition",)),
    ]
    cases += _errors(p, [
        ("head_mismatch", {}, _qk((1, 2, 2, 8), (1, 3, 2, 8), [0, 1], [0, 1]), "invalid_shape",
         "q and k with different head counts"),
        ("k_positions_wrong_length", {}, _qk((1, 1, 2, 8), (1, 1, 3, 8), [0, 1], [0, 1]), "invalid_shape",
         "k_positions of length 2 for Tk = 3"),
        ("xpos_scale_base_zero", {"xpos_scale_base": 0.0}, _qk((1, 1, 2, 8), (1, 1, 2, 8), [0, 1], [0, 1]),
         "invalid_argument", "xpos_scale_base <= 0"),
    ])
    return tuple(cases)


SCORES = OpRecord(
    name="rope.scores",
    family="rope",
    function=rp.rope_scores,
    inputs=("q", "k", "q_positions", "k_positions"),
    outputs=(Output("scores", "float64", "phase", _scores_phase),),
    params=(BASE, ROTARY_DIM, PARTIAL, SCORE_LAYOUT, X_LAYOUT, FACTOR_A,
            Param("xpos_scale_base", "float", None, doc="xPos scale base (512); None: plain RoPE")),
    summary="q.k logits with q and k rotated at their own positions (layout- and xPos-centre-independent)",
    citation=CITATION + "; Sun et al. 2022 xPos arXiv:2212.10554",
    cases=_scores_cases(),
    position_inputs=("q_positions", "k_positions"),
)



# --- rope.xpos -------------------------------------------------------------------------------

def _xpos_phase_of(name: str) -> Any:
    def phase(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> NDArray[np.float64]:
        x = np.asarray(inputs[name], dtype=np.float64)
        common = {"base": params["base"], "rotary_dim": None, "partial": "prefix", "x_layout": params["x_layout"]}
        angle, space = _angle_per_channel({**common, "layout": params["layout"]}, x, inputs["positions"])
        norms = _pair_norms(x, space, params["layout"])
        t_axis = 2 if params["x_layout"] == "BHTD" else 1
        centre = rv.xpos_centre(x.shape[t_axis], params["centring"])
        pos = np.asarray(inputs["positions"]).reshape(-1, x.shape[t_axis]).astype(np.float64)
        power = np.abs(pos - centre) / params["scale_base"]
        power = power[:, None, :, None] if params["x_layout"] == "BHTD" else power[:, :, None, None]
        # the largest scale of any pair bounds this channel's: zeta^-|power| <= (1.4/0.4)^|power|
        bound = (1.4 / 0.4) ** power * (1.0 + power * np.log(1.4 / 0.4))
        return np.asarray(norms * (1.0 + angle) * bound, dtype=np.float64)
    return phase


def _qk_window(shape: tuple[int, ...], positions: Any) -> Any:
    def make(rng: np.random.Generator) -> dict[str, NDArray[Any]]:
        return {"q": rng.normal(size=shape), "k": rng.normal(size=shape),
                "positions": np.asarray(positions, dtype=np.int64)}
    return make


XPOS = OpRecord(
    name="rope.xpos",
    family="rope",
    function=rv.rope_xpos,
    inputs=("q", "k", "positions"),
    outputs=(Output("q_rot", "float64", "phase", _xpos_phase_of("q")),
             Output("k_rot", "float64", "phase", _xpos_phase_of("k"))),
    params=(
        BASE,
        Param("scale_base", "float", 512.0, doc="xPos scale base B (lucidrains xpos_scale_base)"),
        Param("centring", "str", "lucidrains", rv.CENTRINGS,
              users={"lucidrains": "lucidrains/rotary-embedding-torch use_xpos (c = T // 2)",
                     "torchscale": "microsoft/torchscale XPOS (c = ceil(T / 2))"},
              doc="where the scale power is zero"),
        Param("layout", "str", "interleaved", ("interleaved", "half"), doc="pairs (both xPos libraries: interleaved)"),
        X_LAYOUT,
    ),
    summary="xPos-rotated q and k in one window (centring convention named; compare scores across centrings)",
    citation="Sun et al. 2022, A Length-Extrapolatable Transformer, arXiv:2212.10554, eq. 7",
    cases=tuple([
        Case(f"rope.xpos.{centring}.odd_window.d32", {"centring": centring}, _qk_window((1, 2, 5, 32), range(5)),
             f"centring={centring} on an odd window (T = 5): the centres differ") for centring in rv.CENTRINGS
    ] + [
        Case("rope.xpos.even_window.long.d64", {"scale_base": 512.0}, _qk_window((1, 1, 4, 64), [4094, 4095, 4096,
                                                                                               4097]),
             "positions near 4096 in a window of 4", kind="long_position", flags=("LongPosition",)),
        Case("rope.xpos.half.bthd", {"layout": "half", "x_layout": "BTHD"}, _qk_window((2, 6, 2, 16), range(6)),
             "half-split pairs, (B, T, H, D)"),
    ] + _errors("rope.xpos", [
        ("scale_base_zero", {"scale_base": 0.0}, _qk_window((1, 1, 2, 8), [0, 1]), "invalid_argument",
         "scale_base <= 0"),
        ("unknown_centring", {"centring": "middle"}, _qk_window((1, 1, 2, 8), [0, 1]), "invalid_argument",
         "unknown centring"),
        ("scale_overflows", {"scale_base": 1.0}, _qk_window((1, 1, 2, 8), [0, 10**6]), "out_of_range",
         "zeta ** (10^6 / 1) is beyond float64"),
    ])),
    position_inputs=("positions",),
)


# --- rope.mrope_cos_sin ----------------------------------------------------------------------

def _mrope_phase(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> NDArray[np.float64]:
    section = np.asarray(inputs["mrope_section"])
    dim = int(params["dim"])
    stream = rv.mrope_stream(dim // 2, (int(section[0]), int(section[1]), int(section[2])), params["mrope_layout"])
    w = rs.rope_inv_freq(dim=dim, base=params["base"])[0]
    pos = np.asarray(inputs["positions"], dtype=np.float64)
    angle: NDArray[np.float64] = np.moveaxis(pos[stream], 0, -1) * w
    return np.concatenate([angle, angle], axis=-1) if params["width"] == "full" else angle


def _mrope(positions: Any, section: tuple[int, ...]) -> dict[str, NDArray[np.int64]]:
    return {"positions": np.asarray(positions, dtype=np.int64), "mrope_section": np.asarray(section, dtype=np.int64)}


_VISION = [[0, 1, 2, 3, 3, 3, 3, 7, 8], [0, 1, 2, 3, 3, 4, 4, 7, 8], [0, 1, 2, 3, 4, 3, 4, 7, 8]]
_LONG_STREAMS = [[0, 4095, 131071, 10**6], [0, 4095, 131000, 10**6], [0, 4000, 131071, 999000]]

MROPE = OpRecord(
    name="rope.mrope_cos_sin",
    family="rope",
    function=rv.mrope_cos_sin,
    inputs=("positions", "mrope_section"),
    outputs=(Output("cos", "float64", "phase", _mrope_phase), Output("sin", "float64", "phase", _mrope_phase)),
    params=(
        Param("dim", "int", doc="rotary dim d = 2 * sum(mrope_section)"), BASE,
        Param("mrope_layout", "str", "chunked", rv.MROPE_LAYOUTS,
              users={"chunked": "Qwen2-VL; Qwen2.5-VL; Qwen2.5-Omni (transformers, vLLM)",
                     "interleaved": "Qwen3-VL (transformers); vLLM mrope_interleaved"},
              doc="which frequency takes which stream"),
        Param("width", "str", "full", ("half", "full"), doc="table width (as rope.cos_sin)"),
    ),
    summary="multimodal RoPE tables from temporal/height/width position streams",
    citation="Wang et al. 2024, Qwen2-VL, arXiv:2409.12191, section 2.1",
    cases=(
        Case("rope.mrope_cos_sin.chunked.qwen2vl.d128", {"dim": 128, "base": 1e6}, _mrope(_VISION, (16, 24, 24)),
             "Qwen2-VL sections [16, 24, 24]: text, a 2x2 image patch grid, text again"),
        Case("rope.mrope_cos_sin.interleaved.qwen3vl.d128", {"dim": 128, "base": 5e6, "mrope_layout": "interleaved"},
             _mrope(_VISION, (24, 20, 20)), "Qwen3-VL interleaved THWTHW... with sections [24, 20, 20]"),
        Case("rope.mrope_cos_sin.long.half", {"dim": 64, "width": "half"}, _mrope(_LONG_STREAMS, (8, 12, 12)),
             "streams up to 10^6", kind="long_position", flags=("LongPosition",)),
        Case("rope.mrope_cos_sin.error.section_sum", {"dim": 64}, _mrope(_VISION, (16, 24, 24)),
             "error: mrope sections summing to 64, not d/2 = 32", kind="error", error="invalid_argument"),
        Case("rope.mrope_cos_sin.error.two_streams", {"dim": 8}, _mrope([[0, 1], [0, 1]], (2, 1, 1)),
             "error: positions must hold 3 streams", kind="error", error="invalid_shape"),
    ),
    position_inputs=(),
)

RECORDS = (INV_FREQ, LONGROPE, COS_SIN, APPLY, SCORES, XPOS, MROPE)
