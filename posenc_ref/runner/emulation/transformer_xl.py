"""Low-precision emulations of the Transformer-XL ops (calibration only).

Inputs are rounded to the compute dtype; the projected sinusoid and both bias terms are computed
in it, the angles in the angle dtype, as a float32 PyTorch implementation does. Shifts come from
the reference (copies).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from posenc_ref import transformer_xl
from posenc_ref.runner.emulation._common import Emulation, cast, lowp_frequencies
from posenc_ref.sinusoidal import sinusoidal_frequencies

Inputs = Mapping[str, NDArray[Any]]


def _xl_score(params: Mapping[str, Any], inputs: Inputs, ct: type, at: type) -> dict[str, NDArray[Any]]:
    names = ("q", "k", "u", "v", "w_r", "q_positions", "k_positions")
    transformer_xl.xl_score(*(inputs[n] for n in names), **params)
    q, k, u, v, w_r = cast(inputs, ct, *names[:5])
    base = float(params["base"])
    distance = np.asarray(inputs["q_positions"])[:, None] - np.asarray(inputs["k_positions"])[None, :]
    if int(params["clamp_len"]) > 0:
        distance = np.clip(distance, -params["clamp_len"], params["clamp_len"])
    distinct, inverse = np.unique(distance, return_inverse=True)
    w: NDArray[Any] = lowp_frequencies(sinusoidal_frequencies(dim=w_r.shape[0], base=base), base, ct).astype(at)
    theta = distinct.astype(at)[:, None] * w
    rows: NDArray[Any] = np.concatenate([np.sin(theta), np.cos(theta)], axis=-1).astype(ct)
    position = np.take_along_axis((q + v) @ (rows @ w_r).T, inverse.reshape(distance.shape), axis=1)
    return {"score": (q + u) @ k.T + position}


def _rel_shift(params: Mapping[str, Any], inputs: Inputs, ct: type, at: type) -> dict[str, NDArray[Any]]:
    shifted, valid = transformer_xl.rel_shift(inputs["x"], **params)
    return {"shifted": shifted.astype(ct), "valid": valid}


EMULATIONS: Final[dict[str, Emulation]] = {
    "transformer_xl.score": _xl_score,
    "transformer_xl.rel_shift": _rel_shift,
}
