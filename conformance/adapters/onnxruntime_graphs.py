"""ONNX Runtime adapter: each op as an ONNX graph, run by onnxruntime; the real ``RotaryEmbedding``,
``Attention`` (opset 23) and ``Resize`` operators where they apply, primitive operators elsewhere.

Every case builds a small graph with the ``onnx.helper`` API (opset 21, opset 23 for the two
opset-23 operators) from the case's parameters and runs it on the CPU execution provider. The
absolute ops use ``Cast``, ``Add``, ``Mul``, ``Div``, ``Neg``, ``Pow``, ``Sin``, ``Cos``,
``Unsqueeze``, ``Concat``, ``Slice``, ``Reshape``, ``Shape``, ``Equal``, ``Not``, ``CumSum``,
``Gather``, ``Min``; the frequencies are computed in the graph (``Pow(base, -e)``), not baked in.

================================ ================================================== ==================
op                               ONNX operators                                     computes in
================================ ================================================== ==================
sinusoidal.*, grid2d.sincos,     primitive graphs                                   float64, float32 [1]_
learned.lookup, rope.inv_freq,
rope.longrope_inv_freq,
rope.cos_sin, rope.xpos,
rope.mrope_cos_sin, alibi.*,
t5.*, deberta.*, shaw.*,
transformer_xl.*
rope.apply, rope.scores          ``RotaryEmbedding`` (+ ``MatMul`` for scores)      float32, float16 [2]_
rope.rotate, rope.rotate_freq    ``RotaryEmbedding`` (``position_ids`` for          float32, float16 [2]_;
                                 rope.rotate); ``Gather`` + ``Mul``/``Sub``/``Add`` float64 [4]_
                                 at float64
attention                        ``Attention``                                      float32, float16 [2]_
attention.rope                   two ``RotaryEmbedding`` + ``Attention``            float32, float16 [2]_
attention.alibi, attention.t5    bias graph + ``Attention`` (``attn_mask``)         float32, float16 [2]_
attention.shaw, attention.xl,    term graph + ``Attention`` (``attn_mask``), value  float32, float16 [2]_
attention.terms                  term under the returned weights
attention.pipeline               ``Gather``, ``MatMul``, 3-D ``Attention``          float32, float16 [2]_
resample.*                       ``Resize``                                         float32, float16 [3]_
================================ ================================================== ==================

.. [1] At float16 the primitive graphs compute in float32 (positions and angles need at least
   float32 for the phase tolerance) and cast the result to float16; the ops added with xPos,
   MRoPE, Shaw, LongRoPE and Transformer-XL take their float inputs in float16, as a float16
   model holds them (the older ones are fed float64 and cast to float32 in the graph).
.. [2] Neither ``RotaryEmbedding`` nor ``Attention`` has a double kernel in onnxruntime 1.30:
   these ops are not_applicable at float64, never a pass (rope.rotate falls back, [4]_; for the
   3-D ``Attention`` of attention.pipeline onnxruntime runs the operator's function body, which
   computes ``sqrt(scale)`` in float32). At float16 they take float16 inputs (x, q, k, v, the caches and
   ``attn_mask``), as a float16 model feeds them.
.. [3] ``Resize`` has no double kernel in onnxruntime 1.30 (not_applicable at float64); at
   float16 it runs the float16 kernel on the float16 table.
.. [4] ``rope.rotate`` and ``rope.rotate_freq`` run the operator wherever onnxruntime has its kernel
   (checked once per dtype with a trial graph, :func:`rotary_operator`); where it has none (double in
   1.30) the same rotation is a primitive graph in float64: ``Gather`` of the cache rows (for
   ``rope.rotate_freq`` the caches built in the graph, one row per token), then the pair channels
   turned with ``Mul``/``Sub``/``Add``.

At start-up the adapter runs every op's graph once per dtype on a case from the registry (the
op's smallest valid case the graphs can express, its parameters filled in from the registry's
parameter table); an (op, dtype) pair whose graph onnxruntime refuses is ``not_applicable`` with
onnxruntime's message as the reason, never a pass.

``sinusoidal.fairseq``: the rows ``pad + CumSum(real) * real`` (``real = Not(Equal(token,
pad))``; an incremental step is ``pad + past + 1``), or under ``cache_rule="m2m100"``
``(CumSum(real) + past) * real + pad`` for any chunk length.

``learned.lookup``: ``Gather`` wraps negative indices and refuses indices past the end with
a generic runtime error, so out-of-range and negative rows are refused by the wrapper first
(:mod:`posenc_adapter_shared`); ``out_of_range="clamp"`` is ``Min(rows, N - 1)`` in the graph.

``rope.apply`` runs the real ``RotaryEmbedding`` operator (opset 23): ``layout="half"`` is
``interleaved=0``, ``"interleaved"`` is ``interleaved=1``; ``rotary_dim`` under
``partial="prefix"`` is ``rotary_embedding_dim``; ``partial="proportional"`` rotates the whole
head with caches whose frequencies past ``rotary_dim`` are 0; ``x_layout="BTHD"`` is the 3-D input
(B, T, H*D) with ``num_heads``. The cos/sin caches (B, T, S/2) are built in the graph from the
positions (``Pow(base, -2i/S)``, attention factor folded in) and cast to the operator's type.
``interleaved_to_half`` has no form (not_applicable). ``rope.scores`` rotates q and k with one
``RotaryEmbedding`` node each and multiplies them with ``MatMul``; with ``xpos_scale_base`` set it
is not_applicable. Every RoPE scaling (``rope_type`` and its parameters, checked by
:func:`posenc_adapter_checks.scaling`) changes only the caches: the S/2 frequencies are the
rope.inv_freq graph of the variant at ``dim = S`` (rope.longrope_inv_freq's for longrope, the
factor list in use a constant), times 0 from pair ``rotary_dim/2`` on under
``partial="proportional"``, and the whole attention factor (the op's times the variant's, a
Python float64 scalar) multiplies cos and sin.

``rope.rotate_freq`` is ``rope.apply``'s graph at the caller's frequencies: the (B, T, P) caches are
``Cast(p) * inv_freq`` (``inv_freq`` fed as float64 and cast to float32, as a model keeps its
``inv_freq`` buffer), ``Cos``/``Sin`` times the attention factor, ``rotary_embedding_dim = 2P``;
at float64 (no double kernel) those caches, one row per token, go through rope.rotate's primitive graph.

``rope.rotate`` gives the case's caches to ``RotaryEmbedding`` as they are (2-D (N, P), in the
operator's dtype), with the positions ``Expand``-ed to the (B, T) ``position_ids``,
``interleaved`` = layout and ``rotary_embedding_dim = 2P`` (the rest of the head passes
through); (B, T, H, D) is the 3-D input with ``num_heads``.

``attention`` runs the real ``Attention`` operator (opset 23): 4-D Q/K/V (GQA from the head
counts), ``scale``, ``is_causal=1``; bottom-right causal alignment with ``Tk > Tq`` passes the
first ``Tk - Tq`` keys as ``past_key``/``past_value`` (the operator aligns ``is_causal`` to the
past length); with ``Tq > Tk`` the causal mask goes into ``attn_mask``. Padding, boolean and
additive masks, the sliding window and the bias form one float ``attn_mask`` (``-inf`` removes).
The weights are ``qk_matmul_output`` under ``qk_matmul_output_mode=3``. The operator zeroes fully
masked rows, so ``fully_masked="nan"``/``"uniform"`` are not_applicable.

The positional attention ops use the same ``Attention`` node (causal alignment as above).
``attention.rope`` (the RoPE attention block) rotates q at its positions and k at its own with
one ``RotaryEmbedding`` each, whole head, caches built in the graph as for rope.apply, then
attends. ALiBi (slopes ``Pow(2, -x_h)``, press rule, one per query head) and T5 (the bucket
ladder and ``Gather`` of t5.bias) build their bias in the graph and add it to ``attn_mask``. The
logits terms of Shaw (``GatherElements`` of ``q A^K^T``), Transformer-XL (``R`` of ``p_i - p_j``
projected by ``w_r``, plus ``u . k_j`` with the kv heads ``Gather``-ed to the query heads) and
attention.terms are added to q . k *before* the scale; the operator adds its mask after
scaling, so they enter ``attn_mask`` as ``term * scale``. The value terms (Shaw's ``A^V`` rows,
stored ``value_term``) are added under the operator's returned weights (``MatMul``).
``attention.pipeline`` gathers the token rows, adds the encoding (at the input or after the
output projection), projects with ``MatMul`` and attends with the 3-D form of ``Attention``
(``q_num_heads``/``kv_num_heads``: the operator splits and merges the heads).

``rope.cos_sin``, ``alibi.*`` (``alibi.mask_positions`` with ``CumSum``), ``t5.bucket``/``t5.bias``
and ``deberta.*`` are primitive graphs (``Log``, ``Ceil``, ``Cast`` to int64
truncating, ``Where``, ``Gather``, ``Transpose``, ...); the bucket ladders are the float formulas
of transformers. ``rope.inv_freq`` (every rope_type but longrope): the per-pair arrays in the graph,
the scalars in Python float64 as transformers keeps them; YaRN's ``ext_factor`` e < 1 turns the
ramp weight ``gamma`` into ``gamma + (1 - gamma)(1 - e)`` in the graph. ``rope.longrope_inv_freq``:
``Reciprocal(e * Pow(base, 2i/d))`` with the factor list in use (chosen in Python, as transformers
does) and the attention factor a Python float64 scalar.

``rope.xpos`` is a primitive graph (not ``RotaryEmbedding``, which has no per-pair scale): the pair
channels (``Slice``, or ``Reshape`` to (..., D/2, 2) for interleaved pairs) rotated with ``Mul``/``Sub``/
``Add`` at ``Pow(base, -2i/D)``, then times ``Pow(zeta, (p - c)/B)`` for q and its ``Reciprocal`` for k;
a scale that overflows the compute dtype (``IsInf``) is refused as ``out_of_range``.
``rope.mrope_cos_sin``: ``Gather`` of each pair's stream from the (3, ...) positions, ``Transpose``,
``Cos``/``Sin``. ``shaw.index``: ``Clip(+-(p_j - p_i), -K, K) + K``; ``shaw.logits``: ``MatMul`` and
``GatherElements`` of ``q A^K^T``; ``shaw.output``: ``MatMul`` with the one-hot of the index
(``Equal`` against ``arange(2K + 1)``). ``transformer_xl.score``: ``(q + u) k^T`` plus
``(q + v) . (R W_R)`` with ``R = [Sin | Cos]`` of the (``Clip``-ped) distances;
``transformer_xl.rel_shift``: the codebase's ``Pad``/``Reshape``/``Slice`` shift itself, ``valid``
from index comparisons.

``resample.*`` runs the real ``Resize`` operator. The resample conventions map onto its
attributes: ``kernel`` is ``mode`` (cubic, linear), ``cubic_a`` is ``cubic_coeff_a``,
``coordinates`` is ``coordinate_transformation_mode`` (half_pixel, align_corners),
``antialias="on"`` is ``antialias=1`` with ``exclude_outside=1`` (the kernel stretched when
downsampling, the taps outside the table dropped and the rest renormalised, as PIL and timm do),
``"off"`` is ``antialias=0``, ``exclude_outside=0`` (taps past an edge read the edge sample, as
PyTorch does; the bilinear clamp of negative source coordinates at 0 gives the same values).
``size_from="size"`` passes ``sizes``; ``"scale_factor"`` passes ``scales`` =
``(new + scale_offset) / n``, which the operator takes as float32 and sizes the output as the
floor of the float32 product: where that floor differs from the float64 floor of the op, no
``Resize`` setting gives the output size and the case is not_applicable (checked from the
parameters for resample.weights and resample.grid_2d; resample.table_1d's length comes from its
table, so such a table_1d case would fail on the shape). ``resample.weights`` resizes the rows of
the (n, n) identity; ``resample.table_1d`` keeps the prefix rows and resizes the (L, D) rows;
``resample.grid_2d`` resizes the (H, W, D) grid separably with two 2-D ``Resize`` nodes (rows of
(H, W*D), then of (W, H'*D)), since onnxruntime 1.30's CPU ``Resize`` refuses a 4-D cubic
downsample without antialias.

Run::

    posenc-ref conformance conformance/adapters/onnxruntime_graphs.py:ADAPTER
    posenc-ref conformance conformance/adapters/onnxruntime_graphs.py:ADAPTER --dtype float16

No expectations file: every case passes at float32 and float16 (the float16 policies include
the rounding of inputs held in float16; docs/tolerance.md) or is not_applicable with its reason.

Needs ``pip install 'posenc-ref[onnx]'``.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

if str(Path(__file__).resolve().parent) not in sys.path:  # the shared helpers live next to this file
    sys.path.insert(0, str(Path(__file__).resolve().parent))
import posenc_adapter_attention_checks as attention_checks  # noqa: E402
import posenc_adapter_checks as checks  # noqa: E402
from onnx_graph import ATTENTION_OPSET, ELEM, NUMPY, OPSET, ROPE_OPSET, _execute, _graph  # noqa: E402
from onnx_operators import (  # noqa: E402
    _float32_size,
    _structural,
    build_attention,
    build_attention_scheme,
    build_pipeline,
    build_resample,
    build_rope_apply,
    build_rope_rotate,
    build_rope_rotate_freq,
    build_rope_scores,
)
from onnx_primitive import (  # noqa: E402
    build_alibi,
    build_cos_sin,
    build_deberta_bucket,
    build_deberta_index,
    build_deberta_scores,
    build_fairseq,
    build_grid,
    build_inv_freq,
    build_longrope,
    build_lookup,
    build_mask_positions,
    build_mrope,
    build_rel_shift,
    build_shaw,
    build_slopes,
    build_t5_bias,
    build_t5_bucket,
    build_table,
    build_xl_score,
    build_xpos,
)
from posenc_adapter_shared import (  # noqa: E402
    Adapter,
    Rejected,
    require,
    validate_fairseq,
    validate_grid,
    validate_lookup,
    validate_table,
)

from posenc_ref.registry import get_op  # noqa: E402

onnx = require("onnx", "onnx")
ort = require("onnxruntime", "onnx")


Runner = Callable[[Mapping[str, Any], Mapping[str, np.ndarray], str], dict[str, np.ndarray]]
"""One op at one dtype: the case's parameters and inputs in, the outputs by name out (its checks first)."""


def run_table(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray], dtype: str) -> dict[str, np.ndarray]:
    rows, p = validate_table(params, inputs)
    g = _graph(dtype)
    return _execute(g, *build_table(g, p, rows - int(p["position_offset"])), dtype)


def run_fairseq(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray], dtype: str) -> dict[str, np.ndarray]:
    tokens = validate_fairseq(params, inputs)
    g = _graph(dtype)
    return _execute(g, *build_fairseq(g, params, tokens), dtype)


def run_grid(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray], dtype: str) -> dict[str, np.ndarray]:
    ys, xs = validate_grid(params, inputs)
    g = _graph(dtype)
    return _execute(g, *build_grid(g, params, ys, xs), dtype)


def run_lookup(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray], dtype: str) -> dict[str, np.ndarray]:
    table, rows = validate_lookup(params, inputs)
    g = _graph(dtype)
    return _execute(g, *build_lookup(g, params, table.astype(np.float64), rows - int(params["offset"])), dtype)


def run_inv_freq(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray], dtype: str) -> dict[str, np.ndarray]:
    g = _graph(dtype)
    return _execute(g, *build_inv_freq(g, params), dtype)


def run_cos_sin(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray], dtype: str) -> dict[str, np.ndarray]:
    g = _graph(dtype)
    return _execute(g, *build_cos_sin(g, params, *checks.cos_sin(params, inputs)), dtype)


def run_rope_apply(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray], dtype: str) -> dict[str, np.ndarray]:
    x, pos, space, rd = checks.rope_apply(params, inputs)
    sc = checks.scaling("rope.apply", params, space, rd)
    g = _graph(dtype)
    feeds, outs = build_rope_apply(g, params, x.astype(NUMPY[dtype]), pos, space, rd, sc)
    return _execute(g, feeds, outs, dtype, ROPE_OPSET)


def run_rope_scores(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray],
                    dtype: str) -> dict[str, np.ndarray]:
    q, k, qp, kp, space = checks.rope_scores(params, inputs)
    rd = space if params["rotary_dim"] is None else int(params["rotary_dim"])  # < S: proportional
    sc = checks.scaling("rope.scores", params, space, rd)
    g = _graph(dtype)
    feeds, outs = build_rope_scores(g, params, q.astype(NUMPY[dtype]), k.astype(NUMPY[dtype]), qp, kp, space, rd, sc)
    return _execute(g, feeds, outs, dtype, ROPE_OPSET)


@functools.cache
def rotary_operator(dtype: str) -> bool:
    """Whether onnxruntime runs the ``RotaryEmbedding`` operator with ``position_ids`` at ``dtype``
    (a trial run of a tiny graph; onnxruntime 1.30 has float32 and float16 kernels, no double one)."""
    g = _graph(dtype)
    c = {"x": np.zeros((1, 1, 1, 2)), "positions": np.zeros((1, 1), np.int64), "cos": np.ones((1, 1)),
         "sin": np.zeros((1, 1))}
    try:
        _execute(g, *build_rope_rotate(g, {"layout": "half", "x_layout": "BHTD"}, c, True), dtype, ROPE_OPSET)
    except (ort.capi.onnxruntime_pybind11_state.NotImplemented, ort.capi.onnxruntime_pybind11_state.InvalidGraph,
            ort.capi.onnxruntime_pybind11_state.Fail):
        return False
    return True


def run_rope_rotate(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray], dtype: str) -> dict[str, np.ndarray]:
    c = checks.rotate_cached(params, inputs)
    g = _graph(dtype)
    operator = rotary_operator(dtype)
    return _execute(g, *build_rope_rotate(g, params, c, operator), dtype, ROPE_OPSET if operator else OPSET)


def run_rope_rotate_freq(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray],
                         dtype: str) -> dict[str, np.ndarray]:
    c = checks.rotate_freq(params, inputs)
    g = _graph(dtype)
    operator = rotary_operator(dtype)
    feeds, outs = build_rope_rotate_freq(g, params, c, c["x"].astype(NUMPY[dtype]), operator)
    return _execute(g, feeds, outs, dtype, ROPE_OPSET if operator else OPSET)


def run_slopes(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray], dtype: str) -> dict[str, np.ndarray]:
    g = _graph(dtype)
    return _execute(g, *build_slopes(g, params), dtype)


def run_alibi(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray], dtype: str) -> dict[str, np.ndarray]:
    checks.choice("form", params["form"], ("relative_causal", "key_only", "symmetric", "bottom_right"))
    checks.alibi(params)
    g = _graph(dtype)
    return _execute(g, *build_alibi(g, params, *checks.query_key(inputs)), dtype)


def run_mask_positions(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray],
                       dtype: str) -> dict[str, np.ndarray]:
    g = _graph(dtype)
    return _execute(g, *build_mask_positions(g, params, checks.attention_mask(inputs)), dtype)


def run_t5_bucket(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray], dtype: str) -> dict[str, np.ndarray]:
    checks.t5(params)
    g = _graph(dtype)
    rel = checks.relative("relative_positions", inputs["relative_positions"])
    return _execute(g, *build_t5_bucket(g, params, rel), dtype)


def run_t5_bias(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray], dtype: str) -> dict[str, np.ndarray]:
    buckets, _, _, _ = checks.t5(params)
    table = checks.t5_table(params, inputs, buckets)
    q, k = checks.query_key(inputs)
    g = _graph(dtype)
    return _execute(g, *build_t5_bias(g, params, q, k, table), dtype)


def run_deberta_bucket(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray],
                       dtype: str) -> dict[str, np.ndarray]:
    checks.deberta(params)
    g = _graph(dtype)
    rel = checks.relative("relative_positions", inputs["relative_positions"])
    return _execute(g, *build_deberta_bucket(g, params, rel), dtype)


def run_deberta_index(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray],
                      dtype: str) -> dict[str, np.ndarray]:
    checks.deberta(params)
    q, k = checks.query_key(inputs)
    g = _graph(dtype)
    return _execute(g, *build_deberta_index(g, params, q, k), dtype)


def run_deberta_scores(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray],
                       dtype: str) -> dict[str, np.ndarray]:
    a = checks.deberta_scores(params, inputs)
    g = _graph(dtype)
    return _execute(g, *build_deberta_scores(g, a), dtype)


def run_attention(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray], dtype: str) -> dict[str, np.ndarray]:
    a = attention_checks.attention(params, inputs)
    g = _graph(dtype)
    feeds, outs = build_attention(g, params, a, *_structural(params, a))
    return _execute(g, feeds, outs, dtype, ATTENTION_OPSET)


def run_xpos(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray], dtype: str) -> dict[str, np.ndarray]:
    q, k, pos = checks.xpos(params, inputs)
    g = _graph(dtype)
    out = _execute(g, *build_xpos(g, params, q, k, pos, dtype), dtype)
    if out.pop("overflow"):
        raise Rejected("out_of_range", f"zeta ** (+-(p - c) / {params['scale_base']}) at positions "
                              f"{int(pos.min())}..{int(pos.max())} overflows {g.compute}")
    return out


def run_mrope(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray], dtype: str) -> dict[str, np.ndarray]:
    g = _graph(dtype)
    return _execute(g, *build_mrope(g, params, *checks.mrope(params, inputs)), dtype)


def _shaw_runner(op: str) -> Runner:
    def run(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray], dtype: str) -> dict[str, np.ndarray]:
        a = checks.shaw(params, inputs, op)
        qp, kp = (checks.positions(n, inputs[n]) for n in ("q_positions", "k_positions"))
        g = _graph(dtype)
        return _execute(g, *build_shaw(g, params, op, a, qp, kp, dtype), dtype)
    run.__name__ = f"run_{op.replace('.', '_')}"
    return run


def run_longrope(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray], dtype: str) -> dict[str, np.ndarray]:
    g = _graph(dtype)
    return _execute(g, *build_longrope(g, checks.longrope(params, inputs), dtype), dtype)


def run_xl_score(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray], dtype: str) -> dict[str, np.ndarray]:
    g = _graph(dtype)
    return _execute(g, *build_xl_score(g, checks.xl_score(params, inputs), dtype), dtype)


def run_rel_shift(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray], dtype: str) -> dict[str, np.ndarray]:
    g = _graph(dtype)
    return _execute(g, *build_rel_shift(g, checks.rel_shift(params, inputs), dtype), dtype)


RESAMPLE_CHECKS = {"resample.weights": checks.resample_weights, "resample.table_1d": checks.resample_table_1d,
                   "resample.grid_2d": checks.resample_grid_2d}


def _resample_runner(op: str) -> Runner:
    def run(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray], dtype: str) -> dict[str, np.ndarray]:
        c = RESAMPLE_CHECKS[op](params, inputs)
        g = _graph(dtype)
        return _execute(g, *build_resample(g, op, c, params, inputs.get("table")), dtype)
    run.__name__ = f"run_{op.replace('.', '_')}"
    return run


ATTENTION_CHECKS = {f"attention.{scheme}": getattr(attention_checks, f"attention_{scheme}")
                    for scheme in ("terms", "rope", "alibi", "t5", "shaw", "xl")}


def _scheme_runner(op: str) -> Runner:
    def run(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray], dtype: str) -> dict[str, np.ndarray]:
        a = dict(ATTENTION_CHECKS[op](params, inputs))
        if op in ("attention.shaw", "attention.xl"):  # 1-D positions, checked above
            a["qp"], a["kp"] = (checks.positions(n, inputs[n]) for n in ("q_positions", "k_positions"))
        g = _graph(dtype)
        return _execute(g, *build_attention_scheme(g, op, params, a), dtype, ATTENTION_OPSET)
    run.__name__ = f"run_{op.replace('.', '_')}"
    return run


def run_pipeline(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray], dtype: str) -> dict[str, np.ndarray]:
    g = _graph(dtype)
    return _execute(g, *build_pipeline(g, attention_checks.attention_pipeline(params, inputs)), dtype, ATTENTION_OPSET)


ATTENTION_OPS = ("attention", "attention.pipeline", *ATTENTION_CHECKS)  # graphs with the real Attention operator
RUNNERS: dict[str, Runner] = {
    "sinusoidal.table": run_table, "sinusoidal.fairseq": run_fairseq, "grid2d.sincos": run_grid,
    "learned.lookup": run_lookup,
    "rope.inv_freq": run_inv_freq, "rope.cos_sin": run_cos_sin, "rope.apply": run_rope_apply,
    "rope.scores": run_rope_scores, "rope.rotate": run_rope_rotate, "rope.rotate_freq": run_rope_rotate_freq,
    "alibi.slopes": run_slopes, "alibi.bias": run_alibi,
    "alibi.mask_positions": run_mask_positions, "t5.bucket": run_t5_bucket, "t5.bias": run_t5_bias,
    "deberta.bucket": run_deberta_bucket, "deberta.scores": run_deberta_scores,
    "deberta.index": run_deberta_index, "attention": run_attention,
    "rope.xpos": run_xpos, "rope.mrope_cos_sin": run_mrope,
    **{op: _shaw_runner(op) for op in ("shaw.index", "shaw.logits", "shaw.output")},
    "rope.longrope_inv_freq": run_longrope, "transformer_xl.score": run_xl_score,
    "transformer_xl.rel_shift": run_rel_shift, **{op: _resample_runner(op) for op in RESAMPLE_CHECKS},
    **{op: _scheme_runner(op) for op in ATTENTION_CHECKS}, "attention.pipeline": run_pipeline,
}


CALLS = {op: f"ONNX graph of primitive operators ({fn.__name__}), opset {OPSET}" for op, fn in RUNNERS.items()}


CALLS["rope.apply"] = f"the ONNX RotaryEmbedding operator (opset {ROPE_OPSET}), cos/sin caches built in the graph"


CALLS["rope.scores"] = f"two ONNX RotaryEmbedding operators (opset {ROPE_OPSET}) and MatMul (no xPos)"


def rotate_freq_call(dtype: str) -> str:
    """What computes ``rope.rotate_freq`` at ``dtype``: the operator where onnxruntime has its kernel."""
    caches = "cos/sin caches built in the graph from the positions and the given inv_freq"
    if rotary_operator(dtype):
        return f"the ONNX RotaryEmbedding operator (opset {ROPE_OPSET}), rotary_embedding_dim = 2P, {caches}"
    return (f"ONNX graph of primitive operators ({caches}, one row per token, Gather, Mul/Sub/Add), opset {OPSET}: "
            f"onnxruntime {ort.__version__} has no {dtype} RotaryEmbedding kernel")


def rotate_call(dtype: str) -> str:
    """What computes ``rope.rotate`` at ``dtype``: the operator where onnxruntime has its kernel."""
    if rotary_operator(dtype):
        return (f"the ONNX RotaryEmbedding operator (opset {ROPE_OPSET}) with position_ids into the given "
                "cos_cache/sin_cache, rotary_embedding_dim = 2P")
    return (f"ONNX graph of primitive operators (Gather of the cache rows, Mul/Sub/Add), opset {OPSET}: "
            f"onnxruntime {ort.__version__} has no {dtype} RotaryEmbedding kernel")


CALLS["attention"] = (f"the ONNX Attention operator (opset {ATTENTION_OPSET}): is_causal, past_key/past_value for "
                      "bottom-right alignment, a float attn_mask, qk_matmul_output_mode=3 for the weights")


CALLS["attention.rope"] = (f"two ONNX RotaryEmbedding operators and the Attention operator (opset {ATTENTION_OPSET}): "
                           "q and k rotated at their own positions, then attended")


CALLS.update({op: f"the ONNX Attention operator (opset {ATTENTION_OPSET}) with the {what} in attn_mask"
              for op, what in (("attention.alibi", "ALiBi bias built in the graph"),
                               ("attention.t5", "T5 bucket bias built in the graph"))})


CALLS.update({op: f"the ONNX Attention operator (opset {ATTENTION_OPSET}) with the {what}"
              for op, what in (("attention.shaw", "Shaw key term (times scale) in attn_mask and the value term under "
                                "its weights"),
                               ("attention.xl", "Transformer-XL terms (b)-(d) (times scale) in attn_mask"),
                               ("attention.terms", "stored term (times scale) in attn_mask and the value term under "
                                "its weights"))})


CALLS["attention.pipeline"] = (f"ONNX Gather and MatMul around the 3-D Attention operator (opset {ATTENTION_OPSET}, "
                               "q_num_heads/kv_num_heads)")


CALLS.update({op: f"the ONNX Resize operator (opset {OPSET}, cubic_coeff_a, coordinate_transformation_mode, antialias "
              "with exclude_outside)" for op in RESAMPLE_CHECKS})


def _unexpressible(op: str, params: Mapping[str, Any]) -> str | None:
    """Why the graphs have no form for these parameter values (not_applicable), or None."""
    if op == "rope.inv_freq" and params.get("rope_type") == "longrope":
        return "rope_type='longrope' has no graph (its factor lists are not inputs of rope.inv_freq cases)"
    if op == "attention" and params.get("fully_masked") in ("nan", "uniform"):
        return ("the Attention operator has one fully-masked-row behaviour, zeros (onnx/onnx#8068); "
                f"fully_masked={params['fully_masked']!r} has no form")
    xpos = params.get("xpos_scale_base")
    if op == "rope.scores" and xpos is not None and np.isfinite(float(xpos)) and float(xpos) > 0:
        return "the xPos pair weights have no RotaryEmbedding form (xpos_scale_base is set)"
    if op in ("resample.weights", "resample.grid_2d") and params.get("size_from") == "scale_factor":
        size = _float32_size(params)
        return None if size is True else str(size)
    if op == "rope.apply" and params.get("layout") == "interleaved_to_half":
        return ("RotaryEmbedding reads and writes pairs in one layout (interleaved=0 or 1); "
                "interleaved_to_half has no form")
    return None


def _trial_case(op: str) -> tuple[dict[str, Any], dict[str, np.ndarray]] | None:
    """The registry's smallest valid case of ``op`` the graphs can express: its full parameters and inputs."""
    record = get_op(op)
    trials = []
    for case in record.cases:
        params = record.full_params(case.params)
        if case.error is None and _unexpressible(op, params) is None:
            inputs = case.make_inputs()
            trials.append((sum(np.size(value) for value in inputs.values()), case.id, params, inputs))
    if not trials:
        return None
    _, _, params, inputs = min(trials)
    return params, inputs


def _probe(op: str, dtype: str) -> str | None:
    """``None`` when onnxruntime runs the op's graph at ``dtype`` (a trial run of a registry case), else its message."""
    trial = _trial_case(op)
    if trial is None:  # no case the graphs can express: supports() refuses every case from its parameters
        return None
    try:
        RUNNERS[op](*trial, dtype)
    except (ort.capi.onnxruntime_pybind11_state.NotImplemented,
            ort.capi.onnxruntime_pybind11_state.InvalidGraph) as exc:
        return f"onnxruntime has no kernel for the {op} graph at {dtype}: {str(exc).splitlines()[0][:200]}"
    except ort.capi.onnxruntime_pybind11_state.Fail as exc:
        if dtype != "float64":
            raise
        # Attention has no double kernel; onnxruntime then expands the operator's function body,
        # whose float constants do not type-check against double inputs
        return f"onnxruntime has no kernel for the {op} graph at {dtype}: {str(exc).splitlines()[0][:200]}"
    if dtype == "float64" and op in ATTENTION_OPS:
        return ("onnxruntime 1.30 has no double kernel for the Attention operator: what runs at float64 is the "
                "operator's ONNX function body, which scales Q and K by sqrt(scale) computed in float32 "
                "(Constant ScaleF, Sqrt, then Cast to double; onnx/defs/nn/defs.cc), so the logits carry a "
                "float32 rounding (about 1e-8 relative): not a float64 computation")
    return None


class OnnxRuntimeAdapter(Adapter):
    """The ONNX graphs at one dtype; ops whose graph onnxruntime refuses are not_applicable."""

    def __init__(self, dtype: str = "float32") -> None:
        if dtype not in ELEM:
            raise ValueError(f"onnxruntime adapter: dtype {dtype!r} is not offered (float64, float32, float16)")
        self.refused = {op: reason for op in RUNNERS if (reason := _probe(op, dtype))}
        ops = {op: self._runner(fn) for op, fn in RUNNERS.items()}
        super().__init__("onnxruntime-graphs", f"onnxruntime {ort.__version__}, onnx {onnx.__version__}", dtype, ops,
                         {op: {} for op in ops},
                         {**CALLS, "rope.rotate": rotate_call(dtype), "rope.rotate_freq": rotate_freq_call(dtype)},
                         OnnxRuntimeAdapter, tuple(ELEM))

    def _runner(self, fn: Runner) -> Callable[[Mapping[str, Any], Mapping[str, np.ndarray]], dict[str, np.ndarray]]:
        return lambda params, inputs: fn(params, inputs, self.dtype)

    def supports(self, op: str, params: Mapping[str, Any]) -> bool | str:
        if op not in RUNNERS:
            return f"{op} has no ONNX graph yet"
        if op in self.refused:
            return self.refused[op]
        return _unexpressible(op, params) or True


ADAPTER = OnnxRuntimeAdapter
ONNXRUNTIME = OnnxRuntimeAdapter
