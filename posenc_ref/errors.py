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

Limits
------
Every reference function checks, before it computes or allocates anything large:

* **Exact integers.** Integer inputs and every integer derived from them (a position plus an
  offset, a query minus a key position) must stay below :data:`EXACT_LIMIT` ``= 2**53`` in
  magnitude, the range in which int64 arithmetic cannot wrap and every integer converts to
  float64 exactly. Larger values (also unsigned values above the int64 range) are an
  ``invalid_argument`` error, never a wrapped or silently rounded number.
* **Finite in, finite out.** Where a product of finite inputs could overflow float64 (a
  position times a frequency, a query times a key), the bound is checked first and an
  ``invalid_argument`` error names the arguments, instead of an infinity or a NaN later.
* **Size guard.** An output (or an intermediate array of that size) above
  :func:`max_elements` elements, ``2**28`` by default (2 GiB of float64), is an ``invalid_argument`` error raised
  before the allocation. Set the environment variable ``POSENC_REF_MAX_ELEMENTS`` to a positive
  integer to move the limit (read at every call).
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any, Final, Literal

import numpy as np
from numpy.typing import NDArray

ErrorCategory = Literal["invalid_argument", "out_of_range", "invalid_shape"]
ERROR_CATEGORIES: Final[tuple[ErrorCategory, ...]] = (
    "invalid_argument",
    "out_of_range",
    "invalid_shape",
)
EXACT_LIMIT: Final = 2**53
"""Integer inputs and the integers derived from them stay below this magnitude."""
DEFAULT_MAX_ELEMENTS: Final = 2**28
"""The size guard's default: the most elements an output or large intermediate may hold."""
MAX_ELEMENTS_VARIABLE: Final = "POSENC_REF_MAX_ELEMENTS"
"""The environment variable that overrides :data:`DEFAULT_MAX_ELEMENTS`."""


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


def check_int(func: str, name: str, value: Any, *, minimum: int | None = None,
              maximum: int | None = EXACT_LIMIT) -> int:
    """Return ``value`` as an int; an integer (not bool) in ``[minimum, maximum]``.

    ``maximum`` defaults to :data:`EXACT_LIMIT`, so that no integer parameter can wrap int64
    arithmetic or round when it meets a float; ``None`` lifts it.
    """
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{func}: {name} must be an int, got {type(value).__name__} {value!r}")
    if minimum is not None and value < minimum:
        raise SpecError(f"{func}: {name} must be >= {minimum}, got {name}={value}")
    if maximum is not None and value > maximum:
        raise SpecError(f"{func}: {name} must be <= {_power(maximum)}, got {name}={value}")
    if maximum is not None and value < -maximum:
        raise SpecError(f"{func}: {name} must be >= -{_power(maximum)}, got {name}={value}")
    return int(value)


def _power(limit: int) -> str:
    """``2**53`` for a power of two, else the number."""
    return f"2**{limit.bit_length() - 1}" if limit > 1 and limit & (limit - 1) == 0 else str(limit)


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
    elif array.dtype.kind not in "iu":
        raise TypeError(f"{func}: {name} must hold integers, got dtype {array.dtype}")
    if array.size:
        # Note: compared before any cast to int64 could wrap (uint64 2**63) or round; floats as float64
        exact = array.astype(np.float64) if array.dtype.kind == "f" else array
        beyond = (exact >= EXACT_LIMIT) | (exact <= -EXACT_LIMIT) if array.dtype.kind != "u" else exact >= EXACT_LIMIT
        if beyond.any():
            where = tuple(int(i) for i in np.argwhere(beyond)[0])
            shown = float(array[where]) if array.dtype.kind == "f" else int(array[where])
            raise SpecError(
                f"{func}: {name} must be below 2**53 in magnitude (exact integers), got {shown!r} at index {where}"
            )
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
    if array.dtype.kind == "b":
        raise TypeError(f"{func}: {name} must hold real numbers, got a boolean array")
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


def check_exact_range(func: str, what: str, low: int, high: int) -> None:
    """Refuse derived integers (a sum, a difference) outside ``(-2**53, 2**53)``.

    ``low`` and ``high`` are the extremes as Python ints, computed before any int64 arithmetic.
    """
    for value in (low, high):
        if not -EXACT_LIMIT < value < EXACT_LIMIT:
            raise SpecError(f"{func}: {what} must stay below 2**53 in magnitude (exact integers), got {value}")


def check_finite_bound(func: str, what: str, *factors: float) -> None:
    """Refuse when the product of the magnitude bounds ``factors`` is not a finite float64.

    ``what`` names the arguments whose product it bounds; the call sites pass the largest
    magnitudes of those arguments, so a finite product proves the computed values finite.
    """
    bound = 1.0
    for factor in factors:
        bound *= abs(float(factor))
    if not math.isfinite(bound):
        shown = " * ".join(f"{float(f):.6g}" for f in factors)
        raise SpecError(f"{func}: {what} overflows float64 (bound {shown} is not finite)")


def check_finite_result(func: str, what: str, result: NDArray[np.float64]) -> NDArray[np.float64]:
    """``result``, or a SpecError when finite inputs overflowed float64 while computing it.

    Call sites compute ``result`` under ``numpy.errstate(over="ignore", invalid="ignore")``;
    ``what`` names the result and the arguments it is computed from.
    """
    if not np.isfinite(result).all():
        raise SpecError(f"{func}: {what} overflows float64 for these finite inputs")
    return result


def check_phase_range(func: str, pos_name: str, positions: NDArray[Any], freq_name: str,
                      frequencies: NDArray[Any]) -> None:
    """Refuse positions x frequencies whose product would overflow to an infinite phase."""
    if positions.size and frequencies.size:
        check_finite_bound(func, f"{pos_name} x {freq_name}", float(np.abs(positions).max()),
                           float(np.abs(frequencies).max()))


def max_elements() -> int:
    """The size guard's limit: ``POSENC_REF_MAX_ELEMENTS`` when set, else :data:`DEFAULT_MAX_ELEMENTS`.

    Examples
    --------
    >>> max_elements() >= 1
    True
    """
    raw = os.environ.get(MAX_ELEMENTS_VARIABLE)
    if raw is None or raw.strip() == "":
        return DEFAULT_MAX_ELEMENTS
    try:
        limit = int(raw)
    except ValueError:
        limit = 0
    if limit < 1:
        raise SpecError(f"{MAX_ELEMENTS_VARIABLE} must be a positive integer, got {raw!r}")
    return limit


def check_size(func: str, what: str, shape: Iterable[int]) -> None:
    """The size guard: refuse an array of ``shape`` above :func:`max_elements`, before allocating it.

    Examples
    --------
    >>> try:
    ...     check_size("f", "the table", (2**20, 2**20))
    ... except SpecError as exc:
    ...     print(exc.category, "above the size guard" in str(exc))
    invalid_argument True
    """
    dims = tuple(int(d) for d in shape)
    count = math.prod(dims)
    limit = max_elements()
    if count > limit:
        raise SpecError(f"{func}: {what} of shape {dims} would hold {count} elements, above the size guard of "
                        f"{limit} ({MAX_ELEMENTS_VARIABLE})")


@contextmanager
def raised_by(func: str, inner: str) -> Iterator[None]:
    """Let the errors of ``inner``, called on behalf of ``func``, name ``func`` (the function called).

    Examples
    --------
    >>> try:
    ...     with raised_by("outer", "inner"):
    ...         raise SpecError("inner: dim must be even, got dim=3")
    ... except SpecError as exc:
    ...     print(exc)
    outer: dim must be even, got dim=3
    """
    prefix = f"{inner}: "
    try:
        yield
    except SpecError as exc:
        if not str(exc).startswith(prefix):
            raise
        raise SpecError(f"{func}: {str(exc)[len(prefix):]}", category=exc.category) from None
    except TypeError as exc:
        if not str(exc).startswith(prefix):
            raise
        raise TypeError(f"{func}: {str(exc)[len(prefix):]}") from None
