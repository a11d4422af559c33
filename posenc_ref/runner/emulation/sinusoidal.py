"""Low-precision emulations of the sinusoidal ops (calibration only; see the package docs).

Which column holds which frequency, and whether it is a sine, a cosine or zero padding, is read
off the float64 reference itself (its phases at a unit position and its values at position 0),
so the layout logic is never restated here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from posenc_ref import sinusoidal
from posenc_ref.runner.emulation._common import Emulation, lowp_frequencies, sin_cos


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
    table: NDArray[Any] = sin_cos(pos[..., None] * w_lowp, is_cos, is_zero).astype(ct)
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


EMULATIONS: Final[dict[str, Emulation]] = {
    "sinusoidal.table": _sinusoidal_table,
    "sinusoidal.fairseq": _fairseq,
}
