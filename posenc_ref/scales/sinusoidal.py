"""Tolerance scales of the 1-D sinusoidal ops (tolerances of :mod:`posenc_ref.records.sinusoidal`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from posenc_ref import sinusoidal as sn
from posenc_ref.scales import _exact


def frequencies(*, dim: int, base: float, ladder: Any = "paper", odd_width: Any = "error") -> NDArray[np.float64]:
    """:func:`posenc_ref.sinusoidal.sinusoidal_frequencies`, each ``base ** -e`` correctly rounded."""
    count = sn.sinusoidal_frequencies(dim=dim, base=base, ladder=ladder, odd_width=odd_width).size  # (validates)
    width = dim - 1 if (dim % 2 and odd_width == "zero_pad_last") else dim
    k = np.arange(count, dtype=np.float64)
    exponent = (2.0 * k) / width if ladder == "paper" else k / max(count - 1, 1)
    return _exact.power(float(base), -exponent)


def _angles(positions: Any, *, dim: int, base: float = 10000.0, ladder: Any = "paper",
            layout: Any = "interleaved", odd_width: Any = "error", position_offset: int = 0) -> NDArray[np.float64]:
    """:func:`posenc_ref.sinusoidal.sinusoidal_angles` with the frequencies of :func:`frequencies`."""
    sn.sinusoidal_angles(positions, dim=dim, base=base, ladder=ladder, layout=layout, odd_width=odd_width,
                         position_offset=position_offset)  # validates
    w = frequencies(dim=dim, base=base, ladder=ladder, odd_width=odd_width)
    theta = (np.asarray(positions, dtype=np.int64) + position_offset).astype(np.float64)[..., None] * w
    sin_cols, cos_cols, n_cos = sn._column_slices(dim, w.size, layout, odd_width)
    phase = np.zeros(theta.shape[:-1] + (int(dim),), dtype=np.float64)
    phase[..., sin_cols] = theta
    phase[..., cos_cols] = theta[..., :n_cos]
    return phase


def _table_phase(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> NDArray[np.float64]:
    kwargs = {k: v for k, v in params.items() if k != "scale"}
    return _angles(inputs["positions"], **kwargs)


def _fairseq_phase(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> NDArray[np.float64]:
    rows = sn.fairseq_positions(inputs["tokens"], padding_idx=params["padding_idx"],
                                past_length=params.get("past_length", 0),
                                cache_rule=params.get("cache_rule", "fairseq"))
    phase = _angles(rows, dim=params["dim"], base=params.get("base", 10000.0), ladder="t2t",
                                 layout="concat_sin_cos", odd_width="zero_pad_last")
    phase[rows == params["padding_idx"]] = 0.0  # padding rows are exact zeros
    return phase
