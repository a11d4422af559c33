"""Registry records of attention with each positional scheme plugged in (:mod:`posenc_ref.attention_positional`).

The corpus stores what the scheme reads (queries, keys, values, explicit query and key
positions, its tables); the case function builds the plug-in from the scheme module, so the
expected outputs (from the oracle) check the scheme and its placement inside the pass together.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from posenc_ref.alibi import alibi_bias
from posenc_ref.attention import ALIGNMENTS, attention
from posenc_ref.attention_positional import rope_qk, shaw_terms, xl_terms
from posenc_ref.opspec import Case, OpRecord, Output, Param
from posenc_ref.scales.attention import _rope_output_scale, _rope_weights_scale
from posenc_ref.shaw import check_self_attention_positions
from posenc_ref.t5 import t5_bias

F64 = NDArray[np.float64]
_ARGS = ("q", "k", "v", "q_positions", "k_positions")


def _pair(result: Any) -> tuple[F64, F64]:
    if not isinstance(result, tuple):  # return_weights=True always gives a pair
        raise RuntimeError("attention: expected (output, weights)")
    return result


def attention_rope_case(q: Any, k: Any, v: Any, q_positions: Any, k_positions: Any, /, *, base: float = 10000.0,
                        layout: Any = "half", **params: Any) -> tuple[F64, F64]:
    """Attention with RoPE as the ``qk_transform``; returns (output, weights)."""
    return _pair(attention(q, k, v, q_positions=q_positions, k_positions=k_positions,
                           qk_transform=rope_qk(base=base, layout=layout), return_weights=True, **params))


def attention_alibi_case(q: Any, k: Any, v: Any, q_positions: Any, k_positions: Any, /, *,
                         form: Any = "relative_causal", **params: Any) -> tuple[F64, F64]:
    """Attention with the ALiBi bias of the given positions (one head slope per query head)."""
    bias = alibi_bias(q_positions, k_positions, num_heads=np.shape(q)[1] if np.ndim(q) == 4 else 1, form=form)
    return _pair(attention(q, k, v, bias=bias, return_weights=True, **params))


def attention_t5_case(q: Any, k: Any, v: Any, q_positions: Any, k_positions: Any, table: Any, /, *,
                      num_buckets: int = 32, max_distance: int = 128, direction: Any = "bidirectional",
                      **params: Any) -> tuple[F64, F64]:
    """Attention with the T5 bias ``table[bucket(j - i), h]`` of the given positions."""
    bias = t5_bias(q_positions, k_positions, table, num_buckets=num_buckets, max_distance=max_distance,
                   direction=direction)
    return _pair(attention(q, k, v, bias=bias, return_weights=True, **params))


def attention_shaw_case(q: Any, k: Any, v: Any, q_positions: Any, k_positions: Any, rel_keys: Any,
                        rel_values: Any, /, *, max_relative_position: int, sign: Any = "key_minus_query",
                        **params: Any) -> tuple[F64, F64]:
    """Attention with Shaw's key term inside the scale and value term under the weights."""
    check_self_attention_positions("attention.shaw", q_positions, k_positions)
    term = shaw_terms(rel_keys, rel_values, max_relative_position=max_relative_position, sign=sign)
    return _pair(attention(q, k, v, q_positions=q_positions, k_positions=k_positions, logits_term=term,
                           return_weights=True, **params))


def attention_xl_case(q: Any, k: Any, v: Any, q_positions: Any, k_positions: Any, u_bias: Any, v_bias: Any,
                      w_r: Any, /, *, base: float = 10000.0, **params: Any) -> tuple[F64, F64]:
    """Attention with Transformer-XL's terms (b)-(d) as the logits term."""
    check_self_attention_positions("attention.xl", q_positions, k_positions)
    term = xl_terms(u_bias, v_bias, w_r, base=base)
    return _pair(attention(q, k, v, q_positions=q_positions, k_positions=k_positions, logits_term=term,
                           return_weights=True, **params))


def _common(scale: float | None = None) -> tuple[Param, ...]:
    return (
        Param("scale", "float", scale, doc="logit scale; None means 1/sqrt(D)"),
        Param("softmax_multiplier", "float", 1.0, doc="multiplies the scale (DeepSeek YaRN mscale**2)"),
        Param("causal", "bool", False, doc="causal mask"),
        Param("alignment", "str", "bottom_right", ALIGNMENTS, doc="causal alignment when Tq != Tk"),
    )


def _inputs(b: int, h: int, hkv: int, d: int, q_pos: Any, k_pos: Any, **tables: Any) -> Any:
    qp, kp = np.asarray(q_pos), np.asarray(k_pos)

    def make(rng: np.random.Generator) -> dict[str, Any]:
        tq, tk = qp.shape[-1], kp.shape[-1]
        arrays = {"q": rng.normal(size=(b, h, tq, d)), "k": rng.normal(size=(b, hkv, tk, d)),
                  "v": rng.normal(size=(b, hkv, tk, d)), "q_positions": qp, "k_positions": kp}
        arrays.update({name: rng.normal(size=shape) for name, shape in tables.items()})
        return arrays
    return make


_OUTPUTS = (Output("output", "float64", "normwise"), Output("weights", "float64", "normwise"))
_A = np.arange

ROPE = OpRecord(
    name="attention.rope",
    family="attention",
    function=attention_rope_case,
    inputs=_ARGS,
    outputs=(Output("output", "float64", "normwise", _rope_output_scale),
             Output("weights", "float64", "normwise", _rope_weights_scale)),
    params=(
        Param("base", "float", 10000.0, doc="rope_theta"),
        Param("layout", "str", "half", ("half", "interleaved"),
              users={"half": "HF transformers rotate_half (Llama, Mistral, Qwen); vLLM is_neox_style=True",
                     "interleaved": "Meta Llama reference (complex pairs); GPT-J; vLLM is_neox_style=False"},
              doc="which channels form a rotation pair"),
        *_common(),
    ),
    summary="attention with RoPE on q and k at their own positions",
    citation="Su et al. 2021, arXiv:2104.09864, eq. 14 (RoFormer); Vaswani et al. 2017, eq. 1",
    position_inputs=("q_positions", "k_positions"),
    intermediates="angles",  # the rotation's sines and cosines: the diagnosis tries them in float32 / float16
    cases=(
        Case("attention.rope.half.causal.t6.d8", {"causal": True}, _inputs(1, 2, 2, 8, _A(6), _A(6)),
             "RoPE (rotate_half) on q and k, causal self-attention"),
        Case("attention.rope.interleaved.causal.t6.d8", {"causal": True, "layout": "interleaved"},
             _inputs(1, 2, 2, 8, _A(6), _A(6)), "RoPE with interleaved pairs (Meta Llama, GPT-J)"),
        Case("attention.rope.own_positions.tq3tk5", {"base": 100.0},
             _inputs(2, 2, 1, 8, [7, 9, 20], [0, 2, 3, 11, 15]),
             "q and k rotated at their own unrelated positions (cross-attention style), base 100"),
        Case("attention.rope.decode_step.gqa", {"causal": True}, _inputs(1, 4, 2, 8, [8], _A(9)),
             "one decode step: the query at position 8 against a 9-key cache, 4 query heads over 2 kv heads",
             kind="edge"),
        Case("attention.rope.gqa.interleaved.offset", {"causal": True, "layout": "interleaved"},
             _inputs(1, 4, 2, 16, _A(4) + 100, _A(7) + 97),
             "GQA, interleaved, a chunk of 4 queries at positions 100..103 over keys 97..103 (bottom-right)"),
        Case("attention.rope.deepseek_multiplier", {"causal": True, "softmax_multiplier": 1.8738542070926265},
             _inputs(1, 2, 2, 8, _A(5), _A(5)),
             "RoPE with DeepSeek-V3's YaRN softmax multiplier (rope.inv_freq softmax_scale) on the scale"),
        Case("attention.rope.half.causal.long.chunk", {"causal": True},
             _inputs(1, 2, 2, 16, _A(4) + 4095, _A(9) + 4090),
             "a chunk of 4 queries at positions 4095..4098 over keys 4090..4098 (bottom-right causal): the "
             "angles' rounding carried through the softmax (the carried phase scale)", kind="long_position",
             flags=("LongPosition",)),
        Case("attention.rope.interleaved.gqa.long.1e6", {"causal": True, "layout": "interleaved", "base": 500000.0},
             _inputs(1, 4, 2, 16, _A(3) + 999997, _A(8) + 999992),
             "interleaved pairs, 4 query heads over 2 kv heads, base 5e5 (Llama 3), queries at 999997..999999 "
             "over keys from 999992", kind="long_position", flags=("LongPosition",)),
        Case("attention.rope.half.long.own_positions", {"base": 10000.0},
             _inputs(2, 2, 1, 8, [[0, 4095, 65535], [7, 1000000, 3]], [0, 1, 4096, 999999, 1000000]),
             "non-causal, (B, T) query positions: short and long positions in one row of logits",
             kind="long_position", flags=("LongPosition",)),
        Case("attention.rope.error.positions_length", {},
             lambda rng: {**_inputs(1, 2, 2, 8, _A(3), _A(4))(rng), "q_positions": _A(2)},
             "error: 2 query positions for 3 queries", kind="error", error="invalid_shape"),
        Case("attention.rope.error.interleaved.odd_head_dim", {"layout": "interleaved"},
             _inputs(1, 2, 2, 7, _A(3), _A(3)), "error under layout='interleaved': a head dim of 7 has no pairs",
             kind="error", error="invalid_argument"),
    ),
    value_inputs=("q", "k", "v"),
)

ALIBI = OpRecord(
    name="attention.alibi",
    family="attention",
    function=attention_alibi_case,
    inputs=_ARGS,
    outputs=_OUTPUTS,
    params=(Param("form", "str", "relative_causal", ("relative_causal", "symmetric"),
                  doc="ALiBi bias form (see alibi.bias): -m (i - j) or -m |i - j|"), *_common()),
    summary="attention with the ALiBi bias of explicit query and key positions",
    citation="Press et al. 2022, arXiv:2108.12409, section 3; Vaswani et al. 2017, eq. 1",
    position_inputs=("q_positions", "k_positions"),
    cases=(
        Case("attention.alibi.causal.h4.t8", {"causal": True}, _inputs(1, 4, 4, 8, _A(8), _A(8)),
             "ALiBi (4 heads, slopes 1/4 .. 1/256) with causal self-attention"),
        Case("attention.alibi.offset.tq3tk8", {"causal": True}, _inputs(2, 4, 2, 8, _A(3) + 5, _A(8)),
             "Tq != Tk: queries at positions 5..7 over keys 0..7, bottom-right causal, GQA"),
        Case("attention.alibi.symmetric.cross.tq4tk6", {"form": "symmetric"},
             _inputs(1, 2, 2, 4, _A(4) + 10, [0, 4, 8, 12, 16, 20]),
             "symmetric -m |i - j| between query positions 10..13 and keys at a stride of 4"),
        Case("attention.alibi.decode_step", {"causal": True}, _inputs(1, 8, 1, 8, [11], _A(12)),
             "one decode step at position 11 against 12 cached keys, 8 heads over one kv head", kind="edge"),
        Case("attention.alibi.error.negative_position", {},
             lambda rng: {**_inputs(1, 2, 2, 4, _A(3), _A(3))(rng), "q_positions": np.array([-1, 0, 1])},
             "error: a negative query position", kind="error", error="invalid_argument"),
    ),
    value_inputs=("q", "k", "v"),
)

T5 = OpRecord(
    name="attention.t5",
    family="attention",
    function=attention_t5_case,
    inputs=(*_ARGS, "table"),
    outputs=_OUTPUTS,
    params=(
        Param("num_buckets", "int", 32, doc="number of buckets N"),
        Param("max_distance", "int", 128, doc="distance at which the last bucket starts"),
        Param("direction", "str", "bidirectional", ("bidirectional", "unidirectional"),
              doc="encoder (signed) or decoder (past only) buckets"),
        *_common(),
    ),
    summary="attention with the T5 bucketed bias of explicit query and key positions",
    citation="Raffel et al. 2020, arXiv:1910.10683, section 2.1; Vaswani et al. 2017, eq. 1",
    position_inputs=("q_positions", "k_positions"),
    cases=(
        Case("attention.t5.encoder.t8", {"scale": 1.0, "num_buckets": 8, "max_distance": 16},
             _inputs(1, 2, 2, 8, _A(8) * 3, _A(8) * 3, table=(8, 2)),
             "T5 encoder: scale 1, 8 buckets, positions at a stride of 3 reach the log buckets"),
        Case("attention.t5.decoder.causal.t6", {"scale": 1.0, "num_buckets": 8, "max_distance": 16,
                                                "direction": "unidirectional", "causal": True},
             _inputs(1, 2, 1, 4, _A(6), _A(6), table=(8, 2)), "T5 decoder: unidirectional buckets, causal"),
        Case("attention.t5.decode_step.offset", {"scale": 1.0, "num_buckets": 16, "max_distance": 32,
                                                 "direction": "unidirectional", "causal": True},
             _inputs(2, 2, 2, 8, [40], _A(10) * 4 + 4, table=(16, 2)),
             "one decode step at position 40 over keys 4..40 (Tq != Tk, an offset)", kind="edge"),
        Case("attention.t5.error.table_heads", {"num_buckets": 8},
             _inputs(1, 2, 2, 4, _A(4), _A(4), table=(8, 3)),
             "error: a table of 3 heads for 2 query heads", kind="error", error="invalid_shape"),
    ),
    value_inputs=("q", "k", "v", "table"),
)

SHAW = OpRecord(
    name="attention.shaw",
    family="attention",
    function=attention_shaw_case,
    inputs=(*_ARGS, "rel_keys", "rel_values"),
    outputs=_OUTPUTS,
    params=(
        Param("max_relative_position", "int", doc="clipping distance K"),
        Param("sign", "str", "key_minus_query", ("key_minus_query", "query_minus_key"), doc="sign of the distance"),
        *_common(),
    ),
    summary="attention with Shaw's relative key and value terms",
    citation="Shaw et al. 2018, arXiv:1803.02155, eqs. 3-4",
    position_inputs=("q_positions", "k_positions"),
    cases=(
        Case("attention.shaw.k2.t6.d8", {"max_relative_position": 2},
             _inputs(1, 2, 2, 8, _A(6), _A(6), rel_keys=(5, 8), rel_values=(5, 8)),
             "Shaw key and value terms, K=2, self-attention: distances beyond 2 clip"),
        Case("attention.shaw.cache.gqa.causal", {"max_relative_position": 3, "causal": True},
             _inputs(1, 4, 2, 4, _A(3) + 6, _A(9), rel_keys=(7, 4), rel_values=(7, 4)),
             "queries 6..8 over a 9-key cache, bottom-right causal, GQA"),
        Case("attention.shaw.query_minus_key.k2.t6.d8", {"max_relative_position": 2, "sign": "query_minus_key"},
             _inputs(1, 2, 2, 8, _A(6), _A(6), rel_keys=(5, 8), rel_values=(5, 8)),
             "sign i - j (transformers relative_key): the mirrored table rows in the key and value terms"),
        Case("attention.shaw.error.table_rows", {"max_relative_position": 2},
             _inputs(1, 2, 2, 8, _A(4), _A(4), rel_keys=(4, 8), rel_values=(4, 8)),
             "error: tables of 4 rows for K=2 (5 needed)", kind="error", error="invalid_shape"),
    ),
    value_inputs=("q", "k", "v", "rel_keys", "rel_values"),
)

XL = OpRecord(
    name="attention.xl",
    family="attention",
    function=attention_xl_case,
    inputs=(*_ARGS, "u_bias", "v_bias", "w_r"),
    outputs=_OUTPUTS,
    params=(Param("base", "float", 10000.0, doc="sinusoid base of R"), *_common()),
    summary="attention with Transformer-XL's relative terms (b)-(d) through the logits term",
    citation="Dai et al. 2019, arXiv:1901.02860, section 3.3",
    position_inputs=("q_positions", "k_positions"),
    cases=(
        Case("attention.xl.memory.tq4tk8", {"causal": True},
             _inputs(1, 2, 2, 4, _A(4) + 4, _A(8), u_bias=(2, 4), v_bias=(2, 4), w_r=(2, 6, 4)),
             "a 4-token segment after 4 tokens of memory, causal bottom-right, D_r=6"),
        Case("attention.xl.bidirectional.gqa.t5", {},
             _inputs(2, 4, 2, 4, _A(5), _A(5), u_bias=(4, 4), v_bias=(4, 4), w_r=(4, 4, 4)),
             "XLNet-style bidirectional distances (negative too), GQA"),
        Case("attention.xl.error.bias_width", {},
             _inputs(1, 2, 2, 4, _A(4), _A(4), u_bias=(2, 3), v_bias=(2, 3), w_r=(2, 4, 4)),
             "error: content and position biases of width 3 for D=4", kind="error", error="invalid_shape"),
        Case("attention.xl.error.cross_positions", {},
             _inputs(1, 2, 2, 4, [10, 11], _A(4), u_bias=(2, 4), v_bias=(2, 4), w_r=(2, 4, 4)),
             "error: query positions 10, 11 that are not key positions (cross-attention is not defined)",
             kind="error", error="invalid_argument"),
    ),
    value_inputs=("q", "k", "v", "u_bias", "v_bias", "w_r"),
)

RECORDS = (ROPE, ALIBI, T5, SHAW, XL)
