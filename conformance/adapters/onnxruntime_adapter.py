"""ONNX Runtime adapter: each op as an ONNX graph of primitive operators, run by onnxruntime.

Every case builds a small graph with the ``onnx.helper`` API (opset 21) from the case's
parameters and runs it on the CPU execution provider. Only standard primitive operators are
used: ``Cast``, ``Add``, ``Mul``, ``Div``, ``Neg``, ``Pow``, ``Sin``, ``Cos``, ``Unsqueeze``,
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

Where later ops go: ``rope.*`` will use the opset-23 ``RotaryEmbedding`` operator and
``attention`` the opset-23 ``Attention`` operator (both reject float64; that will be reported
as not_applicable by the same start-up probe). Add a builder to ``BUILDERS`` for each.

Run::

    posenc-ref conformance conformance/adapters/onnxruntime_adapter.py:ADAPTER
    posenc-ref conformance conformance/adapters/onnxruntime_adapter.py:ADAPTER --dtype float16

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

    def model(self, inputs: list[tuple[str, int, int]], outputs: list[tuple[str, str, int, int]]) -> Any:
        """The checked model; inputs ``(name, elem type, rank)``, outputs ``(node output, name, type, rank)``."""
        graph = helper.make_graph(
            self.nodes, "posenc", [helper.make_tensor_value_info(n, t, [None] * r) for n, t, r in inputs],
            [helper.make_tensor_value_info(public, t, [None] * r) for _, public, t, r in outputs], self.inits)
        for internal, public, _, _ in outputs:
            graph.node.append(helper.make_node("Identity", [internal], [public]))
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
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
    # "rope.apply": RotaryEmbedding (opset 23), "attention": Attention (opset 23): added with those ops.
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


class OnnxRuntimeAdapter(Adapter):
    """The ONNX graphs at one dtype; ops whose graph onnxruntime refuses are not_applicable."""

    def __init__(self, dtype: str = "float32") -> None:
        if dtype not in ELEM:
            raise ValueError(f"onnxruntime adapter: dtype {dtype!r} is not offered (float64, float32, float16)")
        self.refused = {op: reason for op in BUILDERS if (reason := _probe(op, dtype))}
        ops = {"sinusoidal.table": self._table, "sinusoidal.fairseq": self._fairseq, "grid2d.sincos": self._grid,
               "learned.lookup": self._lookup}
        super().__init__("onnxruntime-graphs", f"onnxruntime {ort.__version__}, onnx {onnx.__version__}", dtype, ops,
                         {op: {} for op in ops}, {op: f"ONNX graph ({BUILDERS[op].__name__}), opset {OPSET}"
                                                  for op in ops}, OnnxRuntimeAdapter, tuple(ELEM))

    def supports(self, op: str, params: Mapping[str, Any]) -> bool | str:
        if op not in BUILDERS:
            return f"{op} has no ONNX graph yet"
        return self.refused.get(op) or True

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
