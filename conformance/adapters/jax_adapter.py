"""Deprecated spelling: ``conformance/adapters/jax_adapter.py:ADAPTER`` still loads the JAX adapter for
one release; use ``conformance/adapters/jax_port.py:ADAPTER`` (conformance/README.md, "Framework
adapters")."""

from __future__ import annotations

import sys
from pathlib import Path

if str(Path(__file__).resolve().parent) not in sys.path:  # the adapter modules live next to this file
    sys.path.insert(0, str(Path(__file__).resolve().parent))
from posenc_adapter_shared import require  # noqa: E402

require("jax", "jax")  # here too: the modules below may already be imported
from jax_port import ADAPTER, JAX, jax_port  # noqa: E402

__all__ = ["ADAPTER", "JAX", "jax_port"]
