"""Low-precision emulations of the absolute-position ops (calibration only; see the package docs).

Which column holds which frequency, and whether it is a sine, a cosine or zero padding, is read
off the float64 reference itself (its phases at a unit position and its values at position 0),
so the layout logic is never restated here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from posenc_ref import grid2d, learned, sinusoidal
from posenc_ref.runner.emulation._common import Emulation, lowp_frequencies


def _sin_cos(angles: NDArray[Any], is_cos: NDArray[np.bool_], is_zero: NDArray[np.bool_]) -> NDArray[Any]:
    values: NDArray[Any] = np.where(is_cos, np.cos(angles), np.sin(angles))
    result: NDArray[Any] = np.where(is_zero, values.dtype.type(0), values)
    return result


def _sinusoid_columns(params: Mapping[str, Any]) -> tuple[NDArray[np.float64], NDArray[np.bool_], NDArray[np.bool_]]:
    """Per column: the float64 frequency, whether it is a cosine, whether it is zero padding."""
    kwargs = {k: v for k, v in params.items() if k not in ("scale", "position_offset")}
    w = sinusoidal.sinusoidal_angles([1], **kwargs)[0]
    at0 = sinusoidal.sinusoidal_table([0], **kwargs)[0]
    return w, at0 == 1.0, (w == 0.0) & (at0 == 0.0)


def _sinusoid(positions: NDArray[Any], params: Mapping[str, Any], ct: type, at: type) -> NDArray[Any]:
    w, is_cos, is_zero = _sinusoid_columns(params)
    w_lowp: NDArray[Any] = lowp_frequencies(w, float(params.get("base", 10000.0)), ct).astype(at)
    pos: NDArray[Any] = (np.asarray(positions).astype(np.int64) + int(params.get("position_offset", 0))).astype(at)
    table: NDArray[Any] = _sin_cos(pos[..., None] * w_lowp, is_cos, is_zero).astype(ct)
    scaled: NDArray[Any] = table * ct(params.get("scale", 1.0))
    return scaled


def _sinusoidal_table(
    params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]], ct: type, at: type
) -> dict[str, NDArray[Any]]:
    sinusoidal.sinusoidal_table(inputs["positions"], **params)  # the reference's validation and errors
    return {"table": _sinusoid(inputs["positions"], params, ct, at)}


def _fairseq(
    params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]], ct: type, at: type
) -> dict[str, NDArray[Any]]:
    rows, _ = sinusoidal.fairseq_sinusoidal(inputs["tokens"], **params)
    table_params = {"dim": params["dim"], "base": params.get("base", 10000.0), "ladder": "t2t",
                    "layout": "concat_sin_cos", "odd_width": "zero_pad_last"}
    table = _sinusoid(rows, table_params, ct, at)
    table[rows == params["padding_idx"]] = 0
    return {"positions": rows, "embedding": table}


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
    return {"table": _sin_cos(angles, is_cos, np.zeros_like(is_cos)).astype(ct)}


def _learned(
    params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]], ct: type, at: type
) -> dict[str, NDArray[Any]]:
    table: NDArray[Any] = np.asarray(inputs["table"]).astype(ct)
    return {"rows": learned.learned_lookup(table, inputs["positions"], **params).astype(ct)}


EMULATIONS: Final[dict[str, Emulation]] = {
    "sinusoidal.table": _sinusoidal_table,
    "sinusoidal.fairseq": _fairseq,
    "grid2d.sincos": _grid2d,
    "learned.lookup": _learned,
}

