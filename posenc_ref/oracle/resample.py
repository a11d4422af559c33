"""mpmath twins of table resampling (:mod:`posenc_ref.resample`).

Resampling weights are computed per output sample from the kernel formula in exact arithmetic,
never rounded before the final sum (``mpmath.fsum`` at the oracle's precision), then rounded once.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Final

import mpmath
import numpy as np
from numpy.typing import NDArray

from posenc_ref.oracle._common import Inputs, Oracle, _rows, to_float64


def _kernel(x: mpmath.mpf, kernel: str, a: mpmath.mpf) -> mpmath.mpf:
    ax = abs(x)
    if kernel == "bilinear":
        return max(mpmath.mpf(0), 1 - ax)
    if ax <= 1:
        return (a + 2) * ax**3 - (a + 3) * ax**2 + 1
    if ax < 2:
        return a * ax**3 - 5 * a * ax**2 + 8 * a * ax - 4 * a
    return mpmath.mpf(0)


def _weights(n: int, new: int, params: Mapping[str, Any]) -> list[dict[int, mpmath.mpf]]:
    """Per output sample, ``{input index: exact weight}``."""
    kernel, a = params["kernel"], mpmath.mpf(float(params["cubic_a"]))
    if params["size_from"] == "size":
        m, scale = new, mpmath.mpf(n) / new
    else:
        # the float64 factor the caller passes: DINO computes w0 + 0.1 and (w0 + 0.1) / sqrt(N) in Python floats
        factor = (new + float(params["scale_offset"])) / n
        m = math.floor(float(n) * factor)  # the size, as defined in float64
        scale = 1 / mpmath.mpf(factor)
    if params["coordinates"] == "align_corners":
        scale = mpmath.mpf(n - 1) / (m - 1) if m > 1 else mpmath.mpf(0)
    rows: list[dict[int, mpmath.mpf]] = []
    for o in range(m):
        row: dict[int, mpmath.mpf] = {}
        if params["antialias"] == "on":
            stretch = max(scale, mpmath.mpf(1))
            support = (2 if kernel == "bicubic" else 1) * stretch
            centre = scale * (o + mpmath.mpf(0.5))
            lo, hi = max(int(centre - support + 0.5), 0), min(int(centre + support + 0.5), n)
            raw = {k: _kernel((k + mpmath.mpf(0.5) - centre) / stretch, kernel, a) for k in range(lo, hi)}
            total = mpmath.fsum(raw.values())
            row = {k: w / total for k, w in raw.items()}
        else:
            half = mpmath.mpf(0.5)
            x = scale * o if params["coordinates"] == "align_corners" else scale * (o + half) - half
            if kernel == "bilinear" and x < 0:
                x = mpmath.mpf(0)
            first = int(mpmath.floor(x))
            for tap in (range(first, first + 2) if kernel == "bilinear" else range(first - 1, first + 3)):
                index = min(max(tap, 0), n - 1)
                row[index] = row.get(index, mpmath.mpf(0)) + _kernel(x - tap, kernel, a)
        rows.append(row)
    return rows


def resample_weights(params: Mapping[str, Any], inputs: Inputs) -> dict[str, NDArray[Any]]:
    n = int(params["in_size"])
    rows = _weights(n, int(params["new_size"]), params)
    return {"weights": np.array([[to_float64(row.get(k, 0)) for k in range(n)] for row in rows])}


def resample_table_1d(params: Mapping[str, Any], inputs: Inputs) -> dict[str, NDArray[Any]]:
    table = np.asarray(inputs["table"], dtype=np.float64)
    prefix = int(params["num_prefix_tokens"])
    body = _rows(table[prefix:])
    rows = _weights(len(body), int(params["new_length"]), params)
    out = [[to_float64(mpmath.fsum(w * body[k][d] for k, w in row.items())) for d in range(table.shape[1])]
           for row in rows]
    return {"table": np.concatenate([table[:prefix], np.array(out).reshape(len(rows), table.shape[1])])}


def resample_grid_2d(params: Mapping[str, Any], inputs: Inputs) -> dict[str, NDArray[Any]]:
    table = np.asarray(inputs["table"], dtype=np.float64)
    prefix, height, width = int(params["num_prefix_tokens"]), int(params["grid_height"]), int(params["grid_width"])
    body = _rows(table[prefix:])
    along_h = _weights(height, int(params["new_height"]), params)
    along_w = _weights(width, int(params["new_width"]), params)
    out = []
    for row_h in along_h:
        for row_w in along_w:
            out.append([to_float64(mpmath.fsum(wh * ww * body[h * width + w][d]
                                               for h, wh in row_h.items() for w, ww in row_w.items()))
                        for d in range(table.shape[1])])
    return {"table": np.concatenate([table[:prefix], np.array(out).reshape(len(out), table.shape[1])])}


ORACLES: Final[dict[str, Oracle]] = {
    "resample.weights": resample_weights,
    "resample.table_1d": resample_table_1d,
    "resample.grid_2d": resample_grid_2d,
}
