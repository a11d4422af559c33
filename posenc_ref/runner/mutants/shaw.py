"""Mutants of the Shaw relative-position ops (see :mod:`posenc_ref.runner.mutants`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from posenc_ref.runner.mutants._common import Mutant


def _shaw_unclipped(op: str, params: Mapping[str, Any], inputs: Mapping[str, NDArray[Any]]) -> Any:
    """Rows ``d + K`` without the clip; indices outside the table wrap as NumPy/PyTorch negative indices do."""
    k = int(params["max_relative_position"])
    distance = np.asarray(inputs["k_positions"])[None, :] - np.asarray(inputs["q_positions"])[:, None]
    if params["sign"] == "query_minus_key":
        distance = -distance
    index = (distance + k) % (2 * k + 1)
    if op == "shaw.index":
        return index
    if op == "shaw.logits":
        q, keys, table = (np.asarray(inputs[n], dtype=np.float64) for n in ("q", "k", "rel_keys"))
        return q @ keys.T + np.take_along_axis(q @ table.T, index, axis=1)
    alpha, values, table = (np.asarray(inputs[n], dtype=np.float64) for n in ("weights", "v", "rel_values"))
    return alpha @ values + np.einsum("ij,ijd->id", alpha, table[index])


MUTANTS: Final[tuple[Mutant, ...]] = (
    Mutant("shaw-unclipped", "Shaw rows d + K without clipping to +/-K (out-of-table rows wrap around)",
           "huggingface/transformers#9164 (relative_key never clips)",
           ("shaw.index", "shaw.logits", "shaw.output"), _shaw_unclipped),
)
