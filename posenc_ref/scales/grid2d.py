"""Tolerance scales of the 2-D sin-cos grid (tolerances of :mod:`posenc_ref.records.grid2d`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from posenc_ref import grid2d as g2
from posenc_ref.scales.sinusoidal import frequencies


def _phase(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> NDArray[np.float64]:
    g2.grid_sincos_2d_angles(inputs["ys"], inputs["xs"], **params)  # validates
    w = frequencies(dim=int(params["dim"]) // 2, base=params["base"], ladder=params["ladder"])  # (D/4,)
    y = np.asarray(inputs["ys"], dtype=np.int64).astype(np.float64)[..., None] * w
    x = np.asarray(inputs["xs"], dtype=np.int64).astype(np.float64)[..., None] * w
    first, second = (x, y) if params["axis_order"] == "x_first" else (y, x)
    return g2._assemble(first, second, params["block_layout"], g2._copy, g2._copy)
