"""Argument checks of :mod:`posenc_ref.resample`: one axis's sizes and conventions, a table's rows.

:func:`_validate` also holds the output-size rule (``size_from``), which
:func:`posenc_ref.resample.output_size_and_scale` documents.
"""

from __future__ import annotations

import math
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from posenc_ref.errors import SpecError, check_choice, check_float, check_float_array, check_int, check_size

KERNELS: Final = ("bicubic", "bilinear")
ANTIALIAS: Final = ("off", "on")
COORDINATES: Final = ("half_pixel", "align_corners")
SIZE_FROM: Final = ("size", "scale_factor")


def _validate(func: str, in_size: Any, new_size: Any, kernel: Any, cubic_a: Any, antialias: Any, coordinates: Any,
              size_from: Any, scale_offset: Any, name: str = "new_size") -> tuple[int, int, float]:
    """Validate one axis; return ``(n, m, scale)``."""
    n = check_int(func, "in_size", in_size, minimum=1)
    new = check_int(func, name, new_size)
    if new < 1:
        raise SpecError(f"{func}: {name} must be >= 1 (resampling to an empty table), got {name}={new}")
    check_choice(func, "kernel", kernel, KERNELS)
    check_float(func, "cubic_a", cubic_a)
    check_choice(func, "antialias", antialias, ANTIALIAS)
    check_choice(func, "coordinates", coordinates, COORDINATES)
    check_choice(func, "size_from", size_from, SIZE_FROM)
    offset = check_float(func, "scale_offset", scale_offset, nonnegative=True)
    if antialias == "on" and coordinates == "align_corners":
        raise SpecError(f"{func}: antialias='on' is defined here for coordinates='half_pixel' only, "
                        "got coordinates='align_corners'")
    if size_from == "size":
        if offset:
            raise SpecError(f"{func}: scale_offset applies under size_from='scale_factor' only, "
                            f"got scale_offset={offset!r} with size_from='size'")
        m, scale = new, n / new
    else:
        factor = (new + offset) / n
        m = math.floor(float(n) * factor)  # Note: float64 floor, as F.interpolate: 13 * (15/13) -> 14
        if m < 1:
            raise SpecError(f"{func}: scale factor {factor!r} gives an output size < 1 for in_size={n}")
        scale = 1.0 / factor
    if coordinates == "align_corners":
        scale = (n - 1) / (m - 1) if m > 1 else 0.0
    check_size(func, "the weight matrix", (m, n))
    return n, m, scale


def _split(func: str, table: Any, num_prefix_tokens: Any, grid: int, described: str) -> tuple[
        NDArray[np.float64], NDArray[np.float64]]:
    weights = check_float_array(func, "table", table, ndim=2)
    prefix = check_int(func, "num_prefix_tokens", num_prefix_tokens, minimum=0)
    if weights.shape[0] != prefix + grid:
        raise SpecError(
            f"{func}: table has {weights.shape[0]} rows, expected num_prefix_tokens + {described} = "
            f"{prefix} + {grid} = {prefix + grid}",
            category="invalid_shape",
        )
    return weights[:prefix], weights[prefix:]
