"""Twin of the learned-table lookup (:mod:`posenc_ref.learned`): rows copied by Python indexing."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from posenc_ref.oracle._common import Oracle


def learned_lookup(params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> dict[str, NDArray[Any]]:
    table = np.asarray(inputs["table"], dtype=np.float64)
    positions = np.asarray(inputs["positions"]).astype(np.int64)
    last = table.shape[0] - 1
    rows = []
    for p in positions.reshape(-1).tolist():
        index = p + int(params["offset"])
        if params["out_of_range"] == "clamp":
            index = min(index, last)
        rows.append(table[index].tolist())
    return {"rows": np.array(rows, dtype=np.float64).reshape(positions.shape + (table.shape[1],))}


ORACLES: Final[dict[str, Oracle]] = {
    "learned.lookup": learned_lookup,
}
