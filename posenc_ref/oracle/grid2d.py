"""mpmath twin of the 2-D sin-cos grid (:mod:`posenc_ref.grid2d`), each column defined from the formula."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import mpmath
import numpy as np
from numpy.typing import NDArray

from posenc_ref.oracle._common import Oracle, to_float64
from posenc_ref.oracle.sinusoidal import _frequency


def grid2d(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> dict[str, NDArray[Any]]:
    dim = int(params["dim"])
    quarter = dim // 4
    base = float(params["base"])
    freqs = [_frequency(k, dim // 2, base, params["ladder"]) for k in range(quarter)]
    ys = np.asarray(inputs["ys"]).reshape(-1).tolist()
    xs = np.asarray(inputs["xs"]).reshape(-1).tolist()
    out = np.empty((len(ys), dim), dtype=np.float64)
    for row, (y, x) in enumerate(zip(ys, xs)):
        first, second = (x, y) if params["axis_order"] == "x_first" else (y, x)
        for j in range(dim):
            if params["block_layout"] == "sin_cos":  # [sin a | cos a | sin b | cos b]
                coord = first if j < 2 * quarter else second
                kind, k = ("sin" if (j % (2 * quarter)) < quarter else "cos"), j % quarter
            elif params["block_layout"] == "sin_sin_cos_cos":  # [sin a | sin b | cos a | cos b]
                coord = first if (j // quarter) % 2 == 0 else second
                kind, k = ("sin" if j < 2 * quarter else "cos"), j % quarter
            else:  # [s c s c ... (a) | s c s c ... (b)]
                coord = first if j < 2 * quarter else second
                kind, k = ("sin" if j % 2 == 0 else "cos"), (j % (2 * quarter)) // 2
            angle = mpmath.mpf(coord) * freqs[k]
            out[row, j] = to_float64(mpmath.sin(angle) if kind == "sin" else mpmath.cos(angle))
    return {"table": out.reshape(np.asarray(inputs["ys"]).shape + (dim,))}


ORACLES: Final[dict[str, Oracle]] = {
    "grid2d.sincos": grid2d,
}
