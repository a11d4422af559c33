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
   these ops are not_applicable at float64, never a pass (for the 3-D ``Attention`` of
   attention.pipeline onnxruntime runs the operator's function body, which computes
   ``sqrt(scale)`` in float32). At float16 they take float16 inputs (x, q, k, v, the caches and
   ``attn_mask``), as a float16 model feeds them.
.. [3] ``Resize`` has no double kernel in onnxruntime 1.30 (not_applicable at float64); at
   float16 it runs the float16 kernel on the float16 table.

At start-up the adapter builds every op once per dtype; an (op, dtype) pair whose graph
onnxruntime refuses is ``not_applicable`` with onnxruntime's message as the reason, never a pass.

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
is not_applicable.

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
the scalars in Python float64 as transformers keeps them. ``rope.longrope_inv_freq``:
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

    posenc-ref conformance conformance/adapters/onnxruntime_adapter.py:ADAPTER
    posenc-ref conformance conformance/adapters/onnxruntime_adapter.py:ADAPTER --dtype float16

No expectations file: every case passes at float32 and float16 (the float16 policies include
the rounding of inputs held in float16; docs/tolerance.md) or is not_applicable with its reason.

Needs ``pip install 'posenc-ref[onnx]'``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

if str(Path(__file__).resolve().parent) not in sys.path:  # the shared helpers live next to this file
    sys.path.insert(0, str(Path(__file__).resolve().parent))
import posenc_adapter_checks as checks  # noqa: E402
from posenc_adapter_shared import (  # noqa: E402
    Adapter,
    require,
    validate_fairseq,
    validate_grid,
    validate_lookup,
    validate_table,
)

onnx = require("onnx", "onnx")
ort = require("onnxruntime", "onnx")
helper, TensorProto, numpy_helper = onnx.helper, onnx.TensorProto, onnx.numpy_helper

OPSET = 21
ELEM = {"float64": TensorProto.DOUBLE, "float32": TensorProto.FLOAT, "float16": TensorProto.FLOAT16}
NUMPY = {"float64": np.float64, "float32": np.float32, "float16": np.float16}


class Graph:
    """A tiny builder: nodes with generated names, constants, and a finished ONNX model."""

    def __init__(self, compute: str) -> None:
        self.compute = compute
        self.nodes: list[Any] = []
        self.inits: list[Any] = []
        self._n = 0

    def _name(self, stem: str) -> str:
        self._n += 1
        return f"{stem}_{self._n}"

    def const(self, value: Any, dtype: Any = None) -> str:
        name = self._name("c")
        self.inits.append(numpy_helper.from_array(np.asarray(value, dtype=dtype or NUMPY[self.compute]), name))
        return name

    def op(self, kind: str, *inputs: str, **attrs: Any) -> str:
        out = self._name(kind.lower())
        self.nodes.append(helper.make_node(kind, list(inputs), [out], **attrs))
        return out

    def cast(self, x: str, dtype: str) -> str:
        return self.op("Cast", x, to=ELEM[dtype])

    def last(self, x: str, start: int, end: int) -> str:
        """``x[..., start:end]``."""
        i64 = np.int64
        return self.op("Slice", x, self.const([start], i64), self.const([end], i64), self.const([-1], i64))

    def unsqueeze_last(self, x: str) -> str:
        return self.op("Unsqueeze", x, self.const([-1], np.int64))

    def interleave(self, sin: str, cos: str, count: int, like: str) -> str:
        """``[sin0, cos0, sin1, cos1, ...]`` over the last axis: (..., 2 * count); ``like`` has shape (...)."""
        pairs = self.op("Concat", self.unsqueeze_last(sin), self.unsqueeze_last(cos), axis=-1)  # (..., count, 2)
        shape = self.op("Concat", self.op("Shape", like), self.const([2 * count], np.int64), axis=0)
        return self.op("Reshape", pairs, shape)

    def frequencies(self, width: int, base: float, ladder: str) -> str:
        """``Pow(base, -e)`` with e = 2k/width (paper) or k/max(n-1, 1) (t2t): (n,)."""
        n = (width + 1) // 2
        k = self.const(np.arange(n))
        if ladder == "paper":
            exponent = self.op("Div", self.op("Mul", k, self.const(2.0)), self.const(float(width)))
        else:
            exponent = self.op("Div", k, self.const(float(max(n - 1, 1))))
        return self.op("Pow", self.const(base), self.op("Neg", exponent))

    def model(self, inputs: list[tuple[str, int, int]], outputs: list[tuple[str, str, int, int]],
              opset: int = OPSET) -> Any:
        """The checked model; inputs ``(name, elem type, rank)``, outputs ``(node output, name, type, rank)``."""
        graph = helper.make_graph(
            self.nodes, "posenc", [helper.make_tensor_value_info(n, t, [None] * r) for n, t, r in inputs],
            [helper.make_tensor_value_info(public, t, [None] * r) for _, public, t, r in outputs], self.inits)
        for internal, public, _, _ in outputs:
            graph.node.append(helper.make_node("Identity", [internal], [public]))
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
        model.ir_version = 10
        onnx.checker.check_model(model)
        return model


def _table(g: Graph, rows: str, p: Mapping[str, Any]) -> str:
    """The sinusoidal table of int64 ``rows`` (..., ) -> (..., dim) in the compute dtype."""
    dim, odd = int(p["dim"]), int(p["dim"]) % 2 == 1
    width = dim - 1 if odd and p["odd_width"] == "zero_pad_last" else dim
    n = (width + 1) // 2
    n_cos = n - 1 if odd and p["odd_width"] == "sin_gets_extra" else n
    angles = g.op("Mul", g.unsqueeze_last(g.cast(rows, g.compute)), g.frequencies(width, p["base"], p["ladder"]))
    sin, cos = g.op("Sin", angles), g.op("Cos", angles)
    if n_cos < n:
        cos = g.last(cos, 0, n_cos)
    pieces: list[str]
    if p["layout"] == "interleaved":
        pieces = [g.interleave(g.last(sin, 0, n_cos) if n_cos < n else sin, cos, n_cos, rows)]
        if n_cos < n:
            pieces.append(g.last(sin, n_cos, n))
    elif p["layout"] == "concat_sin_cos":
        pieces = [sin, cos]
    else:
        pieces = [cos, sin]
    if dim - n - n_cos:
        pieces.append(g.op("Mul", g.last(sin, 0, 1), g.const(0.0)))  # the zero column
    out = g.op("Concat", *pieces, axis=-1) if len(pieces) > 1 else pieces[0]
    return g.op("Mul", out, g.const(float(p["scale"]))) if float(p["scale"]) != 1.0 else out


def build_table(g: Graph, params: Mapping[str, Any], rank: int) -> Any:
    rows = g.op("Add", "positions", g.const(int(params["position_offset"]), np.int64))
    return [("positions", TensorProto.INT64, rank)], [(_table(g, rows, params), "table", rank + 1)]


def build_fairseq(g: Graph, params: Mapping[str, Any], rank: int) -> Any:
    pad, past = int(params["padding_idx"]), int(params["past_length"])
    real = g.op("Cast", g.op("Not", g.op("Equal", "tokens", g.const(pad, np.int64))), to=TensorProto.INT64)
    if past:
        rows = g.op("Add", g.op("Mul", "tokens", g.const(0, np.int64)), g.const(pad + past + 1, np.int64))
    else:
        counted = g.op("Mul", g.op("CumSum", real, g.const(1, np.int64)), real)
        rows = g.op("Add", counted, g.const(pad, np.int64))
    p = {"dim": params["dim"], "base": params["base"], "ladder": "t2t", "layout": "concat_sin_cos",
         "odd_width": "zero_pad_last", "scale": 1.0}
    keep = g.unsqueeze_last(g.cast(g.op("Not", g.op("Equal", rows, g.const(pad, np.int64))), g.compute))
    embedding = g.op("Mul", _table(g, rows, p), keep)
    return [("tokens", TensorProto.INT64, 2)], [(rows, "positions", 2), (embedding, "embedding", 3)]


def build_grid(g: Graph, params: Mapping[str, Any], rank: int) -> Any:
    w = g.frequencies(int(params["dim"]) // 2, params["base"], params["ladder"])  # (D/4,)
    q = int(params["dim"]) // 4
    y = g.op("Mul", g.unsqueeze_last(g.cast("ys", g.compute)), w)
    x = g.op("Mul", g.unsqueeze_last(g.cast("xs", g.compute)), w)
    a, b = (x, y) if params["axis_order"] == "x_first" else (y, x)
    sa, ca, sb, cb = g.op("Sin", a), g.op("Cos", a), g.op("Sin", b), g.op("Cos", b)
    if params["block_layout"] == "sin_cos":
        out = g.op("Concat", sa, ca, sb, cb, axis=-1)
    elif params["block_layout"] == "sin_sin_cos_cos":
        out = g.op("Concat", sa, sb, ca, cb, axis=-1)
    else:
        out = g.op("Concat", g.interleave(sa, ca, q, "ys"), g.interleave(sb, cb, q, "ys"), axis=-1)
    return [("ys", TensorProto.INT64, rank), ("xs", TensorProto.INT64, rank)], [(out, "table", rank + 1)]


def build_lookup(g: Graph, params: Mapping[str, Any], rank: int, rows_in_table: int) -> Any:
    rows = g.op("Add", "positions", g.const(int(params["offset"]), np.int64))
    if params["out_of_range"] == "clamp":
        rows = g.op("Min", rows, g.const(rows_in_table - 1, np.int64))
    table = g.cast("table", g.compute)
    gathered = g.op("Gather", table, rows, axis=0)
    return [("table", TensorProto.DOUBLE, 2), ("positions", TensorProto.INT64, rank)], [(gathered, "rows", rank + 1)]


BUILDERS: dict[str, Callable[..., Any]] = {
    "sinusoidal.table": build_table,
    "sinusoidal.fairseq": build_fairseq,
    "grid2d.sincos": build_grid,
    "learned.lookup": build_lookup,
    # the relative, RoPE and attention ops are in RUNNERS below
}


def _run(builder: Callable[..., Any], params: Mapping[str, Any], feeds: Mapping[str, np.ndarray], dtype: str,
         *extra: Any) -> dict[str, np.ndarray]:
    g = Graph("float64" if dtype == "float64" else "float32")
    rank = np.ndim(feeds.get("positions", feeds.get("ys", feeds.get("tokens"))))
    inputs, outputs = builder(g, params, rank, *extra)
    finals = [(name, public, TensorProto.INT64, r) if public == "positions" else  # integer rows stay int64
              (g.cast(name, dtype), public, ELEM[dtype], r) for name, public, r in outputs]
    model = g.model(inputs, finals)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    result = session.run([public for _, public, _, _ in finals], dict(feeds))
    return {public: value for (_, public, _, _), value in zip(finals, result)}


def _probe(op: str, dtype: str) -> str | None:
    """``None`` when onnxruntime runs the op's graph at ``dtype``, else its message."""
    samples: dict[str, tuple[dict[str, Any], dict[str, np.ndarray], tuple[Any, ...]]] = {
        "sinusoidal.table": ({"dim": 4, "base": 10000.0, "ladder": "paper", "layout": "interleaved",
                              "odd_width": "error", "position_offset": 0, "scale": 1.0},
                             {"positions": np.arange(2)}, ()),
        "sinusoidal.fairseq": ({"dim": 4, "padding_idx": 1, "past_length": 0, "base": 10000.0},
                               {"tokens": np.array([[1, 5]])}, ()),
        "grid2d.sincos": ({"dim": 4, "base": 10000.0, "ladder": "paper", "axis_order": "x_first",
                           "block_layout": "interleaved"}, {"ys": np.arange(2), "xs": np.arange(2)}, ()),
        "learned.lookup": ({"offset": 0, "out_of_range": "clamp"},
                           {"table": np.zeros((2, 2)), "positions": np.arange(3)}, (2,)),
    }
    params, feeds, extra = samples[op]
    try:
        _run(BUILDERS[op], params, feeds, dtype, *extra)
    except ort.capi.onnxruntime_pybind11_state.NotImplemented as exc:  # no kernel for this type; anything else raises
        return f"onnxruntime has no kernel for the {op} graph at {dtype}: {str(exc).splitlines()[0][:200]}"
    return None


# --- relative, RoPE and attention ops -----------------------------------------------------------
# Each builder takes the graph and the checked NumPy values and returns (inputs, outputs, opset):
# inputs as (name, array) fed as given (int64 or the dtype the builder asks for), outputs as
# (node output, public name, kind) with kind "float" (cast to the adapter dtype) or "int".

I64 = np.int64
Feeds = list[tuple[str, np.ndarray]]
Outs = list[tuple[str, str, str]]


def _execute(g: Graph, feeds: Feeds, outputs: Outs, dtype: str, opset: int = OPSET) -> dict[str, np.ndarray]:
    """Build, check and run the model; float outputs are cast to ``dtype``."""
    elem = {np.dtype(np.int64): TensorProto.INT64, np.dtype(np.bool_): TensorProto.BOOL,
            **{np.dtype(NUMPY[d]): ELEM[d] for d in ELEM}}
    finals = [(g.cast(node, dtype), public, ELEM[dtype]) if kind == "float" else (node, public, TensorProto.INT64)
              for node, public, kind in outputs]
    model = g.model([(name, elem[value.dtype], value.ndim) for name, value in feeds],
                    [(node, public, t, 0) for node, public, t in finals], opset)
    for out in model.graph.output:  # ranks are not fixed: drop the rank-0 shapes given above
        out.type.tensor_type.ClearField("shape")
    options = ort.SessionOptions()
    options.log_severity_level = 3  # onnxruntime 1.30 infers qk_matmul_output's last axis as 0 and warns
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    result = session.run([public for _, public, _ in finals], dict(feeds))
    return {public: value for (_, public, _), value in zip(finals, result)}


def _inputs_as(dtype: str, **arrays: np.ndarray) -> Feeds:
    """Float arrays rounded to ``dtype`` as a model of that dtype holds them."""
    return [(name, np.asarray(value, dtype=NUMPY[dtype])) for name, value in arrays.items()]


def _int(g: Graph, x: str) -> str:
    """``Cast(x, int64)``: truncates floats toward zero."""
    return g.op("Cast", x, to=TensorProto.INT64)


def build_inv_freq(g: Graph, params: Mapping[str, Any]) -> tuple[Feeds, Outs]:
    """``1 / Pow(base, 2i/d)`` and each variant's per-pair blend in the graph; the scalars (scaled
    bases, band edges, YaRN ramp ends and factors) are Python float64, as transformers keeps them."""
    c = checks.inv_freq(params)
    dim, s = c["dim"], c["s"]
    i = g.const(np.arange(dim // 2))
    w = g.op("Div", g.const(1.0), g.op("Pow", g.const(c["base"]), g.op("Div", g.op("Mul", i, g.const(2.0)),
                                                                         g.const(float(dim)))))
    scaled = g.op("Div", w, g.const(s))
    if c["type"] == "proportional":
        w = g.op("Div", g.op("Where", g.op("Less", i, g.const(float(c["turning"]))), w, g.const(0.0)), g.const(s))
    elif c["type"] == "linear":
        w = scaled
    elif c["type"] == "llama3":
        wavelength = g.op("Div", g.const(2 * np.pi), w)
        smooth = g.op("Div", g.op("Sub", g.op("Div", g.const(float(c["original"])), wavelength), g.const(c["low"])),
                      g.const(c["high"] - c["low"]))
        blended = g.op("Add", g.op("Mul", g.op("Sub", g.const(1.0), smooth), scaled), g.op("Mul", smooth, w))
        long = g.op("Where", g.op("Greater", wavelength, g.const(c["original"] / c["low"])), scaled, blended)
        w = g.op("Where", g.op("Less", wavelength, g.const(c["original"] / c["high"])), w, long)
    elif c["type"] == "yarn":
        low, high = c["ramp"]
        ramp = g.op("Clip", g.op("Div", g.op("Sub", i, g.const(low)), g.const(high - low)), g.const(0.0),
                    g.const(1.0))
        w = g.op("Add", g.op("Mul", w, g.op("Sub", g.const(1.0), ramp)), g.op("Mul", scaled, ramp))
    factor, softmax = g.op("Identity", g.const([c["a"]])), g.op("Identity", g.const([c["softmax"]]))
    return [], [(w, "inv_freq", "float"), (factor, "attention_factor", "float"), (softmax, "softmax_scale", "float")]


def _angles(g: Graph, positions: str, inv_freq: str) -> str:
    """``Cast(p) * w`` over a new last axis."""
    return g.op("Mul", g.unsqueeze_last(g.cast(positions, g.compute)), inv_freq)


def build_cos_sin(g: Graph, params: Mapping[str, Any], pos: np.ndarray, inv_freq: np.ndarray) -> tuple[Feeds, Outs]:
    angle = _angles(g, "positions", g.cast("inv_freq", g.compute))
    factor = g.const(float(params["attention_factor"]))
    cos, sin = g.op("Mul", g.op("Cos", angle), factor), g.op("Mul", g.op("Sin", angle), factor)
    if params["width"] == "full":
        cos, sin = g.op("Concat", cos, cos, axis=-1), g.op("Concat", sin, sin, axis=-1)
    elif params["width"] == "full_interleaved":
        shape = g.op("Concat", g.op("Shape", "positions"), g.const([2 * inv_freq.shape[0]], I64), axis=0)
        cos, sin = (g.op("Reshape", g.op("Concat", g.unsqueeze_last(t), g.unsqueeze_last(t), axis=-1), shape)
                    for t in (cos, sin))
    return [("positions", pos), ("inv_freq", inv_freq)], [(cos, "cos", "float"), (sin, "sin", "float")]


def _slopes(g: Graph, params: Mapping[str, Any]) -> str:
    """``Pow(2, -x_h)`` (H,), the exponents exact from :func:`posenc_adapter_checks.alibi_exponents`."""
    heads, rule, bias_max = checks.alibi(params)
    return g.op("Pow", g.const(2.0), g.op("Neg", g.const(checks.alibi_exponents(heads, rule, bias_max))))


def build_slopes(g: Graph, params: Mapping[str, Any]) -> tuple[Feeds, Outs]:
    return [], [(_slopes(g, params), "slopes", "float")]


def _pairs(g: Graph, q: str, k: str) -> tuple[str, str]:
    """``i`` (..., Tq, 1) and ``j`` (..., 1, Tk)."""
    return g.unsqueeze_last(q), g.op("Unsqueeze", k, g.const([-2], I64))


def _alibi_bias(g: Graph, form: str, slopes: str, q_name: str, k_name: str, q: np.ndarray, k: np.ndarray) -> str:
    """``slope_h * signed distance`` (..., H, Tq, Tk) of the position inputs ``q_name`` and ``k_name``."""
    i, j = _pairs(g, q_name, k_name)
    if form == "relative_causal":
        signed = g.op("Sub", j, i)
    elif form == "key_only":
        signed = g.op("Add", g.op("Mul", i, g.const(0, I64)), j)
    elif form == "symmetric":
        signed = g.op("Neg", g.op("Abs", g.op("Sub", i, j)))
    else:
        shifted = g.op("Add", i, g.const(k.shape[-1] - q.shape[-1], I64))
        signed = g.op("Neg", g.op("Abs", g.op("Sub", shifted, j)))
    distance = g.cast(signed, g.compute)
    if q.ndim > 1:
        distance = g.op("Unsqueeze", distance, g.const([-3], I64))
    return g.op("Mul", g.op("Reshape", slopes, g.const([-1, 1, 1], I64)), distance)


def build_alibi(g: Graph, params: Mapping[str, Any], q: np.ndarray, k: np.ndarray) -> tuple[Feeds, Outs]:
    bias = _alibi_bias(g, params["form"], _slopes(g, params), "query_positions", "key_positions", q, k)
    return [("query_positions", q), ("key_positions", k)], [(bias, "bias", "float")]


def build_mask_positions(g: Graph, params: Mapping[str, Any], mask: np.ndarray) -> tuple[Feeds, Outs]:
    """BLOOM's ``(cumsum(mask) - 1) * mask`` with ``CumSum`` over the last axis."""
    counted = g.op("Sub", g.op("CumSum", "attention_mask", g.const(-1, I64)), g.const(1, I64))
    return [("attention_mask", mask)], [(g.op("Mul", counted, "attention_mask"), "positions", "int")]


def _t5_buckets(g: Graph, rel: str, limit: int, side: int, direction: str) -> str:
    """T5 ``_relative_position_bucket`` as transformers writes it: float log ladder, truncating cast."""
    exact = side // 2
    if direction == "bidirectional":
        offset = g.op("Mul", _int(g, g.op("Greater", rel, g.const(0, I64))), g.const(side, I64))
        n = g.op("Abs", rel)
    else:
        offset = g.const(0, I64)
        n = g.op("Max", g.op("Neg", rel), g.const(0, I64))
    ratio = g.op("Div", g.op("Log", g.op("Div", g.cast(g.op("Max", n, g.const(exact, I64)), g.compute),
                                          g.const(float(exact)))), g.const(float(np.log(limit / exact))))
    large = g.op("Add", g.const(exact, I64), _int(g, g.op("Mul", ratio, g.const(float(side - exact)))))
    large = g.op("Min", large, g.const(side - 1, I64))
    return g.op("Add", offset, g.op("Where", g.op("Less", n, g.const(exact, I64)), n, large))


def build_t5_bucket(g: Graph, params: Mapping[str, Any], rel: np.ndarray) -> tuple[Feeds, Outs]:
    _, limit, side, direction = checks.t5(params)
    return [("relative_positions", rel)], [(_t5_buckets(g, "relative_positions", limit, side, direction),
                                            "buckets", "int")]


def _t5_bias(g: Graph, q_name: str, k_name: str, table: str, rank: int, limit: int, side: int,
             direction: str) -> str:
    """``table[bucket(j - i), h]`` moved to (..., H, Tq, Tk); ``rank`` is the positions' rank."""
    i, j = _pairs(g, q_name, k_name)
    buckets = _t5_buckets(g, g.op("Sub", j, i), limit, side, direction)  # (..., Tq, Tk)
    gathered = g.op("Gather", g.cast(table, g.compute), buckets, axis=0)  # (..., Tq, Tk, H)
    full = rank + 2
    return g.op("Transpose", gathered, perm=list(range(full - 3)) + [full - 1, full - 3, full - 2])


def build_t5_bias(g: Graph, params: Mapping[str, Any], q: np.ndarray, k: np.ndarray,
                  table: np.ndarray) -> tuple[Feeds, Outs]:
    _, limit, side, direction = checks.t5(params)
    bias = _t5_bias(g, "query_positions", "key_positions", "table", q.ndim, limit, side, direction)
    return [("query_positions", q), ("key_positions", k), ("table", table)], [(bias, "bias", "float")]


def _deberta_buckets(g: Graph, delta: str, buckets: int, limit: int, clamp: str) -> str:
    """transformers ``make_log_bucket_position``: ceil of the float log ladder, signed."""
    if clamp == "max_relative_positions":
        delta = g.op("Clip", delta, g.const(-(limit - 1), I64), g.const(limit - 1, I64))
    mid = buckets // 2
    n = g.op("Abs", delta)
    ratio = g.op("Div", g.op("Log", g.op("Div", g.cast(g.op("Max", n, g.const(mid, I64)), g.compute),
                                          g.const(float(mid)))), g.const(float(np.log((limit - 1) / mid))))
    ladder = _int(g, g.op("Ceil", g.op("Mul", ratio, g.const(float(mid - 1)))))
    signed = g.op("Mul", g.op("Sign", delta), g.op("Add", ladder, g.const(mid, I64)))
    return g.op("Where", g.op("LessOrEqual", n, g.const(mid, I64)), delta, signed)


def build_deberta_bucket(g: Graph, params: Mapping[str, Any], rel: np.ndarray) -> tuple[Feeds, Outs]:
    buckets, limit, clamp = checks.deberta(params)
    return [("relative_positions", rel)], [(_deberta_buckets(g, "relative_positions", buckets, limit, clamp),
                                            "buckets", "int")]


def build_deberta_index(g: Graph, params: Mapping[str, Any], q: np.ndarray, k: np.ndarray) -> tuple[Feeds, Outs]:
    buckets, limit, clamp = checks.deberta(params)
    i, j = _pairs(g, "query_positions", "key_positions")
    bucket = _deberta_buckets(g, g.op("Sub", i, j), buckets, limit, clamp)
    index = g.op("Clip", g.op("Add", bucket, g.const(buckets, I64)), g.const(0, I64), g.const(2 * buckets - 1, I64))
    return [("query_positions", q), ("key_positions", k)], [(index, "index", "int")]


def build_deberta_scores(g: Graph, a: Mapping[str, Any]) -> tuple[Feeds, Outs]:
    """DebertaV2 disentangled logits: ``q k^T``, c2p ``GatherElements(q Kr^T, idx)``, p2c
    ``GatherElements(k Qr^T, idx^T)`` transposed back (both at ``idx(i - j)``), over ``sqrt(d (1 + n))``."""
    b = a["buckets"]
    i, j = _pairs(g, "query_positions", "key_positions")
    bucket = _deberta_buckets(g, g.op("Sub", i, j), b, a["limit"], a["clamp"])
    index = g.op("Clip", g.op("Add", bucket, g.const(b, I64)), g.const(0, I64), g.const(2 * b - 1, I64))  # (Tq, Tk)
    q, k, kr, qr = (g.cast(n, g.compute) for n in ("q", "k", "pos_key", "pos_query"))
    heads, tq, dim = a["q"].shape
    tk = a["k"].shape[1]
    scores = g.op("MatMul", q, g.op("Transpose", k, perm=[0, 2, 1]))
    if "c2p" in a["terms"]:
        c2p = g.op("MatMul", q, g.op("Transpose", kr, perm=[0, 2, 1]))  # (H, Tq, 2b)
        where = g.op("Expand", index, g.const([heads, tq, tk], I64))
        scores = g.op("Add", scores, g.op("GatherElements", c2p, where, axis=2))
    if "p2c" in a["terms"]:
        p2c = g.op("MatMul", k, g.op("Transpose", qr, perm=[0, 2, 1]))  # (H, Tk, 2b)
        where = g.op("Expand", g.op("Transpose", index, perm=[1, 0]), g.const([heads, tk, tq], I64))
        gathered = g.op("GatherElements", p2c, where, axis=2)  # (H, Tk, Tq): row j, column i
        scores = g.op("Add", scores, g.op("Transpose", gathered, perm=[0, 2, 1]))
    scores = g.op("Div", scores, g.const(float(np.sqrt(dim * (1 + len(a["terms"]))))))
    feeds = [("query_positions", a["qp"]), ("key_positions", a["kp"])] + [
        (n, a[n]) for n in ("q", "k", "pos_key", "pos_query")]
    return feeds, [(scores, "scores", "float")]


ROPE_OPSET = ATTENTION_OPSET = 23


def _rotary(g: Graph, params: Mapping[str, Any], x: str, shape: tuple[int, ...], positions: str, t: int,
            space: int, rd: int) -> str:
    """One real ``RotaryEmbedding`` (opset 23) node on ``x``: cos/sin caches (B, T, S/2) built in the
    graph from the positions (no ``position_ids``), ``interleaved`` = layout,
    ``rotary_embedding_dim`` = S (prefix: rotary_dim; proportional: the head dim, with frequency 0
    past rotary_dim); ``x_layout="BTHD"`` is the 3-D (B, T, H*D) input with ``num_heads``."""
    batch = shape[0]
    i = np.arange(space // 2, dtype=np.float64)
    exponent = g.const(np.where(i < rd // 2, 2.0 * i / space, 0.0))
    inv_freq = g.op("Mul", g.op("Pow", g.const(float(params["base"])), g.op("Neg", exponent)),
                    g.const((i < rd // 2).astype(np.float64)))  # (S/2,)
    angle = _angles(g, g.op("Expand", positions, g.const([batch, t], I64)), inv_freq)  # (B, T, S/2)
    factor = g.const(float(params["attention_factor"]))
    cos = g.cast(g.op("Mul", g.op("Cos", angle), factor), g.x_dtype)
    sin = g.cast(g.op("Mul", g.op("Sin", angle), factor), g.x_dtype)
    attrs = {"interleaved": int(params["layout"] == "interleaved"), "rotary_embedding_dim": space}
    if params["x_layout"] == "BHTD":
        return g.op("RotaryEmbedding", x, cos, sin, **attrs)
    flat = g.op("Reshape", x, g.const([batch, t, -1], I64))
    return g.op("Reshape", g.op("RotaryEmbedding", flat, cos, sin, num_heads=shape[2], **attrs),
                g.const(list(shape), I64))


def build_rope_apply(g: Graph, params: Mapping[str, Any], x: np.ndarray, pos: np.ndarray, space: int,
                     rd: int) -> tuple[Feeds, Outs]:
    """``rope.apply``: one ``RotaryEmbedding`` node (:func:`_rotary`)."""
    y = _rotary(g, params, "x", x.shape, "positions", pos.shape[-1], space, rd)
    return [("x", x), ("positions", pos)], [(y, "y", "float")]


def build_rope_scores(g: Graph, params: Mapping[str, Any], q: np.ndarray, k: np.ndarray, qp: np.ndarray,
                      kp: np.ndarray, space: int, rd: int) -> tuple[Feeds, Outs]:
    """``rope.scores`` without xPos: q and k each through ``RotaryEmbedding`` at their own
    positions, then ``MatMul(q, k^T)`` in (B, H, T, D) order."""
    qr = _rotary(g, params, "q", q.shape, "q_positions", qp.shape[-1], space, rd)
    kr = _rotary(g, params, "k", k.shape, "k_positions", kp.shape[-1], space, rd)
    if params["x_layout"] == "BTHD":
        qr, kr = g.op("Transpose", qr, perm=[0, 2, 1, 3]), g.op("Transpose", kr, perm=[0, 2, 1, 3])
    scores = g.op("MatMul", qr, g.op("Transpose", kr, perm=[0, 1, 3, 2]))
    return [("q", q), ("k", k), ("q_positions", qp), ("k_positions", kp)], [(scores, "scores", "float")]


def _attention_node(g: Graph, a: Mapping[str, Any], causal: str, past: int, q: str, k: str, v: str,
                    term: str | None = None, bias: str | None = None) -> tuple[str, str]:
    """One real ``Attention`` (opset 23) node on the graph tensors q (B, H, Tq, D) and k, v
    (B, Hkv, Tk, D) in the operator's dtype (GQA from the shapes), ``scale``, ``is_causal``
    (``causal="op"``) and one float ``attn_mask`` holding the bias, the additive mask and ``-inf``
    where the padding, boolean mask or window removes a key (and the causal mask itself when
    ``causal`` is not ``"op"``). A logits ``term`` (compute dtype, broadcastable to (B, H, Tq, Tk)),
    added to q . k before the scale, enters the mask as ``term * scale`` (the operator adds its mask
    after scaling); a ``bias`` graph tensor (added after the scale) enters it as it is. ``past > 0``
    passes the first ``past`` keys as ``past_key``/``past_value`` (``Slice``), which moves
    ``is_causal`` to bottom-right alignment. Returns the output and the weights
    (``qk_matmul_output`` under ``qk_matmul_output_mode=3``, after the softmax)."""
    dt = g.x_dtype
    keep = a["keep_nc"] if causal == "op" else a["keep"]
    fixed = (np.asarray(a["bias"]) + np.asarray(a["additive"])) + np.where(keep, 0.0, -np.inf)
    if term is None and bias is None:
        mask = g.const(fixed, NUMPY[dt])
    else:
        mask = g.const(fixed)
        if term is not None:
            mask = g.op("Add", g.op("Mul", term, g.const(float(a["scale"]))), mask)
        if bias is not None:
            mask = g.op("Add", bias, mask)
        mask = g.cast(mask, dt)
    inputs = [q, k, v, mask]
    if past:
        def split(x: str) -> tuple[str, str]:
            cut, axis = g.const([past], I64), g.const([2], I64)
            return (g.op("Slice", x, g.const([0], I64), cut, axis),
                    g.op("Slice", x, cut, g.const([np.iinfo(np.int64).max], I64), axis))

        (past_key, k), (past_value, v) = split(k), split(v)
        inputs = [q, k, v, mask, past_key, past_value]
    out, weights = g._name("y"), g._name("w")
    present = [g._name("present_key"), g._name("present_value")] if past else ["", ""]  # ORT needs them with a past
    g.nodes.append(helper.make_node("Attention", inputs, [out, *present, weights], scale=float(a["scale"]),
                                    is_causal=int(causal == "op"), qk_matmul_output_mode=3))
    return out, weights


def build_attention(g: Graph, params: Mapping[str, Any], a: Mapping[str, Any], causal: str,
                    past: int) -> tuple[Feeds, Outs]:
    """``attention``: q, k, v fed in the operator's dtype to one :func:`_attention_node`."""
    out, weights = _attention_node(g, a, causal, past, "q", "k", "v")
    feeds = _inputs_as(g.x_dtype, q=a["q"], k=a["k"], v=a["v"])
    return feeds, [(out, "output", "float"), (weights, "weights", "float")]


def _structural(params: Mapping[str, Any], a: Mapping[str, Any]) -> tuple[str, int]:
    """How the case's causal mask is expressed: ``(causal, past)`` with causal ``"none"``, ``"op"``
    (``is_causal=1``) or ``"mask"`` (in ``attn_mask``: bottom-right with Tq > Tk, where
    ``is_causal`` would need a negative past length)."""
    tq, tk = a["q"].shape[2], a["k"].shape[2]
    if not params["causal"]:
        return "none", 0
    if params["alignment"] == "top_left" or tq == tk:
        return "op", 0
    if tk > tq:
        return "op", tk - tq  # bottom-right: the extra keys are the cache
    return "mask", 0


# --- xPos, MRoPE and Shaw: primitive graphs -------------------------------------------------------
# Float inputs are fed in the adapter's dtype (a float16 model holds float16 tables and activations)
# and cast to the graph's compute dtype (float32 at float16) inside the graph.


def _pair_channels(g: Graph, x: str, n: int, layout: str) -> tuple[str, str]:
    """The two channels of every rotation pair of ``x`` (..., 2n): (..., n) each for ``layout="half"``
    (``x[..., :n]``, ``x[..., n:]``), (..., n, 1) each for ``"interleaved"`` (even, odd channels)."""
    if layout == "half":
        return g.last(x, 0, n), g.last(x, n, 2 * n)
    pairs = g.op("Reshape", x, g.const([0, 0, 0, n, 2], I64))  # (B, ., ., n, 2)
    return g.last(pairs, 0, 1), g.last(pairs, 1, 2)


def _join_channels(g: Graph, a: str, b: str, layout: str) -> str:
    """Inverse of :func:`_pair_channels`."""
    if layout == "half":
        return g.op("Concat", a, b, axis=-1)
    return g.op("Reshape", g.op("Concat", a, b, axis=-1), g.const([0, 0, 0, -1], I64))


def build_xpos(g: Graph, params: Mapping[str, Any], q: np.ndarray, k: np.ndarray, pos: np.ndarray,
               dtype: str) -> tuple[Feeds, Outs]:
    """xPos with primitive operators: the pair channels ``(a, b)`` rotated to ``(a cos - b sin,
    b cos + a sin)`` at ``Pow(base, -2i/D)`` per pair, then q times and k divided by
    ``Pow(zeta, (p - c) / B)`` with ``zeta = (2i + 0.4 D) / (1.4 D)``. A third output flags a scale
    that overflows the compute dtype (``IsInf`` of ``zeta ** +-power``)."""
    width, t = q.shape[-1], pos.shape[-1]
    n, layout = width // 2, params["layout"]
    i = g.const(np.arange(n))
    inv_freq = g.op("Pow", g.const(float(params["base"])),
                    g.op("Neg", g.op("Div", g.op("Mul", i, g.const(2.0)), g.const(float(width)))))
    p = g.cast("positions", g.compute)  # (B|1, T)
    head_axis = 1 if params["x_layout"] == "BHTD" else 2
    angle = g.op("Unsqueeze", g.op("Mul", g.unsqueeze_last(p), inv_freq), g.const([head_axis], I64))
    centre = t // 2 if params["centring"] == "lucidrains" else -(-t // 2)
    power = g.op("Div", g.op("Sub", p, g.const(float(centre))), g.const(float(params["scale_base"])))
    zeta = g.op("Div", g.op("Add", g.op("Mul", i, g.const(2.0)), g.const(0.4 * width)), g.const(1.4 * width))
    up = g.op("Pow", zeta, g.op("Unsqueeze", g.unsqueeze_last(power), g.const([head_axis], I64)))  # like angle
    cos, sin = g.op("Cos", angle), g.op("Sin", angle)
    if layout == "interleaved":
        cos, sin, up = g.unsqueeze_last(cos), g.unsqueeze_last(sin), g.unsqueeze_last(up)
    outs: Outs = []
    for name, scale in (("q", up), ("k", g.op("Reciprocal", up))):
        a, b = _pair_channels(g, g.cast(name, g.compute), n, layout)
        ra = g.op("Sub", g.op("Mul", a, cos), g.op("Mul", b, sin))
        rb = g.op("Add", g.op("Mul", b, cos), g.op("Mul", a, sin))
        outs.append((_join_channels(g, g.op("Mul", ra, scale), g.op("Mul", rb, scale), layout), f"{name}_rot", "float"))
    beyond = g.op("Or", g.op("IsInf", up), g.op("IsInf", g.op("Reciprocal", up)))
    outs.append((g.op("ReduceMax", _int(g, beyond), keepdims=0), "overflow", "int"))
    return [*_inputs_as(dtype, q=q, k=k), ("positions", pos)], outs


def build_mrope(g: Graph, params: Mapping[str, Any], pos: np.ndarray, stream: np.ndarray) -> tuple[Feeds, Outs]:
    """MRoPE cos/sin: ``Gather`` each pair's stream from the (3, ...) positions, move the pair axis
    last, times ``Pow(base, -2i/d)``; ``width="full"`` concatenates each table with itself."""
    dim = int(params["dim"])
    i = g.const(np.arange(dim // 2))
    w = g.op("Pow", g.const(float(params["base"])),
             g.op("Neg", g.op("Div", g.op("Mul", i, g.const(2.0)), g.const(float(dim)))))
    chosen = g.op("Gather", "positions", g.const(stream, I64), axis=0)  # (P, ...)
    rank = pos.ndim
    chosen = g.op("Transpose", chosen, perm=[*range(1, rank), 0])  # (..., P)
    angle = g.op("Mul", g.cast(chosen, g.compute), w)
    cos, sin = g.op("Cos", angle), g.op("Sin", angle)
    if params["width"] == "full":
        cos, sin = g.op("Concat", cos, cos, axis=-1), g.op("Concat", sin, sin, axis=-1)
    return [("positions", pos)], [(cos, "cos", "float"), (sin, "sin", "float")]


def _shaw_index(g: Graph, params: Mapping[str, Any]) -> str:
    """``Clip(+-(p_j - p_i), -K, K) + K`` (Tq, Tk) from the 1-D position inputs."""
    k = int(params["max_relative_position"])
    i, j = g.unsqueeze_last("q_positions"), g.op("Unsqueeze", "k_positions", g.const([0], I64))
    distance = g.op("Sub", j, i) if params["sign"] == "key_minus_query" else g.op("Sub", i, j)
    return g.op("Add", g.op("Clip", distance, g.const(-k, I64), g.const(k, I64)), g.const(k, I64))


def build_shaw(g: Graph, params: Mapping[str, Any], op: str, a: Mapping[str, Any], qp: np.ndarray, kp: np.ndarray,
               dtype: str) -> tuple[Feeds, Outs]:
    """``shaw.index``: :func:`_shaw_index`. ``shaw.logits``: ``q k^T + GatherElements(q A^T, index)``.
    ``shaw.output``: ``alpha v + (alpha . onehot(index)) A`` with the one-hot as
    ``Equal(index, arange(2K + 1))`` and the per-row sum a batched ``MatMul``."""
    index = _shaw_index(g, params)
    feeds: Feeds = [("q_positions", qp), ("k_positions", kp)]
    if op == "shaw.index":
        return feeds, [(index, "index", "int")]
    if op == "shaw.logits":
        q, k, table = (g.cast(n, g.compute) for n in ("q", "k", "rel_keys"))
        per_distance = g.op("MatMul", q, g.op("Transpose", table, perm=[1, 0]))  # (Tq, 2K + 1)
        logits = g.op("Add", g.op("MatMul", q, g.op("Transpose", k, perm=[1, 0])),
                      g.op("GatherElements", per_distance, index, axis=1))
        return feeds + _inputs_as(dtype, q=a["q"], k=a["k"], rel_keys=a["table"]), [(logits, "logits", "float")]
    alpha, v, table = (g.cast(n, g.compute) for n in ("weights", "v", "rel_values"))
    onehot = g.cast(g.op("Equal", g.unsqueeze_last(index), g.const(np.arange(a["rows"]), I64)), g.compute)
    per_distance = g.op("MatMul", g.op("Unsqueeze", alpha, g.const([1], I64)), onehot)  # (Tq, 1, 2K + 1)
    per_distance = g.op("Squeeze", per_distance, g.const([1], I64))
    out = g.op("Add", g.op("MatMul", alpha, v), g.op("MatMul", per_distance, table))
    return feeds + _inputs_as(dtype, weights=a["weights"], v=a["v"], rel_values=a["table"]), [(out, "output", "float")]


# --- LongRoPE, Transformer-XL, resampling -----------------------------------------------------------


def build_longrope(g: Graph, c: Mapping[str, Any], dtype: str) -> tuple[Feeds, Outs]:
    """``Reciprocal(e * Pow(base, 2i/d))`` with ``e`` the factor list in use (long when L > L0),
    chosen in Python as transformers chooses it; the attention factor is a Python float64 scalar,
    as transformers keeps it."""
    dim = c["dim"]
    i = g.const(np.arange(dim // 2))
    power = g.op("Pow", g.const(c["base"]), g.op("Div", g.op("Mul", i, g.const(2.0)), g.const(float(dim))))
    inv_freq = g.op("Reciprocal", g.op("Mul", g.cast("ext_factors", g.compute), power))
    factor = g.op("Identity", g.const([c["a"]]))
    return _inputs_as(dtype, ext_factors=c["factors"]), [(inv_freq, "inv_freq", "float"),
                                                         (factor, "attention_factor", "float")]


def _xl_embedding(g: Graph, distance: str, width: int, base: float) -> str:
    """``R = [sin(delta w) | cos(delta w)]`` (..., D_r) of int64 distances, ``w_k = Pow(base, -2k/D_r)``."""
    w = g.op("Pow", g.const(base), g.op("Neg", g.op("Div", g.op("Mul", g.const(np.arange(width // 2)), g.const(2.0)),
                                                      g.const(float(width)))))
    theta = g.op("Mul", g.unsqueeze_last(g.cast(distance, g.compute)), w)
    return g.op("Concat", g.op("Sin", theta), g.op("Cos", theta), axis=-1)


def _distance(g: Graph, q_name: str, k_name: str) -> str:
    """``p_i - p_j`` (Tq, Tk), int64, of 1-D position inputs."""
    return g.op("Sub", g.unsqueeze_last(q_name), g.op("Unsqueeze", k_name, g.const([0], I64)))


def build_xl_score(g: Graph, c: Mapping[str, Any], dtype: str) -> tuple[Feeds, Outs]:
    """``(q + u) k^T + (q + v) . (R_{p_i - p_j} W_R)``: ``R`` per (i, j) pair from the clipped distance,
    ``MatMul`` by ``w_r``, the per-query dot product a batched ``MatMul`` (Tq, 1, D) x (Tq, D, Tk)."""
    distance = _distance(g, "q_positions", "k_positions")
    if c["clamp_len"] > 0:
        distance = g.op("Clip", distance, g.const(-c["clamp_len"], I64), g.const(c["clamp_len"], I64))
    q, k, u, v, w_r = (g.cast(n, g.compute) for n in ("q", "k", "u", "v", "w_r"))
    content = g.op("MatMul", g.op("Add", q, u), g.op("Transpose", k, perm=[1, 0]))  # (Tq, Tk)
    r = g.op("MatMul", _xl_embedding(g, distance, c["w_r"].shape[0], c["base"]), w_r)  # (Tq, Tk, D)
    query = g.op("Unsqueeze", g.op("Add", q, v), g.const([1], I64))  # (Tq, 1, D)
    position = g.op("Squeeze", g.op("MatMul", query, g.op("Transpose", r, perm=[0, 2, 1])), g.const([1], I64))
    feeds = [("q_positions", c["qp"]), ("k_positions", c["kp"]),
             *_inputs_as(dtype, q=c["q"], k=c["k"], u=c["u"], v=c["v"], w_r=c["w_r"])]
    return feeds, [(g.op("Add", content, position), "score", "float")]


def build_rel_shift(g: Graph, c: Mapping[str, Any], dtype: str) -> tuple[Feeds, Outs]:
    """The codebase's pad-and-reshape: Transformer-XL ``Pad`` one zero column on the left,
    ``Reshape`` (Tk + 1, Tq), drop the first row, ``Reshape`` (Tq, Tk); XLNet ``Reshape`` (R, Tq),
    drop the first row, ``Reshape`` (Tq, R - 1), keep Tk columns. ``valid`` compares index grids."""
    tq, tk, rows = c["tq"], c["k_len"], c["rows"]
    x = g.cast("x", g.compute)
    drop = g.const([1], I64), g.const([np.iinfo(np.int64).max], I64), g.const([0], I64)
    i, j = g.const(np.arange(tq)[:, None], I64), g.const(np.arange(tk)[None, :], I64)
    if c["variant"] == "transformer_xl":
        padded = g.op("Pad", x, g.const([0, 1, 0, 0], I64))  # (Tq, Tk + 1)
        body = g.op("Slice", g.op("Reshape", padded, g.const([tk + 1, tq], I64)), *drop)
        shifted = g.op("Reshape", body, g.const([tq, tk], I64))
        valid = g.op("LessOrEqual", j, g.op("Add", i, g.const(tk - tq, I64)))
    else:
        body = g.op("Slice", g.op("Reshape", x, g.const([rows, tq], I64)), *drop)
        shifted = g.last(g.op("Reshape", body, g.const([tq, rows - 1], I64)), 0, tk)
        valid = g.op("Less", g.op("Sub", g.op("Add", j, g.const(tq, I64)), i), g.const(rows, I64))
    return _inputs_as(dtype, x=c["x"]), [(shifted, "shifted", "float"), (_int(g, valid), "valid", "int")]


def _resize_rows(g: Graph, x: str, columns: int, axis: Mapping[str, Any], requested: int,
                 params: Mapping[str, Any]) -> str:
    """One real ``Resize`` of the rows of a 2-D ``x`` (n, columns) to (m, columns): ``mode`` cubic
    (``cubic_coeff_a`` = cubic_a) or linear, ``coordinate_transformation_mode`` half_pixel or
    align_corners, ``antialias`` and ``exclude_outside`` both 1 under ``antialias="on"`` (the
    stretched kernel, edge weights renormalised, no replicated taps), else 0 (edge taps replicate
    the edge sample); ``sizes`` = (m, columns), or ``scales`` = ``((requested + scale_offset) / n,
    1)`` (float32, as the operator takes them) under ``size_from="scale_factor"``."""
    attrs = {"mode": "cubic" if axis["kernel"] == "bicubic" else "linear", "cubic_coeff_a": axis["a"],
             "coordinate_transformation_mode": "align_corners" if axis["align_corners"] else "half_pixel",
             "antialias": int(axis["antialias"]), "exclude_outside": int(axis["antialias"])}
    if params["size_from"] == "size":
        return g.op("Resize", x, "", "", g.const([axis["m"], columns], I64), **attrs)
    factor = (requested + float(params["scale_offset"])) / axis["n"]
    return g.op("Resize", x, "", g.const([factor, 1.0], np.float32), **attrs)


def build_resample(g: Graph, op: str, c: Mapping[str, Any], params: Mapping[str, Any],
                   table: np.ndarray | None) -> tuple[Feeds, Outs]:
    """``resample.weights``: ``Resize`` of the rows of the (n, n) identity, which gives the (m, n)
    weights. ``table_1d``: the prefix rows, then ``Resize`` of the (L, D) rows. ``grid_2d``: the
    (H, W, D) grid resized separably with 2-D ``Resize`` nodes, the rows of (H, W*D) then the rows
    of (W, H'*D) (``Transpose``): onnxruntime 1.30's CPU ``Resize`` refuses 4-D (NCHW) cubic
    downsampling without antialias, and a 2-D ``Resize`` is the same separable kernel. ``Resize``
    runs in the adapter's dtype, on the table as fed."""
    dt = g.x_dtype
    if op == "resample.weights":
        eye = g.const(np.eye(c["n"]), NUMPY[dt])
        return [], [(_resize_rows(g, eye, c["n"], c, int(params["new_size"]), params), "weights", "float")]
    prefix = len(c["prefix"])
    cut, end, rows_axis = g.const([prefix], I64), g.const([np.iinfo(np.int64).max], I64), g.const([0], I64)
    head = g.op("Slice", "table_in", g.const([0], I64), cut, rows_axis)
    rows = g.op("Slice", "table_in", cut, end, rows_axis)
    if op == "resample.table_1d":
        resized = _resize_rows(g, rows, c["rows"].shape[1], c["axis"], int(params["new_length"]), params)
    else:
        (h, w, width), (hy, wx) = c["grid"].shape, (c["height"], c["width"])
        along_h = _resize_rows(g, g.op("Reshape", rows, g.const([h, w * width], I64)), w * width, hy,
                               int(params["new_height"]), params)  # (H', W*D)
        by_w = g.op("Reshape", g.op("Transpose", g.op("Reshape", along_h, g.const([hy["m"], w, width], I64)),
                                    perm=[1, 0, 2]), g.const([w, hy["m"] * width], I64))  # (W, H'*D)
        along_w = _resize_rows(g, by_w, hy["m"] * width, wx, int(params["new_width"]), params)  # (W', H'*D)
        grid = g.op("Transpose", g.op("Reshape", along_w, g.const([wx["m"], hy["m"], width], I64)), perm=[1, 0, 2])
        resized = g.op("Reshape", grid, g.const([-1, width], I64))  # (H' W', D), row-major
    return _inputs_as(dt, table_in=np.asarray(table)), [(g.op("Concat", head, resized, axis=0), "table", "float")]


# --- attention with the positional schemes: the real Attention (and RotaryEmbedding) operators ----------


def _value_term(g: Graph, out: str, weights: str, u: str) -> str:
    """``out + sum_j weights[..., i, j] u[..., i, j, :]`` in the compute dtype: (B, H, Tq, 1, Tk) x
    (..., Tq, Tk, D) ``MatMul``."""
    w = g.op("Unsqueeze", g.cast(weights, g.compute), g.const([-2], I64))
    extra = g.op("Squeeze", g.op("MatMul", w, u), g.const([-2], I64))
    return g.op("Add", g.cast(out, g.compute), extra)


def build_attention_scheme(g: Graph, op: str, params: Mapping[str, Any], a: Mapping[str, Any]) -> tuple[Feeds, Outs]:
    """``attention.<scheme>`` as the positional part in the graph around one real ``Attention``
    (:func:`_attention_node`, opset 23): RoPE rotates q and k with one ``RotaryEmbedding`` each
    (opset 23, cos/sin caches from the positions, as rope.apply); ALiBi and T5 build their bias
    (``Pow``/``Abs``/``Sub``; the T5 bucket ladder and ``Gather``) and pass it in ``attn_mask``;
    Shaw, Transformer-XL and stored terms pass their logits term as ``term * scale`` in
    ``attn_mask`` and add the value term (Shaw, stored) under the operator's weights."""
    dt = g.x_dtype
    causal, past = _structural(params, a)
    feeds = _inputs_as(dt, q=a["q"], k=a["k"], v=a["v"])
    q, k, term, bias, u = "q", "k", None, None, None
    b, h, tq, d = a["q"].shape
    if op == "attention.rope":
        p = {"base": a["base"], "layout": a["layout"], "x_layout": "BHTD", "attention_factor": 1.0}
        q = _rotary(g, p, "q", a["q"].shape, "q_positions", tq, d, d)
        k = _rotary(g, p, "k", a["k"].shape, "k_positions", a["k"].shape[2], d, d)
        feeds += [("q_positions", a["q_positions"]), ("k_positions", a["k_positions"])]
    elif op in ("attention.alibi", "attention.t5"):
        qp, kp = a["q_positions"], a["k_positions"]
        feeds += [("q_positions", qp), ("k_positions", kp)]
        if op == "attention.alibi":
            slopes = g.op("Pow", g.const(2.0), g.op("Neg", g.const(a["exponents"])))
            bias = _alibi_bias(g, a["form"], slopes, "q_positions", "k_positions", qp, kp)
        else:
            bias = _t5_bias(g, "q_positions", "k_positions", "table", qp.ndim, a["limit"], a["side"], a["direction"])
            feeds += _inputs_as(dt, table=a["table"])
    elif op == "attention.shaw":
        feeds += [("q_positions", a["qp"]), ("k_positions", a["kp"]),
                  *_inputs_as(dt, rel_keys=a["rel_keys"], rel_values=a["rel_values"])]
        index = _shaw_index(g, params)  # (Tq, Tk)
        per_distance = g.op("MatMul", g.cast("q", g.compute), g.op("Transpose", g.cast("rel_keys", g.compute),
                                                                   perm=[1, 0]))  # (B, H, Tq, 2K + 1)
        term = g.op("GatherElements", per_distance, g.op("Expand", index, g.const([b, h, tq, a["k"].shape[2]], I64)),
                    axis=3)
        u = g.op("Gather", g.cast("rel_values", g.compute), index, axis=0)  # (Tq, Tk, D)
    elif op == "attention.xl":
        feeds += [("q_positions", a["qp"]), ("k_positions", a["kp"]),
                  *_inputs_as(dt, u_bias=a["u_bias"], v_bias=a["v_bias"], w_r=a["w_r"])]
        r = g.op("MatMul", g.op("Unsqueeze", _xl_embedding(g, _distance(g, "q_positions", "k_positions"),
                                                          a["w_r"].shape[1], a["base"]), g.const([0], I64)),
                 g.op("Unsqueeze", g.cast("w_r", g.compute), g.const([1], I64)))  # (H, Tq, Tk, D)
        query = g.op("Add", g.cast("q", g.compute), g.op("Unsqueeze", g.cast("v_bias", g.compute),
                                                          g.const([1], I64)))  # (B, H, Tq, D)
        bd = g.op("MatMul", g.op("Unsqueeze", query, g.const([-2], I64)), g.op("Transpose", r, perm=[0, 1, 3, 2]))
        heads = g.op("Gather", g.cast("k", g.compute), g.const(np.arange(h) // a["groups"], I64), axis=1)
        content = g.op("MatMul", g.op("Unsqueeze", g.cast("u_bias", g.compute), g.const([1], I64)),
                       g.op("Transpose", heads, perm=[0, 1, 3, 2]))  # (B, H, 1, Tk): u_h . k_j
        term = g.op("Add", g.op("Squeeze", bd, g.const([-2], I64)), content)
    else:  # attention.terms
        feeds += _inputs_as(dt, term=a["term"], value_term=a["value_term"])
        term, u = g.cast("term", g.compute), g.cast("value_term", g.compute)
    out, weights = _attention_node(g, a, causal, past, q, k, "v", term, bias)
    if u is not None:
        out = _value_term(g, out, weights, u)
    return feeds, [(out, "output", "float"), (weights, "weights", "float")]


def build_pipeline(g: Graph, c: Mapping[str, Any]) -> tuple[Feeds, Outs]:
    """One layer: ``Gather`` of the token rows, ``Add`` of the absolute encoding (input, or after
    the output projection), ``MatMul`` projections in the compute dtype, then the real ``Attention``
    (opset 23) on 3-D (B, T, H*D) inputs with ``q_num_heads``/``kv_num_heads`` (the operator splits
    the heads, GQA from the counts) and ``is_causal``, and the ``MatMul`` by ``w_o``."""
    dt = g.x_dtype
    x = g.op("Gather", g.cast("embedding", g.compute), "tokens", axis=0)  # (B, T, d)
    pe = g.cast("pe", g.compute)
    if c["placement"] == "input":
        x = g.op("Add", x, pe)
    q, k, v = (g.cast(g.op("MatMul", x, g.cast(n, g.compute)), dt) for n in ("w_q", "w_k", "w_v"))
    out = g._name("y")
    g.nodes.append(helper.make_node("Attention", [q, k, v], [out], q_num_heads=c["heads"], kv_num_heads=c["kv_heads"],
                                    is_causal=int(c["causal"]), scale=float(c["scale"])))
    y = g.op("MatMul", g.cast(out, g.compute), g.cast("w_o", g.compute))
    if c["placement"] == "after_block":
        y = g.op("Add", y, pe)
    feeds = [("tokens", c["tokens"]), *_inputs_as(dt, **{n: c[n] for n in ("embedding", "pe", "w_q", "w_k", "w_v",
                                                                            "w_o")})]
    return feeds, [(y, "output", "float")]


def _probe_new(op: str, dtype: str) -> str | None:
    """``None`` when onnxruntime runs the op's graph at ``dtype`` (a trial run), else its message."""
    x = np.linspace(-1, 1, 16).reshape(1, 2, 2, 4)
    resize = {"kernel": "bicubic", "cubic_a": -0.75, "antialias": "off", "coordinates": "half_pixel",
              "size_from": "size", "scale_offset": 0.0}
    plain = {"scale": None, "softmax_multiplier": 1.0, "causal": True, "alignment": "bottom_right"}
    schemes: dict[str, tuple[dict[str, Any], dict[str, np.ndarray]]] = {
        "attention.terms": ({}, {"term": np.zeros((1, 1, 2, 2)), "value_term": np.zeros((1, 1, 2, 2, 4))}),
        "attention.rope": ({"base": 10000.0, "layout": "half"}, {}),
        "attention.alibi": ({"form": "relative_causal"}, {}),
        "attention.t5": ({"num_buckets": 8, "max_distance": 16, "direction": "bidirectional"},
                         {"table": np.zeros((8, 2))}),
        "attention.shaw": ({"max_relative_position": 1, "sign": "key_minus_query"},
                           {"rel_keys": np.zeros((3, 4)), "rel_values": np.zeros((3, 4))}),
        "attention.xl": ({"base": 10000.0}, {"u_bias": x[0, 0], "v_bias": x[0, 0], "w_r": x[0]}),
    }
    trial: dict[str, tuple[dict[str, Any], dict[str, np.ndarray]]] = {
        "rope.inv_freq": ({"dim": 8, "base": 10000.0, "rope_type": "yarn", "factor": 4.0, "original_max_position": 64,
                           "context_length": None, "low_freq_factor": None, "high_freq_factor": None,
                           "beta_fast": None, "beta_slow": None, "mscale": None, "mscale_all_dim": None,
                           "attention_factor": None, "truncate": True, "partial_rotary_factor": 1.0,
                           "dynamic_convention": "transformers", "yarn_convention": "transformers"}, {}),
        "rope.cos_sin": ({"width": "full", "attention_factor": 1.0},
                         {"positions": np.arange(2), "inv_freq": np.array([1.0, 0.5])}),
        "rope.apply": ({"base": 10000.0, "rotary_dim": None, "partial": "prefix", "layout": "half",
                        "x_layout": "BHTD", "attention_factor": 1.0}, {"x": x, "positions": np.arange(2)}),
        "rope.scores": ({"base": 10000.0, "rotary_dim": None, "partial": "prefix", "layout": "half",
                         "x_layout": "BHTD", "attention_factor": 1.0, "xpos_scale_base": None},
                        {"q": x, "k": x, "q_positions": np.arange(2), "k_positions": np.arange(2)}),
        "alibi.slopes": ({"num_heads": 2, "slope_rule": "press", "bias_max": 8.0}, {}),
        "alibi.bias": ({"num_heads": 2, "slope_rule": "press", "bias_max": 8.0, "form": "relative_causal"},
                       {"query_positions": np.arange(2), "key_positions": np.arange(2)}),
        "alibi.mask_positions": ({}, {"attention_mask": np.array([[0, 1, 1]])}),
        "t5.bucket": ({"num_buckets": 32, "max_distance": 128, "direction": "bidirectional"},
                      {"relative_positions": np.arange(-3, 3)}),
        "t5.bias": ({"num_buckets": 32, "max_distance": 128, "direction": "bidirectional",
                     "table_layout": "buckets_heads"},
                    {"query_positions": np.arange(2), "key_positions": np.arange(2), "table": np.zeros((32, 2))}),
        "deberta.bucket": ({"position_buckets": 8, "max_relative_positions": 16, "distance_clamp": "none"},
                           {"relative_positions": np.arange(-3, 3)}),
        "deberta.index": ({"position_buckets": 8, "max_relative_positions": 16, "distance_clamp": "none"},
                          {"query_positions": np.arange(2), "key_positions": np.arange(2)}),
        "deberta.scores": ({"position_buckets": 8, "max_relative_positions": 16, "distance_clamp": "none",
                            "pos_att_type": "c2p|p2c"},
                           {"query_positions": np.arange(2), "key_positions": np.arange(2), "q": x[0],
                            "k": x[0], "pos_key": np.zeros((2, 16, 4)), "pos_query": np.zeros((2, 16, 4))}),
        "attention": ({"scale": None, "causal": True, "alignment": "bottom_right", "window": None,
                       "fully_masked": "zeros"},
                      {"q": x, "k": x, "v": x, "mask": np.ones((1, 1, 1, 1), dtype=bool),
                       "key_padding_mask": np.ones((1, 2), dtype=bool), "bias": np.zeros((1, 1, 1, 1))}),
        "rope.xpos": ({"base": 10000.0, "scale_base": 512.0, "centring": "lucidrains", "layout": "interleaved",
                       "x_layout": "BHTD"}, {"q": x, "k": x, "positions": np.arange(2)}),
        "rope.mrope_cos_sin": ({"dim": 4, "base": 10000.0, "mrope_layout": "chunked", "width": "full"},
                               {"positions": np.zeros((3, 2), dtype=np.int64), "mrope_section": np.array([1, 1, 0])}),
        **{op: ({"max_relative_position": 1, "sign": "key_minus_query"},
                {"q_positions": np.arange(2), "k_positions": np.arange(2), "q": x[0, 0], "k": x[0, 0],
                 "rel_keys": x[0, 0, :1].repeat(3, 0), "weights": np.eye(2), "v": x[0, 0],
                 "rel_values": x[0, 0, :1].repeat(3, 0)}) for op in ("shaw.index", "shaw.logits", "shaw.output")},
        "rope.longrope_inv_freq": ({"dim": 4, "base": 10000.0, "factor": 2.0, "original_max_position": 8,
                                    "context_length": 4, "attention_factor": None,
                                    "longrope_convention": "transformers"},
                                   {"short_factor": np.ones(2), "long_factor": np.ones(2)}),
        "transformer_xl.score": ({"base": 10000.0, "clamp_len": -1},
                                 {"q": x[0, 0], "k": x[0, 0], "u": x[0, 0, 0], "v": x[0, 0, 1], "w_r": x[0, 0],
                                  "q_positions": np.arange(2), "k_positions": np.arange(2)}),
        "transformer_xl.rel_shift": ({"variant": "transformer_xl", "k_len": 2}, {"x": x[0, 0, :, :2]}),
        **{op: ({**resize, "in_size": 4, "new_size": 2, "new_length": 2, "num_prefix_tokens": 1, "grid_height": 2,
                 "grid_width": 2, "new_height": 3, "new_width": 3}, {"table": x[0, 0, :, :2].repeat(3, 0)[:5]})
           for op in RESAMPLE_CHECKS},
        **{op: ({**plain, **extra}, {"q": x, "k": x, "v": x, "q_positions": np.arange(2), "k_positions": np.arange(2),
                                     **tables}) for op, (extra, tables) in schemes.items()},
        "attention.pipeline": ({"num_heads": 2, "num_kv_heads": None, "causal": True, "pe_placement": "input"},
                               {"tokens": np.array([[0, 1]]), "embedding": x[0].reshape(4, 4)[:3], "pe": x[0, 0],
                                **{w: x[0].reshape(4, 4) for w in ("w_q", "w_k", "w_v", "w_o")}}),
    }
    params, inputs = trial[op]
    try:
        RUNNERS[op](params, inputs, dtype)
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


def _graph(dtype: str) -> Graph:
    g = Graph("float64" if dtype == "float64" else "float32")
    g.x_dtype = dtype  # what the real RotaryEmbedding / Attention operators take and return
    return g


def run_inv_freq(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray], dtype: str) -> dict[str, np.ndarray]:
    g = _graph(dtype)
    return _execute(g, *build_inv_freq(g, params), dtype)


def run_cos_sin(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray], dtype: str) -> dict[str, np.ndarray]:
    g = _graph(dtype)
    return _execute(g, *build_cos_sin(g, params, *checks.cos_sin(params, inputs)), dtype)


def run_rope_apply(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray], dtype: str) -> dict[str, np.ndarray]:
    x, pos, space, rd = checks.rope_apply(params, inputs)
    g = _graph(dtype)
    feeds, outs = build_rope_apply(g, params, x.astype(NUMPY[dtype]), pos, space, rd)
    return _execute(g, feeds, outs, dtype, ROPE_OPSET)


def run_rope_scores(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray],
                    dtype: str) -> dict[str, np.ndarray]:
    q, k, qp, kp, space = checks.rope_scores(params, inputs)
    rd = space if params["rotary_dim"] is None else int(params["rotary_dim"])  # < S: proportional
    g = _graph(dtype)
    feeds, outs = build_rope_scores(g, params, q.astype(NUMPY[dtype]), k.astype(NUMPY[dtype]), qp, kp, space, rd)
    return _execute(g, feeds, outs, dtype, ROPE_OPSET)


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
    a = checks.attention(params, inputs)
    g = _graph(dtype)
    feeds, outs = build_attention(g, params, a, *_structural(params, a))
    return _execute(g, feeds, outs, dtype, ATTENTION_OPSET)


def run_xpos(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray], dtype: str) -> dict[str, np.ndarray]:
    q, k, pos = checks.xpos(params, inputs)
    g = _graph(dtype)
    out = _execute(g, *build_xpos(g, params, q, k, pos, dtype), dtype)
    if out.pop("overflow"):
        raise checks.Rejected("out_of_range", f"zeta ** (+-(p - c) / {params['scale_base']}) at positions "
                              f"{int(pos.min())}..{int(pos.max())} overflows {g.compute}")
    return out


def run_mrope(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray], dtype: str) -> dict[str, np.ndarray]:
    g = _graph(dtype)
    return _execute(g, *build_mrope(g, params, *checks.mrope(params, inputs)), dtype)


def _shaw_runner(op: str) -> Callable[[Mapping[str, Any], Mapping[str, np.ndarray], str], dict[str, np.ndarray]]:
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


def _resample_runner(op: str) -> Callable[[Mapping[str, Any], Mapping[str, np.ndarray], str], dict[str, np.ndarray]]:
    def run(params: Mapping[str, Any], inputs: Mapping[str, np.ndarray], dtype: str) -> dict[str, np.ndarray]:
        c = RESAMPLE_CHECKS[op](params, inputs)
        g = _graph(dtype)
        return _execute(g, *build_resample(g, op, c, params, inputs.get("table")), dtype)
    run.__name__ = f"run_{op.replace('.', '_')}"
    return run


ATTENTION_CHECKS = {"attention.terms": checks.attention_terms, "attention.rope": checks.attention_rope,
                    "attention.alibi": checks.attention_alibi, "attention.t5": checks.attention_t5,
                    "attention.shaw": checks.attention_shaw, "attention.xl": checks.attention_xl}


def _scheme_runner(op: str) -> Callable[[Mapping[str, Any], Mapping[str, np.ndarray], str], dict[str, np.ndarray]]:
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
    return _execute(g, *build_pipeline(g, checks.attention_pipeline(params, inputs)), dtype, ATTENTION_OPSET)


ATTENTION_OPS = ("attention", "attention.pipeline", *ATTENTION_CHECKS)  # graphs with the real Attention operator
RUNNERS: dict[str, Callable[[Mapping[str, Any], Mapping[str, np.ndarray], str], dict[str, np.ndarray]]] = {
    "rope.inv_freq": run_inv_freq, "rope.cos_sin": run_cos_sin, "rope.apply": run_rope_apply,
    "rope.scores": run_rope_scores,
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


def _float32_size(params: Mapping[str, Any]) -> bool | str:
    """Whether ``Resize`` under float32 ``scales`` gives the output size of ``size_from="scale_factor"``:
    onnxruntime sizes each axis as ``floor(n * scale)`` with the float32 scale, the reference as the
    float64 floor of F.interpolate (13 * (15/13) is 14 in float64, 15 in float32)."""
    offset = float(params["scale_offset"])
    for n_name, new_name in (("in_size", "new_size"), ("grid_height", "new_height"), ("grid_width", "new_width")):
        if n_name not in params or not isinstance(params[n_name], int) or params[n_name] < 1:
            continue  # malformed sizes are the validator's to refuse
        n, new = int(params[n_name]), float(params[new_name])
        wide, narrow = np.floor(n * ((new + offset) / n)), np.floor(np.float32(n) * np.float32((new + offset) / n))
        if wide != narrow:
            return (f"Resize takes its scales as float32: {n_name}={n} scaled by ({new:g} + {offset:g}) / {n} gives "
                    f"{int(narrow)} rows in onnxruntime (floor of the float32 product), {int(wide)} in the float64 "
                    "floor of size_from='scale_factor'; no Resize setting gives that output size")
    return True


class OnnxRuntimeAdapter(Adapter):
    """The ONNX graphs at one dtype; ops whose graph onnxruntime refuses are not_applicable."""

    def __init__(self, dtype: str = "float32") -> None:
        if dtype not in ELEM:
            raise ValueError(f"onnxruntime adapter: dtype {dtype!r} is not offered (float64, float32, float16)")
        self.refused = {op: reason for op in BUILDERS if (reason := _probe(op, dtype))}
        self.refused.update({op: reason for op in RUNNERS if (reason := _probe_new(op, dtype))})
        ops: dict[str, Callable[..., Any]] = {
            "sinusoidal.table": self._table, "sinusoidal.fairseq": self._fairseq, "grid2d.sincos": self._grid,
            "learned.lookup": self._lookup}
        ops.update({op: self._runner(fn) for op, fn in RUNNERS.items()})
        calls = {op: f"ONNX graph ({BUILDERS[op].__name__}), opset {OPSET}" for op in BUILDERS}
        super().__init__("onnxruntime-graphs", f"onnxruntime {ort.__version__}, onnx {onnx.__version__}", dtype, ops,
                         {op: {} for op in ops}, {**calls, **CALLS}, OnnxRuntimeAdapter, tuple(ELEM))

    def _runner(self, fn: Callable[[Mapping[str, Any], Mapping[str, np.ndarray], str], dict[str, np.ndarray]]
                ) -> Callable[[Mapping[str, Any], Mapping[str, np.ndarray]], dict[str, np.ndarray]]:
        return lambda params, inputs: fn(params, inputs, self.dtype)

    def supports(self, op: str, params: Mapping[str, Any]) -> bool | str:
        if op not in BUILDERS and op not in RUNNERS:
            return f"{op} has no ONNX graph yet"
        if op in self.refused:
            return self.refused[op]
        if op == "rope.inv_freq" and params.get("rope_type") == "longrope":
            return "rope_type='longrope' has no graph (its factor lists are not inputs of rope.inv_freq cases)"
        if op == "attention" and params.get("fully_masked") in ("nan", "uniform"):
            return ("the Attention operator has one fully-masked-row behaviour, zeros (onnx/onnx#8068); "
                    f"fully_masked={params['fully_masked']!r} has no form")
        xpos = params.get("xpos_scale_base")
        if op == "rope.scores" and xpos is not None and np.isfinite(float(xpos)) and float(xpos) > 0:
            return "the xPos pair weights have no RotaryEmbedding form (xpos_scale_base is set)"
        if op in ("resample.weights", "resample.grid_2d") and params.get("size_from") == "scale_factor":
            return _float32_size(params)
        if op == "rope.apply" and params.get("layout") == "interleaved_to_half":
            return ("RotaryEmbedding reads and writes pairs in one layout (interleaved=0 or 1); "
                    "interleaved_to_half has no form")
        return True

    def _table(self, params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        rows, p = validate_table(params, inputs)
        return _run(build_table, p, {"positions": rows - int(p["position_offset"])}, self.dtype)["table"]

    def _fairseq(self, params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        tokens = validate_fairseq(params, inputs)
        return _run(build_fairseq, params, {"tokens": tokens}, self.dtype)

    def _grid(self, params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        ys, xs = validate_grid(params, inputs)
        return _run(build_grid, params, {"ys": ys, "xs": xs}, self.dtype)["table"]

    def _lookup(self, params: Mapping[str, Any], inputs: Mapping[str, np.ndarray]) -> np.ndarray:
        table, rows = validate_lookup(params, inputs)
        feeds = {"table": table.astype(np.float64), "positions": rows - int(params["offset"])}
        return _run(build_lookup, params, feeds, self.dtype, table.shape[0])["rows"]


ADAPTER = OnnxRuntimeAdapter
ONNXRUNTIME = OnnxRuntimeAdapter
