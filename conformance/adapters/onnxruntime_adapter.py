"""ONNX Runtime adapter: each op as an ONNX graph, run by onnxruntime; the real ``RotaryEmbedding``
and ``Attention`` operators (opset 23) for rope.apply and attention, primitive operators elsewhere.

Every case builds a small graph with the ``onnx.helper`` API (opset 21, opset 23 for the two real
operators) from the case's parameters and runs it on the CPU execution provider. The absolute ops
use ``Cast``, ``Add``, ``Mul``, ``Div``, ``Neg``, ``Pow``, ``Sin``, ``Cos``, ``Unsqueeze``,
``Concat``, ``Slice``, ``Reshape``, ``Shape``, ``Equal``, ``Not``, ``CumSum``, ``Gather``,
``Min``; the frequencies are computed in the graph (``Pow(base, -e)``), not baked in.

Dtypes: ``float32`` (the graph computes in float32), ``float16`` (positions and angles in
float32, since the phase tolerance asks for at least float32 angles; the result is cast to
float16 at the end) and ``float64``
(the graph computes in double where the CPU provider has double kernels). At start-up the
adapter builds every op once per dtype; an (op, dtype) pair whose graph onnxruntime refuses
is ``not_applicable`` with onnxruntime's message as the reason, never a pass.

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

Neither operator has a float64 kernel in onnxruntime 1.30: the start-up trial run reports both
as not_applicable at float64, never as a pass. At float16 they take float16 inputs (x, q, k, v and
the caches), as a float16 model feeds them.

``rope.cos_sin``, ``alibi.*`` (``alibi.mask_positions`` with ``CumSum``), ``t5.bucket``/``t5.bias``
and ``deberta.*`` are primitive graphs (``Log``, ``Ceil``, ``Cast`` to int64
truncating, ``Where``, ``Gather``, ``Transpose``, ...); the bucket ladders are the float formulas
of transformers. ``rope.inv_freq`` (every rope_type but longrope): the per-pair arrays in the graph,
the scalars in Python float64 as transformers keeps them.

``rope.xpos`` is a primitive graph (not ``RotaryEmbedding``, which has no per-pair scale): the pair
channels (``Slice``, or ``Reshape`` to (..., D/2, 2) for interleaved pairs) rotated with ``Mul``/``Sub``/
``Add`` at ``Pow(base, -2i/D)``, then times ``Pow(zeta, (p - c)/B)`` for q and its ``Reciprocal`` for k;
a scale that overflows the compute dtype (``IsInf``) is refused as ``out_of_range``.
``rope.mrope_cos_sin``: ``Gather`` of each pair's stream from the (3, ...) positions, ``Transpose``,
``Cos``/``Sin``. ``shaw.index``: ``Clip(+-(p_j - p_i), -K, K) + K``; ``shaw.logits``: ``MatMul`` and
``GatherElements`` of ``q A^K^T``; ``shaw.output``: ``MatMul`` with the one-hot of the index
(``Equal`` against ``arange(2K + 1)``). These graphs take their float inputs in the adapter's
dtype (float16 inputs at float16, as a float16 model holds them) and compute in float32 at float16.
Not built (not_applicable): rope.longrope_inv_freq, transformer_xl.*, resample.*, attention.terms,
attention.pipeline.

Run::

    posenc-ref conformance conformance/adapters/onnxruntime_adapter.py:ADAPTER
    posenc-ref conformance conformance/adapters/onnxruntime_adapter.py:ADAPTER --dtype float16 \
        --expectations conformance/adapters/onnxruntime_float16.toml

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


def build_alibi(g: Graph, params: Mapping[str, Any], q: np.ndarray, k: np.ndarray) -> tuple[Feeds, Outs]:
    i, j = _pairs(g, "query_positions", "key_positions")
    form = params["form"]
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
    slopes = g.op("Reshape", _slopes(g, params), g.const([-1, 1, 1], I64))
    return [("query_positions", q), ("key_positions", k)], [(g.op("Mul", slopes, distance), "bias", "float")]


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


def build_t5_bias(g: Graph, params: Mapping[str, Any], q: np.ndarray, k: np.ndarray,
                  table: np.ndarray) -> tuple[Feeds, Outs]:
    _, limit, side, direction = checks.t5(params)
    i, j = _pairs(g, "query_positions", "key_positions")
    buckets = _t5_buckets(g, g.op("Sub", j, i), limit, side, direction)  # (..., Tq, Tk)
    gathered = g.op("Gather", g.cast("table", g.compute), buckets, axis=0)  # (..., Tq, Tk, H)
    rank = q.ndim + 2
    perm = list(range(rank - 3)) + [rank - 1, rank - 3, rank - 2]
    feeds = [("query_positions", q), ("key_positions", k), ("table", table)]
    return feeds, [(g.op("Transpose", gathered, perm=perm), "bias", "float")]


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


def build_attention(g: Graph, params: Mapping[str, Any], a: Mapping[str, Any], causal: str,
                    past: int) -> tuple[Feeds, Outs]:
    """The real ``Attention`` (opset 23) with 4-D Q (B, H, Tq, D), K/V (B, Hkv, Tk, D) (GQA from the
    shapes), ``scale``, ``is_causal`` (``causal="op"``) and one float ``attn_mask`` holding the bias,
    the additive mask and ``-inf`` where the padding, boolean mask or window removes a key (and the
    causal mask itself when ``causal`` is not ``"op"``). ``past > 0`` feeds the first ``past`` keys as
    ``past_key``/``past_value``, which moves ``is_causal`` to bottom-right alignment. The weights
    are ``qk_matmul_output`` with ``qk_matmul_output_mode=3`` (after the softmax)."""
    dt = g.x_dtype
    keep = a["keep_nc"] if causal == "op" else a["keep"]
    mask = (np.asarray(a["bias"]) + np.asarray(a["additive"])) + np.where(keep, 0.0, -np.inf)
    k, v = a["k"], a["v"]
    feeds = [("q", a["q"].astype(NUMPY[dt])), ("k", k[:, :, past:].astype(NUMPY[dt])),
             ("v", v[:, :, past:].astype(NUMPY[dt])), ("attn_mask", mask.astype(NUMPY[dt]))]
    inputs = ["q", "k", "v", "attn_mask"]
    if past:
        feeds += [("past_key", k[:, :, :past].astype(NUMPY[dt])), ("past_value", v[:, :, :past].astype(NUMPY[dt]))]
        inputs += ["past_key", "past_value"]
    out, weights = g._name("y"), g._name("w")
    present = [g._name("present_key"), g._name("present_value")] if past else ["", ""]  # ORT needs them with a past
    g.nodes.append(helper.make_node("Attention", inputs, [out, *present, weights], scale=float(a["scale"]),
                                    is_causal=int(causal == "op"), qk_matmul_output_mode=3))
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


def _inputs_as(dtype: str, **arrays: np.ndarray) -> Feeds:
    """Float arrays rounded to ``dtype`` as a model of that dtype holds them."""
    return [(name, np.asarray(value, dtype=NUMPY[dtype])) for name, value in arrays.items()]


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


def _probe_new(op: str, dtype: str) -> str | None:
    """``None`` when onnxruntime runs the op's graph at ``dtype`` (a trial run), else its message."""
    x = np.linspace(-1, 1, 16).reshape(1, 2, 2, 4)
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


RUNNERS: dict[str, Callable[[Mapping[str, Any], Mapping[str, np.ndarray], str], dict[str, np.ndarray]]] = {
    "rope.inv_freq": run_inv_freq, "rope.cos_sin": run_cos_sin, "rope.apply": run_rope_apply,
    "rope.scores": run_rope_scores,
    "alibi.slopes": run_slopes, "alibi.bias": run_alibi,
    "alibi.mask_positions": run_mask_positions, "t5.bucket": run_t5_bucket, "t5.bias": run_t5_bias,
    "deberta.bucket": run_deberta_bucket, "deberta.scores": run_deberta_scores,
    "deberta.index": run_deberta_index, "attention": run_attention,
    "rope.xpos": run_xpos, "rope.mrope_cos_sin": run_mrope,
    **{op: _shaw_runner(op) for op in ("shaw.index", "shaw.logits", "shaw.output")},
}
CALLS = {op: f"ONNX graph of primitive operators ({fn.__name__}), opset {OPSET}" for op, fn in RUNNERS.items()}
CALLS["rope.apply"] = f"the ONNX RotaryEmbedding operator (opset {ROPE_OPSET}), cos/sin caches built in the graph"
CALLS["rope.scores"] = f"two ONNX RotaryEmbedding operators (opset {ROPE_OPSET}) and MatMul (no xPos)"
CALLS["attention"] = (f"the ONNX Attention operator (opset {ATTENTION_OPSET}): is_causal, past_key/past_value for "
                      "bottom-right alignment, a float attn_mask, qk_matmul_output_mode=3 for the weights")


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
