"""Errors raised by the posenc-ref specification and the validation helpers behind them.

Every violated precondition raises :class:`SpecError` (a :class:`ValueError`) before any work is
done. The message names the function, the argument, the value and what was expected::

    sinusoidal_table: dim must be even under odd_width='error', got dim=7

Each error carries a *category*, the part of the error that conformance checks compare. An
implementation under test maps its own exceptions to the same categories; a message or an
exception class is never compared.

Categories
----------
``invalid_argument``
    A parameter or input is outside the domain the scheme defines (odd width under the
    ``"error"`` policy, ``base <= 0``, an unknown layout, a non-integer position).
``out_of_range``
    A well-formed index that falls outside a table (a position beyond a learned table).
``invalid_shape``
    An input of the wrong rank or an empty input where the scheme needs data.

Wrong *kinds* of object (a string where an array is expected) raise :class:`TypeError`, as the
Python data model does.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final, Literal

import numpy as np
from numpy.typing import NDArray

ErrorCategory = Literal["invalid_argument", "out_of_range", "invalid_shape"]
ERROR_CATEGORIES: Final[tuple[ErrorCategory, ...]] = (
    "invalid_argument",
    "out_of_range",
    "invalid_shape",
)


class SpecError(ValueError):
    """A violated precondition of a reference function.

    Parameters
    ----------
    message
        Names the function, the argument, the value and what was expected.
    category
        One of :data:`ERROR_CATEGORIES`.

    Examples
    --------
    >>> err = SpecError("f: dim must be even, got dim=7")
    >>> err.category
    'invalid_argument'
    >>> isinstance(err, ValueError)
    True
    """

    def __init__(self, message: str, *, category: ErrorCategory = "invalid_argument") -> None:
        if category not in ERROR_CATEGORIES:
            raise TypeError(f"SpecError: unknown category {category!r}")
        super().__init__(message)
        self.category: ErrorCategory = category


# --- validation helpers -------------------------------------------------------------------
# Shared by every scheme so that messages read the same everywhere. Each helper returns the
# validated value (converted where stated) so call sites stay one line each.


def check_choice(func: str, name: str, value: Any, choices: Iterable[str]) -> str:
    """Return ``value`` if it is one of ``choices``; otherwise raise listing the valid ones."""
    options = tuple(choices)
    if not isinstance(value, str):
        raise TypeError(f"{func}: {name} must be a str, got {type(value).__name__} {value!r}")
    if value not in options:
        listed = ", ".join(repr(o) for o in options)
        raise SpecError(f"{func}: {name} must be one of {listed}, got {name}={value!r}")
    return value


def check_int(func: str, name: str, value: Any, *, minimum: int | None = None) -> int:
    """Return ``value`` as an int; it must be an integer (not bool) and at least ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{func}: {name} must be an int, got {type(value).__name__} {value!r}")
    if minimum is not None and value < minimum:
        raise SpecError(f"{func}: {name} must be >= {minimum}, got {name}={value}")
    return int(value)


def check_float(
    func: str,
    name: str,
    value: Any,
    *,
    positive: bool = False,
    nonnegative: bool = False,
) -> float:
    """Return ``value`` as a finite float, optionally required positive or non-negative."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{func}: {name} must be a real number, got {type(value).__name__} {value!r}")
    number = float(value)
    if not np.isfinite(number):
        raise SpecError(f"{func}: {name} must be finite, got {name}={number!r}")
    if positive and number <= 0:
        raise SpecError(f"{func}: {name} must be > 0, got {name}={number!r}")
    if nonnegative and number < 0:
        raise SpecError(f"{func}: {name} must be >= 0, got {name}={number!r}")
    return number


def _as_array(func: str, name: str, value: Any) -> NDArray[Any]:
    if isinstance(value, (str, bytes)) or value is None:
        raise TypeError(f"{func}: {name} must be an array, got {type(value).__name__}")
    try:
        array = np.asarray(value)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{func}: {name} must be an array, got {type(value).__name__}") from exc
    if array.dtype == object or array.dtype.kind in "USV":
        raise TypeError(f"{func}: {name} must be a numeric array, got dtype {array.dtype}")
    return array


def check_positions(
    func: str,
    name: str,
    value: Any,
    *,
    nonnegative: bool = True,
    min_ndim: int = 0,
    allow_empty: bool = False,
) -> NDArray[np.int64]:
    """Return integer positions as an int64 array.

    Accepts integer arrays and float arrays whose every value is a finite whole number (a
    float position such as ``3.0`` is the integer 3; ``3.5``, ``nan`` and ``inf`` are errors).
    """
    array = _as_array(func, name, value)
    if array.dtype.kind == "b":
        raise TypeError(f"{func}: {name} must hold integers, got a boolean array")
    if array.ndim < min_ndim:
        raise SpecError(
            f"{func}: {name} must have at least {min_ndim} dimension(s), got shape {array.shape}",
            category="invalid_shape",
        )
    if array.size == 0 and not allow_empty:
        raise SpecError(f"{func}: {name} must not be empty, got shape {array.shape}", category="invalid_shape")
    if array.dtype.kind == "f":
        bad = ~np.isfinite(array)
        if bad.any():
            where = tuple(int(i) for i in np.argwhere(bad)[0])
            raise SpecError(
                f"{func}: {name} must be finite integers, got {array[where]!r} at index {where}"
            )
        fractional = array != np.round(array)
        if fractional.any():
            where = tuple(int(i) for i in np.argwhere(fractional)[0])
            raise SpecError(
                f"{func}: {name} must be whole numbers, got {float(array[where])!r} at index {where}"
            )
        if np.abs(array).max(initial=0.0) >= 2.0**53:
            raise SpecError(f"{func}: {name} must be below 2**53 in magnitude to be exact integers")
    elif array.dtype.kind not in "iu":
        raise TypeError(f"{func}: {name} must hold integers, got dtype {array.dtype}")
    positions = array.astype(np.int64)
    if nonnegative and positions.size and positions.min() < 0:
        where = tuple(int(i) for i in np.argwhere(positions < 0)[0])
        raise SpecError(
            f"{func}: {name} must be >= 0, got {int(positions[where])} at index {where}"
        )
    return positions


def check_float_array(
    func: str, name: str, value: Any, *, ndim: int | None = None, allow_empty: bool = False
) -> NDArray[np.float64]:
    """Return a finite float64 array, optionally of an exact rank."""
    array = _as_array(func, name, value)
    if array.dtype.kind == "c":
        raise TypeError(f"{func}: {name} must be real, got dtype {array.dtype}")
    if ndim is not None and array.ndim != ndim:
        raise SpecError(
            f"{func}: {name} must have {ndim} dimension(s), got shape {array.shape}",
            category="invalid_shape",
        )
    if array.size == 0 and not allow_empty:
        raise SpecError(f"{func}: {name} must not be empty, got shape {array.shape}", category="invalid_shape")
    result = array.astype(np.float64)
    if not np.isfinite(result).all():
        where = tuple(int(i) for i in np.argwhere(~np.isfinite(result))[0])
        raise SpecError(f"{func}: {name} must be finite, got {result[where]!r} at index {where}")
    return result
