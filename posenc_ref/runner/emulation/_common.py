"""Shared pieces of the low-precision emulations: rounding to narrow dtypes, float32 frequencies."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Generic, TypeVar

import numpy as np
from numpy.typing import NDArray

from posenc_ref.tolerance import Dtype

V = TypeVar("V")


class UnknownKey(LookupError):
    """A name-keyed table was asked for a name it does not hold."""

    def __str__(self) -> str:
        return str(self.args[0])


class NameTable(dict[str, V], Generic[V]):
    """A table keyed by names (ops, rope types, mutants) whose unknown key fails loudly.

    ``table[key]`` for a missing key raises :class:`UnknownKey` naming the table, the key and
    the keys it holds, so a new op or ``rope_type`` that a table was not taught shows up as
    that error, never as a fallback.
    """

    def __init__(self, entries: Mapping[str, V], what: str) -> None:
        super().__init__(entries)
        self.what = what

    def __missing__(self, key: str) -> V:
        raise UnknownKey(f"{self.what}: no entry for {key!r}; it holds {', '.join(map(repr, self))}")


Emulation = Callable[[Mapping[str, Any], Mapping[str, NDArray[Any]], type, type], dict[str, NDArray[Any]]]
"""``(params, inputs, compute dtype, angle dtype) -> outputs``."""


def round_bfloat16(values: NDArray[Any]) -> NDArray[np.float32]:
    """Round float32 values to the nearest bfloat16 (ties to even), returned as float32."""
    bits = np.asarray(values, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return rounded.astype(np.uint32).view(np.float32)


def to_dtype(values: NDArray[Any], dtype: Dtype) -> NDArray[Any]:
    """Round to ``dtype`` (bfloat16 is carried in float32)."""
    if dtype == "bfloat16":
        return round_bfloat16(np.asarray(values, dtype=np.float32))
    return np.asarray(values).astype(dtype)


def lowp_frequencies(w64: NDArray[np.float64], base: float, ct: type) -> NDArray[Any]:
    """``1 / base ** e`` in dtype ``ct`` with ``e = log(1/w) / log(base)`` rounded to ``ct``."""
    exponent = (np.log(1.0 / np.where(w64 > 0, w64, 1.0)) / np.log(base)).astype(ct)
    frequencies: NDArray[Any] = (ct(1.0) / np.power(ct(base), exponent)).astype(ct)
    return frequencies


def cast(inputs: Mapping[str, NDArray[Any]], ct: type, *names: str) -> list[NDArray[Any]]:
    """The named inputs rounded to the compute dtype ``ct``."""
    return [np.asarray(inputs[name]).astype(ct) for name in names]


def sin_cos(angles: NDArray[Any], is_cos: NDArray[np.bool_], is_zero: NDArray[np.bool_]) -> NDArray[Any]:
    """``cos`` where ``is_cos``, ``sin`` elsewhere, and exact zeros where ``is_zero`` (padding)."""
    values: NDArray[Any] = np.where(is_cos, np.cos(angles), np.sin(angles))
    result: NDArray[Any] = np.where(is_zero, values.dtype.type(0), values)
    return result
