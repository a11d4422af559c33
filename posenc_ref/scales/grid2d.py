"""Tolerance scales of the 2-D sin-cos grid (tolerances of :mod:`posenc_ref.records.grid2d`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from posenc_ref import grid2d as g2


def _phase(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> NDArray[np.float64]:
    return g2.grid_sincos_2d_angles(inputs["ys"], inputs["xs"], **params)
