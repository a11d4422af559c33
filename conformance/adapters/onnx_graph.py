"""What the ONNX Runtime graphs share: a tiny ``onnx.helper`` graph builder (:class:`Graph`), the
element types, and :func:`_execute`, which checks a model and runs it on onnxruntime's CPU
execution provider. The graphs are in :mod:`onnx_primitive` (primitive operators) and
:mod:`onnx_operators` (the real ``RotaryEmbedding``, ``Attention`` and ``Resize`` operators); the
adapter is :mod:`onnxruntime_graphs`.

Needs ``pip install 'posenc-ref[onnx]'``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np

if str(Path(__file__).resolve().parent) not in sys.path:  # the shared helpers live next to this file
    sys.path.insert(0, str(Path(__file__).resolve().parent))
from posenc_adapter_shared import (  # noqa: E402
    require,
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


ROPE_OPSET = ATTENTION_OPSET = 23


def _graph(dtype: str) -> Graph:
    g = Graph("float64" if dtype == "float64" else "float32")
    g.x_dtype = dtype  # what the real RotaryEmbedding / Attention operators take and return
    return g
