"""Tolerance scales of table resampling (tolerances of :mod:`posenc_ref.records.resample`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from posenc_ref import resample as rs
from posenc_ref.scales import Inputs, _exact

_MODE_NAMES = ("kernel", "cubic_a", "antialias", "coordinates", "size_from", "scale_offset")
"""The resampling mode parameters (``MODE_PARAMS`` of :mod:`posenc_ref.records.resample`)."""


def _mode(params: Mapping[str, Any]) -> dict[str, Any]:
    return {name: params[name] for name in _MODE_NAMES}


def _axis_scale(n: int, new: int, params: Mapping[str, Any]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``(|W|, E)`` for one axis: |weights| and each weight's own error scale.

    A weight comes from a source coordinate of magnitude up to ``n`` computed with a few
    roundings, through a kernel of slope below 1.5, then (antialias) a normalisation: its error
    is below ``16 (n + 4)`` half-epsilons per tap landing on it.
    """
    mode = _mode(params)
    weights = rs.resample_weights(in_size=n, new_size=new, **mode)
    counts = rs.tap_counts(in_size=n, new_size=new, **mode)
    return np.abs(weights), 16.0 * (n + 4) * counts


def _weights_scale(params: Mapping[str, Any], inputs: Inputs) -> NDArray[np.float64]:
    return _axis_scale(int(params["in_size"]), int(params["new_size"]), params)[1]


def _table_1d_scale(params: Mapping[str, Any], inputs: Inputs) -> NDArray[np.float64]:
    prefix = int(params["num_prefix_tokens"])
    table = np.abs(np.asarray(inputs["table"], dtype=np.float64))
    absw, err = _axis_scale(table.shape[0] - prefix, int(params["new_length"]), params)
    taps = float(absw.shape[1] if params["antialias"] == "on" else 4)
    body = _exact.einsum("on,nd->od", (taps + 3) * absw + err, table[prefix:])
    return np.concatenate([np.zeros((prefix, table.shape[1])), body])


def _grid_scale(params: Mapping[str, Any], inputs: Inputs) -> NDArray[np.float64]:
    prefix, height, width = int(params["num_prefix_tokens"]), int(params["grid_height"]), int(params["grid_width"])
    table = np.abs(np.asarray(inputs["table"], dtype=np.float64))
    grid = table[prefix:].reshape(height, width, -1)
    wh, eh = _axis_scale(height, int(params["new_height"]), params)
    ww, ew = _axis_scale(width, int(params["new_width"]), params)
    taps = float(wh.shape[1] + ww.shape[1] + 3 if params["antialias"] == "on" else 11)
    body = (taps * _exact.einsum("ph,hwd,qw->pqd", wh, grid, ww) + _exact.einsum("ph,hwd,qw->pqd", eh, grid, ww)
            + _exact.einsum("ph,hwd,qw->pqd", wh, grid, ew))
    return np.concatenate([np.zeros((prefix, table.shape[1])), body.reshape(-1, table.shape[1])])


def _table_1d_input_scale(params: Mapping[str, Any], inputs: Inputs) -> NDArray[np.float64]:
    # one value-input factor per term (the weights are computed); prefix rows are copies
    prefix = int(params["num_prefix_tokens"])
    table = np.abs(np.asarray(inputs["table"], dtype=np.float64))
    absw, _ = _axis_scale(table.shape[0] - prefix, int(params["new_length"]), params)
    return np.concatenate([table[:prefix], _exact.einsum("on,nd->od", absw, table[prefix:])])


def _grid_input_scale(params: Mapping[str, Any], inputs: Inputs) -> NDArray[np.float64]:
    prefix, height, width = int(params["num_prefix_tokens"]), int(params["grid_height"]), int(params["grid_width"])
    table = np.abs(np.asarray(inputs["table"], dtype=np.float64))
    wh, _ = _axis_scale(height, int(params["new_height"]), params)
    ww, _ = _axis_scale(width, int(params["new_width"]), params)
    body = _exact.einsum("ph,hwd,qw->pqd", wh, table[prefix:].reshape(height, width, -1), ww)
    return np.concatenate([table[:prefix], body.reshape(-1, table.shape[1])])
