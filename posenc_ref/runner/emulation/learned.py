"""Low-precision emulation of the learned-table lookup (calibration only; see the package docs).

The table is rounded to the compute dtype; which row each position reads comes from the reference.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from posenc_ref import learned
from posenc_ref.runner.emulation._common import Emulation


def _learned(
    params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]], ct: type, at: type
) -> dict[str, NDArray[Any]]:
    table: NDArray[Any] = np.asarray(inputs["table"]).astype(ct)
    return {"rows": learned.learned_lookup(table, inputs["positions"], **params).astype(ct)}


EMULATIONS: Final[dict[str, Emulation]] = {
    "learned.lookup": _learned,
}
