"""Values and labels shared by the fits of the diagnosis (:mod:`posenc_ref.runner.diagnosis_fit`)."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any, Final

from numpy.typing import NDArray

from posenc_ref.errors import SpecError

SIGNIFICANT: Final = (3, 4, 6)
"""The significant digits each fitted value is also tried at (shortest first)."""

Fit = tuple[str, dict[str, Any], Mapping[str, NDArray[Any]]]
"""``(label, params, inputs)`` of one fitted hypothesis."""

_FITTED: Final = " (fitted)"
_NUMBER: Final = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?")
_SKIPPED = (SpecError, ValueError, TypeError, KeyError, IndexError, FloatingPointError, OverflowError,
            ZeroDivisionError)


def fit_key(label: str) -> str | None:
    """The label of a fitted hypothesis with its values blanked (None for other labels): two
    roundings of one fit share a key, and the diagnosis reports the shortest that matches."""
    return _NUMBER.sub("#", label) if label.endswith(_FITTED) else None


def _values(value: float, current: Any = None) -> list[float]:
    """``value`` rounded to each of :data:`SIGNIFICANT` digits, then as fitted: positive, finite,
    each once, ``current`` (the case's own value) left out. A rounding within 1e-9 of the fitted
    value ends the list: the fit is that short decimal."""
    found: list[float] = []
    for v in (*(float(f"{value:.{n}g}") for n in SIGNIFICANT), float(value)):
        if math.isfinite(v) and v > 0 and v not in found and v != current:
            found.append(v)
        if abs(v - value) <= 1e-9 * abs(value):
            break
    return found


def _show(value: float) -> str:
    return f"{value:.6g}"
