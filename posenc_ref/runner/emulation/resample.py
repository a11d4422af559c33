"""Low-precision emulations of the resampling ops: PyTorch's float32 weight arithmetic (calibration only).

Inputs are rounded to the compute dtype and every interpolation weight is computed in it, as
PyTorch's float32 ``upsample_*`` kernels do.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from posenc_ref import resample
from posenc_ref.runner.emulation._common import Emulation, cast

Inputs = Mapping[str, NDArray[Any]]


def _cubic32(x: NDArray[Any], a: Any) -> NDArray[Any]:
    ax = np.abs(x)
    inner = ((a + 2) * ax - (a + 3)) * ax * ax + 1
    outer = ((a * ax - 5 * a) * ax + 8 * a) * ax - 4 * a
    result: NDArray[Any] = np.where(ax <= 1, inner, np.where(ax < 2, outer, 0)).astype(ax.dtype)
    return result


def _axis32(n: int, new: int, params: Mapping[str, Any], ct: type) -> NDArray[Any]:
    mode = {key: params[key] for key in ("kernel", "cubic_a", "antialias", "coordinates", "size_from", "scale_offset")}
    m, scale64 = resample.output_size_and_scale(in_size=n, new_size=new, **mode)
    scale = ct(scale64)
    a = ct(params["cubic_a"])
    bicubic = params["kernel"] == "bicubic"

    def kernel(x: NDArray[Any]) -> NDArray[Any]:
        triangle: NDArray[Any] = np.maximum(ct(0), ct(1) - np.abs(x))
        return _cubic32(x, a) if bicubic else triangle

    out: NDArray[Any] = np.arange(m).astype(ct)
    matrix: NDArray[Any] = np.zeros((m, n), dtype=ct)
    if params["antialias"] == "on":
        stretch = max(scale, ct(1))
        support = ct(2 if bicubic else 1) * stretch
        centre = scale * (out + ct(0.5))
        lo = np.maximum(np.trunc(centre - support + ct(0.5)), 0)
        hi = np.minimum(np.trunc(centre + support + ct(0.5)), n)
        k: NDArray[Any] = np.arange(n).astype(ct)[None, :]
        inv = ct(1) / stretch if scale >= 1 else ct(1)
        raw = kernel((k - centre[:, None] + ct(0.5)) * inv) * ((k >= lo[:, None]) & (k < hi[:, None]))
        total = raw.sum(axis=1, keepdims=True, dtype=ct)
        result: NDArray[Any] = (raw / np.where(total != 0, total, ct(1))).astype(ct)
        return result
    source = scale * out if params["coordinates"] == "align_corners" else scale * (out + ct(0.5)) - ct(0.5)
    offsets = np.arange(0, 2) if not bicubic else np.arange(-1, 3)
    if not bicubic:
        source = np.maximum(source, ct(0))
    first = np.floor(source)
    weights = kernel((source - first)[:, None] - offsets.astype(ct)[None, :])
    index = np.clip(first.astype(np.int64)[:, None] + offsets[None, :], 0, n - 1)
    np.add.at(matrix, (np.broadcast_to(np.arange(m)[:, None], index.shape), index), weights)
    return matrix


def _resample_weights(params: Mapping[str, Any], inputs: Inputs, ct: type, at: type) -> dict[str, NDArray[Any]]:
    resample.resample_weights(**params)
    return {"weights": _axis32(int(params["in_size"]), int(params["new_size"]), params, ct)}


def _resample_1d(params: Mapping[str, Any], inputs: Inputs, ct: type, at: type) -> dict[str, NDArray[Any]]:
    resample.resample_table_1d(inputs["table"], **params)
    (table,) = cast(inputs, ct, "table")
    prefix = int(params["num_prefix_tokens"])
    matrix = _axis32(table.shape[0] - prefix, int(params["new_length"]), params, ct)
    return {"table": np.concatenate([table[:prefix], matrix @ table[prefix:]])}


def _resample_2d(params: Mapping[str, Any], inputs: Inputs, ct: type, at: type) -> dict[str, NDArray[Any]]:
    resample.resample_grid_2d(inputs["table"], **params)
    (table,) = cast(inputs, ct, "table")
    prefix, height, width = int(params["num_prefix_tokens"]), int(params["grid_height"]), int(params["grid_width"])
    w_h = _axis32(height, int(params["new_height"]), params, ct)
    w_w = _axis32(width, int(params["new_width"]), params, ct)
    grid = table[prefix:].reshape(height, width, -1)
    along_w = np.einsum("hwd,qw->hqd", grid, w_w)  # width first, then height, as a separable kernel does
    resized = np.einsum("ph,hqd->pqd", w_h, along_w)
    return {"table": np.concatenate([table[:prefix], resized.reshape(-1, table.shape[1])])}


EMULATIONS: Final[dict[str, Emulation]] = {
    "resample.weights": _resample_weights,
    "resample.table_1d": _resample_1d,
    "resample.grid_2d": _resample_2d,
}
