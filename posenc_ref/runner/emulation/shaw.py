"""Low-precision emulations of the Shaw relative-position ops (calibration only).

Inputs are rounded to the compute dtype and ``q @ k.T`` and the ``(Tq, 2K+1)`` relative product
are computed in it, as a float32 PyTorch implementation does. Table rows come from the reference
(integers).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from posenc_ref import shaw
from posenc_ref.runner.emulation._common import Emulation, cast

Inputs = Mapping[str, NDArray[Any]]


def _index(params: Mapping[str, Any], inputs: Inputs) -> NDArray[np.int64]:
    return shaw.shaw_relative_index(inputs["q_positions"], inputs["k_positions"], **params)


def _shaw_index(params: Mapping[str, Any], inputs: Inputs, ct: type, at: type) -> dict[str, NDArray[Any]]:
    return {"index": _index(params, inputs)}


def _shaw_logits(params: Mapping[str, Any], inputs: Inputs, ct: type, at: type) -> dict[str, NDArray[Any]]:
    shaw.shaw_logits(*(inputs[n] for n in ("q", "k", "rel_keys", "q_positions", "k_positions")), **params)
    q, k, table = cast(inputs, ct, "q", "k", "rel_keys")
    return {"logits": q @ k.T + np.take_along_axis(q @ table.T, _index(params, inputs), axis=1)}


def _shaw_output(params: Mapping[str, Any], inputs: Inputs, ct: type, at: type) -> dict[str, NDArray[Any]]:
    shaw.shaw_output(*(inputs[n] for n in ("weights", "v", "rel_values", "q_positions", "k_positions")), **params)
    alpha, v, table = cast(inputs, ct, "weights", "v", "rel_values")
    index = _index(params, inputs)
    per_row: NDArray[Any] = np.zeros((alpha.shape[0], table.shape[0]), dtype=ct)
    np.add.at(per_row, (np.broadcast_to(np.arange(alpha.shape[0])[:, None], index.shape), index), alpha)
    return {"output": alpha @ v + per_row @ table}


EMULATIONS: Final[dict[str, Emulation]] = {
    "shaw.index": _shaw_index,
    "shaw.logits": _shaw_logits,
    "shaw.output": _shaw_output,
}
