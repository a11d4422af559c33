"""Low-precision emulation of the 2-D sin-cos grid (calibration only; see the package docs).

Which column follows which axis, and whether it is a sine or a cosine, is read off the float64
reference itself (its phases at unit steps along each axis and its values at the origin).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from posenc_ref import grid2d
from posenc_ref.runner.emulation._common import Emulation, lowp_frequencies, sin_cos


def _grid2d(
    params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]], ct: type, at: type
) -> dict[str, NDArray[Any]]:
    grid2d.grid_sincos_2d(inputs["ys"], inputs["xs"], **params)  # validation and errors
    along_y = grid2d.grid_sincos_2d_angles([1], [0], **params)[0]
    along_x = grid2d.grid_sincos_2d_angles([0], [1], **params)[0]
    is_cos = grid2d.grid_sincos_2d([0], [0], **params)[0] == 1.0
    base = float(params.get("base", 10000.0))
    wy = lowp_frequencies(along_y, base, ct).astype(at) * (along_y > 0)
    wx = lowp_frequencies(along_x, base, ct).astype(at) * (along_x > 0)
    ys: NDArray[Any] = np.asarray(inputs["ys"]).astype(at)[..., None]
    xs: NDArray[Any] = np.asarray(inputs["xs"]).astype(at)[..., None]
    angles = ys * wy.astype(at) + xs * wx.astype(at)  # each column has one nonzero axis
    return {"table": sin_cos(angles, is_cos, np.zeros_like(is_cos)).astype(ct)}


EMULATIONS: Final[dict[str, Emulation]] = {
    "grid2d.sincos": _grid2d,
}
