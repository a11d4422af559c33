"""Shared pieces of the oracle: precision, the single rounding, the oracle signature, float rows."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

import mpmath
import numpy as np
from mpmath.libmp import to_float
from numpy.typing import NDArray

DPS: Final = 50
"""Working precision in decimal digits (>= 40 after the phase of a position near 10^6)."""

Oracle = Callable[[Mapping[str, Any], Mapping[str, NDArray[Any]]], dict[str, NDArray[Any]]]
"""An oracle takes the case's full parameters and inputs and returns every output."""


def to_float64(value: Any) -> float:
    """Round an mpmath number once, to nearest even, to float64."""
    return float(to_float(mpmath.mpf(value)._mpf_, rnd="n"))


Inputs = Mapping[str, NDArray[Any]]


def _rows(array: Any) -> list[list[mpmath.mpf]]:
    return [[mpmath.mpf(float(x)) for x in row] for row in np.asarray(array, dtype=np.float64).tolist()]


class OracleTable(dict[str, Oracle]):
    """The op -> oracle table; an op it was not taught is a ``KeyError`` naming it and the ops it holds."""

    def __missing__(self, op_name: str) -> Oracle:
        raise KeyError(f"oracle.ORACLES: no oracle for op {op_name!r}; it holds {', '.join(map(repr, self))}")
