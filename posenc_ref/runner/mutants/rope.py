"""Mutants of the RoPE ops (see :mod:`posenc_ref.runner.mutants`): one per bug class seen in the wild."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from posenc_ref import rope, rope_scaling, rope_variants
from posenc_ref.registry import get_op
from posenc_ref.runner.emulation import emulate, round_bfloat16
from posenc_ref.runner.emulation import rope as emu
from posenc_ref.runner.mutants._common import Mutant, swap, with_params

_ROTATING = ("rope.apply", "rope.scores")


def _lowp(op: str, params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]], *, freq: bool) -> Any:
    """float32 pipeline with the inverse frequencies (freq) or the positions rounded to bfloat16."""
    get_op(op).call(params, inputs)  # the reference's validation and errors
    ct, bf = np.float32, round_bfloat16
    if op == "rope.inv_freq":
        w, factor_a, softmax = emu.emulate_inv_freq(params, ct, freq_round=bf)
        return w, np.array([factor_a]), np.array([softmax])
    if op == "rope.cos_sin":
        w = bf(np.asarray(inputs["inv_freq"])) if freq else np.asarray(inputs["inv_freq"])
        pos = np.asarray(inputs["positions"]) if freq else bf(np.asarray(inputs["positions"], dtype=np.float32))
        return emulate(op, params, {"positions": pos, "inv_freq": w}, output_dtype="float32", angle_dtype="float32")
    keep = emu._keep
    freq_round, position_round = (bf, keep) if freq else (keep, bf)
    if op == "rope.apply":
        return emu.rotate_lowp(np.asarray(inputs["x"]), inputs["positions"], params, ct, ct, freq_round,
                               position_round)[0]
    return emu.scores_lowp(params, inputs, ct, ct, freq_round=freq_round, position_round=position_round)


def _bf16_inv_freq(op: str, params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> Any:
    return _lowp(op, params, inputs, freq=True)


def _bf16_positions(op: str, params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> Any:
    return _lowp(op, params, inputs, freq=False)


def _float32_angles(op: str, params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> Any:
    return emulate(op, params, inputs, output_dtype="float32", angle_dtype="float32")


def _yarn_no_attention_factor(op: str, params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> Any:
    w, factor_a, softmax = rope_scaling.rope_inv_freq(**params)
    return w, (np.ones(1) if params["rope_type"] == "yarn" else factor_a), softmax


def _yarn_ramp_half_clamp(op: str, params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> Any:
    w, factor_a, softmax = rope_scaling.rope_inv_freq(**params)
    if params["rope_type"] != "yarn":
        return w, factor_a, softmax
    d = int(params["dim"])
    low, high = rope_scaling.yarn_correction_range(
        dim=d, base=params["base"], original_max_position=params["original_max_position"],
        beta_fast=params["beta_fast"], beta_slow=params["beta_slow"], truncate=params["truncate"])
    high = min(high, d // 2 - 1)  # the bug: d/2 - 1 instead of d - 1
    plain = rope_scaling.rope_inv_freq(dim=d, base=params["base"])[0]
    ramp = rope_scaling.yarn_ramp(low, high, d // 2)
    return plain * (1 - ramp) + plain / params["factor"] * ramp, factor_a, softmax


def _llama3_edge_off_by_one(op: str, params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> Any:
    w, factor_a, softmax = rope_scaling.rope_inv_freq(**params)
    if params["rope_type"] != "llama3":
        return w, factor_a, softmax
    plain = rope_scaling.rope_inv_freq(dim=params["dim"], base=params["base"])[0]
    smoothed = np.flatnonzero((w != plain) & (w != plain / params["factor"]))
    if smoothed.size:
        w = w.copy()
        w[smoothed[0]] = plain[smoothed[0]]  # the bug: the first smoothed pair still counted as kept
    return w, factor_a, softmax


def _dynamic_no_exponent(op: str, params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> Any:
    w, factor_a, softmax = rope_scaling.rope_inv_freq(**params)
    if params["rope_type"] != "dynamic":
        return w, factor_a, softmax
    s, trained, d = params["factor"], params["original_max_position"], params["dim"]
    length = params["context_length"]
    if params["dynamic_convention"] == "transformers":
        length = max(length, trained)
    base = params["base"] * (s * length / trained - (s - 1))  # the bug: no ** (d / (d - 2))
    return rope_scaling.rope_inv_freq(dim=d, base=base)[0], factor_a, softmax


def _partial_over_head_dim(op: str, params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> Any:
    get_op(op).call(params, inputs)
    f64 = np.float64
    if op == "rope.apply":
        x = np.asarray(inputs["x"], dtype=f64)
        return emu.rotate_lowp(x, inputs["positions"], params, f64, f64, denominator=x.shape[-1])[0]
    q, k = np.asarray(inputs["q"], dtype=f64), np.asarray(inputs["k"], dtype=f64)
    qr = emu.rotate_lowp(q, inputs["q_positions"], params, f64, f64, denominator=q.shape[-1])[0]
    kr = emu.rotate_lowp(k, inputs["k_positions"], params, f64, f64, denominator=k.shape[-1])[0]
    if params["x_layout"] == "BTHD":
        qr, kr = qr.transpose(0, 2, 1, 3), kr.transpose(0, 2, 1, 3)
    return np.einsum("bhqd,bhkd->bhqk", qr, kr)


def _xpos_same_sign(op: str, params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> Any:
    result = get_op(op).call(params, inputs)
    if op == "rope.xpos":
        q = result["q_rot"]
        plain_k = rope_variants.rope_xpos(inputs["k"], inputs["k"], inputs["positions"], **params)[0]
        return q, plain_k  # keys scaled by zeta^(+power), like queries
    if params.get("xpos_scale_base") is None:
        return get_op(op).call(params, inputs)
    return emu.scores_lowp(params, inputs, np.float64, np.float64, q_sign=1.0)


def _longrope_switch_at_threshold(op: str, params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> Any:
    changed = dict(params)
    if params["context_length"] == params["original_max_position"]:
        changed["context_length"] += 1  # the bug: long factors from L >= L0
    return get_op(op).call(changed, inputs)


def _positions_plus_one(op: str, params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> Any:
    return get_op(op).call(params, {**inputs, "positions": np.asarray(inputs["positions"]) + 1})


def _dynamic_as_linear(op: str, params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> Any:
    if op == "rope.apply":
        if params.get("rope_type") != "dynamic":
            return get_op(op).call(params, inputs)
        head = np.shape(inputs["x"])[-1]
        d = head if params.get("rotary_dim") is None or params.get("partial") == "proportional" else int(
            params["rotary_dim"])
        linear = {**params, **rope.SCALING, "rope_type": "linear", "factor": float(params["factor"]) ** (d / (d - 2))}
        return get_op(op).call(linear, inputs)  # the bug: a uniform rescale, whatever the context length
    w, factor_a, softmax = rope_scaling.rope_inv_freq(**params)
    if params["rope_type"] != "dynamic":
        return w, factor_a, softmax
    d = int(params["dim"])
    plain = rope_scaling.rope_inv_freq(dim=d, base=params["base"])[0]
    return plain / float(params["factor"]) ** (d / (d - 2)), factor_a, softmax  # the bug: a uniform rescale


def _theta_ignored(op: str, params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> Any:
    return get_op(op).call({**params, "base": 10000.0}, inputs)  # the bug: rope_theta never read


def _longrope_always_long(op: str, params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> Any:
    get_op(op).call(params, inputs)
    trained = int(params["original_max_position"])
    return get_op(op).call({**params, "context_length": max(int(params["context_length"]), trained + 1)}, inputs)


def _yarn_beta_zero_literal(op: str, params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> Any:
    w, factor_a, softmax = rope_scaling.rope_inv_freq(**params)
    if params["rope_type"] != "yarn" or not (params.get("beta_fast") == 0 and params.get("beta_slow") == 0):
        return w, factor_a, softmax
    # beta 0 read as 0: both correction bounds are d log(L0 / 0) / (2 log b) = inf, high clamped to d - 1,
    # so (i - low) / (high - low) -> 1 for every pair: every frequency interpolated (divided by s)
    plain = rope_scaling.rope_inv_freq(dim=params["dim"], base=params["base"])[0]
    return plain / float(params["factor"]), factor_a, softmax


def _yarn_truncate_ignored(op: str, params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> Any:
    return get_op(op).call({**params, "truncate": True} if params.get("rope_type") == "yarn" else params, inputs)


def _yarn_attention_factor_ignored(op: str, params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> Any:
    changed = {**params, "attention_factor": None} if params.get("rope_type") == "yarn" else params
    return get_op(op).call(changed, inputs)


def _float32_rounded_angles(op: str, params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> Any:
    cos, sin = (get_op(op).call(params, inputs)[name] for name in ("cos", "sin"))
    factor = np.float32(params.get("attention_factor", 1.0))
    pos = np.asarray(inputs["positions"], dtype=np.float64)
    angle = (pos[..., None] * np.asarray(inputs["inv_freq"], dtype=np.float64)).astype(np.float32)
    c, s = factor * np.cos(angle), factor * np.sin(angle)  # float32 sin/cos of the float32-rounded angle
    width = params.get("width", "full")
    if width == "full":
        c, s = np.concatenate([c, c], -1), np.concatenate([s, s], -1)
    elif width == "full_interleaved":
        c, s = np.repeat(c, 2, -1), np.repeat(s, 2, -1)
    assert c.shape == cos.shape and s.shape == sin.shape
    return c, s


def _positions_minus_one(op: str, params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> Any:
    result = get_op(op).call(params, inputs)  # the reference's validation and errors
    pos = np.asarray(inputs["positions"]) - 1  # the bug: position_ids = cumsum(mask) - 2, so 0 becomes -1
    f64 = np.float64
    if op == "rope.apply":
        return emu.rotate_lowp(np.asarray(inputs["x"], dtype=f64), pos, get_op(op).full_params(params), f64, f64)[0]
    factor = float(params.get("attention_factor", 1.0))
    angle = pos.astype(f64)[..., None] * np.asarray(inputs["inv_freq"], dtype=f64)
    c, s = factor * np.cos(angle), factor * np.sin(angle)
    width = params.get("width", "full")
    if width == "full":
        c, s = np.concatenate([c, c], -1), np.concatenate([s, s], -1)
    elif width == "full_interleaved":
        c, s = np.repeat(c, 2, -1), np.repeat(s, 2, -1)
    assert c.shape == result["cos"].shape
    return c, s


def _ggml_running_product(op: str, params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> Any:
    result = get_op(op).call(params, inputs)  # the reference's validation and errors
    if params.get("rope_type", "default") != "default":
        return result  # Note: ggml's scaled rotations go through rope_yarn; the bug is modelled unscaled
    return emu.rotate_running_product(np.asarray(inputs["x"]), inputs["positions"], get_op(op).full_params(params))


def _factor_on_pass_through(op: str, params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> Any:
    y, full = get_op(op).call(params, inputs), get_op(op).full_params(params)
    if not emu.has_pass_through_factor(full, np.shape(inputs["x"])[-1]):
        return y
    return {"y": emu.factor_on_pass_through(y["y"], full)}  # the bug: the untouched channels scaled too


def _yarn_mscale_unset_as_one(op: str, params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> Any:
    if (params.get("rope_type") != "yarn" or params.get("mscale_all_dim") is None or params.get("mscale") is not None
            or params.get("attention_factor") is not None):
        return get_op(op).call(params, inputs)
    return get_op(op).call({**params, "mscale": 1.0}, inputs)  # g(s, 1) / g(s, m_all): the ratio rule applied


MUTANTS: Final[tuple[Mutant, ...]] = (
    Mutant("rope-layout-swapped", "half-split (rotate_half) and interleaved pairs exchanged",
           "huggingface/transformers#25199; keras-team/keras-hub#1416", (*_ROTATING, "rope.rotate", "rope.rotate_freq"),
           with_params(swap("layout", {"half": "interleaved", "interleaved": "half", "interleaved_to_half": "half"})),
           diagnosis="layout="),
    Mutant("rope-bf16-inv-freq", "inverse frequencies rounded to bfloat16 before the phase product",
           "sgl-project/sglang-jax#1472; huggingface/transformers#29496",
           ("rope.inv_freq", "rope.cos_sin", *_ROTATING), _bf16_inv_freq, dtype="float32"),
    Mutant("rope-bf16-positions", "positions created in bfloat16 (256 is the last exact step of 1)",
           "huggingface/candle#3520; NVIDIA/Megatron-LM#535", ("rope.cos_sin", *_ROTATING), _bf16_positions,
           dtype="float32"),
    Mutant("rope-float32-angles-claimed-float64", "angles p * w in float32 by an implementation that claims float64",
           "huggingface/transformers#29285; vllm-project/vllm#1004",
           ("rope.cos_sin", "rope.mrope_cos_sin", "rope.xpos", *_ROTATING), _float32_angles,
           diagnosis="float32 angles"),
    Mutant("rope-yarn-without-attention-factor", "YaRN frequencies without the 0.1 ln s + 1 attention factor",
           "vllm-project/vllm#57563; turboderp-org/exllamav3#259", ("rope.inv_freq",), _yarn_no_attention_factor,
           diagnosis="attention_factor 1 (fitted)"),
    Mutant("rope-yarn-ramp-clamped-half", "YaRN high bound clamped to d/2 - 1 instead of d - 1",
           "keras-team/keras-hub#2981", ("rope.inv_freq",), _yarn_ramp_half_clamp),
    Mutant("rope-llama3-band-edge-off-by-one", "Llama 3 band split one pair late (first smoothed pair kept)",
           "meta-llama/llama-models apply_scaling ports", ("rope.inv_freq",), _llama3_edge_off_by_one),
    Mutant("rope-dynamic-ntk-no-exponent", "dynamic NTK base scaled without the d/(d-2) exponent",
           "vllm-project/vllm#41236", ("rope.inv_freq",), _dynamic_no_exponent),
    Mutant("rope-partial-denominator-head-dim", "prefix partial rotation with exponent 2i/h instead of 2i/d",
           "pie-project/pie#603", _ROTATING, _partial_over_head_dim),
    Mutant("rope-xpos-same-sign-powers", "xPos keys scaled by zeta^(+n/B) like queries instead of zeta^(-n/B)",
           "lucidrains/x-transformers#233", ("rope.scores", "rope.xpos"), _xpos_same_sign),
    Mutant("rope-longrope-switch-at-threshold", "LongRoPE long factors from L >= L0 instead of L > L0",
           "ggml-org/llama.cpp#8995; microsoft/onnxruntime-genai#1161", ("rope.longrope_inv_freq",),
           _longrope_switch_at_threshold),
    Mutant("rope-positions-off-by-one", "positions start at 1 (position_ids = cumsum(mask) instead of - 1)",
           "huggingface/transformers generation position_ids", ("rope.apply", "rope.cos_sin", "rope.rotate_freq"),
           _positions_plus_one,
           diagnosis="positions + 1"),
    Mutant("rope-dynamic-as-linear-rescale", "dynamic NTK as a uniform rescale of every frequency by s^(d/(d-2))",
           "keras-team/keras-hub RotaryEmbedding scaling 'dynamic'", ("rope.inv_freq", "rope.apply"),
           _dynamic_as_linear,
           diagnosis="rope_type='linear' with factor"),
    Mutant("rope-longrope-always-long", "LongRoPE long factors at every context length",
           "ml-explore/mlx-lm SuScaledRoPE", ("rope.longrope_inv_freq",), _longrope_always_long,
           diagnosis="always the long factors"),
    Mutant("rope-yarn-beta-zero-literal", "YaRN beta_fast = beta_slow = 0 read as 0, not as the defaults",
           "transformers reads `x or default`; ports that read the value literally", ("rope.inv_freq",),
           _yarn_beta_zero_literal, diagnosis="read literally"),
    Mutant("rope-yarn-truncate-ignored", "YaRN truncate=False ignored (bounds always floored/ceiled)",
           "ggml-org/llama.cpp ggml_rope_yarn_corr_dims; ml-explore/mlx-lm YarnRoPE", ("rope.inv_freq",),
           _yarn_truncate_ignored, diagnosis="truncate=False ignored"),
    Mutant("rope-yarn-attention-factor-ignored", "YaRN explicit attention_factor ignored (mscale rule used)",
           "ml-explore/mlx-lm YarnRoPE", ("rope.inv_freq",), _yarn_attention_factor_ignored,
           diagnosis="explicit attention_factor ignored"),
    Mutant("rope-float32-rounded-angles-claimed-float64",
           "angles rounded to float32 and sin/cos in float32 by an implementation that claims float64",
           "float32 libraries run at --dtype float64 (keras-hub, MLX)", ("rope.cos_sin",), _float32_rounded_angles,
           diagnosis="float32 angles"),
    Mutant("rope-positions-minus-one", "positions start at -1 (position_ids = cumsum(mask) - 2)",
           "huggingface/transformers generation position_ids", ("rope.apply", "rope.cos_sin"), _positions_minus_one,
           diagnosis="positions - 1"),
    Mutant("rope-ggml-running-product", "angles by a float32 running product theta *= base^(-2/d) from theta = p",
           "ggml-org/llama.cpp ggml_rope (ggml-cpu rope_yarn loop: theta *= theta_scale)", ("rope.apply",),
           _ggml_running_product, dtype="float32", diagnosis="running-product angles"),
    Mutant("rope-attention-factor-on-pass-through", "the attention factor also multiplies the channels left unrotated",
           "partial-rotary ports that scale the whole head (cos/sin padded with the factor instead of 1)",
           ("rope.apply",), _factor_on_pass_through, diagnosis="pass-through channels"),
    Mutant("rope-yarn-mscale-unset-as-one", "YaRN with only mscale_all_dim set: the unset mscale read as 1, "
           "so the ratio g(s, 1) / g(s, mscale_all_dim) is used where transformers uses g(s, 1)",
           "ports that default mscale to 1 before transformers' `if mscale and mscale_all_dim` test",
           ("rope.inv_freq",), _yarn_mscale_unset_as_one, diagnosis="vLLM DeepSeek mscale rule"),
    Mutant("rope-theta-ignored", "rope_theta never read: the rotation at base 10000 whatever the case's base",
           "huggingface/candle#3746 (Yi); sgl-project/SpecForge#265; young-geng/EasyLM#117", ("rope.apply",),
           _theta_ignored, diagnosis="with base 10000 (fitted)"),
)
