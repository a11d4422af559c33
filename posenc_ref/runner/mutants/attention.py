"""Mutants of the attention ops (see :mod:`posenc_ref.runner.mutants`).

Each takes the reference's validated pass (:func:`posenc_ref.attention.prepare_pass`) and
makes one known mistake in the arithmetic after it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from posenc_ref._attention_blockwise import Pass
from posenc_ref.alibi import alibi_bias
from posenc_ref.attention import attention, prepare_pass
from posenc_ref.attention_positional import rope_qk
from posenc_ref.records.attention import attention_case, attention_terms_case
from posenc_ref.records.attention_positional import attention_alibi_case, attention_rope_case
from posenc_ref.runner.emulation import attention as attention_emulation
from posenc_ref.runner.mutants._common import Mutant, swap, with_params

_ARRAYS: Final = ("q", "k", "v", "mask", "key_padding_mask", "bias")
_POSITIONAL: Final = ("q", "k", "v", "q_positions", "k_positions")


def _pass(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]], **changes: Any) -> Pass:
    attention_case(*(inputs[n] for n in _ARRAYS), **params)  # the reference's errors stay
    q, k, v, mask, padding, bias = (inputs[n] for n in _ARRAYS)
    kwargs = {"mask": mask, "key_padding_mask": padding, "bias": bias, **params, **changes}
    return prepare_pass(q, k, v, **kwargs)


def _logits(p: Pass) -> NDArray[np.float64]:
    k = np.repeat(p.k, p.groups, axis=1)
    s: NDArray[np.float64] = (p.q @ k.transpose(0, 1, 3, 2)) * p.scale
    for extra in (p.bias, p.additive):
        if extra is not None:
            s = s + extra
    return np.where(p.keep, s, -np.inf) if p.keep is not None else s


def _softmax(s: NDArray[np.float64], axis: int) -> NDArray[np.float64]:
    m = s.max(axis=axis, keepdims=True)
    e = np.exp(s - np.where(np.isinf(m), 0.0, m))
    total = e.sum(axis=axis, keepdims=True)
    weights: NDArray[np.float64] = e / np.where(total == 0, 1.0, total)
    return weights


def _finish(p: Pass, weights: NDArray[np.float64], v: NDArray[np.float64] | None = None) -> dict[str, Any]:
    """Output from the weights, with the reference's fully-masked-row policy (not the mistake under test)."""
    values = np.repeat(p.v, p.groups, axis=1) if v is None else v
    empty: NDArray[np.bool_] = np.asarray(~np.isfinite(_logits(p)).any(axis=-1))  # (B, H, Tq)
    if p.fully_masked == "nan":
        weights = np.where(empty[..., None], np.nan, weights)
    elif p.fully_masked == "uniform":
        weights = np.where(empty[..., None], 1.0 / weights.shape[-1], weights)
    return {"output": weights @ values, "weights": weights}


def _softmax_over_queries(op: str, params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> Any:
    p = _pass(params, inputs)
    return _finish(p, _softmax(_logits(p), axis=-2))


def _bias_after_softmax(op: str, params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> Any:
    p = _pass(params, inputs)
    plain = _pass(params, {**inputs, "bias": np.zeros((1, 1, 1, 1))})
    weights = _softmax(_logits(plain), axis=-1)
    if p.bias is not None:
        weights = weights + np.where(np.isfinite(_logits(plain)), p.bias, 0.0)
    return _finish(p, weights)


def _gqa_modulo(op: str, params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> Any:
    p = _pass(params, inputs)
    heads = p.q.shape[1]
    kv_heads = p.k.shape[1]
    order = np.arange(heads) % kv_heads  # query head h reads kv head h % Hkv instead of h // (H / Hkv)
    k, v = p.k[:, order], p.v[:, order]
    plain = Pass(p.q, k, v, p.scale, p.keep, p.additive, p.bias, None, None, None, p.fully_masked)
    return _finish(plain, _softmax(_logits(plain), axis=-1))


def _window_plus_one(op: str, params: dict[str, Any]) -> None:
    if params.get("window") is not None:
        params["window"] = int(params["window"]) + 1


def _unscaled(op: str, params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> Any:
    changed = dict(params)
    if changed.get("scale") is None:
        changed["scale"] = 1.0  # the 1/sqrt(D) forgotten
    return attention_case(*(inputs[n] for n in _ARRAYS), **changed)


def _term_after_scale(op: str, params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> Any:
    attention_terms_case(*(inputs[n] for n in ("q", "k", "v", "term", "value_term")), **params)
    p = prepare_pass(inputs["q"], inputs["k"], inputs["v"], bias=inputs["term"], **params)  # t outside the scale
    weights = _softmax(_logits(p), axis=-1)
    out = _finish(p, weights)
    out["output"] = out["output"] + np.einsum("bhqk,bhqkd->bhqd", weights,
                                              np.broadcast_to(inputs["value_term"], weights.shape + (p.q.shape[-1],)))
    return out


def _no_multiplier(op: str, params: dict[str, Any]) -> None:
    if "softmax_multiplier" in params:
        params["softmax_multiplier"] = 1.0  # DeepSeek's mscale**2 dropped: plain D**-0.5


def _rope_on_values(op: str, params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> Any:
    attention_rope_case(*(inputs[n] for n in _POSITIONAL), **params)  # the reference's errors stay
    rotate = rope_qk(base=params["base"], layout=params["layout"])
    v, _ = rotate(np.asarray(inputs["v"], dtype=np.float64), np.asarray(inputs["k"], dtype=np.float64),
                  inputs["k_positions"], inputs["k_positions"])  # v rotated at the key positions
    return attention_rope_case(inputs["q"], inputs["k"], v, inputs["q_positions"], inputs["k_positions"], **params)


def _bias_inside_scale(op: str, params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> Any:
    attention_alibi_case(*(inputs[n] for n in _POSITIONAL), **params)
    q, k, v = (np.asarray(inputs[n], dtype=np.float64) for n in ("q", "k", "v"))
    bias = alibi_bias(inputs["q_positions"], inputs["k_positions"], num_heads=q.shape[1], form=params["form"])
    scale = (params.get("scale") or q.shape[-1] ** -0.5) * params.get("softmax_multiplier", 1.0)
    kwargs = {n: params[n] for n in ("causal", "alignment") if n in params}
    return attention(q, k, v, bias=bias * scale, scale=scale, return_weights=True, **kwargs)  # (q.k + b) * scale


def _softmax_without_max(op: str, params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> Any:
    return attention_emulation.softmax_without_max(params, inputs)  # exp overflows past 88.7


def _shaw_sign_swapped(op: str, params: dict[str, Any]) -> None:
    if "sign" in params:
        params["sign"] = {"key_minus_query": "query_minus_key", "query_minus_key": "key_minus_query"}[params["sign"]]


MUTANTS: Final[tuple[Mutant, ...]] = (
    Mutant("causal-alignment-swapped", "top-left and bottom-right causal alignment exchanged (Tq != Tk)",
           "torch SDPA is_causal (top-left) vs flash-attn flash_attn_func causal (bottom-right, its docstring)",
           ("attention",), with_params(swap("alignment", {"top_left": "bottom_right", "bottom_right": "top_left"})),
           diagnosis="alignment="),
    Mutant("softmax-over-queries", "softmax normalised over the query axis instead of the key axis",
           "a transposed-scores slip (dim=-2 for dim=-1)", ("attention",), _softmax_over_queries),
    Mutant("missing-inverse-sqrt-d", "logits not multiplied by 1/sqrt(D)",
           "Vaswani 2017 section 3.2.1 (the scaled in scaled dot-product)", ("attention",), _unscaled),
    Mutant("gqa-modulo", "query head h reads kv head h % Hkv instead of h // (H / Hkv)",
           "grouped-query head mapping slips in GQA ports (repeat vs tile)", ("attention",), _gqa_modulo,
           diagnosis="GQA heads tiled"),
    Mutant("window-edge-off-by-one", "a sliding window of W keeps W + 1 keys (the query not counted in W)",
           "flash-attn window_size=(W, W) keeps W + 1 keys on each side where (W - 1, W - 1) keeps W "
           "(docs/attention.md, the window row of the conventions table)", ("attention",),
           with_params(_window_plus_one), diagnosis="window edge off by one"),
    Mutant("bias-after-softmax", "the positional bias added to the weights instead of the logits",
           "the lesson card's 'softmax-then-add' mistake", ("attention",), _bias_after_softmax),
    Mutant("relative-term-outside-scale", "the relative logits term added after the 1/sqrt(D) scale, not inside it",
           "Shaw 2018 eq. 4 / Transformer-XL divide the whole score; ports that scale only q . k",
           ("attention.terms",), _term_after_scale),
    Mutant("pe-after-block", "the absolute encoding added after the attention block instead of at the input",
           "the lesson card's 'adding position AFTER the first block'", ("attention.pipeline",),
           with_params(swap("pe_placement", {"input": "after_block", "after_block": "input"})),
           diagnosis="pe_placement="),
    Mutant("missing-softmax-multiplier", "DeepSeek's YaRN softmax multiplier (mscale**2) left out of the scale",
           "DeepSeek-V2/V3 softmax_scale = qk_head_dim**-0.5 * mscale**2; ports that keep only D**-0.5",
           ("attention", "attention.rope"), with_params(_no_multiplier)),
    Mutant("rope-on-values", "RoPE applied to the values as well as to q and k",
           "RoFormer eq. 14 rotates q and k only; a port that rotates every projection", ("attention.rope",),
           _rope_on_values),
    Mutant("rope-layout-swapped-in-attention", "RoPE pairs taken in the other layout inside attention",
           "HF rotate_half vs Meta Llama interleaved pairs (checkpoint permuted for one, run with the other)",
           ("attention.rope",), with_params(swap("layout", {"half": "interleaved", "interleaved": "half"})),
           diagnosis="layout="),
    Mutant("alibi-bias-inside-scale", "the ALiBi bias added before the 1/sqrt(D) scale instead of after it",
           "Press et al. add m * distance to q . k^T after scaling (fairseq, HF BLOOM baddbmm beta=1, alpha=scale)",
           ("attention.alibi",), _bias_inside_scale),
    Mutant("attention-fully-masked-nan", "fully masked rows come out NaN (a plain softmax over -inf logits)",
           "torch SDPA before 2.5 (pytorch/pytorch#41508)", ("attention",),
           with_params(swap("fully_masked", {"zeros": "nan", "uniform": "nan"})), diagnosis="fully_masked='nan'"),
    Mutant("attention-positional-alignment-swapped", "causal mask aligned top-left instead of bottom-right",
           "torch SDPA is_causal=True with a KV cache (pytorch/pytorch#108108)",
           ("attention.rope", "attention.alibi", "attention.t5", "attention.shaw", "attention.xl"),
           with_params(swap("alignment", {"bottom_right": "top_left", "top_left": "bottom_right"})),
           diagnosis="alignment="),
    Mutant("softmax-without-max-subtraction", "float32 softmax as exp(s) / sum exp(s), without subtracting the row max",
           "hand-written attention kernels (the max subtraction is what keeps exp finite)", ("attention",),
           _softmax_without_max, dtype="float32", diagnosis="without max subtraction"),
    Mutant("attention-shaw-sign-swapped", "Shaw's distance taken as i - j where the op says j - i (or back)",
           "transformers relative_key (i - j) vs tensor2tensor (j - i)", ("attention.shaw",),
           with_params(_shaw_sign_swapped), diagnosis="sign="),
)
