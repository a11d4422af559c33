"""Tolerance scales of the 1-D sinusoidal ops (tolerances of :mod:`posenc_ref.records.sinusoidal`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from posenc_ref import sinusoidal as sn


def _table_phase(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> NDArray[np.float64]:
    kwargs = {k: v for k, v in params.items() if k != "scale"}
    return sn.sinusoidal_angles(inputs["positions"], **kwargs)


def _fairseq_phase(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> NDArray[np.float64]:
    rows = sn.fairseq_positions(inputs["tokens"], padding_idx=params["padding_idx"],
                                past_length=params.get("past_length", 0))
    phase = sn.sinusoidal_angles(rows, dim=params["dim"], base=params.get("base", 10000.0), ladder="t2t",
                                 layout="concat_sin_cos", odd_width="zero_pad_last")
    phase[rows == params["padding_idx"]] = 0.0  # padding rows are exact zeros
    return phase
