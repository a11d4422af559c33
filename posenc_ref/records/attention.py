"""Registry records of the attention pass (:mod:`posenc_ref.attention`); the pipeline's is in ``attention_pipeline``.

The ``attention`` op takes every mask and the bias as stored arrays so that one op covers all
of them; a case without one stores the neutral value (an all-True mask, an all-True padding
row, a zero bias), each at the smallest broadcastable shape.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from posenc_ref.attention import ALIGNMENTS, FULLY_MASKED, attention
from posenc_ref.errors import ErrorCategory, SpecError
from posenc_ref.opspec import Case, OpRecord, Output, Param, error_cases
from posenc_ref.records import attention_pipeline, attention_positional
from posenc_ref.records.rope_scaling import exact_inv_freq

F64 = NDArray[np.float64]


def attention_case(q: Any, k: Any, v: Any, mask: Any, key_padding_mask: Any, bias: Any, /,
                   **params: Any) -> tuple[F64, F64]:
    """The registered form of :func:`~posenc_ref.attention.attention`: masks and bias as arrays, weights returned."""
    result = attention(q, k, v, mask=mask, key_padding_mask=key_padding_mask, bias=bias, return_weights=True,
                       **params)
    if not isinstance(result, tuple):  # return_weights=True always gives a pair
        raise RuntimeError("attention: expected (output, weights)")
    return result


def attention_terms_case(q: Any, k: Any, v: Any, term: Any, value_term: Any, /, **params: Any) -> tuple[F64, F64]:
    """The logits-term plug-in with stored terms: ``term`` (B, H, Tq, Tk) and ``value_term`` (B, H, Tq, Tk, D).

    The plug-in reads key ``j``'s slice by its position, ``k_positions = arange(Tk)``.
    """
    t_arr, u_arr = np.asarray(term, dtype=np.float64), np.asarray(value_term, dtype=np.float64)

    def stored(qq: F64, kk: F64, q_pos: NDArray[np.int64], k_pos: NDArray[np.int64]) -> tuple[F64, F64]:
        return t_arr[..., k_pos], u_arr[..., k_pos, :]

    q_arr, k_arr = np.asarray(q), np.asarray(k)
    tk = k_arr.shape[-2] if k_arr.ndim >= 2 else 0
    tq = q_arr.shape[-2] if q_arr.ndim >= 2 else 0
    if t_arr.ndim < 1 or t_arr.shape[-1] != tk or u_arr.ndim < 2 or u_arr.shape[-2] != tk:
        raise SpecError(f"attention_terms_case: term (..., Tk) and value_term (..., Tk, D) need Tk={tk} keys, "
                        f"got shapes {t_arr.shape} and {u_arr.shape}", category="invalid_shape")
    result = attention(q, k, v, logits_term=stored, q_positions=np.arange(tq), k_positions=np.arange(tk),
                       return_weights=True, **params)
    if not isinstance(result, tuple):
        raise RuntimeError("attention: expected (output, weights)")
    return result


ALIGNMENT = Param(
    "alignment", "str", "bottom_right", ALIGNMENTS,
    users={"top_left": "torch SDPA is_causal=True (2.x); ONNX Runtime CPU Attention",
           "bottom_right": "flash-attn causal=True (2.1+); ONNX Attention with past_key; KV-cache decoding (HF)"},
    doc="where the causal diagonal and the window sit when Tq != Tk",
)
FULLY_MASKED_PARAM = Param(
    "fully_masked", "str", "zeros", FULLY_MASKED,
    users={"zeros": "torch SDPA >= 2.5 (_safe_softmax); flash-attn; ONNX Attention after onnx/onnx#8068",
           "nan": "torch SDPA < 2.5 math backend; plain softmax (ONNX reference evaluator before #8068)",
           "uniform": "finite mask fill: HF eager attention (finfo.min); ONNX Runtime (-1e30 fill)",
           "error": "posenc-ref strict mode (no library)"},
    doc="what a query row with every key masked produces",
)

_DEEPSEEK_V3_MULTIPLIER = float(exact_inv_freq(
    dim=64, rope_type="yarn", factor=40.0, original_max_position=4096, beta_fast=32.0, beta_slow=1.0, mscale=1.0,
    mscale_all_dim=1.0)["softmax_scale"][0])
_TRUE_MASK = np.ones((1, 1, 1, 1), dtype=bool)
_ZERO_BIAS = np.zeros((1, 1, 1, 1))


def _qkv(b: int, h: int, hkv: int, tq: int, tk: int, d: int, *, mask: Any = None, padding: Any = None,
         bias: Any = None) -> Any:
    def make(rng: np.random.Generator) -> dict[str, Any]:
        return {
            "q": rng.normal(size=(b, h, tq, d)),
            "k": rng.normal(size=(b, hkv, tk, d)),
            "v": rng.normal(size=(b, hkv, tk, d)),
            "mask": _TRUE_MASK if mask is None else mask(rng) if callable(mask) else mask,
            "key_padding_mask": np.ones((1, tk), dtype=bool) if padding is None else padding,
            "bias": _ZERO_BIAS if bias is None else bias(rng) if callable(bias) else bias,
        }
    return make


def _large_logits(make: Any, factor: float) -> Any:
    """``make``'s inputs with q and k multiplied by ``factor`` (logits by its square)."""
    def scaled(rng: np.random.Generator) -> dict[str, Any]:
        arrays = make(rng)
        return {**arrays, "q": factor * arrays["q"], "k": factor * arrays["k"]}
    return scaled


def _relative_bias(tq: int, tk: int, h: int, q_offset: int) -> F64:
    """``-slope_h * |i - j|`` from explicit positions ``i = q_offset + row``, ``j = column``; (1, H, Tq, Tk)."""
    slopes = np.ldexp(1.0, -np.arange(1, h + 1))  # exact powers of two (no SIMD power)
    distance = np.abs((np.arange(tq) + q_offset)[:, None] - np.arange(tk)[None, :])
    bias: F64 = -slopes[:, None, None] * distance
    return bias[None]


def _fully_masked_row(rng: np.random.Generator) -> NDArray[np.bool_]:
    mask = rng.random((2, 1, 5, 6)) < 0.7
    mask[0, 0, 2] = False  # query row 2 of batch 0 sees no key
    mask[1, 0, 4] = False
    mask[:, :, [0, 1, 3], 0] = True  # every other row keeps at least one key
    return mask


def _boolean_mask(rng: np.random.Generator) -> NDArray[np.bool_]:
    mask = rng.random((2, 1, 5, 6)) < 0.5
    mask[..., 0] = True  # no row is empty
    return mask


def _attention_cases() -> tuple[Case, ...]:
    left_padded = np.array([[False, False, True, True, True, True, True],
                            [True, True, True, True, True, True, True]])
    additive = np.zeros((1, 1, 4, 6))
    additive[..., 1] = -np.inf
    additive[..., 3] = -1.5
    cases = [
        Case("attention.mha.b2h2.t6.d8", {}, _qkv(2, 2, 2, 6, 6, 8), "plain multi-head attention, no mask"),
        Case("attention.gqa.h4kv2.t5.d8", {}, _qkv(1, 4, 2, 5, 5, 8),
             "grouped-query heads: query heads 0,1 read kv head 0 and 2,3 read kv head 1"),
        Case("attention.mqa.h3kv1.t4.d4", {}, _qkv(2, 3, 1, 4, 4, 4), "multi-query: every head reads kv head 0"),
        Case("attention.causal.top_left.tq4tk7", {"causal": True, "alignment": "top_left"},
             _qkv(1, 4, 2, 4, 7, 8), "causal top-left (torch SDPA is_causal) with Tq < Tk: row i sees keys 0..i"),
        Case("attention.causal.bottom_right.tq4tk7", {"causal": True, "alignment": "bottom_right"},
             _qkv(1, 4, 2, 4, 7, 8), "causal bottom-right (flash-attn, a cache) with Tq < Tk: row i sees keys 0..i+3"),
        Case("attention.causal.bottom_right.tq6tk3", {"causal": True, "alignment": "bottom_right"},
             _qkv(1, 2, 2, 6, 3, 4),
             "bottom-right with Tq > Tk: rows 0..2 see no key (flash-attn's example) and are zeros", kind="edge"),
        Case("attention.causal.top_left.tq6tk3", {"causal": True, "alignment": "top_left"},
             _qkv(1, 2, 2, 6, 3, 4), "top-left with Tq > Tk: no row is empty", kind="edge"),
        Case("attention.causal.square.t8", {"causal": True}, _qkv(2, 2, 1, 8, 8, 8),
             "causal self-attention with Tq == Tk, where both alignments agree"),
        Case("attention.padding.left_padded.causal", {"causal": True},
             _qkv(2, 2, 2, 7, 7, 4, padding=left_padded),
             "left-padded batch: padded keys get weight 0; padded query rows 0-1 of batch 0 see nothing (zeros)"),
        Case("attention.window.causal.w3.t10", {"causal": True, "window": 3}, _qkv(1, 2, 2, 10, 10, 8),
             "sliding window W=3 (HF sliding_window=3, flash-attn window_size=(2, 2)): the query and 2 keys before"),
        Case("attention.window.bidirectional.w2.t9", {"window": 2}, _qkv(1, 2, 1, 9, 9, 4),
             "non-causal window W=2: keys i-1, i, i+1"),
        Case("attention.window.decode.w4", {"causal": True, "window": 4}, _qkv(1, 2, 2, 2, 9, 8),
             "a window under bottom-right alignment: the last two queries of a 9-key cache see 4 keys each"),
        Case("attention.mask.boolean", {}, _qkv(2, 2, 2, 5, 6, 8, mask=_boolean_mask),
             "an arbitrary boolean mask (True = attend), broadcast over heads"),
        Case("attention.mask.additive", {}, _qkv(1, 2, 2, 4, 6, 8, mask=additive),
             "an additive float mask: -inf removes key 1, -1.5 penalises key 3"),
        Case("attention.bias.relative.t8", {}, _qkv(1, 4, 4, 8, 8, 8, bias=_relative_bias(8, 8, 4, 0)),
             "an additive bias -slope_h * |i - j| added after the scale"),
        Case("attention.decode_step.bias", {"causal": True}, _qkv(2, 4, 2, 1, 9, 8, bias=_relative_bias(1, 9, 4, 8)),
             "one decode step against a 9-key cache: the query at position 8, the bias from explicit positions",
             kind="edge"),
        Case("attention.scale.unscaled", {"scale": 1.0}, _qkv(1, 2, 2, 5, 5, 8),
             "explicit scale=1 (T5 attention has no 1/sqrt(D))"),
        Case("attention.scale.explicit", {"scale": 0.2, "causal": True}, _qkv(1, 2, 2, 6, 6, 16),
             "an explicit scale, D=16"),
        Case("attention.logits_past_float32_exp.t6.d8", {"scale": 1.0}, _large_logits(_qkv(1, 2, 2, 6, 6, 8), 6.0),
             "unscaled logits up to about 200 (q and k of norm 17): exp overflows float32 past 88.7, so a softmax "
             "that skips the max subtraction returns inf / inf", kind="edge"),
        Case("attention.scale.deepseek_v3_multiplier", {"softmax_multiplier": _DEEPSEEK_V3_MULTIPLIER, "causal": True},
             _qkv(1, 4, 4, 6, 6, 16),
             "DeepSeek-V3 YaRN softmax multiplier (rope.inv_freq softmax_scale, factor 40) times 1/sqrt(D)"),
    ]
    cases.append(Case("attention.fully_masked.error.no_empty_row", {"fully_masked": "error", "causal": True},
                      _qkv(1, 2, 2, 4, 6, 4), "fully_masked='error' where every row keeps a key: the plain output"))
    for policy in ("zeros", "nan", "uniform"):
        cases.append(Case(
            f"attention.fully_masked.{policy}", {"fully_masked": policy},
            _qkv(2, 2, 2, 5, 6, 4, mask=_fully_masked_row),
            f"two query rows with every key masked under fully_masked={policy!r}", kind="edge",
            flags=("NonFinite",) if policy == "nan" else ()))
    errors: list[tuple[str, dict[str, Any], Any, ErrorCategory, str]] = [
        ("heads_not_divisible", {}, _qkv(1, 3, 2, 4, 4, 4), "invalid_shape", "3 query heads over 2 kv heads"),
        ("mismatched_d", {}, lambda rng: {**_qkv(1, 2, 2, 4, 4, 4)(rng), "k": rng.normal(size=(1, 2, 4, 6)),
                                          "v": rng.normal(size=(1, 2, 4, 6))},
         "invalid_shape", "q has D=4, k and v D=6"),
        ("mask_wrong_shape", {}, _qkv(1, 2, 2, 4, 5, 4, mask=np.ones((1, 1, 4, 4), dtype=bool)), "invalid_shape",
         "a (1, 1, 4, 4) mask for 5 keys"),
        ("window_zero", {"window": 0, "causal": True}, _qkv(1, 2, 2, 4, 4, 4), "invalid_argument", "window < 1"),
        ("fully_masked_row", {"fully_masked": "error"}, _qkv(2, 2, 2, 5, 6, 4, mask=_fully_masked_row),
         "invalid_argument", "a fully masked row under fully_masked='error'"),
        ("unknown_alignment", {"causal": True, "alignment": "center"}, _qkv(1, 2, 2, 4, 4, 4), "invalid_argument",
         "an unknown alignment (the message lists the valid ones)"),
        ("padding_wrong_length", {}, _qkv(1, 2, 2, 4, 5, 4, padding=np.ones((1, 4), dtype=bool)), "invalid_shape",
         "a key padding mask of 4 keys for 5 keys"),
    ]
    cases += error_cases("attention", errors)
    return tuple(cases)


ATTENTION = OpRecord(
    name="attention",
    family="attention",
    function=attention_case,
    inputs=("q", "k", "v", "mask", "key_padding_mask", "bias"),
    outputs=(Output("output", "float64", "normwise"), Output("weights", "float64", "normwise")),
    params=(
        Param("scale", "float", None, doc="logit scale; None means 1/sqrt(D)"),
        Param("softmax_multiplier", "float", 1.0,
              doc="multiplies the scale: DeepSeek YaRN mscale**2 (rope.inv_freq softmax_scale), else 1"),
        Param("causal", "bool", False, doc="causal mask"),
        ALIGNMENT,
        Param("window", "int", None, doc="sliding window W >= 1: a causal query sees W keys including itself"),
        FULLY_MASKED_PARAM,
    ),
    summary="scaled dot-product attention with GQA, masks and a bias",
    citation="Vaswani et al. 2017, arXiv:1706.03762, eq. 1; Ainslie et al. 2023 (GQA), arXiv:2305.13245",
    cases=_attention_cases(),
    value_inputs=("q", "k", "v", "mask", "bias"),
)


def _terms_inputs(b: int, h: int, hkv: int, tq: int, tk: int, d: int, *, per_head: bool = False,
                  offset: int | None = None) -> Any:
    shift = tk - tq if offset is None else offset  # the query's key index: bottom-right unless given

    def make(rng: np.random.Generator) -> dict[str, Any]:
        distance = np.clip(np.arange(tq)[:, None] + shift - np.arange(tk)[None, :], -3, 3)  # clipped i - j
        table_k, table_v = rng.normal(size=(7, h if per_head else 1)), rng.normal(size=(7, d))
        term = np.moveaxis(table_k[distance + 3], -1, 0)[None] * 2.0  # (1, H or 1, Tq, Tk)
        return {
            "q": rng.normal(size=(b, h, tq, d)), "k": rng.normal(size=(b, hkv, tk, d)),
            "v": rng.normal(size=(b, hkv, tk, d)), "term": term, "value_term": table_v[distance + 3][None, None],
        }
    return make


TERMS = OpRecord(
    name="attention.terms",
    family="attention",
    function=attention_terms_case,
    inputs=("q", "k", "v", "term", "value_term"),
    outputs=(Output("output", "float64", "normwise"), Output("weights", "float64", "normwise")),
    params=(
        Param("scale", "float", None, doc="logit scale; None means 1/sqrt(D)"),
        Param("causal", "bool", False, doc="causal mask"),
        ALIGNMENT,
    ),
    summary="the logits-term plug-in: a term inside the scale and a value term under the weights",
    citation="Shaw et al. 2018, arXiv:1803.02155, eqs. 3-4 (the placement these stored terms follow)",
    cases=(
        Case("attention.terms.shaw_form.t6.d8", {}, _terms_inputs(1, 2, 2, 6, 6, 8),
             "Shaw-form terms from a clipped-distance table: t inside the scale, u added to the values"),
        Case("attention.terms.causal.gqa.tq3tk7", {"causal": True}, _terms_inputs(2, 4, 2, 3, 7, 4, per_head=True),
             "per-head terms under GQA with a 4-key cache, bottom-right causal"),
        Case("attention.terms.causal.top_left.tq4tk6", {"causal": True, "alignment": "top_left"},
             _terms_inputs(1, 2, 1, 4, 6, 4, offset=0), "terms under top-left causal alignment (torch SDPA), Tq < Tk"),
        Case("attention.terms.error.term_shape", {},
             lambda rng: {**_terms_inputs(1, 2, 2, 4, 4, 4)(rng), "term": np.zeros((1, 3, 4, 4))},
             "error: a term that does not broadcast to (B, H, Tq, Tk)", kind="error", error="invalid_shape"),
        Case("attention.terms.error.top_left.value_term_shape", {"causal": True, "alignment": "top_left"},
             lambda rng: {**_terms_inputs(1, 2, 1, 4, 6, 4, offset=0)(rng), "value_term": np.zeros((1, 1, 4, 6, 3))},
             "error under top-left causal alignment: a value term of width 3 for values of width 4", kind="error",
             error="invalid_shape"),
    ),
    value_inputs=("q", "k", "v", "term", "value_term"),
)


RECORDS = (ATTENTION, TERMS, *attention_pipeline.RECORDS, *attention_positional.RECORDS)
