"""Deprecated spelling: ``conformance/adapters/onnxruntime_adapter.py:ADAPTER`` still loads the ONNX
Runtime adapter for one release; use ``conformance/adapters/onnxruntime_graphs.py:ADAPTER``
(conformance/README.md, "Framework adapters")."""

from __future__ import annotations

import sys
from pathlib import Path

if str(Path(__file__).resolve().parent) not in sys.path:  # the adapter modules live next to this file
    sys.path.insert(0, str(Path(__file__).resolve().parent))
from posenc_adapter_shared import require  # noqa: E402

require("onnx", "onnx")  # here too: the modules below may already be imported
require("onnxruntime", "onnx")
from onnxruntime_graphs import ADAPTER, ONNXRUNTIME, OnnxRuntimeAdapter  # noqa: E402

__all__ = ["ADAPTER", "ONNXRUNTIME", "OnnxRuntimeAdapter"]
