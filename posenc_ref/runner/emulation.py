"""The reference computed the way typical low-precision frameworks compute it (calibration only).

These emulations are not the spec; they exist to calibrate tolerances. Each rounds where a
PyTorch/JAX implementation rounds:

* frequencies as transformers builds ``inv_freq``: the exponent ``e_k`` rounded to the compute
  dtype, then ``1 / base ** e_k`` in the compute dtype;
* angles ``float(p) * w`` and ``sin``/``cos`` in the *angle dtype* (float32 for a correct
  implementation, float16 for the known-bad "float16 angles" one);
* the result rounded once to the output dtype (float32, float16 or bfloat16).

Which column holds which frequency, and whether it is a sine, a cosine or zero padding, is
read off the float64 reference itself (its phases at a unit position and its values at
position 0), so the layout logic is never restated here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from posenc_ref import grid2d, learned, sinusoidal
from posenc_ref.tolerance import Dtype

Emulation = Callable[[Mapping[str, Any], Mapping[str, NDArray[Any]], type, type], dict[str, NDArray[Any]]]


def round_bfloat16(values: NDArray[Any]) -> NDArray[np.float32]:
    """Round float32 values to the nearest bfloat16 (ties to even), returned as float32."""
    bits = np.asarray(values, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return rounded.astype(np.uint32).view(np.float32)


def to_dtype(values: NDArray[Any], dtype: Dtype) -> NDArray[Any]:
    """Round to ``dtype`` (bfloat16 is carried in float32)."""
    if dtype == "bfloat16":
        return round_bfloat16(np.asarray(values, dtype=np.float32))
    return np.asarray(values).astype(dtype)


def _lowp_frequencies(w64: NDArray[np.float64], base: float, ct: type) -> NDArray[Any]:
    """``1 / base ** e`` in dtype ``ct`` with ``e = log(1/w) / log(base)`` rounded to ``ct``."""
    exponent = (np.log(1.0 / np.where(w64 > 0, w64, 1.0)) / np.log(base)).astype(ct)
    frequencies: NDArray[Any] = (ct(1.0) / np.power(ct(base), exponent)).astype(ct)
    return frequencies


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
    w_lowp: NDArray[Any] = _lowp_frequencies(w, float(params.get("base", 10000.0)), ct).astype(at)
    pos: NDArray[Any] = (np.asarray(positions).astype(np.int64) + int(params.get("position_offset", 0))).astype(at)
    table: NDArray[Any] = _sin_cos(pos[..., None] * w_lowp, is_cos, is_zero).astype(ct)
    scaled: NDArray[Any] = table * ct(params.get("scale", 1.0))
    return scaled


def _sinusoidal_table(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]], ct: type, at: type) -> dict[str, NDArray[Any]]:
    sinusoidal.sinusoidal_table(inputs["positions"], **params)  # the reference's validation and errors
    return {"table": _sinusoid(inputs["positions"], params, ct, at)}


def _fairseq(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]], ct: type, at: type) -> dict[str, NDArray[Any]]:
    rows, _ = sinusoidal.fairseq_sinusoidal(inputs["tokens"], **params)
    table_params = {"dim": params["dim"], "base": params.get("base", 10000.0), "ladder": "t2t",
                    "layout": "concat_sin_cos", "odd_width": "zero_pad_last"}
    table = _sinusoid(rows, table_params, ct, at)
    table[rows == params["padding_idx"]] = 0
    return {"positions": rows, "embedding": table}


def _grid2d(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]], ct: type, at: type) -> dict[str, NDArray[Any]]:
    grid2d.grid_sincos_2d(inputs["ys"], inputs["xs"], **params)  # validation and errors
    along_y = grid2d.grid_sincos_2d_angles([1], [0], **params)[0]
    along_x = grid2d.grid_sincos_2d_angles([0], [1], **params)[0]
    is_cos = grid2d.grid_sincos_2d([0], [0], **params)[0] == 1.0
    base = float(params.get("base", 10000.0))
    wy = _lowp_frequencies(along_y, base, ct).astype(at) * (along_y > 0)
    wx = _lowp_frequencies(along_x, base, ct).astype(at) * (along_x > 0)
    ys: NDArray[Any] = np.asarray(inputs["ys"]).astype(at)[..., None]
    xs: NDArray[Any] = np.asarray(inputs["xs"]).astype(at)[..., None]
    angles = ys * wy.astype(at) + xs * wx.astype(at)  # each column has one nonzero axis
    return {"table": _sin_cos(angles, is_cos, np.zeros_like(is_cos)).astype(ct)}


def _learned(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]], ct: type, at: type) -> dict[str, NDArray[Any]]:
    table: NDArray[Any] = np.asarray(inputs["table"]).astype(ct)
    return {"rows": learned.learned_lookup(table, inputs["positions"], **params).astype(ct)}


EMULATIONS: Final[dict[str, Emulation]] = {
    "sinusoidal.table": _sinusoidal_table,
    "sinusoidal.fairseq": _fairseq,
    "grid2d.sincos": _grid2d,
    "learned.lookup": _learned,
}


def emulate(op: str, params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]], *,
            output_dtype: Dtype, angle_dtype: Dtype) -> dict[str, NDArray[Any]]:
    """Run ``op`` computing in float32 (angles in ``angle_dtype``), rounded to ``output_dtype``."""
    ct = np.float32
    at = np.float16 if angle_dtype == "float16" else np.float32
    with np.errstate(over="ignore", invalid="ignore"):  # float16 angles overflow past 65504: by design
        outputs = EMULATIONS[op](params, inputs, ct, at)
    return {k: v if v.dtype.kind in "iu" else to_dtype(v, output_dtype) for k, v in outputs.items()}
