"""An example posenc-ref adapter: sinusoidal tables and learned lookups in float32.

Written the way a framework computes, independently of posenc_ref (it depends on NumPy alone):
frequencies ``1 / base ** e`` with the exponent ``e`` (``2k/d`` or ``k/max(n-1, 1)``) in float32,
angles ``float32(p) * w``, ``sin``/``cos`` and the result in float32 (``at_dtype("float16")``:
the same, rounded once to float16 at the end). Bad input raises the adapter's own exceptions,
which :meth:`Float32Adapter.error_category` maps to the corpus's error categories.

Check it with::

    posenc-ref conformance conformance/examples/float32_adapter.py:ADAPTER
    posenc-ref conformance conformance/examples/float32_adapter.py:ADAPTER --dtype float16

Shape letters: ``T`` positions (any shape), ``D`` = ``dim``, ``n`` frequencies, ``N`` table rows.
"""

from __future__ import annotations

from typing import Any

import numpy as np

LADDERS = ("paper", "t2t")
LAYOUTS = ("interleaved", "concat_sin_cos", "concat_cos_sin")
ODD_WIDTHS = ("error", "zero_pad_last", "sin_gets_extra")
OUT_OF_RANGE = ("error", "clamp")


class ShapeError(ValueError):
    """An input of the wrong rank, or an empty input."""


def _choice(name: str, value: Any, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise ValueError(f"{name} must be one of {choices}, got {value!r}")
    return str(value)


def _int_positions(name: str, value: Any) -> np.ndarray:
    """Integer positions as int64; whole-number floats are accepted, anything else is an error."""
    array = np.asarray(value)
    if array.size == 0:
        raise ShapeError(f"{name} must not be empty, got shape {array.shape}")
    if array.dtype.kind == "f":
        if not np.all(np.isfinite(array)) or np.any(array != np.floor(array)):
            raise ValueError(f"{name} must hold finite whole numbers")
    elif array.dtype.kind not in "iu":
        raise TypeError(f"{name} must hold integers, got dtype {array.dtype}")
    return array.astype(np.int64)


def sinusoid(positions: Any, *, dim: int, base: float = 10000.0, ladder: str = "paper",
             layout: str = "interleaved", odd_width: str = "error", position_offset: int = 0,
             scale: float = 1.0, dtype: Any = np.float32) -> np.ndarray:
    """The sinusoidal table, shape (*positions.shape, dim), computed in ``dtype``."""
    _choice("ladder", ladder, LADDERS)
    _choice("layout", layout, LAYOUTS)
    _choice("odd_width", odd_width, ODD_WIDTHS)
    if not isinstance(dim, int) or dim < 1:
        raise ValueError(f"dim must be a positive int, got {dim!r}")
    if dim % 2 and odd_width == "error":
        raise ValueError(f"dim must be even under odd_width='error', got {dim}")
    if dim == 1 and odd_width == "zero_pad_last":
        raise ValueError("dim must be >= 2 under odd_width='zero_pad_last'")
    if not np.isfinite(base) or base <= 0:
        raise ValueError(f"base must be finite and > 0, got {base!r}")
    rows = _int_positions("positions", positions) + int(position_offset)
    if rows.min() < 0:
        raise ValueError(f"positions + position_offset must be >= 0, got {int(rows.min())}")

    width = dim - 1 if (dim % 2 and odd_width == "zero_pad_last") else dim  # columns carrying sin/cos
    n = (width + 1) // 2                                                     # distinct frequencies
    k = np.arange(n, dtype=dtype)
    exponent = 2 * k / dtype(width) if ladder == "paper" else k / dtype(max(n - 1, 1))
    inv_freq = (dtype(1.0) / np.power(dtype(base), exponent)).astype(dtype)  # (n,)
    angles = rows.astype(dtype)[..., None] * inv_freq                        # (..., n)
    sin, cos = np.sin(angles), np.cos(angles)
    n_cos = n - 1 if (dim % 2 and odd_width == "sin_gets_extra") else n
    cos = cos[..., :n_cos]

    table = np.zeros(rows.shape + (dim,), dtype=dtype)
    if layout == "interleaved":
        table[..., 0:2 * n:2] = sin
        table[..., 1:2 * n_cos:2] = cos
    elif layout == "concat_sin_cos":
        table[..., :n] = sin
        table[..., n:n + n_cos] = cos
    else:
        table[..., :n_cos] = cos
        table[..., n_cos:n_cos + n] = sin
    scaled: np.ndarray = table * dtype(scale)
    return scaled


def lookup(table: Any, positions: Any, *, offset: int = 0, out_of_range: str = "error",
           dtype: Any = np.float32) -> np.ndarray:
    """Rows ``table[positions + offset]``, shape (*positions.shape, D), in ``dtype``."""
    _choice("out_of_range", out_of_range, OUT_OF_RANGE)
    weights = np.asarray(table).astype(dtype)
    if weights.ndim != 2 or weights.size == 0:
        raise ShapeError(f"table must be a non-empty (N, D) array, got shape {weights.shape}")
    rows = _int_positions("positions", positions)
    if rows.min() < 0:  # NumPy would wrap a negative index silently
        raise ValueError(f"positions must be >= 0, got {int(rows.min())}")
    rows = rows + int(offset)
    if out_of_range == "clamp":
        rows = np.minimum(rows, weights.shape[0] - 1)
    elif rows.max() >= weights.shape[0]:
        raise IndexError(f"row {int(rows.max())} is beyond the table of {weights.shape[0]} rows")
    rows_out: np.ndarray = weights[rows]
    return rows_out


class Float32Adapter:
    """The posenc-ref adapter protocol around :func:`sinusoid` and :func:`lookup`."""

    name = "float32-example"
    version = "1.0"
    capabilities: dict[str, dict[str, tuple[Any, ...]]] = {"sinusoidal.table": {}, "learned.lookup": {}}

    def __init__(self, dtype: str = "float32") -> None:
        self.dtype = dtype

    def run(self, op: str, params: dict[str, Any], inputs: dict[str, np.ndarray]) -> np.ndarray:
        if op == "sinusoidal.table":
            # float16 is computed in float32 and rounded once at the end, as frameworks do.
            return sinusoid(inputs["positions"], **params).astype(self.dtype)
        if op == "learned.lookup":
            return lookup(inputs["table"], inputs["positions"], **params, dtype=np.dtype(self.dtype).type)
        raise NotImplementedError(op)

    def error_category(self, exc: BaseException) -> str | None:
        if isinstance(exc, IndexError):
            return "out_of_range"
        if isinstance(exc, ShapeError):
            return "invalid_shape"
        if isinstance(exc, (ValueError, TypeError)):
            return "invalid_argument"
        return None

    def at_dtype(self, dtype: str) -> Float32Adapter:
        if dtype not in ("float32", "float16"):
            raise ValueError(f"{self.name} computes in float32 or float16, not {dtype}")
        return Float32Adapter(dtype)


ADAPTER = Float32Adapter()
